// What a hybrid model's layers save for backward (model/hybrid.hpp): the token mixers that
// replace self-attention (Mamba-2, gated DeltaNet) and the blocks a layer lacks. Each stack's
// own block model (the 4D paper's per-layer terms under Megatron, the eager block elsewhere)
// counts every layer as attention + MLP; hybrid_activation_delta says what a stage's layers
// differ by.
#pragma once

#include "activations/activations.hpp"
#include "model/hybrid.hpp"

namespace memest {

// Bytes one Mamba-2 mixer saves for backward per GPU per micro-batch, beyond its input (the
// norm's output, which the block's norm share holds). mamba_ssm's fused path
// (ops/triton/ssd_combined.py MambaSplitConv1dScanCombinedFn, which Megatron-Core's MambaMixer
// and the Hugging Face Mamba-2 mixers run in training) saves in_proj's output zxbcdt
// (2 d_inner + 2 groups*state + heads wide) and the scan's output before the gated norm
// (d_inner), with the norm's rstd (fp32, one per group); the conv1d output and the chunk
// states are recomputed in backward. out_proj saves its input (d_inner). Heads split over
// tensor parallelism; bf16 (2 bytes) but rstd.
double mamba_saved_bytes(const memest_model& m, const ActivationLayout& x);

// Bytes one gated DeltaNet saves for backward per GPU per micro-batch beyond its input
// (models/qwen3_next/modeling_qwen3_next.py Qwen3NextGatedDeltaNet with fla's
// chunk_gated_delta_rule, fla/ops/gated_delta_rule/chunk.py, and causal_conv1d_fn): the
// causal conv's input (q, k, v concatenated: 2 keys + values), the kernel's q, k, v after the
// conv, its gate g (fp32) and beta per value head, the chunk's triangular solve A (64 entries
// per token and value head, bf16), the z gate and the core output the gated norm saves
// (values each), and out_proj's input (values). Heads split over tensor parallelism.
double deltanet_saved_bytes(const memest_model& m, const ActivationLayout& x);

// One layer's share of a stack's block model, per GPU per micro-batch (what a hybrid layer
// has instead, or lacks): the attention core (what a mixer replaces), the dense MLP, and one
// norm with the input it hands on.
struct BlockShares {
  double attention = 0;
  double mlp = 0;
  double norm = 0;
};
// The 4D paper's block (activations.hpp): attention = the attention terms of the sharded
// coefficient (+ the s^2 scores without FlashAttention), mlp = mlp_activation_bytes, norm =
// half the replicated coefficient. 0 under full recomputation: every block keeps its input.
BlockShares megatron_block_shares(const memest_model& m, const ActivationCoefficients& k,
                                  const ActivationLayout& x);

// Bytes the layers of `mix` save beyond the same number of attention + MLP layers under
// `shares` (negative where they save less); mixers saved as the functions above.
double hybrid_activation_delta(const memest_model& m, const ActivationLayout& x,
                               const LayerMix& mix, const BlockShares& shares);

}  // namespace memest
