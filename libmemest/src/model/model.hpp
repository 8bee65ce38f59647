// Model dimensions → parameter counts. The Llama counts follow the 4D paper
// (Eqs. 1-3: attention 2h^2(1 + k/a), FFN 3h*h_ffn, 2h of RMSNorm per layer); the GPT
// family adds LayerNorm and linear biases, learned positions and 2-matrix MLPs. Newer
// families add QK-norms, attention sinks, mixture-of-experts MLPs (routed and shared experts,
// a router, dense leading layers) and multi-head latent attention (DeepSeek-V2/V3), each
// counted as the Hugging Face modeling_<family>.py defines its tensors.
#pragma once

#include <string>

#include "core/limits.hpp"
#include "memest/memest.h"

namespace memest {

// Default-filled model (Llama conventions, all sizes 0).
memest_model default_model();

bool is_bare_count(const memest_model& m);
// Query/key head width: head_dim, or h/a when 0; for MLA qk_nope_head_dim + qk_rope_head_dim.
int64_t head_dim(const memest_model& m);

inline bool is_moe(const memest_model& m) { return m.num_experts > 0; }
inline bool is_mla(const memest_model& m) { return m.kv_lora_rank > 0; }
// Whether layer i (0-based; i >= num_hidden_layers for the multi-token-prediction modules)
// has an MoE MLP: i >= moe_first_dense_layers and (i + 1) % moe_layer_step == 0.
bool is_moe_layer(const memest_model& m, int64_t i);
int64_t moe_layer_count(const memest_model& m);  // among the num_hidden_layers
int64_t expert_width(const memest_model& m);     // moe_intermediate_size (or intermediate_size)
int64_t shared_expert_width(const memest_model& m);

// Throws memest::Error naming "<prefix>.<field>" when a dimension is invalid.
// A bare count (num_parameters only) passes only when `allow_bare`.
void validate_model(const memest_model& m, const std::string& prefix, bool allow_bare);

// Parameters of one transformer layer, split the way Megatron-style tensor parallelism
// splits them: `sharded` is divided by t, `replicated` (norms, row-parallel biases) is not.
struct LayerParams {
  double sharded = 0;
  double replicated = 0;
  double total() const { return sharded + replicated; }
};
// One layer norm's parameters (h, or 2h for a LayerNorm with its bias).
double norm_params(const memest_model& m);
// Self-attention of one layer, with its QK-norms, sinks and output gate (not the layer norms).
LayerParams attention_params(const memest_model& m);
// One MLP of width f with the model's gating and biases.
LayerParams mlp_params(const memest_model& m, double f);
// One layer with the dense MLP (every layer of a dense model).
LayerParams dense_layer_params(const memest_model& m);
// One layer with the MoE MLP: every routed expert, or with `active_only` the top-k a token uses.
LayerParams moe_layer_params(const memest_model& m, bool active_only);
// One MoE layer split the way Megatron-Core's expert-parallel folding holds it
// (megatron/core/transformer/moe/moe_layer.py, experts.py): `base` (attention, shared experts,
// router, norms) is held like a dense layer's parameters, sharded by tp or replicated;
// `routed` (every routed expert's MLP, with its biases) is divided over ep x etp ranks.
struct MoeLayerParts {
  LayerParams base;
  double routed = 0;
};
MoeLayerParts moe_layer_parts(const memest_model& m);
// MoE layers among the layers with index in [begin, end) (0-based, may pass num_hidden_layers
// for the multi-token-prediction modules).
int64_t moe_layers_in(const memest_model& m, int64_t begin, int64_t end);
// Parameters of one multi-token-prediction module besides its decoder layer: enorm, hnorm and
// the shared head's norm (replicated), eh_proj 2h x h (sharded: a column-parallel linear in
// megatron/core/transformer/multi_token_prediction.py).
LayerParams mtp_extra_params(const memest_model& m);

// The typical layer: an MoE layer for an MoE model, else the dense layer.
LayerParams layer_params(const memest_model& m);

// Parameters outside the layers, split the same way.
struct EdgeParams {
  double word_embedding = 0;   // v*h, vocab-parallel (sharded)
  double embedding_extra = 0;  // learned positions + embedding norm (replicated)
  double lm_head = 0;          // v*h (+ bias v) when untied, sharded; 0 when tied
  double final_norm = 0;       // replicated
};
EdgeParams edge_params(const memest_model& m);

// One multi-token-prediction module (DeepSeek-V3): enorm, hnorm, eh_proj (2h x h), one decoder
// layer and the shared head's norm; its embedding and output head are the main model's.
double mtp_module_params(const memest_model& m, int64_t j);

memest_param_count count_parameters(const memest_model& m);
// The same from the model's edge and dense-layer parameters computed before (a plan keeps them
// once instead of recomputing them per stage).
memest_param_count count_parameters(const memest_model& m, const EdgeParams& edge,
                                    const LayerParams& dense_layer);

// Copies a std::string into a fixed char array, truncating, always NUL-terminated.
void copy_name(char (&dst)[64], const std::string& src);

}  // namespace memest
