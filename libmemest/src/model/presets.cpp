#include "model/presets.hpp"

#include <cstring>

#include "core/json_fields.hpp"
#include "core/units.hpp"
#include "model/hf_config.hpp"
#include "model/gpu_profile.hpp"
#include "model/model.hpp"

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

template <typename Preset>
const Preset& find(const std::vector<Preset>& presets, const std::string& id,
                   const std::string& field, const char* kind) {
  for (const auto& p : presets)
    if (p.id == id) return p;
  std::string known;
  for (const auto& p : presets) known += (known.empty() ? "" : ", ") + p.id;
  throw Error(MEMEST_ERR_UNKNOWN_PRESET, field,
              field + ": unknown " + kind + " preset \"" + echo(id) + "\"" +
                  (echo(id) == id ? " (known: " + known + ")" : std::string()));
}

}  // namespace

const std::vector<ModelPreset>& model_presets() {
  static const std::vector<ModelPreset> presets = load_models();
  return presets;
}

const std::vector<GpuPreset>& gpu_presets() { return gpu_data().presets; }

memest_gpu default_gpu() { return gpu_data().defaults; }

const ModelPreset& find_model_preset(const std::string& id, const std::string& field) {
  return find(model_presets(), id, field, "model");
}

const GpuPreset& find_gpu_preset(const std::string& id, const std::string& field) {
  return find(gpu_presets(), id, field, "GPU");
}

}  // namespace memest
