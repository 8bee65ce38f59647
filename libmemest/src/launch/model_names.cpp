#include "launch/model_names.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "core/json_fields.hpp"
#include "model/presets.hpp"

namespace memest::launch {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

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

std::optional<ModelMatch> match_name(std::string name) {
  name = lower(name);
  if (name.rfind("meta-", 0) == 0) name = name.substr(5);
  for (int round = 0; round < 6; ++round) {
    if (is_preset(name)) return ModelMatch{name, "preset"};
    for (const Alias& a : kAliases) {
      if (name == a.name) return ModelMatch{a.preset, *a.note ? std::string(a.note) : "preset"};
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

std::string cache_root(const std::string& hf_home) {
  if (!hf_home.empty()) return hf_home;
  if (const char* c = std::getenv("HF_HUB_CACHE"); c && *c) return c;
  if (const char* h = std::getenv("HF_HOME"); h && *h) return std::string(h) + "/hub";
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/huggingface/hub";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/huggingface/hub";
  return "";
}

// config.json of a cached snapshot: hub/models--org--name/snapshots/<rev>/config.json (the
// newest snapshot when there are several).
std::optional<ModelMatch> from_cache(const std::string& id, const std::string& hf_home) {
  const std::string root = cache_root(hf_home);
  if (root.empty() || id.find('/') == std::string::npos || id.find("..") != std::string::npos) {
    return std::nullopt;
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path snapshots = fs::path(root) / hf_cache_dir_name(id) / "snapshots";
  if (!fs::is_directory(snapshots, ec)) return std::nullopt;
  fs::path best;
  fs::file_time_type best_time{};
  for (const auto& entry : fs::directory_iterator(snapshots, ec)) {
    const fs::path config = entry.path() / "config.json";
    if (!fs::is_regular_file(config, ec)) continue;
    const auto t = fs::last_write_time(config, ec);
    if (best.empty() || t > best_time) best = config, best_time = t;
  }
  if (best.empty() || fs::file_size(best, ec) > (4u << 20)) return std::nullopt;
  std::ifstream in(best, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  json config = parse_document(text.str(), best.string().c_str());
  if (!config.is_object()) return std::nullopt;
  return ModelMatch{config, "Hugging Face cache: " + best.string()};
}

}  // namespace

std::string hf_cache_dir_name(const std::string& id) {
  std::string dir = "models--" + id;
  std::size_t at = 0;
  while ((at = dir.find('/', at)) != std::string::npos) dir.replace(at, 1, "--"), at += 2;
  return dir;
}

std::optional<ModelMatch> model_by_hf_id(const std::string& id, const std::string& hf_home) {
  std::string tail = id;
  while (!tail.empty() && tail.back() == '/') tail.pop_back();
  const std::size_t slash = tail.find_last_of('/');
  const std::string name = slash == std::string::npos ? tail : tail.substr(slash + 1);
  if (auto m = match_name(name)) return m;
  return from_cache(id, hf_home);
}

std::optional<ModelMatch> model_by_torchtitan_flavor(const std::string& name,
                                                     const std::string& flavor) {
  // torchtitan/models/<name>/__init__.py: the flavors' shapes equal these checkpoints'.
  struct Flavor {
    const char* name;
    const char* flavor;
    const char* preset;
  };
  constexpr Flavor kFlavors[] = {
      {"llama3", "8B", "llama-3.1-8b"},        {"llama3", "70B", "llama-3.1-70b"},
      {"llama3", "405B", "llama-3.1-405b"},    {"llama2", "7B", "llama-2-7b"},
      {"llama2", "13B", "llama-2-13b"},        {"llama2", "70B", "llama-2-70b"},
      {"deepseek_v3", "16B", "deepseek-v2-lite"}, {"deepseek_v3", "671B", "deepseek-v3"},
      {"qwen3", "8B", "qwen3-8b"},             {"qwen3", "32B", "qwen3-32b"},
      {"qwen3", "30B-A3B", "qwen3-30b-a3b"},   {"qwen3", "235B-A22B", "qwen3-235b-a22b"},
      {"llama4", "17bx16e", "llama-4-scout"},  {"llama4", "17bx128e", "llama-4-maverick"},
      {"gpt_oss", "20b", "gpt-oss-20b"},       {"gpt_oss", "120b", "gpt-oss-120b"},
  };
  for (const Flavor& f : kFlavors) {
    if (name == f.name && lower(flavor) == lower(f.flavor)) {
      return ModelMatch{f.preset, std::string("torchtitan flavor ") + f.name + " " + f.flavor};
    }
  }
  return std::nullopt;
}

std::optional<ModelMatch> model_by_torchtune_builder(const std::string& component) {
  std::string b = component.substr(component.find_last_of('.') + 1);
  for (const char* prefix : {"qlora_", "lora_"}) {
    if (b.rfind(prefix, 0) == 0) b = b.substr(std::string(prefix).size());
  }
  // torchtune/models/<family>/_model_builders.py: each builder's shapes are the checkpoint's.
  struct Builder {
    const char* builder;
    const char* preset;
  };
  constexpr Builder kBuilders[] = {
      {"llama3_1_8b", "llama-3.1-8b"},   {"llama3_8b", "llama-3.1-8b"},
      {"llama3_1_70b", "llama-3.1-70b"}, {"llama3_70b", "llama-3.1-70b"},
      {"llama3_3_70b", "llama-3.1-70b"}, {"llama3_1_405b", "llama-3.1-405b"},
      {"llama2_7b", "llama-2-7b"},       {"llama2_13b", "llama-2-13b"},
      {"llama2_70b", "llama-2-70b"},     {"mistral_7b", "mistral-7b"},
      {"gemma_7b", "gemma-7b"},          {"gemma2_9b", "gemma-2-9b"},
      {"gemma2_27b", "gemma-2-27b"},     {"qwen2_5_7b_base", "qwen2.5-7b"},
      {"qwen2_5_7b_instruct", "qwen2.5-7b"}, {"qwen2_5_72b_instruct", "qwen2.5-72b"},
      {"qwen3_8b_base", "qwen3-8b"},     {"qwen3_8b_instruct", "qwen3-8b"},
      {"qwen3_32b", "qwen3-32b"},        {"phi4_14b", "phi-4"},
      {"phi3_mini", "phi-3.5-mini"},
  };
  for (const Builder& x : kBuilders) {
    if (b == x.builder) return ModelMatch{x.preset, std::string("torchtune builder ") + x.builder};
  }
  return std::nullopt;
}

}  // namespace memest::launch
