#include "throughput/kernels.hpp"

#include <algorithm>

namespace memest {

DeviceRates device_rates(const memest_gpu& g) {
  DeviceRates d;
  d.bf16_flops = g.peak_bf16_tflops * 1e12;
  // A GPU with fp8 tensor cores and no stated FP8 peak: twice the BF16 rate (Hopper, Ada,
  // Blackwell and MI300 datasheets all list FP8 dense at 2x BF16 dense).
  d.fp8_flops = g.peak_fp8_tflops > 0 ? g.peak_fp8_tflops * 1e12 : (g.fp8 > 0 ? 2 * d.bf16_flops : 0);
  // NVFP4: twice the FP8 rate where no FP4 peak is stated (the B200 / GB200 datasheets list
  // dense FP4 at 2x dense FP8)
  d.fp4_flops = g.fp4 > 0 ? (g.peak_fp4_tflops > 0 ? g.peak_fp4_tflops * 1e12 : 2 * d.fp8_flops) : 0;
  d.hbm_bytes = g.hbm_gbps * 1e9;
  d.gemm_efficiency = g.gemm_efficiency;
  d.fp8_gemm_efficiency = g.fp8_gemm_efficiency > 0 ? g.fp8_gemm_efficiency : g.gemm_efficiency;
  d.gemm_half_dim = g.gemm_half_dim;
  d.attention_efficiency = g.attention_efficiency;
  d.attention_half_seq = g.attention_half_seq;
  d.kernel_seconds = g.kernel_overhead_us * 1e-6;
  return d;
}

double gemm_efficiency(const DeviceRates& d, double m, double n, double k) {
  const double x = d.gemm_half_dim;
  return d.gemm_efficiency * (m / (m + x)) * (n / (n + x)) * (k / (k + x));
}

namespace {

// The FLOP time of an M x N x K GEMM (the same for its three training permutations: the
// efficiency is symmetric in the dimensions) and the bytes of one input element.
struct GemmRates {
  double compute;      // seconds of its FLOPs at the achieved rate
  double input_bytes;  // 2, 1 for FP8, 0.5625 for NVFP4
};

GemmRates gemm_rates(const DeviceRates& d, double m, double n, double k, int inputs) {
  const bool four = inputs == kGemmNvfp4 && d.fp4_flops > 0;
  const bool eight = !four && inputs != kGemmBf16 && d.fp8_flops > 0;
  const double peak = four ? d.fp4_flops : eight ? d.fp8_flops : d.bf16_flops;
  // FP8 GEMMs reach a lower share of their (twice as high) peak than BF16's: the profile's
  // fp8_gemm_efficiency replaces the ceiling (NVFP4's too, an assumption).
  const double shape = gemm_efficiency(d, m, n, k) / d.gemm_efficiency;
  const double ceiling = four || eight ? d.fp8_gemm_efficiency : d.gemm_efficiency;
  return {2 * m * n * k / (peak * ceiling * shape), four ? 0.5625 : eight ? 1.0 : 2.0};
}

// Roofline of one GEMM C[M,N] = A[M,K] B[K,N] given its FLOP time.
double roofline(const DeviceRates& d, const GemmRates& g, double m, double n, double k) {
  const double traffic = (g.input_bytes * (m * k + k * n) + 2 * m * n) / d.hbm_bytes;
  return std::max(g.compute, traffic) + d.kernel_seconds;
}

}  // namespace

double gemm_seconds(const DeviceRates& d, double m, double n, double k, int inputs) {
  if (!(m > 0 && n > 0 && k > 0)) return 0;
  return roofline(d, gemm_rates(d, m, n, k, inputs), m, n, k);
}

LinearSeconds linear_seconds(const DeviceRates& d, double m, double n, double k, int inputs,
                             bool weight_grad) {
  LinearSeconds s;
  if (!(m > 0 && n > 0 && k > 0)) return s;
  const GemmRates g = gemm_rates(d, m, n, k, inputs);
  s.forward = roofline(d, g, m, n, k);
  s.backward = roofline(d, g, m, k, n) + (weight_grad ? roofline(d, g, k, n, m) : 0);
  return s;
}

double memory_seconds(const DeviceRates& d, double bytes, double kernels) {
  return bytes / d.hbm_bytes + kernels * d.kernel_seconds;
}

AttentionSeconds flash_attention_seconds(const DeviceRates& d, double flops, double block_keys,
                                         double head_dim) {
  AttentionSeconds s;
  if (!(flops > 0)) return s;
  const double efficiency = d.attention_efficiency * block_keys / (block_keys + d.attention_half_seq) *
                            head_dim / (head_dim + 16);
  s.forward = flops / (d.bf16_flops * efficiency) + d.kernel_seconds;
  s.backward = 2.5 * flops / (d.bf16_flops * efficiency) + 2 * d.kernel_seconds;
  return s;
}

}  // namespace memest
