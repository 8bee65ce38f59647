#include "model/hybrid.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "core/limits.hpp"

namespace memest {

namespace {

int64_t pattern_length(const char (&p)[MEMEST_MAX_PATTERN_LAYERS + 1]) {
  return static_cast<int64_t>(strnlen(p, sizeof p));
}

bool mixer_in_pattern(const memest_model& m, char c) {
  const int64_t n = pattern_length(m.mixer_pattern);
  for (int64_t i = 0; i < n; ++i)
    if (m.mixer_pattern[i] == c) return true;
  return false;
}

}  // namespace

bool is_hybrid(const memest_model& m) {
  return layer_mix(m, 0, m.num_hidden_layers).any();
}

char mixer_of(const memest_model& m, int64_t i) {
  if (i < 0 || i >= m.num_hidden_layers || i >= pattern_length(m.mixer_pattern)) return kMixerAttention;
  return m.mixer_pattern[i];
}

LayerMix layer_mix(const memest_model& m, int64_t begin, int64_t end) {
  LayerMix mix;
  if (begin < 0) begin = 0;
  const int64_t mixers = std::min(end, pattern_length(m.mixer_pattern));
  for (int64_t i = begin; i < mixers; ++i) {
    switch (m.mixer_pattern[i]) {
      case kMixerMamba2:
      case kMixerMamba1: ++mix.mamba; break;
      case kMixerDeltaNet:
      case kMixerKda: ++mix.deltanet; break;
      case kMixerParallel: ++mix.parallel; break;
      case kMixerNone: ++mix.no_mixer; break;
      default: break;
    }
  }
  const int64_t mlps = std::min(end, pattern_length(m.mlp_pattern));
  for (int64_t i = begin; i < mlps; ++i) mix.no_mlp += m.mlp_pattern[i] == kMlpNone;
  return mix;
}

bool uses_mamba1(const memest_model& m) { return mixer_in_pattern(m, kMixerMamba1); }
bool uses_kda(const memest_model& m) { return mixer_in_pattern(m, kMixerKda); }

DeltaRuleWidths delta_rule_widths(const memest_model& m) {
  const double vh = static_cast<double>(m.linear_value_heads);
  return {vh, static_cast<double>(m.linear_key_heads * m.linear_key_head_dim),
          vh * static_cast<double>(m.linear_value_head_dim),
          vh * static_cast<double>(m.linear_key_head_dim),
          static_cast<double>(m.linear_value_head_dim)};
}

CpMixerSplit cp_mixer_split(const memest_model& m, int64_t tp, int64_t cp) {
  // tp and cp are at most 2^24 each (request limits): their product fits an int64_t
  const int64_t ranks = tp * cp;
  const LayerMix all = layer_mix(m, 0, m.num_hidden_layers);
  if (all.mamba + all.parallel > 0) {
    if (m.mamba_num_heads % ranks != 0) return CpMixerSplit::MambaHeads;
    const int64_t groups_local = m.mamba_groups / tp;
    if (groups_local % cp != 0 && cp % groups_local != 0) return CpMixerSplit::MambaGroups;
  }
  if (all.deltanet > 0 && (m.linear_key_heads % ranks != 0 || m.linear_value_heads % ranks != 0)) {
    return CpMixerSplit::DeltaHeads;
  }
  return CpMixerSplit::Ok;
}

double mamba_bc_copies(const memest_model& m, double tp, double cp) {
  return std::max(1.0, tp * cp / static_cast<double>(m.mamba_groups));
}

namespace {

LayerParams mamba1_params(const memest_model& m) {
  const double h = static_cast<double>(m.hidden_size);
  const double inner = static_cast<double>(m.mamba_num_heads * m.mamba_head_dim);
  const double state = static_cast<double>(m.mamba_state_size);
  const double dt_rank = static_cast<double>(m.mamba_dt_rank);
  LayerParams p;
  p.sharded += h * 2 * inner;  // in_proj: x, z
  if (m.mamba_proj_bias) p.sharded += 2 * inner;
  p.sharded += inner * static_cast<double>(m.mamba_conv_kernel);  // depthwise conv1d
  if (m.mamba_conv_bias) p.sharded += inner;
  p.sharded += inner * (dt_rank + 2 * state);  // x_proj (row-parallel over the channels)
  p.sharded += dt_rank * inner + inner;        // dt_proj and its bias
  p.sharded += inner * state + inner;          // A_log, D
  if (m.mamba_norm) p.replicated += dt_rank + 2 * state;  // Jamba's dt/B/C RMSNorms
  p.sharded += inner * h;                      // out_proj
  if (m.mamba_proj_bias) p.replicated += h;
  return p;
}

LayerParams kda_params(const memest_model& m) {
  const double h = static_cast<double>(m.hidden_size);
  // the forget gate's width (gate) and both gates' low rank
  const auto [vh, keys, values, gate, rank] = delta_rule_widths(m);
  LayerParams p;
  p.sharded += h * (2 * keys + values);  // q_proj, k_proj, v_proj
  p.sharded += (2 * keys + values) * static_cast<double>(m.linear_conv_kernel);  // short convs
  p.replicated += 2 * h * rank;          // f_a_proj, g_a_proj (to the low rank, whole)
  p.sharded += rank * gate + rank * values;  // f_b_proj, g_b_proj
  p.sharded += h * vh + vh + gate;       // b_proj, A_log, dt_bias
  p.replicated += rank;                  // o_norm (per head, shared)
  p.sharded += values * h;               // o_proj
  return p;
}

}  // namespace

LayerParams mamba_params(const memest_model& m) {
  if (uses_mamba1(m)) return mamba1_params(m);
  const double h = static_cast<double>(m.hidden_size);
  const double heads = static_cast<double>(m.mamba_num_heads);
  const double inner = heads * static_cast<double>(m.mamba_head_dim);
  const double bc = 2 * static_cast<double>(m.mamba_groups * m.mamba_state_size);
  const double conv_channels = inner + bc;
  LayerParams p;
  p.sharded += h * (2 * inner + bc + heads);  // in_proj: z, x, B, C, dt
  if (m.mamba_proj_bias) p.sharded += 2 * inner + bc + heads;
  p.sharded += conv_channels * static_cast<double>(m.mamba_conv_kernel);  // depthwise conv1d
  if (m.mamba_conv_bias) p.sharded += conv_channels;
  p.sharded += 3 * heads;                     // dt_bias, A_log, D
  if (m.mamba_norm) p.sharded += inner;       // RMSNormGated over d_inner
  p.sharded += inner * h;                     // out_proj
  if (m.mamba_proj_bias) p.replicated += h;   // row-parallel bias
  return p;
}

LayerParams deltanet_params(const memest_model& m) {
  if (uses_kda(m)) return kda_params(m);
  const double h = static_cast<double>(m.hidden_size);
  const auto [vh, keys, values, repeated_keys, rank] = delta_rule_widths(m);
  LayerParams p;
  p.sharded += h * (2 * keys + 2 * values);  // in_proj_qkvz
  p.sharded += h * 2 * vh;                   // in_proj_ba
  p.sharded += (2 * keys + values) * static_cast<double>(m.linear_conv_kernel);  // conv1d
  p.sharded += 2 * vh;                       // dt_bias, A_log
  p.replicated += static_cast<double>(m.linear_value_head_dim);  // norm (per head, shared)
  p.sharded += values * h;                   // out_proj
  return p;
}

LayerParams hybrid_params_delta(const memest_model& m, const LayerMix& mix) {
  const LayerParams attention = attention_params(m);
  const LayerParams mamba = mix.mamba + mix.parallel > 0 ? mamba_params(m) : LayerParams{};
  const LayerParams deltanet = mix.deltanet > 0 ? deltanet_params(m) : LayerParams{};
  const LayerParams mlp = mlp_params(m, static_cast<double>(m.intermediate_size));
  const double norm = norm_params(m);
  const double mm = static_cast<double>(mix.mamba), g = static_cast<double>(mix.deltanet);
  const double pa = static_cast<double>(mix.parallel);
  const double nx = static_cast<double>(mix.no_mixer), nm = static_cast<double>(mix.no_mlp);
  LayerParams d;
  d.sharded = mm * (mamba.sharded - attention.sharded) + g * (deltanet.sharded - attention.sharded) +
              pa * mamba.sharded - nx * attention.sharded - nm * mlp.sharded;
  d.replicated = mm * (mamba.replicated - attention.replicated) +
                 g * (deltanet.replicated - attention.replicated) + pa * mamba.replicated -
                 nx * (attention.replicated + norm) - nm * (mlp.replicated + norm);
  return d;
}

void validate_hybrid(const memest_model& m, const std::string& prefix) {
  const char* names[2] = {"mixer_pattern", "mlp_pattern"};
  const char* alphabets[2] = {"AMGPSK-", "DE-"};
  const char* meanings[2] = {
      "'A' attention, 'M' Mamba-2, 'S' Mamba-1, 'G' gated DeltaNet, 'K' Kimi Delta Attention, "
      "'P' attention beside Mamba-2, '-' none",
      "'D' dense MLP, 'E' MoE MLP, '-' none"};
  const char* patterns[2] = {m.mixer_pattern, m.mlp_pattern};
  for (int k = 0; k < 2; ++k) {
    const std::string field = prefix + "." + names[k];
    const int64_t n = static_cast<int64_t>(strnlen(patterns[k], MEMEST_MAX_PATTERN_LAYERS + 1));
    if (n > MEMEST_MAX_PATTERN_LAYERS) {
      fail(field, "is not NUL-terminated within " + std::to_string(MEMEST_MAX_PATTERN_LAYERS) +
                      " characters");
    }
    if (n == 0) continue;
    for (int64_t i = 0; i < n; ++i) {
      const char c = patterns[k][i];
      if (!std::strchr(alphabets[k], c) || c == '\0') {
        const unsigned char u = static_cast<unsigned char>(c);
        const std::string shown = u >= 0x20 && u < 0x7f ? std::string("'") + c + "'"
                                                        : "byte " + std::to_string(u);
        fail(field, shown + " at layer " + std::to_string(i) + " is not a layer kind (" +
                        meanings[k] + ")");
      }
    }
    if (n != m.num_hidden_layers) {
      fail(field, "has " + std::to_string(n) + " characters but num_hidden_layers is " +
                      std::to_string(m.num_hidden_layers) + " (one per layer)");
    }
  }
  for (int64_t i = 0; i < m.num_hidden_layers && has_mixer_pattern(m) && has_mlp_pattern(m); ++i) {
    if (m.mixer_pattern[i] == kMixerNone && m.mlp_pattern[i] == kMlpNone) {
      fail(prefix + ".mlp_pattern", "layer " + std::to_string(i) + " has neither a mixer nor an MLP");
    }
  }
  if (has_mlp_pattern(m)) {
    const bool experts = std::strchr(m.mlp_pattern, kMlpMoe) != nullptr;
    if (experts && !is_moe(m)) {
      fail(prefix + ".mlp_pattern", "has MoE layers ('E') but num_experts is 0");
    }
    if (!experts && is_moe(m)) {
      fail(prefix + ".mlp_pattern", "has no MoE layer ('E') but num_experts is " +
                                        std::to_string(m.num_experts));
    }
    if (m.moe_first_dense_layers != 0 || m.moe_layer_step > 1) {
      fail(prefix + (m.moe_first_dense_layers != 0 ? ".moe_first_dense_layers" : ".moe_layer_step"),
           "must keep its default with an mlp_pattern (the pattern says which layers have experts)");
    }
  }
  const bool mamba1 = uses_mamba1(m);
  if (mamba1 && (mixer_in_pattern(m, kMixerMamba2) || mixer_in_pattern(m, kMixerParallel))) {
    fail(prefix + ".mixer_pattern",
         "mixes Mamba-1 ('S') with Mamba-2 ('M' or 'P') layers; the mamba_* fields describe one "
         "kind of state-space mixer");
  }
  if (uses_kda(m) && mixer_in_pattern(m, kMixerDeltaNet)) {
    fail(prefix + ".mixer_pattern",
         "mixes Kimi Delta Attention ('K') with gated DeltaNet ('G') layers; the linear_* fields "
         "describe one kind of delta-rule mixer");
  }
  const bool mamba = mamba1 || mixer_in_pattern(m, kMixerMamba2) || mixer_in_pattern(m, kMixerParallel);
  const std::pair<const char*, int64_t> mamba_dims[] = {
      {"mamba_num_heads", m.mamba_num_heads}, {"mamba_head_dim", m.mamba_head_dim},
      {"mamba_state_size", m.mamba_state_size}, {"mamba_groups", m.mamba_groups},
      {"mamba_conv_kernel", m.mamba_conv_kernel}};
  for (const auto& [name, v] : mamba_dims) {
    if (mamba) {
      check_range(prefix + "." + name, v, 1, kMaxHidden);
    } else if (v != 0) {
      fail(prefix + "." + name, "is set but no layer has a Mamba mixer ('M', 'P' or 'S' in mixer_pattern)");
    }
  }
  if (mamba1) {
    check_range(prefix + ".mamba_dt_rank", m.mamba_dt_rank, 1, kMaxHidden);
    if (m.mamba_groups != 1) {
      fail(prefix + ".mamba_groups", "must be 1 with Mamba-1 layers ('S': one B and C for every "
                                     "channel), got " + std::to_string(m.mamba_groups));
    }
    if (m.mamba_head_dim != 1) {
      fail(prefix + ".mamba_head_dim", "must be 1 with Mamba-1 layers ('S': mamba_num_heads holds "
                                       "d_inner, one channel per head), got " +
                                           std::to_string(m.mamba_head_dim));
    }
  } else if (m.mamba_dt_rank != 0) {
    fail(prefix + ".mamba_dt_rank", "is set but no layer has a Mamba-1 mixer ('S' in mixer_pattern)");
  }
  if (mamba && m.mamba_num_heads % m.mamba_groups != 0) {
    fail(prefix + ".mamba_groups", std::to_string(m.mamba_groups) + " does not divide mamba_num_heads=" +
                                       std::to_string(m.mamba_num_heads));
  }
  const std::pair<const char*, int32_t> flags[] = {{"mamba_proj_bias", m.mamba_proj_bias},
                                                   {"mamba_conv_bias", m.mamba_conv_bias},
                                                   {"mamba_norm", m.mamba_norm},
                                                   {"attention_output_gate", m.attention_output_gate}};
  for (const auto& [name, v] : flags) {
    if (v != 0 && v != 1) fail(prefix + "." + name, "must be 0 or 1, got " + std::to_string(v));
  }
  const bool deltanet = mixer_in_pattern(m, kMixerDeltaNet) || uses_kda(m);
  const std::pair<const char*, int64_t> linear_dims[] = {
      {"linear_key_heads", m.linear_key_heads}, {"linear_value_heads", m.linear_value_heads},
      {"linear_key_head_dim", m.linear_key_head_dim},
      {"linear_value_head_dim", m.linear_value_head_dim},
      {"linear_conv_kernel", m.linear_conv_kernel}};
  for (const auto& [name, v] : linear_dims) {
    if (deltanet) {
      check_range(prefix + "." + name, v, 1, kMaxHidden);
    } else if (v != 0) {
      fail(prefix + "." + name, "is set but no layer is a gated DeltaNet or Kimi Delta Attention "
                                "('G' or 'K' in mixer_pattern)");
    }
  }
  if (deltanet && m.linear_value_heads % m.linear_key_heads != 0) {
    fail(prefix + ".linear_key_heads", std::to_string(m.linear_key_heads) +
                                           " does not divide linear_value_heads=" +
                                           std::to_string(m.linear_value_heads));
  }
  if (m.mtp_layers > 0 && is_hybrid(m)) {
    fail(prefix + ".mtp_layers",
         "multi-token-prediction modules on a hybrid model are not modelled (their layer kind is "
         "not given by the pattern)",
         MEMEST_ERR_UNSUPPORTED);
  }
}

}  // namespace memest
