#include "model/presets.hpp"

#include <algorithm>
#include <cctype>
#include <utility>
#include <vector>

#include <cstring>

#include "core/json_fields.hpp"
#include "core/units.hpp"
#include "model/hf_config.hpp"
#include "model/gpu_profile.hpp"
#include "model/model.hpp"
#include "model/preset_names.hpp"

namespace memest {

namespace data {
extern const char kModelsJson[];  // generated from libmemest/data/models.json
extern const char kGpusJson[];    // generated from libmemest/data/gpus.json
}  // namespace data

namespace {

std::vector<ModelPreset> load_models() {
  std::vector<ModelPreset> out;
  const json doc = json::parse(data::kModelsJson);
  for (const json& entry : doc.at("models")) {
    ModelPreset p;
    p.id = entry.at("id").get<std::string>();
    p.source = entry.at("source").get<std::string>();
    p.published_params = entry.at("published_params").get<double>();
    if (entry.contains("published_active_params")) {
      p.published_active_params = entry.at("published_active_params").get<double>();
    }
    p.model = model_from_json(entry.at("hf_config"), "model");
    copy_name(p.model.name, entry.at("name").get<std::string>());
    validate_model(p.model, "model", false);
    out.push_back(p);
  }
  return out;
}

// Sets the profile fields `entry` names (all of them when `required`).
void apply_profile(const json& entry, memest_gpu& gpu, bool required) {
  for (const GpuProfileField& f : kGpuProfileFields) {
    if (entry.contains(f.key)) gpu.*f.member = entry.at(f.key).get<double>() * f.scale;
    else if (required) throw std::runtime_error(std::string("gpus.json defaults lack ") + f.key);
  }
}

struct GpuData {
  memest_gpu defaults;
  std::vector<GpuPreset> presets;
};

GpuData load_gpus() {
  GpuData data;
  const json doc = json::parse(data::kGpusJson);
  std::memset(&data.defaults, 0, sizeof data.defaults);
  data.defaults.struct_size = sizeof data.defaults;
  data.defaults.gpus_per_node = 8;
  apply_profile(doc.at("defaults"), data.defaults, true);
  for (const json& entry : doc.at("gpus")) {
    GpuPreset p;
    p.id = entry.at("id").get<std::string>();
    p.source = entry.at("source").get<std::string>();
    p.memory_source = entry.at("memory_source").get<std::string>();
    p.nominal_gib = entry.at("nominal_gib").get<double>();
    p.gpu = data.defaults;
    copy_name(p.gpu.name, entry.at("name").get<std::string>());
    p.gpu.memory_bytes = entry.at("memory_gib").get<double>() * kGiB;
    p.gpu.gpus_per_node = entry.at("gpus_per_node").get<int32_t>();
    p.gpu.peak_bf16_tflops = entry.at("peak_bf16_tflops").get<double>();
    apply_profile(entry, p.gpu, false);
    data.presets.push_back(p);
  }
  return data;
}

const GpuData& gpu_data() {
  static const GpuData data = load_gpus();
  return data;
}

// An id without case and punctuation: "Llama3-8B" and "llama-3-8b" read the same.
std::string folded(const std::string& id) {
  std::string out;
  for (char c : id) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

// Levenshtein distance (insertions, deletions, substitutions), one row at a time.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The preset ids close to a mistyped one, closest first: same letters and digits once case and
// punctuation are ignored, a prefix of one (h100 -> h100-80gb, h100-pcie...), or a few edits.
template <typename Preset>
std::vector<std::string> close_ids(const std::vector<Preset>& presets, const std::string& id) {
  const std::string want = folded(id);
  std::vector<std::pair<std::size_t, std::string>> scored;
  if (want.empty() || want.size() > 64) return {};
  for (const auto& p : presets) {
    const std::string have = folded(p.id);
    std::size_t score = edit_distance(want, have);
    if (have.rfind(want, 0) == 0 || want.rfind(have, 0) == 0) score = std::min<std::size_t>(score, 1);
    if (score <= std::max<std::size_t>(2, want.size() / 4)) scored.emplace_back(score, p.id);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;  // the closest ones only
  for (const auto& [score, name] : scored) {
    if (out.size() == 3 || score > scored.front().first) break;
    out.push_back(name);
  }
  return out;
}

template <typename Preset>
const Preset& find(const std::vector<Preset>& presets, const std::string& id,
                   const std::string& field, const char* kind) {
  for (const auto& p : presets)
    if (p.id == id) return p;
  const std::vector<std::string> close = close_ids(presets, id);
  std::string hint;
  if (!close.empty()) {
    for (const std::string& c : close) hint += (hint.empty() ? "" : " or ") + ("\"" + c + "\"");
    hint = "; did you mean " + hint + "?";
  } else if (echo(id) == id) {  // no list after an id too long to quote whole
    std::string known;
    for (const auto& p : presets) known += (known.empty() ? "" : ", ") + p.id;
    hint = " (known: " + known + ")";
  }
  throw Error(MEMEST_ERR_UNKNOWN_PRESET, field,
              field + ": unknown " + kind + " preset \"" + echo(id) + "\"" + hint);
}

}  // namespace

const std::vector<ModelPreset>& model_presets() {
  static const std::vector<ModelPreset> presets = load_models();
  return presets;
}

const std::vector<GpuPreset>& gpu_presets() { return gpu_data().presets; }

memest_gpu default_gpu() { return gpu_data().defaults; }

const ModelPreset& find_model_preset(const std::string& id, const std::string& field) {
  const std::vector<ModelPreset>& presets = model_presets();
  for (const ModelPreset& p : presets) {
    if (p.id == id) return p;
  }
  // a Hugging Face id or checkpoint name whose shapes are a preset's ("Qwen/Qwen3-30B-A3B")
  if (const auto named = preset_by_checkpoint_name(id)) {
    return find(presets, named->id, field, "model");
  }
  if (id.find('/') != std::string::npos && echo(id) == id) {
    throw Error(MEMEST_ERR_UNKNOWN_PRESET, field,
                field + ": \"" + id + "\" is not a built-in checkpoint (the presets are listed "
                "by {\"mode\": \"presets\"}): give its config.json as the model instead");
  }
  return find(presets, id, field, "model");
}

const GpuPreset& find_gpu_preset(const std::string& id, const std::string& field) {
  return find(gpu_presets(), id, field, "GPU");
}

}  // namespace memest
