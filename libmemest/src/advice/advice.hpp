// What a user can act on when a pretraining run is tight or out of memory: the parts that
// dominate the most loaded stage, and concrete changes that would fit — one setting at a time
// (full recomputation, ZeRO-3, micro-batch 1, sequence parallelism, more GPUs; with an adapter
// also parameter offloading, bf16 adapters and QLoRA's double quantisation), two of those
// together when no single one fits, and the fastest layouts the search finds on the same GPUs.
// Every figure comes from the same estimator.
#pragma once

#include <string>
#include <vector>

#include "memest/memest.h"
#include "plan/requests.hpp"

namespace memest {

struct Part {
  const char* name;  // "weights", "gradients", "optimizer", "activations", "fragmentation", ...
  double bytes;
};
// The parts of a stage's peak, largest first (overheads by name; negative corrections left out).
std::vector<Part> dominant_parts(const memest_stage& stage);

struct Suggestion {
  std::string change;        // "recompute full", "ZeRO-3", "tp 8, pp 2, ...": what to change
  PretrainRequest request;   // the request with the change applied
  double peak_bytes = 0;
  int32_t peak_verdict = MEMEST_VERDICT_UNKNOWN;
  double tflops_per_gpu = 0;  // 0 when no global batch or GPU peak is known
  double host_bytes = 0;      // host memory the change needs (offloading), per GPU
};
// Up to `max` changes of a validated request that are predicted to fit (peak verdict fits),
// single settings first (least memory first), then the search's fastest layouts.
std::vector<Suggestion> suggest(const PretrainRequest& request, std::size_t max);

}  // namespace memest
