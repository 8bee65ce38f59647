// Pretraining mode: per-GPU memory of every pipeline stage under DP x TP x PP x CP
// (4D paper, Eqs. 5-18), with the paper's Eq. 18 number kept apart as estimate_bytes.
// The layout checks and the Plan it walks live in plan/.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "memest/memest.h"
#include "plan/plan.hpp"

namespace memest {

// Memory of stage i. `cap` limits micro-batches in flight to those an iteration has.
memest_stage stage_memory(const Plan& plan, int64_t i, bool cap);
// The middle stages (1 .. pp-2) whose memory stands for all of them: the earliest of each shape
// (layers, MoE layers, hybrid mixers, MTP). They depend on the model and the pipeline split
// (plan.layers, pp, vpp) alone, so a search keeps them per split.
struct MiddleStages {
  static constexpr std::size_t kMax = 8;
  std::array<int64_t, kMax> stage{};
  std::size_t count = 0;
  int64_t all_from = 0;  // > 0: more shapes than kMax; every stage from this one is computed
};
MiddleStages middle_stages(const Plan& plan);

// The most loaded stage's peak_bytes, without allocating. It returns as soon as a stage's peak
// exceeds `stop_above` (a search that drops layouts over a limit needs no more): the value is
// then that stage's, a lower bound of the peak, and *peak_stage its index. `estimate_bytes`
// (when not null) receives stage_memory(plan, 0, false).total_bytes, the paper's estimate.
// `middle`: middle_stages(plan), when the caller has it (nullptr: computed here).
double peak_memory(const Plan& plan, int32_t* peak_stage,
                   double stop_above = std::numeric_limits<double>::infinity(),
                   double* estimate_bytes = nullptr, const MiddleStages* middle = nullptr);

// Validates the request (throws memest::Error naming the field), then computes the result
// and up to `stage_capacity` stages (full-size structs; the C API copies them out).
memest_pretrain_result compute_pretrain(const PretrainRequest& request, memest_stage* stages,
                                        uint32_t stage_capacity);

}  // namespace memest
