// Throughput model: the time of one training iteration, composed of mechanisms (README
// "Throughput model"), each with a constant of the device profile:
//
//   per micro-batch and pipeline stage (one GPU's view, the slowest stage sets the pace):
//     compute    every GEMM of a block at its own M x N x K after the TP/CP/EP splits
//                (kernels.hpp: roofline at the profile's GEMM efficiency, tile quantisation),
//                FlashAttention at an efficiency that grows with the keys per block,
//                memory-bound kernels (norms, activation, RoPE, residuals, fp8 casts, MoE
//                permutation, the loss) from the bytes they move at HBM bandwidth;
//     recompute  the forward kernels activation recomputation repeats;
//     TP, CP, EP the block's collectives (collectives.hpp), exposed unless the stack overlaps
//                them (memest_overlap): TP behind its GEMMs, CP's ring exchange behind the
//                attention of the previous chunk (Transformer Engine always does), MoE
//                all-to-all behind the experts;
//     FSDP       per-layer all-gathers and reduce-scatters, prefetched behind the previous
//                layer's compute when overlapped;
//     PP         activation sends between stages (blocking in 1F1B unless overlapped).
//   per iteration:
//     pipeline   m x t_max + (sum of the stages' t - t_max) / vpp: the 1F1B schedule's fill
//                and drain (Narayanan et al. 2021, Sec. 2.2: bubble (p-1)/(v m) for equal
//                stages), with uneven stages (the LM head's, the embedding's) timed as they are;
//     DP         gradient reduce-scatter (all-reduce without ZeRO) and parameter all-gather,
//                overlapped with the last micro-batch's backward / the first one's forward
//                (Megatron-Core distributed_data_parallel.py, param_and_grad_buffer.py:
//                the last bucket always exposed);
//     optimizer  the step's reads and writes of masters, gradients and states at HBM bandwidth;
//     offload    host transfers (PCIe, not overlapped: an upper bound).
#pragma once

#include "memest/memest.h"
#include "model/flops.hpp"

namespace memest {

struct Plan;

// Relative tokens/s difference below which two layouts' predicted order is not to be trusted:
// the model's measured error of the ratio between two layouts of one table (leave-one-source-
// out, tests/calibration/validate_throughput.cpp, which fails when its refit moves from this).
constexpr double kThroughputTieMargin = 0.062;

// Seconds per iteration by memest_step_part.
struct StepParts {
  double seconds[MEMEST_STEP_PART_COUNT] = {};
  double total() const;
};

struct Throughput {
  double model_flops = 0;      // per iteration
  double step_seconds = 0;
  double tflops_per_gpu = 0;   // model FLOPs / (time * gpus), as the 4D paper reports
  double tokens_per_s = 0;
  double mfu = 0;              // tflops_per_gpu / peak
  double bubble_fraction = 0;  // (p - 1) / (vpp * m)
  StepParts parts;
};

// The overlap bits (memest_overlap) a plan runs with: its request's, or the stack's default.
uint32_t overlap_bits(const Plan& plan);
// The same from the request's fields: `zero` the stage the framework runs (effective_zero).
uint32_t overlap_bits(int32_t comm_overlap, int32_t framework, int32_t zero);

// The attention kernels a run uses (never AUTO): Megatron's Transformer Engine runs cuDNN's
// fused attention (FlashAttention-3 class on Hopper); PyTorch's scaled_dot_product_attention,
// which FSDP, DeepSpeed and plain PyTorch runs of Hugging Face models call, FlashAttention-2's.
int32_t attention_kernel_in_effect(int32_t requested, int32_t framework);

// A Triton FlashAttention kernel's speed as a share of FlashAttention-2's on the same GPU
// (llm-foundry's MPT `attn_impl: triton`, llmfoundry/models/layers/attention.py
// triton_flash_attn_fn, ALiBi added as a bias inside the kernel). Both issue Ampere's mma.sync
// (the pre-MLIR Triton fork it pins has no Hopper wgmma, nor has FlashAttention-2), so one share
// serves every GPU. Fitted on llm-foundry's A100 and H100 rows (tests/calibration/
// validate_throughput.cpp); the FlashAttention-2 paper (Dao 2023, section 4.1) measured
// FlashAttention-2 1.3-2.5x as fast as the Triton kernel, a share of 0.40-0.77.
constexpr double kTritonShareOfFlash2 = 0.49;

// The attention_efficiency (memest_gpu) of `kernel` (never AUTO) on `g`: the GPU's best fused
// kernels' own, FlashAttention-2's where slower (fa2_attention_efficiency), Triton's
// (triton_attention_efficiency, or kTritonShareOfFlash2 of FlashAttention-2's).
double attention_efficiency_of(const memest_gpu& g, int32_t kernel);

// Seconds of host <-> GPU transfers per step for what is offloaded (PCIe, no overlap).
double offload_seconds(const Plan& plan, double params, double microbatches);
// Seconds of one MoE layer's expert-parallel all-to-alls (dispatch + combine, forward and
// backward) for one micro-batch on one GPU, by the request's moe_dispatcher, not overlapped,
// at the capacity factor's load (1 when drop-less); 0 for a dense model or ep = 1.
double moe_all_to_all_seconds(const Plan& plan);

// What one layer costs one GPU for one micro-batch (forward + backward), by part.
struct LayerTime {
  double forward = 0;    // kernels of the forward pass
  double backward = 0;   // kernels of the backward pass
  double recompute = 0;  // forward kernels run again
  double tp = 0, cp = 0, ep = 0, dp = 0;  // exposed communication
  double total() const { return forward + backward + recompute + tp + cp + ep + dp; }
  void add(const LayerTime& o, double n) {
    forward += n * o.forward, backward += n * o.backward, recompute += n * o.recompute;
    tp += n * o.tp, cp += n * o.cp, ep += n * o.ep, dp += n * o.dp;
  }
};

// A plan's block times: a dense and an MoE layer, the LM head with the loss, the embedding. They
// depend on the block's shape on one GPU (tp, cp, micro-batch, ep, etp, recompute, fp8, compile,
// the overlap bits), not on pp, vpp or dp: the search computes them once per shape.
struct LayerTimes {
  LayerTime dense, moe, head, embed;
  // A hybrid model's layers (model/hybrid.hpp), each what it adds to an attention + MLP layer:
  // Mamba-2 or gated DeltaNet instead of attention, Mamba-2 beside it, no mixer, no MLP.
  LayerTime mamba_delta, deltanet_delta, parallel_delta, no_mixer_delta, no_mlp_delta;
};
LayerTimes layer_times(const Plan& plan);

// Needs the number of micro-batches (a global batch); zeros when it is not known. `cached`:
// the plan's layer_times, computed before for a plan of the same block shape (nullptr: here).
Throughput estimate_throughput(const Plan& plan, const LayerTimes* cached = nullptr);

// An upper bound of estimate_throughput(plan).tflops_per_gpu from the block times alone: the
// first and the last stage's kernels m times, without communication, bubble or optimizer (the
// search skips composing a step for a layout that could not enter its list).
double tflops_upper_bound(const Plan& plan, const LayerTimes& times);

// Writes a throughput into the result's / the entry's 1.5 fields.
void write_throughput(const Throughput& t, memest_pretrain_result& out);
void write_throughput(const Throughput& t, memest_search_entry& out);

}  // namespace memest
