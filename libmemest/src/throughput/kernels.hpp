// Time of one GPU's kernels: GEMMs at their own shapes, FlashAttention, memory-bound kernels.
// Every rate comes from the device profile (memest_gpu), so calibrate/ can measure it and a
// preset carries datasheet or published values (data/gpus.json names each source).
#pragma once

#include "memest/memest.h"

namespace memest {

// The profile's rates in SI units, resolved once per plan.
struct DeviceRates {
  double bf16_flops = 0;      // dense BF16 Tensor Core peak, FLOP/s
  double fp8_flops = 0;       // dense FP8 peak (0: none)
  double fp4_flops = 0;       // dense FP4 peak (0: none)
  double hbm_bytes = 0;       // device-memory bandwidth, bytes/s
  double gemm_efficiency = 0; // achieved / peak of a large GEMM
  double fp8_gemm_efficiency = 0;  // the same for FP8 inputs
  double gemm_half_dim = 0;   // a dimension this small halves the efficiency along it
  double attention_efficiency = 0;
  double attention_half_seq = 0;
  double kernel_seconds = 0;  // launch and tail per kernel
};
DeviceRates device_rates(const memest_gpu& g);

// Efficiency of an M x N x K GEMM: the ceiling times d / (d + d_half) along each dimension
// (tile and wave quantisation: a dimension a few tiles long leaves most of the SMs' work
// padded or idle, as the cuBLAS/CUTLASS tile sizes of 64-256 make small GEMMs slow).
double gemm_efficiency(const DeviceRates& d, double m, double n, double k);

// The GEMM inputs' precision: bf16, FP8 (Transformer Engine / torchao Float8 linear layers) or
// NVFP4 (Transformer Engine's NVFP4BlockScaling); the output stays 16-bit.
enum GemmInputs : int { kGemmBf16 = 0, kGemmFp8 = 1, kGemmNvfp4 = 2 };

// One GEMM C[M,N] = A[M,K] B[K,N]: the slower of its FLOPs at the achieved rate and its bytes at
// HBM bandwidth (roofline), plus one kernel's overhead. FP8 inputs run at the FP8 peak and
// fp8_gemm_efficiency; NVFP4 inputs at the FP4 peak with the same efficiency (no FP4 GEMM
// measurement yet: an assumption) and 0.5625 bytes per input element.
double gemm_seconds(const DeviceRates& d, double m, double n, double k, int inputs);

// A linear layer's GEMMs in training: forward Y = X W (M x N x K), the input gradient
// dX = dY W^T (M x K x N) and the weight gradient dW = X^T dY (K x N x M). `weight_grad` false
// for a frozen weight (LoRA/QLoRA base): no dW.
struct LinearSeconds {
  double forward = 0, backward = 0;
};
LinearSeconds linear_seconds(const DeviceRates& d, double m, double n, double k, int inputs,
                             bool weight_grad = true);

// Seconds to move `bytes` through HBM (memory-bound kernels: norms, activations, casts,
// optimizer step), plus `kernels` launches.
double memory_seconds(const DeviceRates& d, double bytes, double kernels);

// Causal FlashAttention on one GPU for one micro-batch of one layer: `flops` the forward's
// matmul FLOPs (QK^T and PV over the causal half), `block_keys` the keys one query block sees
// in one kernel (the sequence, or its 1/cp share under context parallelism), `head_dim` the
// query/key width. Forward at attention_efficiency x S/(S + S_half) x d/(d + 16); backward runs
// five matmuls to the forward's two (it recomputes QK^T: FlashAttention-2, Dao 2023, Sec. 3.1),
// 2.5 times the forward's FLOPs at the same rate.
struct AttentionSeconds {
  double forward = 0, backward = 0;
};
AttentionSeconds flash_attention_seconds(const DeviceRates& d, double flops, double block_keys,
                                         double head_dim);

}  // namespace memest
