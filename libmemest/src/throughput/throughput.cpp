#include "throughput/throughput.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <utility>

#include "activations/activations.hpp"
#include "model/adapter.hpp"
#include "model/flops.hpp"
#include "model/hybrid.hpp"
#include "model/model.hpp"
#include "plan/plan.hpp"
#include "throughput/collectives.hpp"
#include "throughput/kernels.hpp"

namespace memest {

double StepParts::total() const {
  double sum = 0;
  for (double s : seconds) sum += s;
  return sum;
}

uint32_t overlap_bits(int32_t comm_overlap, int32_t framework, int32_t zero) {
  if (comm_overlap != MEMEST_OVERLAP_STACK_DEFAULT) return static_cast<uint32_t>(comm_overlap);
  constexpr uint32_t dp = 1u << MEMEST_OVERLAP_DP, pp = 1u << MEMEST_OVERLAP_PP;
  switch (framework) {
    case MEMEST_FRAMEWORK_MEGATRON: return dp | pp;  // Megatron-Core DDP overlap, overlap_p2p_comm
    case MEMEST_FRAMEWORK_DEEPSPEED: return zero >= 3 ? dp : 0;  // overlap_comm: stage 3 only
    default: return dp;  // FSDP2 prefetch, DDP buckets during backward
  }
}

int32_t attention_kernel_in_effect(int32_t requested, int32_t framework) {
  if (requested != MEMEST_ATTENTION_AUTO) return requested;
  return framework == MEMEST_FRAMEWORK_MEGATRON ? MEMEST_ATTENTION_FUSED : MEMEST_ATTENTION_FLASH2;
}

double attention_efficiency_of(const memest_gpu& g, int32_t kernel) {
  // FlashAttention-2's kernels reach a lower share of a Hopper's peak than its fused ones
  // (FlashAttention-3 paper, Shah et al. 2024: 35 % against 75 %).
  const double flash2 = g.fa2_attention_efficiency > 0 ? g.fa2_attention_efficiency : g.attention_efficiency;
  switch (kernel) {
    case MEMEST_ATTENTION_FLASH2: return flash2;
    case MEMEST_ATTENTION_TRITON:
      return g.triton_attention_efficiency > 0 ? g.triton_attention_efficiency : kTritonShareOfFlash2 * flash2;
    default: return g.attention_efficiency;
  }
}

uint32_t overlap_bits(const Plan& plan) {
  return overlap_bits(plan.stack.comm_overlap, plan.framework, plan.zero);
}

double offload_seconds(const Plan& plan, double params, double microbatches) {
  // Offload transfers over PCIe (gpu.pcie_gbps), counted without overlap (an upper bound):
  //  optimizer: the gradient shard goes to the host and the updated parameters come back once
  //    a step (DeepSpeed ZeRO-Offload stage_1_and_2.py async copies; CPUOffloadPolicy);
  //  params: the sharded parameters come from the host at every gather (2 per micro-batch);
  //  activations: what each micro-batch saves goes out in forward and back in backward.
  const Stack& st = plan.stack;
  if (!st.offload_optimizer && !st.offload_params && !st.offload_activations) return 0;
  const double shard = static_cast<double>(plan.dp * plan.cp);
  const Precision& pr = plan.precision;
  double bytes = 0;
  if (st.offload_optimizer || st.offload_params) bytes += params * (pr.grad_bytes + pr.param_bytes) / shard;
  if (st.offload_params) bytes += 2 * microbatches * params * pr.param_bytes / shard;
  if (st.offload_activations) {
    const double layers = static_cast<double>(std::max(plan.layers.first, plan.layers.middle));
    bytes += 2 * microbatches * layers *
             layer_activation_bytes(*plan.model, plan.coefficients, plan.layout);
  }
  return bytes / (plan.gpu->pcie_gbps * 1e9);
}

namespace {

constexpr uint32_t bit(memest_overlap o) { return 1u << o; }

// The layout and the device as the block functions read them.
struct Context {
  const Plan& plan;
  const memest_model& m;
  const memest_gpu& g;
  DeviceRates dev;
  uint32_t overlap;
  double s, b, t, c, ep, etp;
  double t_sp;     // ranks the sequence is split over between blocks (t with SP, else 1)
  double rows;     // GEMM rows of a TP-split linear: the micro-batch's tokens on this CP rank
  double h;
  int gemm_inputs;  // kGemmBf16, kGemmFp8 or kGemmNvfp4 (throughput/kernels.hpp)
  bool fused;      // memory-bound kernels fused (Megatron/TE, or torch.compile'd blocks)
  double recompute_share;  // of the layers, those whose forward runs again in backward
  bool frozen_base;        // LoRA/QLoRA: no weight gradients for the base linears
  Group tp_group, cp_group, ep_group, etp_group;

