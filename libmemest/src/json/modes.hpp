// Pieces of the JSON contract shared by the modes (json/*_json.cpp) and json/request.cpp,
// which dispatches on "mode". Internal to the library.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

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
    "moe_capacity_factor"};
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

// Reads training.adapter (README "LoRA and QLoRA").
void read_adapter(const json& object, Adapter& a);

// ---- writing responses
const char* family_name(int32_t family);
const char* recompute_name(int32_t recompute);
const char* verdict_name(int32_t verdict);
ojson model_json(const memest_model& m);
ojson gpu_json(const memest_gpu& g);

// ---- one function per mode: the request's fields in, the response document out
ojson pretrain_mode(const JsonFields& top);
ojson model_states_mode(const JsonFields& top);
ojson finetune_mode(const JsonFields& top);
ojson search_mode(const JsonFields& top);
ojson enums_mode(const JsonFields& top);

}  // namespace memest
