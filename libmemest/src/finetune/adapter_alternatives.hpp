// Beside LLMem's Algorithm 1 (select.cpp): when no full fine-tuning method fits and the choice
// falls back to CPU offloading, LoRA and QLoRA are reported as alternatives, each a DIFFERENT
// training method (a frozen base, adapters of a stated rank on stated modules), with its peak and
// largest batch from the pretraining estimator's adapter model (README "LoRA and QLoRA"). They
// are never substituted for the selected method: LLMem's choice and numbers are unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/requests.hpp"

namespace memest {

struct AdapterAlternative {
  int32_t type = MEMEST_ADAPTER_LORA;
  Adapter adapter;              // the stated rank, alpha, targets, dtype
  int32_t framework = MEMEST_FRAMEWORK_PYTORCH;  // pytorch on 1 GPU, fsdp (zero 3) on more
  int32_t recompute = MEMEST_RECOMPUTE_NONE;     // the request's gradient checkpointing
  double trainable_parameters = 0;
  int64_t max_batch = 0;        // per GPU; 0 when batch 1 does not fit either
  double peak_bytes = 0;        // at max_batch (at batch 1 when none fits)
  std::string reason;           // non-empty: the estimator refused the model (e.g. MoE)
};

// The stated configuration: peft's LoraConfig defaults (r 8, alpha 8, dropout 0, q_proj and
// v_proj, fp32 adapters), the QLoRA one with double quantisation (the QLoRA paper's setting).
std::vector<AdapterAlternative> adapter_alternatives(const FinetuneRequest& r);

}  // namespace memest
