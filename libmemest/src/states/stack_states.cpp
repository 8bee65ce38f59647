#include "states/stack_states.hpp"

#include <algorithm>
#include <cmath>
#include <string>


namespace memest {

StackStates stack_state_bytes(const StackStateInput& in) {
  const Precision& p = in.precision;
  const Stack& st = in.stack;
  const double n = in.params;
  const int32_t z = in.zero;
  const double g = in.shard_group;
  const bool fsdp = st.framework == MEMEST_FRAMEWORK_FSDP;
  // master bytes inside K (a K given whole is taken to hold the fp32 master where the
  // framework keeps one; a stored master as training.master_weights says)
  const double master_per_param =
      st.master_weights != MEMEST_MASTER_AUTO
          ? master_weight_bytes(st.master_weights, st.framework, p.param_bytes)
      : keeps_master(st.framework, p.param_bytes) ? std::min(4.0, p.optimizer_bytes)
                                                   : 0.0;
  StackStates s;
  // The ZeRO partitioning, common to Megatron's distributed optimizer, DeepSpeed and FSDP
  // (FSDP shards parameters, gradients and optimizer together for zero 2 and 3; 0 replicates).
  s.weights = n * p.param_bytes / (z >= 3 || (fsdp && z >= 2) ? g : 1.0);
  s.gradients = n * p.grad_bytes / (z >= 2 ? g : 1.0);
  s.optimizer = n * p.optimizer_bytes / (z >= 1 ? g : 1.0);
  s.master = n * master_per_param / (z >= 1 ? g : 1.0);

  const double reduce_bytes = st.reduce_dtype_bytes(p.grad_bytes);
  if (fsdp && z >= 2) {
    if (in.pp > 1) {
      // torchtitan under PP: unsharded bf16 parameters and unsharded gradients in the reduce
      // dtype stay across the micro-batches of the step. The sharded gradient only exists
      // once the last micro-batch's reduce-scatter has freed the unsharded one, layer by
      // layer: the unsharded set replaces it (1.5 counted both).
      s.weights += n * 2;
      s.gradients = n * reduce_bytes;
    } else if (z == 2) {
      s.weights += n * 2;  // reshard_after_forward=False: unsharded bf16 params kept
    }
    if (in.pp == 1 && fsdp_keeps_unsharded_gradients(st, in.accumulates)) {
      // no_sync: the unsharded gradients of every micro-batch accumulate until the last one
      // reduces them (FSDP1 fully_sharded_data_parallel.py no_sync: "FSDP will accumulate the
      // full model gradients (instead of gradient shards) until the eventual sync")
      s.gradients = n * p.grad_bytes;
    }
  }
  if (st.optimizer_in_backward) {
    // only the gradient being stepped is alive (sharded like the others)
    s.gradients = std::min(s.gradients, in.largest_tensor * p.grad_bytes / (z >= 2 ? g : 1.0));
  }
  if ((p.optimizer == MEMEST_OPTIMIZER_PAGED_ADAMW_8BIT ||
       p.optimizer == MEMEST_OPTIMIZER_PAGED_ADAMW_32BIT) && !st.offload_optimizer) {
    s.paged = s.optimizer - s.master;
    s.optimizer = s.master;
  }
  if (st.offload_optimizer) {
    s.host += s.optimizer;
    s.optimizer = 0;
    if (st.framework == MEMEST_FRAMEWORK_DEEPSPEED && z >= 1) {
      // ZeRO-Offload streams each reduced gradient partition into the fp32 gradient of the
      // CPU master (runtime/zero/stage_1_and_2.py cpu_offload: copy_grads_in_partition /
      // async_inplace_copy_grad_to_fp32_buffer_from_gpu; stage3.py offload_optimizer:
      // partition_grads to the CPU fp32 partitions): no gradient partition stays on the GPU,
      // only the ipg bucket (deepspeed_buffer_bytes)
      s.host += s.gradients;
      s.gradients = 0;
    }
  }
  if (st.offload_params) {
    // the sharded storage moves to host (the unsharded working copies stay on the GPU)
    const double sharded_w = n * p.param_bytes / g;
    const double sharded_g = n * p.grad_bytes / g;
    s.host += sharded_w + std::min(sharded_g, s.gradients);
    s.weights -= sharded_w;
    s.gradients -= std::min(sharded_g, s.gradients);
    if (fsdp && !st.offload_optimizer) {  // CPUOffloadPolicy: the step runs on the CPU
      s.host += s.optimizer;
      s.optimizer = 0;
    }
  }
  return s;
}

bool fsdp_keeps_unsharded_gradients(const Stack& st, bool accumulates) {
  if (st.framework != MEMEST_FRAMEWORK_FSDP || !accumulates) return false;
  return st.no_sync == 1 || (st.no_sync < 0 && st.fsdp_version == 1);
}

double fsdp_gather_bytes(const Stack& st, double param_bytes) {
  if (st.fp8_all_gather) return 1;  // torchao float8 weights: one byte per element
  // MixedPrecisionPolicy(param_dtype=bf16), or the stored dtype itself without autocast
  return st.autocast == 0 ? param_bytes : std::min(param_bytes, 2.0);
}

double fsdp_buffer_bytes(double block_params, int32_t zero, int64_t pp, double reduce_bytes,
                         double gather_bytes) {
  if (zero < 2) return 0;
  double bytes = block_params * reduce_bytes;  // one block's reduce-scatter input
  if (zero == 3 && pp == 1) bytes += 2 * block_params * gather_bytes;  // current + prefetched
  return bytes;
}

double fsdp1_unsharded_root_bytes(const Stack& st, int32_t zero, int64_t pp, double root_params,
                                  double gather_bytes) {
  if (st.framework != MEMEST_FRAMEWORK_FSDP || st.fsdp_version != 1 || zero != 3 || pp > 1) {
    return 0;
  }
  return root_params * gather_bytes;
}

double optimizer_step_temporary_bytes(int32_t optimizer, double moments_on_gpu) {
  if (optimizer != MEMEST_OPTIMIZER_ADAMW_FOREACH) return 0;
  // torch/optim/adam.py _multi_tensor_adam (AdamW runs it with decoupled weight decay):
  // exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs) allocates one tensor per
  // parameter of the group, the size of one moment; the other foreach ops are in place.
  return moments_on_gpu / 2;
}

double deepspeed_fp16_step_temporary_bytes(const Stack& st, int32_t zero, double param_bytes,
                                           double stepped_params) {
  if (st.framework != MEMEST_FRAMEWORK_DEEPSPEED || zero != 0 || param_bytes != 2 ||
      st.offload_optimizer) {
    return 0;
  }
  return (4 + 4) * stepped_params;  // the fp32 copies and their flattened concatenation
}

double ddp_bucket_bytes(double params, double grad_bytes, bool ddp, bool bucket_view) {
  if (!ddp || bucket_view) return 0;
  return params * grad_bytes;
}

double deepspeed_buffer_bytes(double stage_params, double block_params, double persistent_params,
                              int32_t zero, const Precision& precision, const Stack& st) {
  if (zero == 0) return 0;
  const double reduce = st.ds_reduce_bucket_size > 0 ? st.ds_reduce_bucket_size : kDsReduceBucketSize;
  const double ipg = reduce * precision.param_bytes;  // allocated whole
  if (zero < 3) return ipg;
  const double scattered = std::min(reduce, stage_params) * precision.param_bytes;
  const double prefetch =
      st.ds_prefetch_bucket_size > 0 ? st.ds_prefetch_bucket_size : kDsPrefetchBucketSize;
  const double live =
      st.ds_max_live_parameters > 0 ? st.ds_max_live_parameters : kDsMaxLiveParameters;
  const double gathered = std::min(live, block_params + std::min(prefetch, block_params));
  return ipg + scattered + (gathered + persistent_params) * precision.param_bytes;
}

double deepspeed_offload_gather_copy_bytes(const Stack& st, int32_t zero, double gathered_bytes,
                                           double shard_group) {
  if (st.framework != MEMEST_FRAMEWORK_DEEPSPEED || zero != 3 || !st.offload_params) return 0;
  return gathered_bytes / std::max(1.0, shard_group);
}

}  // namespace memest
