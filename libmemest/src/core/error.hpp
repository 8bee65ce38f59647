// Internal error type: thrown inside the C++ core, turned into a status code and a
// thread-local message at the C API boundary (capi/capi.cpp). Never crosses that boundary.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "memest/memest.h"

namespace memest {

class Error : public std::runtime_error {
 public:
  Error(memest_status status, std::string field, const std::string& message)
      : std::runtime_error(message), status_(status), field_(std::move(field)) {}

  memest_status status() const { return status_; }
  const std::string& field() const { return field_; }

 private:
  memest_status status_;
  std::string field_;
};

// A caller's string as an error message quotes it: cut to max_chars (a 100 MB preset id
// is not sent back whole), with its length said when cut.
inline std::string echo(const std::string& s, std::size_t max_chars = 64) {
  if (s.size() <= max_chars) return s;
  return s.substr(0, max_chars) + "...(" + std::to_string(s.size()) + " bytes)";
}

// Shorthand for the common case: a value out of range, with the field named.
[[noreturn]] inline void fail(const std::string& field, const std::string& message,
                              memest_status status = MEMEST_ERR_INVALID_ARGUMENT) {
  throw Error(status, field, field.empty() ? message : field + ": " + message);
}

// "<field>: must be between <min> and <max>, got <v>"
inline void check_range(const std::string& field, int64_t v, int64_t min, int64_t max) {
  if (v < min || v > max) {
    fail(field, "must be between " + std::to_string(min) + " and " + std::to_string(max) +
                    ", got " + std::to_string(v));
  }
}

}  // namespace memest
