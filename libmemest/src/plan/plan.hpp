// What every mode shares once a request is resolved: the layout checks, the split of the
// layers over pipeline stages, and the Plan the stage loop, the overhead model, the
// throughput model and the search all read. Depends on model/, activations/ and core/ only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "activations/activations.hpp"
#include "activations/mixer_activations.hpp"
#include "model/flops.hpp"
#include "model/hybrid.hpp"
#include "model/model.hpp"
#include "memest/memest.h"
#include "plan/requests.hpp"

namespace memest {

// Transformer layers per pipeline stage: `middle` = ceil(L / pp) everywhere, except that an
// uneven pipeline gives the first and the last stage fewer when pp does not divide L, or the
// request sets them (first_stage_layers, last_stage_layers). A custom layout
// (parallel.pipeline_layout) lists every virtual stage instead: `chunks` holds the decoder
// layers of chunk v*pp + r (Megatron's order: rank r's v-th model chunk), `chunk_begin` the
// index of its first layer and `rank` each rank's total; all three are empty otherwise (the
// search never sets a layout string, so its candidates stay allocation-free).
struct StageLayers {
  int64_t first = 0, middle = 0, last = 0;
  std::vector<int64_t> chunks, chunk_begin, rank;
  // The rank holding the multi-token-prediction modules (a layout's 'm'); -1: the last.
  int64_t mtp_rank = -1;
  int64_t mtp_stage(int64_t pp) const { return mtp_rank >= 0 ? mtp_rank : pp - 1; }
  int64_t of(int64_t stage, int64_t pp) const {
    if (!rank.empty()) return rank[static_cast<size_t>(stage)];
    return stage == 0 ? first : stage == pp - 1 ? last : middle;
  }
};
// False when the layers cannot be split so (pp*vpp must then divide them). Uneven (Llama 3's
// 405B, DeepSeek-V3's 61 layers): stages of ceil(L/pp) layers, the first and the last give up
// the shortfall between them, the first the larger half (it holds the embedding, the last the
// loss); without interleaving.
bool split_layers(int64_t layers, int64_t pp, int64_t vpp, bool uneven, StageLayers& out);
// Megatron-LM's --pipeline-model-parallel-layout string
// (megatron/core/transformer/pipeline_parallel_layer_layout.py parse_str_to_list): virtual
// stages separated by '|', each a run of E (embedding), t (decoder layer), m (MTP layer) and
// L (loss); "(...)*n" and "x*n" repeat, commas are cosmetic. Fills out.chunks, chunk_begin and
// rank for pp ranks, and `vpp` with the virtual stages per rank. On a layout Megatron would
// refuse (or one memest cannot model) it returns false with the reason in `why`.
bool parse_pipeline_layout(const std::string& layout, int64_t pp, int64_t layers,
                           int64_t mtp_layers, StageLayers& out, int64_t& vpp, std::string& why);
// torchtitan's split of a pipeline into pp*vpp chunks when they do not divide the layers
// (torchtitan/distributed/pipeline_parallel.py: chunks of ceil(L/(pp*vpp)) layers, the first and
// the last chunk lighter, where the embedding and the output layer sit): every rank holds
// vpp full chunks but the first and the last, which give up the shortfall between them
// (126 layers over pp 8 * vpp 2: 15, 16, ..., 16, 15).
bool split_chunks_unevenly(int64_t layers, int64_t pp, int64_t vpp, StageLayers& out);

// The activation-side terms of the training stacks beside Megatron that do not depend on the
// stage (activations/stack_activations.hpp), resolved once per plan (zero under megatron with
// its fused loss, whose numbers are the 4D paper's).
struct StackLayerTerms {
  double plain_layer = 0;     // one block keeping everything, one micro-batch (an MoE
                              // model's MoE block)
  double plain_dense_layer = 0;  // an MoE model's dense block (first dense layers, a layer
                                 // step); plain_layer for a dense model
  double moe_routed = 0;      // of plain_layer, the router and the routed experts' saved
                              // tensors (an MoE block's experts part; 0 for a dense model)
  double kept_layer = 0;      // what a checkpointed block keeps
  double recompute = 0;       // the recomputation working set, once per stage
  double loss = 0;            // the loss's peak on the last stage, one micro-batch
  bool checkpointing = false;
  bool autocast = false;      // fp32 parameters under torch.autocast: bf16 weight copies
  BlockShares shares;         // a dense block's attention, MLP and one norm (hybrid layers)
};

// The transformer layers (by 0-based index) stage i holds and how many of them are MoE
// layers: the stage's consecutive layers, or with vpp > 1 its vpp model chunks
// (chunk j*pp + i of L/(pp*vpp) layers, Megatron's interleaved assignment).
int64_t stage_moe_layers(const memest_model& m, const StageLayers& layers, int64_t pp,
                         int64_t vpp, int64_t stage);
// How the same layers differ from attention + MLP layers (a hybrid model's; empty otherwise).
LayerMix stage_layer_mix(const memest_model& m, const StageLayers& layers, int64_t pp,
                         int64_t vpp, int64_t stage);

// Everything the stage loop needs, validated and converted once.
struct Plan {
  const memest_model* model;
  const memest_gpu* gpu;  // device profile (overhead model)
  int64_t tp, cp, pp, vpp, dp;
  StageLayers layers;
  int64_t num_microbatches;  // 0 = not known (global batch not given)
  Precision precision;  // optimizer_bytes resolved (K, master included)
  int zero;             // the ZeRO stage the framework runs (plan/stack.hpp effective_zero)
  Stack stack;
  Adapter adapter;  // LoRA / QLoRA (type NONE: full training)
  int32_t framework = MEMEST_FRAMEWORK_MEGATRON;
  int32_t loss = MEMEST_LOSS_FUSED;  // resolved
  StackLayerTerms stack_terms;
  // The model's parameters, counted once per plan (model/model.hpp): the stage loop and the
  // throughput model read them instead of recounting per stage.
  LayerParams dense_layer;
  EdgeParams edge;
  memest_param_count param_count;
  ModelFlops flops;  // model/flops.hpp
  MoeLayerParts moe_parts;  // one MoE layer's parameters (zero for a dense model)
  ActivationLayout layout;
  ActivationCoefficients coefficients;
  memest_activation_model activation_model;
  // Expert parallelism (Megatron-Core folding: expert layers use etp x ep x edp x pp over the
  // same GPUs as tp x cp x dp x pp); 1, 1, dp*cp... for a dense model.
  int64_t ep = 1, etp = 1, edp = 1;
  double moe_capacity_factor = 0;  // 0: drop-less
};

// Whether the plan trains the model's multi-token-prediction modules: Megatron-Core builds
// them (multi_token_prediction.py); the other stacks train the main model only (transformers'
// DeepseekV3ForCausalLM does not build the checkpoint's MTP layer, and torchtitan's flavors set
// num_mtp_layers 0 unless its experimental MTP is configured).
inline bool trains_mtp(const Plan& plan) {
  return plan.model->mtp_layers > 0 && plan.framework == MEMEST_FRAMEWORK_MEGATRON;
}

// Whether DistributedDataParallel wraps the model: with more than one data-parallel rank, or
// on one process when the request says so (training.ddp); a bucket size alone does not.
inline bool ddp_wrapped(const Plan& plan) {
  return plan.stack.ddp == -1 ? plan.dp > 1 : plan.stack.ddp == 1;
}

// The stage-independent activation terms of the training stack of a plan whose other fields
// are set (make_plan_unchecked calls it).
StackLayerTerms stack_layer_terms(const Plan& plan);

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
  // appended with expert parallelism
  EpExperts,      // ep does not divide num_experts
  ExpertGpus,     // etp * ep * pp does not divide the GPUs (no integer expert data-parallel size)
  EtpFfn,         // etp does not divide moe_intermediate_size
  MoeNeedsSp,     // MoE with tp > 1 and no sequence parallelism
  LastStageLayers,  // first/last_stage_layers leave a rest the other stages cannot split evenly
  PipelineLayout,   // pipeline_layout does not describe pp x vpp stages of this model
  // appended with hybrid models
  TpMixer,          // tp does not divide the Mamba-2 heads and groups or the DeltaNet heads
  CpMixer,          // context parallelism over mixers the stack cannot split by sequence
  CpMixerHeads,     // tp * cp does not divide the mixer heads Megatron's CP all-to-all splits
};
struct LayoutCheck {
  StageLayers layers;
  double model_parallel = 0;  // tp * cp * pp
  int64_t dp = 0;
  int64_t num_microbatches = 0;
  int64_t etp = 1, edp = 1;  // the expert tensor-parallel and data-parallel sizes
};
// Checks the layout of a request whose fields are each in range. Allocation-free, and free
// of overflow for every in-range field (products are formed in double or checked first).
LayoutIssue check_layout(const PretrainRequest& r, LayoutCheck& out);
// "tp_heads", "global_batch", ... ("none" for None).
const char* layout_issue_name(LayoutIssue issue);

