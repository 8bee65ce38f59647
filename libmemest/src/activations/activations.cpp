#include "activations/activations.hpp"

#include "model/model.hpp"

namespace memest {

ActivationCoefficients activation_coefficients(const memest_model& m,
                                               memest_activation_model which) {
  if (which == MEMEST_ACTIVATIONS_AUTO) {
    which = m.family == MEMEST_FAMILY_GPT ? MEMEST_ACTIVATIONS_GPT : MEMEST_ACTIVATIONS_LLAMA;
  }
  const double h = static_cast<double>(m.hidden_size);
  const double d = static_cast<double>(head_dim(m));
  const double q = static_cast<double>(m.num_attention_heads) * d / h;   // 1 when d = h/a
  const double kv = static_cast<double>(m.num_key_value_heads) * d / h;  // k/a when d = h/a
  const double f = static_cast<double>(m.intermediate_size) / h;
  ActivationCoefficients k;
  // Q, K + V and the attention output (the projection's input), in units of sbh bytes.
  double attention = 2 * q + 4 * kv + 2 * q;
  double lowrank = 0;  // multi-head latent attention's compressed tensors, not split by t
  if (is_mla(m)) {
    // Multi-head latent attention (HF modeling_deepseek_v3.py DeepseekV3Attention;
    // megatron/core/transformer/multi_latent_attention.py): the heads keep Q and K of
    // d_nope + d_rope and V and the attention output of v_head_dim, split by heads (t); the
    // compressed q (q_a_proj output and its normed copy, q_b_proj's input), the compressed kv
    // with the shared rope key (kv_a_proj_with_mqa output) and its normed copy (kv_b_proj's
    // input) are computed on the sequence-parallel shard: 2 bytes each.
    const double a = static_cast<double>(m.num_attention_heads);
    const double qk = a * static_cast<double>(m.qk_nope_head_dim + m.qk_rope_head_dim) / h;
    const double v = a * static_cast<double>(m.v_head_dim) / h;
    attention = 2 * qk + 2 * qk + 2 * v + 2 * v;
    const double rq = static_cast<double>(m.q_lora_rank) / h;
    const double rkv = static_cast<double>(m.kv_lora_rank) / h;
    const double rope = static_cast<double>(m.qk_rope_head_dim) / h;
    lowrank = 2 * rq + 2 * rq + 2 * (rkv + rope) + 2 * rkv;
  }
  if (which == MEMEST_ACTIVATIONS_LLAMA) {
    k.replicated = 8 + lowrank;                    // X, FFN input, two RMSNorm inputs
    k.mlp = 8;                                     // SwiGLU: four h_ffn-wide tensors
    k.sharded = attention + k.mlp * f;             // Q, K+V, attention output, SwiGLU
    k.scores = 2;                                  // softmax output (no dropout)
    k.embedding = 8;                               // Eq. 13
  } else {
    k.replicated = 10 + lowrank;                   // LN inputs, block inputs, dropout masks
    k.mlp = 4;                                     // GeLU input + fc2 input
    k.sharded = attention + k.mlp * f;             // Q, K+V, projection input, GeLU + fc2
    k.scores = 5;                                  // softmax, dropout mask, dropout output
    k.embedding = 1;                               // embedding dropout mask
  }
  return k;
}

bool recomputes(const ActivationLayout& x, memest_recompute_module module) {
  return x.recompute == MEMEST_RECOMPUTE_SELECTIVE && ((x.recompute_modules >> module) & 1u) != 0;
}

namespace {

// One h-wide 16-bit tensor of the layer's tokens on the sequence-parallel shard: 2 sbh_c / sp.
double norm_output_bytes(const memest_model& m, const ActivationLayout& x) {
  const double sbh_c = x.seq_len * x.micro_batch * static_cast<double>(m.hidden_size) / x.cp;
  return 2 * sbh_c / (x.sequence_parallel ? x.tp : 1.0);
}

// The layer formula before any recompute module.
double block_bytes(const memest_model& m, const ActivationCoefficients& k,
                   const ActivationLayout& x) {
  const double sbh_c = x.seq_len * x.micro_batch * static_cast<double>(m.hidden_size) / x.cp;
  const double sp_div = x.sequence_parallel ? x.tp : 1.0;
  if (x.recompute == MEMEST_RECOMPUTE_FULL) return 2 * sbh_c / sp_div;
  double bytes = sbh_c * (k.replicated / sp_div + k.sharded / x.tp);
  if (!x.flash_attention && x.recompute == MEMEST_RECOMPUTE_NONE) {
    bytes += k.scores * static_cast<double>(m.num_attention_heads) * x.seq_len * x.seq_len *
             x.micro_batch / (x.tp * x.cp);
  }
  return bytes - attention_side_recomputed_bytes(m, x);
}

}  // namespace

double attention_side_recomputed_bytes(const memest_model& m, const ActivationLayout& x) {
  double bytes = 0;
  // transformer_layer.py: recompute_input_layernorm only when input_layernorm is not an
  // IdentityOp, i.e. not fused into linear_qkv: latent attention's separate TENorm
  if (recomputes(x, MEMEST_RECOMPUTE_MODULE_LAYERNORM) && is_mla(m)) {
    bytes += norm_output_bytes(m, x);
  }
  if (recomputes(x, MEMEST_RECOMPUTE_MODULE_MLA_UP_PROJ) && is_mla(m)) {
    // multi_latent_attention.py: qkv_up_checkpoint (CheckpointWithoutOutput) discards query,
    // key and value once core attention has run; the compressed inputs stay
    const double a = static_cast<double>(m.num_attention_heads);
    const double qk = static_cast<double>(m.qk_nope_head_dim + m.qk_rope_head_dim);
    const double v = static_cast<double>(m.v_head_dim);
    bytes += (4 * a * qk + 2 * a * v) * x.seq_len * x.micro_batch / (x.cp * x.tp);
  }
  return bytes;
}

double dense_mlp_recomputed_bytes(const memest_model& m, const ActivationCoefficients& k,
                                  const ActivationLayout& x) {
  if (!recomputes(x, MEMEST_RECOMPUTE_MODULE_MLP)) return 0;
  // transformer_layer.py recompute_mlp: tensor_parallel.checkpoint(self.mlp, ...) on the
  // residual (pre_mlp_layernorm is fused into linear_fc1 in a dense layer): the MLP's
  // tensors and the fused norm's output are rebuilt in backward
  return mlp_activation_bytes(m, k, x) + norm_output_bytes(m, x);
}

double layer_activation_bytes(const memest_model& m, const ActivationCoefficients& k,
                              const ActivationLayout& x) {
  return block_bytes(m, k, x) - dense_mlp_recomputed_bytes(m, k, x);
}

double mlp_activation_bytes(const memest_model& m, const ActivationCoefficients& k,
                            const ActivationLayout& x) {
  if (x.recompute == MEMEST_RECOMPUTE_FULL) return 0;
  return x.seq_len * x.micro_batch / x.cp * k.mlp * static_cast<double>(m.intermediate_size) /
         x.tp;
}

MoeActivationParts moe_activation_parts(const memest_model& m, const ActivationLayout& x,
                                        double etp, double capacity_factor) {
  MoeActivationParts p;
  if (x.recompute == MEMEST_RECOMPUTE_FULL) return p;
  const double h = static_cast<double>(m.hidden_size);
  const double e = static_cast<double>(m.num_experts);
  const double k = static_cast<double>(m.num_experts_per_tok);
  const double fe = static_cast<double>(expert_width(m));
  const double fs = static_cast<double>(shared_expert_width(m));
  const double per_width = m.gated_mlp ? 6.0 : 4.0;  // fc1 output (2f | f) + activation output
  const double load = capacity_factor > 0 ? capacity_factor : 1.0;
  // Tokens entering the layer on one GPU: the sequence-parallel shard of the micro-batch.
  const double tokens = x.seq_len * x.micro_batch / (x.cp * (x.sequence_parallel ? x.tp : 1.0));
  // moe/router.py + moe/moe_utils.py (topk_routing_with_score_function): the softmax or
  // sigmoid scores are computed in fp32 and saved for backward (T x E x 4); the routing map
  // is a T x E bool tensor (1 byte each).
  p.router = tokens * e * (4 + 1);
  // moe/token_dispatcher.py (MoEAlltoAllTokenDispatcher) permutes every token into k copies
  // (moe/moe_utils.py permute), sends them over the ep group and gathers them over the etp
  // group; the grouped expert MLP (moe/experts.py) keeps these rows as its fc1 input.
  const double rows = load * tokens * k * etp;
  p.dispatch = rows * h * 2;
  // moe/experts.py: fc1 output (gate and up halves, f_e / etp wide each) and the activation's
  // output (fc2's input), 2 bytes each.
  p.experts = rows * per_width * fe / etp;
  // moe/moe_utils.py unpermute: the k expert outputs of each token come back and are weighted
  // by their probabilities; the product keeps the outputs (2 bytes) and the fp32 probs.
  p.combine = load * tokens * k * (2 * h + 4);
  // moe/shared_experts.py: the shared experts run like a dense MLP (column/row-parallel,
  // their input all-gathered under SP, that input already counted as the MLP input).
  const double sb_c = x.seq_len * x.micro_batch / x.cp;
  p.shared = sb_c * static_cast<double>(m.num_shared_experts) * per_width * fs / x.tp;
  // Megatron's recompute modules: moe/moe_layer.py moe_layer_recompute checkpoints the whole
  // layer (router, dispatch, experts, combine, shared experts) on its input; experts.py
  // activation_recompute discards the activation's output (fc2's input, f_e / etp wide);
  // shared_experts_recompute checkpoints the shared experts
  if (recomputes(x, MEMEST_RECOMPUTE_MODULE_MOE)) return MoeActivationParts{};
  if (recomputes(x, MEMEST_RECOMPUTE_MODULE_MOE_ACT)) p.experts -= rows * 2 * fe / etp;
  if (recomputes(x, MEMEST_RECOMPUTE_MODULE_SHARED_EXPERTS)) p.shared = 0;
  return p;
}

double moe_layer_activation_bytes(const memest_model& m, const ActivationCoefficients& k,
                                  const ActivationLayout& x, double etp, double capacity_factor) {
  // an MoE layer's pre-MLP norm is a separate TENorm (gpt_layer_specs.py: pre_mlp_layernorm
  // is backend.layer_norm() when num_experts is set): the layernorm module discards its output
  const double norm = recomputes(x, MEMEST_RECOMPUTE_MODULE_LAYERNORM) ? norm_output_bytes(m, x) : 0.0;
  return block_bytes(m, k, x) - mlp_activation_bytes(m, k, x) - norm +
         moe_activation_parts(m, x, etp, capacity_factor).total();
}

namespace {

// What both halves of megatron_lora_layer_delta count with: the tensor-parallel size, the
// sequence-parallel divisor, the local sequence's tokens, the rank, the targets.
struct LoraTokens {
  LoraTokens(const ActivationLayout& x, const MegatronLoraActivation& a)
      : t(x.tp), sp(x.sequence_parallel ? x.tp : 1.0), n(x.seq_len * x.micro_batch / x.cp),
        r(a.rank), in_bytes(a.dropout ? 3.0 : 2.0), targets(a.targets) {}
  double t, sp, n, r;
  // lora_A's saved input of `width` elements per token over `rows`: the tensor (2 bytes), or
  // with dropout its output and mask (3 bytes)
  double adapter_input(double rows, double width) const { return in_bytes * rows * width; }
  bool has(memest_lora_target target) const { return (targets & (1u << target)) != 0; }

