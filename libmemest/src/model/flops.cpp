#include "model/flops.hpp"

#include "model/model.hpp"

namespace memest {

ModelFlops model_flops(const memest_model& m) {
  const double h = static_cast<double>(m.hidden_size);
  const double d = static_cast<double>(head_dim(m));
  const double q = static_cast<double>(m.num_attention_heads) * d;
  const double kv = static_cast<double>(m.num_key_value_heads) * d;
  const double f = static_cast<double>(m.intermediate_size);
  ModelFlops out;
  if (!is_moe(m) && !is_mla(m)) {
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
  return out;
}

double model_flops_per_token(const memest_model& m, const ModelFlops& f, double seq_len) {
  const double layers = static_cast<double>(m.num_hidden_layers);
  return 6 * layers * f.active_layer_params +
         6 * static_cast<double>(m.vocab_size) * static_cast<double>(m.hidden_size) +
         12 * seq_len * layers * f.score_width;
}

double model_flops_per_token(const memest_model& m, double seq_len) {
  return model_flops_per_token(m, model_flops(m), seq_len);
}

}  // namespace memest
