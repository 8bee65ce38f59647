// Models by the names launch files give them: Hugging Face ids ("meta-llama/Llama-3.1-8B"),
// local checkpoint paths, torchtitan (name, flavor) pairs and torchtune builders, resolved to
// the built-in presets, or to a config.json in the local Hugging Face cache.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace memest::launch {

struct ModelMatch {
  nlohmann::json model;  // a preset id (string) or a config.json object
  std::string how;       // "preset", "alias: same shapes as ...", "hf cache: <path>"
};

// A Hugging Face id or checkpoint path. Looks in the built-in presets (with aliases), then
// in the Hugging Face cache under hf_home ("" = HF_HUB_CACHE, HF_HOME/hub or
// ~/.cache/huggingface/hub from the environment). nullopt when neither knows it.
std::optional<ModelMatch> model_by_hf_id(const std::string& id, const std::string& hf_home);

// torchtitan's model.name and model.flavor ("llama3", "8B").
std::optional<ModelMatch> model_by_torchtitan_flavor(const std::string& name,
                                                     const std::string& flavor);

// A torchtune model builder: "torchtune.models.llama3_1.lora_llama3_1_8b" (the adapter prefix
// lora_/qlora_ is the caller's to read).
std::optional<ModelMatch> model_by_torchtune_builder(const std::string& component);

// The cache directory a Hugging Face id would be in ("models--org--name"), for messages.
std::string hf_cache_dir_name(const std::string& id);

}  // namespace memest::launch