// Validates the precision ("<prefix>.param_dtype", ...) and a ZeRO stage.
// `allow_derive`: optimizer_bytes may be MEMEST_OPTIMIZER_BYTES_DERIVE (pretraining, search).
void validate_precision(const Precision& p, const char* prefix, bool allow_derive = false);
void validate_zero(int zero, const char* field);
// Validates ep (>= 1) and etp (0 = tp, >= 1) as "<at>.ep" / "<at>.etp": above 1 only for a
// mixture-of-experts model.
void validate_expert_fields(const memest_model& m, int64_t ep, int64_t etp, const std::string& at);
// Validates every field but the layout's consistency (throws memest::Error naming the field).
void validate_fields(const PretrainRequest& r);
// Validates everything (throws memest::Error naming the field) and prepares the stage loop.
// The Plan points into `r`, which must outlive it.
Plan make_plan(const PretrainRequest& r);
// What a plan takes from the request's model alone, whatever the layout: the search computes
// it once for all its candidates instead of once per candidate.
struct ModelTerms {
  LayerParams dense_layer;
  EdgeParams edge;
  memest_param_count param_count;
  memest_activation_model activation_model;  // resolved (never AUTO)
  ActivationCoefficients coefficients;
  ModelFlops flops;
  MoeLayerParts moe_parts;  // one MoE layer's (zero for a dense model)
};
ModelTerms model_terms(const PretrainRequest& r);
// Plan for a layout already known to pass check_layout, of a request validated before.
Plan make_plan_unchecked(const PretrainRequest& r, const LayoutCheck& check,
                         const ModelTerms& terms);
Plan make_plan_unchecked(const PretrainRequest& r, const LayoutCheck& check);

}  // namespace memest
