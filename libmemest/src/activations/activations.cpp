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
  if (which == MEMEST_ACTIVATIONS_LLAMA) {
    k.replicated = 8;                              // X, FFN input, two RMSNorm inputs
    k.sharded = 2 * q + 4 * kv + 2 * q + 8 * f;    // Q, K+V, attention output, SwiGLU
    k.scores = 2;                                  // softmax output (no dropout)
    k.embedding = 8;                               // Eq. 13
  } else {
    k.replicated = 10;                             // LN inputs, block inputs, dropout masks
    k.sharded = 2 * q + 4 * kv + 2 * q + 4 * f;    // Q, K+V, projection input, GeLU + fc2
    k.scores = 5;                                  // softmax, dropout mask, dropout output
    k.embedding = 1;                               // embedding dropout mask
  }
  return k;
}

double layer_activation_bytes(const memest_model& m, const ActivationCoefficients& k,
                              const ActivationLayout& x) {
  const double sbh_c = x.seq_len * x.micro_batch * static_cast<double>(m.hidden_size) / x.cp;
  const double sp_div = x.sequence_parallel ? x.tp : 1.0;
  if (x.recompute == MEMEST_RECOMPUTE_FULL) return 2 * sbh_c / sp_div;
  double bytes = sbh_c * (k.replicated / sp_div + k.sharded / x.tp);
  if (!x.flash_attention && x.recompute == MEMEST_RECOMPUTE_NONE) {
    bytes += k.scores * static_cast<double>(m.num_attention_heads) * x.seq_len * x.seq_len *
             x.micro_batch / (x.tp * x.cp);
  }
  return bytes;
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
