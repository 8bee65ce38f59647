// Hugging Face config.json → memest_model. Each supported `model_type` has a row in a
// conventions table (family, MLP kind, norm kind, which linears carry biases, learned
// position rows, tying default), so a pasted config file gives the real checkpoint's shapes.
#pragma once

#include <string>

#include "core/json_fields.hpp"
#include "memest/memest.h"

namespace memest {

// Reads a model object: a Hugging Face config (model_type / architectures present), plain
// config.json-named numbers, or {"num_parameters": N} (a bare count). `prefix` names the
// object in errors ("model"). Does not validate ranges; call validate_model after.
memest_model model_from_json(const json& object, const std::string& prefix);

// The model_type values the conventions table knows, comma-separated (for messages/help).
std::string supported_model_types();

}  // namespace memest
