#include "model/model.hpp"

#include <cstring>

#include "core/error.hpp"

namespace memest {

memest_model default_model() {
  memest_model m;
  std::memset(&m, 0, sizeof m);
  m.struct_size = sizeof m;
  m.family = MEMEST_FAMILY_LLAMA;
  m.gated_mlp = 1;
  m.norm_type = MEMEST_NORM_RMS;
  m.norms_per_layer = 2;
  m.final_norm = 1;
  return m;
}

bool is_bare_count(const memest_model& m) { return m.hidden_size == 0 && m.num_parameters > 0; }

int64_t head_dim(const memest_model& m) {
  return m.head_dim > 0 ? m.head_dim : m.hidden_size / m.num_attention_heads;
}

namespace {

void check_flag(const std::string& prefix, const char* name, int32_t value) {
  if (value != 0 && value != 1) fail(prefix + "." + name, "must be 0 or 1, got " + std::to_string(value));
}

}  // namespace

void validate_model(const memest_model& m, const std::string& prefix, bool allow_bare) {
  if (m.struct_size < sizeof(memest_model)) {
    fail(prefix + ".struct_size", "is smaller than this version's memest_model; call memest_model_init",
         MEMEST_ERR_STRUCT_SIZE);
  }
  if (is_bare_count(m)) {
    if (!allow_bare) {
      fail(prefix, "a bare num_parameters is accepted only by the model_states mode; "
                   "give the model's dimensions (hidden_size, num_hidden_layers, ...)");
    }
    if (!(m.num_parameters <= kMaxBareParameters)) {
      fail(prefix + ".num_parameters", "must be at most 1e16", MEMEST_ERR_OVERFLOW);
    }
    return;
  }
  if (m.num_parameters < 0) fail(prefix + ".num_parameters", "must not be negative");
  if (m.family != MEMEST_FAMILY_LLAMA && m.family != MEMEST_FAMILY_GPT) {
    fail(prefix + ".family", "must be llama (0) or gpt (1)");
  }
  if (m.hidden_size == 0 && m.num_parameters == 0) {
    throw Error(MEMEST_ERR_MISSING_FIELD, prefix + ".hidden_size",
                prefix + ".hidden_size: missing (give the model's dimensions" +
                    std::string(allow_bare ? " or num_parameters)" : ")"));
  }
  check_range(prefix + ".hidden_size", m.hidden_size, 1, kMaxHidden);
  check_range(prefix + ".num_hidden_layers", m.num_hidden_layers, 1, kMaxLayers);
  check_range(prefix + ".num_attention_heads", m.num_attention_heads, 1, kMaxHeads);
  check_range(prefix + ".num_key_value_heads", m.num_key_value_heads, 1, m.num_attention_heads);
  check_range(prefix + ".intermediate_size", m.intermediate_size, 1, kMaxFfn);
  check_range(prefix + ".vocab_size", m.vocab_size, 1, kMaxVocab);
  check_range(prefix + ".max_position_embeddings", m.max_position_embeddings, 0, kMaxPositions);
  check_range(prefix + ".learned_position_rows", m.learned_position_rows, 0, kMaxPositions);
  check_range(prefix + ".head_dim", m.head_dim, 0, kMaxHidden);
  check_range(prefix + ".norms_per_layer", m.norms_per_layer, 0, 4);
  if (m.num_attention_heads % m.num_key_value_heads != 0) {
    fail(prefix + ".num_key_value_heads",
         std::to_string(m.num_key_value_heads) + " does not divide num_attention_heads=" +
             std::to_string(m.num_attention_heads));
  }
  if (m.head_dim == 0 && m.hidden_size % m.num_attention_heads != 0) {
    fail(prefix + ".num_attention_heads",
         std::to_string(m.num_attention_heads) + " does not divide hidden_size=" +
             std::to_string(m.hidden_size) + " (give head_dim explicitly)");
  }
  if (m.norm_type != MEMEST_NORM_RMS && m.norm_type != MEMEST_NORM_LAYER) {
    fail(prefix + ".norm_type", "must be rms (0) or layer (1)");
  }
  check_flag(prefix, "tie_word_embeddings", m.tie_word_embeddings);
  check_flag(prefix, "gated_mlp", m.gated_mlp);
  check_flag(prefix, "attention_qkv_bias", m.attention_qkv_bias);
  check_flag(prefix, "attention_out_bias", m.attention_out_bias);
  check_flag(prefix, "mlp_bias", m.mlp_bias);
  check_flag(prefix, "embedding_norm", m.embedding_norm);
  check_flag(prefix, "final_norm", m.final_norm);
  check_flag(prefix, "lm_head_bias", m.lm_head_bias);
}

namespace {
double norm_params(const memest_model& m) {
  const double h = static_cast<double>(m.hidden_size);
  return m.norm_type == MEMEST_NORM_LAYER ? 2 * h : h;
}
}  // namespace

LayerParams layer_params(const memest_model& m) {
  const double h = static_cast<double>(m.hidden_size);
  const double d = static_cast<double>(head_dim(m));
  const double q = static_cast<double>(m.num_attention_heads) * d;   // query width
  const double kv = static_cast<double>(m.num_key_value_heads) * d;  // key / value width
  const double f = static_cast<double>(m.intermediate_size);
  LayerParams p;
  // Attention (4D paper Eq. 1 when q = h: W_Q, W_O are h*h; W_K, W_V are h*h*k/a).
  p.sharded += h * q + 2 * h * kv + q * h;
  if (m.attention_qkv_bias) p.sharded += q + 2 * kv;  // column-parallel biases split
  if (m.attention_out_bias) p.replicated += h;        // row-parallel bias is replicated
  // MLP (Eq. 2: 3*h*h_ffn for SwiGLU; 2*h*h_ffn for a GeLU MLP).
  const double mlp_in = m.gated_mlp ? 2.0 : 1.0;
  p.sharded += (mlp_in + 1) * h * f;
  if (m.mlp_bias) {
    p.sharded += mlp_in * f;
    p.replicated += h;
  }
  p.replicated += m.norms_per_layer * norm_params(m);
  return p;
}

EdgeParams edge_params(const memest_model& m) {
  const double h = static_cast<double>(m.hidden_size);
  const double v = static_cast<double>(m.vocab_size);
  EdgeParams e;
  e.word_embedding = v * h;
  e.embedding_extra = static_cast<double>(m.learned_position_rows) * h;
  if (m.embedding_norm) e.embedding_extra += 2 * h;  // BLOOM's LayerNorm after the embedding
  e.lm_head = m.tie_word_embeddings ? 0.0 : v * h;
  if (m.lm_head_bias) e.lm_head += v;
  e.final_norm = m.final_norm ? norm_params(m) : 0.0;
  return e;
}

memest_param_count count_parameters(const memest_model& m) {
  memest_param_count c;
  std::memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  if (is_bare_count(m)) {
    c.total = m.num_parameters;
    return c;
  }
  const LayerParams layer = layer_params(m);
  const EdgeParams edge = edge_params(m);
  c.embedding = edge.word_embedding + edge.embedding_extra;
  c.per_layer = layer.total();
  c.lm_head = edge.lm_head + edge.final_norm;
  // 4D paper Eq. 3: 2hv + L(2h^2(1 + k/a) + 3h*h_ffn + 2h) + h for an untied Llama.
  c.total = c.embedding + static_cast<double>(m.num_hidden_layers) * c.per_layer + c.lm_head;
  return c;
}

void copy_name(char (&dst)[64], const std::string& src) {
  std::size_t n = src.size() < sizeof dst - 1 ? src.size() : sizeof dst - 1;
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

}  // namespace memest
