// LLMem Algorithm 1 (Sec. 6): for each method, the largest batch that avoids OOM; scores
// CDP (bs-1)*gpu_n*1.5, ADP (bs-1)*gpu_n, TP bs-1, DP+TP (bs-1)*dp_n; the highest score wins,
// ties going to CDP, ADP, TP, DP+TP in that order; CPU offloading when every score is 0.
//
// Two readings of the paper are fixed here and documented in the README:
//  - the algorithm's last line tests eval[2] (TP) for offloading, the text says "all scores
//    are 0"; memest follows the text, so a method that fits is never discarded;
//  - the paper ran DP+TP only as 2DP+2TP on 4 GPUs; with more GPUs every tp that divides the
//    GPU count and the heads is tried and the best kept, unless the request fixes tp.
#include <cstring>

#include "core/error.hpp"
#include "finetune/llmem.hpp"

namespace memest {

namespace {

constexpr int64_t kBatchCap = int64_t{1} << 20;

// "Repeat bs = bs + 1 until m_peak > m_total": the peak grows with bs, so search for the
// first batch that does not fit (doubling, then bisection) and return the one before it.
int64_t max_batch(const FinetuneInputs& in, memest_finetune_method method, double gpus,
                  double tp) {
  auto fits = [&](int64_t bs) {
    return method_peak(in, method, static_cast<double>(bs), gpus, tp) <= in.capacity;
  };
  if (!fits(1)) return 0;
  int64_t lo = 1, hi = 2;  // fits(lo), and hi is the next candidate
  while (hi <= kBatchCap && fits(hi)) {
    lo = hi;
    hi *= 2;
  }
  if (hi > kBatchCap) return lo;  // capped: fits up to the cap
  while (hi - lo > 1) {           // invariant: fits(lo), !fits(hi)
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

memest_finetune_option evaluate(const FinetuneInputs& in, const memest_model& m,
                                memest_finetune_method method, int64_t gpus, int64_t tp) {
  memest_finetune_option o;
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.method = method;
  o.tp = method == MEMEST_FINETUNE_TP ? gpus : method == MEMEST_FINETUNE_DP_TP ? tp : 1;
  o.dp = method == MEMEST_FINETUNE_TP ? 1 : o.tp > 0 ? gpus / o.tp : 0;
  o.applicable = method_unavailable_reason(m, method, gpus, tp).empty();
  if (!o.applicable) return o;
  const double g = static_cast<double>(gpus);
  o.max_batch = max_batch(in, method, g, static_cast<double>(tp));
  o.peak_bytes = method_peak(in, method, static_cast<double>(o.max_batch > 0 ? o.max_batch : 1), g,
                             static_cast<double>(tp));
  const double b = static_cast<double>(o.max_batch);
  switch (method) {
    case MEMEST_FINETUNE_CDP: o.score = b * g * 1.5; break;  // ZeRO-3 moves 1.5x the data
    case MEMEST_FINETUNE_ZERO3: o.score = b * g; break;
    case MEMEST_FINETUNE_TP: o.score = b; break;
    default: o.score = b * static_cast<double>(o.dp); break;
  }
  return o;
}

}  // namespace

void choose_method(FinetuneChoice& choice) {
  choice.selected = MEMEST_FINETUNE_CPU_OFFLOAD;
  choice.batch = 0;
  double best = 0;
  for (const memest_finetune_option& o : choice.options) {
    if (o.score > best) {  // strict: ties keep the earlier method (CDP, ADP, TP, DP+TP)
      best = o.score;
      choice.selected = o.method;
      choice.batch = o.max_batch;
    }
  }
}

FinetuneChoice select_finetune_method(const FinetuneRequest& r) {
  const FinetuneInputs in = finetune_inputs(r);
  const memest_model& m = r.model;
  FinetuneChoice choice;
  choice.options[0] = evaluate(in, m, MEMEST_FINETUNE_CDP, r.gpus, 1);
  choice.options[1] = evaluate(in, m, MEMEST_FINETUNE_ZERO3, r.gpus, 1);
  choice.options[2] = evaluate(in, m, MEMEST_FINETUNE_TP, r.gpus, r.gpus);
  // DP+TP: the request's tp, or the best-scoring tp with 1 < tp < gpus.
  memest_finetune_option hybrid = evaluate(in, m, MEMEST_FINETUNE_DP_TP, r.gpus, r.tp > 0 ? r.tp : 0);
  if (r.tp == 0) {
    for (int64_t tp = 2; tp < r.gpus; ++tp) {
      if (r.gpus % tp != 0) continue;
      const memest_finetune_option o = evaluate(in, m, MEMEST_FINETUNE_DP_TP, r.gpus, tp);
      if (o.applicable && (!hybrid.applicable || o.score > hybrid.score)) hybrid = o;
    }
  }
  choice.options[3] = hybrid;

  choose_method(choice);
  return choice;
}

}  // namespace memest
