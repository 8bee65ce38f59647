#include "model/tensors.hpp"

#include "model/hybrid.hpp"
#include "model/model.hpp"

namespace memest {

std::vector<Tensor> parameter_tensors(const memest_model& m) {
  const double h = static_cast<double>(m.hidden_size);
  const double a = static_cast<double>(m.num_attention_heads);
  const double d = static_cast<double>(head_dim(m));
  const double q = a * d;
  const double kv = static_cast<double>(m.num_key_value_heads) * d;
  const double f = static_cast<double>(m.intermediate_size);
  const double v = static_cast<double>(m.vocab_size);
  const bool layer_norm = m.norm_type == MEMEST_NORM_LAYER;

  std::vector<Tensor> t;
  auto norm = [&] {
    t.push_back({TensorKind::Norm, h});
    if (layer_norm) t.push_back({TensorKind::Norm, h});
  };
  auto linear = [&](double in, double out, bool bias) {
    t.push_back({TensorKind::Linear, in * out});
    if (bias) t.push_back({TensorKind::Bias, out});
  };
  // One MLP of width w: gate and up (one tensor when fused), down.
  auto mlp = [&](double w) {
    if (m.gated_mlp && m.fused_gate_up) {
      linear(h, 2 * w, m.mlp_bias);  // gate_up_proj
    } else {
      if (m.gated_mlp) linear(h, w, m.mlp_bias);  // gate projection
      linear(h, w, m.mlp_bias);                   // up projection / fc1
    }
    linear(w, h, m.mlp_bias);  // down projection / fc2
  };
  auto attention = [&] {
    if (is_mla(m)) {  // modeling_deepseek_v3: DeepseekV3Attention
      const double rq = static_cast<double>(m.q_lora_rank);
      const double rkv = static_cast<double>(m.kv_lora_rank);
      const double nope = static_cast<double>(m.qk_nope_head_dim);
      const double rope = static_cast<double>(m.qk_rope_head_dim);
      const double dv = static_cast<double>(m.v_head_dim);
      const bool bias = m.attention_qkv_bias == 1;
      if (m.q_lora_rank > 0) {
        linear(h, rq, bias);                 // q_a_proj
        t.push_back({TensorKind::Norm, rq});  // q_a_layernorm
        linear(rq, a * (nope + rope), false);  // q_b_proj
      } else {
        linear(h, a * (nope + rope), false);  // q_proj
      }
      linear(h, rkv + rope, bias);           // kv_a_proj_with_mqa
      t.push_back({TensorKind::Norm, rkv});  // kv_a_layernorm
      linear(rkv, a * (nope + dv), false);   // kv_b_proj
      linear(a * dv, h, m.attention_out_bias);  // o_proj
      if (m.index_n_heads > 0) {  // DeepSeek-V3.2's sparse-attention indexer
        const double ni = static_cast<double>(m.index_n_heads);
        const double di = static_cast<double>(m.index_head_dim);
        linear(rq, ni * di, false);             // indexer.wq_b
        linear(h, di, false);                   // indexer.wk
        t.push_back({TensorKind::Norm, di});    // indexer.k_norm.weight
        t.push_back({TensorKind::Norm, di});    // indexer.k_norm.bias
        linear(h, ni, false);                   // indexer.weights_proj
      }
      return;
    }
    if (m.fused_qkv) {
      linear(h, q + 2 * kv, m.attention_qkv_bias);
    } else {
      // (Qwen3-Next's q_proj also yields the output gate: twice the query width)
      linear(h, m.attention_output_gate ? 2 * q : q, m.attention_qkv_bias);
      linear(h, kv, m.attention_qkv_bias);
      linear(h, kv, m.attention_qkv_bias);
    }
    if (m.qk_norm == 1) {  // q_norm, k_norm over head_dim
      t.push_back({TensorKind::Norm, d});
      t.push_back({TensorKind::Norm, d});
    } else if (m.qk_norm == 2) {  // full width
      t.push_back({TensorKind::Norm, q});
      t.push_back({TensorKind::Norm, kv});
    }
    linear(q, h, m.attention_out_bias);
    if (m.attention_sinks) t.push_back({TensorKind::Bias, a});  // sinks: one per head
  };
  auto moe = [&] {
    const double e = static_cast<double>(m.num_experts);
    linear(h, e, m.router_bias == 1);  // router
    for (int64_t i = 0; i < m.num_experts; ++i) mlp(static_cast<double>(expert_width(m)));
    for (int64_t i = 0; i < m.num_shared_experts; ++i) {
      mlp(static_cast<double>(shared_expert_width(m)));
    }
    if (m.shared_expert_gate) linear(h, 1, false);
  };

  t.push_back({TensorKind::WordEmbedding, v * h});
  if (m.learned_position_rows > 0) {
    t.push_back({TensorKind::PositionEmbedding, static_cast<double>(m.learned_position_rows) * h});
  }
  if (m.embedding_norm) {  // BLOOM: always a LayerNorm (weight and bias)
    t.push_back({TensorKind::Norm, h});
    t.push_back({TensorKind::Norm, h});
  }
  // A hybrid model's mixers (model/hybrid.hpp mamba_params, deltanet_params: the same
  // tensors, one by one; Mamba-1 and Kimi Delta Attention where the model has them).
  auto mamba1 = [&] {
    const double inner = static_cast<double>(m.mamba_num_heads * m.mamba_head_dim);
    const double state = static_cast<double>(m.mamba_state_size);
    const double dt_rank = static_cast<double>(m.mamba_dt_rank);
    linear(h, 2 * inner, m.mamba_proj_bias == 1);  // in_proj
    t.push_back({TensorKind::Linear, inner * static_cast<double>(m.mamba_conv_kernel)});
    if (m.mamba_conv_bias) t.push_back({TensorKind::Bias, inner});  // conv1d
    linear(inner, dt_rank + 2 * state, false);  // x_proj
    linear(dt_rank, inner, true);               // dt_proj
    t.push_back({TensorKind::Linear, inner * state});  // A_log
    t.push_back({TensorKind::Norm, inner});            // D
    if (m.mamba_norm) {
      for (double w : {dt_rank, state, state}) t.push_back({TensorKind::Norm, w});
    }
    linear(inner, h, m.mamba_proj_bias == 1);  // out_proj
  };
  auto kda = [&] {
    const auto [vh, keys, values, gate, rank] = delta_rule_widths(m);
    const double kernel = static_cast<double>(m.linear_conv_kernel);
    for (double w : {keys, keys, values}) linear(h, w, false);  // q_proj, k_proj, v_proj
    for (double w : {keys, keys, values}) t.push_back({TensorKind::Linear, w * kernel});  // convs
    linear(h, rank, false);     // f_a_proj
    linear(rank, gate, false);  // f_b_proj
    linear(h, vh, false);       // b_proj
    t.push_back({TensorKind::Norm, vh});    // A_log
    t.push_back({TensorKind::Norm, gate});  // dt_bias
    linear(h, rank, false);       // g_a_proj
    linear(rank, values, false);  // g_b_proj
    t.push_back({TensorKind::Norm, rank});  // o_norm
    linear(values, h, false);     // o_proj
  };
  auto mamba = [&] {
    if (uses_mamba1(m)) return mamba1();
    const double heads = static_cast<double>(m.mamba_num_heads);
    const double inner = heads * static_cast<double>(m.mamba_head_dim);
    const double bc = 2 * static_cast<double>(m.mamba_groups * m.mamba_state_size);
    linear(h, 2 * inner + bc + heads, m.mamba_proj_bias == 1);  // in_proj
    t.push_back({TensorKind::Linear, (inner + bc) * static_cast<double>(m.mamba_conv_kernel)});
    if (m.mamba_conv_bias) t.push_back({TensorKind::Bias, inner + bc});  // conv1d
    for (int i = 0; i < 3; ++i) t.push_back({TensorKind::Norm, heads});  // dt_bias, A_log, D
    if (m.mamba_norm) t.push_back({TensorKind::Norm, inner});
    linear(inner, h, m.mamba_proj_bias == 1);  // out_proj
  };
  auto deltanet = [&] {
    if (uses_kda(m)) return kda();
    const auto [vh, keys, values, repeated_keys, rank] = delta_rule_widths(m);
    linear(h, 2 * keys + 2 * values, false);  // in_proj_qkvz
    linear(h, 2 * vh, false);                 // in_proj_ba
    t.push_back({TensorKind::Linear, (2 * keys + values) * static_cast<double>(m.linear_conv_kernel)});
    t.push_back({TensorKind::Norm, vh});  // dt_bias
    t.push_back({TensorKind::Norm, vh});  // A_log
    t.push_back({TensorKind::Norm, static_cast<double>(m.linear_value_head_dim)});
    linear(values, h, false);  // out_proj
  };
  const bool hybrid = is_hybrid(m);
  for (int64_t layer = 0; layer < m.num_hidden_layers; ++layer) {
    const size_t begin = t.size();
    if (!hybrid) {
      if (m.norms_per_layer >= 1) norm();  // before attention
      attention();
      for (int32_t extra = 1; extra < m.norms_per_layer; ++extra) norm();  // before the MLP
      if (is_moe_layer(m, layer)) moe();
      else mlp(f);
    } else {  // one norm before each block the layer has
      const char mixer = mixer_of(m, layer);
      if (mixer != kMixerNone) norm();
      if (mixer == kMixerAttention || mixer == kMixerParallel) attention();
      if (mixer == kMixerMamba2 || mixer == kMixerParallel || mixer == kMixerMamba1) mamba();
      if (mixer == kMixerDeltaNet || mixer == kMixerKda) deltanet();
      const bool no_mlp = has_mlp_pattern(m) && m.mlp_pattern[layer] == kMlpNone;
      if (!no_mlp) {
        norm();
        if (is_moe_layer(m, layer)) moe();
        else mlp(f);
      }
    }
    for (size_t i = begin; i < t.size(); ++i) t[i].layer = layer;
  }
  if (m.final_norm) norm();
  if (!m.tie_word_embeddings) t.push_back({TensorKind::LmHead, v * h});
  if (m.lm_head_bias) t.push_back({TensorKind::LmHead, v});
  return t;
}

}  // namespace memest
