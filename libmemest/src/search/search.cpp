#include "search/search.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <string>
#include <system_error>
#include <thread>

#include "core/enums.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"
#include "core/verdict.hpp"
#include "model/model.hpp"
#include "plan/plan.hpp"
#include "plan/stack.hpp"
#include "pretrain/pretrain.hpp"
#include "throughput/throughput.hpp"

namespace memest {

namespace {

constexpr int kMaxGpuDivisors = 1024;    // no n <= 2^24 has more than 576 divisors
constexpr int kMaxBatchDivisors = 8192;  // no n <= 2^40 has more than 6720

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
    case LayoutIssue::EpExperts: return MEMEST_PRUNE_EP_EXPERTS;
    case LayoutIssue::ExpertGpus: return MEMEST_PRUNE_EXPERT_GPUS;
    case LayoutIssue::EtpFfn: return MEMEST_PRUNE_ETP_FFN;
    case LayoutIssue::MoeNeedsSp: return MEMEST_PRUNE_MOE_SP;
    case LayoutIssue::LastStageLayers: return MEMEST_PRUNE_LAYERS;
    case LayoutIssue::TpMixer: return MEMEST_PRUNE_TP_HEADS;    // the mixer's heads
    case LayoutIssue::CpMixer: return MEMEST_PRUNE_FRAMEWORK;  // no CP over this scan
    case LayoutIssue::CpMixerHeads: return MEMEST_PRUNE_TP_HEADS;  // the mixer's heads
    default: return MEMEST_PRUNE_GPUS;  // SequenceTooLong is refused before the search
  }
}

// Orders entries: fitting before OOM, faster first, then less memory, then smaller sizes.
bool better(const memest_search_entry& a, const memest_search_entry& b) {
  if (a.oom_predicted != b.oom_predicted) return a.oom_predicted < b.oom_predicted;
  if (a.tflops_per_gpu != b.tflops_per_gpu) return a.tflops_per_gpu > b.tflops_per_gpu;
  if (a.peak_bytes != b.peak_bytes) return a.peak_bytes < b.peak_bytes;
  if (a.tp != b.tp) return a.tp < b.tp;
  if (a.cp != b.cp) return a.cp < b.cp;
  if (a.pp != b.pp) return a.pp < b.pp;
  if (a.vpp != b.vpp) return a.vpp < b.vpp;
  if (a.micro_batch != b.micro_batch) return a.micro_batch < b.micro_batch;
  if (a.recompute != b.recompute) return a.recompute < b.recompute;
  if (a.zero != b.zero) return a.zero < b.zero;
  if (a.ep != b.ep) return a.ep < b.ep;
  if (a.etp != b.etp) return a.etp < b.etp;
  if (a.fp8 != b.fp8) return a.fp8 < b.fp8;
  return a.compile < b.compile;
}

// Keeps `e` in `list` if it is among the best `capacity` (the list stays best first).
void keep_best(std::vector<memest_search_entry>& list, const memest_search_entry& e,
               uint32_t capacity) {
  if (capacity == 0) return;
  if (list.size() == capacity && !better(e, list.back())) return;
  if (list.size() < capacity) list.push_back(e);  // grows to at most `capacity`
  std::size_t pos = list.size() - 1;              // the last slot is free (or the worst)
  while (pos > 0 && better(e, list[pos - 1])) {
    list[pos] = list[pos - 1];
    --pos;
  }
  list[pos] = e;
}

// The (tp, cp, pp) cells of the space, handed out one at a time to the threads of a search:
// every thread walks the same cells in the same order and takes those it claimed.
struct Cells {
  std::atomic<uint64_t> next{0};
};

// The search's state: one request copy mutated per candidate, and the top-k list.
struct Search {
  PretrainRequest candidate;
  SearchOutcome* out;
  uint32_t capacity;
  bool include_oom;
  bool none_in_space;  // recompute "none" is enumerated too
  uint32_t zero_mask = 0;
  double peak_limit = 0;  // the largest peak ranked as fitting (max_oom_probability)
  ModelTerms model{};  // the same model for every candidate: counted once (plan/plan.hpp)

