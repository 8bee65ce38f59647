#include "model/adapter.hpp"

#include "core/enums.hpp"
#include "core/error.hpp"
#include "model/hybrid.hpp"
#include "model/model.hpp"

namespace memest {

AdapterParams adapter_parameters(const memest_model& m, uint32_t targets, double rank,
                                 const std::string& field) {
  auto has = [&](memest_lora_target t) { return (targets & lora_bit(t)) != 0; };
  const bool q = has(MEMEST_LORA_Q_PROJ), k = has(MEMEST_LORA_K_PROJ), v = has(MEMEST_LORA_V_PROJ);
  const bool gate = has(MEMEST_LORA_GATE_PROJ), up = has(MEMEST_LORA_UP_PROJ);
  if ((q || k || v) && is_mla(m)) {
    fail(field, "q_proj, k_proj and v_proj do not exist under multi-head latent attention "
                "(kv_lora_rank > 0): its projections are q_a/q_b_proj and kv_a/kv_b_proj",
         MEMEST_ERR_UNSUPPORTED);
  }
  if (has(MEMEST_LORA_ROUTER) && !is_moe(m)) {
    fail(field, "router: the model is dense (num_experts = 0), it has no router to adapt");
  }
  if (gate && !m.gated_mlp) {
    fail(field, "gate_proj: the model's MLP is not gated (fc1 and fc2: target up_proj and "
                "down_proj)");
  }
  const double h = static_cast<double>(m.hidden_size);
  const double d = static_cast<double>(head_dim(m));
  const double qw = static_cast<double>(m.num_attention_heads) * d;
  const double kvw = static_cast<double>(m.num_key_value_heads) * d;
  const double r = rank;
  auto adapter = [&](double in, double out) { return r * (in + out); };

  double attention = 0;
  if (m.fused_qkv) {
    if (q || k || v) attention += adapter(h, qw + 2 * kvw);  // c_attn / qkv_proj / query_key_value
  } else {
    // Qwen3-Next's gated attention: q_proj also projects the output gate (2 x the query width)
    if (q) attention += adapter(h, (m.attention_output_gate ? 2 : 1) * qw);
    if (k) attention += adapter(h, kvw);
    if (v) attention += adapter(h, kvw);
  }
  if (has(MEMEST_LORA_O_PROJ)) attention += adapter(qw, h);

  auto mlp = [&](double w) {
    double p = 0;
    if (m.gated_mlp && m.fused_gate_up) {
      if (gate || up) p += adapter(h, 2 * w);  // gate_up_proj
    } else {
      if (gate) p += adapter(h, w);
      if (up) p += adapter(h, w);  // up_proj / fc1
    }
    if (has(MEMEST_LORA_DOWN_PROJ)) p += adapter(w, h);  // down_proj / fc2
    return p;
  };

  AdapterParams out;
  out.dense_layer = attention + mlp(static_cast<double>(m.intermediate_size));
  if (is_moe(m)) {
    // the router: a linear h -> E (peft's "gate" in Qwen-MoE, Mixtral, DeepSeek)
    const double router =
        has(MEMEST_LORA_ROUTER) ? adapter(h, static_cast<double>(m.num_experts)) : 0.0;
    out.moe_layer = attention + router +
                    static_cast<double>(m.num_experts) * mlp(static_cast<double>(expert_width(m))) +
                    static_cast<double>(m.num_shared_experts) *
                        mlp(static_cast<double>(shared_expert_width(m)));
  }
  const double moe_layers = static_cast<double>(moe_layer_count(m));
  const double dense_layers = static_cast<double>(m.num_hidden_layers) - moe_layers;
  if (!is_hybrid(m)) {
    out.layers = dense_layers * out.dense_layer + moe_layers * out.moe_layer;
  } else {
    // A hybrid's targets exist on the layers that have the module (model/hybrid.hpp): the
    // attention's on attention layers (a Mamba / delta-rule mixer has other linears, which no
    // canonical target names), the MLP's on layers with an MLP, dense or MoE.
    const LayerMix mix = layer_mix(m, 0, m.num_hidden_layers);
    const double attention_layers = static_cast<double>(
        m.num_hidden_layers - mix.mamba - mix.deltanet - mix.no_mixer);
    const double dense_mlp_layers = dense_layers - static_cast<double>(mix.no_mlp);
    const bool attention_targets = q || k || v || has(MEMEST_LORA_O_PROJ);
    const bool mlp_targets = gate || up || has(MEMEST_LORA_DOWN_PROJ) || has(MEMEST_LORA_ROUTER);
    if (attention_targets && attention_layers == 0) {
      fail(field, "q_proj, k_proj, v_proj and o_proj: the model has no attention layers (its "
                  "mixer_pattern holds Mamba / delta-rule mixers only); target its MLPs",
           MEMEST_ERR_UNSUPPORTED);
    }
    if (mlp_targets && dense_mlp_layers + moe_layers == 0) {
      fail(field, "gate_proj, up_proj, down_proj and router: the model has no MLP layers (its "
                  "mlp_pattern is all '-'); target its attention",
           MEMEST_ERR_UNSUPPORTED);
    }
    out.layers = attention_layers * attention +
                 dense_mlp_layers * (out.dense_layer - attention) +
                 moe_layers * (out.moe_layer - attention);
  }
  const double vocab = static_cast<double>(m.vocab_size);
  if (has(MEMEST_LORA_EMBED_TOKENS)) out.embed_tokens = adapter(vocab, h);
  if (has(MEMEST_LORA_LM_HEAD)) out.lm_head = adapter(h, vocab);
  return out;
}

uint32_t all_linear_targets(const memest_model& m, const std::string& field) {
  if (is_mla(m)) {
    fail(field, "all-linear: under multi-head latent attention (kv_lora_rank > 0) the "
                "attention's linears are q_a/q_b_proj, kv_a_proj_with_mqa and kv_b_proj, which "
                "no canonical target names; list the targets instead (o_proj, the MLP's, router)",
         MEMEST_ERR_UNSUPPORTED);
  }
  if (has_mixer_pattern(m)) {
    fail(field, "all-linear: the model's Mamba / linear-attention mixers hold linears (in_proj, "
                "out_proj) that no canonical target names; list the targets instead",
         MEMEST_ERR_UNSUPPORTED);
  }
  uint32_t t = lora_bit(MEMEST_LORA_Q_PROJ) | lora_bit(MEMEST_LORA_K_PROJ) |
               lora_bit(MEMEST_LORA_V_PROJ) | lora_bit(MEMEST_LORA_O_PROJ) |
               lora_bit(MEMEST_LORA_UP_PROJ) | lora_bit(MEMEST_LORA_DOWN_PROJ);
  if (m.gated_mlp) t |= lora_bit(MEMEST_LORA_GATE_PROJ);
  if (is_moe(m)) t |= lora_bit(MEMEST_LORA_ROUTER);
  return t;
}

MegatronAdapterParams megatron_adapter_parameters(const memest_model& m, uint32_t targets,
                                                  double rank, double tp, double ep,
                                                  double etp) {
  auto has = [&](memest_lora_target t) { return (targets & lora_bit(t)) != 0; };
  const bool qkv = has(MEMEST_LORA_Q_PROJ) || has(MEMEST_LORA_K_PROJ) || has(MEMEST_LORA_V_PROJ);
  const bool fc1 = has(MEMEST_LORA_GATE_PROJ) || has(MEMEST_LORA_UP_PROJ);
  const bool fc2 = has(MEMEST_LORA_DOWN_PROJ);
  const double h = static_cast<double>(m.hidden_size);
  const double a = static_cast<double>(m.num_attention_heads);
  const double d = static_cast<double>(head_dim(m));
  const double qw = a * d;
  const double kvw = static_cast<double>(m.num_key_value_heads) * d;
  // linear_proj reads the attention output: v_head_dim wide per head under latent attention
  const double attn_out = is_mla(m) ? a * static_cast<double>(m.v_head_dim) : qw;
  const double r = rank;
  auto column = [&](double in, double out, double t) { return r * in + r * out / t; };
  auto row = [&](double in, double out, double t) { return r * in / t + r * out; };
  const double attention = (qkv ? column(h, qw + 2 * kvw, tp) : 0.0) +
                           (has(MEMEST_LORA_O_PROJ) ? row(attn_out, h, tp) : 0.0);
  auto mlp = [&](double w, double t) {
    return (fc1 ? column(h, (m.gated_mlp ? 2.0 : 1.0) * w, t) : 0.0) + (fc2 ? row(w, h, t) : 0.0);
  };
  MegatronAdapterParams out;
  out.dense_layer = attention + mlp(static_cast<double>(m.intermediate_size), tp);
  if (is_moe(m)) {
    const double router =
        has(MEMEST_LORA_ROUTER) ? r * (h + static_cast<double>(m.num_experts)) : 0.0;
    const double shared = static_cast<double>(m.num_shared_experts) *
                          static_cast<double>(shared_expert_width(m));
    out.moe_layer = attention + router + (shared > 0 ? mlp(shared, tp) : 0.0);
    out.moe_experts = static_cast<double>(m.num_experts) / ep *
                      mlp(static_cast<double>(expert_width(m)), etp);
  }
  return out;
}

double megatron_adapter_total(const memest_model& m, uint32_t targets, double rank,
                              int64_t mtp_layers) {
  const MegatronAdapterParams p = megatron_adapter_parameters(m, targets, rank, 1, 1, 1);
  double total = 0;
  for (int64_t i = 0; i < m.num_hidden_layers + mtp_layers; ++i) {
    total += is_moe_layer(m, i) ? p.moe_layer + p.moe_experts : p.dense_layer;
  }
  return total;
}

std::string target_list(uint32_t targets) {
  std::string out;
  for (int32_t i = 0; i < MEMEST_LORA_TARGET_COUNT; ++i) {
    if (!(targets & (1u << i))) continue;
    if (!out.empty()) out += ",";
    out += enum_name(MEMEST_ENUM_LORA_TARGET, i);
  }
  return out;
}

}  // namespace memest
