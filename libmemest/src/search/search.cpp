#include "search/search.hpp"

#include <cmath>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "pretrain/pretrain.hpp"
#include "throughput/throughput.hpp"

namespace memest {

namespace {

constexpr int kMaxDivisors = 1024;  // no n <= 2^24 has more than 576 divisors
// Candidates one search may consider (~100 ns each): beyond this, ask for a narrower space.
constexpr double kMaxCandidates = 5e7;

memest_prune_reason prune_reason(LayoutIssue issue) {
  switch (issue) {
    case LayoutIssue::TpHeads: return MEMEST_PRUNE_TP_HEADS;
    case LayoutIssue::TpKvHeads: return MEMEST_PRUNE_TP_KV_HEADS;
    case LayoutIssue::TpFfn: return MEMEST_PRUNE_TP_FFN;
    case LayoutIssue::GpusNotDivisible: return MEMEST_PRUNE_GPUS;
    case LayoutIssue::PpExceedsLayers: return MEMEST_PRUNE_PP_LAYERS;
    case LayoutIssue::VppNeedsPp: return MEMEST_PRUNE_VPP;
    case LayoutIssue::LayersNotDivisible: return MEMEST_PRUNE_LAYERS;
    case LayoutIssue::CpSequence: return MEMEST_PRUNE_CP_SEQUENCE;
    case LayoutIssue::GlobalBatch: return MEMEST_PRUNE_GLOBAL_BATCH;
    case LayoutIssue::InterleavedMicrobatches: return MEMEST_PRUNE_INTERLEAVED;
    default: return MEMEST_PRUNE_GPUS;  // SequenceTooLong is refused before the search
  }
}

// Orders entries: fitting before OOM, faster first, then less memory, then smaller sizes.
bool better(const memest_search_entry& a, const memest_search_entry& b) {
  if (a.oom_predicted != b.oom_predicted) return a.oom_predicted < b.oom_predicted;
  if (a.tflops_per_gpu != b.tflops_per_gpu) return a.tflops_per_gpu > b.tflops_per_gpu;
  if (a.peak_bytes != b.peak_bytes) return a.peak_bytes < b.peak_bytes;
  const memest_layout &x = a.layout, &y = b.layout;
  if (x.tp != y.tp) return x.tp < y.tp;
  if (x.cp != y.cp) return x.cp < y.cp;
  if (x.pp != y.pp) return x.pp < y.pp;
  if (x.vpp != y.vpp) return x.vpp < y.vpp;
  if (x.micro_batch != y.micro_batch) return x.micro_batch < y.micro_batch;
  if (x.recompute != y.recompute) return x.recompute < y.recompute;
  return x.zero < y.zero;
}

// The search's state: one request copy mutated per candidate, and the top-k buffer.
struct Search {
  memest_pretrain_request candidate;
  memest_search_result* result;
  memest_search_entry* entries;
  uint32_t capacity;
  bool include_oom;

  void insert(const memest_search_entry& e) {
    ++result->ranked;
    uint32_t n = result->count;
    if (n == capacity && (n == 0 || !better(e, entries[n - 1]))) return;
    if (n < capacity) ++result->count;
    uint32_t pos = n < capacity ? n : n - 1;  // drop the worst when full
    while (pos > 0 && better(e, entries[pos - 1])) {
      entries[pos] = entries[pos - 1];
      --pos;
    }
    entries[pos] = e;
  }

