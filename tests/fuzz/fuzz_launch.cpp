// Fuzz target for the launch-file readers (mode "import": toml++, yaml-cpp, the shell reader
// and every mapper): the input's first byte picks the format named (auto or one of the eight)
// and whether the GPU, count, model and sequence are given; the rest is the file's text.
// Any input must give a JSON document, {"ok": true, ...} or an error naming its field, never
// a crash, a hang, MEMEST_ERR_INTERNAL or a non-finite number. Built as a libFuzzer target
// with clang (-DMEMEST_FUZZ=ON, scripts/fuzz.sh launch) and always as a corpus replay test.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "response_checks.hpp"

namespace {

constexpr const char* kFormats[] = {"auto", "torchtitan", "megatron", "deepspeed", "hf",
                                    "torchtune", "axolotl", "llama-factory", "accelerate"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t pick = data[0];
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  nlohmann::json request = {{"mode", "import"},
                            {"files", {{{"name", "launch"}, {"text", text}}}},
                            {"format", kFormats[pick % 9]}};
  if (pick & 0x80) {  // the values a file cannot give, so that the mappers run to the end
    request["gpu"] = "h100-80gb";
    request["gpus"] = 8;
    request["model"] = "llama-3.1-8b";
    request["seq_len"] = 2048;
  }
  // bytes that are not UTF-8 are replaced: the readers see the rest of the file
  fuzz::ask_and_check(request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                      "fuzz_launch");
  return 0;
}
