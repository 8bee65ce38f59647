// Least-squares fits and unit conversions of memest-calibrate (no GPU needed).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <stdexcept>

#include "calibrate.hpp"

namespace memest_calibrate {

namespace {

// For a fixed half point H the model E * g_i with g_i = r_i / (r_i + H) is linear in E, so the
// best E is sum(y g) / sum(g^2); the residuals are summed directly (no cancellation), so the
// search over H resolves it to ~1e-8.
struct Profiled {
  double efficiency;
  double sse;
};

Profiled profile_at(const std::vector<RowsValue>& p, double h) {
  double yg = 0, gg = 0;
  for (const RowsValue& x : p) {
    const double g = x.rows / (x.rows + h);
    yg += x.value * g;
    gg += g * g;
  }
  const double e = yg / gg;
  return {e, saturating_sse(p, e, h)};
}

}  // namespace

double saturating_sse(const std::vector<RowsValue>& points, double efficiency, double half_tokens) {
  double sse = 0;
  for (const RowsValue& x : points) {
    const double r = x.value - efficiency * x.rows / (x.rows + half_tokens);
    sse += r * r;
  }
  return sse;
}

SaturatingFit fit_saturating(const std::vector<RowsValue>& points) {
  std::set<double> distinct;
  double min_rows = 0, max_rows = 0;
  for (const RowsValue& x : points) {
    if (!(x.rows > 0) || !std::isfinite(x.rows) || !(x.value > 0) || !std::isfinite(x.value)) {
      throw std::invalid_argument("GEMM fit: rows and values must be positive and finite");
    }
    distinct.insert(x.rows);
  }
  if (distinct.size() < 2) {
    throw std::invalid_argument("GEMM fit: needs points at 2 or more row counts");
  }
  min_rows = *distinct.begin();
  max_rows = *distinct.rbegin();

  // The residual sum of squares as a function of H alone: scan H on a log grid from
  // min_rows / 1e4 to 100 * max_rows (and H = 0, no saturation), then refine the best bracket
  // by golden-section search in log H.
  const double lo = std::log(min_rows * 1e-4), hi = std::log(max_rows * 100);
  constexpr int kGrid = 2000;
  int best = -1;  // -1: H = 0
  double best_sse = profile_at(points, 0).sse;
  auto h_at = [&](int i) { return std::exp(lo + (hi - lo) * i / kGrid); };
  for (int i = 0; i <= kGrid; ++i) {
    const double s = profile_at(points, h_at(i)).sse;
    if (s < best_sse) {
      best_sse = s;
      best = i;
    }
  }
  double h = 0;
  if (best >= 0) {
    double a = std::log(h_at(std::max(0, best - 1))), b = std::log(h_at(std::min(kGrid, best + 1)));
    const double phi = (std::sqrt(5.0) - 1) / 2;
    double c = b - phi * (b - a), d = a + phi * (b - a);
    double fc = profile_at(points, std::exp(c)).sse, fd = profile_at(points, std::exp(d)).sse;
    for (int it = 0; it < 200 && b - a > 1e-12; ++it) {
      if (fc < fd) {
        b = d; d = c; fd = fc;
        c = b - phi * (b - a);
        fc = profile_at(points, std::exp(c)).sse;
      } else {
        a = c; c = d; fc = fd;
        d = a + phi * (b - a);
        fd = profile_at(points, std::exp(d)).sse;
      }
    }
    h = std::exp((a + b) / 2);
  }
  const Profiled p = profile_at(points, h);
  SaturatingFit f;
  f.efficiency = p.efficiency;
  f.half_tokens = h;
  f.points = static_cast<int>(points.size());
  f.rms = std::sqrt(saturating_sse(points, f.efficiency, f.half_tokens) / static_cast<double>(points.size()));
  return f;
}

std::optional<int64_t> allocation_granularity(const std::vector<AllocationProbe>& probes) {
  int64_t g = 0;
  for (const AllocationProbe& p : probes) {
    if (p.free_drop_bytes > 0) g = std::gcd(g, p.free_drop_bytes);
  }
  if (g == 0) return std::nullopt;
  return g;
}

double hbm_gbps(const CopyTiming& t) {
  return t.seconds > 0 ? 2.0 * static_cast<double>(t.bytes) / t.seconds / 1e9 : 0;
}

double peer_gbps(const CopyTiming& t) {
  return t.seconds > 0 ? static_cast<double>(t.bytes) / t.seconds / 1e9 : 0;
}

}  // namespace memest_calibrate
