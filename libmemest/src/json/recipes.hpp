// Named fine-tuning recipes (docs/adapters.md "Recipes"): each a set of pretrain-request fields
// with the framework file that defines every value. One table, read by every front end through
// the JSON entry point: a request's top-level "recipe" (mode pretrain) fills the fields the
// request leaves out; mode "enums" lists the names, mode "presets" the recipes with their fields.
#pragma once

#include <string>
#include <vector>

#include "json/modes.hpp"

namespace memest {

struct RecipeField {
  const char* path;    // dotted request path: "training.adapter.rank"
  const char* value;   // the value as JSON text: "64", "\"qlora\"", "[\"q_proj\"]"
  const char* source;  // the file and setting that define it
};

struct Recipe {
  const char* name;         // "answerai-fsdp-qlora"
  const char* description;  // one line for a picker
  const char* source;       // repository, commit and file(s) the values were read from
  std::vector<RecipeField> fields;
};

const std::vector<Recipe>& recipes();

// Every recipe with its fields and sources (mode "presets").
ojson recipes_json();

// Applies the document's top-level "recipe" (if any) to `doc`, in place: each of the recipe's
// fields the request does not give is set; a field the request gives is kept (the request
// wins). Removes "recipe" from `doc`. Returns what to echo as the response's "recipe" (null
// when the request names none): {"name", "set": {path: value}, "kept": [path, ...]}.
// Throws memest::Error naming "recipe" for a name outside the table, a value that is not a
// string, or a mode other than pretrain.
ojson apply_recipe(json& doc, const std::string& mode);

}  // namespace memest
