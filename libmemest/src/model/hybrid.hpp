// Hybrid models: decoder layers whose token mixer is not self-attention (Mamba-2 or Mamba-1,
// gated DeltaNet or Kimi Delta Attention), or that hold only a mixer or only an MLP (Nemotron-H's one-block layers). A model
// says so per layer (memest_model.mixer_pattern, mlp_pattern); every other module counts a
// layer as self-attention + MLP and adds what a hybrid layer differs by (the LayerMix of the
// layers it holds), so a model without patterns is modelled exactly as before.
#pragma once

#include <cstdint>
#include <string>

#include "model/model.hpp"

namespace memest {

// Mixer characters of memest_model.mixer_pattern, MLP characters of mlp_pattern.
constexpr char kMixerAttention = 'A', kMixerMamba2 = 'M', kMixerDeltaNet = 'G',
               kMixerParallel = 'P', kMixerNone = '-', kMixerMamba1 = 'S', kMixerKda = 'K';
constexpr char kMlpDense = 'D', kMlpMoe = 'E', kMlpNone = '-';

inline bool has_mixer_pattern(const memest_model& m) { return m.mixer_pattern[0] != '\0'; }
inline bool has_mlp_pattern(const memest_model& m) { return m.mlp_pattern[0] != '\0'; }
// A model with a per-layer pattern whose layers are not all self-attention with an MLP.
bool is_hybrid(const memest_model& m);

// The mixer of layer i: its pattern character, 'A' without a pattern or past it (the
// multi-token-prediction modules).
char mixer_of(const memest_model& m, int64_t i);

// How layers [begin, end) differ from self-attention + MLP layers.
// A model has one kind of state-space mixer and one kind of delta-rule mixer
// (validate_hybrid): `mamba` counts its state-space layers and `deltanet` its delta-rule
// layers, whichever kind the model has (uses_mamba1, uses_kda).
struct LayerMix {
  int64_t mamba = 0;      // 'M' Mamba-2 or 'S' Mamba-1 instead of attention
  int64_t deltanet = 0;   // 'G' gated DeltaNet or 'K' Kimi Delta Attention instead of attention
  int64_t parallel = 0;   // 'P': Mamba-2 beside the attention
  int64_t no_mixer = 0;   // '-' mixers: MLP-only layers
  int64_t no_mlp = 0;     // '-' MLPs: mixer-only layers (their MLP is a dense one's, not MoE)
  bool any() const { return mamba + deltanet + parallel + no_mixer + no_mlp > 0; }
};
LayerMix layer_mix(const memest_model& m, int64_t begin, int64_t end);

// Whether the model's state-space layers are Mamba-1 ('S') rather than Mamba-2, and its
// delta-rule layers Kimi Delta Attention ('K') rather than gated DeltaNet.
bool uses_mamba1(const memest_model& m);
bool uses_kda(const memest_model& m);

// Whether Megatron-Core's context parallelism can split the model's Mamba-2 and gated DeltaNet
// heads over tp x cp ranks, and if not, the first condition it breaks: Mamba-2 needs tp * cp
// to divide the heads, and each rank's groups (groups / tp) to divide by cp or divide cp
// (megatron/core/ssm/mamba_context_parallel.py MambaContextParallel.__init__ asserts); gated
// DeltaNet needs tp * cp to divide the key heads and the value heads (gated_delta_net/common.py:
// every in_proj section splits over cp).
enum class CpMixerSplit { Ok, MambaHeads, MambaGroups, DeltaHeads };
CpMixerSplit cp_mixer_split(const memest_model& m, int64_t tp, int64_t cp);

// How many copies of the even share of Mamba-2's B and C each rank holds under Megatron's
// context parallelism: the all-to-all hands each rank whole groups, so where a rank's tp share
// holds fewer groups than cp ranks, each group is repeated to the cp / (groups / tp) ranks that
// share its heads (mamba_context_parallel.py group_repeat_count): tp * cp / groups, at least 1.
double mamba_bc_copies(const memest_model& m, double tp, double cp);

// One state-space mixer's parameters: Mamba-1's when uses_mamba1, else Mamba-2's.
// Mamba-2  (mamba_ssm/modules/mamba2.py Mamba2.__init__; Hugging Face
// Mamba2Mixer, NemotronHMamba2Mixer): in_proj, conv1d, dt_bias, A_log, D, the gated norm,
// out_proj. Megatron-Core splits every one by heads over tensor parallelism
// (megatron/core/ssm/mamba_mixer.py: in_proj column-parallel, conv1d/dt_bias/A_log/D/norm on
// the rank's heads, out_proj row-parallel): all sharded but out_proj's bias.
// Mamba-1 (Hugging Face models/jamba/modeling_jamba.py JambaMambaMixer.__init__): in_proj
// hidden x 2 d_inner, conv1d d_inner x d_conv (+ bias), x_proj d_inner x (dt_rank + 2 state),
// dt_proj dt_rank x d_inner with a bias, A_log d_inner x state, D, Jamba's dt/B/C RMSNorms
// (dt_rank + 2 state, replicated), out_proj; split over tp by channels as Mamba-2 by heads.
LayerParams mamba_params(const memest_model& m);
// A delta-rule mixer's widths per token from the linear_* fields (gated DeltaNet and KDA
// alike): the value heads; keys = key heads x key_head_dim (q and k each); values = value
// heads x value_head_dim (v, the output gate, the output); repeated_keys = value heads x
// key_head_dim (q and k repeated to the value heads; KDA's per-channel forget gate); rank =
// value_head_dim (KDA's low-rank gates' inner width, fla/layers/kda.py f_proj, g_proj).
struct DeltaRuleWidths {
  double value_heads, keys, values, repeated_keys, rank;
};
DeltaRuleWidths delta_rule_widths(const memest_model& m);

// One delta-rule mixer's parameters: Kimi Delta Attention's when uses_kda, else gated
// DeltaNet's. KDA (fla/layers/kda.py KimiDeltaAttention, as the Kimi-Linear checkpoint stores
// it): q_proj and k_proj hidden x keys, v_proj hidden x values, three depthwise short convs
// (no bias), the low-rank forget gate f_a hidden x head_v_dim and f_b head_v_dim x value
// heads*head_k_dim, b_proj hidden x value heads, A_log per value head, dt_bias per gate
// channel, the low-rank output gate g_a hidden x head_v_dim and g_b head_v_dim x values (no
// bias in the checkpoint), a gated RMSNorm of head_v_dim (replicated), o_proj values x hidden.
// One gated DeltaNet's parameters (models/qwen3_next/modeling_qwen3_next.py
// Qwen3NextGatedDeltaNet): in_proj_qkvz, in_proj_ba, conv1d (no bias), dt_bias, A_log, the
// head_v_dim-wide gated norm (shared by the heads: replicated), out_proj.
LayerParams deltanet_params(const memest_model& m);

// What the layers of `mix` add to the same number of self-attention + MLP layers (negative
// where they hold less): the mixers they have instead of attention, minus the attention,
// the dense MLP and the norm of an absent block. The MLP of a '-' MLP layer is subtracted
// as a dense one (layer_mix counts it among the dense layers).
LayerParams hybrid_params_delta(const memest_model& m, const LayerMix& mix);

// Checks the patterns and the mixer dimensions they need (names "<prefix>.<field>").
void validate_hybrid(const memest_model& m, const std::string& prefix);

}  // namespace memest