 private:
  double in_bytes;
  uint32_t targets;
};

}  // namespace

double megatron_lora_layer_delta(const memest_model& m, const ActivationLayout& x,
                                 const MegatronLoraActivation& a, bool moe_layer, double etp,
                                 double capacity_factor) {
  return megatron_lora_attention_delta(m, x, a) +
         megatron_lora_mlp_delta(m, x, a, moe_layer, etp, capacity_factor);
}

double megatron_lora_attention_delta(const memest_model& m, const ActivationLayout& x,
                                     const MegatronLoraActivation& a) {
  if (x.recompute == MEMEST_RECOMPUTE_FULL) return 0;
  const LoraTokens k(x, a);
  const double t = k.t, sp = k.sp, n = k.n, r = k.r;
  const double h = static_cast<double>(m.hidden_size);
  const bool qkv = k.has(MEMEST_LORA_Q_PROJ) || k.has(MEMEST_LORA_K_PROJ) || k.has(MEMEST_LORA_V_PROJ);
  const bool proj = k.has(MEMEST_LORA_O_PROJ);
  const double a_heads = static_cast<double>(m.num_attention_heads);
  const double attn_out =
      a_heads * static_cast<double>(is_mla(m) ? m.v_head_dim : head_dim(m)) / t;  // per rank
  auto adapter_input = [&](double rows, double width) { return k.adapter_input(rows, width); };
  double d = 0;
  // attention: the normed input of linear_qkv (on the SP shard) is freed; an adapted
  // linear_qkv gathers it whole for lora_A
  d -= 2 * n * h / sp;
  if (qkv) d += adapter_input(n, h) + 2 * n * r;
  if (!x.flash_attention) d -= 2 * n * attn_out;  // core attention's output, kept by nothing else
  if (proj) {
    // lora_A reads the attention output as the base does: already kept by FlashAttention
    const bool shared = x.flash_attention && !a.dropout;
    d += (shared ? 0.0 : adapter_input(n, attn_out)) + 2 * n * r;
  }
  return d;
}

double megatron_lora_mlp_delta(const memest_model& m, const ActivationLayout& x,
                               const MegatronLoraActivation& a, bool moe_layer, double etp,
                               double capacity_factor) {
  if (x.recompute == MEMEST_RECOMPUTE_FULL) return 0;
  const LoraTokens k(x, a);
  const double t = k.t, sp = k.sp, n = k.n, r = k.r;
  const double h = static_cast<double>(m.hidden_size);
  const bool fc1 = k.has(MEMEST_LORA_GATE_PROJ) || k.has(MEMEST_LORA_UP_PROJ);
  const bool fc2 = k.has(MEMEST_LORA_DOWN_PROJ);
  auto adapter_input = [&](double rows, double width) { return k.adapter_input(rows, width); };
  // the MLP's normed input (linear_fc1's, or the router's and the experts') is freed
  double d = -2 * n * h / sp;
  auto dense_mlp = [&](double width) {  // width on this rank
    double v = -2 * n * width;  // linear_fc2's input, the activation output
    if (fc1) v += adapter_input(n, h) + 2 * n * r;
    if (fc2) v += adapter_input(n, width) + 2 * n * r;
    return v;
  };
  if (!moe_layer) return d + dense_mlp(static_cast<double>(m.intermediate_size) / t);
  // An MoE layer (moe_activation_parts): the experts' fc1 input (the permuted rows) is freed
  // unless their lora_A keeps that same tensor; their fc2 input is freed and comes back with
  // an adapted fc2; every lora_B keeps r per row.
  const MoeActivationParts p = moe_activation_parts(m, x, etp, capacity_factor);
  const double rows = p.dispatch / (2 * h);
  const double fe = static_cast<double>(expert_width(m)) / etp;
  if (!fc1) d -= p.dispatch;
  if (fc1) d += (a.dropout ? rows * h : 0.0) + 2 * rows * r;
  d -= 2 * rows * fe;
  if (fc2) d += adapter_input(rows, fe) + 2 * rows * r;
  if (k.has(MEMEST_LORA_ROUTER)) {
    // the router's adapters (F.linear in the patched gating) keep its input and r-wide output
    d += adapter_input(n / sp, h) + 2 * (n / sp) * r;
  }
  const double shared =
      static_cast<double>(m.num_shared_experts) * static_cast<double>(shared_expert_width(m)) / t;
  if (shared > 0) d += dense_mlp(shared);
  return d;
}

double embedding_activation_bytes(const memest_model& m, const ActivationCoefficients& k,
                                  const ActivationLayout& x) {
  const double sbh_c = x.seq_len * x.micro_batch * static_cast<double>(m.hidden_size) / x.cp;
  return k.embedding * sbh_c / (x.sequence_parallel ? x.tp : 1.0);
}

double head_activation_bytes(const memest_model& m, const ActivationLayout& x) {
  const double sb_c = x.seq_len * x.micro_batch / x.cp;
  const double h = static_cast<double>(m.hidden_size);
  const double v = static_cast<double>(m.vocab_size);
  return 4 * sb_c * h / (x.sequence_parallel ? x.tp : 1.0) + 4 * sb_c * v / x.tp;
}

}  // namespace memest
