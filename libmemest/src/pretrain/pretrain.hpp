// Pretraining mode: per-GPU memory of every pipeline stage under DP x TP x PP x CP
// (4D paper, Eqs. 5-18), with the paper's Eq. 18 number kept apart as estimate_bytes.
#pragma once

#include "memest/memest.h"
#include "pretrain/activations.hpp"
#include "states/model_states.hpp"

namespace memest {

// Everything the stage loop needs, validated and converted once.
// Transformer layers per pipeline stage: `middle` = ceil(L / pp) everywhere, except that an
// uneven pipeline gives the first and then the last stage one layer fewer when pp does not
// divide L (at most one each).
struct StageLayers {
  int64_t first = 0, middle = 0, last = 0;
  int64_t of(int64_t stage, int64_t pp) const {
    return stage == 0 ? first : stage == pp - 1 ? last : middle;
  }
};
// False when the layers cannot be split so (pp*vpp must then divide them).
bool split_layers(int64_t layers, int64_t pp, int64_t vpp, bool uneven, StageLayers& out);

struct Plan {
  const memest_model* model;
  const memest_gpu* gpu;  // device profile (overhead model)
  int64_t tp, cp, pp, vpp, dp;
  StageLayers layers;
  int64_t num_microbatches;  // 0 = not known (global batch not given)
  Precision precision;
  int zero;
  ActivationLayout layout;
  ActivationCoefficients coefficients;
  memest_activation_model activation_model;
};

// Why a layout cannot run (the same checks make_plan reports as errors). The search counts
// these instead of throwing.
enum class LayoutIssue {
  None,
  TpHeads,
  TpKvHeads,
  TpFfn,
  GpusNotDivisible,
  PpExceedsLayers,
  VppNeedsPp,
  LayersNotDivisible,
  CpSequence,
  SequenceTooLong,
  GlobalBatch,
  InterleavedMicrobatches,
};
struct LayoutCheck {
  StageLayers layers;
  double model_parallel = 0;  // tp * cp * pp
  int64_t dp = 0;
  int64_t num_microbatches = 0;
};
// Checks the layout of a request whose fields are each in range. Allocation-free.
LayoutIssue check_layout(const memest_pretrain_request& r, LayoutCheck& out);
const char* layout_issue_name(LayoutIssue issue);

// Validates every field but the layout's consistency (throws memest::Error naming the field).
void validate_fields(const memest_pretrain_request& r);
// Validates everything (throws memest::Error naming the field) and prepares the stage loop.
Plan make_plan(const memest_pretrain_request& r);
// Plan for a layout already known to pass check_layout, of a request validated before.
Plan make_plan_unchecked(const memest_pretrain_request& r, const LayoutCheck& check);

// Memory of stage i. `cap` limits micro-batches in flight to those an iteration has.
memest_stage stage_memory(const Plan& plan, int64_t i, bool cap);
// The most loaded stage's peak_bytes (first, second or last stage), without allocating.
double peak_memory(const Plan& plan, int32_t* peak_stage);

// Validates the request (throws memest::Error naming the field), then computes the result
// and up to `stage_capacity` stages.
memest_pretrain_result compute_pretrain(const memest_pretrain_request& request,
                                        memest_stage* stages, uint32_t stage_capacity);

}  // namespace memest
