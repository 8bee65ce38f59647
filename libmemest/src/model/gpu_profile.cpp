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
  if (gpu.peak_bf16_tflops > 0 && gpu.peak_bf16_tflops < 1e-3) fail(field + ".peak_bf16_tflops", "must be 0 (unknown) or at least 0.001 TFLOP/s");
  for (const GpuProfileField& p : kGpuProfileFields) {
    const double v = gpu.*p.member / p.scale;
    check_number(v, p.min, p.max, field + "." + p.key);
    if (v > 0 && v < p.positive_min) {
      fail(field + "." + p.key, "must be 0 (derived) or at least " + number_text(p.positive_min) +
                                    ", got " + number_text(v));
    }
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
