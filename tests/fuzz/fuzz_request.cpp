// Fuzz target for the JSON entry point: any byte string must give a status and a JSON
// document ({"ok": true, ...} or {"ok": false, "error": ...}), never a crash, a leak or an
// exception. Built as a libFuzzer target with clang (-DMEMEST_FUZZ=ON), and always as a
// corpus replay test (replay_main.cpp) so the seeds run in every CI build, ASan included.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "memest/memest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  char* response = nullptr;
  const memest_status status = memest_request_json(text.c_str(), &response);
  if (!response) std::abort();  // only NULL arguments or out of memory leave it unset
  const auto doc = nlohmann::json::parse(response, nullptr, false);
  memest_string_free(response);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("ok")) std::abort();
  if ((status == MEMEST_OK) != doc["ok"].get<bool>()) std::abort();
  if (status != MEMEST_OK && !doc["error"]["field"].is_string()) std::abort();
  return 0;
}