  void prune(memest_prune_reason reason, uint64_t n = 1) {
    out->candidates += n;
    out->pruned[reason] += n;
  }

  void insert(const memest_search_entry& e) {
    ++out->ranked;
    keep_best(out->entries, e, capacity);
  }

  // The block times of recent block shapes (throughput/throughput.hpp layer_times): candidates
  // that differ only in pp, vpp or dp share them. Direct-mapped, fixed size (allocated once per
  // search).
  struct BlockKey {
    int64_t tp = 0, cp = 0, micro_batch = 0, ep = 0, etp = -1;
    int32_t recompute = -1, zero = -1, fp8 = -1, compile = -1;
    bool operator==(const BlockKey& o) const {
      return tp == o.tp && cp == o.cp && micro_batch == o.micro_batch && ep == o.ep &&
             etp == o.etp && recompute == o.recompute && zero == o.zero && fp8 == o.fp8 &&
             compile == o.compile;
    }
    std::size_t slot(std::size_t slots) const {
      uint64_t h = 1469598103934665603ull;  // FNV-1a over the fields
      for (const int64_t v : {tp, cp, micro_batch, ep, etp, int64_t{recompute}, int64_t{zero},
                              int64_t{fp8}, int64_t{compile}}) {
        h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
      }
      return static_cast<std::size_t>(h % slots);
    }
  };
  static constexpr std::size_t kBlockCache = 4096;  // a mixture-of-experts search meets thousands
  std::vector<std::pair<BlockKey, LayerTimes>> blocks;  // sized on first use

  const LayerTimes& block_times(const Plan& plan, const Layout& l) {
    // The ZeRO stage changes the block times only through DeepSpeed's overlap default.
    const int32_t zero = plan.framework == MEMEST_FRAMEWORK_DEEPSPEED ? plan.zero : -1;
    const BlockKey key{l.tp, l.cp, l.micro_batch, l.ep, plan.etp, l.recompute, zero,
                       candidate.stack.fp8, candidate.stack.compile};
    if (blocks.empty()) blocks.resize(kBlockCache);
    auto& [k, times] = blocks[key.slot(kBlockCache)];
    if (!(k == key)) {
      k = key;
      times = layer_times(plan);
    }
    return times;
  }

  // check_layout's refusal of the last (tp, cp, pp, vpp, ep, etp) that failed on those alone
  // (every reason but the micro-batch's, which it checks last): the next candidates that
  // differ only in micro-batch, recompute, ZeRO, fp8 or compile fail alike, uncounted again.
  struct CellKey {
    int64_t tp = 0, cp = 0, pp = 0, vpp = 0, ep = 0, etp = 0;
    bool operator==(const CellKey& o) const {
      return tp == o.tp && cp == o.cp && pp == o.pp && vpp == o.vpp && ep == o.ep && etp == o.etp;
    }
  };
  CellKey refused_cell;
  LayoutIssue refused_issue = LayoutIssue::None;

  // Each layout under every fp8 / compile option the request tries (1.5).
  std::vector<std::pair<int32_t, int32_t>> options;

  // The middle stages that stand for the rest (pretrain/pretrain.hpp middle_stages) of recent
  // pipeline splits: one model per search, so the split (pp, vpp and its stages' layers) decides
  // them. Direct-mapped, fixed size.
  struct SplitKey {
    int64_t pp = 0, vpp = 0, first = -1, middle = 0, last = 0;
    bool operator==(const SplitKey& o) const {
      return pp == o.pp && vpp == o.vpp && first == o.first && middle == o.middle && last == o.last;
    }
  };
  static constexpr std::size_t kSplitCache = 64;
  std::array<std::pair<SplitKey, MiddleStages>, kSplitCache> splits{};

