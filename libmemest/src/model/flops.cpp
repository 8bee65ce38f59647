#include "model/flops.hpp"

#include "model/hybrid.hpp"
#include "model/model.hpp"

namespace memest {

ModelFlops model_flops(const memest_model& m) {
  const double h = static_cast<double>(m.hidden_size);
  const double d = static_cast<double>(head_dim(m));
  const double q = static_cast<double>(m.num_attention_heads) * d;
  const double kv = static_cast<double>(m.num_key_value_heads) * d;
  const double f = static_cast<double>(m.intermediate_size);
  ModelFlops out;
  const bool hybrid = is_hybrid(m);
  if (!is_moe(m) && !is_mla(m) && !hybrid) {
    out.active_layer_params = h * q + 2 * h * kv + q * h + (m.gated_mlp ? 3.0 : 2.0) * h * f;
  } else {
    const memest_param_count c = count_parameters(m);
    out.active_layer_params =
        (c.active - c.embedding - c.lm_head) / static_cast<double>(m.num_hidden_layers);
  }
  // MLA: queries/keys of qk_nope + qk_rope per head, values of v_head_dim: their mean width.
  out.score_width = is_mla(m) ? static_cast<double>(m.num_attention_heads) *
                                    static_cast<double>(m.qk_nope_head_dim + m.qk_rope_head_dim +
                                                        m.v_head_dim) / 2
                              : q;
  out.attention_layer_score_width = out.score_width;
  if (hybrid) {
    // attention scores on the attention layers only; the mixers' chunked scans instead,
    // spread over the layers like score_width.
    const double layers = static_cast<double>(m.num_hidden_layers);
    const LayerMix mix = layer_mix(m, 0, m.num_hidden_layers);
    const double attention_layers = layers - static_cast<double>(mix.mamba + mix.deltanet + mix.no_mixer);
    out.score_width *= attention_layers / layers;
    const double mamba_layers = static_cast<double>(mix.mamba + mix.parallel);
    const double deltanet_layers = static_cast<double>(mix.deltanet);
    out.scan_flops = (mamba_layers * (mamba_layers > 0 ? mamba_scan_flops(m) : 0.0) +
                      deltanet_layers * (deltanet_layers > 0 ? deltanet_scan_flops(m) : 0.0)) /
                     layers;
  }
  return out;
}

double mamba_scan_flops(const memest_model& m) {
  if (uses_mamba1(m)) {
    return 9 * static_cast<double>(m.mamba_num_heads * m.mamba_head_dim) *
           static_cast<double>(m.mamba_state_size);
  }
  constexpr double kChunk = 256;  // mamba_ssm's chunk_size default (Mamba2, MambaMixer)
  const double inner = static_cast<double>(m.mamba_num_heads * m.mamba_head_dim);
  const double state = static_cast<double>(m.mamba_state_size);
  return 2 * kChunk * state * static_cast<double>(m.mamba_groups) + 2 * kChunk * inner +
         4 * state * inner;
}

double deltanet_scan_flops(const memest_model& m) {
  constexpr double kChunk = 64;  // fla chunk_gated_delta_rule's BT
  const double dk = static_cast<double>(m.linear_key_head_dim);
  const double dv = static_cast<double>(m.linear_value_head_dim);
  return static_cast<double>(m.linear_value_heads) * (6 * dk * dv + 6 * kChunk * dk + 4 * kChunk * dv);
}

double model_flops_per_token(const memest_model& m, const ModelFlops& f, double seq_len) {
  const double layers = static_cast<double>(m.num_hidden_layers);
  return 6 * layers * f.active_layer_params +
         6 * static_cast<double>(m.vocab_size) * static_cast<double>(m.hidden_size) +
         12 * seq_len * layers * f.score_width + 3 * layers * f.scan_flops;
}

double model_flops_per_token(const memest_model& m, double seq_len) {
  return model_flops_per_token(m, model_flops(m), seq_len);
}

}  // namespace memest
