// The C API (memest.h): argument checks, the exception barrier, thread-local errors, and the
// conversion between the caller's versioned structs (capi/versioned.hpp) and the core's
// requests (plan/requests.hpp). Every entry point funnels through guarded(), so no C++
// exception crosses the boundary, and out-parameters are written only after every check and
// the computation succeeded.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "capi/convert.hpp"
#include "capi/versioned.hpp"
#include "core/limits.hpp"
#include "core/enums.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "finetune/llmem.hpp"
#include "json/request.hpp"
#include "json/request_fields.hpp"
#include "model/gpu_profile.hpp"
#include "model/hf_config.hpp"
#include "model/model.hpp"
#include "model/presets.hpp"
#include "plan/requests.hpp"
#include "plan/stack.hpp"
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

using memest::capi::check_array;
using memest::capi::check_output;
using memest::capi::check_size;
using memest::capi::read_versioned;
using memest::capi::require;
using memest::capi::write_element;
using memest::capi::write_versioned;

// ---- defaults of the C structs, from the core's request types (plan/requests.hpp)

template <typename T>
T zeroed() {
  T value;
  std::memset(static_cast<void*>(&value), 0, sizeof value);
  value.struct_size = sizeof value;
  return value;
}

memest_model_states_request c_defaults(const memest::ModelStatesRequest& d) {
  auto c = zeroed<memest_model_states_request>();
  c.gpus = d.gpus;
  c.zero = d.zero;
  c.param_bytes = d.precision.param_bytes;
  c.grad_bytes = d.precision.grad_bytes;
  c.optimizer_bytes = d.precision.optimizer_bytes;
  return c;
}

memest_pretrain_request c_defaults(const memest::PretrainRequest& d) {
  auto c = zeroed<memest_pretrain_request>();
  // every field of the registry with a C member (json/request_fields.cpp): the layout, the
  // training block's scalars and the training stack
  memest::request_fields_to_c(d, c);
  // by hand: the precision (its JSON defaults differ: grad_dtype and optimizer_bytes derived),
  // the adapter and the borrowed pipeline_layout string
  c.param_bytes = d.precision.param_bytes;
  c.grad_bytes = d.precision.grad_bytes;
  c.optimizer_bytes = d.precision.optimizer_bytes;
  c.optimizer = d.precision.optimizer;
  // 1.3: LoRA / QLoRA
  c.adapter = d.adapter.type;
  c.lora_rank = d.adapter.rank;
  c.lora_alpha = d.adapter.alpha;
  c.lora_dropout = d.adapter.dropout;
  c.lora_targets = d.adapter.targets;
  c.adapter_bytes = d.adapter.bytes;
  c.double_quant = d.adapter.double_quant;
  c.quantize_lm_head = d.adapter.quantize_lm_head;
  c.pipeline_layout = nullptr;  // 1.7
  return c;
}

memest_layout c_defaults(const memest::Layout& d) {
  auto c = zeroed<memest_layout>();
  c.tp = d.tp, c.cp = d.cp, c.pp = d.pp, c.vpp = d.vpp;
  c.micro_batch = d.micro_batch;
  c.recompute = d.recompute;
  c.zero = d.zero;
  c.ep = d.ep;
  c.etp = d.etp;
  return c;
}

memest_search_request c_defaults(const memest::SearchRequest& d) {
  auto c = zeroed<memest_search_request>();
  c.max_tp = d.max_tp, c.max_cp = d.max_cp, c.max_pp = d.max_pp, c.max_vpp = d.max_vpp;
  c.max_micro_batch = d.max_micro_batch;
  c.recompute_mask = d.recompute_mask;
  c.zero_mask = d.zero_mask;
  c.tp_within_node = d.tp_within_node;
  c.include_oom = d.include_oom;
  c.uneven_pipeline = d.uneven_pipeline;
  c.max_ep = d.max_ep;
  c.fp8_options = d.fp8_options;
  c.compile_options = d.compile_options;
  c.max_oom_probability = d.max_oom_probability;
  return c;
}

memest_finetune_request c_defaults(const memest::FinetuneRequest& d) {
  auto c = zeroed<memest_finetune_request>();
  c.gpus = d.gpus;
  c.method = d.method;
  c.tp = d.tp;
  c.batch = d.batch;
  c.seq_len = d.seq_len;
  c.gradient_checkpointing = d.gradient_checkpointing;
  c.flash_attention = d.flash_attention;
  c.param_bytes = d.param_bytes;
  c.base_bytes = d.base_bytes;
  c.page_bytes = d.page_bytes;
  c.chunk_bytes = d.chunk_bytes;
  return c;
}

