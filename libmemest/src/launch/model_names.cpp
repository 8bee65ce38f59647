#include "launch/model_names.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "core/json_fields.hpp"
#include "model/preset_names.hpp"

namespace memest::launch {

namespace {

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
  if (auto m = preset_by_checkpoint_name(name)) {
    return ModelMatch{m->id, m->note.empty() ? "preset" : m->note};
  }
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
    if (name == f.name && ascii_lower(flavor) == ascii_lower(f.flavor)) {
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
