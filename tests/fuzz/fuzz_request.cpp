// Fuzz target for the JSON entry point: any byte string must give a status and a JSON
// document ({"ok": true, ...} or {"ok": false, "error": ...}), never a crash, a leak or an
// exception. Built as a libFuzzer target with clang (-DMEMEST_FUZZ=ON, scripts/fuzz.sh), and
// always as a corpus replay test (replay_main.cpp) so the seeds run in every CI build, ASan
// included.
//
// Findings (abort): MEMEST_ERR_INTERNAL (a bug by the header's own definition), a status that
// disagrees with the document, an error without a field string, a non-finite number in the
// response (nlohmann writes NaN and infinities as null, and no memest response holds a null).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "memest/memest.h"

namespace {

[[noreturn]] void finding(const char* what, const std::string& response) {
  std::fprintf(stderr, "fuzz_request: %s\nresponse: %.2000s\n", what, response.c_str());
  std::abort();
}

// True when any value of the document is null (a NaN or an infinity written by nlohmann).
bool holds_null(const nlohmann::json& j) {
  if (j.is_null()) return true;
  if (j.is_structured()) {
    for (const auto& v : j) {
      if (holds_null(v)) return true;
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  char* raw = nullptr;
  const memest_status status = memest_request_json(text.c_str(), &raw);
  if (!raw) std::abort();  // only NULL arguments or out of memory leave it unset
  const std::string response(raw);
  memest_string_free(raw);
  if (status == MEMEST_ERR_INTERNAL) finding("MEMEST_ERR_INTERNAL", response);
  if (status < 0 || status >= MEMEST_STATUS_COUNT) finding("status out of range", response);
  const auto doc = nlohmann::json::parse(response, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("ok") || !doc["ok"].is_boolean()) {
    finding("the response is not a memest JSON document", response);
  }
  if ((status == MEMEST_OK) != doc["ok"].get<bool>()) finding("status and \"ok\" disagree", response);
  if (status != MEMEST_OK) {
    const auto error = doc.find("error");
    if (error == doc.end() || !error->is_object() || !error->contains("field") ||
        !error->contains("message") || !error->contains("code") || !(*error)["field"].is_string() ||
        !(*error)["message"].is_string() || (*error)["code"] != memest_status_name(status)) {
      finding("malformed error document", response);
    }
  }
  if (holds_null(doc)) finding("non-finite number (null) in the response", response);
  return 0;
}
