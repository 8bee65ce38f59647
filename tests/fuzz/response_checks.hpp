// What every fuzz target of the JSON entry point asserts about an answer: a status in range
// and never MEMEST_ERR_INTERNAL, a memest JSON document whose "ok" agrees with the status, an
// error that names its field and code, and no non-finite number (nlohmann writes NaN and
// infinities as null, and no memest response holds a null). A finding aborts.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "memest/memest.h"

namespace fuzz {

[[noreturn]] inline void finding(const char* target, const char* what, const std::string& response) {
  std::fprintf(stderr, "%s: %s\nresponse: %.2000s\n", target, what, response.c_str());
  std::abort();
}

inline bool holds_null(const nlohmann::json& j) {
  if (j.is_null()) return true;
  if (j.is_structured()) {
    for (const auto& v : j) {
      if (holds_null(v)) return true;
    }
  }
  return false;
}

// Sends `request` to memest_request_json and checks the answer.
inline void ask_and_check(const std::string& request, const char* target) {
  char* raw = nullptr;
  const memest_status status = memest_request_json(request.c_str(), &raw);
  if (!raw) std::abort();  // only NULL arguments or out of memory leave it unset
  const std::string response(raw);
  memest_string_free(raw);
  if (status == MEMEST_ERR_INTERNAL) finding(target, "MEMEST_ERR_INTERNAL", response);
  if (status < 0 || status >= MEMEST_STATUS_COUNT) finding(target, "status out of range", response);
  const auto doc = nlohmann::json::parse(response, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("ok") || !doc["ok"].is_boolean()) {
    finding(target, "the response is not a memest JSON document", response);
  }
  if ((status == MEMEST_OK) != doc["ok"].get<bool>()) finding(target, "status and \"ok\" disagree", response);
  if (status != MEMEST_OK) {
    const auto error = doc.find("error");
    if (error == doc.end() || !error->is_object() || !error->contains("field") ||
        !error->contains("message") || !error->contains("code") || !(*error)["field"].is_string() ||
        !(*error)["message"].is_string() || (*error)["code"] != memest_status_name(status)) {
      finding(target, "malformed error document", response);
    }
  }
  if (holds_null(doc)) finding(target, "non-finite number (null) in the response", response);
}

}  // namespace fuzz
