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
#include <string>

#include "response_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::ask_and_check(std::string(reinterpret_cast<const char*>(data), size), "fuzz_request");
  return 0;
}
