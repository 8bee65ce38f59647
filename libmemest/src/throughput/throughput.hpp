// Throughput model: time per iteration and TFLOP/s per GPU for a pretraining layout.
//
// Model FLOPs per iteration (Narayanan et al. 2021, as Megatron-LM reports TFLOP/s, adapted
// to GQA, SwiGLU and an untied head; for Llama-3.1-8B it is Megatron's
// 12*B*s*L*h^2*((1 + k/a + s/h) + 1.5 h_ffn/h + v/(2Lh))):
//   F = B*s * (6*N_matmul + 6*v*h + 12*s*L*a*d_head)      (3 passes: forward + 2x backward)
// Time per iteration, one GPU's view (constants from the device profile):
//   tau   = compute + TP/SP communication of one micro-batch on the slowest stage
//   compute = GEMM FLOPs / (peak * eta_g * n/(n + n_half))     n = s*b/c rows per GPU
//           + causal attention FLOPs (half the counted) / (peak * eta_attn) * (1 + g_cp (c-1))
//   TP/SP   = layers * 8 collectives * (t-1)/t * 2sbh/c bytes / BW_tp (inter-node BW if t > node)
//   T       = (m + (p-1)/vpp) * tau                             1F1B bubble (p-1)/(vpp m)
//           + DP: (dc-1)/(dc) * (grad + param bytes) * N/(t p) / BW (node or network)
//           + pipeline_stage_seconds * (p-1)                    empirical, fitted
// Recomputation adds forward FLOPs: full recomputes every layer (x 4/3), selective recomputes
// attention scores when FlashAttention does not already.
#pragma once

#include "memest/memest.h"
#include "model/flops.hpp"

namespace memest {

struct Plan;

struct Throughput {
  double model_flops = 0;      // per iteration
  double step_seconds = 0;
  double tflops_per_gpu = 0;   // model FLOPs / (time * gpus), as the 4D paper reports
  double tokens_per_s = 0;
  double bubble_fraction = 0;  // (p - 1) / (vpp * m)
};

// Model FLOPs per token: model/flops.hpp.

// Bytes a data-parallel rank sends per step beyond one gradient reduce-scatter and one
// parameter all-gather (ZeRO-3 / FSDP re-gathers per micro-batch, per-micro-batch gradient
// reduction), for `params` parameters of a stage over `microbatches` micro-batches. 0 for the
// default Megatron layouts (zero 0-2).
double sharding_traffic_bytes(const Plan& plan, double params, double microbatches);
// Seconds of host <-> GPU transfers per step for what is offloaded (PCIe, no overlap).
double offload_seconds(const Plan& plan, double params, double microbatches);
// Seconds of one MoE layer's expert-parallel all-to-alls (dispatch + combine, forward and
// backward) for one micro-batch on one GPU; 0 for a dense model or ep = 1.
double moe_all_to_all_seconds(const Plan& plan);

// Needs the number of micro-batches (a global batch); zeros when it is not known.
Throughput estimate_throughput(const Plan& plan);

}  // namespace memest
