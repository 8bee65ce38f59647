// LLMem (Kim et al., "LLMem: Estimating GPU Memory Usage for Fine-Tuning Pre-Trained LLMs"):
// peak GPU memory for fine-tuning with CDP, ZeRO-3 (advanced DP), 1D TP and DP+TP (Sec. 4-5),
// and Algorithm 1, the choice of the fastest method that avoids OOM (Sec. 6).
#pragma once

#include <string>

#include <array>

#include "finetune/chunks.hpp"
#include "memest/memest.h"
#include "plan/requests.hpp"

namespace memest {

// Everything the terms need, resolved once from a request.
struct FinetuneInputs {
  // The model as Hugging Face's modeling code builds it for fine-tuning: without the
  // multi-token-prediction modules, whose checkpoint weights it does not load
  // (modeling_deepseek_v3.py, modeling_glm4_moe.py: _keys_to_ignore_on_load_unexpected).
  memest_model model{};
  double seq_len = 0;             // sl
  bool checkpointing = true;
  bool flash_attention = false;   // only used without checkpointing
  double b16 = 2;                 // bytes of a 16-bit value (fp16 or bf16)
  double b32 = 4;
  double page = 2.0 * 1024 * 1024;  // cu_p
  double base = 0;                // m_base
  ChunkPlan chunk;                // cs and the packing it gives
  double embed_p = 0;             // word embedding parameters (kept out of chunks)
  double other_p = 0;             // parameters in chunks (neither embedding nor LM head)
  double lm_head_p = 0;           // untied LM head parameters
  double os_bytes = 0;            // m_os: per-tensor page-rounded momentum + variance
  double capacity = 0;            // m_total
};

// Validates the request and resolves the environment (chunk search included).
FinetuneInputs finetune_inputs(const FinetuneRequest& r);

// The single-GPU terms at batch size `batch` (m_back for tensor-parallel size `tp`).
memest_finetune_parts llmem_parts(const FinetuneInputs& in, double batch, double tp);

// Peaks per method (LLMem Sec. 4.2 and 5), from the single-GPU terms.
double peak_cdp(const memest_finetune_parts& p);
double peak_zero3(const memest_finetune_parts& p, double gpus);
double peak_tp(const memest_finetune_parts& p, double gpus);
double peak_dp_tp(const memest_finetune_parts& p, double gpus, double tp);

// The peak of `method` at `batch` (with `tp` for DP+TP; TP uses every GPU).
double method_peak(const FinetuneInputs& in, memest_finetune_method method, double batch,
                   double gpus, double tp);

// Why `method` cannot run on `gpus` GPUs with tensor-parallel size `tp`, and the request
// field to blame (both empty if it can).
struct MethodUnavailable {
  std::string field;
  std::string reason;
  bool empty() const { return reason.empty(); }
};
MethodUnavailable method_unavailable_reason(const memest_model& m, memest_finetune_method method,
                                            int64_t gpus, int64_t tp);

// Algorithm 1's last step: the highest score wins, ties in the order CDP, ADP, TP, DP+TP;
// CPU offloading (batch 0) when every score is 0.
// Algorithm 1's outcome: the method chosen and every method's option, in Algorithm 1's order.
struct FinetuneChoice {
  int32_t selected = MEMEST_FINETUNE_CPU_OFFLOAD;
  int64_t batch = 0;
  std::array<memest_finetune_option, 4> options{};  // CDP, ZeRO-3, TP, DP+TP
};
void choose_method(FinetuneChoice& choice);

memest_finetune_result compute_finetune(const FinetuneRequest& r);
FinetuneChoice select_finetune_method(const FinetuneRequest& r);

}  // namespace memest
