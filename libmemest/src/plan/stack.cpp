#include "plan/stack.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "core/enums.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"
#include "model/adapter.hpp"
#include "model/hybrid.hpp"
#include "model/model.hpp"

namespace memest {

void set_framework(Stack& st, int32_t requested) {
  st.fsdp_version = requested == MEMEST_FRAMEWORK_FSDP1 ? 1 : 2;
  st.framework = requested == MEMEST_FRAMEWORK_FSDP1 ? MEMEST_FRAMEWORK_FSDP : requested;
}

int32_t reported_framework(const Stack& st) {
  return st.framework == MEMEST_FRAMEWORK_FSDP && st.fsdp_version == 1 ? MEMEST_FRAMEWORK_FSDP1
                                                                        : st.framework;
}

bool keeps_master(int32_t framework, double param_bytes) {
  const bool masters =
      framework == MEMEST_FRAMEWORK_MEGATRON || framework == MEMEST_FRAMEWORK_DEEPSPEED;
  return masters && param_bytes < 4;
}

double optimizer_moment_bytes(int32_t optimizer, double state_bytes) {
  switch (optimizer) {
    case MEMEST_OPTIMIZER_ADAMW_8BIT:
    case MEMEST_OPTIMIZER_PAGED_ADAMW_8BIT:
      // two uint8 states + one fp32 absmax per block of 256 elements for each
      return 2 * (1 + 4.0 / 256);
    case MEMEST_OPTIMIZER_PAGED_ADAMW_32BIT:
      // bitsandbytes' 32-bit optimizers keep fp32 states whatever the parameter dtype
      // (bitsandbytes/optim/optimizer.py Optimizer2State.init_state: dtype=torch.float32)
      return 2 * 4.0;
    case MEMEST_OPTIMIZER_SGD_MOMENTUM: return state_bytes;
    case MEMEST_OPTIMIZER_SGD: return 0;
    default: return 2 * state_bytes;  // adam, adamw, adamw_foreach: exp_avg, exp_avg_sq
  }
}

double derived_optimizer_bytes(int32_t optimizer, int32_t framework, double param_bytes) {
  return derived_optimizer_bytes(optimizer, framework, param_bytes, MEMEST_MASTER_AUTO, 0);
}

double master_weight_bytes(int32_t master_weights, int32_t framework, double param_bytes) {
  switch (master_weights) {
    case MEMEST_MASTER_FP32: return 4;
    case MEMEST_MASTER_BF16:
    case MEMEST_MASTER_FP16:
    case MEMEST_MASTER_REMAINDER: return 2;
    case MEMEST_MASTER_NONE: return 0;
    default: return keeps_master(framework, param_bytes) ? 4 : 0;
  }
}

double derived_optimizer_bytes(int32_t optimizer, int32_t framework, double param_bytes,
                               int32_t master_weights, double state_bytes) {
  // With a master the states are fp32 beside it; without one torch.optim creates them like
  // the parameter (zeros_like(p)): in its stored dtype. A given dtype replaces either.
  const double master = master_weight_bytes(master_weights, framework, param_bytes);
  const double state = state_bytes > 0 ? state_bytes : master > 0 ? 4.0 : param_bytes;
  return optimizer_moment_bytes(optimizer, state) + master;
}

int32_t effective_zero(int32_t framework, int32_t zero) {
  if (framework == MEMEST_FRAMEWORK_FSDP && zero == 1) return 3;
  if (framework == MEMEST_FRAMEWORK_PYTORCH) return 0;
  return zero;
}

void resolve_grad_bytes(PretrainRequest& r) {
  if (r.precision.grad_bytes != MEMEST_GRAD_BYTES_DERIVE) return;
  const bool torch_grads =
      r.stack.framework == MEMEST_FRAMEWORK_FSDP || r.stack.framework == MEMEST_FRAMEWORK_PYTORCH;
  r.precision.grad_bytes = torch_grads ? r.precision.param_bytes : 4.0;
}

void resolve_adapter_bytes(PretrainRequest& r) {
  if (r.adapter.bytes != MEMEST_ADAPTER_BYTES_DERIVE) return;
  r.adapter.bytes = r.stack.framework == MEMEST_FRAMEWORK_MEGATRON ? r.precision.param_bytes : 4.0;
}

uint32_t recompute_modules_in_effect(const PretrainRequest& r) {
  if (r.stack.framework != MEMEST_FRAMEWORK_MEGATRON || r.recompute != MEMEST_RECOMPUTE_SELECTIVE) {
    return 0;
  }
  return r.stack.recompute_modules != 0 ? r.stack.recompute_modules
                                        : 1u << MEMEST_RECOMPUTE_MODULE_CORE_ATTN;
}

int32_t resolved_loss(int32_t framework, int32_t loss) {
  if (loss != MEMEST_LOSS_AUTO) return loss;
  return framework == MEMEST_FRAMEWORK_MEGATRON ? MEMEST_LOSS_FUSED : MEMEST_LOSS_UNFUSED;
}

int64_t loss_chunks_in_effect(int32_t loss, int32_t loss_chunks, int64_t local_seq_len) {
  if (loss != MEMEST_LOSS_CHUNKED && loss != MEMEST_LOSS_CHUNKED_LM_HEAD &&
      loss != MEMEST_LOSS_CHUNKED_LINEAR) {
    return 0;
  }
  if (loss_chunks > 0) return loss_chunks;
  if (loss == MEMEST_LOSS_CHUNKED_LM_HEAD) return std::max<int64_t>(1, (local_seq_len + 127) / 128);
  return 8;
}

bool stack_allows_layout(const PretrainRequest& r, int64_t num_microbatches) {
  const Stack& st = r.stack;
  const int32_t fw = st.framework;
  if (fw == MEMEST_FRAMEWORK_MEGATRON) return r.recompute != MEMEST_RECOMPUTE_OP_SELECTIVE;
  if (is_moe(r.model)) {  // as validate_stack refuses them
    const bool fsdp2 = fw == MEMEST_FRAMEWORK_FSDP && st.fsdp_version == 2;
    if ((r.ep > 1 && !fsdp2) || (r.etp > 0 && r.etp != r.tp && !(fsdp2 && r.etp == 1)) ||
        r.recompute == MEMEST_RECOMPUTE_OP_SELECTIVE) {
      return false;
    }
  }
  if (is_mla(r.model) && r.recompute == MEMEST_RECOMPUTE_OP_SELECTIVE) return false;
  if (fw == MEMEST_FRAMEWORK_PYTORCH && (r.tp > 1 || r.cp > 1 || r.pp > 1 || r.zero >= 2)) {
    return false;
  }
  // adapters run data-parallel or sharded outside Megatron (validate_adapter)
  if (r.adapter.enabled() && (r.tp > 1 || r.cp > 1 || r.pp > 1 || r.ep > 1)) return false;
  if (fw == MEMEST_FRAMEWORK_DEEPSPEED && r.pp > 1 && r.zero >= 2) return false;
  if (st.optimizer_in_backward && (r.pp > 1 || num_microbatches > 1)) return false;
  if (st.offload_params) {
    const int32_t zero = effective_zero(fw, r.zero);
    const bool sharded = (fw == MEMEST_FRAMEWORK_FSDP && zero >= 2) ||
                         (fw == MEMEST_FRAMEWORK_DEEPSPEED && zero == 3);
    if (!sharded) return false;
  }
  return true;
}

namespace {

void check_flag(const char* field, int32_t v) {
  if (v != 0 && v != 1) fail(field, "must be 0 or 1, got " + std::to_string(v));
}

void check_enum(const char* field, memest_enum which, int32_t v) {
  if (!enum_name(which, v)) {
    fail(field, "must be one of " + enum_choices(which) + ", got " + std::to_string(v));
  }
}

void check_bucket(const char* field, double v) {
  if (!std::isfinite(v) || v < 0 || v > 1e15) {
    fail(field, "must be 0 (the framework's default) or a positive size up to 1e15");
  }
}

std::string name_of(int32_t framework) { return enum_name(MEMEST_ENUM_FRAMEWORK, framework); }

// 1.15: training.master_weights and training.optimizer_state_dtype, the parts of a derived K.
void validate_optimizer_storage(const PretrainRequest& r) {
  const Stack& st = r.stack;
  check_enum("training.master_weights", MEMEST_ENUM_MASTER_WEIGHTS, st.master_weights);
  const double s = st.optimizer_state_bytes;
  if (s != 0 && s != 1 && s != 2 && s != 4) {
    fail("training.optimizer_state_dtype", "must be fp32, bf16, fp16 or fp8 (or left out)");
  }
  const bool master_given = st.master_weights != MEMEST_MASTER_AUTO;
  if (!master_given && s == 0) return;
  const char* field = master_given ? "training.master_weights" : "training.optimizer_state_dtype";
  if (r.precision.optimizer_bytes != MEMEST_OPTIMIZER_BYTES_DERIVE) {
    fail(field, "says how K is stored, so K cannot also be given whole: leave "
                "training.optimizer_bytes out (C API: optimizer_bytes = "
                "MEMEST_OPTIMIZER_BYTES_DERIVE)");
  }
  if (r.adapter.enabled()) {
    fail(field, "applies to the trained weights of full training; an adapter's states follow "
                "training.adapter.dtype");
  }
  const int32_t o = r.precision.optimizer;
  if (s != 0 && o != MEMEST_OPTIMIZER_ADAM && o != MEMEST_OPTIMIZER_ADAMW &&
      o != MEMEST_OPTIMIZER_ADAMW_FOREACH && o != MEMEST_OPTIMIZER_SGD_MOMENTUM) {
    fail("training.optimizer_state_dtype",
         std::string("needs an optimizer whose states take a dtype (adam, adamw, adamw_foreach, "
                     "sgd_momentum); ") + enum_name(MEMEST_ENUM_OPTIMIZER, o) +
             (o == MEMEST_OPTIMIZER_SGD ? " keeps no states" : " keeps its own"));
  }
  if (!master_given) return;
  const int32_t fw = st.framework;
  if (fw != MEMEST_FRAMEWORK_MEGATRON && fw != MEMEST_FRAMEWORK_DEEPSPEED) {
    fail("training.master_weights",
         "a master copy beside the weights is kept by frameworks megatron and deepspeed; under " +
             std::string(enum_name(MEMEST_ENUM_FRAMEWORK, reported_framework(st))) +
             " the optimizer steps the stored parameters (param_dtype fp32 keeps fp32 ones)");
  }
  const double p = r.precision.param_bytes;
  if (p >= 4 && st.master_weights != MEMEST_MASTER_NONE) {
    fail("training.master_weights", "fp32 parameters are their own master: none (or leave it out)");
  }
  if (st.master_weights == MEMEST_MASTER_REMAINDER && p != 2) {
    fail("training.master_weights", "remainder keeps the 16 bits an fp32 value has beyond bf16 "
                                    "weights: it needs param_dtype bf16");
  }
  if (st.master_weights == MEMEST_MASTER_NONE && p < 2) {
    fail("training.master_weights", "fp8 weights are updated through a master copy: none is not "
                                    "possible with param_dtype fp8");
  }
}

}  // namespace

void validate_stack(const PretrainRequest& r) {
  if (r.model.index_n_heads > 0) {
    // DeepSeek sparse attention (DeepSeek-V3.2): the indexer scores every key for each query
    // and index head before its top-k (index_topk) selection; those activations and the sparse
    // attention's are not modelled, so a training peak would miss them.
    fail("model.index_n_heads",
         "DeepSeek sparse attention's indexer (DeepSeek-V3.2) has no activation model yet: its "
         "parameters are counted (mode model_states gives the states), but a training peak "
         "would miss the indexer's scores; DeepSeek-V3's config gives the dense-attention run",
         MEMEST_ERR_UNSUPPORTED);
  }
  const Stack& st = r.stack;
  check_enum("training.framework", MEMEST_ENUM_FRAMEWORK, st.framework);
  check_enum("training.optimizer", MEMEST_ENUM_OPTIMIZER, r.precision.optimizer);
  check_enum("training.loss", MEMEST_ENUM_LOSS, st.loss);
  check_flag("training.optimizer_in_backward", st.optimizer_in_backward);
  check_flag("training.fp8", st.fp8);
  check_enum("training.compile", MEMEST_ENUM_COMPILE, st.compile);
  if (st.comm_overlap != MEMEST_OVERLAP_STACK_DEFAULT &&
      (st.comm_overlap < 0 || st.comm_overlap >= (1 << MEMEST_OVERLAP_COUNT))) {
    fail("training.comm_overlap", "must be -1 (the stack's default) or bits (1 << memest_overlap) of " +
                                      enum_choices(MEMEST_ENUM_OVERLAP) + ", got " +
                                      std::to_string(st.comm_overlap));
  }
  check_enum("training.moe_dispatcher", MEMEST_ENUM_MOE_DISPATCHER, st.moe_dispatcher);
  check_enum("training.attention_kernel", MEMEST_ENUM_ATTENTION_KERNEL, st.attention_kernel);
  // 1.6: the precision policy and the loss
  if (st.reduce_bytes != 0 && st.reduce_bytes != 2 && st.reduce_bytes != 4) {
    fail("training.reduce_dtype", "must be fp32, bf16 or fp16 (or left out: the gradient dtype)");
  }
  check_flag("training.loss_parallel", st.loss_parallel);
  check_flag("training.fp8_all_gather", st.fp8_all_gather);
  check_flag("training.logits_held", st.logits_held);
  if (st.autocast < -1 || st.autocast > 1) {
    fail("training.autocast", "must be -1 (the stack's default), 0 or 1, got " + std::to_string(st.autocast));
  }
  if (st.no_sync < -1 || st.no_sync > 1) {
    fail("training.no_sync", "must be -1 (the stack's default), 0 or 1, got " + std::to_string(st.no_sync));
  }
  if (st.fsdp_version != 1 && st.fsdp_version != 2) {
    fail("training.framework", "fsdp_version must be 1 or 2");
  }
  check_flag("training.offload.optimizer", st.offload_optimizer);
  check_flag("training.offload.params", st.offload_params);
  check_flag("training.offload.activations", st.offload_activations);
  check_flag("training.buckets.gradient_as_bucket_view", st.ddp_gradient_as_bucket_view);
  check_range("training.recompute_every", st.recompute_every, 1, kMaxLayers);
  check_bucket("training.buckets.bucket_cap_mb", st.ddp_bucket_mib);
  check_bucket("training.buckets.reduce_bucket_size", st.ds_reduce_bucket_size);
  check_bucket("training.buckets.allgather_bucket_size", st.ds_allgather_bucket_size);
  check_bucket("training.buckets.stage3_prefetch_bucket_size", st.ds_prefetch_bucket_size);
  check_bucket("training.buckets.stage3_max_live_parameters", st.ds_max_live_parameters);
  check_bucket("training.buckets.stage3_param_persistence_threshold",
               st.ds_param_persistence_threshold);

  const int32_t fw = st.framework;
  const bool megatron = fw == MEMEST_FRAMEWORK_MEGATRON;
  validate_optimizer_storage(r);
  const int32_t zero = effective_zero(fw, r.zero);
  const bool fsdp = fw == MEMEST_FRAMEWORK_FSDP;
  if (st.reduce_bytes != 0 && !fsdp) {
    fail("training.reduce_dtype", "is FSDP's MixedPrecisionPolicy reduce_dtype: it needs framework "
                                  "fsdp or fsdp1 (the others reduce in grad_dtype)");
  }
  if (st.fp8_all_gather && !(fsdp && st.fp8 && zero >= 2)) {
    fail("training.fp8_all_gather", "torchao's float8 all-gather needs framework fsdp with "
                                    "fp8 on and sharded parameters (zero 2 or 3)");
  }
  if (st.ddp < -1 || st.ddp > 1) {
    fail("training.ddp", "must be -1 (by the data-parallel size), 0 or 1, got " +
                             std::to_string(st.ddp));
  }
  if (st.ddp != -1 && !(fw == MEMEST_FRAMEWORK_PYTORCH || (fsdp && zero < 2))) {
    fail("training.ddp", "DistributedDataParallel's buckets are modelled under framework pytorch "
                         "and fsdp at zero 0-1 (DDP replicas): leave ddp out under " +
                             name_of(fw) + (fsdp ? " at zero 2-3" : ""));
  }
  if (st.ddp == 0 && r.gpus / (r.tp * r.cp * r.pp) > 1) {
    fail("training.ddp", "more than one data-parallel rank runs under DDP: ddp false needs one "
                         "data-parallel rank");
  }
  if (st.no_sync == 1 && !fsdp) {
    fail("training.no_sync", "keeping unsharded gradients over accumulation is FSDP's no_sync: "
                             "it needs framework fsdp or fsdp1 (DDP and ZeRO keep their usual "
                             "gradients either way)");
  }
  if (megatron && st.autocast != -1) {
    fail("training.autocast", "Megatron-LM runs its own mixed precision (--bf16/--fp16): leave "
                              "autocast out under framework megatron");
  }
  if (megatron && st.logits_held) {
    fail("training.logits_held", "Megatron-LM's training loop keeps only the loss, never the "
                                 "logits: leave logits_held off under framework megatron");
  }
  if (megatron && !st.loss_parallel) {
    fail("training.loss_parallel", "Megatron-LM's cross-entropy is always vocab-parallel: leave "
                                   "loss_parallel on under framework megatron");
  }
  // 1.9: the chunked losses' chunks
  const int32_t loss = resolved_loss(fw, st.loss);
  if (megatron && (loss == MEMEST_LOSS_CHUNKED_LM_HEAD || loss == MEMEST_LOSS_CHUNKED_LINEAR ||
                   loss == MEMEST_LOSS_FLASH_ATTN)) {
    fail("training.loss", std::string(enum_name(MEMEST_ENUM_LOSS, loss)) + " is " +
                              (loss == MEMEST_LOSS_CHUNKED_LM_HEAD   ? "LitGPT's"
                               : loss == MEMEST_LOSS_CHUNKED_LINEAR ? "torchtitan's"
                                                                    : "flash-attn's (llm-foundry's)") +
                              " loss, not Megatron-LM's: use fused or unfused under framework megatron");
  }
  if (st.loss_chunks < 0) {
    fail("training.loss_chunks", "must be 0 (the loss's own default) or a positive count, got " +
                                     std::to_string(st.loss_chunks));
  }
  if (st.loss_chunks > 0 && loss_chunks_in_effect(loss, 0, 0) == 0) {
    fail("training.loss_chunks", "counts the chunks of a chunked loss (chunked, chunked_lm_head, "
                                 "chunked_linear); the loss here is " + std::string(enum_name(MEMEST_ENUM_LOSS, loss)));
  }
  const int64_t local_seq = r.cp > 0 ? r.seq_len / r.cp : r.seq_len;
  if (st.loss_chunks > 0 && st.loss_chunks > local_seq) {
    fail("training.loss_chunks", std::to_string(st.loss_chunks) + " chunks of a sequence of " +
                                     std::to_string(local_seq) + " tokens per GPU: at most one "
                                     "chunk per token");
  }
  // FSDP1's flat parameters that mix frozen weights and adapters
  check_flag("training.fsdp_use_orig_params", st.fsdp_use_orig_params);
  if (st.fsdp_use_orig_params) {
    if (!(fsdp && st.fsdp_version == 1 && zero >= 2)) {
      fail("training.fsdp_use_orig_params", "is FSDP1's FlatParameter sharing: it needs framework "
                                            "fsdp1 with sharded parameters (zero 2 or 3)");
    }
    if (r.adapter.type != MEMEST_ADAPTER_LORA) {
      fail("training.fsdp_use_orig_params",
           "mixes frozen weights and LoRA adapters in one FlatParameter: it needs adapter lora "
           "(without an adapter every weight is trainable and nothing changes; QLoRA's 4-bit "
           "weights are wrapped apart from the 16-bit adapters)");
    }
    if (r.adapter.bytes != r.precision.param_bytes) {
      fail("training.adapter.dtype", "FSDP1 flattens tensors of one dtype only (torch/distributed/fsdp/"
                            "_flat_param.py _validate_tensors_to_flatten): with "
                            "fsdp_use_orig_params the adapters must be in param_dtype");
    }
  }
  if (!megatron && is_mla(r.model) && r.recompute == MEMEST_RECOMPUTE_OP_SELECTIVE) {
    fail("training.recompute", "op_selective (torchtitan's per-op policy) is modelled for "
                               "standard attention: with latent attention use none, selective "
                               "or full");
  }
  if (!megatron && is_moe(r.model)) {
    // A mixture-of-experts block outside Megatron is Hugging Face's sparse block
    // (activations/stack_activations.cpp eager_block_bytes; under fsdp too, where torchtitan's
    // own MoE is not modelled separately) run data-parallel or sharded. Without expert
    // parallelism every GPU holds every expert, and FSDP or DeepSpeed ZeRO shard them with the
    // rest of their block like any weight: a Hugging Face MoE under DeepSpeed is plain ZeRO
    // (DeepSpeed-MoE's own layer, deepspeed/moe/layer.py, replaces a block only where the
    // training script builds it).
    // torchtitan's expert parallelism (torchtitan/distributed/expert_parallel.py
    // ExpertParallel; torchtitan/distributed/parallel_dims.py: ep borrows from dp_shard x cp,
    // or x tp when the experts run without tensor parallelism) splits the experts over ep
    // ranks with an all-to-all token dispatch and combine, and FSDP2 shards each rank's
    // experts over the rest: edp = gpus / (etp x ep x pp), Megatron's folding
    // (plan/plan.cpp check_layout).
    const bool fsdp2 = fw == MEMEST_FRAMEWORK_FSDP && st.fsdp_version == 2;
    if (r.moe_capacity_factor > 0) {
      // Hugging Face's sparse blocks and torchtitan's MoE route drop-less (every token to its
      // top-k experts; torchtitan pads each expert's rows to an alignment only)
      fail("training.moe_capacity_factor",
           "is Megatron-Core's --moe-expert-capacity-factor: under framework " + name_of(fw) +
               " the MoE block routes drop-less, leave it out (or 0)");
    }
    if (r.ep > 1 && !fsdp2) {
      fail("parallel.ep",
           fw == MEMEST_FRAMEWORK_DEEPSPEED
               ? "DeepSpeed-MoE's expert parallelism (deepspeed/moe/layer.py: its own gating, "
                 "capacity and expert groups) is not modelled: under framework deepspeed ep "
                 "must be 1 (ZeRO shards every expert like any weight), or use framework fsdp "
                 "(torchtitan's expert parallelism) or megatron"
               : "expert parallelism outside Megatron is torchtitan's, on FSDP2: ep must be 1 "
                 "under framework " + name_of(fw) + " (got " + std::to_string(r.ep) +
                     "), or use framework fsdp or megatron");
    }
    if (r.etp > 0 && r.etp != r.tp && !(fsdp2 && r.etp == 1)) {
      fail("parallel.etp",
           fsdp2 ? "torchtitan's experts run tensor-parallel over tp or not at all: etp must be "
                   "0 (= tp) or 1 under framework fsdp, got " + std::to_string(r.etp)
                 : "expert tensor parallelism apart from tp is Megatron-Core's folding: etp must "
                   "be 0 (= tp) under framework " + name_of(fw) + ", got " +
                       std::to_string(r.etp));
    }
    if (r.recompute == MEMEST_RECOMPUTE_OP_SELECTIVE) {
      fail("training.recompute", "op_selective (torchtitan's per-op policy) is modelled for "
                                 "dense blocks: with a mixture-of-experts model use none, "
                                 "selective or full");
    }
    if (st.recompute_every > 1 && moe_layer_count(r.model) < r.model.num_hidden_layers) {
      fail("training.recompute_every",
           "checkpointing one block in N of a model mixing dense and MoE blocks (dense leading "
           "layers, a layer step) depends on which blocks are checkpointed, which is not "
           "modelled: use recompute_every 1");
    }
  }
  if (fw != MEMEST_FRAMEWORK_MEGATRON && is_hybrid(r.model)) {
    // the eager blocks' checkpointing policies are modelled for attention + MLP blocks; a
    // hybrid stage's Mamba/DeltaNet blocks differ (activations/mixer_activations.hpp counts
    // them for blocks that keep everything or only their input)
    if (r.recompute == MEMEST_RECOMPUTE_OP_SELECTIVE) {
      fail("training.recompute", "op_selective (torchtitan's per-op policy) is modelled for "
                                 "attention blocks: with a hybrid model use none, selective or full");
    }
    if (st.recompute_every > 1) {
      fail("training.recompute_every",
           "checkpointing one block in N of a hybrid model depends on which kinds of blocks are "
           "checkpointed, which is not modelled: use recompute_every 1");
    }
  }
  if (st.loss == MEMEST_LOSS_UNFUSED_16BIT) {
    // The 16-bit loss keeps the model's own fp16/bf16 logits (activations/stack_activations.hpp
    // Unfused16Bit): refused where the logits are not 16-bit or the loss upcasts them anyway.
    if (megatron) {
      fail("training.loss", "unfused_16bit is not a Megatron-LM loss: its cross-entropy "
                            "(megatron/core/tensor_parallel/cross_entropy.py) always works on "
                            "fp32 logits; use fused or unfused");
    }
    if (r.precision.param_bytes >= 4 && fw != MEMEST_FRAMEWORK_FSDP) {
      fail("training.loss", "unfused_16bit needs 16-bit parameters: with param_dtype fp32, " +
                                name_of(fw) + " runs under torch.autocast, whose fp32 list "
                                "(aten/src/ATen/autocast_mode.cpp) runs nll_loss on an fp32 copy "
                                "of the log-probs, so the loss is not 16-bit; use unfused");
    }
    // (fsdp computes in its MixedPrecisionPolicy's bf16 whatever the stored dtype: 16-bit
    // logits.) The model's own code may upcast before any loss sees the logits: LLMem's B,
    // HF LlamaForCausalLM's `logits = logits.float()` (models/llama/modeling_llama.py).
    if (r.model.logits_fp32) {
      fail("training.loss", "unfused_16bit needs 16-bit logits, but the model casts its logits "
                            "to fp32 before the loss (model.logits_fp32, as Hugging Face's "
                            "Llama-family code does): use unfused, or set model.logits_fp32 "
                            "false if the run's own model code returns 16-bit logits");
    }
  }
  if (megatron && r.recompute == MEMEST_RECOMPUTE_OP_SELECTIVE) {
    fail("training.recompute", "op_selective is torchtitan's per-op policy: it needs framework "
                               "fsdp, deepspeed or pytorch (Megatron's own is \"selective\")");
  }
  if (st.recompute_every > 1 && r.recompute == MEMEST_RECOMPUTE_NONE) {
    fail("training.recompute_every", "checkpointing one block in " +
                                         std::to_string(st.recompute_every) +
                                         " needs a recompute policy other than none");
  }
  if (megatron && st.recompute_every > 1) {
    fail("training.recompute_every", "Megatron-LM's --recompute-method / --recompute-num-layers "
                                     "are not modelled: recompute_every needs framework fsdp, "
                                     "deepspeed or pytorch");
  }
  if (megatron && st.compile != MEMEST_COMPILE_NONE) {
    fail("training.compile", "Megatron-LM does not run its model under torch.compile: use "
                             "framework fsdp, deepspeed or pytorch");
  }
  if (megatron && (r.precision.optimizer == MEMEST_OPTIMIZER_ADAMW_8BIT ||
                   r.precision.optimizer == MEMEST_OPTIMIZER_PAGED_ADAMW_8BIT ||
                   r.precision.optimizer == MEMEST_OPTIMIZER_PAGED_ADAMW_32BIT)) {
    fail("training.optimizer", "bitsandbytes' optimizers do not run under Megatron-LM's "
                               "distributed optimizer: use framework fsdp, deepspeed or pytorch");
  }
  if (megatron && r.precision.optimizer == MEMEST_OPTIMIZER_ADAMW_FOREACH) {
    fail("training.optimizer", "Megatron-LM steps with its fused Adam (Transformer Engine / "
                               "Apex FusedAdam), not torch.optim's foreach path: use adam or "
                               "adamw under framework megatron");
  }
  if (st.optimizer_in_backward) {
    if (fw != MEMEST_FRAMEWORK_FSDP && fw != MEMEST_FRAMEWORK_PYTORCH) {
      fail("training.optimizer_in_backward",
           "the per-parameter optimizer step in backward (torchtune) needs framework fsdp or "
           "pytorch, not " + name_of(fw));
    }
    if (r.pp > 1) {
      fail("training.optimizer_in_backward", "cannot step during backward under pipeline "
                                             "parallelism (pp > 1): gradients accumulate over "
                                             "micro-batches");
    }
    // tp, cp, pp <= 2^24 each: compare their product in double before forming it
    const double mp = static_cast<double>(r.tp) * static_cast<double>(r.cp) *
                      static_cast<double>(r.pp);
    if (r.global_batch > 0 && mp <= static_cast<double>(r.gpus) &&
        r.gpus % (r.tp * r.cp * r.pp) == 0) {
      const int64_t dp = r.gpus / (r.tp * r.cp * r.pp);
      const double per_step = static_cast<double>(r.micro_batch) * static_cast<double>(dp);
      if (static_cast<double>(r.global_batch) > per_step) {
        fail("training.optimizer_in_backward",
             "the optimizer steps during backward, so there is no gradient accumulation: "
             "global_batch must equal micro_batch * dp");
      }
    }
  }
  if (fw == MEMEST_FRAMEWORK_PYTORCH) {
    if (r.tp > 1) fail("parallel.tp", "framework pytorch is one GPU or DDP: tp must be 1 (use fsdp)");
    if (r.cp > 1) fail("parallel.cp", "framework pytorch is one GPU or DDP: cp must be 1 (use fsdp)");
    if (r.pp > 1) fail("parallel.pp", "framework pytorch is one GPU or DDP: pp must be 1 (use fsdp)");
    if (r.zero >= 2) {
      fail("parallel.zero", "framework pytorch (DDP) does not shard: use fsdp or deepspeed for "
                            "zero 2 or 3");
    }
  }
  if (fw == MEMEST_FRAMEWORK_DEEPSPEED && r.pp > 1 && r.zero >= 2) {
    fail("parallel.zero", "DeepSpeed's pipeline engine supports ZeRO 0 and 1 only, got zero " +
                              std::to_string(r.zero) + " with pp " + std::to_string(r.pp));
  }
  if (st.offload_params) {
    const bool sharded = (fw == MEMEST_FRAMEWORK_FSDP && zero >= 2) ||
                         (fw == MEMEST_FRAMEWORK_DEEPSPEED && zero == 3);
    if (!sharded) {
      fail("training.offload.params",
           "offloading parameters needs sharded parameters: framework fsdp with zero 2 or 3, "
           "or deepspeed with zero 3 (got " + name_of(fw) + " with zero " +
               std::to_string(r.zero) + ")");
    }
  }
  if (st.fp8 && !(r.gpu.fp8 > 0)) {
    fail("training.fp8", std::string("the GPU (") + r.gpu.name +
                             ") has no fp8 tensor cores (Hopper, Ada and Blackwell have them; "
                             "set gpu.fp8 to 1 for a custom GPU that does)");
  }
  // 1.11: Megatron-Core's --recompute-modules (transformer_config.py __post_init__ refuses
  // moe_act without grouped GEMMs and mla_up_proj without latent attention)
  if (st.recompute_modules >= (1u << MEMEST_RECOMPUTE_MODULE_COUNT)) {
    fail("training.recompute_modules",
         "must be bits (1 << memest_recompute_module) of " +
             enum_choices(MEMEST_ENUM_RECOMPUTE_MODULE) + ", got " +
             std::to_string(st.recompute_modules));
  }
  if (st.recompute_modules != 0) {
    if (!megatron) {
      fail("training.recompute_modules",
           "Megatron-Core's --recompute-modules: framework " + name_of(st.framework) +
               " recomputes by training.recompute alone");
    }
    auto has = [&](memest_recompute_module mod) { return (st.recompute_modules >> mod) & 1u; };
    for (memest_recompute_module mod : {MEMEST_RECOMPUTE_MODULE_MOE, MEMEST_RECOMPUTE_MODULE_MOE_ACT,
                                        MEMEST_RECOMPUTE_MODULE_SHARED_EXPERTS}) {
      if (has(mod) && !is_moe(r.model)) {
        fail("training.recompute_modules",
             std::string(enum_name(MEMEST_ENUM_RECOMPUTE_MODULE, mod)) +
                 " recomputes part of an MoE layer, and the model has no experts");
      }
    }
    if (st.recompute_modules != (1u << MEMEST_RECOMPUTE_MODULE_CORE_ATTN) &&
        layer_mix(r.model, 0, r.model.num_hidden_layers).any()) {
      fail("training.recompute_modules",
           "the recompute modules are modelled for attention + MLP/MoE layers; this hybrid "
           "model's Mamba / linear-attention layers have no per-module terms yet");
    }
    if (has(MEMEST_RECOMPUTE_MODULE_MLA_UP_PROJ) && !is_mla(r.model)) {
      fail("training.recompute_modules",
           "mla_up_proj recomputes multi-head latent attention's up projections, and the model "
           "has no kv_lora_rank (Megatron refuses it without multi_latent_attention)");
    }
  }
  // 1.12: Liger-Kernel (liger_kernel/transformers/monkey_patch.py) replaces modules of the
  // Hugging Face model classes; Megatron-LM runs its own (Transformer Engine) modules.
  check_flag("training.use_liger_kernel", st.use_liger_kernel);
  if (st.use_liger_kernel && megatron) {
    fail("training.use_liger_kernel",
         "Liger-Kernel patches Hugging Face's modeling code (RMSNorm, SwiGLU), which Megatron-LM "
         "does not run: its own fused kernels are already counted; turn it off under megatron");
  }
  if (st.use_liger_kernel && r.model.norm_type != MEMEST_NORM_RMS) {
    fail("training.use_liger_kernel",
         "Liger-Kernel patches the RMSNorm families (Llama, Mistral, Mixtral, Gemma, Qwen, Phi-3, "
         "Granite, OLMo 2, ...; liger_kernel/transformers/monkey_patch.py); this LayerNorm model "
         "(GPT-2, BLOOM, OPT, GPT-NeoX, Falcon, ...) has no patch, so it would change nothing");
  }
  if (st.use_liger_kernel && layer_mix(r.model, 0, r.model.num_hidden_layers).any()) {
    fail("training.use_liger_kernel",
         "Liger-Kernel has no patch for hybrid models' Mamba / linear-attention layers; its "
         "effect on them is not modelled");
  }
  // 1.9: NVFP4 (Transformer Engine's NVFP4BlockScaling recipe, docs/features/
  // low_precision_training/nvfp4: training on SM 10.0 / 10.3), as Megatron-LM runs it
  check_flag("training.fp4", st.fp4);
  if (st.fp4) {
    if (st.fp8) {
      fail("training.fp4", "NVFP4 and fp8 are two Transformer Engine recipes for the same "
                           "linears (Megatron-LM's --fp4-format or --fp8-format): turn one off");
    }
    if (!megatron) {
      fail("training.fp4", "NVFP4 training is modelled as Megatron-LM runs it (--fp4-format "
                           "e2m1 with Transformer Engine): use framework megatron");
    }
    if (!(r.gpu.fp4 > 0)) {
      fail("training.fp4", std::string("the GPU (") + r.gpu.name +
                               ") does not train in NVFP4 (Transformer Engine supports it on SM "
                               "10.0 and 10.3: B200, GB200; set gpu.fp4 to 1 for a custom GPU "
                               "that does)");
    }
  }
}

void validate_adapter(const PretrainRequest& r) {
  const Adapter& a = r.adapter;
  check_enum("training.adapter.type", MEMEST_ENUM_ADAPTER, a.type);
  if (!a.enabled()) return;
  const memest_model& m = r.model;
  if (a.targets == 0 || (a.targets & ~kLoraAllTargets) != 0) {
    fail("training.adapter.targets",
         "must name at least one of " + enum_choices(MEMEST_ENUM_LORA_TARGET) +
             (a.targets == 0 ? std::string(", got none") : ", got unknown bits"));
  }
  // The narrowest adapted module: a rank above its smaller side is no longer low-rank (the
  // adapter would hold more parameters than a full update of that module).
  const int64_t h = m.hidden_size;
  const int64_t qw = m.num_attention_heads * head_dim(m);
  const int64_t kvw = m.num_key_value_heads * head_dim(m);
  const int64_t f = is_moe(m) ? std::min(m.intermediate_size, expert_width(m)) : m.intermediate_size;
  int64_t narrowest = kMaxHidden;
  auto narrow = [&](memest_lora_target t, int64_t side) {
    if (a.targets & lora_bit(t)) narrowest = std::min(narrowest, side);
  };
  narrow(MEMEST_LORA_Q_PROJ, std::min(h, m.fused_qkv ? qw + 2 * kvw : qw));
  narrow(MEMEST_LORA_K_PROJ, std::min(h, m.fused_qkv ? qw + 2 * kvw : kvw));
  narrow(MEMEST_LORA_V_PROJ, std::min(h, m.fused_qkv ? qw + 2 * kvw : kvw));
  narrow(MEMEST_LORA_O_PROJ, std::min(h, qw));
  narrow(MEMEST_LORA_GATE_PROJ, std::min(h, f));
  narrow(MEMEST_LORA_UP_PROJ, std::min(h, f));
  narrow(MEMEST_LORA_DOWN_PROJ, std::min(h, f));
  narrow(MEMEST_LORA_LM_HEAD, std::min(h, m.vocab_size));
  narrow(MEMEST_LORA_EMBED_TOKENS, std::min(h, m.vocab_size));
  narrow(MEMEST_LORA_IN_PROJ, mixer_adapter_side(m, MEMEST_LORA_IN_PROJ));
  narrow(MEMEST_LORA_OUT_PROJ, mixer_adapter_side(m, MEMEST_LORA_OUT_PROJ));
  if (a.rank < 1 || a.rank > narrowest) {
    fail("training.adapter.rank",
         "must be between 1 and " + std::to_string(narrowest) +
             " (the smaller side of the narrowest targeted module: a larger rank is no longer a "
             "low-rank update), got " + std::to_string(a.rank));
  }
  adapter_parameters(m, a.targets, static_cast<double>(a.rank), "training.adapter.targets");
  if (!std::isfinite(a.alpha) || a.alpha <= 0 || a.alpha > 1e6) {
    fail("training.adapter.alpha", "must be a positive number up to 1e6");
  }
  if (!std::isfinite(a.dropout) || a.dropout < 0 || a.dropout >= 1) {
    fail("training.adapter.dropout", "must be in [0, 1)");
  }
  if (a.bytes != 2 && a.bytes != 4) {
    fail("training.adapter.dtype", "must be fp32 (peft's default: autocast_adapter_dtype casts "
                                   "adapters to fp32) or bf16/fp16 (2 bytes)");
  }
  check_flag("training.adapter.double_quant", a.double_quant);
  check_flag("training.adapter.quantize_lm_head", a.quantize_lm_head);
  if (a.quantize_lm_head && a.type != MEMEST_ADAPTER_QLORA) {
    fail("training.adapter.quantize_lm_head", "quantises the LM head to NF4: it needs type qlora");
  }
  if (a.quantize_lm_head && m.tie_word_embeddings) {
    fail("training.adapter.quantize_lm_head", "the model ties its LM head to the input "
                                              "embedding, which bitsandbytes never quantises "
                                              "(nn.Embedding): leave quantize_lm_head off");
  }
  if (a.double_quant && a.type != MEMEST_ADAPTER_QLORA) {
    fail("training.adapter.double_quant", "quantises QLoRA's absmax statistics: it needs type "
                                          "qlora (a lora base is not quantised)");
  }
  if (a.type == MEMEST_ADAPTER_QLORA && r.precision.param_bytes != 2) {
    fail("training.param_dtype", "qlora keeps its frozen linears in NF4 and computes in "
                                 "bnb_4bit_compute_dtype: param_dtype must be bf16 or fp16, not "
                                 "a " + std::to_string(static_cast<int>(r.precision.param_bytes)) +
                                 "-byte type");
  }
  const int32_t fw = r.stack.framework;
  if (fw == MEMEST_FRAMEWORK_MEGATRON) {
    // LoRA on Megatron-Core (ms-swift's Megatron back end, swift/megatron/tuners/lora.py
    // LoraParallelLinear; peft's tuners/lora/tp_layer.py splits alike): adapters on the
    // Transformer Engine linears and the router, built with the model's config (params_dtype).
    if (a.type == MEMEST_ADAPTER_QLORA) {
      fail("training.adapter", "qlora under Megatron: its LoRA wraps Transformer Engine linears, "
                               "which hold no NF4 weights (bitsandbytes quantises nn.Linear "
                               "only): use lora, or framework pytorch, fsdp or deepspeed for qlora");
    }
    if (a.bytes != r.precision.param_bytes) {
      fail("training.adapter.dtype", "under Megatron the adapters are built in the model's "
                                     "params_dtype (LoraParallelLinear passes the model config to "
                                     "its Transformer Engine linears): leave it out or set it to "
                                     "the param_dtype (bf16 for a bf16 run); the distributed "
                                     "optimizer keeps their fp32 main copy");
    }
    if (a.targets & (lora_bit(MEMEST_LORA_LM_HEAD) | lora_bit(MEMEST_LORA_EMBED_TOKENS))) {
      fail("training.adapter.targets", "lm_head and embed_tokens under Megatron: its LoRA wraps "
                                       "the blocks' Transformer Engine linears and the router; the "
                                       "output layer (a plain ColumnParallelLinear) and the "
                                       "embedding take none: target the blocks' projections");
    }
    if (r.stack.fp8 || r.stack.fp4) {
      fail(r.stack.fp8 ? "training.fp8" : "training.fp4",
           "low-precision linears with LoRA under Megatron are not modelled (the adapters' own "
           "Transformer Engine linears would run in fp8 too): turn it off with an adapter");
    }
  } else {
    const std::pair<const char*, int64_t> splits[] = {{"tp", r.tp}, {"cp", r.cp}, {"pp", r.pp}};
    for (const auto& [name, size] : splits) {
      if (size > 1) {
        fail(std::string("parallel.") + name,
             std::string("adapters (peft, torchtune) run data-parallel or sharded (FSDP, ZeRO): ") +
                 name + " must be 1 (framework megatron runs LoRA with tp, pp, cp and ep)");
      }
    }
    if (r.ep > 1) fail("parallel.ep", "adapters (peft) run data-parallel or sharded (FSDP, ZeRO), "
                                      "every GPU holding every expert: ep must be 1 (framework "
                                      "megatron runs LoRA with expert parallelism)");
    if (r.stack.fp8) {
      fail("training.fp8", "fp8 linears (torchao Float8Linear, Transformer Engine) do not wrap "
                           "peft's LoRA layers: turn fp8 off with an adapter");
    }
    if (is_mla(m) || m.mtp_layers > 0) {
      fail("model", "adapters on latent-attention or multi-token-prediction models are counted "
                    "(model/adapter.hpp) but their blocks are modelled under framework megatron "
                    "only (LoRA as ms-swift's Megatron back end runs it): use framework megatron "
                    "or a model with standard attention",
           MEMEST_ERR_UNSUPPORTED);
    }
  }
  if ((a.targets & lora_bit(MEMEST_LORA_ROUTER)) && !is_moe(m)) {
    fail("training.adapter.targets", "router: the model is dense (num_experts = 0), it has no "
                                     "router to adapt");
  }
}

}  // namespace memest
