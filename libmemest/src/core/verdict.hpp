// The 4D paper's verdict bands, shared by every mode.
#pragma once

#include "core/enums.hpp"
#include "memest/memest.h"

namespace memest {

// fits: estimate <= 80 % of capacity (no run went out of memory there); tight: <= 100 %;
// oom: above. UNKNOWN when no capacity is known.
inline memest_verdict verdict_for(double estimate_bytes, double capacity_bytes) {
  if (capacity_bytes <= 0) return MEMEST_VERDICT_UNKNOWN;
  if (estimate_bytes <= kFitsFraction * capacity_bytes) return MEMEST_VERDICT_FITS;
  if (estimate_bytes <= kTightFraction * capacity_bytes) return MEMEST_VERDICT_TIGHT;
  return MEMEST_VERDICT_OOM;
}

}  // namespace memest