  void evaluate(const memest_layout& layout) {
    ++result->candidates;
    // FlashAttention keeps no attention scores, so selective recomputation changes nothing.
    if (layout.recompute == MEMEST_RECOMPUTE_SELECTIVE && candidate.flash_attention == 1) {
      ++result->pruned[MEMEST_PRUNE_EQUIVALENT];
      return;
    }
    memest_pretrain_request& r = candidate;
    r.tp = layout.tp;
    r.cp = layout.cp;
    r.pp = layout.pp;
    r.vpp = layout.vpp;
    r.micro_batch = layout.micro_batch;
    r.recompute = layout.recompute;
    r.zero = layout.zero;
    LayoutCheck check;
    const LayoutIssue issue = check_layout(r, check);
    if (issue != LayoutIssue::None) {
      ++result->pruned[prune_reason(issue)];
      return;
    }
    const Plan plan = make_plan_unchecked(r, check);
    ++result->evaluated;
    memest_search_entry e;
    std::memset(&e, 0, sizeof e);
    e.struct_size = sizeof e;
    e.peak_bytes = peak_memory(plan, nullptr);
    e.oom_predicted = e.peak_bytes > r.gpu.memory_bytes;
    if (e.oom_predicted) {
      ++result->pruned[MEMEST_PRUNE_OOM];
      if (!include_oom) return;
    }
    e.layout = layout;
    e.dp = plan.dp;
    e.num_microbatches = plan.num_microbatches;
    e.estimate_bytes = stage_memory(plan, 0, false).total_bytes;
    e.capacity_bytes = r.gpu.memory_bytes;
    e.verdict = e.estimate_bytes <= 0.8 * e.capacity_bytes ? MEMEST_VERDICT_FITS
                : e.estimate_bytes <= e.capacity_bytes    ? MEMEST_VERDICT_TIGHT
                                                          : MEMEST_VERDICT_OOM;
    const Throughput t = estimate_throughput(plan);
    e.tflops_per_gpu = t.tflops_per_gpu;
    e.tokens_per_s = t.tokens_per_s;
    e.step_seconds = t.step_seconds;
    e.bubble_fraction = t.bubble_fraction;
    e.first_stage_layers = plan.layers.first;
    e.last_stage_layers = plan.layers.last;
    insert(e);
  }
};

void check_max(const char* field, int64_t v) {
  if (v < 0 || v > (int64_t{1} << 24)) fail(field, "must be between 0 (no limit) and 16777216");
}

}  // namespace

int divisors(int64_t n, int64_t* out, int max) {
  int count = 0;
  int64_t large[kMaxDivisors];
  int nlarge = 0;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    if (count < max) out[count++] = d;
    if (d != n / d && nlarge < kMaxDivisors) large[nlarge++] = n / d;
  }
  for (int i = nlarge - 1; i >= 0 && count < max; --i) out[count++] = large[i];
  return count;
}

