// Typed, field-named access to a JSON object (nlohmann::json). Every reader names the
// full path of the field it rejects ("parallel.tp"), so errors point at the input.
#pragma once

#include <cmath>
#include <initializer_list>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace memest {

using json = nlohmann::json;

// Parses a document strictly: a parse error, a number out of range (1e999), a duplicate key
// or bytes after the document fail with MEMEST_ERR_PARSE ("<what> is not valid JSON: ...").
json parse_document(const std::string& text, const char* what);

// How a null value reads: requests refuse it (leave the field out for its default); Hugging
// Face config files use it for "not set", so the config reader takes it as absent.
enum class Nulls { Refused, Absent };

class JsonFields {
 public:
  // `path` is the object's own path ("" for the top level, "parallel" for a nested one).
  JsonFields(const json& object, std::string path, Nulls nulls = Nulls::Refused);

  bool has(const char* key) const;  // present and not null (null refused unless Nulls::Absent)
  std::string path_of(const char* key) const;

  // Integer field (JSON integer, or a float with no fractional part such as 1e9).
  std::optional<int64_t> integer(const char* key, int64_t min, int64_t max) const;
  int64_t integer_or(const char* key, int64_t fallback, int64_t min, int64_t max) const;
  int64_t required_integer(const char* key, int64_t min, int64_t max) const;

  std::optional<double> number(const char* key, double min, double max) const;
  std::optional<bool> boolean(const char* key) const;
  std::optional<std::string> string(const char* key) const;
  // A string that must be one of `choices`.
  std::optional<std::string> choice(const char* key,
                                    std::initializer_list<const char*> choices) const;
  const json* object(const char* key) const;  // nullptr when absent

  // Rejects keys outside `allowed` (catches typos such as "paralel").
  void reject_unknown(std::initializer_list<const char*> allowed) const;
  void reject_unknown(const char* const* allowed, std::size_t count) const;

  // First present key among aliases (Hugging Face configs name one thing several ways).
  const char* first_present(std::initializer_list<const char*> keys) const;

 private:
  const json& object_;
  std::string path_;
  Nulls nulls_;
};

}  // namespace memest
