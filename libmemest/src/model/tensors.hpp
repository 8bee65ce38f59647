// The parameter tensors of a model, in module order, as a framework allocates them.
// LLMem rounds optimizer states per Embedding/Linear tensor and packs the rest into chunks,
// so it needs the tensors themselves, not only the total (LLMem Sec. 4.2).
#pragma once

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
};

// Every parameter tensor; their numels add up to count_parameters(m).total.
std::vector<Tensor> parameter_tensors(const memest_model& m);

}  // namespace memest