  const MiddleStages& middle_of(const Plan& plan) {
    const SplitKey key{plan.pp, plan.vpp, plan.layers.first, plan.layers.middle, plan.layers.last};
    const uint64_t h = static_cast<uint64_t>(key.pp) * 1000003u +
                       static_cast<uint64_t>(key.vpp) * 8191u +
                       static_cast<uint64_t>(key.first) * 131u + static_cast<uint64_t>(key.last);
    auto& [k, stages] = splits[h % kSplitCache];
    if (!(k == key)) {
      k = key;
      stages = middle_stages(plan);
    }
    return stages;
  }
  void evaluate(const Layout& layout) {
    for (const auto& [fp8, compile] : options) {
      candidate.stack.fp8 = fp8;
      candidate.stack.compile = compile;
      evaluate_one(layout);
    }
  }

  void evaluate_one(const Layout& layout) {
    // FlashAttention keeps no attention scores, so selective recomputation changes nothing:
    // counted once, as "none", when that is in the space too.
    if (layout.recompute == MEMEST_RECOMPUTE_SELECTIVE && candidate.flash_attention == 1 &&
        none_in_space) {
      prune(MEMEST_PRUNE_EQUIVALENT);
      return;
    }
    // fully_shard has no ZeRO-1: zero 1 reads as 3; DDP does not shard: 1 reads as 0.
    const int32_t fw = candidate.stack.framework;
    if (layout.zero == 1 && ((fw == MEMEST_FRAMEWORK_FSDP && ((zero_mask >> 3) & 1)) ||
                             (fw == MEMEST_FRAMEWORK_PYTORCH && (zero_mask & 1)))) {
      prune(MEMEST_PRUNE_EQUIVALENT);
      return;
    }
    const CellKey cell{layout.tp, layout.cp, layout.pp, layout.vpp, layout.ep, layout.etp};
    if (refused_issue != LayoutIssue::None && cell == refused_cell) {
      prune(prune_reason(refused_issue));
      return;
    }
    PretrainRequest& r = candidate;
    r.set_layout(layout);
    LayoutCheck check;
    const LayoutIssue issue = check_layout(r, check);
    if (issue != LayoutIssue::None) {
      if (issue != LayoutIssue::GlobalBatch && issue != LayoutIssue::InterleavedMicrobatches) {
        refused_cell = cell;
        refused_issue = issue;
      }
      prune(prune_reason(issue));
      return;
    }
    if (fw != MEMEST_FRAMEWORK_MEGATRON && !stack_allows_layout(r, check.num_microbatches)) {
      prune(MEMEST_PRUNE_FRAMEWORK);
      return;
    }
    ++out->candidates;
    const Plan plan = make_plan_unchecked(r, check, model);
    ++out->evaluated;
    memest_search_entry e;
    std::memset(&e, 0, sizeof e);
    e.struct_size = sizeof e;
    // Without OOM layouts in the list, the first stage over the limit settles it.
    double estimate = 0;
    e.peak_bytes = peak_memory(plan, nullptr,
                               include_oom ? std::numeric_limits<double>::infinity() : peak_limit,
                               &estimate, &middle_of(plan));
    // the safe side: beyond the request's probability of OOM counts as out of memory
    e.oom_predicted = e.peak_bytes > peak_limit;
    if (e.oom_predicted) {
      ++out->pruned[MEMEST_PRUNE_OOM];
      if (!include_oom) return;
    }
    e.tp = layout.tp;
    e.cp = layout.cp;
    e.pp = layout.pp;
    e.vpp = layout.vpp;
    e.micro_batch = layout.micro_batch;
    e.recompute = layout.recompute;
    e.zero = layout.zero;
    e.dp = plan.dp;
    e.num_microbatches = plan.num_microbatches;
    e.estimate_bytes = estimate;
    e.capacity_bytes = r.gpu.memory_bytes;
    e.verdict = verdict_for(e.estimate_bytes, e.capacity_bytes);
    e.peak_verdict = peak_verdict_for(e.peak_bytes, e.capacity_bytes);
    e.oom_probability = oom_probability(e.peak_bytes, e.capacity_bytes);
    e.margin_bytes = e.capacity_bytes - e.peak_bytes;
    e.peak_high_bytes = peak_band_high(e.peak_bytes);
    const LayerTimes& blocks_of_plan = block_times(plan, layout);
    // A layout that fits but whose best possible speed is below the last of a full list cannot
    // enter it: counted as ranked, its step not composed.
    const std::vector<memest_search_entry>& list = out->entries;
    if (!e.oom_predicted && capacity > 0 && list.size() == capacity && !list.back().oom_predicted &&
        tflops_upper_bound(plan, blocks_of_plan) < list.back().tflops_per_gpu) {
      ++out->ranked;
      return;
    }
    write_throughput(estimate_throughput(plan, &blocks_of_plan), e);
    e.fp8 = r.stack.fp8;
    e.compile = r.stack.compile;
    e.first_stage_layers = plan.layers.first;
    e.last_stage_layers = plan.layers.last;
    e.ep = plan.ep;
    e.etp = plan.etp;
    e.edp = plan.edp;
    insert(e);
  }
};

