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

class JsonFields {
 public:
  // `path` is the object's own path ("" for the top level, "parallel" for a nested one).
  JsonFields(const json& object, std::string path);

  bool has(const char* key) const;  // present and not null
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

  // First present key among aliases (Hugging Face configs name one thing several ways).
  const char* first_present(std::initializer_list<const char*> keys) const;

 private:
  const json& object_;
  std::string path_;
};

}  // namespace memest
