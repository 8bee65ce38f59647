// The C API (memest.h): argument checks, the exception barrier, thread-local errors.
// Every entry point funnels through guarded(), so no C++ exception crosses the boundary and
// out-parameters are written only after the computation succeeded.
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "core/error.hpp"
#include "core/units.hpp"
#include "finetune/llmem.hpp"
#include "json/request.hpp"
#include "model/gpu_profile.hpp"
#include "model/hf_config.hpp"
#include "model/model.hpp"
#include "model/presets.hpp"
#include "pretrain/pretrain.hpp"
#include "search/search.hpp"
#include "states/model_states.hpp"

namespace {

struct LastError {
  memest_status status = MEMEST_OK;
  std::string field;
  std::string message;
};

thread_local LastError g_last_error;

memest_status record(memest_status status, const std::string& field, const std::string& message) {
  try {
    g_last_error.status = status;
    g_last_error.field = field;
    g_last_error.message = message;
  } catch (...) {  // std::string allocation failed: keep the status at least
    g_last_error.field.clear();
    g_last_error.message.clear();
  }
  return status;
}

template <typename Fn>
memest_status guarded(Fn&& fn) {
  try {
    fn();
    g_last_error.status = MEMEST_OK;
    g_last_error.field.clear();
    g_last_error.message.clear();
    return MEMEST_OK;
  } catch (const memest::Error& e) {
    return record(e.status(), e.field(), e.what());
  } catch (const std::bad_alloc&) {
    return record(MEMEST_ERR_NO_MEMORY, "", "out of memory");
  } catch (const std::exception& e) {
    return record(MEMEST_ERR_INTERNAL, "", std::string("internal error: ") + e.what());
  } catch (...) {
    return record(MEMEST_ERR_INTERNAL, "", "internal error");
  }
}

void require(const void* p, const char* name) {
  if (!p) throw memest::Error(MEMEST_ERR_NULL_POINTER, name, std::string(name) + ": NULL pointer");
}

// Parses a JSON text argument (used by memest_model_from_config_json).
memest::json parse_argument(const char* text, const char* name) {
  try {
    return memest::json::parse(text);
  } catch (const memest::json::parse_error& e) {
    throw memest::Error(MEMEST_ERR_PARSE, "", std::string(name) + " is not valid JSON: " + e.what());
  }
}

char* duplicate(const std::string& s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (!out) return nullptr;
  std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

// Preset listing: never throws (the embedded data parses, or the count is 0).
template <typename Presets>
uint32_t preset_count(Presets& (*presets)()) {
  try {
    return static_cast<uint32_t>(presets().size());
  } catch (...) {
    return 0;
  }
}

template <typename Presets>
const char* preset_id(Presets& (*presets)(), uint32_t index) {
  try {
    const auto& p = presets();
    return index < p.size() ? p[index].id.c_str() : nullptr;
  } catch (...) {
    return nullptr;
  }
}

}  // namespace

extern "C" {

uint32_t memest_version_number(void) { return MEMEST_VERSION_NUMBER; }
const char* memest_version_string(void) { return MEMEST_VERSION_STRING; }

const char* memest_status_name(memest_status status) {
  switch (status) {
    case MEMEST_OK: return "ok";
    case MEMEST_ERR_INVALID_ARGUMENT: return "invalid_argument";
    case MEMEST_ERR_MISSING_FIELD: return "missing_field";
    case MEMEST_ERR_TYPE: return "wrong_type";
    case MEMEST_ERR_PARSE: return "parse_error";
    case MEMEST_ERR_UNKNOWN_PRESET: return "unknown_preset";
    case MEMEST_ERR_UNKNOWN_FIELD: return "unknown_field";
    case MEMEST_ERR_UNSUPPORTED: return "unsupported";
    case MEMEST_ERR_OVERFLOW: return "overflow";
    case MEMEST_ERR_STRUCT_SIZE: return "struct_size";
    case MEMEST_ERR_NULL_POINTER: return "null_pointer";
    case MEMEST_ERR_OUT_OF_RANGE: return "out_of_range";
    case MEMEST_ERR_NO_MEMORY: return "no_memory";
    case MEMEST_ERR_INTERNAL: return "internal";
  }
  return "unknown";
}

const char* memest_last_error(void) { return g_last_error.message.c_str(); }
const char* memest_last_error_field(void) { return g_last_error.field.c_str(); }
memest_status memest_last_error_code(void) { return g_last_error.status; }

const char* memest_verdict_name(memest_verdict verdict) {
  switch (verdict) {
    case MEMEST_VERDICT_FITS: return "fits";
    case MEMEST_VERDICT_TIGHT: return "tight";
    case MEMEST_VERDICT_OOM: return "oom";
    case MEMEST_VERDICT_UNKNOWN: return "unknown";
  }
  return "unknown";
}

/* ---- models ---- */

memest_status memest_model_init(memest_model* model) {
  return guarded([&] {
    require(model, "model");
    *model = memest::default_model();
  });
}

memest_status memest_model_from_preset(const char* id, memest_model* model) {
  return guarded([&] {
    require(id, "id");
    require(model, "model");
    *model = memest::find_model_preset(id, "model").model;
  });
}

memest_status memest_model_from_config_json(const char* config_json, memest_model* model) {
  return guarded([&] {
    require(config_json, "config_json");
    require(model, "model");
    const memest::json doc = parse_argument(config_json, "config_json");
    memest_model m = memest::model_from_json(doc, "model");
    memest::validate_model(m, "model", true);
    *model = m;
  });
}

memest_status memest_model_validate(const memest_model* model) {
  return guarded([&] {
    require(model, "model");
    memest::validate_model(*model, "model", true);
  });
}

memest_status memest_model_parameter_count(const memest_model* model, memest_param_count* count) {
  return guarded([&] {
    require(model, "model");
    require(count, "count");
    memest::validate_model(*model, "model", true);
    *count = memest::count_parameters(*model);
  });
}

uint32_t memest_model_preset_count(void) { return preset_count(memest::model_presets); }

const char* memest_model_preset_id(uint32_t index) {
  return preset_id(memest::model_presets, index);
}

/* ---- GPUs ---- */

memest_status memest_gpu_init(memest_gpu* gpu) {
  return guarded([&] {
    require(gpu, "gpu");
    *gpu = memest::default_gpu();
  });
}

memest_status memest_gpu_from_preset(const char* id, memest_gpu* gpu) {
  return guarded([&] {
    require(id, "id");
    require(gpu, "gpu");
    *gpu = memest::find_gpu_preset(id, "gpu").gpu;
  });
}

uint32_t memest_gpu_preset_count(void) { return preset_count(memest::gpu_presets); }

const char* memest_gpu_preset_id(uint32_t index) { return preset_id(memest::gpu_presets, index); }

/* ---- model-states mode ---- */

memest_status memest_model_states_request_init(memest_model_states_request* request) {
  return guarded([&] {
    require(request, "request");
    std::memset(request, 0, sizeof *request);
    request->struct_size = sizeof *request;
    request->model = memest::default_model();
    memest_gpu_init(&request->gpu);
    request->gpus = 1;
    request->zero = 0;
    const memest::Precision defaults;
    request->param_bytes = defaults.param_bytes;
    request->grad_bytes = defaults.grad_bytes;
    request->optimizer_bytes = defaults.optimizer_bytes;
  });
}

memest_status memest_model_states(const memest_model_states_request* request,
                                  memest_model_states_result* result) {
  return guarded([&] {
    require(request, "request");
    require(result, "result");
    *result = memest::compute_model_states(*request);
  });
}

/* ---- pretraining mode ---- */

memest_status memest_pretrain_request_init(memest_pretrain_request* request) {
  return guarded([&] {
    require(request, "request");
    std::memset(request, 0, sizeof *request);
    request->struct_size = sizeof *request;
    request->model = memest::default_model();
    memest_gpu_init(&request->gpu);
    request->gpus = 1;
    request->tp = request->cp = request->pp = request->vpp = 1;
    request->sequence_parallel = 1;
    request->zero = 1;
    request->seq_len = 2048;
    request->micro_batch = 1;
    request->global_batch = 0;
    request->recompute = MEMEST_RECOMPUTE_NONE;
    request->flash_attention = 1;
    request->activation_model = MEMEST_ACTIVATIONS_AUTO;
    const memest::Precision defaults;
    request->param_bytes = defaults.param_bytes;
    request->grad_bytes = defaults.grad_bytes;
    request->optimizer_bytes = defaults.optimizer_bytes;
  });
}

memest_status memest_pretrain(const memest_pretrain_request* request, memest_pretrain_result* result,
                              memest_stage* stages, uint32_t stage_capacity) {
  return guarded([&] {
    require(request, "request");
    require(result, "result");
    if (stage_capacity > 0) require(stages, "stages");
    *result = memest::compute_pretrain(*request, stages, stage_capacity);
  });
}

/* ---- layout search ---- */

const char* memest_prune_reason_name(memest_prune_reason reason) {
  switch (reason) {
    case MEMEST_PRUNE_OOM: return "oom";
    case MEMEST_PRUNE_TP_ACROSS_NODES: return "tp_across_nodes";
    case MEMEST_PRUNE_TP_HEADS: return "tp_heads";
    case MEMEST_PRUNE_TP_KV_HEADS: return "tp_kv_heads";
    case MEMEST_PRUNE_TP_FFN: return "tp_ffn";
    case MEMEST_PRUNE_GPUS: return "gpus_not_divisible";
    case MEMEST_PRUNE_PP_LAYERS: return "pp_exceeds_layers";
    case MEMEST_PRUNE_VPP: return "vpp_needs_pp";
    case MEMEST_PRUNE_LAYERS: return "layers_not_divisible";
    case MEMEST_PRUNE_CP_SEQUENCE: return "cp_sequence";
    case MEMEST_PRUNE_GLOBAL_BATCH: return "global_batch";
    case MEMEST_PRUNE_INTERLEAVED: return "interleaved_microbatches";
    case MEMEST_PRUNE_EQUIVALENT: return "equivalent";
    case MEMEST_PRUNE_REASON_COUNT: break;
  }
  return "unknown";
}

memest_status memest_search_request_init(memest_search_request* request) {
  return guarded([&] {
    require(request, "request");
    std::memset(request, 0, sizeof *request);
    request->struct_size = sizeof *request;
    memest_pretrain_request_init(&request->base);
    request->max_vpp = 4;
    request->recompute_mask = 7;  // none, selective, full
    request->zero_mask = 1u << 1; // the distributed optimizer
    request->tp_within_node = 1;
    request->uneven_pipeline = 1;
  });
}

memest_status memest_search(const memest_search_request* request, memest_search_result* result,
                            memest_search_entry* entries, uint32_t capacity) {
  return guarded([&] {
    require(request, "request");
    require(result, "result");
    memest_search_result out;
    memest::run_search(*request, out, entries, capacity);
    *result = out;
  });
}

/* ---- fine-tuning mode ---- */

const char* memest_finetune_method_name(memest_finetune_method method) {
  switch (method) {
    case MEMEST_FINETUNE_CDP: return "cdp";
    case MEMEST_FINETUNE_ZERO3: return "zero3";
    case MEMEST_FINETUNE_TP: return "tp";
    case MEMEST_FINETUNE_DP_TP: return "dp+tp";
    case MEMEST_FINETUNE_CPU_OFFLOAD: return "cpu_offload";
    case MEMEST_FINETUNE_AUTO: return "auto";
  }
  return "unknown";
}

memest_status memest_finetune_request_init(memest_finetune_request* request) {
  return guarded([&] {
    require(request, "request");
    std::memset(request, 0, sizeof *request);
    request->struct_size = sizeof *request;
    request->model = memest::default_model();
    memest_gpu_init(&request->gpu);
    request->gpus = 1;
    request->method = MEMEST_FINETUNE_CDP;
    request->tp = 0;
    request->batch = 1;
    request->seq_len = 512;  // LLMem's experiments
    request->gradient_checkpointing = 1;
    request->flash_attention = 0;
    request->param_bytes = 2;
    request->base_bytes = -1;  // the GPU's context_bytes
    request->page_bytes = 0;   // the GPU's page_bytes
    request->chunk_bytes = 0;  // search
  });
}

memest_status memest_finetune(const memest_finetune_request* request, memest_finetune_result* result) {
  return guarded([&] {
    require(request, "request");
    require(result, "result");
    *result = memest::compute_finetune(*request);
  });
}

memest_status memest_finetune_select(const memest_finetune_request* request,
                                     memest_finetune_choice* choice) {
  return guarded([&] {
    require(request, "request");
    require(choice, "choice");
    *choice = memest::select_finetune_method(*request);
  });
}

/* ---- JSON ---- */

memest_status memest_request_json(const char* request_json, char** response_json) {
  std::string response;
  memest_status status = guarded([&] {
    require(response_json, "response_json");
    require(request_json, "request_json");
    response = memest::answer_request(request_json);
  });
  if (!response_json) return status;
  if (status != MEMEST_OK) {
    try {
      response = memest::error_response(status, g_last_error.field, g_last_error.message);
    } catch (...) {
      return record(MEMEST_ERR_NO_MEMORY, "", "out of memory");
    }
  }
  char* copy = duplicate(response);
  if (!copy) return record(MEMEST_ERR_NO_MEMORY, "", "out of memory");
  *response_json = copy;
  return status;
}

void memest_string_free(char* string) { std::free(string); }

}  // extern "C"
