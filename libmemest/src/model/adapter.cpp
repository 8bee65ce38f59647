#include "model/adapter.hpp"

#include <algorithm>

#include "core/enums.hpp"
#include "core/error.hpp"
#include "model/hybrid.hpp"
#include "model/model.hpp"

namespace memest {

double AdapterBlocks::delta(const LayerMix& mix) const {
  const double mm = static_cast<double>(mix.mamba), g = static_cast<double>(mix.deltanet);
  const double pa = static_cast<double>(mix.parallel);
  const double nx = static_cast<double>(mix.no_mixer), nm = static_cast<double>(mix.no_mlp);
  return mm * (mamba - attention) + g * (deltanet - attention) + pa * mamba - nx * attention -
         nm * dense_mlp;
}

double AdapterBlocks::largest_extra(const LayerMix& all) const {
  double extra = 0;
  if (all.parallel > 0) extra = std::max(extra, mamba);
  if (all.mamba > 0) extra = std::max(extra, mamba - attention);
  if (all.deltanet > 0) extra = std::max(extra, deltanet - attention);
  return extra;
}

double AdapterParams::largest_layer(const memest_model& m) const {
  return std::max(dense_layer, moe_layer) +
         blocks.largest_extra(layer_mix(m, 0, m.num_hidden_layers));
}

namespace {

// A mixer's projections that in_proj / out_proj adapt: the input projection's output width
// (a second input linear's, Qwen3-Next's in_proj_ba, apart) and out_proj's input width.
struct MixerProjections {
  double in = 0, in_second = 0, out = 0;
};

// Mamba-2 (mamba_ssm Mamba2, NemotronHMamba2Mixer, Megatron-Core MambaMixer): in_proj
// h -> z, x, B, C, dt; Mamba-1 (JambaMambaMixer): in_proj h -> x, z. out_proj d_inner -> h.
MixerProjections mamba_projections(const memest_model& m) {
  const double heads = static_cast<double>(m.mamba_num_heads);
  const double inner = heads * static_cast<double>(m.mamba_head_dim);
  if (uses_mamba1(m)) return {2 * inner, 0, inner};
  const double bc = 2 * static_cast<double>(m.mamba_groups * m.mamba_state_size);
  return {2 * inner + bc + heads, 0, inner};
}

// Gated DeltaNet: q, k, v, z and the b, a gates (Qwen3NextGatedDeltaNet in_proj_qkvz and
// in_proj_ba; Megatron-Core gated_delta_net/gdn.py one in_proj of 2 qk + 2 v + 2 value heads);
// out_proj values -> h.
MixerProjections deltanet_projections(const memest_model& m) {
  const DeltaRuleWidths w = delta_rule_widths(m);
  return {2 * w.keys + 2 * w.values, 2 * w.value_heads, w.values};
}

// Refuses in_proj / out_proj where no mixer of the model has them.
void check_mixer_targets(const memest_model& m, const LayerMix& all, const std::string& field) {
  if (uses_kda(m)) {
    fail(field, "in_proj and out_proj: the model's Kimi Delta Attention mixers name their "
                "projections q_proj, k_proj, v_proj, f_a/f_b_proj, g_a/g_b_proj, b_proj and "
                "o_proj (fla/layers/kda.py), which no canonical target stands for: target the "
                "attention and MLP layers",
         MEMEST_ERR_UNSUPPORTED);
  }
  if (all.mamba + all.parallel + all.deltanet == 0) {
    fail(field, "in_proj and out_proj adapt a Mamba or gated DeltaNet mixer's projections: the "
                "model has none (no mixer_pattern)");
  }
}

}  // namespace

int64_t mixer_adapter_side(const memest_model& m, memest_lora_target target) {
  const LayerMix all = layer_mix(m, 0, m.num_hidden_layers);
  double side = static_cast<double>(m.hidden_size);
  auto narrow = [&](const MixerProjections& p) {
    side = std::min(side, target == MEMEST_LORA_IN_PROJ ? p.in : p.out);
  };
  if (all.mamba + all.parallel > 0) narrow(mamba_projections(m));
  if (all.deltanet > 0 && !uses_kda(m)) narrow(deltanet_projections(m));
  return static_cast<int64_t>(side);
}

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
  out.blocks.attention = attention;
  out.blocks.dense_mlp = mlp(static_cast<double>(m.intermediate_size));
  out.dense_layer = attention + out.blocks.dense_mlp;
  const LayerMix mix = layer_mix(m, 0, m.num_hidden_layers);
  const bool in_proj = has(MEMEST_LORA_IN_PROJ), out_proj = has(MEMEST_LORA_OUT_PROJ);
  if (in_proj || out_proj) {
    check_mixer_targets(m, mix, field);
    // peft puts one adapter on each matched linear: Qwen3-Next's two input linears take two
    auto mixer = [&](const MixerProjections& p) {
      return (in_proj ? adapter(h, p.in) + (p.in_second > 0 ? adapter(h, p.in_second) : 0.0)
                      : 0.0) +
             (out_proj ? adapter(p.out, h) : 0.0);
    };
    if (mix.mamba + mix.parallel > 0) out.blocks.mamba = mixer(mamba_projections(m));
    if (mix.deltanet > 0) out.blocks.deltanet = mixer(deltanet_projections(m));
  }
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
  if (mix.any()) {
    // A hybrid's targets exist on the layers that have the module (model/hybrid.hpp): the
    // attention's on attention layers, the MLP's on layers with an MLP, dense or MoE, the
    // mixers' on the mixers.
    const double attention_layers = static_cast<double>(
        m.num_hidden_layers - mix.mamba - mix.deltanet - mix.no_mixer);
    const bool attention_targets = q || k || v || has(MEMEST_LORA_O_PROJ);
    const bool mlp_targets = gate || up || has(MEMEST_LORA_DOWN_PROJ) || has(MEMEST_LORA_ROUTER);
    const bool has_mlps = dense_layers - static_cast<double>(mix.no_mlp) + moe_layers > 0;
    if (attention_targets && attention_layers == 0) {
      fail(field, std::string("q_proj, k_proj, v_proj and o_proj: the model has no attention "
                              "layers (its mixer_pattern holds Mamba / delta-rule mixers only); "
                              "target ") +
                      (has_mlps ? "its MLPs or " : "") + "in_proj / out_proj",
           MEMEST_ERR_UNSUPPORTED);
    }
    if (mlp_targets && !has_mlps) {
      fail(field, "gate_proj, up_proj, down_proj and router: the model has no MLP layers (its "
                  "mlp_pattern is all '-'); target its attention or in_proj / out_proj",
           MEMEST_ERR_UNSUPPORTED);
    }
  }
  out.layers = dense_layers * out.dense_layer + moe_layers * out.moe_layer + out.blocks.delta(mix);
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
  if (uses_mamba1(m) || uses_kda(m)) {
    fail(field, std::string("all-linear: the model's ") +
                    (uses_mamba1(m) ? "Mamba-1 mixers hold x_proj and dt_proj"
                                    : "Kimi Delta Attention mixers hold q/k/v/f/g/b_proj") +
                    ", which no canonical target names; list the targets instead",
         MEMEST_ERR_UNSUPPORTED);
  }
  const LayerMix mix = layer_mix(m, 0, m.num_hidden_layers);
  const uint32_t attention = lora_bit(MEMEST_LORA_Q_PROJ) | lora_bit(MEMEST_LORA_K_PROJ) |
                             lora_bit(MEMEST_LORA_V_PROJ) | lora_bit(MEMEST_LORA_O_PROJ);
  uint32_t mlp = lora_bit(MEMEST_LORA_UP_PROJ) | lora_bit(MEMEST_LORA_DOWN_PROJ);
  if (m.gated_mlp) mlp |= lora_bit(MEMEST_LORA_GATE_PROJ);
  if (is_moe(m)) mlp |= lora_bit(MEMEST_LORA_ROUTER);
  uint32_t t = 0;
  // a hybrid's all-linear holds the modules it has: attention where it has attention layers,
  // the MLP's where it has MLPs, the mixers' in_proj and out_proj
  if (m.num_hidden_layers > mix.mamba + mix.deltanet + mix.no_mixer) t |= attention;
  if (m.num_hidden_layers > mix.no_mlp) t |= mlp;
  if (mix.mamba + mix.parallel + mix.deltanet > 0) {
    t |= lora_bit(MEMEST_LORA_IN_PROJ) | lora_bit(MEMEST_LORA_OUT_PROJ);
  }
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
  out.blocks.attention = attention;
  out.blocks.dense_mlp = mlp(static_cast<double>(m.intermediate_size), tp);
  out.dense_layer = attention + out.blocks.dense_mlp;
  const bool in_proj = has(MEMEST_LORA_IN_PROJ), out_proj = has(MEMEST_LORA_OUT_PROJ);
  if (in_proj || out_proj) {  // (adapter_parameters refused a model without such mixers)
    auto mixer = [&](const MixerProjections& p) {
      return (in_proj ? column(h, p.in + p.in_second, tp) : 0.0) +
             (out_proj ? row(p.out, h, tp) : 0.0);
    };
    const LayerMix all = layer_mix(m, 0, m.num_hidden_layers);
    if (all.mamba + all.parallel > 0) out.blocks.mamba = mixer(mamba_projections(m));
    if (all.deltanet > 0) out.blocks.deltanet = mixer(deltanet_projections(m));
  }
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
  return total + p.blocks.delta(layer_mix(m, 0, m.num_hidden_layers));
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
