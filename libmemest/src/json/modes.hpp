// Pieces of the JSON contract shared by the modes (json/*_json.cpp) and json/request.cpp,
// which dispatches on "mode". Internal to the library.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/enums.hpp"
#include "core/json_fields.hpp"
#include "memest/memest.h"
#include "plan/requests.hpp"

namespace memest {

// Responses keep their fields in the order written ("ok" first), for people reading them.
using ojson = nlohmann::ordered_json;

// ---- reading requests
double dtype_bytes(const JsonFields& f, const char* key, double fallback);
// `derive`: leave K to be derived from the optimizer and the framework (pretraining, search)
// unless "optimizer_bytes" is given; else K by the ZeRO paper (model states).
void read_precision(const JsonFields& f, Precision& precision, bool derive);
const json& require_object_field(const JsonFields& f, const char* key);
// The object at `key` of `top` (an empty one when absent), to read with JsonFields.
const json& block(const JsonFields& top, const char* key);
// An enum value by its library name (core/enums), with the choices listed on a bad name.
std::optional<int32_t> enum_field(const JsonFields& f, const char* key, memest_enum which);

// The keys of the training block; each mode accepts a subset (kPretrainTraining for
// pretraining and the search, which pins what it is given).
constexpr const char* kPretrainTraining[] = {
    "seq_len", "micro_batch", "global_batch", "recompute", "flash_attention",
    "activation_model", "param_dtype", "grad_dtype", "optimizer", "optimizer_bytes",
    // the training stack (README "Training stack")
    "framework", "optimizer_in_backward", "recompute_every", "loss", "fp8", "compile", "offload",
    "buckets", "adapter",
    // mixture-of-experts routing
    "moe_capacity_factor",
    // the step-time model (1.5)
    "comm_overlap", "moe_dispatcher", "attention_kernel",
    // the precision policy and the loss beside the stored dtypes (1.6)
    "reduce_dtype", "loss_parallel", "autocast", "fp8_all_gather", "no_sync", "logits_held",
    // DDP on one process (1.7)
    "ddp",
    // the chunked losses' chunks, FSDP1's mixed flat parameters (1.9)
    "loss_chunks", "fsdp_use_orig_params",
    // NVFP4 linears (1.9)
    "fp4",
    // Megatron-Core's --recompute-modules (1.11)
    "recompute_modules",
    // Liger-Kernel in the Hugging Face blocks (1.12)
    "use_liger_kernel",
    // how the optimizer stores its states (1.15)
    "master_weights", "optimizer_state_dtype"};
struct TrainingGiven {
  bool micro_batch = false;
  bool recompute = false;
};
// Reads the training block of any mode into `r`, refusing keys outside `allowed`.
template <std::size_t N>
TrainingGiven read_training(const JsonFields& top, PretrainRequest& r,
                            const char* const (&allowed)[N]);
TrainingGiven read_training(const JsonFields& top, PretrainRequest& r, const char* const* allowed,
                            std::size_t count);
template <std::size_t N>
TrainingGiven read_training(const JsonFields& top, PretrainRequest& r,
                            const char* const (&allowed)[N]) {
  return read_training(top, r, allowed, N);
}

// Reads training.adapter (README "LoRA and QLoRA"); `model` expands the target "all-linear".
void read_adapter(const json& object, Adapter& a, const memest_model& model);

// ---- writing responses
const char* family_name(int32_t family);
const char* recompute_name(int32_t recompute);
const char* verdict_name(int32_t verdict);
ojson model_json(const memest_model& m);
ojson gpu_json(const memest_gpu& g);
// The overlap bits as names (memest_overlap), and a result's step breakdown by
// memest_step_part name (throughput/throughput.hpp).
ojson overlap_json(uint32_t bits);
// The names of the values whose bits (1u << value) are set, in value order.
ojson bit_names_json(memest_enum which, uint32_t bits);
// An enum value's library name, "unknown" out of range.
inline const char* enum_text(memest_enum which, int32_t v) {
  const char* name = enum_name(which, v);
  return name ? name : "unknown";
}
template <typename Result>
ojson throughput_json(const Result& r) {
  const double parts[] = {r.compute_seconds,   r.recompute_seconds, r.bubble_seconds,
                          r.tp_comm_seconds,   r.cp_comm_seconds,   r.dp_comm_seconds,
                          r.pp_comm_seconds,   r.ep_comm_seconds,   r.optimizer_seconds,
                          r.offload_seconds};
  static_assert(sizeof parts / sizeof parts[0] == MEMEST_STEP_PART_COUNT, "one per step part");
  ojson step = ojson::object();
  for (int32_t i = 0; i < MEMEST_STEP_PART_COUNT; ++i) {
    step[enum_name(MEMEST_ENUM_STEP_PART, i)] = parts[i];
  }
  return {{"step_seconds", r.step_seconds}, {"tokens_per_s", r.tokens_per_s},
          {"tflops_per_gpu", r.tflops_per_gpu}, {"mfu", r.mfu}, {"step", step}};
}

// ---- one function per mode: the request's fields in, the response document out
ojson pretrain_mode(const JsonFields& top);
// A pretrain request document as the core's request (validated when estimated); the
// throughput validator reads its measured cases with it.
PretrainRequest parse_pretrain_request(const JsonFields& top);
// The pretrain response of a parsed request (what mode "pretrain" answers); without
// `suggestions` a run that does not fit gets no "suggestions" (their layout search is skipped:
// launch import validates a request whose estimate it may not return).
ojson estimate_pretrain(const PretrainRequest& r, bool suggestions = true);
// Launch files in and out (json/launch_json.cpp): mode "import", mode "emit", and the
// search's emit of its best layout.
ojson import_mode(const JsonFields& top);
ojson emit_mode(const JsonFields& top);
ojson emit_for(const PretrainRequest& r, const std::string& format, const std::string& field);
ojson model_states_mode(const JsonFields& top);
ojson finetune_mode(const JsonFields& top);
ojson search_mode(const JsonFields& top);
ojson enums_mode(const JsonFields& top);

}  // namespace memest
