// WASM-only helper: the built-in presets as one JSON document, built on the typed C API (the
// same calls `memest models` and `memest gpus` use), so the page needs no struct layouts.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "memest/memest.h"

namespace {

nlohmann::ordered_json model_rows() {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (uint32_t i = 0; i < memest_model_preset_count(); ++i) {
    const char* id = memest_model_preset_id(i);
    memest_model m;
    memest_param_count count;
    if (memest_model_from_preset(id, &m) != MEMEST_OK ||
        memest_model_parameter_count(&m, &count) != MEMEST_OK) {
      continue;
    }
    rows.push_back({{"id", id},
                    {"name", m.name},
                    {"family", m.family == MEMEST_FAMILY_GPT ? "gpt" : "llama"},
                    {"num_parameters", count.total},
                    {"num_hidden_layers", m.num_hidden_layers},
                    {"hidden_size", m.hidden_size},
                    {"num_attention_heads", m.num_attention_heads},
                    {"num_key_value_heads", m.num_key_value_heads},
                    {"intermediate_size", m.intermediate_size},
                    {"vocab_size", m.vocab_size},
                    {"max_position_embeddings", m.max_position_embeddings},
                    {"tie_word_embeddings", m.tie_word_embeddings == 1}});
  }
  return rows;
}

nlohmann::ordered_json gpu_rows() {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (uint32_t i = 0; i < memest_gpu_preset_count(); ++i) {
    const char* id = memest_gpu_preset_id(i);
    memest_gpu g;
    if (memest_gpu_from_preset(id, &g) != MEMEST_OK) continue;
    rows.push_back({{"id", id},
                    {"name", g.name},
                    {"memory_bytes", g.memory_bytes},
                    {"gpus_per_node", g.gpus_per_node},
                    {"peak_bf16_tflops", g.peak_bf16_tflops},
                    {"context_bytes", g.context_bytes},
                    {"page_bytes", g.page_bytes}});
  }
  return rows;
}

}  // namespace

extern "C" {

/** Returns {"models": [...], "gpus": [...]} as a malloc'd string (free with
 *  memest_string_free), or NULL when memory runs out. */
__attribute__((used, visibility("default"))) char* memest_wasm_presets_json(void) {
  try {
    const std::string text =
        nlohmann::ordered_json{{"models", model_rows()}, {"gpus", gpu_rows()}}.dump();
    char* out = static_cast<char*>(std::malloc(text.size() + 1));
    if (out != nullptr) std::memcpy(out, text.c_str(), text.size() + 1);
    return out;
  } catch (...) {
    return nullptr;
  }
}

}  // extern "C"
