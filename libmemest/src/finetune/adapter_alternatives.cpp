#include "finetune/adapter_alternatives.hpp"

#include "core/error.hpp"
#include "pretrain/pretrain.hpp"

namespace memest {

namespace {

constexpr int64_t kBatchCap = int64_t{1} << 16;

}  // namespace

std::vector<AdapterAlternative> adapter_alternatives(const FinetuneRequest& r) {
  std::vector<AdapterAlternative> out;
  for (int32_t type : {MEMEST_ADAPTER_LORA, MEMEST_ADAPTER_QLORA}) {
    AdapterAlternative a;
    a.type = type;
    a.adapter.type = type;
    a.adapter.double_quant = type == MEMEST_ADAPTER_QLORA ? 1 : 0;
    a.framework = r.gpus > 1 ? MEMEST_FRAMEWORK_FSDP : MEMEST_FRAMEWORK_PYTORCH;
    a.recompute = r.gradient_checkpointing ? MEMEST_RECOMPUTE_FULL : MEMEST_RECOMPUTE_NONE;
    PretrainRequest p;
    p.model = r.model;
    p.gpu = r.gpu;
    p.gpus = r.gpus;
    p.seq_len = r.seq_len;
    p.flash_attention = r.flash_attention;
    p.recompute = a.recompute;
    // FSDP shards across the GPUs; one GPU runs plain PyTorch, which shards nothing (a
    // ZeRO stage there is refused: plan/stack.cpp)
    p.zero = r.gpus > 1 ? 3 : 0;
    p.precision.param_bytes = 2;
    p.precision.optimizer = MEMEST_OPTIMIZER_ADAMW;
    p.precision.optimizer_bytes = MEMEST_OPTIMIZER_BYTES_DERIVE;
    p.stack.framework = a.framework;
    p.adapter = a.adapter;
    auto peak_at = [&](int64_t bs) {
      PretrainRequest q = p;
      q.micro_batch = bs;
      q.global_batch = bs * r.gpus;  // one micro-batch per step: no accumulation
      return compute_pretrain(q, nullptr, 0);
    };
    try {
      const memest_pretrain_result one = peak_at(1);
      a.trainable_parameters = one.trainable_parameters;
      a.peak_bytes = one.peak_bytes;
      auto fits = [&](int64_t bs) { return !peak_at(bs).oom_predicted; };
      if (fits(1)) {
        int64_t lo = 1, hi = 2;
        while (hi <= kBatchCap && fits(hi)) lo = hi, hi *= 2;
        if (hi <= kBatchCap) {
          while (hi - lo > 1) {
            const int64_t mid = lo + (hi - lo) / 2;
            (fits(mid) ? lo : hi) = mid;
          }
        }
        a.max_batch = lo;
        a.peak_bytes = peak_at(lo).peak_bytes;
      }
    } catch (const Error& e) {
      a.reason = e.what();
    }
    out.push_back(a);
  }
  return out;
}

}  // namespace memest
