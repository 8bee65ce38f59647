#include "plan/stack.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/enums.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"
#include "model/model.hpp"

namespace memest {

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
    case MEMEST_OPTIMIZER_SGD_MOMENTUM: return state_bytes;
    case MEMEST_OPTIMIZER_SGD: return 0;
    default: return 2 * state_bytes;  // adam, adamw: exp_avg, exp_avg_sq
  }
}

double derived_optimizer_bytes(int32_t optimizer, int32_t framework, double param_bytes) {
  // With a master the states are fp32 beside it; without one torch.optim creates them like
  // the parameter (zeros_like(p)): in its stored dtype.
  const bool master = keeps_master(framework, param_bytes);
  return optimizer_moment_bytes(optimizer, master ? 4.0 : param_bytes) + (master ? 4.0 : 0.0);
}

int32_t effective_zero(int32_t framework, int32_t zero) {
  if (framework == MEMEST_FRAMEWORK_FSDP && zero == 1) return 3;
  if (framework == MEMEST_FRAMEWORK_PYTORCH) return 0;
  return zero;
}

int32_t resolved_loss(int32_t framework, int32_t loss) {
  if (loss != MEMEST_LOSS_AUTO) return loss;
  return framework == MEMEST_FRAMEWORK_MEGATRON ? MEMEST_LOSS_FUSED : MEMEST_LOSS_UNFUSED;
}

bool stack_allows_layout(const PretrainRequest& r, int64_t num_microbatches) {
  const Stack& st = r.stack;
  const int32_t fw = st.framework;
  if (fw == MEMEST_FRAMEWORK_MEGATRON) return r.recompute != MEMEST_RECOMPUTE_OP_SELECTIVE;
  if (fw == MEMEST_FRAMEWORK_PYTORCH && (r.tp > 1 || r.cp > 1 || r.pp > 1 || r.zero >= 2)) {
    return false;
  }
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

}  // namespace

void validate_stack(const PretrainRequest& r) {
  const Stack& st = r.stack;
  check_enum("training.framework", MEMEST_ENUM_FRAMEWORK, st.framework);
  check_enum("training.optimizer", MEMEST_ENUM_OPTIMIZER, r.precision.optimizer);
  check_enum("training.loss", MEMEST_ENUM_LOSS, st.loss);
  check_flag("training.optimizer_in_backward", st.optimizer_in_backward);
  check_flag("training.fp8", st.fp8);
  check_flag("training.compile", st.compile);
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
  const int32_t zero = effective_zero(fw, r.zero);
  if (!megatron && (is_moe(r.model) || is_mla(r.model) || r.model.mtp_layers > 0)) {
    // The mixture-of-experts, latent-attention and MTP terms (expert parallelism, token
    // dispatch) are Megatron-Core's; the other stacks' blocks are modelled for dense models.
    fail("training.framework",
         "mixture-of-experts, multi-head latent attention and multi-token-prediction models are "
         "estimated for framework \"megatron\" (Megatron-Core expert parallelism) only");
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
  if (megatron && st.compile) {
    fail("training.compile", "Megatron-LM does not run its model under torch.compile: use "
                             "framework fsdp, deepspeed or pytorch");
  }
  if (megatron && (r.precision.optimizer == MEMEST_OPTIMIZER_ADAMW_8BIT ||
                   r.precision.optimizer == MEMEST_OPTIMIZER_PAGED_ADAMW_8BIT)) {
    fail("training.optimizer", "bitsandbytes' 8-bit optimizers do not run under Megatron-LM's "
                               "distributed optimizer: use framework fsdp, deepspeed or pytorch");
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
}

}  // namespace memest
