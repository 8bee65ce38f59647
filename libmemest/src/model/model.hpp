// Model dimensions → parameter counts. The Llama counts follow the 4D paper
// (Eqs. 1-3: attention 2h^2(1 + k/a), FFN 3h*h_ffn, 2h of RMSNorm per layer); the GPT
// family adds LayerNorm and linear biases, learned positions and 2-matrix MLPs.
#pragma once

#include <string>

#include "core/limits.hpp"
#include "memest/memest.h"

namespace memest {

// Default-filled model (Llama conventions, all sizes 0).
memest_model default_model();

bool is_bare_count(const memest_model& m);
int64_t head_dim(const memest_model& m);

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
LayerParams layer_params(const memest_model& m);

// Parameters outside the layers, split the same way.
struct EdgeParams {
  double word_embedding = 0;   // v*h, vocab-parallel (sharded)
  double embedding_extra = 0;  // learned positions + embedding norm (replicated)
  double lm_head = 0;          // v*h (+ bias v) when untied, sharded; 0 when tied
  double final_norm = 0;       // replicated
};
EdgeParams edge_params(const memest_model& m);

memest_param_count count_parameters(const memest_model& m);

// Copies a std::string into a fixed char array, truncating, always NUL-terminated.
void copy_name(char (&dst)[64], const std::string& src);

}  // namespace memest
