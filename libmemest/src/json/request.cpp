#include "json/request.hpp"

#include <cstring>

#include "core/units.hpp"
#include "model/hf_config.hpp"
#include "model/model.hpp"
#include "finetune/llmem.hpp"
#include "model/presets.hpp"
#include "pretrain/pretrain.hpp"
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
  return {{"name", g.name},
          {"memory_bytes", g.memory_bytes},
          {"gpus_per_node", g.gpus_per_node},
          {"peak_bf16_tflops", g.peak_bf16_tflops},
          {"context_bytes", g.context_bytes},
          {"page_bytes", g.page_bytes}};
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
                          {"total_bytes", s.total_bytes}});
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
  f.reject_unknown({"preset", "name", "memory_gib", "gpus_per_node", "peak_bf16_tflops",
                    "context_mib", "page_mib"});
  memest_gpu g;
  memest_gpu_init(&g);
  if (auto preset = f.string("preset")) g = find_gpu_preset(*preset, f.path_of("preset")).gpu;
  else copy_name(g.name, "custom");
  if (auto name = f.string("name")) copy_name(g.name, *name);
  if (auto gib = f.number("memory_gib", 1e-3, 1e6)) g.memory_bytes = *gib * kGiB;
  g.gpus_per_node = static_cast<int32_t>(f.integer_or("gpus_per_node", g.gpus_per_node, 1, 1024));
  if (auto tf = f.number("peak_bf16_tflops", 0, 1e6)) g.peak_bf16_tflops = *tf;
  if (auto c = f.number("context_mib", 0, 1e7)) g.context_bytes = *c * kMiB;
  if (auto p = f.number("page_mib", 1.0 / 1024, 1e6)) g.page_bytes = *p * kMiB;
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
  auto mode = top.choice("mode", {"pretrain", "model_states", "finetune"});
  if (!mode) {
    throw Error(MEMEST_ERR_MISSING_FIELD, "mode", "mode: missing (pretrain, model_states or finetune)");
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