void check_max(const char* field, int64_t v, int64_t max) {
  if (v < 0 || v > max) {
    fail(field, "must be between 0 (no limit) and " + std::to_string(max) + ", got " +
                    std::to_string(v));
  }
}

void check_flag(const char* field, int32_t v) {
  if (v != 0 && v != 1) fail(field, "must be 0 or 1, got " + std::to_string(v));
}

void validate_layout(const Layout& l, const std::string& at) {
  check_range(at + ".tp", l.tp, 1, kMaxGpus);
  check_range(at + ".cp", l.cp, 1, kMaxGpus);
  check_range(at + ".pp", l.pp, 1, kMaxGpus);
  check_range(at + ".vpp", l.vpp, 1, kMaxVpp);
  check_range(at + ".micro_batch", l.micro_batch, 1, kMaxMicroBatch);
  if (!enum_name(MEMEST_ENUM_RECOMPUTE, l.recompute)) {
    fail(at + ".recompute", "must be one of " + enum_choices(MEMEST_ENUM_RECOMPUTE) +
                                " (0.." + std::to_string(MEMEST_RECOMPUTE_COUNT - 1) + ")");
  }
  validate_zero(l.zero, (at + ".zero").c_str());
}

void validate_layout(const Layout& l, const std::string& at, const memest_model& m) {
  validate_layout(l, at);
  validate_expert_fields(m, l.ep, l.etp, at);
}

