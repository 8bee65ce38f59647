#include "model/model.hpp"

#include <cmath>
#include <cstring>

#include "core/error.hpp"
#include "core/limits.hpp"
#include "model/hybrid.hpp"

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
  m.moe_layer_step = 1;
  m.mamba_conv_bias = 1;
  m.mamba_norm = 1;
  return m;
}

bool is_bare_count(const memest_model& m) { return m.hidden_size == 0 && m.num_parameters > 0; }

int64_t head_dim(const memest_model& m) {
  if (is_mla(m)) return m.qk_nope_head_dim + m.qk_rope_head_dim;
  return m.head_dim > 0 ? m.head_dim : m.hidden_size / m.num_attention_heads;
}


namespace {
int64_t layer_step(const memest_model& m) { return m.moe_layer_step > 1 ? m.moe_layer_step : 1; }
}  // namespace

bool is_moe_layer(const memest_model& m, int64_t i) {
  if (has_mlp_pattern(m) && i >= 0 && i < m.num_hidden_layers) {
    // (validate_hybrid holds the pattern to num_hidden_layers characters)
    return is_moe(m) && i < MEMEST_MAX_PATTERN_LAYERS && m.mlp_pattern[i] == kMlpMoe;
  }
  return is_moe(m) && i >= m.moe_first_dense_layers && (i + 1) % layer_step(m) == 0;
}

int64_t moe_layer_count(const memest_model& m) {
  if (!is_moe(m)) return 0;
  if (has_mlp_pattern(m)) return moe_layers_in(m, 0, m.num_hidden_layers);
  // Layers i in [first, L) with (i + 1) % s == 0: the multiples of s in [first + 1, L].
  const int64_t s = layer_step(m);
  const int64_t first = m.moe_first_dense_layers < m.num_hidden_layers ? m.moe_first_dense_layers
                                                                       : m.num_hidden_layers;
  return m.num_hidden_layers / s - first / s;
}

int64_t expert_width(const memest_model& m) {
  return m.moe_intermediate_size > 0 ? m.moe_intermediate_size : m.intermediate_size;
}

int64_t shared_expert_width(const memest_model& m) {
  return m.shared_expert_intermediate_size > 0 ? m.shared_expert_intermediate_size
                                               : expert_width(m);
}

