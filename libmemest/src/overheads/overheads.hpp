// The overhead model: what the 4D paper leaves to its 80 % margin, term by term, so that
// peak_bytes predicts real out-of-memory errors (README "Overhead model").
//
//   context          CUDA context, cuBLAS/cuDNN/TE workspaces, NCCL init (device profile)
//   comm buffers     CP runtime buffers once cp > 1 (profile, fitted), the SP all-gather of one
//                    layer input (2sbh/c), PP send + receive buffers (2 * 2sbh/(tc))
//   logits           bf16 logits kept beside the fp32 copy Eq. 14 counts: 2sbv/(tc), last stage
//   correction       paper terms memest corrects (Llama activation model): a fused SwiGLU keeps
//                    its fc1 output and the fc2 input, 6 sbh_ffn, not 8 (Eq. 12's FFN term);
//                    the embedding keeps int64 token ids, 8sb/c, not 8sbh/(tc) (Eq. 13)
//   fragmentation    allocator reserve: a fraction (profile, fitted) of every modelled byte but
//                    the context and the CP buffers
#pragma once

#include "memest/memest.h"

namespace memest {

struct Plan;

// The allocator's fragmentation (the GPU profile's `fragmentation`, fitted on the 4D paper's
// Megatron runs) where no collective runs on a side stream: plain PyTorch on one GPU without
// DDP. PyTorch's caching allocator keeps one pool per stream and a block a side stream still
// uses (record_stream) cannot be reused until that stream passes it
// (c10/cuda/CUDACachingAllocator.cpp); Megatron's overlapped gradient reduction, FSDP2's
// all-gather and reduce-scatter streams and DDP's bucket all-reduce all leave such blocks, a
// single-stream loop does not. The share of the profile's fraction that single-stream runs
// show, fitted on this project's 12 H100 plain-PyTorch runs (reserved, least mean absolute
// percentage error: tests/calibration/validate_stacks.cpp refits it and fails if it moves);
// the 5 peft LoRA runs are held out.
inline constexpr double kSingleStreamFragmentationShare = 0.56;

struct OverheadParts {
  double context = 0;
  double comm_buffers = 0;
  double logits = 0;
  double activation_correction = 0;
  double fragmentation = 0;
  double phase_overlap = 0;  // <= 0: see memest_stage.phase_overlap_bytes
  double moe_dispatch = 0;   // part of comm_buffers
  double total() const {
    return context + comm_buffers + logits + activation_correction + fragmentation +
           phase_overlap;
  }
};

// Overheads of stage i holding `layers` dense layers and `moe_layers` MoE layers with
// `in_flight` micro-batches of activations, `embedded` micro-batches of embedding activations
// (first stage), whose paper terms are `states_bytes` and `activation_bytes`.
// `stack_buffers`: the training stack's buffers (states/stack_states.hpp: FSDP, DDP and
// DeepSpeed collectives, offload staging), 0 under megatron; they join comm_buffers and the
// bytes fragmentation applies to.
OverheadParts stage_overheads(const Plan& plan, int64_t i, double layers, double in_flight,
                              double embedded, double states_bytes, double activation_bytes,
                              double moe_layers = 0, double stack_buffers = 0,
                              double loss_logits = -1, double phase_overlap = 0);
// `loss_logits` >= 0 replaces the last stage's bf16 logits term with the loss memory of the
// training stack (activations/stack_activations.hpp loss_memory); `phase_overlap` (<= 0) as in
// memest_stage. Under megatron both keep their defaults and the terms are those of 1.1.
// The all-to-all receive buffers of one MoE layer on one GPU (dispatch: the R rows its
// experts get; combine: the k expert outputs of its own tokens), live while the layer runs;
// 0 without expert or expert-tensor parallelism (no all-to-all).
double moe_dispatch_buffer_bytes(const Plan& plan);

}  // namespace memest
