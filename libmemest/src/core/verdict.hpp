// The 4D paper's verdict bands and GPU capacity checks, shared by every mode.
#pragma once

#include <cmath>
#include <string>

#include "core/error.hpp"
#include "core/units.hpp"
#include "memest/memest.h"

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
  if (!std::isfinite(gpu.context_bytes) || gpu.context_bytes < 0 || gpu.context_bytes > 1e13) {
    fail(std::string(field) + ".context_mib", "must be between 0 and about 9.5e6 MiB");
  }
  if (!std::isfinite(gpu.page_bytes) || gpu.page_bytes < 1 || gpu.page_bytes > 1e12) {
    fail(std::string(field) + ".page_mib", "must be positive and at most about 9.5e5 MiB");
  }
  if (gpu.gpus_per_node < 1 || gpu.gpus_per_node > 1024) {
    fail(std::string(field) + ".gpus_per_node", "must be between 1 and 1024");
  }
  return c;
}

}  // namespace memest
