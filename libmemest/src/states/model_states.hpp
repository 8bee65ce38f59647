// Model-state memory: weights, gradients and optimizer states per GPU under ZeRO.
// ZeRO paper / lecture Table 1: stage 1 (P_os) shards the optimizer, stage 2 (P_os+g) also
// the gradients, stage 3 (P_os+g+p) also the weights, each over the data-parallel group.
#pragma once

#include "memest/memest.h"
#include "plan/requests.hpp"

namespace memest {

struct StateBytes {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double total() const { return weights + gradients + optimizer; }
};

// Bytes per GPU for `params` parameters (already divided by TP/PP where they apply),
// with ZeRO stage `zero` sharding over `shard_group` ranks (d, or d*c for the
// distributed optimizer with context parallelism: 4D paper Eq. 10).
StateBytes state_bytes(double params, const Precision& precision, int zero, double shard_group);

// The model-states mode behind memest_model_states.
memest_model_states_result compute_model_states(const ModelStatesRequest& request);

}  // namespace memest
