// JSON for the fine-tuning mode (LLMem).
#include "core/enums.hpp"
#include "core/units.hpp"
#include "finetune/adapter_alternatives.hpp"
#include "finetune/llmem.hpp"
#include "json/modes.hpp"
#include "json/request.hpp"

namespace memest {

namespace {

FinetuneRequest parse_finetune(const JsonFields& top) {
  top.reject_unknown({"mode", "model", "gpu", "parallel", "training", "finetune"});
  FinetuneRequest r;
  r.model = resolve_model(require_object_field(top, "model"), "model", false);
  r.gpu = resolve_gpu(require_object_field(top, "gpu"), "gpu");
  constexpr int64_t big = int64_t{1} << 40;  // real limits are checked by the estimator
  JsonFields parallel(block(top, "parallel"), "parallel");
  parallel.reject_unknown({"gpus"});
  r.gpus = parallel.integer_or("gpus", r.gpus, -big, big);
  constexpr const char* kKeys[] = {"seq_len"};
  PretrainRequest training;
  training.seq_len = r.seq_len;
  read_training(top, training, kKeys);
  r.seq_len = training.seq_len;
  JsonFields ft(block(top, "finetune"), "finetune");
  ft.reject_unknown({"method", "tp", "batch", "gradient_checkpointing", "flash_attention", "dtype",
                     "base_bytes", "page_bytes", "chunk_bytes"});
  if (auto m = ft.choice("method", {"cdp", "zero3", "tp", "dp+tp", "auto"})) {
    r.method = enum_value(MEMEST_ENUM_FINETUNE_METHOD, *m);
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

ojson parts_json(const memest_finetune_parts& p) {
  return {{"m_base", p.base},         {"m_p", p.params},     {"m_p16", p.params_fp16},
          {"m_p32", p.params_fp32},   {"m_os", p.optimizer}, {"m_out", p.outputs},
          {"m_lm", p.lm_head},        {"m_back", p.backward_buffer}};
}

const char* method_name(int32_t method) {
  const char* name = enum_name(MEMEST_ENUM_FINETUNE_METHOD, method);
  return name ? name : "unknown";
}

// The estimate of one method at one batch (also the detail of the method Algorithm 1 picks).
ojson finetune_estimate(const FinetuneRequest& r, ojson& j) {
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
  j["verdict"] = verdict_name(res.verdict);
  j["peak_verdict"] = verdict_name(res.peak_verdict);
  return j;
}

ojson finetune_response(const FinetuneRequest& r) {
  ojson j = {{"ok", true}, {"mode", "finetune"}, {"model", model_json(r.model)}, {"gpu", gpu_json(r.gpu)}};
  if (r.method != MEMEST_FINETUNE_AUTO) {
    j["method"] = method_name(r.method);
    return finetune_estimate(r, j);
  }
  const FinetuneChoice choice = select_finetune_method(r);
  j["method"] = "auto";
  j["selected"] = method_name(choice.selected);
  j["max_batch"] = choice.batch;
  ojson methods = ojson::array();
  double smallest_peak = 0;
  for (const memest_finetune_option& o : choice.options) {
    ojson row = {{"method", method_name(o.method)}, {"applicable", o.applicable == 1}};
    if (!o.applicable) {
      row["reason"] = method_unavailable_reason(r.model, static_cast<memest_finetune_method>(o.method),
                                                r.gpus, o.method == MEMEST_FINETUNE_DP_TP ? r.tp : o.tp)
                          .reason;
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
    // Nothing fits at batch 1: the smallest GPU-only peak shows by how much. No method's
    // layout was chosen; the GPU count asked about is still the answer's.
    j["layout"] = {{"gpus", r.gpus}};
    j["estimate_bytes"] = smallest_peak;
    j["estimate_gib"] = smallest_peak / kGiB;
    j["capacity_bytes"] = r.gpu.memory_bytes;
    j["verdict"] = "oom";
    j["peak_verdict"] = "oom";
    // Beside CPU offloading: adapter fine-tuning, a different training method (frozen base),
    // reported and never substituted (finetune/adapter_alternatives.hpp).
    ojson alternatives = ojson::array();
    for (const AdapterAlternative& a : adapter_alternatives(r)) {
      ojson targets = ojson::array();
      for (int32_t i = 0; i < MEMEST_LORA_TARGET_COUNT; ++i) {
        if (a.adapter.targets & (1u << i)) targets.push_back(enum_name(MEMEST_ENUM_LORA_TARGET, i));
      }
      ojson row = {{"method", enum_name(MEMEST_ENUM_ADAPTER, a.type)},
                   {"different_training_method", true},
                   {"adapter",
                    {{"type", enum_name(MEMEST_ENUM_ADAPTER, a.type)},
                     {"rank", a.adapter.rank},
                     {"alpha", a.adapter.alpha},
                     {"dropout", a.adapter.dropout},
                     {"targets", targets},
                     {"dtype", a.adapter.bytes == 4 ? "fp32" : "bf16"}}},
                   {"framework", enum_name(MEMEST_ENUM_FRAMEWORK, a.framework)},
                   {"recompute", enum_name(MEMEST_ENUM_RECOMPUTE, a.recompute)}};
      if (a.type == MEMEST_ADAPTER_QLORA) row["adapter"]["double_quant"] = a.adapter.double_quant == 1;
      if (!a.reason.empty()) {
        row["reason"] = a.reason;
      } else {
        row["trainable_parameters"] = a.trainable_parameters;
        row["max_batch"] = a.max_batch;
        row["peak_bytes"] = a.peak_bytes;
        row["fits"] = a.max_batch > 0;
      }
      alternatives.push_back(row);
    }
    j["alternatives"] = alternatives;
    return j;
  }
  FinetuneRequest chosen = r;
  chosen.method = choice.selected;
  chosen.batch = choice.batch;
  if (choice.selected == MEMEST_FINETUNE_DP_TP) chosen.tp = choice.options[3].tp;
  ojson detail = ojson::object();
  finetune_estimate(chosen, detail);
  for (auto& [key, value] : detail.items()) j[key] = value;
  return j;
}

}  // namespace

ojson finetune_mode(const JsonFields& top) { return finetune_response(parse_finetune(top)); }

}  // namespace memest