// Every check of the request, before anything is counted or estimated.
void validate_search(const SearchRequest& r) {
  const PretrainRequest& base = r.base;
  validate_fields(base);
  if (base.global_batch <= 0) {
    throw Error(MEMEST_ERR_MISSING_FIELD, "training.global_batch",
                "training.global_batch: missing (the search ranks layouts by time per iteration)");
  }
  if (!(base.gpu.peak_bf16_tflops > 0)) {
    throw Error(MEMEST_ERR_MISSING_FIELD, "gpu.peak_bf16_tflops",
                "gpu.peak_bf16_tflops: missing (the search ranks layouts by predicted "
                "throughput, which needs the GPU's dense BF16 peak)");
  }
  if (base.model.learned_position_rows > 0 && base.model.max_position_embeddings > 0 &&
      base.seq_len > base.model.max_position_embeddings) {
    fail("training.seq_len", "seq_len=" + std::to_string(base.seq_len) +
                                 " is longer than the model's learned positions (max_position_embeddings=" +
                                 std::to_string(base.model.max_position_embeddings) + ")");
  }
  check_max("search.max_tp", r.max_tp, kMaxGpus);
  check_max("search.max_cp", r.max_cp, kMaxGpus);
  check_max("search.max_pp", r.max_pp, kMaxGpus);
  check_max("search.max_micro_batch", r.max_micro_batch, kMaxMicroBatch);
  check_max("search.max_ep", r.max_ep, kMaxExperts);
  check_range("search.max_vpp", r.max_vpp, 1, 64);
  check_range("training.micro_batch", r.micro_batch, 0, kMaxMicroBatch);
  const uint32_t all_recompute = (1u << MEMEST_RECOMPUTE_COUNT) - 1;
  if (r.recompute_mask == 0 || (r.recompute_mask & ~all_recompute) != 0) {
    fail("search.recompute", "must allow at least one of " + enum_choices(MEMEST_ENUM_RECOMPUTE));
  }
  if (r.zero_mask == 0 || (r.zero_mask & ~15u) != 0) fail("search.zero", "must allow stages among 0..3");
  if (base.stack.framework == MEMEST_FRAMEWORK_MEGATRON &&
      (r.recompute_mask & (1u << MEMEST_RECOMPUTE_OP_SELECTIVE)) != 0) {
    fail("search.recompute", "op_selective is torchtitan's per-op policy: it needs framework "
                             "fsdp, deepspeed or pytorch");
  }
  check_flag("search.tp_within_node", r.tp_within_node);
  check_flag("search.include_oom", r.include_oom);
  if (!std::isfinite(r.max_oom_probability) || r.max_oom_probability <= 0 ||
      r.max_oom_probability > 1) {
    fail("search.max_oom_probability", "must be a probability in (0, 1]: the largest chance of "
                                       "running out of memory a ranked layout may have");
  }
  check_flag("search.uneven_pipeline", r.uneven_pipeline);
  if (r.fp8_options > 3) fail("search.fp8", "bit 0 (without fp8) and bit 1 (with fp8) only");
  if (r.compile_options >= (1u << MEMEST_COMPILE_COUNT)) {
    fail("search.compile", "bits (1 << memest_compile) of " + enum_choices(MEMEST_ENUM_COMPILE) + " only");
  }
  if (r.layouts.size() > kMaxShortlist) {
    fail("search.layouts", "at most " + std::to_string(kMaxShortlist) + " layouts, got " +
                               std::to_string(r.layouts.size()));
  }
  for (std::size_t i = 0; i < r.layouts.size(); ++i) {
    validate_layout(r.layouts[i], "search.layouts[" + std::to_string(i) + "]", base.model);
    // the training stack's combinations, as a pretraining request with this layout
    PretrainRequest one = base;
    one.set_layout(r.layouts[i]);
    try {
      validate_stack(one);
    } catch (const Error& e) {
      // a layout field ("training.recompute", "parallel.zero") is named in the layout
      std::string at = "search.layouts[" + std::to_string(i) + "]";
      const std::string& f = e.field();
      const std::string key = f.substr(f.rfind('.') + 1);
      for (const char* k : {"recompute", "zero", "tp", "cp", "pp", "vpp", "micro_batch", "ep",
                            "etp"}) {
        if (key == k) at += "." + key;
      }
      throw Error(e.status(), at, at + " (" + f + "): " + e.what());
    }
  }
}

// Ranks the caller's shortlist (validated whole before any is estimated).
void rank_shortlist(const SearchRequest& r, Search& s) {
  for (const Layout& l : r.layouts) {
    if (r.tp_within_node && l.tp > r.base.gpu.gpus_per_node) {
      s.prune(MEMEST_PRUNE_TP_ACROSS_NODES);
      continue;
    }
    s.evaluate(l);
  }
}

