// The requests of every mode as the core sees them: plain C++ values with their defaults
// written once, here. The C API (capi/) copies a caller's versioned structs into these, the
// JSON reader (json/) fills them from a document; the modes never see either form.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memest/memest.h"
#include "model/gpu_profile.hpp"
#include "model/model.hpp"

namespace memest {

// How parameters, gradients and optimizer states are stored, in bytes per parameter.
// The 4D paper's default is bf16 weights (2) + fp32 gradients (4) + Adam K = 12: 18 bytes.
struct Precision {
  double param_bytes = 2;       // bf16 weights
  double grad_bytes = 4;        // fp32 gradient accumulation (Llama 3, Megatron-LM)
  double optimizer_bytes = 12;  // Adam: fp32 master weights, momentum, variance (K = 12);
                                // MEMEST_OPTIMIZER_BYTES_DERIVE (< 0): from `optimizer`, the
                                // framework and param_bytes (states/stack_states.hpp)
  int32_t optimizer = MEMEST_OPTIMIZER_ADAM;
};

// The training stack's choices beyond the 4D paper (README "Training stack"). Every default
// reproduces the Megatron numbers of 1.1 exactly.
struct Stack {
  int32_t framework = MEMEST_FRAMEWORK_MEGATRON;
  int32_t optimizer_in_backward = 0;
  int64_t recompute_every = 1;
  int32_t loss = MEMEST_LOSS_AUTO;
  int32_t fp8 = 0;
  int32_t compile = MEMEST_COMPILE_NONE;  // memest_compile: which parts torch.compile compiles
  int32_t offload_optimizer = 0;
  int32_t offload_params = 0;
  int32_t offload_activations = 0;
  // framework buckets; 0 = the framework's documented default (states/stack_states.hpp)
  double ddp_bucket_mib = 0;
  double ds_reduce_bucket_size = 0;
  double ds_allgather_bucket_size = 0;
  double ds_prefetch_bucket_size = 0;
  double ds_max_live_parameters = 0;
  double ds_param_persistence_threshold = 0;
  int32_t ddp_gradient_as_bucket_view = 0;
  // Communication overlapped with compute: bits (1 << memest_overlap), or the stack's own
  // defaults (MEMEST_OVERLAP_STACK_DEFAULT; throughput/throughput.hpp overlap_bits).
  int32_t comm_overlap = MEMEST_OVERLAP_STACK_DEFAULT;
  int32_t moe_dispatcher = MEMEST_MOE_DISPATCHER_ALLTOALL;  // how MoE tokens cross EP ranks
  int32_t attention_kernel = MEMEST_ATTENTION_AUTO;         // whose attention kernels run
  // 1.6. MEMEST_FRAMEWORK_FSDP1 is read as framework FSDP with fsdp_version 1 (plan/stack.hpp
  // set_framework): every FSDP mechanism applies, plus FSDP1's own.
  int32_t fsdp_version = 2;
  double reduce_bytes = 0;     // gradient reduction dtype (MixedPrecisionPolicy reduce_dtype);
                               // 0: the gradient dtype
  int32_t loss_parallel = 1;   // 0: the loss gathers the vocabulary under tp > 1
  int32_t autocast = -1;       // -1: fp32 parameters outside FSDP run under autocast
  int32_t fp8_all_gather = 0;  // FSDP2 all-gathers fp8 weights (torchao)
  int32_t no_sync = -1;        // -1: fsdp1 keeps unsharded gradients under accumulation
  int32_t logits_held = 0;     // the training loop references the logits through backward
  int32_t ddp = -1;            // -1: DDP wraps the model when dp > 1; 1: also one process
                               // (torchrun with DDP on one GPU); 0: one GPU, not wrapped
  // 1.9
  int32_t loss_chunks = 0;     // chunks of a chunked loss; 0: the loss's own default
  int32_t fsdp_use_orig_params = 0;  // fsdp1 + lora: blocks' flat parameters mix frozen
                                     // weights and adapters (states/adapter_states.cpp)
  int32_t fp4 = 0;             // NVFP4 linears (Transformer Engine, Megatron --fp4-format e2m1)
  // 1.11: bits (1u << memest_recompute_module) recompute SELECTIVE checkpoints under Megatron;
  // 0: Megatron's default, core_attn alone (activations/activations.hpp)
  uint32_t recompute_modules = 0;
  // 1.12: Liger-Kernel's fused RMSNorm and gated-MLP kernels in the Hugging Face blocks
  // (activations/stack_activations.hpp EagerBlockOptions::liger)
  int32_t use_liger_kernel = 0;
  // 1.15: how the optimizer stores what it updates (K when derived; plan/stack.hpp
  // derived_optimizer_bytes): the master copy (memest_master_weights) and the moments' bytes
  // per element (0: fp32 beside a master, else the weights' dtype)
  int32_t master_weights = MEMEST_MASTER_AUTO;
  double optimizer_state_bytes = 0;
  // The reduction's bytes per element in effect.
  double reduce_dtype_bytes(double grad_bytes) const {
    return reduce_bytes > 0 ? reduce_bytes : grad_bytes;
  }
};

// A LoRA / QLoRA adapter on a frozen base (README "LoRA and QLoRA"). Defaults are peft's
// LoraConfig (r 8, lora_alpha 8, lora_dropout 0.0, Llama's q_proj and v_proj), its fp32
// adapters (autocast_adapter_dtype=True casts bf16/fp16 adapter weights to fp32) and
// BitsAndBytesConfig's bnb_4bit_use_double_quant=False.
struct Adapter {
  int32_t type = MEMEST_ADAPTER_NONE;
  int64_t rank = 8;
  double alpha = 8;
  double dropout = 0;
  uint32_t targets = (1u << MEMEST_LORA_Q_PROJ) | (1u << MEMEST_LORA_V_PROJ);
  double bytes = 4;  // adapter weights, gradients and optimizer states' dtype
  int32_t double_quant = 0;
  int32_t quantize_lm_head = 0;  // qlora: the LM head in NF4 too (LitGPT quantises it)
  bool all_linear = false;  // targets given as peft's "all-linear" (echoed beside the expansion)
  bool enabled() const { return type != MEMEST_ADAPTER_NONE; }
};

struct ModelStatesRequest {
  memest_model model = default_model();
  memest_gpu gpu = default_gpu();  // no capacity: verdict UNKNOWN
  int64_t gpus = 1;
  int32_t zero = 0;
  Precision precision;
};

// One parallel layout (the data-parallel size follows from the GPUs).
struct Layout {
  int64_t tp = 1, cp = 1, pp = 1, vpp = 1;
  int64_t micro_batch = 1;
  int32_t recompute = MEMEST_RECOMPUTE_NONE;
  int32_t zero = 1;  // the distributed optimizer over d*cp
  // Expert parallelism (mixture-of-experts models only): experts split over ep ranks, each
  // expert's MLP over etp ranks; 0 = the same as tp (Megatron-LM's default when
  // --expert-tensor-parallel-size is not given, megatron/training/arguments.py).
  int64_t ep = 1, etp = 0;
};

struct PretrainRequest {
  memest_model model = default_model();
  memest_gpu gpu = default_gpu();
  int64_t gpus = 1;
  int64_t tp = 1, cp = 1, pp = 1, vpp = 1;
  int32_t sequence_parallel = 1;
  int32_t zero = 1;
  int64_t seq_len = 2048;
  int64_t micro_batch = 1;
  int64_t global_batch = 0;  // 0: not given (pipeline assumed full)
  int32_t recompute = MEMEST_RECOMPUTE_NONE;
  int32_t flash_attention = 1;
  int32_t activation_model = MEMEST_ACTIVATIONS_AUTO;
  Precision precision;
  int32_t uneven_pipeline = 0;
  Stack stack;
  // Expert parallelism (see Layout) and the MoE token capacity: 0 = drop-less routing (every
  // rank gets the average load, tokens*k/E per expert); > 0 = Megatron's
  // --moe-expert-capacity-factor, the bound each expert's tokens are cut or padded to.
  int64_t ep = 1, etp = 0;
  double moe_capacity_factor = 0;
  // > 0: the last pipeline stage holds exactly this many layers and the other pp - 1 stages
  // split the rest evenly (Megatron-LM's --decoder-last-pipeline-num-layers; DeepSeek-V3's
  // 61 layers over 16 stages); 0: the split above (uneven_pipeline).
  int64_t last_stage_layers = 0;
  // > 0: the first stage holds exactly this many layers (--decoder-first-pipeline-num-layers);
  // with last_stage_layers too, the pp - 2 stages between split the rest evenly.
  int64_t first_stage_layers = 0;
  // Megatron-LM's --pipeline-model-parallel-layout ("Et*3|(tt|)*29,m|L"); empty: none. It
  // sets every stage's layers and, by its number of virtual stages, pp x vpp.
  std::string pipeline_layout;
  Adapter adapter;

