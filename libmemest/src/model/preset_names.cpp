#include "model/preset_names.hpp"

#include <cctype>

#include "model/presets.hpp"

namespace memest {

std::string ascii_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

namespace {

bool is_preset(const std::string& id) {
  for (const ModelPreset& p : model_presets()) {
    if (p.id == id) return true;
  }
  return false;
}

// Names whose checkpoints have the same shapes as a preset under another name (the memory is
// the same; the note says so). Each pair is the checkpoint's config.json against the preset's.
struct Alias {
  const char* name;
  const char* preset;
  const char* note;
};
constexpr Alias kAliases[] = {
    {"llama-3-8b", "llama-3.1-8b", "same shapes as Llama-3.1-8B (max_position_embeddings 8192)"},
    {"llama-3-70b", "llama-3.1-70b", "same shapes as Llama-3.1-70B (max_position_embeddings 8192)"},
    {"llama-3.3-70b", "llama-3.1-70b", "same shapes as Llama-3.1-70B"},
    {"mistral-7b-v0.1", "mistral-7b", ""},
    {"mixtral-8x7b-v0.1", "mixtral-8x7b", ""},
    {"mixtral-8x22b-v0.1", "mixtral-8x22b", ""},
    {"phi-3.5-mini", "phi-3.5-mini", ""},
    {"phi-3-mini-4k", "phi-3.5-mini", "same shapes as Phi-3.5-mini (4k context)"},
    {"phi-3-mini-128k", "phi-3.5-mini", "same shapes as Phi-3.5-mini"},
    {"olmo-2-1124-7b", "olmo-2-7b", ""},
    {"glm-4-9b-0414", "glm-4-9b", ""},
    {"llama-4-scout-17b-16e", "llama-4-scout", ""},
    {"llama-4-maverick-17b-128e", "llama-4-maverick", ""},
    {"c4ai-command-r-v01", "command-r", ""},
    {"dbrx", "dbrx", ""},
    {"kimi-k2", "kimi-k2", ""},
    {"olmoe-1b-7b-0924", "olmoe-1b-7b", ""},
    {"nemotron-h-56b-8k", "nemotron-h-56b", ""},
    {"nvidia-nemotron-3-nano-30b-a3b", "nemotron-3-nano-30b-a3b", ""},
    {"qwen3-next-80b-a3b", "qwen3-next-80b-a3b", ""},
    {"internlm2_5-7b", "internlm2.5-7b", ""},
    {"gpt2", "gpt2", ""},
    {"santacoder", "gpt-bigcode-santacoder", ""},
};

// Suffixes of checkpoint names that do not change the shapes (fine-tuned or quantised
// releases of the same model), taken off one at a time.
constexpr const char* kSuffixes[] = {"-hf", "-instruct", "-chat", "-it", "-base", "-bnb-4bit",
                                     "-unsloth", "-fp8", "-bf16", "-2507", "-0924", "-8k"};

}  // namespace

std::optional<PresetName> preset_by_checkpoint_name(const std::string& given) {
  std::string name = given;
  while (!name.empty() && name.back() == '/') name.pop_back();
  const std::size_t slash = name.find_last_of('/');
  if (slash != std::string::npos) name = name.substr(slash + 1);
  name = ascii_lower(name);
  if (name.rfind("meta-", 0) == 0) name = name.substr(5);
  for (int round = 0; round < 6; ++round) {
    if (is_preset(name)) return PresetName{name, ""};
    for (const Alias& a : kAliases) {
      if (name == a.name) return PresetName{a.preset, a.note};
    }
    bool cut = false;
    for (const char* s : kSuffixes) {
      const std::string suffix = s;
      if (name.size() > suffix.size() &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        name.resize(name.size() - suffix.size());
        cut = true;
        break;
      }
    }
    if (!cut) break;
  }
  return std::nullopt;
}

}  // namespace memest
