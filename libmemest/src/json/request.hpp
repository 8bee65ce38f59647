// The JSON contract (README "JSON request and response"): a request document in, a response
// document out, every mode reachable without new glue (CLI, WASM, FFI languages).
#pragma once

#include <string>

#include "core/json_fields.hpp"
#include "memest/memest.h"

namespace memest {

// Answers a request; throws memest::Error (status + field + message) on bad input.
std::string answer_request(const std::string& request_text);

// {"ok": false, "error": {"code", "field", "message"}}
std::string error_response(memest_status status, const std::string& field,
                           const std::string& message);

// Resolves a request's "model" (preset id or config object) and "gpu" (preset id or object).
memest_model resolve_model(const json& value, const std::string& field, bool allow_bare);
memest_gpu resolve_gpu(const json& value, const std::string& field);

}  // namespace memest