namespace {

void check_flag(const std::string& prefix, const char* name, int32_t value) {
  if (value != 0 && value != 1) fail(prefix + "." + name, "must be 0 or 1, got " + std::to_string(value));
}

void validate_moe(const memest_model& m, const std::string& prefix) {
  check_flag(prefix, "router_bias", m.router_bias);
  check_flag(prefix, "shared_expert_gate", m.shared_expert_gate);
  check_range(prefix + ".num_experts", m.num_experts, 0, kMaxExperts);
  if (m.num_experts == 0) {
    // A dense model: the expert fields must keep their defaults (no silent half-MoE model).
    const std::pair<const char*, int64_t> unused[] = {
        {"num_experts_per_tok", m.num_experts_per_tok},
        {"moe_intermediate_size", m.moe_intermediate_size},
        {"num_shared_experts", m.num_shared_experts},
        {"shared_expert_intermediate_size", m.shared_expert_intermediate_size},
        {"moe_first_dense_layers", m.moe_first_dense_layers},
        {"router_bias", m.router_bias},
        {"shared_expert_gate", m.shared_expert_gate}};
    for (const auto& [name, value] : unused) {
      if (value != 0) fail(prefix + "." + name, "is set but num_experts is 0 (a dense model)");
    }
    check_range(prefix + ".moe_layer_step", m.moe_layer_step, 0, 1);
    return;
  }
  check_range(prefix + ".num_experts_per_tok", m.num_experts_per_tok, 1, m.num_experts);
  check_range(prefix + ".moe_intermediate_size", m.moe_intermediate_size, 0, kMaxFfn);
  check_range(prefix + ".num_shared_experts", m.num_shared_experts, 0, kMaxExperts);
  check_range(prefix + ".shared_expert_intermediate_size", m.shared_expert_intermediate_size, 0,
              kMaxFfn);
  check_range(prefix + ".moe_first_dense_layers", m.moe_first_dense_layers, 0,
              m.num_hidden_layers);
  check_range(prefix + ".moe_layer_step", m.moe_layer_step, 0, m.num_hidden_layers);
  if (m.shared_expert_gate && m.num_shared_experts == 0) {
    fail(prefix + ".shared_expert_gate", "needs num_shared_experts > 0");
  }
  if (moe_layer_count(m) == 0) {
    fail(prefix + ".moe_first_dense_layers",
         "leaves no layer with experts (moe_first_dense_layers=" +
             std::to_string(m.moe_first_dense_layers) + ", moe_layer_step=" +
             std::to_string(m.moe_layer_step) + ", num_hidden_layers=" +
             std::to_string(m.num_hidden_layers) + ")");
  }
}

void validate_mla(const memest_model& m, const std::string& prefix) {
  check_range(prefix + ".kv_lora_rank", m.kv_lora_rank, 0, kMaxHidden);
  if (m.kv_lora_rank == 0) {
    const std::pair<const char*, int64_t> unused[] = {{"q_lora_rank", m.q_lora_rank},
                                                      {"qk_nope_head_dim", m.qk_nope_head_dim},
                                                      {"qk_rope_head_dim", m.qk_rope_head_dim},
                                                      {"v_head_dim", m.v_head_dim}};
    for (const auto& [name, value] : unused) {
      if (value != 0) {
        fail(prefix + "." + name, "is set but kv_lora_rank is 0 (no multi-head latent attention)");
      }
    }
    return;
  }
  check_range(prefix + ".q_lora_rank", m.q_lora_rank, 0, kMaxHidden);
  check_range(prefix + ".qk_nope_head_dim", m.qk_nope_head_dim, 0, kMaxHidden);
  check_range(prefix + ".qk_rope_head_dim", m.qk_rope_head_dim, 0, kMaxHidden);
  check_range(prefix + ".v_head_dim", m.v_head_dim, 1, kMaxHidden);
  if (m.qk_nope_head_dim + m.qk_rope_head_dim == 0) {
    fail(prefix + ".qk_nope_head_dim", "qk_nope_head_dim + qk_rope_head_dim must be positive");
  }
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
  if (m.head_dim == 0 && !is_mla(m) && m.hidden_size % m.num_attention_heads != 0) {
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
  check_flag(prefix, "fused_qkv", m.fused_qkv);
  check_flag(prefix, "logits_fp32", m.logits_fp32);
  check_flag(prefix, "attention_sinks", m.attention_sinks);
  check_flag(prefix, "fused_gate_up", m.fused_gate_up);
  check_flag(prefix, "vision_excluded", m.vision_excluded);
  check_range(prefix + ".qk_norm", m.qk_norm, 0, 2);
  if (!std::isfinite(m.final_logit_softcapping) || m.final_logit_softcapping < 0 ||
      m.final_logit_softcapping > 1e6) {
    fail(prefix + ".final_logit_softcapping", "must be 0 (no soft-capping) or a positive cap up to 1e6");
  }
  check_range(prefix + ".mtp_layers", m.mtp_layers, 0, kMaxLayers);
  validate_hybrid(m, prefix);  // first: the MoE checks read the mlp_pattern
  validate_moe(m, prefix);
  validate_mla(m, prefix);
  check_range(prefix + ".index_n_heads", m.index_n_heads, 0, kMaxHeads);
  check_range(prefix + ".index_head_dim", m.index_head_dim, 0, kMaxHidden);
  if ((m.index_n_heads > 0) != (m.index_head_dim > 0)) {
    fail(prefix + (m.index_n_heads > 0 ? ".index_head_dim" : ".index_n_heads"),
         "the sparse-attention indexer needs both index_n_heads and index_head_dim (or neither)");
  }
  if (m.index_n_heads > 0 && (!is_mla(m) || m.q_lora_rank == 0)) {
    fail(prefix + ".index_n_heads",
         "the sparse-attention indexer (DeepSeek-V3.2) reads the query's low-rank latent: it "
         "needs multi-head latent attention with q_lora_rank > 0");
  }
}

double norm_params(const memest_model& m) {
  const double h = static_cast<double>(m.hidden_size);
  return m.norm_type == MEMEST_NORM_LAYER ? 2 * h : h;
}

LayerParams attention_params(const memest_model& m) {
  const double h = static_cast<double>(m.hidden_size);
  const double a = static_cast<double>(m.num_attention_heads);
  LayerParams p;
  if (is_mla(m)) {
    // modeling_deepseek_v3 (DeepseekV3Attention), per layer:
    //   q: q_a_proj h x r_q, q_a_layernorm r_q, q_b_proj r_q x a(d_nope + d_rope)
    //      (or q_proj h x a(d_nope + d_rope) when q_lora_rank is 0)
    //   kv_a_proj_with_mqa h x (r_kv + d_rope), kv_a_layernorm r_kv,
    //   kv_b_proj r_kv x a(d_nope + d_v), o_proj a*d_v x h.
    // The down projections and their norms are the same on every tensor-parallel rank
    // (replicated); the up projections and o_proj are split by heads.
    const double rq = static_cast<double>(m.q_lora_rank);
    const double rkv = static_cast<double>(m.kv_lora_rank);
    const double nope = static_cast<double>(m.qk_nope_head_dim);
    const double rope = static_cast<double>(m.qk_rope_head_dim);
    const double dv = static_cast<double>(m.v_head_dim);
    const double bias = m.attention_qkv_bias ? 1.0 : 0.0;  // attention_bias: q_a, kv_a, o
    if (m.q_lora_rank > 0) {
      p.replicated += h * rq + bias * rq + rq;
      p.sharded += rq * a * (nope + rope);
    } else {
      p.sharded += h * a * (nope + rope);
    }
    p.replicated += h * (rkv + rope) + bias * (rkv + rope) + rkv;
    p.sharded += rkv * a * (nope + dv);
    p.sharded += a * dv * h;
    if (m.attention_out_bias) p.replicated += h;
    if (m.index_n_heads > 0) {
      // DeepSeek-V3.2's indexer (model.py, class Indexer): plain Linear layers, the same on
      // every tensor-parallel rank (each rank must pick the same top-k tokens): wq_b
      // r_q x n_i*d_i, wk h x d_i, k_norm LayerNorm 2*d_i, weights_proj h x n_i.
      const double ni = static_cast<double>(m.index_n_heads);
      const double di = static_cast<double>(m.index_head_dim);
      p.replicated += rq * ni * di + h * di + 2 * di + h * ni;
    }
    return p;
  }
  const double d = static_cast<double>(head_dim(m));
  const double q = a * d;                                            // query width
  const double kv = static_cast<double>(m.num_key_value_heads) * d;  // key / value width
  // Attention (4D paper Eq. 1 when q = h: W_Q, W_O are h*h; W_K, W_V are h*h*k/a).
  p.sharded += h * q + 2 * h * kv + q * h;
  // Qwen3-Next's gated attention (modeling_qwen3_next.py Qwen3NextAttention): q_proj is
  // h x 2ad, the second half a sigmoid gate on the attention output.
  if (m.attention_output_gate) p.sharded += h * q;
  if (m.attention_qkv_bias) p.sharded += q + 2 * kv;  // column-parallel biases split
  if (m.attention_out_bias) p.replicated += h;        // row-parallel bias is replicated
  // QK-norms (weights only): one head_dim-wide norm each for q and k, shared by the heads
  // (Qwen3, Gemma 3), or full-width ones split by heads (OLMo 2, OLMoE, Cohere).
  if (m.qk_norm == 1) p.replicated += 2 * d;
  if (m.qk_norm == 2) p.sharded += q + kv;
  if (m.attention_sinks) p.sharded += a;  // gpt-oss: one sink logit per head
  return p;
}

LayerParams mlp_params(const memest_model& m, double f) {
  const double h = static_cast<double>(m.hidden_size);
  LayerParams p;
  // MLP (Eq. 2: 3*h*h_ffn for SwiGLU; 2*h*h_ffn for a GeLU MLP).
  const double mlp_in = m.gated_mlp ? 2.0 : 1.0;
  p.sharded += (mlp_in + 1) * h * f;
  if (m.mlp_bias) {
    p.sharded += mlp_in * f;
    p.replicated += h;
  }
  return p;
}

namespace {

LayerParams operator+(LayerParams a, const LayerParams& b) {
  a.sharded += b.sharded;
  a.replicated += b.replicated;
  return a;
}

LayerParams times(double n, const LayerParams& p) { return {n * p.sharded, n * p.replicated}; }

}  // namespace

LayerParams dense_layer_params(const memest_model& m) {
  LayerParams p = attention_params(m) +
                  mlp_params(m, static_cast<double>(m.intermediate_size));
  p.replicated += m.norms_per_layer * norm_params(m);
  return p;
}

MoeLayerParts moe_layer_parts(const memest_model& m) {
  const double h = static_cast<double>(m.hidden_size);
  const double e = static_cast<double>(m.num_experts);
  MoeLayerParts p;
  // Attention, shared experts (tensor-parallel like a dense MLP), the router (h x E,
  // replicated), Qwen2-MoE's shared-expert gate (h x 1) and the layer norms.
  p.base = attention_params(m);
  p.base = p.base + times(static_cast<double>(m.num_shared_experts),
                          mlp_params(m, static_cast<double>(shared_expert_width(m))));
  p.base.replicated += h * e + (m.router_bias ? e : 0.0);
  if (m.shared_expert_gate) p.base.replicated += h;
  p.base.replicated += m.norms_per_layer * norm_params(m);
  // Routed experts: each an MLP of moe_intermediate_size.
  p.routed = e * mlp_params(m, static_cast<double>(expert_width(m))).total();
  return p;
}

LayerParams moe_layer_params(const memest_model& m, bool active_only) {
  const double e = static_cast<double>(m.num_experts);
  const double routed = active_only ? static_cast<double>(m.num_experts_per_tok) : e;
  const MoeLayerParts parts = moe_layer_parts(m);
  // With tensor parallelism and no expert parallelism every rank holds a slice of every
  // expert: the routed experts count as sharded here.
  LayerParams p = times(routed, mlp_params(m, static_cast<double>(expert_width(m))));
  return p + parts.base;
}

int64_t moe_layers_in(const memest_model& m, int64_t begin, int64_t end) {
  if (!is_moe(m) || end <= begin) return 0;
  if (has_mlp_pattern(m)) {  // the pattern's 'E' layers; past it (MTP modules) by the rule
    int64_t n = 0;
    for (int64_t i = begin; i < end; ++i) n += is_moe_layer(m, i);
    return n;
  }
  // MoE layers among [0, n): i in [first, n) with (i + 1) % s == 0, i.e. the multiples of s
  // in [first + 1, n]: floor(n / s) - floor(min(first, n) / s).
  const int64_t s = layer_step(m);
  auto before = [&](int64_t n) {
    const int64_t first = m.moe_first_dense_layers < n ? m.moe_first_dense_layers : n;
    return n / s - first / s;
  };
  return before(end) - before(begin);
}

LayerParams mtp_extra_params(const memest_model& m) {
  const double h = static_cast<double>(m.hidden_size);
  return {2 * h * h, 3 * norm_params(m)};
}

LayerParams layer_params(const memest_model& m) {
  return is_moe(m) ? moe_layer_params(m, false) : dense_layer_params(m);
}

double mtp_module_params(const memest_model& m, int64_t j) {
  const double h = static_cast<double>(m.hidden_size);
  const LayerParams layer =
      is_moe_layer(m, m.num_hidden_layers + j) ? moe_layer_params(m, false) : dense_layer_params(m);
  // enorm, hnorm, shared_head.norm; eh_proj (2h -> h, no bias); the decoder layer.
  return 3 * norm_params(m) + 2 * h * h + layer.total();
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
  // A bare count (model states of a parameter count alone) has no shape to take apart.
  if (is_bare_count(m)) return count_parameters(m, EdgeParams{}, LayerParams{});
  return count_parameters(m, edge_params(m), dense_layer_params(m));
}

memest_param_count count_parameters(const memest_model& m, const EdgeParams& edge,
                                    const LayerParams& dense_layer_parts) {
  memest_param_count c;
  std::memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  if (is_bare_count(m)) {
    c.total = m.num_parameters;
    c.active = m.num_parameters;
    return c;
  }
  const double dense_layer = dense_layer_parts.total();
  c.moe_layers = moe_layer_count(m);
  const double moe_layers = static_cast<double>(c.moe_layers);
  const double dense_layers = static_cast<double>(m.num_hidden_layers - c.moe_layers);
  c.embedding = edge.word_embedding + edge.embedding_extra;
  c.per_dense_layer = dense_layer;
  c.per_layer = is_moe(m) ? moe_layer_params(m, false).total() : dense_layer;
  c.lm_head = edge.lm_head + edge.final_norm;
  // 4D paper Eq. 3: 2hv + L(2h^2(1 + k/a) + 3h*h_ffn + 2h) + h for an untied Llama.
  c.total = c.embedding + dense_layers * dense_layer + moe_layers * c.per_layer + c.lm_head;
  const double active_moe_layer = is_moe(m) ? moe_layer_params(m, true).total() : 0.0;
  c.active = c.embedding + dense_layers * dense_layer + moe_layers * active_moe_layer + c.lm_head;
  // Hybrid layers: their mixers instead of attention, absent blocks (model/hybrid.hpp); every
  // mixer is active.
  const double hybrid = hybrid_params_delta(m, layer_mix(m, 0, m.num_hidden_layers)).total();
  c.total += hybrid;
  c.active += hybrid;
  for (int64_t j = 0; j < m.mtp_layers; ++j) c.mtp += mtp_module_params(m, j);
  return c;
}

void copy_name(char (&dst)[64], const std::string& src) {
  std::size_t n = src.size() < sizeof dst - 1 ? src.size() : sizeof dst - 1;
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

}  // namespace memest