// Fills the first `size` bytes of *out with `defaults` (an _init function).
template <typename T>
void init_versioned(T* out, uint32_t size, const char* field, const T& defaults) {
  require(out, field);
  check_size<T>(size, field);
  std::memcpy(static_cast<void*>(out), &defaults, size);
  out->struct_size = size;
}

// ---- the caller's requests as the core's

memest_model read_model(const memest_model* m, const char* field) {
  if (!m) throw memest::Error(MEMEST_ERR_MISSING_FIELD, field, std::string(field) + ": missing (NULL)");
  return read_versioned(m, field, memest::default_model());
}

memest_gpu read_gpu(const memest_gpu* g, const char* field) {
  if (!g) throw memest::Error(MEMEST_ERR_MISSING_FIELD, field, std::string(field) + ": missing (NULL)");
  // An older caller's GPU (a smaller struct) filled from a preset lacks the fields appended
  // since: they take that preset's values (found by its name), not the generic defaults, so a
  // 1.0 caller's "a100-40gb" keeps the A100's HBM bandwidth and FP8 peak.
  memest_gpu defaults = memest::default_gpu();
  if (g->struct_size >= memest::capi::FirstLayout<memest_gpu>::size && g->struct_size < sizeof(memest_gpu)) {
    const std::size_t n = strnlen(g->name, sizeof g->name);
    const std::string name(g->name, n);
    for (const memest::GpuPreset& p : memest::gpu_presets()) {
      if (name == p.gpu.name) defaults = p.gpu;
    }
  }
  return read_versioned(g, field, defaults);
}

memest::Precision precision_of(double param, double grad, double optimizer) {
  memest::Precision p;
  p.param_bytes = param;
  p.grad_bytes = grad;
  p.optimizer_bytes = optimizer;
  return p;
}

memest::ModelStatesRequest to_core(const memest_model_states_request* request) {
  const memest::ModelStatesRequest d;
  const auto c = read_versioned(request, "request", c_defaults(d));
  memest::ModelStatesRequest r;
  r.model = read_model(c.model, "model");
  if (c.gpu) r.gpu = read_gpu(c.gpu, "gpu");
  r.gpus = c.gpus;
  r.zero = c.zero;
  r.precision = precision_of(c.param_bytes, c.grad_bytes, c.optimizer_bytes);
  return r;
}

memest::PretrainRequest to_core(const memest_pretrain_request* request, const char* field) {
  const memest::PretrainRequest d;
  const auto c = read_versioned(request, field, c_defaults(d));
  memest::PretrainRequest r;
  r.model = read_model(c.model, "model");
  r.gpu = read_gpu(c.gpu, "gpu");
  // the registry's fields (json/request_fields.cpp); the rest by hand, as in c_defaults
  memest::request_fields_from_c(c, r);
  r.precision = precision_of(c.param_bytes, c.grad_bytes, c.optimizer_bytes);
  r.precision.optimizer = c.optimizer;
  r.adapter.type = c.adapter;
  r.adapter.rank = c.lora_rank;
  r.adapter.alpha = c.lora_alpha;
  r.adapter.dropout = c.lora_dropout;
  r.adapter.targets = c.lora_targets;
  r.adapter.bytes = c.adapter_bytes;
  r.adapter.double_quant = c.double_quant;
  r.adapter.quantize_lm_head = c.quantize_lm_head;
  memest::resolve_grad_bytes(r);     // MEMEST_GRAD_BYTES_DERIVE: the framework's
  memest::resolve_adapter_bytes(r);  // MEMEST_ADAPTER_BYTES_DERIVE: the stack's
  if (c.pipeline_layout != nullptr) {
    // bounded: a layout longer than validate_fields' limit is refused without reading past it
    constexpr size_t kLongest = 65536;
    const size_t n = strnlen(c.pipeline_layout, kLongest + 1);
    r.pipeline_layout.assign(c.pipeline_layout, n);
  }
  return r;
}

