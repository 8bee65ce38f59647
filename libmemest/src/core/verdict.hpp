// The 4D paper's verdict bands, shared by every mode.
#pragma once

#include <cmath>

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

// ---- the peak's error (MEMEST_PEAK_ERROR_SIGMA, docs/accuracy.md): ln(real / predicted) is
// taken as normal with mean 0 and that standard deviation, measured leaving one source out.

constexpr double kPeakBandZ = 1.6448536269514722;  // the standard normal's 95th percentile

// P(real peak > capacity) for a predicted `peak_bytes`: 1 - Phi(ln(capacity / peak) / sigma).
inline double oom_probability(double peak_bytes, double capacity_bytes) {
  if (capacity_bytes <= 0) return 0;
  if (peak_bytes <= 0) return 0;
  const double z = std::log(capacity_bytes / peak_bytes) / MEMEST_PEAK_ERROR_SIGMA;
  // Rounded to 1e-12: C libraries' erfc differ in the last bit (glibc and emscripten's musl),
  // and every front end must answer the same number; the digits below are noise anyway.
  return std::round(0.5 * std::erfc(z / std::sqrt(2.0)) * 1e12) / 1e12;
}

// The 90 % band of the real peak: peak * exp(-/+ z95 * sigma).
inline double peak_band_low(double peak_bytes) {
  return peak_bytes * std::exp(-kPeakBandZ * MEMEST_PEAK_ERROR_SIGMA);
}
inline double peak_band_high(double peak_bytes) {
  return peak_bytes * std::exp(kPeakBandZ * MEMEST_PEAK_ERROR_SIGMA);
}

// The largest predicted peak whose probability of OOM is at most `p` (0 < p < 1): capacity *
// exp(-z_p * sigma), z_p the standard normal's (1 - p) quantile (by bisection on erfc).
inline double peak_limit_for_oom_probability(double capacity_bytes, double p) {
  double lo = -40, hi = 40;  // z
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(mid / std::sqrt(2.0)) > p ? lo : hi) = mid;
  }
  return capacity_bytes * std::exp(-0.5 * (lo + hi) * MEMEST_PEAK_ERROR_SIGMA);
}

}  // namespace memest
