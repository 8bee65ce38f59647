#include "activations/mixer_activations.hpp"

#include <algorithm>
#include <cmath>

namespace memest {

namespace {
// Tokens of one micro-batch on one GPU inside a mixer (full sequence under SP: the input is
// gathered before in_proj, as before the attention's QKV).
double mixer_tokens(const ActivationLayout& x) { return x.seq_len * x.micro_batch / x.cp; }
constexpr double kDeltaRuleChunk = 64;  // fla chunk_gated_delta_rule's chunk size (BT)
// mamba_ssm's selective scan (csrc/selective_scan) keeps its state every 2048 tokens
constexpr double kSelectiveScanChunk = 2048;

double mamba1_saved_bytes(const memest_model& m, const ActivationLayout& x) {
  const double inner = static_cast<double>(m.mamba_num_heads * m.mamba_head_dim);
  const double state = static_cast<double>(m.mamba_state_size);
  const double dt_bc = static_cast<double>(m.mamba_dt_rank) + 2 * state;  // x_proj's output
  // in_proj's x and z (one tensor), the conv's output u, delta, the scan's out and out_z
  const double channels = 12 * inner;
  // Eager RMSNorms keep an fp32 copy and the bf16 product per element, rstd per row, and
  // hand dt_proj / the scan their bf16 outputs; without them x_proj's output is kept.
  const double norms = m.mamba_norm ? 8 * dt_bc + 12 : 2 * dt_bc;
  const double bc = 4 * state;  // B and C made contiguous for the scan (transposed views)
  // the fp32 chunk states: 2 x state per channel for every chunk a sequence starts
  const double chunks = x.micro_batch * std::ceil(x.seq_len / x.cp / kSelectiveScanChunk);
  return (mixer_tokens(x) * (channels + norms + bc) + chunks * 8 * state * inner) / x.tp;
}

double kda_saved_bytes(const memest_model& m, const ActivationLayout& x) {
  const double hk = static_cast<double>(m.linear_key_heads);
  const auto [vh, keys, values, gate, rank] = delta_rule_widths(m);
  const double convs = 4 * keys + 2 * values;        // the three short convs' inputs
  const double qkv = 4 * keys + 2 * values + 8 * hk;  // q, k after the l2 norm (+ fp32 rstd), v
  const double gates = 2 * gate + 4 * rank + 4 * vh;  // raw forget gate, f_a/g_a outputs, beta
  const double solve = 2 * 2 * kDeltaRuleChunk * vh;  // Aqk and Akk, bf16
  const double norm_and_out = 6 * values + 4 * vh;    // o_norm's x and z (+ rstd), o_proj's input
  return mixer_tokens(x) * (convs + qkv + gates + solve + norm_and_out) / x.tp;
}

}  // namespace

double mamba_saved_bytes(const memest_model& m, const ActivationLayout& x, bool megatron) {
  if (uses_mamba1(m)) return mamba1_saved_bytes(m, x);
  const double heads = static_cast<double>(m.mamba_num_heads);
  const double inner = heads * static_cast<double>(m.mamba_head_dim);
  // Under Megatron's context parallelism B and C come to each rank as whole groups
  const double bc_copies = megatron ? mamba_bc_copies(m, x.tp, x.cp) : 1.0;
  const double bc = 2 * static_cast<double>(m.mamba_groups * m.mamba_state_size) * bc_copies;
  const double zxbcdt = 2 * (2 * inner + bc + heads);
  const double scan_out = 2 * inner;
  const double rstd = m.mamba_norm ? 4 * static_cast<double>(m.mamba_groups) : 0.0;
  // Megatron: the separate gated norm's input (2 d_inner) and out_proj's input (2 d_inner)
  const double separate = megatron ? 4 * inner : 0.0;
  return mixer_tokens(x) * (zxbcdt + scan_out + rstd + separate) / x.tp;
}

double deltanet_saved_bytes(const memest_model& m, const ActivationLayout& x) {
  if (uses_kda(m)) return kda_saved_bytes(m, x);
  const auto [vh, keys, values, repeated_qk, rank] = delta_rule_widths(m);
  const double conv_and_qkv = 4 * keys + 4 * repeated_qk;  // conv input's q,k; q,k repeated
  const double value_side = 10 * values;  // conv input's v, v, the norm's x and z, out_proj in
  const double per_head = 26 * vh + 2 * kDeltaRuleChunk * vh;  // gates, rstds; the chunk solve
  return mixer_tokens(x) * (conv_and_qkv + value_side + per_head) / x.tp;
}

BlockShares megatron_block_shares(const memest_model& m, const ActivationCoefficients& k,
                                  const ActivationLayout& x) {
  BlockShares s;
  if (x.recompute == MEMEST_RECOMPUTE_FULL) return s;
  const double sbh_c = x.seq_len * x.micro_batch * static_cast<double>(m.hidden_size) / x.cp;
  const double sp_div = x.sequence_parallel ? x.tp : 1.0;
  s.mlp = mlp_activation_bytes(m, k, x);
  s.attention = sbh_c * (k.sharded - k.mlp * static_cast<double>(m.intermediate_size) /
                                         static_cast<double>(m.hidden_size)) / x.tp;
  if (!x.flash_attention && x.recompute == MEMEST_RECOMPUTE_NONE) {
    s.attention += k.scores * static_cast<double>(m.num_attention_heads) * x.seq_len * x.seq_len *
                   x.micro_batch / (x.tp * x.cp);
  }
  s.norm = sbh_c * k.replicated / 2 / sp_div;
  return s;
}

double hybrid_activation_delta(const memest_model& m, const ActivationLayout& x,
                               const LayerMix& mix, const BlockShares& shares, bool megatron) {
  if (!mix.any() || x.recompute == MEMEST_RECOMPUTE_FULL) return 0;  // every block: its input
  const double mamba = mix.mamba + mix.parallel > 0 ? mamba_saved_bytes(m, x, megatron) : 0.0;
  const double deltanet = mix.deltanet > 0 ? deltanet_saved_bytes(m, x) : 0.0;
  const double a = shares.attention;
  return static_cast<double>(mix.mamba) * (mamba - a) +
         static_cast<double>(mix.deltanet) * (deltanet - a) +
         static_cast<double>(mix.parallel) * mamba -
         static_cast<double>(mix.no_mixer) * (a + shares.norm) -
         static_cast<double>(mix.no_mlp) * (shares.mlp + shares.norm);
}

double mixer_adapter_saved_bytes(const memest_model& m, const ActivationLayout& x,
                                 const MixerAdapterActivation& a, bool deltanet) {
  if (x.recompute == MEMEST_RECOMPUTE_FULL) return 0;
  const bool in_proj = (a.targets & (1u << MEMEST_LORA_IN_PROJ)) != 0;
  const bool out_proj = (a.targets & (1u << MEMEST_LORA_OUT_PROJ)) != 0;
  const double n = mixer_tokens(x);
  const double h = static_cast<double>(m.hidden_size);
  // out_proj's input width on this rank: d_inner (Mamba) or the values (gated DeltaNet)
  const double out_width =
      (deltanet ? delta_rule_widths(m).values
                : static_cast<double>(m.mamba_num_heads * m.mamba_head_dim)) / x.tp;
  const double in_linears = deltanet && !a.megatron ? 2.0 : 1.0;
  double bytes = 0;
  if (in_proj) bytes += n * h * (a.dropout ? 3.0 * in_linears : 2.0) + in_linears * 2 * n * a.rank;
  if (out_proj) bytes += (a.dropout ? 3.0 * n * out_width : 0.0) + 2 * n * a.rank;
  return bytes;
}

}  // namespace memest