std::vector<memest::Layout> read_layouts(const memest_layout* layouts, uint32_t count) {
  std::vector<memest::Layout> out;
  if (count == 0) return out;
  if (!layouts) {
    throw memest::Error(MEMEST_ERR_NULL_POINTER, "search.layouts",
                        "search.layouts: NULL with a non-zero count");
  }
  if (count > memest::kMaxShortlist) {
    memest::fail("search.layouts", "at most " + std::to_string(memest::kMaxShortlist) +
                                       " layouts, got " + std::to_string(count));
  }
  // Elements are layouts[0].struct_size bytes apart, and all of that size.
  const uint32_t stride = layouts[0].struct_size;
  check_size<memest_layout>(stride, "search.layouts[0]");
  // an array's elements are sizeof apart, a multiple of the struct's alignment: any other
  // stride would make every later element's int64 fields misaligned reads
  if (stride % alignof(memest_layout) != 0) {
    throw memest::Error(MEMEST_ERR_STRUCT_SIZE, "search.layouts[0].struct_size",
                        "search.layouts[0].struct_size: " + std::to_string(stride) +
                            " is not a multiple of the layout's alignment (" +
                            std::to_string(alignof(memest_layout)) +
                            "): elements of an array are sizeof(memest_layout) apart");
  }
  const memest::Layout d;
  out.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const auto* element = reinterpret_cast<const memest_layout*>(
        reinterpret_cast<const char*>(layouts) + static_cast<std::size_t>(i) * stride);
    const std::string at = "search.layouts[" + std::to_string(i) + "]";
    if (element->struct_size != stride) {
      throw memest::Error(MEMEST_ERR_STRUCT_SIZE, at + ".struct_size",
                          at + ".struct_size: differs from layouts[0] (" + std::to_string(stride) + ")");
    }
    const auto c = read_versioned(element, at, c_defaults(d));
    memest::Layout l;
    l.tp = c.tp, l.cp = c.cp, l.pp = c.pp, l.vpp = c.vpp;
    l.micro_batch = c.micro_batch;
    l.recompute = c.recompute;
    l.zero = c.zero;
    l.ep = c.ep;
    l.etp = c.etp;
    out.push_back(l);
  }
  return out;
}

memest::SearchRequest to_core(const memest_search_request* request) {
  const memest::SearchRequest d;
  const auto c = read_versioned(request, "request", c_defaults(d));
  memest::SearchRequest r;
  if (!c.base) throw memest::Error(MEMEST_ERR_MISSING_FIELD, "base", "base: missing (NULL)");
  r.base = to_core(c.base, "base");
  r.max_tp = c.max_tp, r.max_cp = c.max_cp, r.max_pp = c.max_pp, r.max_vpp = c.max_vpp;
  r.max_micro_batch = c.max_micro_batch;
  r.recompute_mask = c.recompute_mask;
  r.zero_mask = c.zero_mask;
  r.tp_within_node = c.tp_within_node;
  r.layouts = read_layouts(c.layouts, c.layout_count);
  r.include_oom = c.include_oom;
  r.uneven_pipeline = c.uneven_pipeline;
  r.max_ep = c.max_ep;
  r.fp8_options = c.fp8_options;
  r.compile_options = c.compile_options;
  r.max_oom_probability = c.max_oom_probability;
  return r;
}