void run_search(const memest_search_request& r, memest_search_result& result,
                memest_search_entry* entries, uint32_t capacity) {
  if (r.struct_size < sizeof(memest_search_request)) {
    fail("struct_size", "smaller than this version's request; call memest_search_request_init",
         MEMEST_ERR_STRUCT_SIZE);
  }
  validate_fields(r.base);
  const memest_pretrain_request& base = r.base;
  if (base.global_batch <= 0) {
    throw Error(MEMEST_ERR_MISSING_FIELD, "training.global_batch",
                "training.global_batch: missing (the search ranks layouts by time per iteration)");
  }
  if (base.model.learned_position_rows > 0 && base.model.max_position_embeddings > 0 &&
      base.seq_len > base.model.max_position_embeddings) {
    fail("training.seq_len", "seq_len=" + std::to_string(base.seq_len) +
                                 " is longer than the model's learned positions (max_position_embeddings=" +
                                 std::to_string(base.model.max_position_embeddings) + ")");
  }
  check_max("search.max_tp", r.max_tp);
  check_max("search.max_cp", r.max_cp);
  check_max("search.max_pp", r.max_pp);
  check_max("search.max_micro_batch", r.max_micro_batch);
  if (r.max_vpp < 1 || r.max_vpp > 64) fail("search.max_vpp", "must be between 1 and 64");
  if (r.recompute_mask == 0 || (r.recompute_mask & ~7u) != 0) {
    fail("search.recompute", "must allow at least one of none, selective, full");
  }
  if (r.zero_mask == 0 || (r.zero_mask & ~15u) != 0) fail("search.zero", "must allow stages among 0..3");
  if (r.tp_within_node != 0 && r.tp_within_node != 1) fail("search.tp_within_node", "must be 0 or 1");
  if (r.include_oom != 0 && r.include_oom != 1) fail("search.include_oom", "must be 0 or 1");
  if (r.uneven_pipeline != 0 && r.uneven_pipeline != 1) fail("search.uneven_pipeline", "must be 0 or 1");
  if (r.layout_count > 0 && !r.layouts) {
    throw Error(MEMEST_ERR_NULL_POINTER, "search.layouts", "search.layouts: NULL with a non-zero count");
  }
  if (capacity > 0 && !entries) throw Error(MEMEST_ERR_NULL_POINTER, "entries", "entries: NULL pointer");

  std::memset(&result, 0, sizeof result);
  result.struct_size = sizeof result;
  Search s{base, &result, entries, capacity, r.include_oom == 1};
  s.candidate.uneven_pipeline = r.uneven_pipeline;

  if (r.layout_count > 0) {  // rank the caller's shortlist
    for (uint32_t i = 0; i < r.layout_count; ++i) {
      const memest_layout& l = r.layouts[i];
      const std::string at = "search.layouts[" + std::to_string(i) + "]";
      if (l.tp < 1 || l.cp < 1 || l.pp < 1 || l.vpp < 1 || l.micro_batch < 1 ||
          l.tp > (int64_t{1} << 24) || l.cp > (int64_t{1} << 24) || l.pp > (int64_t{1} << 24) ||
          l.vpp > 100000 || l.micro_batch > (int64_t{1} << 20)) {
        fail(at, "tp, cp, pp, vpp and micro_batch must be positive and in range");
      }
      if (l.recompute < 0 || l.recompute > 2) fail(at + ".recompute", "must be none, selective or full");
      if (l.zero < 0 || l.zero > 3) fail(at + ".zero", "must be 0, 1, 2 or 3");
      if (r.tp_within_node && l.tp > base.gpu.gpus_per_node) {
        ++result.candidates;
        ++result.pruned[MEMEST_PRUNE_TP_ACROSS_NODES];
        continue;
      }
      s.evaluate(l);
    }
    return;
  }

  int64_t divs[kMaxDivisors];
  const int nd = divisors(base.gpus, divs, kMaxDivisors);
  int64_t batch_divs[kMaxDivisors];
  const int nb = divisors(base.global_batch, batch_divs, kMaxDivisors);
  int mb_count = 0;
  for (int i = 0; i < nb; ++i) mb_count += (r.max_micro_batch == 0 || batch_divs[i] <= r.max_micro_batch);
  int options = 0;  // recompute x zero choices
  for (int rc = 0; rc < 3; ++rc)
    for (int z = 0; z < 4; ++z) options += ((r.recompute_mask >> rc) & 1) && ((r.zero_mask >> z) & 1);
  const uint64_t per_tcp = static_cast<uint64_t>(r.max_vpp) * static_cast<uint64_t>(mb_count) *
                           static_cast<uint64_t>(options);

  const int64_t max_tp = r.max_tp > 0 ? r.max_tp : base.gpus;
  auto count_upto = [&](int64_t limit) {
    int n = 0;
    for (int i = 0; i < nd; ++i) n += (limit == 0 || divs[i] <= limit);
    return static_cast<double>(n);
  };
  const double space = count_upto(max_tp) * count_upto(r.max_cp) * count_upto(r.max_pp) *
                       static_cast<double>(per_tcp);
  if (space > kMaxCandidates) {
    fail("search", "the space holds up to " + std::to_string(static_cast<long long>(space)) +
                       " candidate layouts (limit 50000000): lower max_micro_batch, max_vpp, "
                       "max_cp or max_pp, or give layouts");
  }
  for (int it = 0; it < nd && divs[it] <= max_tp; ++it) {
    const int64_t tp = divs[it];
    for (int ic = 0; ic < nd; ++ic) {
      const int64_t cp = divs[ic];
      if (r.max_cp > 0 && cp > r.max_cp) break;
      if (static_cast<double>(tp) * static_cast<double>(cp) > static_cast<double>(base.gpus)) break;
      for (int ip = 0; ip < nd; ++ip) {
        const int64_t pp = divs[ip];
        if (r.max_pp > 0 && pp > r.max_pp) break;
        if (static_cast<double>(tp) * static_cast<double>(cp) * static_cast<double>(pp) >
            static_cast<double>(base.gpus)) {
          break;
        }
        if (base.gpus % (tp * cp * pp) != 0) {  // counted whole, not visited
          result.candidates += per_tcp;
          result.pruned[MEMEST_PRUNE_GPUS] += per_tcp;
          continue;
        }
        if (r.tp_within_node && tp > base.gpu.gpus_per_node) {
          result.candidates += per_tcp;
          result.pruned[MEMEST_PRUNE_TP_ACROSS_NODES] += per_tcp;
          continue;
        }
        for (int64_t vpp = 1; vpp <= r.max_vpp; ++vpp) {
          for (int ib = 0; ib < nb; ++ib) {
            const int64_t mbs = batch_divs[ib];
            if (r.max_micro_batch > 0 && mbs > r.max_micro_batch) break;
            for (int32_t rc = 0; rc < 3; ++rc) {
              if (!((r.recompute_mask >> rc) & 1)) continue;
              for (int32_t z = 0; z < 4; ++z) {
                if (!((r.zero_mask >> z) & 1)) continue;
                s.evaluate(memest_layout{tp, cp, pp, vpp, mbs, rc, z});
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace memest
