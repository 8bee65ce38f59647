#include "json/request.hpp"

#include <cstdio>
#include <cstring>
#include <vector>

#include "core/units.hpp"
#include "model/gpu_profile.hpp"
#include "model/hf_config.hpp"
#include "model/model.hpp"
#include "finetune/llmem.hpp"
#include "model/presets.hpp"
#include "pretrain/pretrain.hpp"
#include "search/search.hpp"
#include "states/model_states.hpp"

namespace memest {

namespace {

// Responses keep their fields in the order written ("ok" first), for people reading them.
using ojson = nlohmann::ordered_json;

// ---- request side -------------------------------------------------------

double dtype_bytes(const JsonFields& f, const char* key, double fallback) {
  auto name = f.choice(key, {"fp32", "float32", "bf16", "bfloat16", "fp16", "float16", "fp8"});
  if (!name) return fallback;
  if (*name == "fp32" || *name == "float32") return 4;
  if (*name == "fp8") return 1;
  return 2;
}

void read_precision(const JsonFields& f, double& param, double& grad, double& optimizer) {
  param = dtype_bytes(f, "param_dtype", param);
  grad = dtype_bytes(f, "grad_dtype", grad);
  // K per optimizer (ZeRO paper Sec. 3.1): Adam keeps fp32 master weights, momentum and
  // variance (12); SGD with momentum master + momentum (8); plain SGD the master (4).
  if (auto o = f.choice("optimizer", {"adam", "adamw", "sgd_momentum", "sgd"})) {
    optimizer = (*o == "sgd") ? 4 : (*o == "sgd_momentum") ? 8 : 12;
  }
  if (auto k = f.number("optimizer_bytes", 0, 64)) optimizer = *k;
}

const json& require_object_field(const JsonFields& f, const char* key) {
  const json* v = f.object(key);
  if (!v) throw Error(MEMEST_ERR_MISSING_FIELD, f.path_of(key), f.path_of(key) + ": missing");
  return *v;
}

json empty_object() { return json::object(); }

memest_model_states_request parse_model_states(const JsonFields& top) {
  top.reject_unknown({"mode", "model", "gpu", "parallel", "training"});
  memest_model_states_request r;
  memest_model_states_request_init(&r);
  r.model = resolve_model(require_object_field(top, "model"), "model", true);
  if (const json* gpu = top.object("gpu")) r.gpu = resolve_gpu(*gpu, "gpu");
  const json none = empty_object();
  JsonFields parallel(top.object("parallel") ? *top.object("parallel") : none, "parallel");
  parallel.reject_unknown({"gpus", "zero"});
  r.gpus = parallel.integer_or("gpus", 1, 1, int64_t{1} << 24);
  r.zero = static_cast<int32_t>(parallel.integer_or("zero", 0, 0, 3));
  JsonFields training(top.object("training") ? *top.object("training") : none, "training");
  training.reject_unknown({"param_dtype", "grad_dtype", "optimizer", "optimizer_bytes"});
  read_precision(training, r.param_bytes, r.grad_bytes, r.optimizer_bytes);
  return r;
}

memest_pretrain_request parse_pretrain(const JsonFields& top) {
  top.reject_unknown({"mode", "model", "gpu", "parallel", "training"});
  memest_pretrain_request r;
  memest_pretrain_request_init(&r);
  r.model = resolve_model(require_object_field(top, "model"), "model", false);
  r.gpu = resolve_gpu(require_object_field(top, "gpu"), "gpu");
  const json none = empty_object();
  JsonFields parallel(top.object("parallel") ? *top.object("parallel") : none, "parallel");
  parallel.reject_unknown({"gpus", "tp", "cp", "pp", "vpp", "sp", "zero"});
  constexpr int64_t big = int64_t{1} << 40;  // real limits are checked by the estimator
  r.gpus = parallel.integer_or("gpus", r.gpus, -big, big);
  r.tp = parallel.integer_or("tp", r.tp, -big, big);
  r.cp = parallel.integer_or("cp", r.cp, -big, big);
  r.pp = parallel.integer_or("pp", r.pp, -big, big);
  r.vpp = parallel.integer_or("vpp", r.vpp, -big, big);
  if (auto sp = parallel.boolean("sp")) r.sequence_parallel = *sp;
  r.zero = static_cast<int32_t>(parallel.integer_or("zero", r.zero, 0, 3));
  JsonFields training(top.object("training") ? *top.object("training") : none, "training");
  training.reject_unknown({"seq_len", "micro_batch", "global_batch", "recompute",
                           "flash_attention", "activation_model", "param_dtype", "grad_dtype",
                           "optimizer", "optimizer_bytes"});
  r.seq_len = training.integer_or("seq_len", r.seq_len, -big, big);
  r.micro_batch = training.integer_or("micro_batch", r.micro_batch, -big, big);
  r.global_batch = training.integer_or("global_batch", r.global_batch, -big, big);
  if (auto rc = training.choice("recompute", {"none", "selective", "full"})) {
    r.recompute = *rc == "full" ? MEMEST_RECOMPUTE_FULL
                  : *rc == "selective" ? MEMEST_RECOMPUTE_SELECTIVE : MEMEST_RECOMPUTE_NONE;
  }
  if (auto fa = training.boolean("flash_attention")) r.flash_attention = *fa;
  if (auto am = training.choice("activation_model", {"auto", "llama", "gpt"})) {
    r.activation_model = *am == "llama" ? MEMEST_ACTIVATIONS_LLAMA
                         : *am == "gpt" ? MEMEST_ACTIVATIONS_GPT : MEMEST_ACTIVATIONS_AUTO;
  }
  read_precision(training, r.param_bytes, r.grad_bytes, r.optimizer_bytes);
  return r;
}

memest_finetune_request parse_finetune(const JsonFields& top) {
  top.reject_unknown({"mode", "model", "gpu", "parallel", "training", "finetune"});
  memest_finetune_request r;
  memest_finetune_request_init(&r);
  r.model = resolve_model(require_object_field(top, "model"), "model", false);
  r.gpu = resolve_gpu(require_object_field(top, "gpu"), "gpu");
  const json none = empty_object();
  constexpr int64_t big = int64_t{1} << 40;  // real limits are checked by the estimator
  JsonFields parallel(top.object("parallel") ? *top.object("parallel") : none, "parallel");
  parallel.reject_unknown({"gpus"});
  r.gpus = parallel.integer_or("gpus", r.gpus, -big, big);
  JsonFields training(top.object("training") ? *top.object("training") : none, "training");
  training.reject_unknown({"seq_len"});
  r.seq_len = training.integer_or("seq_len", r.seq_len, -big, big);
  JsonFields ft(top.object("finetune") ? *top.object("finetune") : none, "finetune");
  ft.reject_unknown({"method", "tp", "batch", "gradient_checkpointing", "flash_attention", "dtype",
                     "base_bytes", "page_bytes", "chunk_bytes"});
  if (auto m = ft.choice("method", {"cdp", "zero3", "tp", "dp+tp", "auto"})) {
    r.method = *m == "cdp" ? MEMEST_FINETUNE_CDP : *m == "zero3" ? MEMEST_FINETUNE_ZERO3
               : *m == "tp" ? MEMEST_FINETUNE_TP : *m == "dp+tp" ? MEMEST_FINETUNE_DP_TP
                                                                 : MEMEST_FINETUNE_AUTO;
  }
  r.tp = ft.integer_or("tp", r.tp, -big, big);
  r.batch = ft.integer_or("batch", r.batch, -big, big);
  if (auto gc = ft.boolean("gradient_checkpointing")) r.gradient_checkpointing = *gc;
  if (auto fa = ft.boolean("flash_attention")) r.flash_attention = *fa;
  ft.choice("dtype", {"fp16", "bf16"});  // both 2 bytes: LLMem's B16
  if (auto b = ft.number("base_bytes", 0, 1e13)) r.base_bytes = *b;
  if (auto p = ft.number("page_bytes", 1, 1e12)) r.page_bytes = *p;
  if (auto c = ft.number("chunk_bytes", 1, 1e13)) r.chunk_bytes = *c;
  return r;
}

int32_t recompute_value(const std::string& name) {
  return name == "full" ? MEMEST_RECOMPUTE_FULL
         : name == "selective" ? MEMEST_RECOMPUTE_SELECTIVE : MEMEST_RECOMPUTE_NONE;
}

// A search request: the pretrain fields (minus the layout) and a "search" object.
struct SearchRequest {
  memest_search_request request;
  std::vector<memest_layout> layouts;
  uint32_t top = 10;
};

SearchRequest parse_search(const JsonFields& top) {
  top.reject_unknown({"mode", "model", "gpu", "parallel", "training", "search"});
  SearchRequest out;
  memest_search_request& r = out.request;
  memest_search_request_init(&r);
  memest_pretrain_request& b = r.base;
  b.model = resolve_model(require_object_field(top, "model"), "model", false);
  b.gpu = resolve_gpu(require_object_field(top, "gpu"), "gpu");
  const json none = empty_object();
  constexpr int64_t big = int64_t{1} << 40;
  JsonFields parallel(top.object("parallel") ? *top.object("parallel") : none, "parallel");
  parallel.reject_unknown({"gpus", "sp"});
  b.gpus = parallel.integer_or("gpus", b.gpus, -big, big);
  if (auto sp = parallel.boolean("sp")) b.sequence_parallel = *sp;
  JsonFields training(top.object("training") ? *top.object("training") : none, "training");
  training.reject_unknown({"seq_len", "global_batch", "flash_attention", "activation_model",
                           "param_dtype", "grad_dtype", "optimizer", "optimizer_bytes"});
  b.seq_len = training.integer_or("seq_len", b.seq_len, -big, big);
  b.global_batch = training.integer_or("global_batch", b.global_batch, -big, big);
  if (auto fa = training.boolean("flash_attention")) b.flash_attention = *fa;
  if (auto am = training.choice("activation_model", {"auto", "llama", "gpt"})) {
    b.activation_model = *am == "llama" ? MEMEST_ACTIVATIONS_LLAMA
                         : *am == "gpt" ? MEMEST_ACTIVATIONS_GPT : MEMEST_ACTIVATIONS_AUTO;
  }
  read_precision(training, b.param_bytes, b.grad_bytes, b.optimizer_bytes);

  JsonFields f(top.object("search") ? *top.object("search") : none, "search");
  f.reject_unknown({"top", "layouts", "max_tp", "max_cp", "max_pp", "max_vpp", "max_micro_batch",
                    "recompute", "zero", "tp_within_node", "include_oom"});
  out.top = static_cast<uint32_t>(f.integer_or("top", 10, 1, 10000));
  r.max_tp = f.integer_or("max_tp", 0, -big, big);
  r.max_cp = f.integer_or("max_cp", 0, -big, big);
  r.max_pp = f.integer_or("max_pp", 0, -big, big);
  r.max_vpp = f.integer_or("max_vpp", r.max_vpp, -big, big);
  r.max_micro_batch = f.integer_or("max_micro_batch", 0, -big, big);
  if (auto w = f.boolean("tp_within_node")) r.tp_within_node = *w;
  if (auto o = f.boolean("include_oom")) r.include_oom = *o;
  if (const json* list = f.object("recompute")) {
    if (!list->is_array()) {
      throw Error(MEMEST_ERR_TYPE, "search.recompute",
                  "search.recompute: expected a list such as [\"none\", \"selective\"]");
    }
    r.recompute_mask = 0;
    for (std::size_t i = 0; i < list->size(); ++i) {
      const json wrapper = {{"v", (*list)[i]}};
      auto v = JsonFields(wrapper, "search.recompute[" + std::to_string(i) + "]")
                   .choice("v", {"none", "selective", "full"});
      r.recompute_mask |= 1u << recompute_value(*v);
    }
  }
  if (const json* list = f.object("zero")) {
    if (!list->is_array()) throw Error(MEMEST_ERR_TYPE, "search.zero", "search.zero: expected a list such as [1, 3]");
    r.zero_mask = 0;
    for (const json& z : *list) {
      if (!z.is_number_integer() || z.get<int64_t>() < 0 || z.get<int64_t>() > 3) {
        fail("search.zero", "stages must be integers 0..3, got " + z.dump());
      }
      r.zero_mask |= 1u << z.get<int>();
    }
  }
  if (const json* list = f.object("layouts")) {
    if (!list->is_array()) throw Error(MEMEST_ERR_TYPE, "search.layouts", "search.layouts: expected a list of layouts");
    for (std::size_t i = 0; i < list->size(); ++i) {
      JsonFields l((*list)[i], "search.layouts[" + std::to_string(i) + "]");
      l.reject_unknown({"tp", "cp", "pp", "vpp", "micro_batch", "recompute", "zero"});
      memest_layout layout;
      layout.tp = l.integer_or("tp", 1, 1, int64_t{1} << 24);
      layout.cp = l.integer_or("cp", 1, 1, int64_t{1} << 24);
      layout.pp = l.integer_or("pp", 1, 1, int64_t{1} << 24);
      layout.vpp = l.integer_or("vpp", 1, 1, 100000);
      layout.micro_batch = l.integer_or("micro_batch", 1, 1, int64_t{1} << 20);
      layout.recompute = recompute_value(l.choice("recompute", {"none", "selective", "full"}).value_or("none"));
      layout.zero = static_cast<int32_t>(l.integer_or("zero", 1, 0, 3));
      out.layouts.push_back(layout);
    }
    if (out.layouts.empty()) fail("search.layouts", "is empty");
  }
  return out;
}

// ---- response side ------------------------------------------------------

const char* family_name(int32_t family) { return family == MEMEST_FAMILY_GPT ? "gpt" : "llama"; }

ojson model_json(const memest_model& m) {
  const memest_param_count c = count_parameters(m);
  ojson j = {{"name", m.name}, {"num_parameters", c.total}};
  if (is_bare_count(m)) return j;
  j["family"] = family_name(m.family);
  j["hidden_size"] = m.hidden_size;
  j["num_hidden_layers"] = m.num_hidden_layers;
  j["num_attention_heads"] = m.num_attention_heads;
  j["num_key_value_heads"] = m.num_key_value_heads;
  j["head_dim"] = head_dim(m);
  j["intermediate_size"] = m.intermediate_size;
  j["vocab_size"] = m.vocab_size;
  j["max_position_embeddings"] = m.max_position_embeddings;
  j["tie_word_embeddings"] = m.tie_word_embeddings == 1;
  j["parameters"] = {{"embedding", c.embedding},
                     {"per_layer", c.per_layer},
                     {"lm_head", c.lm_head}};
  return j;
}

ojson gpu_json(const memest_gpu& g) {
  ojson j = {{"name", g.name},
             {"memory_bytes", g.memory_bytes},
             {"gpus_per_node", g.gpus_per_node},
             {"peak_bf16_tflops", g.peak_bf16_tflops}};
  ojson profile = ojson::object();
  for (const GpuProfileField& p : kGpuProfileFields) profile[p.key] = g.*p.member / p.scale;
  j["profile"] = profile;
  return j;
}

// The overhead model's parts for one stage, by name (README "Overhead model").
ojson overheads_json(const memest_stage& s) {
  return {{"context_bytes", s.context_bytes},
          {"comm_buffer_bytes", s.comm_buffer_bytes},
          {"logits_bytes", s.logits_bytes},
          {"activation_correction_bytes", s.activation_correction_bytes},
          {"fragmentation_bytes", s.fragmentation_bytes}};
}

const char* recompute_name(int32_t r) {
  return r == MEMEST_RECOMPUTE_FULL ? "full" : r == MEMEST_RECOMPUTE_SELECTIVE ? "selective" : "none";
}

ojson pretrain_response(const memest_pretrain_request& r) {
  // One stage per pipeline rank: pp <= num_hidden_layers <= 100000 (validated).
  std::vector<memest_stage> stages(
      static_cast<std::size_t>(std::max<int64_t>(1, std::min<int64_t>(r.pp, kMaxLayers))));
  const memest_pretrain_result res =
      compute_pretrain(r, stages.data(), static_cast<uint32_t>(stages.size()));
  ojson stage_list = ojson::array();
  for (int32_t i = 0; i < res.stage_count; ++i) {
    const memest_stage& s = stages[static_cast<std::size_t>(i)];
    stage_list.push_back({{"stage", s.index},
                          {"layers", s.layers},
                          {"microbatches_in_flight", s.microbatches_in_flight},
                          {"parameters", s.parameters},
                          {"weights_bytes", s.weights_bytes},
                          {"gradients_bytes", s.gradients_bytes},
                          {"optimizer_bytes", s.optimizer_bytes},
                          {"activations_bytes", s.activations_bytes},
                          {"total_bytes", s.total_bytes},
                          {"overheads", overheads_json(s)},
                          {"overhead_bytes", s.overhead_bytes},
                          {"peak_bytes", s.peak_bytes}});
  }
  return {{"ok", true},
          {"mode", "pretrain"},
          {"model", model_json(r.model)},
          {"gpu", gpu_json(r.gpu)},
          {"layout",
           {{"gpus", r.gpus}, {"tp", r.tp}, {"cp", r.cp}, {"pp", r.pp}, {"vpp", r.vpp},
            {"dp", res.dp}, {"sp", r.sequence_parallel == 1}, {"zero", r.zero}}},
          {"training",
           {{"seq_len", r.seq_len}, {"micro_batch", r.micro_batch},
            {"global_batch", r.global_batch}, {"num_microbatches", res.num_microbatches},
            {"recompute", recompute_name(r.recompute)},
            {"flash_attention", r.flash_attention == 1},
            {"activation_model", res.activation_model == MEMEST_ACTIVATIONS_GPT ? "gpt" : "llama"},
            {"param_bytes", r.param_bytes}, {"grad_bytes", r.grad_bytes},
            {"optimizer_bytes", r.optimizer_bytes}}},
          {"estimate_bytes", res.estimate_bytes},
          {"estimate_gib", res.estimate_bytes / kGiB},
          {"peak_bytes", res.peak_bytes},
          {"peak_gib", res.peak_bytes / kGiB},
          {"peak_stage", res.peak_stage},
          {"paper_peak_bytes", res.paper_peak_bytes},
          {"overheads", overheads_json(stages[static_cast<std::size_t>(res.peak_stage)])},
          {"oom_predicted", res.oom_predicted == 1},
          {"capacity_bytes", res.capacity_bytes},
          {"usage_fraction", res.usage_fraction},
          {"verdict", memest_verdict_name(static_cast<memest_verdict>(res.verdict))},
          {"stages", stage_list}};
}

ojson model_states_response(const memest_model_states_request& r) {
  const memest_model_states_result res = compute_model_states(r);
  ojson j = {{"ok", true},
            {"mode", "model_states"},
            {"model", model_json(r.model)},
            {"layout", {{"gpus", r.gpus}, {"dp", r.gpus}, {"zero", r.zero}}},
            {"training",
             {{"param_bytes", r.param_bytes}, {"grad_bytes", r.grad_bytes},
              {"optimizer_bytes", r.optimizer_bytes}}},
            {"weights_bytes", res.weights_bytes},
            {"gradients_bytes", res.gradients_bytes},
            {"optimizer_bytes", res.optimizer_bytes},
            {"estimate_bytes", res.estimate_bytes},
            {"estimate_gib", res.estimate_bytes / kGiB},
            {"estimate_gb", res.estimate_bytes / kGB},
            {"verdict", memest_verdict_name(static_cast<memest_verdict>(res.verdict))}};
  if (res.capacity_bytes > 0) {
    j["gpu"] = gpu_json(r.gpu);
    j["capacity_bytes"] = res.capacity_bytes;
    j["usage_fraction"] = res.estimate_bytes / res.capacity_bytes;
  }
  return j;
}

ojson parts_json(const memest_finetune_parts& p) {
  return {{"m_base", p.base},         {"m_p", p.params},     {"m_p16", p.params_fp16},
          {"m_p32", p.params_fp32},   {"m_os", p.optimizer}, {"m_out", p.outputs},
          {"m_lm", p.lm_head},        {"m_back", p.backward_buffer}};
}

const char* method_name(int32_t method) {
  return memest_finetune_method_name(static_cast<memest_finetune_method>(method));
}

// The estimate of one method at one batch (also the detail of the method Algorithm 1 picks).
ojson finetune_estimate(const memest_finetune_request& r, ojson& j) {
  const memest_finetune_result res = compute_finetune(r);
  j["layout"] = {{"gpus", r.gpus}, {"tp", res.tp}, {"dp", res.dp}};
  j["training"] = {{"seq_len", r.seq_len},
                   {"batch", res.batch},
                   {"gradient_checkpointing", r.gradient_checkpointing == 1},
                   {"param_bytes", r.param_bytes}};
  j["environment"] = {{"base_bytes", res.parts.base},
                      {"page_bytes", r.page_bytes > 0 ? r.page_bytes : r.gpu.page_bytes},
                      {"chunk_elements", res.chunk_elements},
                      {"chunk_bytes", res.chunk_elements * r.param_bytes},
                      {"chunk_count", res.chunk_count},
                      {"chunk_waste_bytes", res.chunk_waste_bytes}};
  j["parts"] = parts_json(res.parts);
  j["per_gpu"] = parts_json(res.per_gpu);
  j["estimate_bytes"] = res.peak_bytes;
  j["estimate_gib"] = res.peak_bytes / kGiB;
  j["peak_bytes"] = res.peak_bytes;
  j["capacity_bytes"] = res.capacity_bytes;
  j["usage_fraction"] = res.usage_fraction;
  j["verdict"] = memest_verdict_name(static_cast<memest_verdict>(res.verdict));
  return j;
}

ojson finetune_response(const memest_finetune_request& r) {
  ojson j = {{"ok", true}, {"mode", "finetune"}, {"model", model_json(r.model)}, {"gpu", gpu_json(r.gpu)}};
  if (r.method != MEMEST_FINETUNE_AUTO) {
    j["method"] = method_name(r.method);
    return finetune_estimate(r, j);
  }
  const memest_finetune_choice choice = select_finetune_method(r);
  j["method"] = "auto";
  j["selected"] = method_name(choice.selected);
  j["max_batch"] = choice.batch;
  ojson methods = ojson::array();
  double smallest_peak = 0;
  for (const memest_finetune_option& o : choice.options) {
    ojson row = {{"method", method_name(o.method)}, {"applicable", o.applicable == 1}};
    if (!o.applicable) {
      row["reason"] = method_unavailable_reason(r.model, static_cast<memest_finetune_method>(o.method),
                                                r.gpus, o.method == MEMEST_FINETUNE_DP_TP ? r.tp : o.tp);
    } else {
      row["tp"] = o.tp;
      row["dp"] = o.dp;
      row["max_batch"] = o.max_batch;
      row["score"] = o.score;
      row["peak_bytes"] = o.peak_bytes;
      if (smallest_peak == 0 || o.peak_bytes < smallest_peak) smallest_peak = o.peak_bytes;
    }
    methods.push_back(row);
  }
  j["methods"] = methods;
  if (choice.selected == MEMEST_FINETUNE_CPU_OFFLOAD) {
    // Nothing fits at batch 1: the smallest GPU-only peak shows by how much.
    j["estimate_bytes"] = smallest_peak;
    j["estimate_gib"] = smallest_peak / kGiB;
    j["capacity_bytes"] = r.gpu.memory_bytes;
    j["verdict"] = "oom";
    return j;
  }
  memest_finetune_request chosen = r;
  chosen.method = choice.selected;
  chosen.batch = choice.batch;
  if (choice.selected == MEMEST_FINETUNE_DP_TP) chosen.tp = choice.options[3].tp;
  ojson detail = ojson::object();
  finetune_estimate(chosen, detail);
  for (auto& [key, value] : detail.items()) j[key] = value;
  return j;
}

// One line a person reads next to a ranked layout.
std::string search_reason(const memest_search_entry& e, int64_t gpus_per_node) {
  std::string why;
  char buf[160];
  std::snprintf(buf, sizeof buf, "%.1f of %.1f GiB at peak (%.0f %%)", e.peak_bytes / kGiB,
                e.capacity_bytes / kGiB, 100 * e.peak_bytes / e.capacity_bytes);
  why = e.oom_predicted ? std::string("predicted OOM: ") + buf : std::string("fits: ") + buf;
  if (e.layout.pp > 1) {
    std::snprintf(buf, sizeof buf, "; pipeline bubble %.1f %%", 100 * e.bubble_fraction);
    why += buf;
  } else {
    why += "; no pipeline bubble";
  }
  if (e.layout.tp > 1) why += e.layout.tp <= gpus_per_node ? "; TP inside a node" : "; TP across nodes";
  if (e.layout.cp > 1) why += "; CP splits the sequence";
  if (e.layout.recompute == MEMEST_RECOMPUTE_FULL) why += "; full recompute costs a forward pass";
  return why;
}

ojson search_response(SearchRequest& sr) {
  memest_search_request& r = sr.request;
  if (!sr.layouts.empty()) {
    r.layouts = sr.layouts.data();
    r.layout_count = static_cast<uint32_t>(sr.layouts.size());
  }
  std::vector<memest_search_entry> entries(sr.top);
  memest_search_result res;
  run_search(r, res, entries.data(), sr.top);
  ojson results = ojson::array();
  for (uint32_t i = 0; i < res.count; ++i) {
    const memest_search_entry& e = entries[i];
    results.push_back({{"rank", i + 1},
                       {"layout",
                        {{"tp", e.layout.tp}, {"cp", e.layout.cp}, {"pp", e.layout.pp},
                         {"vpp", e.layout.vpp}, {"dp", e.dp}, {"micro_batch", e.layout.micro_batch},
                         {"recompute", recompute_name(e.layout.recompute)}, {"zero", e.layout.zero}}},
                       {"num_microbatches", e.num_microbatches},
                       {"estimate_bytes", e.estimate_bytes},
                       {"peak_bytes", e.peak_bytes},
                       {"oom_predicted", e.oom_predicted == 1},
                       {"verdict", memest_verdict_name(static_cast<memest_verdict>(e.verdict))},
                       {"tflops_per_gpu", e.tflops_per_gpu},
                       {"tokens_per_s", e.tokens_per_s},
                       {"step_seconds", e.step_seconds},
                       {"bubble_fraction", e.bubble_fraction},
                       {"reason", search_reason(e, r.base.gpu.gpus_per_node)}});
  }
  ojson pruned = ojson::object();
  uint64_t pruned_total = 0;
  for (int i = 0; i < MEMEST_PRUNE_REASON_COUNT; ++i) {
    pruned[memest_prune_reason_name(static_cast<memest_prune_reason>(i))] = res.pruned[i];
    pruned_total += res.pruned[i];
  }
  ojson j = {{"ok", true},
             {"mode", "search"},
             {"model", model_json(r.base.model)},
             {"gpu", gpu_json(r.base.gpu)},
             {"gpus", r.base.gpus},
             {"training", {{"seq_len", r.base.seq_len}, {"global_batch", r.base.global_batch}}},
             {"candidates", res.candidates},
             {"evaluated", res.evaluated},
             {"pruned", pruned},
             {"pruned_total", pruned_total},
             {"ranked", res.ranked},
             {"count", res.count},
             {"results", results}};
  if (res.count == 0) {
    j["message"] = res.evaluated == 0
                       ? "no valid layout: every candidate was ruled out (see pruned)"
                       : "no layout fits: every valid layout is predicted to run out of memory "
                         "(see pruned.oom; include_oom ranks them anyway)";
  }
  return j;
}

// The built-in presets with their shapes, sources and device profiles (`memest models`,
// `memest gpus`, the web page's pickers).
ojson presets_response() {
  ojson models = ojson::array();
  for (const ModelPreset& p : model_presets()) {
    const memest_model& m = p.model;
    models.push_back({{"id", p.id},
                      {"name", m.name},
                      {"family", family_name(m.family)},
                      {"num_parameters", count_parameters(m).total},
                      {"published_params", p.published_params},
                      {"num_hidden_layers", m.num_hidden_layers},
                      {"hidden_size", m.hidden_size},
                      {"num_attention_heads", m.num_attention_heads},
                      {"num_key_value_heads", m.num_key_value_heads},
                      {"intermediate_size", m.intermediate_size},
                      {"vocab_size", m.vocab_size},
                      {"max_position_embeddings", m.max_position_embeddings},
                      {"tie_word_embeddings", m.tie_word_embeddings == 1},
                      {"source", p.source}});
  }
  ojson gpus = ojson::array();
  for (const GpuPreset& p : gpu_presets()) {
    ojson g = gpu_json(p.gpu);
    g["id"] = p.id;
    g["memory_gib"] = p.gpu.memory_bytes / kGiB;
    g["context_bytes"] = p.gpu.context_bytes;
    g["page_bytes"] = p.gpu.page_bytes;
    g["source"] = p.source;
    gpus.push_back(g);
  }
  return {{"ok", true}, {"mode", "presets"}, {"models", models}, {"gpus", gpus}};
}

}  // namespace

memest_model resolve_model(const json& value, const std::string& field, bool allow_bare) {
  memest_model m;
  if (value.is_string()) {
    m = find_model_preset(value.get<std::string>(), field).model;
  } else if (value.is_object()) {
    m = model_from_json(value, field);
  } else {
    throw Error(MEMEST_ERR_TYPE, field,
                field + ": expected a preset id or a config.json object");
  }
  validate_model(m, field, allow_bare);
  return m;
}

memest_gpu resolve_gpu(const json& value, const std::string& field) {
  if (value.is_string()) return find_gpu_preset(value.get<std::string>(), field).gpu;
  if (!value.is_object()) {
    throw Error(MEMEST_ERR_TYPE, field, field + ": expected a preset id or an object");
  }
  JsonFields f(value, field);
  for (auto it = value.begin(); it != value.end(); ++it) {
    bool known = false;
    for (const char* k : {"preset", "name", "memory_gib", "gpus_per_node", "peak_bf16_tflops"})
      known = known || it.key() == k;
    for (const GpuProfileField& p : kGpuProfileFields) known = known || it.key() == p.key;
    if (!known) {
      throw Error(MEMEST_ERR_UNKNOWN_FIELD, f.path_of(it.key().c_str()),
                  f.path_of(it.key().c_str()) +
                      ": unknown field (known: preset, name, memory_gib, gpus_per_node, "
                      "peak_bf16_tflops and the device-profile fields of data/gpus.json)");
    }
  }
  memest_gpu g = default_gpu();
  if (auto preset = f.string("preset")) g = find_gpu_preset(*preset, f.path_of("preset")).gpu;
  else copy_name(g.name, "custom");
  if (auto name = f.string("name")) copy_name(g.name, *name);
  if (auto gib = f.number("memory_gib", 1e-3, 1e6)) g.memory_bytes = *gib * kGiB;
  g.gpus_per_node = static_cast<int32_t>(f.integer_or("gpus_per_node", g.gpus_per_node, 1, 1024));
  if (auto tf = f.number("peak_bf16_tflops", 0, 1e6)) g.peak_bf16_tflops = *tf;
  for (const GpuProfileField& p : kGpuProfileFields) {
    if (auto v = f.number(p.key, p.min, p.max)) g.*p.member = *v * p.scale;
  }
  if (g.memory_bytes <= 0) {
    throw Error(MEMEST_ERR_MISSING_FIELD, f.path_of("memory_gib"),
                f.path_of("memory_gib") + ": missing (or give \"preset\")");
  }
  return g;
}

std::string answer_request(const std::string& text) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw Error(MEMEST_ERR_PARSE, "", std::string("request is not valid JSON: ") + e.what());
  }
  JsonFields top(doc, "");
  auto mode = top.choice("mode", {"pretrain", "model_states", "finetune", "search", "presets"});
  if (!mode) {
    throw Error(MEMEST_ERR_MISSING_FIELD, "mode",
                "mode: missing (pretrain, model_states, finetune, search or presets)");
  }
  if (*mode == "presets") {
    top.reject_unknown({"mode"});
    return presets_response().dump(2, ' ', false, ojson::error_handler_t::replace);
  }
  if (*mode == "search") {
    SearchRequest sr = parse_search(top);
    return search_response(sr).dump(2, ' ', false, ojson::error_handler_t::replace);
  }
  const ojson response = *mode == "pretrain"   ? pretrain_response(parse_pretrain(top))
                         : *mode == "finetune" ? finetune_response(parse_finetune(top))
                                               : model_states_response(parse_model_states(top));
  return response.dump(2, ' ', false, ojson::error_handler_t::replace);
}

std::string error_response(memest_status status, const std::string& field,
                           const std::string& message) {
  const ojson j = {{"ok", false},
                  {"error", {{"code", memest_status_name(status)},
                             {"field", field},
                             {"message", message}}}};
  return j.dump(2, ' ', false, ojson::error_handler_t::replace);
}

}  // namespace memest