memest::FinetuneRequest to_core(const memest_finetune_request* request) {
  const memest::FinetuneRequest d;
  const auto c = read_versioned(request, "request", c_defaults(d));
  memest::FinetuneRequest r;
  r.model = read_model(c.model, "model");
  r.gpu = read_gpu(c.gpu, "gpu");
  r.gpus = c.gpus;
  r.method = c.method;
  r.tp = c.tp;
  r.batch = c.batch;
  r.seq_len = c.seq_len;
  r.gradient_checkpointing = c.gradient_checkpointing;
  r.flash_attention = c.flash_attention;
  r.param_bytes = c.param_bytes;
  r.base_bytes = c.base_bytes;
  r.page_bytes = c.page_bytes;
  r.chunk_bytes = c.chunk_bytes;
  return r;
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

memest::PretrainRequest memest::capi::pretrain_request_to_core(
    const memest_pretrain_request* request) {
  return to_core(request, "request");
}

extern "C" {

uint32_t memest_version_number(void) { return MEMEST_VERSION_NUMBER; }
const char* memest_version_string(void) { return MEMEST_VERSION_STRING; }

/* ---- enumerations (core/enums) ---- */

uint32_t memest_enum_count(memest_enum which) { return memest::enum_table(which).count; }

const char* memest_enum_name(memest_enum which, int32_t value) {
  return memest::enum_name(which, value);
}

int32_t memest_enum_value(memest_enum which, const char* name) {
  if (!name) return -1;
  try {
    return memest::enum_value(which, name);
  } catch (...) {
    return -1;
  }
}

namespace {
const char* name_or_unknown(memest_enum which, int32_t value) {
  const char* name = memest::enum_name(which, value);
  return name ? name : "unknown";
}
}  // namespace

const char* memest_status_name(memest_status status) {
  return name_or_unknown(MEMEST_ENUM_STATUS, status);
}
const char* memest_verdict_name(memest_verdict verdict) {
  return name_or_unknown(MEMEST_ENUM_VERDICT, verdict);
}
const char* memest_prune_reason_name(memest_prune_reason reason) {
  return name_or_unknown(MEMEST_ENUM_PRUNE_REASON, reason);
}
const char* memest_finetune_method_name(memest_finetune_method method) {
  return name_or_unknown(MEMEST_ENUM_FINETUNE_METHOD, method);
}

double memest_verdict_limit(memest_verdict verdict) {
  return verdict == MEMEST_VERDICT_FITS    ? memest::kFitsFraction
         : verdict == MEMEST_VERDICT_TIGHT ? memest::kTightFraction
                                           : 0;
}

const char* memest_last_error(void) { return g_last_error.message.c_str(); }
const char* memest_last_error_field(void) { return g_last_error.field.c_str(); }
memest_status memest_last_error_code(void) { return g_last_error.status; }

/* ---- models ---- */

memest_status memest_model_init(memest_model* model, uint32_t struct_size) {
  return guarded([&] { init_versioned(model, struct_size, "model", memest::default_model()); });
}

memest_status memest_model_from_preset(const char* id, memest_model* model) {
  return guarded([&] {
    require(id, "id");
    check_output(model, "model");
    write_versioned(model, memest::find_model_preset(id, "model").model);
  });
}

memest_status memest_model_from_config_json(const char* config_json, memest_model* model) {
  return guarded([&] {
    require(config_json, "config_json");
    check_output(model, "model");
    const memest::json doc = memest::parse_document(config_json, "config_json");
    memest_model m = memest::model_from_json(doc, "model");
    memest::validate_model(m, "model", true);
    write_versioned(model, m);
  });
}

memest_status memest_model_validate(const memest_model* model) {
  return guarded([&] {
    memest::validate_model(read_model(model, "model"), "model", true);
  });
}

memest_status memest_model_parameter_count(const memest_model* model, memest_param_count* count) {
  return guarded([&] {
    const memest_model m = read_model(model, "model");
    check_output(count, "count");
    memest::validate_model(m, "model", true);
    write_versioned(count, memest::count_parameters(m));
  });
}

uint32_t memest_model_preset_count(void) { return preset_count(memest::model_presets); }

const char* memest_model_preset_id(uint32_t index) {
  return preset_id(memest::model_presets, index);
}

/* ---- GPUs ---- */

memest_status memest_gpu_init(memest_gpu* gpu, uint32_t struct_size) {
  return guarded([&] { init_versioned(gpu, struct_size, "gpu", memest::default_gpu()); });
}

memest_status memest_gpu_from_preset(const char* id, memest_gpu* gpu) {
  return guarded([&] {
    require(id, "id");
    check_output(gpu, "gpu");
    write_versioned(gpu, memest::find_gpu_preset(id, "gpu").gpu);
  });
}

uint32_t memest_gpu_preset_count(void) { return preset_count(memest::gpu_presets); }

const char* memest_gpu_preset_id(uint32_t index) { return preset_id(memest::gpu_presets, index); }

/* ---- model-states mode ---- */

memest_status memest_model_states_request_init(memest_model_states_request* request,
                                               uint32_t struct_size) {
  return guarded([&] {
    init_versioned(request, struct_size, "request", c_defaults(memest::ModelStatesRequest{}));
  });
}

memest_status memest_model_states(const memest_model_states_request* request,
                                  memest_model_states_result* result) {
  return guarded([&] {
    const memest::ModelStatesRequest r = to_core(request);
    check_output(result, "result");
    write_versioned(result, memest::compute_model_states(r));
  });
}

/* ---- pretraining mode ---- */

memest_status memest_pretrain_request_init(memest_pretrain_request* request, uint32_t struct_size) {
  return guarded([&] {
    init_versioned(request, struct_size, "request", c_defaults(memest::PretrainRequest{}));
  });
}

memest_status memest_pretrain(const memest_pretrain_request* request, memest_pretrain_result* result,
                              memest_stage* stages, uint32_t stage_size, uint32_t stage_capacity) {
  return guarded([&] {
    const memest::PretrainRequest r = to_core(request, "request");
    check_output(result, "result");
    check_array<memest_stage>(stages, stage_size, stage_capacity, "stages");
    // The core computes into its own buffer (at most pp stages); the caller's array is
    // written only after everything succeeded.
    const int64_t most = std::min<int64_t>({r.pp, r.model.num_hidden_layers, memest::kMaxLayers});
    std::vector<memest_stage> computed(
        static_cast<std::size_t>(std::max<int64_t>(0, std::min<int64_t>(stage_capacity, most))));
    const memest_pretrain_result out =
        memest::compute_pretrain(r, computed.data(), static_cast<uint32_t>(computed.size()));
    const uint32_t written = std::min<uint32_t>(static_cast<uint32_t>(computed.size()),
                                                static_cast<uint32_t>(out.stage_count));
    for (uint32_t i = 0; i < written; ++i) write_element(stages, stage_size, i, computed[i]);
    write_versioned(result, out);
  });
}

/* ---- layout search ---- */

memest_status memest_layout_init(memest_layout* layout, uint32_t struct_size) {
  return guarded([&] { init_versioned(layout, struct_size, "layout", c_defaults(memest::Layout{})); });
}

memest_status memest_search_request_init(memest_search_request* request, uint32_t struct_size) {
  return guarded([&] {
    init_versioned(request, struct_size, "request", c_defaults(memest::SearchRequest{}));
  });
}

memest_status memest_search(const memest_search_request* request, memest_search_result* result,
                            memest_search_entry* entries, uint32_t entry_size,
                            uint32_t entry_capacity, uint64_t* pruned, uint32_t pruned_capacity) {
  return guarded([&] {
    const memest::SearchRequest r = to_core(request);
    check_output(result, "result");
    check_array<memest_search_entry>(entries, entry_size, entry_capacity, "entries");
    if (pruned_capacity > 0) require(pruned, "pruned");
    const memest::SearchOutcome out = memest::run_search(r, entry_capacity);
    auto res = zeroed<memest_search_result>();
    res.candidates = out.candidates;
    res.evaluated = out.evaluated;
    for (uint64_t n : out.pruned) res.pruned_total += n;
    res.count = static_cast<uint32_t>(out.entries.size());
    res.ranked = out.ranked;
    res.tie_margin = out.tie_margin;
    for (std::size_t i = 0; i < out.entries.size(); ++i) {
      write_element(entries, entry_size, i, out.entries[i]);
    }
    for (uint32_t i = 0; i < pruned_capacity && i < out.pruned.size(); ++i) pruned[i] = out.pruned[i];
    write_versioned(result, res);
  });
}

/* ---- fine-tuning mode ---- */

memest_status memest_finetune_request_init(memest_finetune_request* request, uint32_t struct_size) {
  return guarded([&] {
    init_versioned(request, struct_size, "request", c_defaults(memest::FinetuneRequest{}));
  });
}

memest_status memest_finetune(const memest_finetune_request* request, memest_finetune_result* result) {
  return guarded([&] {
    const memest::FinetuneRequest r = to_core(request);
    check_output(result, "result");
    write_versioned(result, memest::compute_finetune(r));
  });
}

memest_status memest_finetune_select(const memest_finetune_request* request,
                                     memest_finetune_choice* choice, memest_finetune_option* options,
                                     uint32_t option_size, uint32_t option_capacity) {
  return guarded([&] {
    const memest::FinetuneRequest r = to_core(request);
    check_output(choice, "choice");
    check_array<memest_finetune_option>(options, option_size, option_capacity, "options");
    const memest::FinetuneChoice c = memest::select_finetune_method(r);
    auto out = zeroed<memest_finetune_choice>();
    out.selected = c.selected;
    out.batch = c.batch;
    out.option_count = static_cast<uint32_t>(c.options.size());
    for (std::size_t i = 0; i < c.options.size() && i < option_capacity; ++i) {
      write_element(options, option_size, i, c.options[i]);
    }
    write_versioned(choice, out);
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
