#include "model/gpu_profile.hpp"

#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "core/units.hpp"

namespace memest {

namespace {

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

void check_number(double v, double min, double max, const std::string& path) {
  if (!std::isfinite(v) || v < min || v > max) {
    fail(path, "must be a finite number between " + number_text(min) + " and " +
                   number_text(max) + ", got " + number_text(v));
  }
}

// A field where 0 means "unknown" or "derive it" takes 0 or at least `positive_min` (a denormal
// peak or efficiency would make a step time infinite).
void check_zero_or_at_least(double v, double positive_min, const std::string& path,
                            const char* zero_means) {
  if (v > 0 && v < positive_min) {
    fail(path, std::string("must be 0 (") + zero_means + ") or at least " +
                   number_text(positive_min) + ", got " + number_text(v));
  }
}

}  // namespace

double validate_gpu(const memest_gpu& gpu, const std::string& field, bool required) {
  const double gib = gpu.memory_bytes / kGiB;
  if (gpu.memory_bytes == 0) {
    if (required) {
      throw Error(MEMEST_ERR_MISSING_FIELD, field,
                  field + ": missing (a preset id or {\"memory_gib\": N})");
    }
  } else {
    check_number(gib, kMinMemoryGib, kMaxMemoryGib, field + ".memory_gib");
  }
  check_number(gpu.peak_bf16_tflops, 0, kMaxPeakTflops, field + ".peak_bf16_tflops");
  check_zero_or_at_least(gpu.peak_bf16_tflops, kMinPositivePeakTflops, field + ".peak_bf16_tflops",
                         "unknown");
  for (const GpuProfileField& p : kGpuProfileFields) {
    const double v = gpu.*p.member / p.scale;
    check_number(v, p.min, p.max, field + "." + p.key);
    check_zero_or_at_least(v, p.positive_min, field + "." + p.key, "derived");
  }
  if (gpu.fp8 != 0 && gpu.fp8 != 1) {
    fail(field + ".fp8", "must be 0 (no fp8 tensor cores) or 1, got " + std::to_string(gpu.fp8));
  }
  if (gpu.fp4 != 0 && gpu.fp4 != 1) {
    fail(field + ".fp4", "must be 0 (no NVFP4 training) or 1, got " + std::to_string(gpu.fp4));
  }
  if (gpu.gpus_per_node < 1 || gpu.gpus_per_node > kMaxGpusPerNode) {
    fail(field + ".gpus_per_node", "must be between 1 and " + std::to_string(kMaxGpusPerNode) +
                                       ", got " + std::to_string(gpu.gpus_per_node));
  }
  return gpu.memory_bytes;
}

}  // namespace memest
