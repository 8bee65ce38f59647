#include "advice/advice.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/verdict.hpp"
#include "plan/plan.hpp"
#include "pretrain/pretrain.hpp"
#include "model/model.hpp"
#include "search/search.hpp"
#include "throughput/throughput.hpp"

namespace memest {

std::vector<Part> dominant_parts(const memest_stage& s) {
  std::vector<Part> parts = {{"weights", s.weights_bytes},
                             {"gradients", s.gradients_bytes},
                             {"optimizer", s.optimizer_bytes},
                             {"activations", s.activations_bytes},
                             {"context", s.context_bytes},
                             {"comm_buffers", s.comm_buffer_bytes},
                             {"logits", s.logits_bytes},
                             {"fragmentation", s.fragmentation_bytes}};
  parts.erase(std::remove_if(parts.begin(), parts.end(), [](const Part& p) { return p.bytes <= 0; }),
              parts.end());
  std::stable_sort(parts.begin(), parts.end(),
                   [](const Part& a, const Part& b) { return a.bytes > b.bytes; });
  return parts;
}

namespace {

// The request's peak and throughput, or false when the changed request is not a valid run.
bool evaluate(Suggestion& s) {
  LayoutCheck check;
  try {
    validate_fields(s.request);
  } catch (const Error&) {
    return false;
  }
  if (check_layout(s.request, check) != LayoutIssue::None) return false;
  const Plan plan = make_plan_unchecked(s.request, check);
  s.peak_bytes = peak_memory(plan, nullptr);
  s.peak_verdict = peak_verdict_for(s.peak_bytes, s.request.gpu.memory_bytes);
  if (s.request.gpu.peak_bf16_tflops > 0) s.tflops_per_gpu = estimate_throughput(plan).tflops_per_gpu;
  if (s.peak_verdict != MEMEST_VERDICT_FITS) return false;
  if (s.request.stack.offload_params || s.request.stack.offload_optimizer ||
      s.request.stack.offload_activations) {
    try {
      s.host_bytes = compute_pretrain(s.request, nullptr, 0).host_bytes;  // what the host holds
    } catch (const Error&) {
      return false;  // a combination the stack refuses (plan/stack.cpp)
    }
  }
  return true;
}

// A named change to a request.
struct Change {
  std::string name;
  void (*apply)(PretrainRequest&);
};

// The single changes worth trying for `r`, in the order they are listed.
std::vector<Change> candidate_changes(const PretrainRequest& r) {
  std::vector<Change> out;
  if (r.recompute != MEMEST_RECOMPUTE_FULL) {
    out.push_back({"recompute full", [](PretrainRequest& x) { x.recompute = MEMEST_RECOMPUTE_FULL; }});
  }
  if (r.zero < 3) out.push_back({"ZeRO-3", [](PretrainRequest& x) { x.zero = 3; }});
  if (r.micro_batch > 1) out.push_back({"micro-batch 1", [](PretrainRequest& x) { x.micro_batch = 1; }});
  if (r.sequence_parallel == 0 && r.tp > 1) {
    out.push_back({"sequence parallelism on", [](PretrainRequest& x) { x.sequence_parallel = 1; }});
  }
  if (r.adapter.enabled()) {
    // The changes of a LoRA/QLoRA run (docs/adapters.md): the frozen base's sharded storage
    // in host memory (FSDP's CPUOffload / DeepSpeed's offload_param; refused where nothing is
    // sharded), adapters and their states in bf16, QLoRA's quantised statistics.
    if (!r.stack.offload_params) {
      out.push_back({"offload parameters", [](PretrainRequest& x) { x.stack.offload_params = 1; }});
    }
    if (r.adapter.bytes > 2) out.push_back({"bf16 adapters", [](PretrainRequest& x) { x.adapter.bytes = 2; }});
    if (r.adapter.type == MEMEST_ADAPTER_QLORA && !r.adapter.double_quant) {
      out.push_back({"double quantisation", [](PretrainRequest& x) { x.adapter.double_quant = 1; }});
    }
  }
  return out;
}

// One setting changed at a time.
std::vector<Suggestion> single_changes(const PretrainRequest& r) {
  std::vector<Suggestion> out;
  auto add = [&](const std::string& change, auto&& apply) {
    Suggestion s{change, r};
    apply(s.request);
    if (evaluate(s)) out.push_back(s);
  };
  const std::vector<Change> changes = candidate_changes(r);
  for (const Change& c : changes) add(c.name, c.apply);
  if (out.empty()) {
    // no single change fits: two together (a handful of candidates, so at most a few dozen
    // estimates)
    for (std::size_t i = 0; i < changes.size(); ++i) {
      for (std::size_t k = i + 1; k < changes.size(); ++k) {
        add(changes[i].name + " + " + changes[k].name, [&](PretrainRequest& x) {
          changes[i].apply(x);
          changes[k].apply(x);
        });
      }
    }
  }
  for (int64_t factor : {2, 4, 8}) {  // more data-parallel ranks shard the ZeRO states further
    if (r.zero == 0 || r.gpus > kMaxGpus / factor) break;
    const std::size_t before = out.size();
    add(std::to_string(r.gpus * factor) + " GPUs",
        [factor](PretrainRequest& x) { x.gpus *= factor; });
    if (out.size() > before) break;  // the fewest GPUs that fit
  }
  std::stable_sort(out.begin(), out.end(), [](const Suggestion& a, const Suggestion& b) {
    return a.peak_bytes < b.peak_bytes;
  });
  return out;
}

std::string describe(const memest_search_entry& e) {
  std::string s = "tp " + std::to_string(e.tp) + ", cp " + std::to_string(e.cp) + ", pp " +
                  std::to_string(e.pp);
  if (e.vpp > 1) s += ", vpp " + std::to_string(e.vpp);
  if (e.ep > 1) s += ", ep " + std::to_string(e.ep) + ", etp " + std::to_string(e.etp);
  s += ", micro-batch " + std::to_string(e.micro_batch);
  if (e.recompute != MEMEST_RECOMPUTE_NONE) {
    s += e.recompute == MEMEST_RECOMPUTE_FULL ? ", recompute full" : ", recompute selective";
  }
  s += ", ZeRO-" + std::to_string(e.zero);
  return s;
}

// The search's fastest fitting layouts on the same GPUs (needs a global batch and a GPU peak).
std::vector<Suggestion> layouts(const PretrainRequest& r, std::size_t max) {
  std::vector<Suggestion> out;
  if (r.global_batch <= 0 || !(r.gpu.peak_bf16_tflops > 0) || max == 0) return out;
  SearchRequest search;
  search.base = r;
  // the search splits the layers its own way: unevenly when the request does
  const bool uneven = r.uneven_pipeline == 1 || r.first_stage_layers > 0 ||
                      r.last_stage_layers > 0 || !r.pipeline_layout.empty();
  search.base.last_stage_layers = 0;
  search.base.first_stage_layers = 0;
  search.base.pipeline_layout.clear();
  search.base.uneven_pipeline = uneven ? 1 : 0;
  search.zero_mask = (1u << 1) | (1u << 3);
  search.uneven_pipeline = search.base.uneven_pipeline;
  SearchOutcome found;
  try {
    found = run_search(search, static_cast<uint32_t>(max * 2));
  } catch (const Error&) {
    return out;  // a space too large to search: single changes only
  }
  for (const memest_search_entry& e : found.entries) {
    if (out.size() == max) break;
    Suggestion s{describe(e), r};
    s.request.last_stage_layers = 0;
    s.request.first_stage_layers = 0;
    s.request.pipeline_layout.clear();
    // the request's unevenness is kept as the flag only where the layout needs it (pp x vpp
    // does not divide the layers): a layout that divides them splits them evenly either way
    const bool divides = r.model.num_hidden_layers % (e.pp * e.vpp) == 0;
    s.request.uneven_pipeline = divides ? r.uneven_pipeline : search.uneven_pipeline;
    // etp as the tp in effect is written as 0 ("same as tp"), as a request gives it; a dense
    // model keeps ep = 1, etp = 0.
    const int64_t etp = e.ep == 1 && e.etp == 1 && !is_moe(r.model) ? 0
                        : e.etp == e.tp                              ? 0
                                                                     : e.etp;
    s.request.set_layout(
        Layout{e.tp, e.cp, e.pp, e.vpp, e.micro_batch, e.recompute, e.zero, e.ep, etp});
    if (evaluate(s)) out.push_back(s);
  }
  return out;
}

}  // namespace

std::vector<Suggestion> suggest(const PretrainRequest& r, std::size_t max) {
  std::vector<Suggestion> out = single_changes(r);
  const std::size_t layout_room = std::min<std::size_t>(2, max);  // keep room for two layouts
  if (out.size() > max - layout_room) out.resize(max - layout_room);
  for (Suggestion& s : layouts(r, max - out.size())) out.push_back(std::move(s));
  return out;
}

}  // namespace memest
