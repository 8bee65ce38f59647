// JSON for the layout search mode.
#include <cstdio>
#include <vector>

#include "core/units.hpp"
#include "json/modes.hpp"
#include "json/request.hpp"
#include "search/search.hpp"

namespace memest {

namespace {

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
                    "recompute", "zero", "tp_within_node", "include_oom", "uneven_pipeline"});
  out.top = static_cast<uint32_t>(f.integer_or("top", 10, 1, 10000));
  r.max_tp = f.integer_or("max_tp", 0, -big, big);
  r.max_cp = f.integer_or("max_cp", 0, -big, big);
  r.max_pp = f.integer_or("max_pp", 0, -big, big);
  r.max_vpp = f.integer_or("max_vpp", r.max_vpp, -big, big);
  r.max_micro_batch = f.integer_or("max_micro_batch", 0, -big, big);
  if (auto w = f.boolean("tp_within_node")) r.tp_within_node = *w;
  if (auto o = f.boolean("include_oom")) r.include_oom = *o;
  if (auto u = f.boolean("uneven_pipeline")) r.uneven_pipeline = *u;
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

// One line a person reads next to a ranked layout.
std::string search_reason(const memest_search_entry& e, int64_t gpus_per_node, int64_t num_layers) {
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
  if (num_layers % e.layout.pp != 0) {
    std::snprintf(buf, sizeof buf, "; uneven pipeline: first/last stage %lld/%lld layers",
                  static_cast<long long>(e.first_stage_layers), static_cast<long long>(e.last_stage_layers));
    why += buf;
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
                         {"recompute", recompute_name(e.layout.recompute)}, {"zero", e.layout.zero},
                         {"first_stage_layers", e.first_stage_layers},
                         {"last_stage_layers", e.last_stage_layers}}},
                       {"num_microbatches", e.num_microbatches},
                       {"estimate_bytes", e.estimate_bytes},
                       {"peak_bytes", e.peak_bytes},
                       {"oom_predicted", e.oom_predicted == 1},
                       {"verdict", memest_verdict_name(static_cast<memest_verdict>(e.verdict))},
                       {"tflops_per_gpu", e.tflops_per_gpu},
                       {"tokens_per_s", e.tokens_per_s},
                       {"step_seconds", e.step_seconds},
                       {"bubble_fraction", e.bubble_fraction},
                       {"reason", search_reason(e, r.base.gpu.gpus_per_node, r.base.model.num_hidden_layers)}});
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

}  // namespace

ojson search_mode(const JsonFields& top) {
  SearchRequest request = parse_search(top);
  return search_response(request);
}

}  // namespace memest