// Enumerates every layout of the space: divisors of the GPUs for tp, cp, pp (up to the
// maxima), vpp up to max_vpp, micro-batches dividing the global batch (up to the pretraining
// limit), the allowed recompute and ZeRO options.
void enumerate_space(const SearchRequest& r, Search& s, Cells* cells) {
  const PretrainRequest& base = r.base;
  uint64_t cell = 0;  // this (tp, cp, pp) cell's index, and the next this thread claimed
  uint64_t mine = cells ? cells->next.fetch_add(1) : 0;
  int64_t divs[kMaxGpuDivisors];
  const int nd = divisors(base.gpus, divs, kMaxGpuDivisors);
  int64_t batch_divs[kMaxBatchDivisors];
  const int nb = divisors(base.global_batch, batch_divs, kMaxBatchDivisors);
  if (nd < 0 || nb < 0) fail("", "internal: divisor table too small", MEMEST_ERR_INTERNAL);
  const int64_t max_mbs = r.max_micro_batch > 0 ? r.max_micro_batch : kMaxMicroBatch;
  int mb_count = 0;
  auto wanted = [&](int64_t mbs) {
    return mbs <= max_mbs && (r.micro_batch == 0 || mbs == r.micro_batch);
  };
  for (int i = 0; i < nb; ++i) mb_count += wanted(batch_divs[i]);
  int options = 0;  // recompute x zero choices
  for (int rc = 0; rc < MEMEST_RECOMPUTE_COUNT; ++rc)
    for (int z = 0; z < 4; ++z) options += ((r.recompute_mask >> rc) & 1) && ((r.zero_mask >> z) & 1);
  const uint64_t per_tcp = static_cast<uint64_t>(r.max_vpp) * static_cast<uint64_t>(mb_count) *
                           static_cast<uint64_t>(options);

  // Expert-parallel sizes (MoE models under megatron, and fsdp2 as torchtitan): divisors of
  // the GPUs that divide the experts, up to max_ep, and etp = tp or 1. A dense model, or an
  // MoE model under another framework (every GPU holds every expert: plan/stack.cpp
  // validate_stack), has ep = 1 and etp = tp only, so its space is that of a dense model.
  int64_t eps[kMaxGpuDivisors];
  int ne = 0;
  const bool moe = is_moe(base.model);
  const bool expert_parallel =
      moe && (base.stack.framework == MEMEST_FRAMEWORK_MEGATRON ||
              (base.stack.framework == MEMEST_FRAMEWORK_FSDP && base.stack.fsdp_version == 2));
  for (int i = 0; i < nd; ++i) {
    const int64_t ep = divs[i];
    if (!expert_parallel && ep > 1) break;
    if (r.max_ep > 0 && ep > r.max_ep) break;
    if (moe && base.model.num_experts % ep != 0) continue;
    eps[ne++] = ep;
  }
  const uint64_t per_expert = per_tcp;  // vpp x micro-batches x options per (ep, etp)
  const double expert_options = static_cast<double>(ne) * (expert_parallel ? 2.0 : 1.0);

  const int64_t max_tp = r.max_tp > 0 ? r.max_tp : base.gpus;
  auto count_upto = [&](int64_t limit) {
    int n = 0;
    for (int i = 0; i < nd; ++i) n += (limit == 0 || divs[i] <= limit);
    return static_cast<double>(n);
  };
  const double space = count_upto(max_tp) * count_upto(r.max_cp) * count_upto(r.max_pp) *
                       static_cast<double>(per_tcp) * expert_options;
  if (space > kMaxSearchCandidates) {
    fail("search", "the space holds up to " + std::to_string(static_cast<long long>(space)) +
                       " candidate layouts (limit " +
                       std::to_string(static_cast<long long>(kMaxSearchCandidates)) +
                       "): lower max_micro_batch, max_vpp, max_cp or max_pp, or give layouts");
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
        if (cells) {  // another thread's cell: skipped here, counted there
          if (cell++ != mine) continue;
          mine = cells->next.fetch_add(1);
        }
        const uint64_t per_tcp_all = per_tcp * static_cast<uint64_t>(expert_options);
        if (base.gpus % (tp * cp * pp) != 0) {  // counted whole, not visited
          s.prune(MEMEST_PRUNE_GPUS, per_tcp_all);
          continue;
        }
        if (r.tp_within_node && tp > base.gpu.gpus_per_node) {
          s.prune(MEMEST_PRUNE_TP_ACROSS_NODES, per_tcp_all);
          continue;
        }
        for (int ie = 0; ie < ne; ++ie) {
          const int64_t ep = eps[ie];
          // etp: the same as tp (Megatron's default, 0), or 1 when tp > 1 (experts not split).
          for (int64_t etp : {int64_t{0}, int64_t{1}}) {
            if (!expert_parallel && etp == 1) continue;
            if (etp == 1 && tp == 1) {  // the same layout as etp = tp
              s.prune(MEMEST_PRUNE_EQUIVALENT, per_expert);
              continue;
            }
            const int64_t etp_size = etp > 0 ? etp : tp;
            if (moe && (static_cast<double>(etp_size) * static_cast<double>(ep) *
                                static_cast<double>(pp) > static_cast<double>(base.gpus) ||
                        base.gpus % (etp_size * ep * pp) != 0)) {
              s.prune(MEMEST_PRUNE_EXPERT_GPUS, per_expert);
              continue;
            }
            for (int64_t vpp = 1; vpp <= r.max_vpp; ++vpp) {
              for (int ib = 0; ib < nb; ++ib) {
                const int64_t mbs = batch_divs[ib];
                if (mbs > max_mbs) break;
                if (!wanted(mbs)) continue;
                for (int32_t rc = 0; rc < MEMEST_RECOMPUTE_COUNT; ++rc) {
                  if (!((r.recompute_mask >> rc) & 1)) continue;
                  for (int32_t z = 0; z < 4; ++z) {
                    if (!((r.zero_mask >> z) & 1)) continue;
                    s.evaluate(Layout{tp, cp, pp, vpp, mbs, rc, z, ep, etp});
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace

int divisors(int64_t n, int64_t* out, int max) {
  int count = 0;
  int nlarge = 0;
  // Divisors above sqrt(n) are found in decreasing order: collect them at the end of `out`.
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    const int need = d != n / d ? 2 : 1;
    if (count + nlarge + need > max) return -1;
    out[count++] = d;
    if (need == 2) out[max - 1 - nlarge++] = n / d;
  }
  for (int i = 0; i < nlarge; ++i) out[count + i] = out[max - nlarge + i];
  return count + nlarge;
}

namespace {

// The fp8 and compile settings the search tries: the base request's, or every option the
// request names that the training stack can run (validate_stack: fp8 needs fp8 tensor cores,
// megatron does not compile, ...); an option no layout can run is left out.
std::vector<std::pair<int32_t, int32_t>> search_options(const SearchRequest& r) {
  const uint32_t fp8s = r.fp8_options ? r.fp8_options : 1u << r.base.stack.fp8;
  const uint32_t compiles = r.compile_options ? r.compile_options : 1u << r.base.stack.compile;
  std::vector<std::pair<int32_t, int32_t>> out;
  for (int32_t fp8 = 0; fp8 < 2; ++fp8) {
    if (!((fp8s >> fp8) & 1)) continue;
    for (int32_t compile = 0; compile < MEMEST_COMPILE_COUNT; ++compile) {
      if (!((compiles >> compile) & 1)) continue;
      PretrainRequest one = r.base;
      one.stack.fp8 = fp8;
      one.stack.compile = compile;
      try {
        validate_stack(one);
      } catch (const Error&) {
        if (r.fp8_options == 0 && r.compile_options == 0) throw;
        continue;
      }
      out.emplace_back(fp8, compile);
    }
  }
  if (out.empty()) {
    fail(r.fp8_options ? "search.fp8" : "search.compile",
         "none of the options can run on this GPU and training stack (fp8 needs fp8 tensor "
         "cores; megatron does not run under torch.compile)");
  }
  return out;
}

// Threads a search uses: up to the cores (at most 8) for a cluster of 128 GPUs or more, whose
// space runs to thousands of layouts; one for smaller ones (a thread costs more than their
// whole search) and where the build has no threads (WebAssembly without pthreads).
unsigned search_threads(const SearchRequest& r) {
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
  (void)r;
  return 1;
#else
  if (r.base.gpus < 128) return 1;
  return std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
#endif
}

// Enumerates the space over search_threads(r) threads, each with its own request copy, block
// cache and best list, then merges their counts and lists into s's outcome. Each (tp, cp, pp)
// cell goes to one thread, and `better` orders distinct layouts totally, so the result is the
// single thread's, entry for entry. (A thread skips composing a layout whose upper bound is
// below its own list's last: that is at or below the merged list's last, so it could not have
// entered the merged list either.)
void enumerate_in_threads(const SearchRequest& r, Search& s, uint32_t capacity) {
  const unsigned n = search_threads(r);
  if (n <= 1) {
    enumerate_space(r, s, nullptr);
    return;
  }
#if !(defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__))
  Cells cells;
  std::vector<SearchOutcome> outs(n);
  std::vector<std::exception_ptr> errors(n);
  auto work = [&](unsigned k) {
    try {
      Search t = s;
      t.out = &outs[k];
      enumerate_space(r, t, &cells);
    } catch (...) {
      errors[k] = std::current_exception();
    }
  };
  // The caller's thread is worker 0; a thread the system refuses leaves its cells to the others.
  std::vector<std::thread> threads;
  threads.reserve(n - 1);
  for (unsigned k = 1; k < n; ++k) {
    try {
      threads.emplace_back(work, k);
    } catch (const std::system_error&) {
      break;
    }
  }
  work(0);
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  SearchOutcome& out = *s.out;
  for (const SearchOutcome& o : outs) {
    out.candidates += o.candidates;
    out.evaluated += o.evaluated;
    out.ranked += o.ranked;
    for (std::size_t i = 0; i < out.pruned.size(); ++i) out.pruned[i] += o.pruned[i];
    for (const memest_search_entry& e : o.entries) keep_best(out.entries, e, capacity);
  }
#endif
}

void mark_ties(SearchOutcome& out) {
  out.tie_margin = kThroughputTieMargin;
  if (out.entries.empty() || out.entries[0].oom_predicted) return;
  const double best = out.entries[0].tokens_per_s;
  for (memest_search_entry& e : out.entries) {
    e.gap_to_best = best > 0 ? 1 - e.tokens_per_s / best : 0;
    e.tie = !e.oom_predicted && e.gap_to_best <= kThroughputTieMargin;
  }
}

}  // namespace

SearchOutcome run_search(const SearchRequest& r, uint32_t capacity) {
  validate_search(r);
  SearchOutcome out;
  // A shortlist is ranked as given; the enumeration counts selective-as-none once.
  const bool none_in_space =
      r.layouts.empty() && (r.recompute_mask & (1u << MEMEST_RECOMPUTE_NONE)) != 0;
  Search s{r.base, &out, capacity, r.include_oom == 1, none_in_space, 0u, 0.0, ModelTerms{},
           {}, {}, LayoutIssue::None, {}, {}};
  s.candidate.uneven_pipeline = r.uneven_pipeline;
  s.zero_mask = r.layouts.empty() ? r.zero_mask : 0u;  // a shortlist is ranked as given
  s.peak_limit = r.max_oom_probability >= 1
                     ? INFINITY
                     : peak_limit_for_oom_probability(r.base.gpu.memory_bytes, r.max_oom_probability);
  s.model = model_terms(s.candidate);
  s.options = search_options(r);
  if (!r.layouts.empty()) {
    rank_shortlist(r, s);
  } else {
    enumerate_in_threads(r, s, capacity);
  }
  mark_ties(out);
  return out;
}

}  // namespace memest
