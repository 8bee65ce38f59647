// Fuzz target for the launch-file readers (mode "import": toml++, yaml-cpp, the shell reader
// and every mapper): the input's first byte picks the format named (auto or one of the eight)
// and whether the GPU, count, model and sequence are given; the rest is the file's text.
// Any input must give a JSON document, {"ok": true, ...} or an error naming its field, never
// a crash, a hang, MEMEST_ERR_INTERNAL or a non-finite number. Built as a libFuzzer target
// with clang (-DMEMEST_FUZZ=ON, scripts/fuzz.sh launch) and always as a corpus replay test.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "memest/memest.h"

namespace {

[[noreturn]] void finding(const char* what, const std::string& response) {
  std::fprintf(stderr, "fuzz_launch: %s\nresponse: %.2000s\n", what, response.c_str());
  std::abort();
}

bool holds_null(const nlohmann::json& j) {
  if (j.is_null()) return true;
  if (j.is_structured()) {
    for (const auto& v : j) {
      if (holds_null(v)) return true;
    }
  }
  return false;
}

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
  const std::string body = request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  char* raw = nullptr;
  const memest_status status = memest_request_json(body.c_str(), &raw);
  if (!raw) std::abort();
  const std::string response(raw);
  memest_string_free(raw);
  if (status == MEMEST_ERR_INTERNAL) finding("MEMEST_ERR_INTERNAL", response);
  const auto doc = nlohmann::json::parse(response, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("ok") || !doc["ok"].is_boolean()) {
    finding("the response is not a memest JSON document", response);
  }
  if ((status == MEMEST_OK) != doc["ok"].get<bool>()) finding("status and \"ok\" disagree", response);
  if (status != MEMEST_OK) {
    const auto error = doc.find("error");
    if (error == doc.end() || !error->is_object() || !(*error)["field"].is_string() ||
        (*error)["field"].get<std::string>().empty() || !(*error)["message"].is_string()) {
      finding("malformed error document (an error must name its field)", response);
    }
  }
  if (holds_null(doc)) finding("non-finite number (null) in the response", response);
  return 0;
}
