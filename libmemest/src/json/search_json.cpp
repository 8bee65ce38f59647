// JSON for the layout search mode.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "core/enums.hpp"
#include "core/limits.hpp"
#include "core/units.hpp"
#include "json/modes.hpp"
#include "json/request.hpp"
#include "launch/emit.hpp"
#include "search/search.hpp"

namespace memest {

namespace {

// A search request as JSON gives it: the pretrain fields (minus the layout), a "search"
// object, and how many results to return.
struct JsonSearch {
  SearchRequest request;
  uint32_t top = 10;
  std::string emit;  // search.emit: the best layout in this stack's terms ("" = none)
};

uint32_t recompute_mask(const JsonFields& f) {
  const json* list = f.object("recompute");
  if (!list) return SearchRequest{}.recompute_mask;  // none, selective, full
  if (!list->is_array()) {
    throw Error(MEMEST_ERR_TYPE, "search.recompute",
                "search.recompute: expected a list such as [\"none\", \"selective\"]");
  }
  uint32_t mask = 0;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json wrapper = {{"v", (*list)[i]}};
    const std::string at = "search.recompute[" + std::to_string(i) + "]";
    if ((*list)[i].is_null()) throw Error(MEMEST_ERR_TYPE, at, at + ": expected a string, got null");
    mask |= 1u << *enum_field(JsonFields(wrapper, at), "v", MEMEST_ENUM_RECOMPUTE);
  }
  return mask;
}

uint32_t zero_mask(const JsonFields& f) {
  const json* list = f.object("zero");
  if (!list) return 1u << 1;
  if (!list->is_array()) throw Error(MEMEST_ERR_TYPE, "search.zero", "search.zero: expected a list such as [1, 3]");
  uint32_t mask = 0;
  for (const json& z : *list) {
    if (!z.is_number_integer() || z.get<int64_t>() < 0 || z.get<int64_t>() > 3) {
      fail("search.zero", "stages must be integers 0..3, got " + echo(z.dump()));
    }
    mask |= 1u << z.get<int>();
  }
  return mask;
}

std::vector<Layout> shortlist(const JsonFields& f) {
  std::vector<Layout> layouts;
  const json* list = f.object("layouts");
  if (!list) return layouts;
  if (!list->is_array()) throw Error(MEMEST_ERR_TYPE, "search.layouts", "search.layouts: expected a list of layouts");
  if (list->empty()) fail("search.layouts", "is empty");
  for (std::size_t i = 0; i < list->size(); ++i) {
    JsonFields l((*list)[i], "search.layouts[" + std::to_string(i) + "]");
    l.reject_unknown({"tp", "cp", "pp", "vpp", "micro_batch", "recompute", "zero", "ep", "etp"});
    Layout layout;
    layout.tp = l.integer_or("tp", 1, 1, kMaxGpus);
    layout.cp = l.integer_or("cp", 1, 1, kMaxGpus);
    layout.pp = l.integer_or("pp", 1, 1, kMaxGpus);
    layout.vpp = l.integer_or("vpp", 1, 1, kMaxVpp);
    layout.micro_batch = l.integer_or("micro_batch", 1, 1, kMaxMicroBatch);
    layout.recompute = enum_field(l, "recompute", MEMEST_ENUM_RECOMPUTE).value_or(MEMEST_RECOMPUTE_NONE);
    layout.zero = static_cast<int32_t>(l.integer_or("zero", 1, 0, 3));
    layout.ep = l.integer_or("ep", 1, 1, kMaxExperts);
    layout.etp = l.integer_or("etp", 0, 0, kMaxGpus);
    layouts.push_back(layout);
  }
  return layouts;
}

JsonSearch parse_search(const JsonFields& top) {
  top.reject_unknown({"mode", "model", "gpu", "parallel", "training", "search"});
  JsonSearch out;
  SearchRequest& r = out.request;
  PretrainRequest& b = r.base;
  b.model = resolve_model(require_object_field(top, "model"), "model", false);
  b.gpu = resolve_gpu(require_object_field(top, "gpu"), "gpu");
  constexpr int64_t big = int64_t{1} << 40;
  JsonFields parallel(block(top, "parallel"), "parallel");
  parallel.reject_unknown({"gpus", "sp"});
  b.gpus = parallel.integer_or("gpus", b.gpus, -big, big);
  if (auto sp = parallel.boolean("sp")) b.sequence_parallel = *sp;
  // The same training block as pretraining: what it gives pins the search's choice.
  const TrainingGiven given = read_training(top, b, kPretrainTraining);

  JsonFields f(block(top, "search"), "search");
  f.reject_unknown({"top", "layouts", "max_tp", "max_cp", "max_pp", "max_vpp", "max_micro_batch",
                    "recompute", "zero", "tp_within_node", "include_oom", "uneven_pipeline",
                    "max_ep", "fp8", "compile", "max_oom_probability", "emit"});
  if (auto e = f.string("emit")) {
    // one list of stacks (launch/emit.hpp), so emit_for is never asked for another
    if (std::find_if(std::begin(launch::kEmitFormats), std::end(launch::kEmitFormats),
                     [&](const char* n) { return *e == n; }) == std::end(launch::kEmitFormats)) {
      fail("search.emit", "must be megatron, torchtitan, deepspeed or accelerate, got \"" + echo(*e) + "\"");
    }
    out.emit = *e;
  }
  out.top = static_cast<uint32_t>(f.integer_or("top", 10, 1, 10000));
  r.max_tp = f.integer_or("max_tp", 0, -big, big);
  r.max_cp = f.integer_or("max_cp", 0, -big, big);
  r.max_pp = f.integer_or("max_pp", 0, -big, big);
  r.max_vpp = f.integer_or("max_vpp", r.max_vpp, -big, big);
  r.max_micro_batch = f.integer_or("max_micro_batch", 0, -big, big);
  r.max_ep = f.integer_or("max_ep", 0, -big, big);
  if (auto w = f.boolean("tp_within_node")) r.tp_within_node = *w;
  if (auto o = f.boolean("include_oom")) r.include_oom = *o;
  if (auto u = f.boolean("uneven_pipeline")) r.uneven_pipeline = *u;
  if (auto p = f.number("max_oom_probability", -1e300, 1e300)) r.max_oom_probability = *p;
  // fp8 / compile options tried for every layout (1.5): a list of bools / memest_compile names
  const json& search_block = block(top, "search");
  if (f.has("fp8")) {
    const json* v = &search_block.at("fp8");
    if (!v->is_array() || v->empty()) fail("search.fp8", "expected a non-empty list of true/false");
    for (std::size_t i = 0; i < v->size(); ++i) {
      if (!(*v)[i].is_boolean()) {
        throw Error(MEMEST_ERR_TYPE, "search.fp8[" + std::to_string(i) + "]",
                    "search.fp8[" + std::to_string(i) + "]: expected true or false");
      }
      r.fp8_options |= 1u << ((*v)[i].get<bool>() ? 1 : 0);
    }
  }
  if (f.has("compile")) {
    const json* v = &search_block.at("compile");
    if (!v->is_array() || v->empty()) {
      fail("search.compile", "expected a non-empty list of " + enum_choices(MEMEST_ENUM_COMPILE));
    }
    for (std::size_t i = 0; i < v->size(); ++i) {
      const std::string at = "search.compile[" + std::to_string(i) + "]";
      const int32_t c = (*v)[i].is_string() ? enum_value(MEMEST_ENUM_COMPILE, (*v)[i].get<std::string>()) : -1;
      if (c < 0) fail(at, "must be one of " + enum_choices(MEMEST_ENUM_COMPILE));
      r.compile_options |= 1u << c;
    }
  }
  r.recompute_mask = recompute_mask(f);
  r.zero_mask = zero_mask(f);
  r.layouts = shortlist(f);
  if (given.recompute) {
    if (f.has("recompute")) {
      fail("training.recompute", "pins the recompute; give it there or as search.recompute, not both");
    }
    r.recompute_mask = 1u << b.recompute;
  }
  if (given.micro_batch) r.micro_batch = b.micro_batch;
  return out;
}

// One line a person reads next to a ranked layout.
std::string search_reason(const memest_search_entry& e, int64_t gpus_per_node, int64_t num_layers) {
  std::string why;
  char buf[160];
  std::snprintf(buf, sizeof buf, "%.1f of %.1f GiB at peak (%.0f %%)", e.peak_bytes / kGiB,
                e.capacity_bytes / kGiB, 100 * e.peak_bytes / e.capacity_bytes);
  // Opens with the headline verdict on the peak (fits, tight, out of memory).
  why = std::string(e.peak_verdict == MEMEST_VERDICT_OOM ? "out of memory" : verdict_name(e.peak_verdict)) +
        ": " + buf;
  if (e.pp > 1) {
    std::snprintf(buf, sizeof buf, "; pipeline bubble %.1f %%", 100 * e.bubble_fraction);
    why += buf;
  } else {
    why += "; no pipeline bubble";
  }
  if (num_layers % e.pp != 0) {
    std::snprintf(buf, sizeof buf, "; uneven pipeline: first/last stage %lld/%lld layers",
                  static_cast<long long>(e.first_stage_layers), static_cast<long long>(e.last_stage_layers));
    why += buf;
  }
  if (e.tp > 1) why += e.tp <= gpus_per_node ? "; TP inside a node" : "; TP across nodes";
  if (e.ep > 1) {
    std::snprintf(buf, sizeof buf, "; EP %lld (ETP %lld) all-to-all %s", static_cast<long long>(e.ep),
                  static_cast<long long>(e.etp),
                  e.ep * e.etp <= gpus_per_node ? "inside a node" : "across nodes");
    why += buf;
  }
  if (e.cp > 1) why += "; CP splits the sequence";
  if (e.recompute == MEMEST_RECOMPUTE_FULL) why += "; full recompute costs a forward pass";
  return why;
}

ojson search_response(const JsonSearch& sr) {
  const SearchRequest& r = sr.request;
  const SearchOutcome res = run_search(r, sr.top);
  ojson results = ojson::array();
  for (std::size_t i = 0; i < res.entries.size(); ++i) {
    const memest_search_entry& e = res.entries[i];
    results.push_back({{"rank", i + 1},
                       {"layout",
                        {{"tp", e.tp}, {"cp", e.cp}, {"pp", e.pp},
                         {"vpp", e.vpp}, {"dp", e.dp}, {"micro_batch", e.micro_batch},
                         {"recompute", recompute_name(e.recompute)}, {"zero", e.zero},
                         {"first_stage_layers", e.first_stage_layers},
                         {"last_stage_layers", e.last_stage_layers},
                         {"ep", e.ep}, {"etp", e.etp}, {"edp", e.edp}}},
                       {"num_microbatches", e.num_microbatches},
                       {"estimate_bytes", e.estimate_bytes},
                       {"peak_bytes", e.peak_bytes},
                       {"oom_predicted", e.oom_predicted == 1},
                       {"verdict", verdict_name(e.verdict)},
                       {"peak_verdict", verdict_name(e.peak_verdict)},
                       {"oom_probability", e.oom_probability},
                       {"margin_bytes", e.margin_bytes},
                       {"peak_high_bytes", e.peak_high_bytes},
                       {"tflops_per_gpu", e.tflops_per_gpu},
                       {"tokens_per_s", e.tokens_per_s},
                       {"step_seconds", e.step_seconds},
                       {"bubble_fraction", e.bubble_fraction},
                       {"fp8", e.fp8 == 1},
                       {"compile", enum_text(MEMEST_ENUM_COMPILE, e.compile)},
                       {"tie", e.tie == 1},
                       {"gap_to_best", e.gap_to_best},
                       {"throughput", throughput_json(e)},
                       {"reason", search_reason(e, r.base.gpu.gpus_per_node, r.base.model.num_hidden_layers)}});
  }
  ojson pruned = ojson::object();
  uint64_t pruned_total = 0;
  for (int32_t i = 0; i < MEMEST_PRUNE_REASON_COUNT; ++i) {
    pruned[enum_name(MEMEST_ENUM_PRUNE_REASON, i)] = res.pruned[static_cast<std::size_t>(i)];
    pruned_total += res.pruned[static_cast<std::size_t>(i)];
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
             {"tie_margin", res.tie_margin},
             {"max_oom_probability", r.max_oom_probability},
             {"count", res.entries.size()},
             {"results", results}};
  if (!sr.emit.empty() && !res.entries.empty()) {
    // the best layout as the stack's own settings (launch/emit.cpp), from the same request
    const memest_search_entry& e = res.entries[0];
    PretrainRequest best = r.base;
    const int64_t etp = e.ep == 1 && e.etp == 1 ? 0 : e.etp == e.tp ? 0 : e.etp;
    best.set_layout(Layout{e.tp, e.cp, e.pp, e.vpp, e.micro_batch, e.recompute, e.zero, e.ep, etp});
    best.first_stage_layers = 0;
    best.last_stage_layers = 0;
    best.pipeline_layout.clear();
    best.stack.fp8 = e.fp8;
    best.stack.compile = e.compile;
    j["launch"] = emit_for(best, sr.emit, "search.emit");
  }
  if (res.entries.empty()) {
    j["message"] = res.evaluated == 0
                       ? "no valid layout: every candidate was ruled out (see pruned)"
                       : "no layout fits: every valid layout is predicted to run out of memory, "
                         "or more likely to than search.max_oom_probability allows (see "
                         "pruned.oom; include_oom ranks them anyway)";
  }
  return j;
}

}  // namespace

ojson search_mode(const JsonFields& top) {
  return search_response(parse_search(top));
}

}  // namespace memest
