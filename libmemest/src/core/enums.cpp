#include "core/enums.hpp"

#include <cstring>

namespace memest {

namespace {

// Indexed by the enum's value; the header's *_COUNT constants must match (checked below).
constexpr const char* kStatus[] = {
    "ok",           "invalid_argument", "missing_field", "wrong_type",   "parse_error",
    "unknown_preset", "unknown_field",  "unsupported",   "overflow",     "struct_size",
    "null_pointer", "out_of_range",     "no_memory",     "internal"};
constexpr const char* kFamily[] = {"llama", "gpt"};
constexpr const char* kVerdict[] = {"fits", "tight", "oom", "unknown"};
constexpr const char* kRecompute[] = {"none", "selective", "full", "op_selective"};
constexpr const char* kActivationModel[] = {"auto", "llama", "gpt"};
constexpr const char* kPruneReason[] = {
    "oom",        "tp_across_nodes",    "tp_heads",     "tp_kv_heads",
    "tp_ffn",     "gpus_not_divisible", "pp_exceeds_layers", "vpp_needs_pp",
    "layers_not_divisible", "cp_sequence", "global_batch", "interleaved_microbatches",
    "equivalent", "framework", "ep_experts", "expert_gpus", "etp_ffn", "moe_needs_sp"};
constexpr const char* kFinetuneMethod[] = {"cdp", "zero3", "tp", "dp+tp", "cpu_offload", "auto"};
constexpr const char* kFramework[] = {"megatron", "fsdp", "deepspeed", "pytorch", "fsdp1"};
constexpr const char* kLoss[] = {"auto",    "fused",        "unfused",
                                 "chunked", "linear_fused", "unfused_16bit",
                                 "chunked_lm_head", "chunked_linear", "flash_attn"};
constexpr const char* kOptimizer[] = {"adam",         "adamw", "adamw_8bit", "paged_adamw_8bit",
                                      "sgd_momentum", "sgd", "adamw_foreach", "paged_adamw_32bit"};
constexpr const char* kAdapter[] = {"none", "lora", "qlora"};
// peft's module names for Llama-style models (the canonical names of README "LoRA and QLoRA")
constexpr const char* kLoraTarget[] = {"q_proj",   "k_proj",  "v_proj",  "o_proj",      "gate_proj",
                                       "up_proj",  "down_proj", "lm_head", "embed_tokens",
                                       "router",  "in_proj", "out_proj"};
constexpr const char* kCompile[] = {"none", "all", "model", "loss"};
constexpr const char* kOverlap[] = {"dp", "tp", "pp", "ep"};
constexpr const char* kMoeDispatcher[] = {"alltoall", "deepep"};
constexpr const char* kAttentionKernel[] = {"auto", "flash2", "fused", "triton"};
constexpr const char* kStepPart[] = {"compute", "recompute", "bubble",    "tp_comm",   "cp_comm",
                                     "dp_comm", "pp_comm",   "ep_comm", "optimizer", "offload"};
// Megatron-Core's own spellings (transformer_config.py recompute_modules)
constexpr const char* kRecomputeModule[] = {"core_attn", "moe_act", "layernorm", "mla_up_proj",
                                            "mlp",       "moe",     "shared_experts"};
constexpr const char* kMasterWeights[] = {"auto", "fp32", "bf16", "fp16", "remainder", "none"};

template <std::size_t N>
constexpr uint32_t count_of(const char* const (&)[N]) {
  return static_cast<uint32_t>(N);
}
static_assert(count_of(kStatus) == MEMEST_STATUS_COUNT, "memest_status names");
static_assert(count_of(kVerdict) == MEMEST_VERDICT_COUNT, "memest_verdict names");
static_assert(count_of(kRecompute) == MEMEST_RECOMPUTE_COUNT, "memest_recompute names");
static_assert(count_of(kActivationModel) == MEMEST_ACTIVATIONS_COUNT, "activation model names");
static_assert(count_of(kPruneReason) == MEMEST_PRUNE_REASON_COUNT, "prune reason names");
static_assert(count_of(kFinetuneMethod) == MEMEST_FINETUNE_METHOD_COUNT, "fine-tune method names");
static_assert(count_of(kFramework) == MEMEST_FRAMEWORK_COUNT, "framework names");
static_assert(count_of(kLoss) == MEMEST_LOSS_COUNT, "loss names");
static_assert(count_of(kOptimizer) == MEMEST_OPTIMIZER_COUNT, "optimizer names");
static_assert(count_of(kAdapter) == MEMEST_ADAPTER_COUNT, "adapter names");
static_assert(count_of(kLoraTarget) == MEMEST_LORA_TARGET_COUNT, "LoRA target names");
static_assert(count_of(kCompile) == MEMEST_COMPILE_COUNT, "compile names");
static_assert(count_of(kOverlap) == MEMEST_OVERLAP_COUNT, "overlap names");
static_assert(count_of(kMoeDispatcher) == MEMEST_MOE_DISPATCHER_COUNT, "MoE dispatcher names");
static_assert(count_of(kAttentionKernel) == MEMEST_ATTENTION_KERNEL_COUNT, "attention kernel names");
static_assert(count_of(kStepPart) == MEMEST_STEP_PART_COUNT, "step part names");
static_assert(count_of(kRecomputeModule) == MEMEST_RECOMPUTE_MODULE_COUNT, "recompute module names");
static_assert(count_of(kMasterWeights) == MEMEST_MASTER_COUNT, "master weights names");
static_assert(MEMEST_FAMILY_GPT + 1 == count_of(kFamily), "memest_family names");

}  // namespace

EnumTable enum_table(memest_enum which) {
  switch (which) {
    case MEMEST_ENUM_STATUS: return {kStatus, count_of(kStatus)};
    case MEMEST_ENUM_FAMILY: return {kFamily, count_of(kFamily)};
    case MEMEST_ENUM_VERDICT: return {kVerdict, count_of(kVerdict)};
    case MEMEST_ENUM_RECOMPUTE: return {kRecompute, count_of(kRecompute)};
    case MEMEST_ENUM_ACTIVATION_MODEL: return {kActivationModel, count_of(kActivationModel)};
    case MEMEST_ENUM_PRUNE_REASON: return {kPruneReason, count_of(kPruneReason)};
    case MEMEST_ENUM_FINETUNE_METHOD: return {kFinetuneMethod, count_of(kFinetuneMethod)};
    case MEMEST_ENUM_FRAMEWORK: return {kFramework, count_of(kFramework)};
    case MEMEST_ENUM_LOSS: return {kLoss, count_of(kLoss)};
    case MEMEST_ENUM_OPTIMIZER: return {kOptimizer, count_of(kOptimizer)};
    case MEMEST_ENUM_ADAPTER: return {kAdapter, count_of(kAdapter)};
    case MEMEST_ENUM_LORA_TARGET: return {kLoraTarget, count_of(kLoraTarget)};
    case MEMEST_ENUM_COMPILE: return {kCompile, count_of(kCompile)};
    case MEMEST_ENUM_OVERLAP: return {kOverlap, count_of(kOverlap)};
    case MEMEST_ENUM_STEP_PART: return {kStepPart, count_of(kStepPart)};
    case MEMEST_ENUM_MOE_DISPATCHER: return {kMoeDispatcher, count_of(kMoeDispatcher)};
    case MEMEST_ENUM_ATTENTION_KERNEL: return {kAttentionKernel, count_of(kAttentionKernel)};
    case MEMEST_ENUM_RECOMPUTE_MODULE: return {kRecomputeModule, count_of(kRecomputeModule)};
    case MEMEST_ENUM_MASTER_WEIGHTS: return {kMasterWeights, count_of(kMasterWeights)};
    case MEMEST_ENUM_COUNT: break;
  }
  return {nullptr, 0};
}

const char* enum_name(memest_enum which, int32_t value) {
  const EnumTable t = enum_table(which);
  if (value < 0 || static_cast<uint32_t>(value) >= t.count) return nullptr;
  return t.names[value];
}

int32_t enum_value(memest_enum which, const std::string& name) {
  const EnumTable t = enum_table(which);
  for (uint32_t i = 0; i < t.count; ++i) {
    if (name == t.names[i]) return static_cast<int32_t>(i);
  }
  return -1;
}

std::string enum_choices(memest_enum which) {
  const EnumTable t = enum_table(which);
  std::string out;
  for (uint32_t i = 0; i < t.count; ++i) {
    if (i > 0) out += i + 1 == t.count ? " or " : ", ";
    out += t.names[i];
  }
  return out;
}

}  // namespace memest
