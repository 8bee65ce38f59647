// The parameter tensors of a model, in module order, as a framework allocates them.
// LLMem rounds optimizer states per Embedding/Linear tensor and packs the rest into chunks,
// so it needs the tensors themselves, not only the total (LLMem Sec. 4.2).
#pragma once

#include <cstdint>
#include <vector>

#include "memest/memest.h"

namespace memest {

enum class TensorKind {
  WordEmbedding,      // v x h, kept outside the chunks by LLMem (embed_p)
  PositionEmbedding,  // learned positions: an Embedding operator inside the chunks
  Linear,             // a weight matrix
  Bias,
  Norm,               // LayerNorm / RMSNorm weight or bias
  LmHead,             // untied LM head weight (or its bias): LLMem's lm_p
};

struct Tensor {
  TensorKind kind;
  double numel;
  int64_t layer = -1;  // the transformer layer it belongs to; -1: embeddings, final norm, head
};

// Every parameter tensor; their numels add up to count_parameters(m).total.
std::vector<Tensor> parameter_tensors(const memest_model& m);

}  // namespace memest
