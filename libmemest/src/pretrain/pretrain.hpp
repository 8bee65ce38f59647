// Pretraining mode: per-GPU memory of every pipeline stage under DP x TP x PP x CP
// (4D paper, Eqs. 5-18), with the paper's Eq. 18 number kept apart as estimate_bytes.
#pragma once

#include "memest/memest.h"

namespace memest {

// Validates the request (throws memest::Error naming the field), then computes the result
// and up to `stage_capacity` stages.
memest_pretrain_result compute_pretrain(const memest_pretrain_request& request,
                                        memest_stage* stages, uint32_t stage_capacity);

}  // namespace memest