  void set_layout(const Layout& l) {
    tp = l.tp, cp = l.cp, pp = l.pp, vpp = l.vpp, micro_batch = l.micro_batch;
    recompute = l.recompute, zero = l.zero;
    ep = l.ep, etp = l.etp;
  }
  // The expert tensor-parallel size in effect (etp, or tp when 0).
  int64_t expert_tp() const { return etp > 0 ? etp : tp; }
};

struct SearchRequest {
  PretrainRequest base;  // model, GPU, gpus, seq_len, global_batch (> 0), precision, SP, FA
  // the space to enumerate (when `layouts` is empty)
  int64_t max_tp = 0;    // 0: gpus_per_node when tp_within_node, else gpus
  int64_t max_cp = 0;    // 0: no limit
  int64_t max_pp = 0;    // 0: no limit
  int64_t max_vpp = 4;
  int64_t max_micro_batch = 0;  // 0: no limit
  int64_t max_ep = 0;           // 0: no limit (MoE models; a dense model enumerates ep = 1)
  int64_t micro_batch = 0;      // > 0: only this micro-batch (a pinned training.micro_batch)
  // none, selective, full: op_selective (torchtitan's policy) only when asked for
  uint32_t recompute_mask = (1u << MEMEST_RECOMPUTE_NONE) | (1u << MEMEST_RECOMPUTE_SELECTIVE) |
                            (1u << MEMEST_RECOMPUTE_FULL);
  uint32_t zero_mask = 1u << 1;                                   // the distributed optimizer
  int32_t tp_within_node = 1;
  std::vector<Layout> layouts;  // or exactly these
  int32_t include_oom = 0;
  int32_t uneven_pipeline = 1;
  // Options tried for every layout (1.5): bit 0 fp8 off, bit 1 on; bit (1 << memest_compile)
  // per compile setting; 0 = the base request's setting only.
  uint32_t fp8_options = 0;
  uint32_t compile_options = 0;
  // (1.6) layouts whose probability of OOM exceeds this are pruned (core/verdict.hpp)
  double max_oom_probability = MEMEST_SEARCH_MAX_OOM_PROBABILITY;
};

struct FinetuneRequest {
  memest_model model = default_model();
  memest_gpu gpu = default_gpu();
  int64_t gpus = 1;
  int32_t method = MEMEST_FINETUNE_CDP;
  int64_t tp = 0;        // DP+TP: tensor-parallel size (0 = best for AUTO)
  int64_t batch = 1;
  int64_t seq_len = 512;  // LLMem's experiments
  int32_t gradient_checkpointing = 1;
  int32_t flash_attention = 0;
  double param_bytes = 2;  // B16
  double base_bytes = -1;  // m_base override; < 0: the GPU's context_bytes
  double page_bytes = 0;   // cu_p override; 0: the GPU's page_bytes
  double chunk_bytes = 0;  // chunk size override; 0: searched
};

}  // namespace memest
