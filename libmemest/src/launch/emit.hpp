// The other direction: a layout (a pretraining response's, or a search row's) written in a
// stack's own terms, to paste into its launch file: Megatron-LM flags, torchtitan TOML keys,
// a DeepSpeed JSON, an accelerate config.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace memest::launch {

constexpr const char* kEmitFormats[] = {"megatron", "torchtitan", "deepspeed", "accelerate"};

// `layout` and `training` as a pretraining response resolves them (README "JSON request and
// response"); `num_layers` the model's. Returns {"format", "settings": [{"key", "value",
// "section"?}], "text"}. Refuses, naming `field`, a layout the stack cannot run (tensor or
// pipeline parallelism under DeepSpeed ZeRO or accelerate, op_selective under Megatron).
nlohmann::json emit_launch(const nlohmann::json& layout, const nlohmann::json& training,
                           int64_t num_layers, const std::string& format,
                           const std::string& field);

}  // namespace memest::launch
