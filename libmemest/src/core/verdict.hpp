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

// The verdict on the overhead model's peak, what every front end headlines: fits up to
// MEMEST_PEAK_FITS_FRACTION of capacity (a margin for what no model foresees: other processes,
// allocator variance between runs), tight up to all of it, oom above.
inline memest_verdict peak_verdict_for(double peak_bytes, double capacity_bytes) {
  if (capacity_bytes <= 0) return MEMEST_VERDICT_UNKNOWN;
  if (peak_bytes <= MEMEST_PEAK_FITS_FRACTION * capacity_bytes) return MEMEST_VERDICT_FITS;
  if (peak_bytes <= capacity_bytes) return MEMEST_VERDICT_TIGHT;
  return MEMEST_VERDICT_OOM;
}

}  // namespace memest
