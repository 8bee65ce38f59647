// The 4D paper's verdict bands and GPU capacity checks, shared by every mode.
#pragma once

#include <cmath>
#include <string>

#include "core/error.hpp"
#include "core/units.hpp"
#include "memest/memest.h"
#include "model/gpu_profile.hpp"

namespace memest {

// fits: estimate <= 80 % of capacity (no run went out of memory there); tight: <= 100 %;
// oom: above. UNKNOWN when no capacity is known.
inline memest_verdict verdict_for(double estimate_bytes, double capacity_bytes) {
  if (capacity_bytes <= 0) return MEMEST_VERDICT_UNKNOWN;
  if (estimate_bytes <= kFitsFraction * capacity_bytes) return MEMEST_VERDICT_FITS;
  if (estimate_bytes <= capacity_bytes) return MEMEST_VERDICT_TIGHT;
  return MEMEST_VERDICT_OOM;
}

// Returns the capacity in bytes; 0 allowed only when !required.
inline double validate_capacity(const memest_gpu& gpu, const char* field, bool required) {
  if (gpu.struct_size < sizeof(memest_gpu)) {
    fail(std::string(field) + ".struct_size", "smaller than this version's memest_gpu; call memest_gpu_init",
         MEMEST_ERR_STRUCT_SIZE);
  }
  const double c = gpu.memory_bytes;
  if (c == 0 && required) {
    throw Error(MEMEST_ERR_MISSING_FIELD, field,
                std::string(field) + ": missing (a preset id or {\"memory_gib\": N})");
  }
  if (!std::isfinite(c) || c < 0 || c > 1e15) {
    fail(std::string(field) + ".memory_gib", "must be between 0 and about 931000 GiB");
  }
  for (const GpuProfileField& p : kGpuProfileFields) {
    const double v = gpu.*p.member / p.scale;
    if (!std::isfinite(v) || v < p.min || v > p.max) {
      fail(std::string(field) + "." + p.key,
           "must be between " + std::to_string(p.min) + " and " + std::to_string(p.max));
    }
  }
  if (gpu.gpus_per_node < 1 || gpu.gpus_per_node > 1024) {
    fail(std::string(field) + ".gpus_per_node", "must be between 1 and 1024");
  }
  return c;
}

}  // namespace memest
