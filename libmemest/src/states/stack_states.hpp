// The state side of the training stacks beside Megatron-LM (README "Training stack"): which
// copies of the parameters, gradients and optimizer states a framework keeps on a GPU, the
// buffers it adds for its collectives, and what offloading moves to host memory. One function
// per mechanism, each citing the framework file it models; the stage loop (pretrain/) sums them.
//
// Versions modelled: PyTorch 2.5-2.7 (FSDP2 fully_shard, DDP), torchtitan 2025, torchtune 0.6,
// DeepSpeed 0.14-0.16, bitsandbytes 0.43-0.45.
#pragma once

#include <cstdint>

#include "memest/memest.h"
#include "plan/requests.hpp"
#include "plan/stack.hpp"

namespace memest {

// ---- one GPU's parameters, gradients and optimizer for a stage

struct StackStates {
  double weights = 0;     // stored parameters (+ unsharded working copies kept, FSDP)
  double gradients = 0;   // stored gradients (+ unsharded accumulated gradients kept, FSDP+PP)
  double optimizer = 0;   // optimizer states + master (on the GPU)
  double master = 0;      // the master part of `optimizer` (or of host/paged when moved)
  double paged = 0;       // paged optimizer states in CUDA managed memory (not in optimizer)
  double host = 0;        // offloaded to host memory
  double total() const { return weights + gradients + optimizer; }
};

struct StackStateInput {
  double params = 0;          // parameters of one GPU of the stage (after TP/PP)
  double largest_tensor = 0;  // elements of the largest parameter tensor (after TP)
  double shard_group = 1;     // data-parallel ranks the states shard over (d, or d*c)
  int64_t pp = 1;
  int32_t zero = 0;           // effective_zero
  Precision precision;        // optimizer_bytes resolved (K, master included)
  Stack stack;
  bool accumulates = false;   // more than one micro-batch per optimizer step on this rank
};

// Per framework:
//  megatron, deepspeed: the ZeRO paper's partitioning (stage 1 optimizer + master, 2 also
//    gradients, 3 also parameters) over shard_group (DeepSpeed stage_1_and_2.py, stage3.py).
//  fsdp (torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py): parameters, gradients and
//    optimizer states sharded over shard_group (zero 0: replicated). zero 2
//    (reshard_after_forward=False) keeps every layer's unsharded bf16 parameters from forward to
//    backward: + 2 * params. Under pp > 1 torchtitan (torchtitan/models/llama3/infra/
//    parallelize.py: reshard_after_forward off under PP) and PyTorch's schedules
//    (torch/distributed/pipelining/schedules.py: gradient sync and reshard deferred to the last
//    micro-batch) keep unsharded bf16 parameters (+2) and unsharded gradients accumulated in the
//    reduce dtype (+grad_bytes; _fsdp_param.py `unsharded_accumulated_grad`) per parameter.
//  pytorch: everything replicated (DDP, torch/nn/parallel/distributed.py).
//  optimizer_in_backward (torchtune/training/_memory.py register_optim_in_bwd_hooks): each
//    parameter's gradient is freed by its own optimizer step: at most the largest tensor's
//    gradient is alive.
//  paged_adamw_8bit, paged_adamw_32bit: the moments go to `paged` (bitsandbytes/optim/optimizer.py: is_paged ->
//    F.get_paged, cudaMallocManaged), the master stays.
//  offload_optimizer: optimizer + master to `host` (DeepSpeed ZeRO-Offload
//    zero/offload_config.py; FSDP2 CPUOffloadPolicy steps on the CPU).
//  offload_params: sharded parameters and gradients to `host` (FSDP2 CPUOffloadPolicy in
//    _fully_shard/_fsdp_api.py moves them with the optimizer; DeepSpeed offload_param, ZeRO-3).
StackStates stack_state_bytes(const StackStateInput& in);

// ---- framework buffers

// FSDP2 (_fsdp_collectives.py foreach_all_gather / foreach_reduce): the all-gather output of
// the current block and of the prefetched next one in the compute dtype (bf16: 2 bytes per
// unsharded parameter, twice), and one block's reduce-scatter input in the reduce dtype
// (grad_bytes per unsharded parameter). With zero 0 there are no collectives but DDP-style
// all-reduce of the gradients in place. `block_params`: one block's parameters after TP.
// Under zero 2 or pp > 1 the unsharded parameters are already counted as weights: only the
// reduce-scatter buffer remains.
double fsdp_buffer_bytes(double block_params, int32_t zero, int64_t pp, double reduce_bytes,
                         double gather_bytes);

// Bytes per element FSDP all-gathers: the compute dtype of MixedPrecisionPolicy (bf16, 2, for
// 16-bit or fp32 storage), the stored dtype without autocast (training.autocast false: no
// policy), or fp8 (1) with torchao's enable_fsdp_float8_all_gather
// (torchao/float8/fsdp_utils.py WeightWithDynamicFloat8CastTensor.fsdp_pre_all_gather).
double fsdp_gather_bytes(const Stack& st, double param_bytes);

// FSDP keeps unsharded gradients across gradient accumulation (no_sync): FSDP1 under accelerate
// (accelerator.py `no_sync` wraps every accumulation micro-batch) and wherever no_sync is
// given; `accumulates`: more than one micro-batch per optimizer step.
bool fsdp_keeps_unsharded_gradients(const Stack& st, bool accumulates);

// FSDP1 does not reshard the root unit after forward (torch/distributed/fsdp/_runtime_utils.py
// _post_forward_reshard: `free_unsharded_flat_param = not state._is_root and ...`): under
// FULL_SHARD (zero 3, pp 1) the root's FlatParameter, everything no wrapped block holds (the
// embedding, the final norm, the LM head: `root_params` on this GPU), stays gathered from
// forward to backward: root_params * gather_bytes beside its shard.
double fsdp1_unsharded_root_bytes(const Stack& st, int32_t zero, int64_t pp, double root_params,
                                  double gather_bytes);

// Bytes optimizer.step() allocates for the whole group at once: adamw_foreach (torch.optim's
// default multi-tensor path) one moment's worth, `moments_on_gpu` / 2 (the moments, no master,
// on this GPU); 0 for the fused and bitsandbytes kernels, which update in place.
double optimizer_step_temporary_bytes(int32_t optimizer, double moments_on_gpu);

// Bytes DeepSpeed's 16-bit optimizer wrapper allocates in step() without ZeRO (stage 0, 16-bit
// parameters, a GPU optimizer): deepspeed/runtime/fp16/fused_optimizer.py FP16_Optimizer.step
// casts every trainable parameter's gradient to fp32 (`p.grad.to(data_type)`, a list of fp32
// copies) and flattens the list into the master weights' flat fp32 gradient
// (`_flatten_dense_tensors`): both live at once, 4 + 4 bytes per parameter it steps on this
// GPU (`stepped_params`), before the 16-bit gradients are dropped. ZeRO stages 1-3
// (stage_1_and_2.py, stage3.py) step on their own partitions: 0. memest's dtypes do not tell
// bf16 from fp16, so a bf16 run is counted the same way; DeepSpeed's BF16_Optimizer
// (bf16_optimizer.py) holds a flat fp32 gradient buffer of 4 bytes per parameter instead,
// which this term stands in for.
double deepspeed_fp16_step_temporary_bytes(const Stack& st, int32_t zero, double param_bytes,
                                           double stepped_params);

// DDP (torch/nn/parallel/distributed.py, reducer.cpp): gradients are copied into flat buckets
// (bucket_cap_mb 25 MiB, the first 1 MiB) that together hold every gradient: with
// gradient_as_bucket_view=False (the default) a second copy of all gradients, params *
// grad_bytes; with it, the buckets are the gradients: 0. `ddp`: the model is wrapped in DDP
// (dp > 1, or one process with training.buckets.bucket_cap_mb given).
double ddp_bucket_bytes(double params, double grad_bytes, bool ddp, bool bucket_view);

// DeepSpeed (runtime/zero/config.py defaults; stage_1_and_2.py, stage3.py):
//  stage 1/2: contiguous_gradients' ipg buffer, `torch.empty(reduce_bucket_size)` (5e8
//    elements) in the parameters' dtype, allocated whole whatever the stage holds
//    (stage_1_and_2.py backward; overlap_comm, off by default below stage 3, would double it).
//  stage 3: the same buffer (stage3.py `__ipg_bucket_flat_buffer`), plus the flat copy of
//    what one bucket reduces that reduce_scatter_coalesced concatenates
//    (runtime/comm/coalesced_collectives.py: min(reduce_bucket_size, stage_params)), plus the
//    gathered parameters alive at once: the current block and up to
//    stage3_prefetch_bucket_size (5e7) prefetched, never more than stage3_max_live_parameters
//    (1e9), in the parameters' dtype, plus the persistent parameters (tensors of <=
//    stage3_param_persistence_threshold, 1e5, elements: the norms) kept whole:
//    `persistent_params` * param_bytes.
double deepspeed_buffer_bytes(double stage_params, double block_params, double persistent_params,
                              int32_t zero, const Precision& precision, const Stack& stack);

// DeepSpeed ZeRO-3 with offload_param: a gather first copies this rank's partition from the
// host to the GPU and all-gathers from that copy (runtime/zero/partition_parameters.py
// all_gather_coalesced: `param.ds_tensor.to(<device>)`, torch.cat of the copies for several
// parameters), so while a module is in flight its partition is there twice: the largest
// gathered module's bytes / shard_group more. 0 without offload_param, below stage 3 or
// outside DeepSpeed (a partition already on the GPU is not copied).
double deepspeed_offload_gather_copy_bytes(const Stack& st, int32_t zero, double gathered_bytes,
                                           double shard_group);

// Defaults of the bucket fields (0 in a request).
constexpr double kDdpBucketMiB = 25;
constexpr double kDsReduceBucketSize = 5e8;
constexpr double kDsAllgatherBucketSize = 5e8;
constexpr double kDsPrefetchBucketSize = 5e7;
constexpr double kDsMaxLiveParameters = 1e9;
constexpr double kDsParamPersistenceThreshold = 1e5;

}  // namespace memest
