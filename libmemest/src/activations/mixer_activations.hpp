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
// norm's output, which the block's norm share holds). mamba_ssm's fused split-conv1d-scan
// (ops/triton/ssd_combined.py MambaSplitConv1dScanCombinedFn.forward save_for_backward) keeps
// in_proj's output zxbcdt (2 d_inner + 2 groups*state + heads wide), the scan's output before
// the gate and norm (d_inner) and the norm's rstd (fp32, one per group); the conv1d output and
// the chunk states are rebuilt in backward. Hugging Face's mixers (Mamba2Mixer
// cuda_kernels_forward, NemotronH, Bamba, GraniteMoeHybrid, Falcon-H1) pass the gated norm and
// out_proj into it: the norm's output is recomputed for out_proj's weight gradient, nothing
// more is saved. Megatron-Core's MambaMixer (megatron/core/ssm/mamba_mixer.py) passes neither:
// its separate gated norm saves its input and rstd, its out_proj (TERowParallelLinear) its
// input, 4 d_inner more. Heads split over tensor parallelism; bf16 but the rstd. Context
// parallelism (Megatron-Core only, mamba_context_parallel.py) splits the tokens before in_proj
// and the heads around the conv and scan: the same bytes per GPU, but for B and C, which a
// rank holds whole per group (repeated where cp exceeds its groups).
//
// Mamba-1 ('S' layers, uses_mamba1): Hugging Face's JambaMambaMixer.cuda_kernels_forward runs
// in_proj, causal_conv1d_fn, x_proj, the dt/B/C RMSNorms (eager), dt_proj and mamba_ssm's
// selective_scan_fn apart (ops/selective_scan_interface.py SelectiveScanFn.forward saves u,
// delta, A, B, C, D, z, delta_bias, the fp32 chunk states x and out): in_proj's output (x and
// z, 2 d_inner), the conv's output u, delta, out and the gated out_z out_proj keeps, 12 d_inner
// bytes; the norms' fp32 copies and outputs, 8 bytes per element of dt_rank + 2 state; B and C
// made contiguous; the chunk states, 2 x state fp32 per channel every 2048 tokens. No stack
// ships another Mamba-1 mixer: every stack uses these saves, channels split over tp.
double mamba_saved_bytes(const memest_model& m, const ActivationLayout& x, bool megatron);

// Bytes one gated DeltaNet saves for backward per GPU per micro-batch beyond its input
// (models/qwen3_next/modeling_qwen3_next.py Qwen3NextGatedDeltaNet with fla's
// chunk_gated_delta_rule, fla/ops/gated_delta_rule/chunk.py, and causal_conv1d_fn): the causal
// conv's input (q, k, v concatenated: 2 keys + values, bf16); the kernel's q and k after its l2
// norm, repeated to the value heads (2 x value heads x key_head_dim, bf16, with fp32 rstds), v;
// the gate g (fp32 cumulative within the chunk), beta, the sigmoid and softplus inputs; the
// chunk's triangular solve A (64 per token and value head, bf16); the gated norm's x and z and
// rstd (fla fused_norm_gate.py), and out_proj's input: 4 keys + 4 x value heads x key_head_dim
// + 10 values + 26 x value heads + 2 x 64 x value heads bytes per token. Heads split over tensor
// parallelism.
//
// Kimi Delta Attention ('K' layers, uses_kda; fla/layers/kda.py with fla/ops/kda/chunk.py
// ChunkKDAFunction.forward, use_gate_in_kernel and the l2 norm in the kernel): the three short
// convs' inputs (2 keys + values, bf16); q and k after the l2 norm with fp32 rstds per head, v;
// the raw forget gate (value heads x head_k_dim, bf16; its cumulative sum is rebuilt in
// backward), the low-rank gates' inner outputs, beta raw and after the sigmoid; Aqk and Akk
// (64 per token and value head each, bf16); the gated norm's x, z and rstd and o_proj's input.
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
// `shares` (negative where they save less); mixers saved as the functions above (`megatron`:
// Megatron-Core's MambaMixer, else the Hugging Face mixers).
double hybrid_activation_delta(const memest_model& m, const ActivationLayout& x,
                               const LayerMix& mix, const BlockShares& shares, bool megatron);

// What LoRA adapters on one mixer's in_proj / out_proj (memest_lora_target bits in `targets`)
// save per GPU per micro-batch, beyond the mixer's own saved bytes (kept as full training's:
// what its frozen linears no longer save is not subtracted, the safe side). Each adapted linear
// keeps its r-wide lora_A output for lora_B (2r bytes per token) and lora_A's input: in_proj's
// is the normed layer input, which the frozen in_proj itself no longer keeps (2 bytes per
// element, Megatron's column-parallel adapter gathers it whole from the sequence-parallel
// shard); out_proj's is the input the mixer already keeps for it (the gated norm's output, or
// the fused kernel's own copy), shared unless dropout gives lora_A its own output and mask (3
// bytes per element). Qwen3-Next's two input linears (in_proj_qkvz, in_proj_ba) share their
// input and keep a lora_A output each. Full recomputation keeps the block's input only: 0.
// Hugging Face's fused Mamba-2 path hands out_proj's weight to the kernel itself, so peft's
// adapter there is built but takes no gradient; it is counted as trained (the safe side).
struct MixerAdapterActivation {
  uint32_t targets = 0;
  double rank = 0;
  bool dropout = false;
  bool megatron = false;  // Megatron-Core's one in_proj for gated DeltaNet, else Hugging Face's two
};
double mixer_adapter_saved_bytes(const memest_model& m, const ActivationLayout& x,
                                 const MixerAdapterActivation& a, bool deltanet);

}  // namespace memest
