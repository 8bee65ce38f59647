// Built-in model and GPU presets, parsed once from the JSON files in libmemest/data/
// (embedded into the library at build time: no file access at run time).
#pragma once

#include <string>
#include <vector>

#include "memest/memest.h"

namespace memest {

struct ModelPreset {
  std::string id;
  std::string source;           // where the config.json numbers come from
  double published_params = 0;  // the real checkpoint's published parameter count
  double published_active_params = 0;  // per-token active count of an MoE model (0: none)
  memest_model model;
};

struct GpuPreset {
  std::string id;
  std::string source;
  std::string memory_source;  // where the usable capacity (memory_gib) comes from
  double nominal_gib = 0;     // the advertised size
  memest_gpu gpu;
};

const std::vector<ModelPreset>& model_presets();
const std::vector<GpuPreset>& gpu_presets();

// Throw MEMEST_ERR_UNKNOWN_PRESET (naming `field` and the known ids) when absent.
const ModelPreset& find_model_preset(const std::string& id, const std::string& field);
const GpuPreset& find_gpu_preset(const std::string& id, const std::string& field);

}  // namespace memest
