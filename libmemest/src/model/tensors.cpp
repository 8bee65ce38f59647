#include "model/tensors.hpp"

#include "model/model.hpp"

namespace memest {

std::vector<Tensor> parameter_tensors(const memest_model& m) {
  const double h = static_cast<double>(m.hidden_size);
  const double d = static_cast<double>(head_dim(m));
  const double q = static_cast<double>(m.num_attention_heads) * d;
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

  t.push_back({TensorKind::WordEmbedding, v * h});
  if (m.learned_position_rows > 0) {
    t.push_back({TensorKind::PositionEmbedding, static_cast<double>(m.learned_position_rows) * h});
  }
  if (m.embedding_norm) {  // BLOOM: always a LayerNorm (weight and bias)
    t.push_back({TensorKind::Norm, h});
    t.push_back({TensorKind::Norm, h});
  }
  for (int64_t layer = 0; layer < m.num_hidden_layers; ++layer) {
    if (m.norms_per_layer >= 1) norm();  // before attention
    if (m.fused_qkv) {
      linear(h, q + 2 * kv, m.attention_qkv_bias);
    } else {
      linear(h, q, m.attention_qkv_bias);
      linear(h, kv, m.attention_qkv_bias);
      linear(h, kv, m.attention_qkv_bias);
    }
    linear(q, h, m.attention_out_bias);
    for (int32_t extra = 1; extra < m.norms_per_layer; ++extra) norm();  // before the MLP
    if (m.gated_mlp) linear(h, f, m.mlp_bias);  // gate projection
    linear(h, f, m.mlp_bias);                   // up projection / fc1
    linear(f, h, m.mlp_bias);                   // down projection / fc2
  }
  if (m.final_norm) norm();
  if (!m.tie_word_embeddings) t.push_back({TensorKind::LmHead, v * h});
  if (m.lm_head_bias) t.push_back({TensorKind::LmHead, v});
  return t;
}

}  // namespace memest
