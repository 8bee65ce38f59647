// FLOPs a token costs in a model, independent of the layout (Narayanan et al. 2021, as
// Megatron-LM reports TFLOP/s; adapted to GQA, SwiGLU, mixture-of-experts and latent attention).
#pragma once

#include "memest/memest.h"

namespace memest {

struct ModelFlops {
  // Weights a token multiplies by in a layer, on average over the layers: the matrices of Q, K,
  // V, O and the MLP for a dense model; the ACTIVE parameters (attention, shared experts, the
  // router, the top-k experts; norms included, a negligible excess) for a mixture-of-experts or
  // latent-attention model.
  double active_layer_params = 0;
  // Attention score FLOPs per token per layer and pass, per query position: QK^T over the
  // query/key width and PV over the value width (a * d for standard attention); a hybrid's
  // averaged over all its layers, attention or not.
  double score_width = 0;
  // The same width on one attention layer (score_width but for a hybrid, whose attention
  // layers each hold the full width): what one layer's attention kernels compute.
  double attention_layer_score_width = 0;
  // A hybrid model's chunked-scan FLOPs per token and layer, forward (0 otherwise).
  double scan_flops = 0;
};
ModelFlops model_flops(const memest_model& m);

// Forward FLOPs per token of one layer's chunked scan (tensor parallelism aside). Mamba-2's SSD
// (mamba_ssm/ops/triton/ssd_*.py, chunk Q = 256): C B^T within a chunk per group
// (2 Q N groups), its product with X (2 Q d_inner), the chunk states and their read-out
// (4 N d_inner). fla's chunked gated delta rule (chunk C = 64) per value head: the state
// updates and read-outs (6 d_k d_v) and the chunk products (6 C d_k + 4 C d_v); Kimi Delta
// Attention runs the same chunked delta rule with a per-channel gate. Mamba-1's selective scan
// (uses_mamba1) is a recurrence, not products: 9 FLOPs per channel and state (discretising A
// and B, the state update, the read-out), as VMamba's and fvcore-based counters count
// mamba_ssm's selective_scan.
double mamba_scan_flops(const memest_model& m);
double deltanet_scan_flops(const memest_model& m);

// Model FLOPs per token (3 passes) at sequence length `seq_len`:
// 6 N_active + 6vh + 12 s L score_width.
double model_flops_per_token(const memest_model& m, const ModelFlops& f, double seq_len);
double model_flops_per_token(const memest_model& m, double seq_len);

}  // namespace memest