  explicit Context(const Plan& p)
      : plan(p), m(*p.model), g(*p.gpu), dev(device_rates(*p.gpu)), overlap(overlap_bits(p)) {
    dev.attention_efficiency =
        attention_efficiency_of(*p.gpu, attention_kernel_in_effect(p.stack.attention_kernel, p.framework));
    const ActivationLayout& x = p.layout;
    s = x.seq_len, b = x.micro_batch, t = x.tp, c = x.cp;
    ep = static_cast<double>(p.ep), etp = static_cast<double>(p.etp);
    t_sp = x.sequence_parallel ? t : 1;
    rows = s * b / c;
    h = static_cast<double>(m.hidden_size);
    gemm_inputs = p.stack.fp4 ? kGemmNvfp4 : p.stack.fp8 ? kGemmFp8 : kGemmBf16;
    fused = p.framework == MEMEST_FRAMEWORK_MEGATRON || p.stack.compile == MEMEST_COMPILE_ALL ||
            p.stack.compile == MEMEST_COMPILE_MODEL;
    recompute_share = x.recompute == MEMEST_RECOMPUTE_FULL
                          ? 1.0 / static_cast<double>(std::max<int64_t>(1, p.stack.recompute_every))
                          : 0.0;
    frozen_base = p.adapter.enabled();
    // Megatron's rank order tp, cp, (ep), dp, pp: a group of stride s and size n spans s*n.
    tp_group = {t, t};
    cp_group = {c, t * c};
    etp_group = {etp, etp};
    ep_group = {ep, etp * ep};
  }
};

double fp8_cast_bytes(const Context& x, double m, double n, double k, bool backward) {
  // Transformer Engine casts a linear's inputs to FP8 with their scaling amax: forward the
  // activation (read 2, write 1 byte per element); backward the output gradient, cast and
  // transposed for the weight gradient (read 2, write 1 + 1), and the saved input's transpose
  // (write 1). The weight's cast is cached across micro-batches (is_first_microbatch). NVFP4
  // writes q = 0.5625 bytes per element where FP8 writes 1.
  if (x.gemm_inputs == kGemmBf16) return 0;
  const double q = x.gemm_inputs == kGemmNvfp4 ? 0.5625 : 1.0;
  return backward ? (2 + 2 * q) * m * n + q * m * k : (2 + q) * m * k;
}

// A TP-split linear (column- or row-parallel) of n_out x k_in on this GPU.
void linear(const Context& x, LayerTime& out, double m, double n, double k, double& gemm) {
  const LinearSeconds l = linear_seconds(x.dev, m, n, k, x.gemm_inputs, !x.frozen_base);
  out.forward += l.forward + memory_seconds(x.dev, fp8_cast_bytes(x, m, n, k, false), 0);
  out.backward += l.backward + memory_seconds(x.dev, fp8_cast_bytes(x, m, n, k, true), 0);
  gemm += l.forward + l.backward;
}

// `groups` same-shaped GEMMs run as one grouped kernel (MoE experts: Megatron-Core's
// GroupedMLP / TEGroupedLinear): one launch, each group at its own shape's efficiency.
void grouped_linear(const Context& x, LayerTime& out, double groups, double m, double n, double k,
                    double& gemm) {
  if (!(m > 0)) return;
  const LinearSeconds l = linear_seconds(x.dev, m, n, k, x.gemm_inputs, !x.frozen_base);
  const double launches_saved = (groups - 1) * x.dev.kernel_seconds;
  const double f = groups * l.forward - launches_saved;
  const double bw = groups * l.backward - (x.frozen_base ? 1 : 2) * launches_saved;
  out.forward += f + memory_seconds(x.dev, groups * fp8_cast_bytes(x, m, n, k, false), 0);
  out.backward += bw + memory_seconds(x.dev, groups * fp8_cast_bytes(x, m, n, k, true), 0);
  gemm += f + bw;
}

// Bytes the memory-bound kernels of one block's forward move (norms, RoPE, the activation
// function, residual adds, dropout), `tokens` rows on this GPU. Fused (Megatron-Core with
// Transformer Engine: fused RMSNorm/LayerNorm, apply_rope_fusion, bias_swiglu_fusion,
// bias-dropout-add; or torch.compile'd blocks): each reads its input and writes its output
// once. Eager Hugging Face modules: LlamaRMSNorm upcasts, squares, averages, scales and
// downcasts in separate kernels (32 bytes per element against 4), apply_rotary_pos_emb builds
// rotate_half by slicing, concatenation and negation (22 against 4), act_fn(gate) * up
// writes the activation before the product (10 against 6). Backward moves about twice the
// forward's bytes (the saved input and the incoming gradient read, the gradient written).
double block_elementwise_bytes(const Context& x, double attn_width, double ffn_rows,
                               double ffn_width) {
  const memest_model& m = x.m;
  const double th = x.rows * x.h / x.t_sp;  // the hidden state between blocks, per GPU
  const bool rms = m.norm_type == MEMEST_NORM_RMS;
  const double norm = x.fused || !rms ? 4 : 32;  // F.layer_norm is one kernel even eager
  double bytes = static_cast<double>(m.norms_per_layer) * norm * th;
  bytes += 2 * 6 * th;  // two residual adds: read 2, write 1
  if (m.family == MEMEST_FAMILY_GPT) bytes += 2 * th;  // dropout masks (1 byte) after both
  if (m.learned_position_rows == 0 && m.family == MEMEST_FAMILY_LLAMA) {
    bytes += (x.fused ? 4 : 22) * x.rows * attn_width / x.t;  // RoPE on q and k
  }
  const double act = m.gated_mlp ? (x.fused ? 6 : 10) : 4;
  bytes += act * ffn_rows * ffn_width;
  return bytes;
}

// Kernels a block launches beyond its GEMMs and attention (fused: a handful; eager: dozens).
double block_elementwise_kernels(const Context& x) { return x.fused ? 8 : 40; }

// The attention half of a block: projections, FlashAttention, TP and CP communication.
void attention_part(const Context& x, LayerTime& out, double& gemm) {
  const memest_model& m = x.m;
  const double r = x.rows, t = x.t, h = x.h;
  const double a = static_cast<double>(m.num_attention_heads);
  double head = static_cast<double>(head_dim(m));
  if (is_mla(m)) {
    // DeepSeek-V2/V3 latent attention (megatron/core/transformer/multi_latent_attention.py):
    // the down projections are not split by TP, the up projections and the output are.
    const double nope = static_cast<double>(m.qk_nope_head_dim);
    const double rope = static_cast<double>(m.qk_rope_head_dim);
    const double v = static_cast<double>(m.v_head_dim);
    const double ql = static_cast<double>(m.q_lora_rank), kvl = static_cast<double>(m.kv_lora_rank);
    if (ql > 0) {
      linear(x, out, r, ql, h, gemm);
      linear(x, out, r, a * (nope + rope) / t, ql, gemm);
    } else {
      linear(x, out, r, a * (nope + rope) / t, h, gemm);
    }
    linear(x, out, r, kvl + rope, h, gemm);
    linear(x, out, r, a * (nope + v) / t, kvl, gemm);
    linear(x, out, r, h, a * v / t, gemm);
  } else {
    const double q = a * head, kv = static_cast<double>(m.num_key_value_heads) * head;
    linear(x, out, r, (q + 2 * kv) / t, h, gemm);
    linear(x, out, r, h, q / t, gemm);
  }
  // Causal attention: each query sees half the keys on average (the count of model FLOPs
  // takes the full square); context parallelism splits the queries, load-balanced.
  const double flops = r * 2 * x.s * x.plan.flops.attention_layer_score_width / t;
  if (x.plan.layout.flash_attention) {
    // Under context parallelism Transformer Engine splits the sequence into 2c chunks (two per
    // rank, for the causal load balance) and runs one kernel per chunk pair per ring step: the
    // keys a kernel sees are s / (2c) (attention.py AttnFuncWithCPAndKVP2P).
    const double block_keys = x.c > 1 ? x.s / (2 * x.c) : x.s;
    const AttentionSeconds at = flash_attention_seconds(x.dev, flops, block_keys, head);
    out.forward += at.forward;
    out.backward += at.backward;
    // Context parallelism (Transformer Engine's ring attention, P2P): c - 1 steps each way,
    // each sending this rank's K and V (2 x s/c x b x kv width / t, 16-bit), backward also
    // the K/V gradients; each transfer hides behind one step's attention.
    if (x.c > 1) {
      const double kv_width = is_mla(m) ? a * (static_cast<double>(m.qk_nope_head_dim + m.qk_rope_head_dim) +
                                               static_cast<double>(m.v_head_dim))
                                        : 2 * static_cast<double>(m.num_key_value_heads) * head;
      const double bytes = r * kv_width / t * 2;
      const double send = collective_seconds(x.g, Collective::SendRecv, x.cp_group, bytes);
      const double send2 = collective_seconds(x.g, Collective::SendRecv, x.cp_group, 2 * bytes);
      out.cp += (x.c - 1) * (std::max(0.0, send - at.forward / x.c) +
                             std::max(0.0, send2 - at.backward / x.c));
    }
  } else {
    // Eager attention: QK^T and PV as batched GEMMs at full (masked) size, and the s x s
    // scores: written, softmaxed, dropped out (GPT) and read again; backward twice that.
    const double heads = a / t * x.b;
    const double sq = x.s / x.c;
    for (int i = 0; i < 2; ++i) {
      const LinearSeconds l = linear_seconds(x.dev, sq, x.s, head, kGemmBf16);
      out.forward += heads * (l.forward - x.dev.kernel_seconds) + x.dev.kernel_seconds;
      out.backward += heads * (l.backward - 2 * x.dev.kernel_seconds) + 2 * x.dev.kernel_seconds;
    }
    const double scores = heads * sq * x.s;
    out.forward += memory_seconds(x.dev, 8 * scores, 3);
    out.backward += memory_seconds(x.dev, 12 * scores, 3);
  }
}

// Bytes of one TP/SP collective's buffer: the micro-batch's hidden states on this CP rank.
double tp_collectives_seconds(const Context& x, double collectives) {
  if (x.t <= 1) return 0;
  const double bytes = x.rows * x.h * 2;
  // With sequence parallelism an all-gather before and a reduce-scatter after each TP region;
  // without it one all-reduce after each (Korthikanti et al. 2022, Sec. 4.2.2): the same bus
  // volume.
  if (x.plan.layout.sequence_parallel) {
    return collectives * collective_seconds(x.g, Collective::AllGather, x.tp_group, bytes);
  }
  return collectives / 2 * collective_seconds(x.g, Collective::AllReduce, x.tp_group, bytes);
}

// Exposed TP time of a block with `regions` TP regions (attention, MLP): forward 2 collectives
// per region, backward 2, a recomputed forward 2 more.
void tp_part(const Context& x, LayerTime& out, double regions, double gemm) {
  const double comm = tp_collectives_seconds(x, regions * (4 + 2 * x.recompute_share));
  out.tp += (x.overlap & bit(MEMEST_OVERLAP_TP)) ? std::max(0.0, comm - gemm) : comm;
}

// Bytes per gradient the data-parallel collectives carry: the request's gradient dtype, or an
// adapter's own dtype outside Megatron (peft's adapters keep gradients in their dtype; under
// Megatron the adapters' main gradients are the grad buffer's, plan/stack.cpp).
double gradient_bytes(const Plan& p) {
  return p.adapter.enabled() && p.framework != MEMEST_FRAMEWORK_MEGATRON ? p.adapter.bytes
                                                                         : p.precision.grad_bytes;
}

// The adapters' parameters of one layer on one GPU: what the gradient collectives carry under
// an adapter (model/adapter.hpp; outside Megatron the adapters run unsplit, experts included).
struct AdapterLayerParams {
  double dense = 0, moe = 0, moe_experts = 0, embed_tokens = 0, lm_head = 0;
  AdapterBlocks blocks;  // a hybrid's layer kinds
};
AdapterLayerParams adapter_layer_params(const Context& x) {
  const Plan& p = x.plan;
  AdapterLayerParams out;
  if (!p.adapter.enabled()) return out;
  const double r = static_cast<double>(p.adapter.rank);
  if (p.framework == MEMEST_FRAMEWORK_MEGATRON) {
    const MegatronAdapterParams mp =
        megatron_adapter_parameters(x.m, p.adapter.targets, r, x.t, x.ep, x.etp);
    out.dense = mp.dense_layer;
    out.moe = mp.moe_layer;
    out.moe_experts = mp.moe_experts;
    out.blocks = mp.blocks;
  } else {
    const AdapterParams ap = adapter_parameters(x.m, p.adapter.targets, r, "");
    out.dense = ap.dense_layer;
    out.moe = ap.moe_layer;
    out.embed_tokens = ap.embed_tokens;
    out.lm_head = ap.lm_head;
    out.blocks = ap.blocks;
  }
  return out;
}

// FSDP / ZeRO-3 / ZeRO-2 per-layer gathers of `params` (this GPU's TP shard of the layer) and
// reduce-scatters of the gradients of `trained` of them (all, or an adapter's), exposed
// beyond the layer's compute when prefetched.
void sharded_part(const Context& x, LayerTime& out, double params, double trained) {
  const Plan& p = x.plan;
  const bool fsdp = p.framework == MEMEST_FRAMEWORK_FSDP;
  const bool ds = p.framework == MEMEST_FRAMEWORK_DEEPSPEED;
  if (!(fsdp || ds) || p.zero < 2 || (fsdp && p.pp > 1)) return;
  const Group group{static_cast<double>(p.dp) * x.c, x.t * x.c * static_cast<double>(p.dp)};
  // The gathered copies are the compute dtype's: FSDP's MixedPrecision / MixedPrecisionPolicy
  // casts fp32 shards to bf16 before the all-gather (FSDP1 flat_param.py _use_low_precision_shard,
  // FSDP2 _fsdp_param.py), as DeepSpeed gathers its fp16/bf16 partitions.
  const double gathered_bytes = std::min(p.precision.param_bytes, 2.0);
  const double gather = collective_seconds(x.g, Collective::AllGather, group, params * gathered_bytes);
  const double reduce = collective_seconds(x.g, Collective::ReduceScatter, group,
                                          trained * gradient_bytes(p));
  double comm = reduce;                  // gradients every micro-batch (post-backward hooks)
  if (fsdp || p.zero >= 3) comm += gather;     // the forward's gather (ZeRO-3, FSDP)
  if (p.zero >= 3) comm += gather;             // again in backward after resharding
  if (ds && p.zero == 2) comm = reduce;        // ZeRO-2 gathers once a step (per-step part)
  const double compute = out.forward + out.backward + out.recompute;
  out.dp += (x.overlap & bit(MEMEST_OVERLAP_DP)) ? std::max(0.0, comm - compute) : comm;
}

LayerTime dense_layer(const Context& x) {
  LayerTime out;
  double gemm = 0;
  attention_part(x, out, gemm);
  const memest_model& m = x.m;
  const double f = static_cast<double>(m.intermediate_size);
  linear(x, out, x.rows, (m.gated_mlp ? 2 : 1) * f / x.t, x.h, gemm);
  linear(x, out, x.rows, x.h, f / x.t, gemm);
  const double q_width = static_cast<double>(m.num_attention_heads + m.num_key_value_heads) *
                         static_cast<double>(head_dim(m));
  const double bytes = block_elementwise_bytes(x, q_width, x.rows, f / x.t);
  out.forward += memory_seconds(x.dev, bytes, block_elementwise_kernels(x));
  out.backward += memory_seconds(x.dev, 2 * bytes, 2 * block_elementwise_kernels(x));
  tp_part(x, out, 2, gemm);
  return out;
}

// A token mixer's chunked scan (model/flops.hpp mamba_scan_flops, deltanet_scan_flops: its
// forward FLOPs per token): within a chunk of `chunk` tokens an attention over the chunk,
// across chunks a carried state; its products run like FlashAttention blocks of `chunk` keys
// at the head width, backward at the same 2.5x. Split by heads over tp.
void scan_part(const Context& x, LayerTime& out, double flops_per_token, double head, double chunk) {
  const AttentionSeconds at = flash_attention_seconds(x.dev, x.rows * flops_per_token / x.t, chunk, head);
  out.forward += at.forward;
  out.backward += at.backward;
}

// A mixer's memory-bound kernels (its causal conv, gate and norm: `bytes` read and written in
// forward, twice that backward; a few fused kernels, more eager) and its TP collectives.
void mixer_tail(const Context& x, LayerTime& out, double bytes, double gemm) {
  out.forward += memory_seconds(x.dev, bytes, x.fused ? 3 : 8);
  out.backward += memory_seconds(x.dev, 2 * bytes, x.fused ? 6 : 16);
  tp_part(x, out, 1, gemm);
}

// Megatron-Core's context parallelism over a mixer (megatron/core/ssm/mamba_context_parallel.py
// pre_conv_ssm / post_conv_ssm, gated_delta_net/common.py a2a_cp_to_hp): before the conv and
// scan, all-to-alls over the cp group trade this rank's tokens of every local head for every
// token of 1/cp of the heads (`in_widths`: each call's channels per token on this rank, 16-bit),
// after the scan one trades back `out_width`; backward runs the same calls reversed. Nothing
// overlaps them: the scan needs their output.
void mixer_cp_part(const Context& x, LayerTime& out, std::initializer_list<double> in_widths,
                   double out_width) {
  if (x.c <= 1) return;
  double seconds = 0;
  for (double w : in_widths) seconds += collective_seconds(x.g, Collective::AllToAll, x.cp_group, 2 * x.rows * w);
  seconds += collective_seconds(x.g, Collective::AllToAll, x.cp_group, 2 * x.rows * out_width);
  out.cp += 2 * seconds;  // forward, and backward's reversed calls
}

// One Mamba-2 mixer (mamba_ssm Mamba2, Megatron-Core MambaMixer): in_proj and out_proj GEMMs
// split by heads over tp, the depthwise conv and the gated norm as memory-bound kernels
// (each reads and writes its channels once, backward twice), the SSD scan (chunk 256).
// Under cp, Megatron's five all-to-alls (z, x, B and C repeated to whole groups, dt) and y's.
LayerTime mamba1_mixer(const Context& x);
LayerTime mamba_mixer(const Context& x) {
  const memest_model& m = x.m;
  if (uses_mamba1(m)) return mamba1_mixer(x);
  LayerTime out;
  double gemm = 0;
  const double heads = static_cast<double>(m.mamba_num_heads);
  const double inner = heads * static_cast<double>(m.mamba_head_dim);
  const double groups = static_cast<double>(m.mamba_groups);
  const double bc = 2 * groups * static_cast<double>(m.mamba_state_size);
  linear(x, out, x.rows, (2 * inner + bc + heads) / x.t, x.h, gemm);
  linear(x, out, x.rows, x.h, inner / x.t, gemm);
  scan_part(x, out, mamba_scan_flops(m), static_cast<double>(m.mamba_head_dim), 256);
  mixer_tail(x, out, x.rows * (4 * (inner + bc) + 6 * inner) / x.t, gemm);  // conv, gate, norm
  const double bc_copies = mamba_bc_copies(m, x.t, x.c);
  mixer_cp_part(x, out, {inner / x.t, inner / x.t, bc_copies * bc / 2 / x.t,
                         bc_copies * bc / 2 / x.t, heads / x.t},
                inner / x.t);
  return out;
}

// One Mamba-1 mixer (JambaMambaMixer): in_proj, x_proj, dt_proj and out_proj GEMMs split by
// channels over tp; the selective scan is a recurrence on CUDA cores, costed as the memory-bound
// kernel it is (u, delta, z read, out and out_z written: 10 bytes per channel forward), with
// the conv (4 bytes per channel) and the dt/B/C norms beside it. x_proj's own all-reduce under
// tp (dt_rank + 2 state wide) is left out.
LayerTime mamba1_mixer(const Context& x) {
  const memest_model& m = x.m;
  LayerTime out;
  double gemm = 0;
  const double inner = static_cast<double>(m.mamba_num_heads * m.mamba_head_dim);
  const double dt_rank = static_cast<double>(m.mamba_dt_rank);
  const double dt_bc = dt_rank + 2 * static_cast<double>(m.mamba_state_size);
  linear(x, out, x.rows, 2 * inner / x.t, x.h, gemm);
  linear(x, out, x.rows, dt_bc, inner / x.t, gemm);
  linear(x, out, x.rows, inner / x.t, dt_rank, gemm);
  linear(x, out, x.rows, x.h, inner / x.t, gemm);
  mixer_tail(x, out, x.rows * (14 * inner / x.t + 8 * dt_bc), gemm);
  return out;
}

// One Kimi Delta Attention (fla KimiDeltaAttention): q/k/v, the low-rank forget and output
// gates, b_proj and o_proj GEMMs (the gates' first halves whole on every rank), the three short
// convs and the gated norm memory-bound, the chunked delta rule (chunk 64) as gated DeltaNet's.
LayerTime kda_mixer(const Context& x) {
  const memest_model& m = x.m;
  LayerTime out;
  double gemm = 0;
  const auto [vh, keys, values, gate, rank] = delta_rule_widths(m);
  linear(x, out, x.rows, (2 * keys + values) / x.t, x.h, gemm);
  linear(x, out, x.rows, 2 * rank, x.h, gemm);
  linear(x, out, x.rows, (gate + values) / x.t, rank, gemm);
  linear(x, out, x.rows, vh / x.t, x.h, gemm);
  linear(x, out, x.rows, x.h, values / x.t, gemm);
  scan_part(x, out, deltanet_scan_flops(m), static_cast<double>(m.linear_value_head_dim), 64);
  mixer_tail(x, out, x.rows * (4 * (2 * keys + values) + 4 * gate + 6 * values) / x.t, gemm);
  return out;
}

// One gated DeltaNet (Qwen3NextGatedDeltaNet): in_proj_qkvz, in_proj_ba and out_proj GEMMs, the
// causal conv and the gated norm memory-bound, the chunked delta rule (chunk 64) over the key
// width as state and the value width as head.
LayerTime deltanet_mixer(const Context& x) {
  const memest_model& m = x.m;
  if (uses_kda(m)) return kda_mixer(x);
  LayerTime out;
  double gemm = 0;
  const auto [vh, keys, values, repeated_keys, rank] = delta_rule_widths(m);
  linear(x, out, x.rows, (2 * keys + 2 * values) / x.t, x.h, gemm);
  linear(x, out, x.rows, 2 * vh / x.t, x.h, gemm);
  linear(x, out, x.rows, x.h, values / x.t, gemm);
  scan_part(x, out, deltanet_scan_flops(m), static_cast<double>(m.linear_value_head_dim), 64);
  mixer_tail(x, out, x.rows * (4 * (2 * keys + values) + 6 * values) / x.t, gemm);
  // under cp: Megatron's GatedDeltaNet sends q, k, v, z, beta and alpha in one all-to-all and
  // the gated norm's output back in another
  mixer_cp_part(x, out, {(2 * keys + 2 * values + 2 * vh) / x.t}, values / x.t);
  return out;
}

// The attention half of a dense block with its TP collectives (what a mixer replaces), and the
// MLP half with its norm (what a mixer-only layer lacks); the norm's and residual's kernels of
// each half are half the block's.
LayerTime attention_half(const Context& x) {
  LayerTime out;
  double gemm = 0;
  attention_part(x, out, gemm);
  tp_part(x, out, 1, gemm);
  return out;
}
LayerTime mlp_half(const Context& x) {
  const memest_model& m = x.m;
  LayerTime out;
  double gemm = 0;
  const double f = static_cast<double>(m.intermediate_size);
  linear(x, out, x.rows, (m.gated_mlp ? 2 : 1) * f / x.t, x.h, gemm);
  linear(x, out, x.rows, x.h, f / x.t, gemm);
  const double bytes = block_elementwise_bytes(x, 0, x.rows, f / x.t) / 2;
  out.forward += memory_seconds(x.dev, bytes, block_elementwise_kernels(x) / 2);
  out.backward += memory_seconds(x.dev, 2 * bytes, block_elementwise_kernels(x));
  tp_part(x, out, 1, gemm);
  return out;
}

// Tokens each expert-parallel rank's experts receive, relative to the average: the capacity
// factor when one is set (each expert's rows padded or cut to it), else drop-less routing's
// busiest rank. With routing as balanced as the auxiliary loss drives it, the busiest of ep
// ranks receiving mu rows on average holds about mu + sqrt(2 ln(ep) mu) (the maximum of ep
// near-normal counts).
double expert_load(const Context& x, double mean_rows) {
  if (x.plan.moe_capacity_factor > 0) return x.plan.moe_capacity_factor;
  if (x.ep <= 1 || !(mean_rows > 0)) return 1;
  return 1 + std::sqrt(2 * std::log(x.ep) / mean_rows);
}

// One dispatch (or combine) of `bytes` of routed copies from this GPU to its expert-parallel
// ranks. The all-to-all dispatcher sends every copy: the share bound for other nodes through
// this GPU's NIC, the rest over NVLink (collectives.hpp). DeepEP (deep_ep/buffer.py internode
// dispatch) sends a token once to each other node that holds any of its k experts, over RDMA to
// the GPU of the same local rank there, which forwards it over NVLink: with the experts of n
// nodes chosen uniformly, a token reaches (n - 1)(1 - (1 - 1/n)^k) other nodes on average,
// against k (n - 1)/n copies.
double dispatch_seconds(const Context& x, double bytes) {
  const memest_model& m = x.m;
  const double node = static_cast<double>(x.g.gpus_per_node);
  const double span = x.ep_group.span;
  if (x.plan.stack.moe_dispatcher != MEMEST_MOE_DISPATCHER_DEEPEP || span <= node || x.ep <= 1) {
    return collective_seconds(x.g, Collective::AllToAll, x.ep_group, bytes);
  }
  const double nodes = span / node;
  const double k = static_cast<double>(m.num_experts_per_tok);
  const double remote = (nodes - 1) * (1 - std::pow(1 - 1 / nodes, k));
  const double per_copy = bytes / k;  // one token's hidden state
  const Link link = link_of(x.g, x.ep_group);
  const double rdma = remote * per_copy / (x.g.inter_node_gbps * 1e9);
  const double nvlink = k * per_copy / (x.g.intra_node_gbps * 1e9);  // every copy lands by NVLink
  return link.step_latency * link.steps + std::max(rdma, nvlink);
}

LayerTime moe_layer(const Context& x) {
  LayerTime out;
  double gemm = 0;
  attention_part(x, out, gemm);
  tp_part(x, out, 1, gemm);  // the attention region; the experts move tokens by all-to-all
  const memest_model& m = x.m;
  const double experts = static_cast<double>(m.num_experts);
  const double k = static_cast<double>(m.num_experts_per_tok);
  const double tokens = x.rows / x.t_sp;  // tokens entering the MoE layer on this GPU
  const double copies = tokens * k;       // routed copies it dispatches
  const double load = expert_load(x, copies);
  // Router: scores h x E, softmax and top-k (megatron/core/transformer/moe/router.py).
  double expert_gemm = 0;
  linear(x, out, tokens, experts, x.h, expert_gemm);
  const double router_bytes = tokens * experts * 8;
  // Rows each local expert multiplies (etp ranks of an expert all-gather their rows).
  const double local = experts / x.ep;
  const double per_expert = copies * load * x.etp / local;
  const double fe = static_cast<double>(expert_width(m));
  grouped_linear(x, out, local, per_expert, (m.gated_mlp ? 2 : 1) * fe / x.etp, x.h, expert_gemm);
  grouped_linear(x, out, local, per_expert, x.h, fe / x.etp, expert_gemm);
  double shared_width = 0;
  if (m.num_shared_experts > 0) {
    shared_width = static_cast<double>(m.num_shared_experts * shared_expert_width(m)) / x.t;
    linear(x, out, x.rows, (m.gated_mlp ? 2 : 1) * shared_width, x.h, expert_gemm);
    linear(x, out, x.rows, x.h, shared_width, expert_gemm);
  }
  gemm += expert_gemm;
  // Memory-bound: the block's norms and residuals, the experts' activation, the token
  // permutation and unpermutation (moe_utils.py permute / unpermute: each row read and written,
  // the combine weighted), the router's fp32 scores.
  const double rows = copies * load * x.etp;
  const double q_width = static_cast<double>(m.num_attention_heads + m.num_key_value_heads) *
                         static_cast<double>(head_dim(m));
  double bytes = block_elementwise_bytes(x, is_mla(m) ? 0 : q_width, rows, fe / x.etp);
  if (shared_width > 0) bytes += (m.gated_mlp ? 6 : 4) * x.rows * shared_width;
  bytes += 10 * rows * x.h + router_bytes;
  out.forward += memory_seconds(x.dev, bytes, block_elementwise_kernels(x) + 6);
  out.backward += memory_seconds(x.dev, 2 * bytes, 2 * block_elementwise_kernels(x) + 12);
  // Dispatch and combine (token_dispatcher.py MoEAlltoAllTokenDispatcher): one all-to-all
  // each way in forward, their transposes in backward, again for a recomputed forward; with
  // etp > 1 an all-gather and a reduce-scatter of the rows inside the expert's TP group.
  const double rerun = x.recompute_share +
                       (recomputes(x.plan.layout, MEMEST_RECOMPUTE_MODULE_MOE) ? 1.0 : 0.0);
  const double passes = 4 + 2 * rerun;
  const double a2a = dispatch_seconds(x, copies * load * x.h * 2);
  const double gather = collective_seconds(x.g, Collective::AllGather, x.etp_group, rows * x.h * 2);
  const double comm = passes * (a2a + gather);
  out.ep += (x.overlap & bit(MEMEST_OVERLAP_EP)) ? std::max(0.0, comm - expert_gemm) : comm;
  return out;
}

// Adds what an adapter changes: the adapters' own small GEMMs (A: rank x in, B: out x rank,
// both trained) and, for QLoRA, each base linear's dequantisation from NF4 (read half a byte
// and the block scales, write 2 bytes per weight) in forward and again in backward.
void adapter_part(const Context& x, LayerTime& out, double linear_params, double adapted_params) {
  const Adapter& ad = x.plan.adapter;
  if (!ad.enabled()) return;
  const double r = static_cast<double>(ad.rank);
  // adapted_params = rank x (in + out) summed over the adapted modules: the A and B GEMMs'
  // FLOPs for `rows` rows; 6 kernels each (A, B forward; two input and two weight gradients).
  const double flops = 2 * x.rows * adapted_params / x.t;
  out.forward += flops / (x.dev.bf16_flops * x.dev.gemm_efficiency) + 2 * x.dev.kernel_seconds * adapted_params / std::max(1.0, r * 2 * x.h);
  out.backward += 2 * flops / (x.dev.bf16_flops * x.dev.gemm_efficiency) + 4 * x.dev.kernel_seconds * adapted_params / std::max(1.0, r * 2 * x.h);
  if (ad.type == MEMEST_ADAPTER_QLORA) {
    const double passes = 2 + x.recompute_share;
    out.backward += memory_seconds(x.dev, passes * linear_params / x.t * 2.53, 0);
  }
}

// Per-micro-batch times of a stage holding `dense` dense and `moe` MoE layers (plus the
// embedding on the first stage and the LM head and loss on the last).
struct StageTime {
  LayerTime parts;
  double pp = 0;  // exposed pipeline sends
  double total() const { return parts.total() + pp; }
};

LayerTime head_and_loss(const Context& x) {
  LayerTime out;
  const memest_model& m = x.m;
  const double v = static_cast<double>(m.vocab_size);
  double gemm = 0;
  linear(x, out, x.rows, v / x.t, x.h, gemm);
  // The loss over the logits (fp32): Megatron's vocab-parallel cross-entropy reads the logits
  // once and writes their gradient (about 12 bytes per logit); an unfused loss upcasts,
  // log-softmaxes and gathers in separate kernels (about 3 times that).
  const bool fused = x.plan.loss == MEMEST_LOSS_FUSED || x.plan.loss == MEMEST_LOSS_LINEAR_FUSED ||
                     x.plan.loss == MEMEST_LOSS_CHUNKED || x.plan.loss == MEMEST_LOSS_CHUNKED_LM_HEAD ||
                     x.plan.loss == MEMEST_LOSS_CHUNKED_LINEAR || x.plan.loss == MEMEST_LOSS_FLASH_ATTN ||
                     x.plan.stack.compile == MEMEST_COMPILE_ALL ||
                     x.plan.stack.compile == MEMEST_COMPILE_LOSS;
  const double logits = x.rows * v / x.t;
  out.forward += memory_seconds(x.dev, (fused ? 6 : 18) * logits, fused ? 2 : 6);
  out.backward += memory_seconds(x.dev, (fused ? 6 : 18) * logits, fused ? 2 : 6);
  // the final norm and the SP gather before the head
  out.forward += memory_seconds(x.dev, 4 * x.rows * x.h / x.t_sp, 1);
  out.backward += memory_seconds(x.dev, 8 * x.rows * x.h / x.t_sp, 1);
  tp_part(x, out, 0.5, gemm);
  return out;
}

LayerTime embedding(const Context& x) {
  // Gather rows forward; backward scatter-adds the rows' gradients into the table (fp32).
  LayerTime out;
  out.forward += memory_seconds(x.dev, 4 * x.rows * x.h / x.t_sp, 1);
  out.backward += memory_seconds(x.dev, 6 * x.rows * x.h / x.t_sp, 1);
  return out;
}

// A layer's recomputed forward (full recomputation of recompute_share of the layers; with
// op-level selective recomputation (torchtitan's SAC) the memory-bound kernels only: the
// matmuls' outputs are saved).
void add_recompute(const Context& x, LayerTime& layer, double elementwise_forward) {
  if (x.recompute_share > 0) layer.recompute = x.recompute_share * layer.forward;
  else if (x.plan.layout.recompute == MEMEST_RECOMPUTE_OP_SELECTIVE) layer.recompute = elementwise_forward;
}

// Megatron's recompute modules (selective recomputation, activations/activations.hpp): the
// forward kernels of what they checkpoint run again in the layer's backward. mlp: the dense
// MLP (and its region's two forward TP collectives of four); moe: the MoE part of the layer (its
// second dispatch and combine are in moe_layer's passes); shared_experts: their two linears;
// mla_up_proj: the two up projections; moe_act and layernorm: memory-bound kernels.
void add_module_recompute(const Context& x, LayerTime& layer, bool moe_block) {
  const ActivationLayout& l = x.plan.layout;
  if (l.recompute != MEMEST_RECOMPUTE_SELECTIVE || l.recompute_modules == 0) return;
  const memest_model& m = x.m;
  auto forward = [&](double rows, double n, double k) {
    return linear_seconds(x.dev, rows, n, k, x.gemm_inputs, !x.frozen_base).forward;
  };
  const double th = x.rows * x.h / x.t_sp;  // the hidden state on the SP shard
  if (!moe_block && recomputes(l, MEMEST_RECOMPUTE_MODULE_MLP)) {
    const LayerTime mlp = mlp_half(x);
    layer.recompute += mlp.forward;
    layer.tp += mlp.tp / 2;
  }
  if (moe_block && recomputes(l, MEMEST_RECOMPUTE_MODULE_MOE)) {
    // `layer` is moe_layer(x) already: its forward less the attention half's
    layer.recompute += layer.forward - attention_half(x).forward;
  } else if (moe_block) {
    const double copies = x.rows / x.t_sp * static_cast<double>(m.num_experts_per_tok);
    const double rows = copies * expert_load(x, copies) * x.etp;
    const double fe = static_cast<double>(expert_width(m));
    if (recomputes(l, MEMEST_RECOMPUTE_MODULE_MOE_ACT)) {
      // read fc1's output (2 or 1 x f_e wide), write the activation's (f_e), 2 bytes each
      layer.recompute += memory_seconds(x.dev, (m.gated_mlp ? 6 : 4) * rows * fe / x.etp, 1);
    }
    if (recomputes(l, MEMEST_RECOMPUTE_MODULE_SHARED_EXPERTS) && m.num_shared_experts > 0) {
      const double width = static_cast<double>(m.num_shared_experts * shared_expert_width(m)) / x.t;
      layer.recompute += forward(x.rows, (m.gated_mlp ? 2 : 1) * width, x.h) +
                         forward(x.rows, x.h, width);
    }
  }
  if (recomputes(l, MEMEST_RECOMPUTE_MODULE_LAYERNORM)) {
    const double norms = (moe_block ? 1 : 0) + (is_mla(m) ? 1 : 0);  // the unfused ones
    layer.recompute += memory_seconds(x.dev, norms * 4 * th, norms);
  }
  if (recomputes(l, MEMEST_RECOMPUTE_MODULE_MLA_UP_PROJ) && is_mla(m)) {
    const double a = static_cast<double>(m.num_attention_heads) / x.t;
    layer.recompute +=
        forward(x.rows, a * static_cast<double>(m.qk_nope_head_dim + m.qk_rope_head_dim),
                static_cast<double>(m.q_lora_rank > 0 ? m.q_lora_rank : m.hidden_size)) +
        forward(x.rows, a * static_cast<double>(m.qk_nope_head_dim + m.v_head_dim),
                static_cast<double>(m.kv_lora_rank));
  }
}

}  // namespace

double moe_all_to_all_seconds(const Plan& plan) {
  if (!is_moe(*plan.model) || plan.ep <= 1) return 0;
  const Context x(plan);
  const double copies = x.rows / x.t_sp * static_cast<double>(plan.model->num_experts_per_tok);
  const double load = plan.moe_capacity_factor > 0 ? plan.moe_capacity_factor : 1.0;
  return 4 * dispatch_seconds(x, copies * load * x.h * 2);  // the dispatcher's own path
}

LayerTimes layer_times(const Plan& plan) {
  LayerTimes out;
  if (plan.num_microbatches <= 0) return out;
  const Context x(plan);
  const memest_model& m = *plan.model;
  out.dense = dense_layer(x);
  const double dense_elem = memory_seconds(
      x.dev, block_elementwise_bytes(x, 0, x.rows, static_cast<double>(m.intermediate_size) / x.t), 0);
  add_recompute(x, out.dense, dense_elem);
  add_module_recompute(x, out.dense, false);
  if (is_moe(m)) {
    out.moe = moe_layer(x);
    add_recompute(x, out.moe, dense_elem);
    add_module_recompute(x, out.moe, true);
  }
  const LayerMix mix = layer_mix(m, 0, m.num_hidden_layers);
  if (mix.any()) {
    LayerTime attention = attention_half(x), mlp = mlp_half(x), none;
    add_recompute(x, attention, 0);
    add_recompute(x, mlp, 0);
    auto minus = [&](LayerTime a, const LayerTime& b) {
      a.add(b, -1);
      return a;
    };
    if (mix.mamba + mix.parallel > 0) {
      LayerTime mamba = mamba_mixer(x);
      add_recompute(x, mamba, 0);
      out.mamba_delta = minus(mamba, attention);
      out.parallel_delta = mamba;
    }
    if (mix.deltanet > 0) {
      LayerTime deltanet = deltanet_mixer(x);
      add_recompute(x, deltanet, 0);
      out.deltanet_delta = minus(deltanet, attention);
    }
    out.no_mixer_delta = minus(none, attention);
    out.no_mlp_delta = minus(none, mlp);
  }
  if (plan.adapter.enabled()) {
    const AdapterParams ap = adapter_parameters(m, plan.adapter.targets,
                                                static_cast<double>(plan.adapter.rank), "");
    adapter_part(x, out.dense, plan.dense_layer.sharded, ap.dense_layer);
    if (is_moe(m)) {
      adapter_part(x, out.moe, plan.moe_parts.base.sharded + plan.moe_parts.routed, ap.moe_layer);
    }
    if (mix.any()) {
      // a hybrid's layer kinds change which linears hold adapters (AdapterBlocks::delta) and,
      // under QLoRA, which base linears are dequantised (hybrid_params_delta)
      const std::pair<LayerTime*, int64_t LayerMix::*> kinds[] = {
          {&out.mamba_delta, &LayerMix::mamba},       {&out.deltanet_delta, &LayerMix::deltanet},
          {&out.parallel_delta, &LayerMix::parallel}, {&out.no_mixer_delta, &LayerMix::no_mixer},
          {&out.no_mlp_delta, &LayerMix::no_mlp}};
      for (const auto& [delta, kind] : kinds) {
        LayerMix one;
        one.*kind = 1;
        adapter_part(x, *delta, hybrid_params_delta(m, one).sharded, ap.blocks.delta(one));
      }
    }
  }
  out.head = head_and_loss(x);
  out.embed = embedding(x);
  return out;
}

Throughput estimate_throughput(const Plan& plan, const LayerTimes* cached) {
  Throughput out;
  if (plan.num_microbatches <= 0) return out;
  const Context x(plan);
  const memest_model& m = *plan.model;
  const double p = static_cast<double>(plan.pp), vpp = static_cast<double>(plan.vpp);
  const double d = static_cast<double>(plan.dp);
  const double mb = static_cast<double>(plan.num_microbatches);
  const double gpus = x.t * x.c * p * d;

  out.model_flops = model_flops_per_token(m, plan.flops, x.s) * x.s * x.b * mb * d;

  // One layer of each kind (the search's cache holds them per block shape), then each stage
  // kind (first, middle, last) from its layer counts.
  const LayerTimes own = cached ? LayerTimes{} : layer_times(plan);
  const LayerTimes& kinds = cached ? *cached : own;
  LayerTime dense = kinds.dense, moe = kinds.moe;
  const LayerTime& head = kinds.head;
  const LayerTime& embed = kinds.embed;
  const LayerParams& dl = plan.dense_layer;
  const double dense_params = dl.sharded / x.t + dl.replicated;
  double moe_params = 0, moe_routed = 0;
  if (is_moe(m)) {
    const MoeLayerParts& parts = plan.moe_parts;
    moe_params = parts.base.sharded / x.t + parts.base.replicated;
    moe_routed = parts.routed / (x.ep * x.etp);
  }
  const bool adapter = plan.adapter.enabled();
  const AdapterLayerParams ad = adapter_layer_params(x);
  sharded_part(x, dense, dense_params, adapter ? ad.dense : dense_params);
  if (is_moe(m)) {
    sharded_part(x, moe, moe_params + moe_routed,
                 adapter ? ad.moe + ad.moe_experts : moe_params + moe_routed);
  }

  const EdgeParams& edge = plan.edge;
  // Pipeline sends: the stage's output hidden states (SP-scattered), forward and its gradient
  // backward, per model chunk; blocking in 1F1B unless overlapped.
  double pp_send = 0;
  if (plan.pp > 1) {
    const Group next{2, x.t * x.c * d * 2};
    const double one = collective_seconds(x.g, Collective::SendRecv, next, x.rows * x.h * 2 / x.t_sp);
    pp_send = (x.overlap & bit(MEMEST_OVERLAP_PP)) ? 0 : 2 * vpp * one;
  }

  struct Kind {
    double time = 0;
    LayerTime parts;
    double params = 0, expert_params = 0;  // what this stage's GPU reduces over data parallelism
    double backward_one = 0, forward_one = 0;  // one micro-batch's kernels (DP overlap window)
  };
  auto stage = [&](int64_t i) {
    Kind k;
    const int64_t layers = plan.layers.of(i, plan.pp);
    const int64_t moe_layers = stage_moe_layers(m, plan.layers, plan.pp, plan.vpp, i);
    const double nd = static_cast<double>(layers - moe_layers), nm = static_cast<double>(moe_layers);
    k.parts.add(dense, nd);
    k.parts.add(moe, nm);
    const LayerMix mix = stage_layer_mix(m, plan.layers, plan.pp, plan.vpp, i);
    if (mix.any()) {  // a hybrid model's layers (their mixers, absent blocks)
      k.parts.add(kinds.mamba_delta, static_cast<double>(mix.mamba));
      k.parts.add(kinds.deltanet_delta, static_cast<double>(mix.deltanet));
      k.parts.add(kinds.parallel_delta, static_cast<double>(mix.parallel));
      k.parts.add(kinds.no_mixer_delta, static_cast<double>(mix.no_mixer));
      k.parts.add(kinds.no_mlp_delta, static_cast<double>(mix.no_mlp));
    }
    k.params = nd * dense_params + nm * moe_params;
    if (mix.any()) {
      const LayerParams mixers = hybrid_params_delta(m, mix);
      k.params += mixers.sharded / x.t + mixers.replicated;
    }
    k.expert_params = nm * moe_routed;
    if (i == 0) {
      k.parts.add(embed, 1);
      k.params += edge.word_embedding / x.t + edge.embedding_extra;
    }
    // each multi-token-prediction module: a layer where the MTP sits (the last stage, or a
    // layout's 'm') and the head again on the last stage
    const double mtp = static_cast<double>(m.mtp_layers);
    if (trains_mtp(plan) && i == plan.layers.mtp_stage(plan.pp)) {
      k.parts.add(is_moe(m) ? moe : dense, mtp);
    }
    if (i == plan.pp - 1) {
      k.parts.add(head, 1);
      k.params += edge.lm_head / x.t + edge.final_norm;
      if (trains_mtp(plan)) k.parts.add(head, mtp);
    }
    if (adapter) {
      // only the adapters have gradients to reduce and parameters to gather back
      k.params = nd * ad.dense + nm * ad.moe + ad.blocks.delta(mix) +
                 (i == 0 ? ad.embed_tokens : 0.0) + (i == plan.pp - 1 ? ad.lm_head : 0.0);
      k.expert_params = nm * ad.moe_experts;
      if (trains_mtp(plan) && i == plan.layers.mtp_stage(plan.pp)) {
        k.params += mtp * (is_moe(m) ? ad.moe : ad.dense);
        k.expert_params += is_moe(m) ? mtp * ad.moe_experts : 0.0;
      }
    }
    k.time = k.parts.total() + pp_send;
    k.forward_one = k.parts.forward;
    k.backward_one = k.parts.backward;
    return k;
  };
  const Kind first = stage(0);
  const Kind last = plan.pp > 1 ? stage(plan.pp - 1) : first;
  Kind middle = plan.pp > 2 ? stage(1) : first;
  double middle_sum = (p - 2) * (plan.pp > 2 ? middle.time : 0);
  if (plan.pp > 3 && is_hybrid(m)) {
    // a hybrid pattern gives the middle stages different layers: each is timed, the slowest kept
    middle_sum = middle.time;
    for (int64_t i = 2; i < plan.pp - 1; ++i) {
      Kind k = stage(i);
      middle_sum += k.time;
      if (k.time > middle.time) middle = k;
    }
  }
  const Kind* slowest = &first;
  if (last.time > slowest->time) slowest = &last;
  if (plan.pp > 2 && middle.time > slowest->time) slowest = &middle;
  const double sum = plan.pp == 1 ? first.time : first.time + last.time + middle_sum;
  // 1F1B: every stage runs m micro-batches at the slowest stage's pace, plus the fill and drain
  // of the others; interleaving divides the fill and drain by vpp.
  const double pipeline = mb * slowest->time + (sum - slowest->time) / vpp;

  StepParts& parts = out.parts;
  parts.seconds[MEMEST_STEP_COMPUTE] = mb * (slowest->parts.forward + slowest->parts.backward);
  parts.seconds[MEMEST_STEP_RECOMPUTE] = mb * slowest->parts.recompute;
  parts.seconds[MEMEST_STEP_TP_COMM] = mb * slowest->parts.tp;
  parts.seconds[MEMEST_STEP_CP_COMM] = mb * slowest->parts.cp;
  parts.seconds[MEMEST_STEP_EP_COMM] = mb * slowest->parts.ep;
  parts.seconds[MEMEST_STEP_DP_COMM] = mb * slowest->parts.dp;
  parts.seconds[MEMEST_STEP_PP_COMM] = mb * pp_send;
  parts.seconds[MEMEST_STEP_BUBBLE] = pipeline - mb * slowest->time;

  // Once a step: gradients reduced over the data-parallel group (dp x cp, the distributed
  // optimizer's; expert parameters over edp), parameters gathered back (ZeRO >= 1). With the
  // stack's DP overlap, the reduce-scatter runs bucket by bucket during the last micro-batch's
  // backward and the all-gather during the next step's first forward: what exceeds that
  // window is exposed, and at least the last bucket (Megatron-Core bucket_size
  // max(40M, 1M x dp) parameters, distributed_data_parallel.py).
  const Precision& pr = plan.precision;
  const bool per_layer_sharding =
      (plan.framework == MEMEST_FRAMEWORK_FSDP && plan.zero >= 2 && plan.pp == 1) ||
      (plan.framework == MEMEST_FRAMEWORK_DEEPSPEED && plan.zero >= 2);
  const double edp = static_cast<double>(plan.edp);
  const Link dense_link = link_of(x.g, Group{d * x.c, x.t * x.c * d});
  const Link expert_link = is_moe(m) ? link_of(x.g, Group{edp, x.etp * x.ep * edp}) : Link{};
  auto dp_seconds = [&](const Kind& k) {
    double exposed = 0;
    auto reduce = [&](double params, const Link& link) {
      if (link.ranks <= 1 || !(params > 0)) return;
      double grads = 0, gather = 0;
      if (!per_layer_sharding) {
        grads = collective_seconds(link, plan.zero >= 1 ? Collective::ReduceScatter : Collective::AllReduce,
                                   params * gradient_bytes(plan));
      }
      if (plan.zero >= 1 && !(per_layer_sharding && (plan.zero >= 3 || plan.framework == MEMEST_FRAMEWORK_FSDP))) {
        gather = collective_seconds(link, Collective::AllGather, params * std::min(pr.param_bytes, 2.0));
      }
      const double buckets = std::max(1.0, params / std::max(4e7, 1e6 * link.ranks));
      if (x.overlap & bit(MEMEST_OVERLAP_DP)) {
        exposed += std::max(grads / buckets, grads - k.backward_one / vpp);
        exposed += std::max(gather / buckets, gather - k.forward_one / vpp);
      } else {
        exposed += grads + gather;
      }
    };
    reduce(k.params, dense_link);
    reduce(k.expert_params, expert_link);
    return exposed;
  };
  double dp_step = dp_seconds(first);
  if (plan.pp > 1) dp_step = std::max(dp_step, dp_seconds(last));
  if (plan.pp > 2) dp_step = std::max(dp_step, dp_seconds(middle));
  parts.seconds[MEMEST_STEP_DP_COMM] += dp_step;

  // Optimizer step (fused multi-tensor Adam: Megatron's FusedAdam, torch.optim foreach): per
  // parameter of this GPU's shard it reads and writes the states and masters (K bytes each
  // way), reads the gradient and writes the working weight; the gradients are zeroed and read
  // once more for the clipping norm.
  const Kind& big = first.params + first.expert_params >= last.params + last.expert_params ? first : last;
  const bool sharded_states = plan.zero >= 1;
  const double shard = (big.params / (sharded_states ? d * x.c : 1)) +
                       (big.expert_params / (sharded_states ? static_cast<double>(plan.edp) : 1));
  const double local = big.params + big.expert_params;
  const double states = plan.adapter.enabled() ? 0 : pr.optimizer_bytes;
  const double trainable_shard = plan.adapter.enabled() ? 0 : shard;
  parts.seconds[MEMEST_STEP_OPTIMIZER] =
      memory_seconds(x.dev, trainable_shard * (2 * states + 2 * pr.grad_bytes + pr.param_bytes) +
                                (plan.adapter.enabled() ? 0 : local * pr.grad_bytes),
                     4);
  parts.seconds[MEMEST_STEP_OFFLOAD] = offload_seconds(plan, plan.param_count.total / (x.t * p), mb);

  out.step_seconds = parts.total();
  out.tflops_per_gpu = out.model_flops / (out.step_seconds * gpus) / 1e12;
  out.tokens_per_s = x.s * x.b * mb * d / out.step_seconds;
  out.mfu = plan.gpu->peak_bf16_tflops > 0 ? out.tflops_per_gpu / plan.gpu->peak_bf16_tflops : 0;
  out.bubble_fraction = (p - 1) / (vpp * mb);
  return out;
}

double tflops_upper_bound(const Plan& plan, const LayerTimes& times) {
  if (plan.num_microbatches <= 0) return 0;
  const memest_model& m = *plan.model;
  auto kernels = [](const LayerTime& l) { return l.forward + l.backward + l.recompute; };
  auto stage = [&](int64_t i) {
    const int64_t moe_layers = stage_moe_layers(m, plan.layers, plan.pp, plan.vpp, i);
    double k = static_cast<double>(plan.layers.of(i, plan.pp) - moe_layers) * kernels(times.dense) +
               static_cast<double>(moe_layers) * kernels(times.moe);
    const LayerMix mix = stage_layer_mix(m, plan.layers, plan.pp, plan.vpp, i);
    if (mix.any()) {  // a hybrid model's layers, as estimate_throughput adds them
      k += static_cast<double>(mix.mamba) * kernels(times.mamba_delta) +
           static_cast<double>(mix.deltanet) * kernels(times.deltanet_delta) +
           static_cast<double>(mix.parallel) * kernels(times.parallel_delta) +
           static_cast<double>(mix.no_mixer) * kernels(times.no_mixer_delta) +
           static_cast<double>(mix.no_mlp) * kernels(times.no_mlp_delta);
    }
    if (i == 0) k += kernels(times.embed);
    if (i == plan.pp - 1) k += kernels(times.head);
    return k;
  };
  const double slowest = std::max(stage(0), stage(plan.pp - 1));
  const double s = plan.layout.seq_len, b = plan.layout.micro_batch;
  const double mb = static_cast<double>(plan.num_microbatches), d = static_cast<double>(plan.dp);
  const double gpus = plan.layout.tp * plan.layout.cp * static_cast<double>(plan.pp) * d;
  const double flops = model_flops_per_token(m, plan.flops, s) * s * b * mb * d;
  return flops / (mb * slowest * gpus) / 1e12;
}

namespace {
template <typename Out>
void write_parts(const StepParts& p, Out& out) {
  out.compute_seconds = p.seconds[MEMEST_STEP_COMPUTE];
  out.recompute_seconds = p.seconds[MEMEST_STEP_RECOMPUTE];
  out.bubble_seconds = p.seconds[MEMEST_STEP_BUBBLE];
  out.tp_comm_seconds = p.seconds[MEMEST_STEP_TP_COMM];
  out.cp_comm_seconds = p.seconds[MEMEST_STEP_CP_COMM];
  out.dp_comm_seconds = p.seconds[MEMEST_STEP_DP_COMM];
  out.pp_comm_seconds = p.seconds[MEMEST_STEP_PP_COMM];
  out.ep_comm_seconds = p.seconds[MEMEST_STEP_EP_COMM];
  out.optimizer_seconds = p.seconds[MEMEST_STEP_OPTIMIZER];
  out.offload_seconds = p.seconds[MEMEST_STEP_OFFLOAD];
}
}  // namespace

void write_throughput(const Throughput& t, memest_pretrain_result& out) {
  out.step_seconds = t.step_seconds;
  out.tokens_per_s = t.tokens_per_s;
  out.tflops_per_gpu = t.tflops_per_gpu;
  out.mfu = t.mfu;
  write_parts(t.parts, out);
}

void write_throughput(const Throughput& t, memest_search_entry& out) {
  out.step_seconds = t.step_seconds;
  out.tokens_per_s = t.tokens_per_s;
  out.tflops_per_gpu = t.tflops_per_gpu;
  out.bubble_fraction = t.bubble_fraction;
  out.mfu = t.mfu;
  write_parts(t.parts, out);
}

}  // namespace memest
