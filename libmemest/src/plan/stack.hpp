// Resolving the training stack of a request (README "Training stack"): whether a master copy
// exists, the optimizer's bytes per parameter, the ZeRO stage a framework really runs, the loss,
// and the refusal of combinations no framework runs. The bytes per stage are in
// states/stack_states.hpp.
#pragma once

#include <cstdint>

#include "memest/memest.h"
#include "plan/requests.hpp"

namespace memest {

// ---- the framework as requested and as modelled

// Sets st.framework from a requested memest_framework: MEMEST_FRAMEWORK_FSDP1 (PyTorch's
// FullyShardedDataParallel, torch/distributed/fsdp/fully_sharded_data_parallel.py) is modelled
// as FSDP (every sharding mechanism is the same per unit) with fsdp_version 1, which adds
// FSDP1's own mechanisms (states/stack_states.hpp fsdp1_*). Any other value is stored as is
// (validate_stack checks it).
void set_framework(Stack& st, int32_t requested);

// The memest_framework a result reports: FSDP1 for fsdp_version 1.
int32_t reported_framework(const Stack& st);

// ---- precision and optimizer

// True when an fp32 master copy of the parameters exists: the stored dtype is below fp32 and
// the framework keeps masters (Megatron's DistributedOptimizer / Float16OptimizerWithFloat16Params;
// DeepSpeed stage_1_and_2.py `single_partition_of_fp32_groups`, stage3.py `fp32_partitioned_groups_flat`).
// FSDP2 (torch/distributed/fsdp/_fully_shard/_fsdp_param.py) and plain PyTorch optimise the
// stored parameters themselves: no master.
bool keeps_master(int32_t framework, double param_bytes);

// Optimizer state bytes per trainable parameter, without any master copy, for states of
// `state_bytes` each (fp32 = 4 beside a master; else the stored dtype: torch/optim/adamw.py and
// sgd.py create them with zeros_like(param)):
//  adam, adamw: exp_avg + exp_avg_sq = 2 * state_bytes;
//  adamw_8bit, paged_adamw_8bit: bitsandbytes block-wise 8-bit states, whatever the parameter
//    dtype (bitsandbytes/optim/optimizer.py Optimizer2State.init_state: two uint8 states and,
//    block_wise, one fp32 absmax per 256 elements for each: 2 + 2*4/256 = 2.03125);
//  sgd_momentum: momentum_buffer = state_bytes; sgd: 0.
double optimizer_moment_bytes(int32_t optimizer, double state_bytes);

// K (bytes per parameter, master included) derived from the optimizer, the framework and the
// stored dtype: moments + 4 when keeps_master. The default request (megatron, bf16, adam)
// gives 8 + 4 = 12, the 4D paper's K; FSDP2 with fp32 storage 8, pure bf16 (torchtune) 4.
double derived_optimizer_bytes(int32_t optimizer, int32_t framework, double param_bytes);

// Bytes per parameter of the master copy (memest_master_weights): 4 for fp32, 2 for a bf16 or
// fp16 copy and for the remainders (the low 16 bits of an fp32 value whose high 16 bits are the
// bf16 weight itself: Apex distributed_fused_adam.py store_param_remainders, Megatron-Core
// optimizer_config.py store_param_remainders), 0 for none; AUTO: 4 when keeps_master.
double master_weight_bytes(int32_t master_weights, int32_t framework, double param_bytes);

// K with the master and the moments as the request stores them (Stack::master_weights,
// Stack::optimizer_state_bytes): moments of state_bytes each (0: fp32 beside a master, the
// weights' dtype without one) + the master. NeMo's Nemotron-4 340B recipe (Apex
// DistributedFusedAdam with optim.dtype bf16 over bf16 weights: no master, bf16 moments) gives
// 4; its Llama 3.1 recipes (fp32 states over bf16 weights: remainders) 10.
double derived_optimizer_bytes(int32_t optimizer, int32_t framework, double param_bytes,
                               int32_t master_weights, double state_bytes);

// The ZeRO stage the framework actually runs for a requested `zero`:
//  fsdp: 1 (the request default, meaningless for fully_shard) reads as fully_shard's default
//    reshard_after_forward=True, i.e. 3;
//  pytorch: DDP replicates everything: 0;
//  megatron, deepspeed: as given.
int32_t effective_zero(int32_t framework, int32_t zero);

// Resolves grad_bytes = MEMEST_GRAD_BYTES_DERIVE to the framework's gradient dtype: 4 under
// megatron (fp32 main_grad buffers unless --grad-reduce-in-bf16: distributed/
// param_and_grad_buffer.py) and deepspeed (its fp32 gradient partitions beside the fp32 master),
// the stored parameter dtype under fsdp, fsdp1 and pytorch (autograd's AccumulateGrad keeps
// .grad like the parameter; FSDP2's sharded gradient is the sharded parameter's dtype). Any
// other value stays.
void resolve_grad_bytes(PretrainRequest& r);

// Resolves adapter.bytes = MEMEST_ADAPTER_BYTES_DERIVE to the stack's adapter dtype: the
// model's param_dtype under megatron (ms-swift swift/megatron/tuners/lora.py LoraParallelLinear
// builds its Transformer Engine linears from the model config), fp32 elsewhere (peft
// tuners/tuners_utils.py autocast_adapter_dtype casts 16-bit adapters up). Any other value stays.
void resolve_adapter_bytes(PretrainRequest& r);

// The Megatron-Core modules recompute SELECTIVE checkpoints for this request, as bits (1u <<
// memest_recompute_module): the request's recompute_modules, or Megatron's default core_attn
// when it gives none (transformer_config.py: recompute_modules None -> ["core_attn"]); 0 when
// the recomputation is not selective or the framework is not Megatron (Megatron ignores
// --recompute-modules without --recompute-granularity selective).
uint32_t recompute_modules_in_effect(const PretrainRequest& r);

// The request's loss resolved: AUTO is fused under megatron and unfused elsewhere (torchtitan's
// build_cross_entropy_loss, torchtune's default CEWithChunkedOutputLoss being a recipe choice,
// HF's ForCausalLMLoss: all F.cross_entropy on upcast logits).
int32_t resolved_loss(int32_t framework, int32_t loss);

// The chunks a chunked loss runs in (0 for the other losses): training.loss_chunks, else the
// loss's own default: torchtune's CEWithChunkedOutputLoss num_output_chunks = 8
// (modules/loss/ce_chunked_output_loss.py), torchtitan's ChunkedLossWrapper num_chunks = 8
// (components/loss.py), LitGPT's lm_head_chunk_size = 128 tokens of each sequence
// (finetune/lora.py `model(input_ids, lm_head_chunk_size=128)`, model.py GPT.forward splits
// the sequence): ceil(local sequence / 128).
int64_t loss_chunks_in_effect(int32_t loss, int32_t loss_chunks, int64_t local_seq_len);

// The layout-dependent rules of validate_stack, without throwing (the search's candidates):
// false when the framework cannot run the request's layout. `num_microbatches`: per step, 0
// when unknown.
bool stack_allows_layout(const PretrainRequest& r, int64_t num_microbatches);

// Checks the combination of the training stack's fields (throws naming the field and why).
void validate_stack(const PretrainRequest& r);

// Checks training.adapter (README "LoRA and QLoRA"): the type, the rank (1 .. the narrowest
// adapted module's input or output width), the dropout, the adapter dtype, the targets against
// the model (model/adapter.hpp), qlora's base dtype, and the settings that cannot run an
// adapter (Megatron-LM, tensor/context/pipeline parallelism, fp8).
void validate_adapter(const PretrainRequest& r);

}  // namespace memest
