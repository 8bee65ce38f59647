#include "activations/stack_activations.hpp"

#include <algorithm>
#include <cmath>

#include "model/model.hpp"

namespace memest {

namespace {

// Tokens of one micro-batch on one GPU: s*b/cp.
double tokens_per_gpu(const ActivationLayout& x) { return x.seq_len * x.micro_batch / x.cp; }

// What a block's saved tensors are counted in: the tokens of one micro-batch on this GPU (n),
// the tensor-parallel size (t; sequence parallelism only with t > 1) and the model's widths:
// hidden h, head dim dh, heads a, key/value heads kv, MLP width f.
struct BlockDims {
  double n, t;
  bool sp;
  double h, dh, a, kv, f;
};

BlockDims block_dims(const memest_model& m, const ActivationLayout& x) {
  return {tokens_per_gpu(x),
          x.tp,
          x.sequence_parallel && x.tp > 1,
          static_cast<double>(m.hidden_size),
          static_cast<double>(head_dim(m)),
          static_cast<double>(m.num_attention_heads),
          static_cast<double>(m.num_key_value_heads),
          static_cast<double>(m.intermediate_size)};
}

double next_pow2(double v) {
  double p = 1;
  while (p < v) p *= 2;
  return p;
}

}  // namespace

// ---- 1. Loss -------------------------------------------------------------------------------

LossMemory loss_memory(LossKind kind, const LossInputs& in) {
  const double n = in.tokens, v = in.vocab, d = in.logit_bytes;
  const double nv = n * v;
  // `.float()` copies only when the logits are below fp32 (ATen's to() returns self otherwise).
  const double upcast = d < 4 ? 4.0 : 0.0;
  const double held = in.logits_held ? (in.held_fp32 ? 4.0 : d) : 0.0;  // through the backward
  LossMemory r;
  switch (kind) {
    case LossKind::Fused:
      // megatron/core/tensor_parallel/cross_entropy.py: calculate_logits_max makes the fp32
      // copy; max subtraction and exp run in place on it and it is saved as the softmax; the
      // backward turns it into the gradient in place, then the output layer's backward gets a
      // copy in the logits' dtype. The model's bf16 logits die when the loss returns.
      r.forward = nv * (d + upcast);
      r.backward = nv * (4 + (d < 4 ? d : 0.0) + held);
      break;
    case LossKind::Unfused:
      // F.cross_entropy = nll_loss(log_softmax(x)) (aten/src/ATen/native/LossNLL.cpp).
      // Forward, while log_softmax writes: the logits (d), the fp32 copy (4), the log-probs (4).
      // The fp32 copy dies when the loss returns: _log_softmax saves its result, not its input
      // (tools/autograd/derivatives.yaml), and ToCopyBackward saves nothing. Backward, inside
      // _log_softmax_backward_data: the saved log-probs (4), nll_loss_backward's grad_input
      // (4, self's shape and dtype: LossNLL.cpp's meta function) and the new gradient (4).
      r.forward = nv * (d + upcast + 4 + (in.shift_copy ? 4 : 0));
      r.backward = nv * (12 + held);
      if (in.compiled) {
        // torch/_functorch/partitioners.py (min-cut, default config): log_softmax's max and
        // sum are reductions (ban_recompute_reductions: saved, N values), the upcast and the
        // subtraction are pointwise and recomputed, so the graph saves its input logits (d)
        // rather than the fp32 log-probs (4). Inductor turns nll_loss_backward's scatter into
        // zeros into a pointwise select (optimize_scatter_upon_const_tensor) and fuses the
        // whole backward into one kernel writing the gradient in the input's dtype (d).
        r.forward = nv * d;
        r.backward = nv * 2 * d;
      }
      break;
    case LossKind::Unfused16Bit:
      // The loss of Hugging Face's GPT-2 before 4.46 (models/gpt2/modeling_gpt2.py,
      // GPT2LMHeadModel.forward: `lm_logits[..., :-1, :].contiguous()` then CrossEntropyLoss,
      // no .float()), copied by training scripts of that time, on a model whose parameters
      // are 16-bit and that runs without torch.autocast (DeepSpeed's fp16/bf16 engine casts
      // the module, runtime/engine.py; ColossalAI Gemini's ZeroDDP halves it and returns fp16
      // outputs, colossalai/nn/parallel/data_parallel.py): log_softmax without a dtype writes
      // the log-probs in the logits' dtype (aten/src/ATen/native/SoftMax.cpp).
      // Forward, while log_softmax writes: the logits (d), the shifted contiguous copy (d,
      // with shift_copy) and the log-probs (d). The copy dies when the loss returns: CloneBackward
      // and SliceBackward save only sizes, _log_softmax saves its result (derivatives.yaml).
      // Backward, inside _log_softmax_backward_data: the saved log-probs, nll_loss_backward's
      // grad_input (self's shape and dtype, LossNLL.cpp) and the new gradient (d each); after
      // it slice_backward's zero-filled full-size gradient (d) beside the incoming one (d), 2d,
      // below that peak.
      r.forward = nv * (2 * d + (in.shift_copy ? d : 0.0));
      r.backward = nv * (3 * d + held);
      if (in.compiled) {
        // As Unfused compiled: the slice and its copy are pointwise reads of the input.
        r.forward = nv * d;
        r.backward = nv * 2 * d;
      }
      break;
    case LossKind::Chunked: {
      // torchtune ce_chunked_output_loss.py: compute_cross_entropy(logits_chunk.float()) per
      // chunk; every chunk's log_softmax result stays saved for backward, only the fp32 copy is
      // per chunk. Forward peak at the last chunk: all logits (d), all log-probs (4), one copy
      // (c/C). Backward peak at the first chunk's LogSoftmaxBackward: all log-probs (4) plus
      // that chunk's nll grad and log-softmax grad (8/C).
      const double c = std::max(1.0, in.chunks);
      r.forward = nv * (d + 4 + upcast / c);
      r.backward = nv * (4 + 8 / c + held);
      if (in.compiled) {
        // torchtune compiles compute_cross_entropy only: per chunk as the compiled unfused loss
        // above, so every chunk's logits stay saved (d) and one chunk's gradient is written.
        r.forward = nv * d;
        r.backward = nv * d * (1 + 1 / c);
      }
      break;
    }
    case LossKind::ChunkedLmHead: {
      // litgpt/model.py GPT.forward: with lm_head_chunk_size the head runs per sequence chunk
      // and returns the list of chunk logits, which finetune/lora.py keeps (`logits = model(...)`)
      // until after `fabric.backward(loss)`. LitGPT runs the model through Lightning Fabric,
      // whose precision plugins return a module's outputs in torch's default dtype
      // (lightning/fabric/plugins/precision/half.py, amp.py, bitsandbytes.py: convert_output
      // -> _convert_fp_tensor(..., torch.get_default_dtype())): every chunk becomes an fp32
      // copy (4 B; both lists alive until forward returns: d + 4), and the head's own output is
      // dropped. utils.py chunked_cross_entropy: F.cross_entropy(chunk, ...) per chunk, reduction
      // "none": each chunk's fp32 log-probs are saved (4). Backward peak at a chunk's
      // LogSoftmaxBackward: the fp32 logits and the log-probs or gradients of every chunk (4 + 4)
      // plus that chunk's nll and log-softmax gradients (8/C). The same under autocast (the
      // fp32 chunks need no further copy).
      const double c = std::max(1.0, in.chunks);
      const double converted = d < 4 ? d + 4.0 : 4.0;
      r.forward = nv * std::max(converted, 8.0);
      r.backward = nv * (8.0 + 8.0 / c);
      break;
    }
    case LossKind::ChunkedLinear: {
      // torchtitan components/loss.py ChunkedLossWrapper: per chunk lm_head(h_chunk) (d), the
      // inner CrossEntropyLoss's .float() copy (4) and log_softmax (4), then chunk_loss.backward()
      // at once: the saved log-probs, nll and log-softmax gradients (12) while the loop's
      // `logits` still references the chunk (d). GradAccumulator keeps the hidden states'
      // gradient in fp32 (zeros_like(dtype=torch.float32): 4 N h), cast to their dtype before
      // the decoder's backward (d N h beside it).
      const double c = std::max(1.0, in.chunks);
      const double per_chunk = in.compiled ? nv * 2 * d / c : nv * (12 + d) / c;
      r.forward = per_chunk + 4 * n * in.hidden;
      r.backward = n * in.hidden * (4 + d);
      break;
    }
    case LossKind::FlashAttn:
      // flash-attn's CrossEntropyLoss (flash_attn/losses/cross_entropy.py; the xentropy CUDA
      // extension in 1.0.x, ops/triton/cross_entropy.py in 2.x): one kernel reads the 16-bit
      // logits as they are (no .float() copy), writes the per-row loss and logsumexp (fp32, 4 N)
      // and saves the logits themselves; backward writes their gradient into a new tensor of
      // their dtype (inplace_backward defaults to False, as llm-foundry constructs it). The
      // loop's reference to the logits (logits_held) is that same saved tensor.
      r.forward = nv * d + 4 * n;
      r.backward = nv * 2 * d + 4 * n;
      break;
    case LossKind::LinearFused: {
      // Liger-Kernel ops/fused_linear_cross_entropy.py: chunk = next_pow2(ceil(BT / ceil(V/H)))
      // rows; per chunk the logits are written in the input's dtype, the Triton kernel upcasts
      // in registers and writes the gradient over them; grad_input = zeros_like(input) and the
      // fp32 loss_1d live for the whole loss; backward only scales grad_input in place.
      const double inc = std::ceil(v / std::max(1.0, in.hidden));
      const double rows = std::min(n, next_pow2(std::ceil(n / std::max(1.0, inc))));
      r.forward = rows * v * d + n * in.hidden * d + 4 * n;
      r.backward = n * in.hidden * d;
      break;
    }
  }
  return r;
}

// ---- 2. op_selective ------------------------------------------------------------------------

OpSelectiveLayer op_selective_layer(const memest_model& m, const ActivationLayout& x,
                                    double residual_bytes, bool gqa_native) {
  // (named copies, not structured bindings: lambdas below capture them, which C++17 forbids
  // for bindings)
  const BlockDims d = block_dims(m, x);
  const double n = d.n, t = d.t, h = d.h, dh = d.dh, a = d.a, kv = d.kv, f = d.f;
  const bool sp = d.sp;

  // The block's matmuls in execution order (torchtitan models/llama3/model.py:
  // wq, wk, wv, sdpa, wo, w1, w3, w2), as elements per token of their output on this GPU.
  // Column-parallel outputs are sharded by t; row-parallel outputs are full-size partial sums
  // before the reduce-scatter. A linear with a bias runs as aten.addmm: always saved (it is in
  // get_default_op_list's compute_intensive_ops) and not counted by the every-second-mm rule.
  // `reused`: the eager block saves this very output too (V as SDPA's value, the gate/up or
  // fc1 outputs as the activation's operands; a fused QKV output stays alive through its V
  // view); Q and K are saved rotated, wo and w2 outputs not at all.
  struct Mm {
    double elems;
    bool bias;
    bool reused;
  };
  Mm mms[8];
  int count = 0;
  const bool qkv_bias = m.attention_qkv_bias != 0;
  if (m.fused_qkv) {
    mms[count++] = {(a + 2 * kv) * dh / t, qkv_bias, true};
  } else {
    mms[count++] = {a * dh / t, qkv_bias, false};
    mms[count++] = {kv * dh / t, qkv_bias, false};
    mms[count++] = {kv * dh / t, qkv_bias, gqa_native};
  }
  mms[count++] = {h, m.attention_out_bias != 0, false};
  const bool mlp_bias = m.mlp_bias != 0;
  if (m.gated_mlp) {
    mms[count++] = {f / t, mlp_bias, true};
    mms[count++] = {f / t, mlp_bias, true};
  } else {
    mms[count++] = {f / t, mlp_bias, true};
  }
  mms[count++] = {h, mlp_bias, false};

  // torchtitan/distributed/activation_checkpoint.py (SelectiveAC; torchtitan 2025:
  // _apply_ac_to_transformer_block with selective_ac_option "op"): MUST_SAVE for ops in the
  // save list except every second mm (the counter is per block forward).
  OpSelectiveLayer r;
  int mm_index = 0;
  double reused_mm = 0;
  for (int i = 0; i < count; ++i) {
    bool saved = mms[i].bias;
    if (!mms[i].bias) saved = ++mm_index % 2 == 1;
    if (!saved) continue;
    r.mm_outputs += 2 * n * mms[i].elems;
    if (mms[i].reused) reused_mm += 2 * n * mms[i].elems;
  }
  // torch/utils/checkpoint.py: the non-reentrant checkpoint keeps the block's inputs.
  r.block_input = residual_bytes * n * h / (sp ? t : 1.0);
  if (x.flash_attention) {
    // _scaled_dot_product_flash_attention returns (out, logsumexp, ...): all outputs cached.
    r.attention_out = 2 * n * a * dh / t;
    r.logsumexp = 4 * n * a / t;
  } else {
    // Math SDPA decomposes into bmm (saved: compute-intensive, not an mm) + softmax + bmm.
    r.attention_out = 2 * n * a * dh / t;
    r.scores = 2 * a * x.seq_len * x.seq_len * x.micro_batch / (t * x.cp);
  }
  // With SP, wo and w2 end in _c10d_functional.reduce_scatter_tensor (saved); without SP they
  // end in an all-reduce, which is not in the save list.
  if (sp) r.reduce_scatter = 2 * (2 * n * h / t);
  r.reused_by_recompute = r.block_input + reused_mm + r.attention_out + r.logsumexp + r.scores;
  return r;
}

double every_nth_checkpointed_bytes(int64_t layers, int64_t every, double checkpointed_layer,
                                    double plain_layer) {
  if (layers <= 0) return 0;
  const int64_t n = every <= 1 ? layers : layers / every;  // i % N == 0 for i in 1..layers
  return static_cast<double>(n) * checkpointed_layer +
         static_cast<double>(layers - n) * plain_layer;
}

// ---- 3. Recomputation working set -----------------------------------------------------------

RecomputeWorkingSet recompute_working_set(const memest_model& m, const ActivationLayout& x,
                                          double full_layer, double kept_layer,
                                          double residual_bytes, bool moe_block) {
  const BlockDims d = block_dims(m, x);
  const double n = d.n, t = d.t, h = d.h;
  const bool sp = d.sp;
  double f = d.f;
  if (moe_block && is_moe(m)) {
    // per token: k routed rows of the expert width; a shared expert's MLP runs on its own
    const double routed = static_cast<double>(m.num_experts_per_tok) *
                          static_cast<double>(expert_width(m));
    const double shared = static_cast<double>(m.num_shared_experts) *
                          static_cast<double>(shared_expert_width(m));
    f = std::max(routed, shared);
  }
  RecomputeWorkingSet r;
  r.rebuilt = std::max(0.0, full_layer - kept_layer);
  // The block's backward starts with the gradient of its output (residual dtype, sharded with
  // SP; the reduce-scatter's backward all-gathers a full copy for the MLP's last linear). Its
  // peak is the MLP's elementwise backward: after the down projection's backward has freed the
  // product (saved as its input), MulBackward holds the product's gradient and writes the two
  // gradients of its factors: +2 intermediate-size tensors over the saved set (gated); GELU's
  // backward writes one beside its input gradient: +1. The attention backward runs after the
  // MLP's saved tensors are freed and, for h_ffn >= a*d, stays below this.
  const double out_grad = residual_bytes * n * h / (sp ? t : 1.0) + (sp ? 2 * n * h : 0.0);
  // (an MoE block's expert path runs in fp32 under autocast: _grouped_mm casts to the weight)
  const double elem = moe_block && is_moe(m) && residual_bytes >= 4 ? 4.0 : 2.0;
  const double mlp_grads = (m.gated_mlp ? 2.0 : 1.0) * elem * n * f / t;
  r.gradients = out_grad + mlp_grads;
  return r;
}

RecomputeWorkingSet megatron_full_recompute_working_set(const memest_model& m,
                                                        const ActivationCoefficients& k,
                                                        memest_activation_model which,
                                                        const ActivationLayout& x) {
  // megatron/core/tensor_parallel/random.py CheckpointFunction.backward: the checkpointed
  // layer's forward runs again with grad enabled, then torch.autograd.backward through it, so
  // the layer holds its full activation set for one micro-batch while its backward runs.
  ActivationLayout none = x;
  none.recompute = MEMEST_RECOMPUTE_NONE;
  ActivationLayout full = x;
  full.recompute = MEMEST_RECOMPUTE_FULL;
  double full_layer = layer_activation_bytes(m, k, none);
  if (which == MEMEST_ACTIVATIONS_LLAMA && m.gated_mlp) {
    // overheads.cpp: a fused SwiGLU keeps 6 sbh_ffn, not Eq. 12's 8.
    full_layer -= 2 * x.seq_len * x.micro_batch * static_cast<double>(m.intermediate_size) /
                  (x.tp * x.cp);
  }
  return recompute_working_set(m, x, full_layer, layer_activation_bytes(m, k, full), 2);
}

// ---- 4. Eager PyTorch blocks ----------------------------------------------------------------

EagerBlockBytes eager_block_bytes(const memest_model& m, const ActivationLayout& x,
                                  const EagerBlockOptions& o) {
  // (named copies, not structured bindings: lambdas below capture them, which C++17 forbids
  // for bindings)
  const BlockDims d = block_dims(m, x);
  const double n = d.n, t = d.t, h = d.h, dh = d.dh, a = d.a, kv = d.kv, f = d.f;
  const bool sp = d.sp;
  const double r_bytes = o.autocast ? 4.0 : 2.0;  // residual stream: fp32 params under autocast
  const double seq_div = sp ? t : 1.0;            // the norms run on the sequence shard
  const bool fused_norm = o.compiled || o.liger || o.block == EagerBlock::Torchtitan;

  // What the linears after a norm save of its output: bf16 models save the one output tensor
  // (full sequence: with SP the DTensor all-gather's output is what the mm saves). Under
  // autocast each linear casts its input itself (the autocast cache holds only leaf tensors),
  // so every consuming linear saves its own bf16 copy; inductor CSEs the casts into one.
  // (latent attention: the query projection, wq or wq_a, and wkv_a)
  const double attn_consumers = is_mla(m) ? 2.0 : m.fused_qkv ? 1.0 : 3.0;
  const double mlp_linears = m.gated_mlp && !m.fused_gate_up ? 2.0 : 1.0;
  // An MoE layer's norm output feeds the router (a linear) and the experts' gather (an index:
  // saves no copy), plus the shared experts' input linears and Qwen2-MoE's shared gate.
  const double mlp_consumers =
      is_moe(m) && !o.dense_mlp
          ? 1.0 + (m.num_shared_experts > 0 ? mlp_linears : 0.0) + (m.shared_expert_gate ? 1.0 : 0.0)
          : mlp_linears;
  const unsigned tg = o.lora ? o.lora_targets : 0u;
  auto adapted = [&](unsigned bits) {
    double c = 0;
    for (unsigned b = 1; b <= kLoraDown; b <<= 1) {
      if ((bits & b) && (tg & b)) ++c;
    }
    return c;
  };
  const double attn_adapted = adapted(m.fused_qkv ? kLoraQ : (kLoraQ | kLoraK | kLoraV));
  const double mlp_adapted =
      adapted(m.gated_mlp && !m.fused_gate_up ? (kLoraGate | kLoraUp) : kLoraUp);
  // What `count` adapters reading a tensor of `width` elements per token save of it: the tensor
  // itself, once, when nothing changes it (bf16 adapters, no dropout); else each adapter its
  // own input: fp32 adapters get x.to(fp32) (peft _cast_input_dtype), dropout writes a new
  // tensor and keeps a bool mask (1 B); under autocast lora_A saves its own bf16 cast.
  // QLoRA under bitsandbytes (frozen_linears_save_input): a frozen 4-bit linear keeps its input
  // too, unless the adapters already hold that very tensor (bf16, no dropout, no autocast).
  // (`rows` tokens read the tensor: n, or an MoE block's n * k routed rows)
  auto lora_input_rows = [&](double rows, double count, double width) {
    const bool shared_held = count > 0 && !o.lora_dropout && !o.autocast && o.adapter_bytes == 2;
    const double frozen = (o.frozen_linears_save_input && !shared_held) ? 2 * rows * width : 0.0;
    if (count == 0) return frozen;
    const double mask = o.lora_dropout ? 1.0 : 0.0;
    if (o.autocast) return count * (2 + mask) * rows * width + frozen;
    if (o.lora_dropout || o.adapter_bytes != 2) {
      return count * (o.adapter_bytes + mask) * rows * width + frozen;
    }
    return 2 * rows * width;
  };
  auto lora_inputs = [&](double count, double width) { return lora_input_rows(n, count, width); };
  // An RMSNorm's own saved tensors for `rows` rows of `width` elements per token (a per-head
  // norm has a rows of d); the input is `in_bytes` wide.
  auto norm_own = [&](double width, double rows, double in_bytes) {
    if (fused_norm) {
      // Fused kernel (_fused_rms_norm in derivatives.yaml: saves input and rstd), or inductor:
      // the fp32 upcast and the normalised tensor are pointwise and read only by pointwise ops
      // in backward, so they are recomputed from the saved input; the mean of squares is a
      // reduction (saved, per row); the output is read by the weight-gradient mms (saved).
      return in_bytes * n * width + 4 * n * rows;
    }
    // HF LlamaRMSNorm (modeling_llama.py): x.to(float32) is saved by pow and by the rsqrt
    // product (4 B; a no-op on an fp32 input, which is then the tensor saved); weight * normed
    // saves normed in the input's dtype (not when the scale is frozen: guard_for below); rsqrt
    // saves its per-row result.
    const double normed = o.lora ? 0.0 : in_bytes;
    return (4 + normed) * n * width + 4 * n * rows;
  };
  auto norm_bytes = [&](double consumers, double adapted_consumers) {
    const double casts = (o.autocast && !o.compiled) ? consumers : 1.0;
    const double linear_inputs =
        o.lora ? lora_inputs(adapted_consumers, h) : casts * 2 * n * h;
    return norm_own(h, 1, r_bytes) / seq_div + linear_inputs;
  };
  // What reads an MoE block's norm output directly: the router and the shared experts' input
  // linears (the routed experts read their gathered rows).
  const bool moe_block = is_moe(m) && !o.dense_mlp;
  const double router_adapted = moe_block && (tg & kLoraRouter) ? 1.0 : 0.0;
  const double mlp_norm_adapted =
      moe_block ? router_adapted + (m.num_shared_experts > 0 ? mlp_adapted : 0.0) : mlp_adapted;
  EagerBlockBytes r;
  r.norms = norm_bytes(attn_consumers, attn_adapted) + norm_bytes(mlp_consumers, mlp_norm_adapted);

  // Attention (SDPA flash/efficient: saves query, key, value, output, logsumexp). Rotary's
  // multiplications by cos/sin save only cos/sin (shared, no grad); the rotated Q and K are
  // what SDPA saves (under autocast its bf16 casts). K and V have k heads with enable_gqa, a
  // heads after repeat_kv.
  const double kv_heads = o.gqa_native ? kv : a;
  r.attention = 2 * n * a * dh / t              // rotated Q
                + 2 * (2 * n * kv_heads * dh / t)  // K, V
                + 2 * n * a * dh / t              // output (also o_proj's saved input)
                + 4 * n * a / t;                  // logsumexp, fp32
  if (is_mla(m)) {
    // Multi-head latent attention as torchtitan (torchtitan/models/deepseek_v3/model.py
    // Attention) and transformers (modeling_deepseek_v3.py) run it: SDPA saves Q and K at the
    // query-key head dim dn + dr (each the cat of the no-rope part and the rotated part, k_pe
    // broadcast over the heads), V as a view of wkv_b's output, which keeps that whole
    // a(dn + dv) tensor, the output at dv and the logsumexp. The compressed kv (kv_lora_rank,
    // on every tensor-parallel rank) keeps kv_norm's own saved tensors and its output (wkv_b's
    // saved input); with q_lora_rank > 0 the compressed q likewise (q_norm, wq_b).
    const double dn = static_cast<double>(m.qk_nope_head_dim);
    const double dr = static_cast<double>(m.qk_rope_head_dim);
    const double dv = static_cast<double>(m.v_head_dim);
    const double kvr = static_cast<double>(m.kv_lora_rank);
    const double qr = static_cast<double>(m.q_lora_rank);
    r.attention = 2 * n * a * (dn + dr) / t       // Q
                  + 2 * n * a * (dn + dr) / t     // K
                  + 2 * n * a * (dn + dv) / t     // wkv_b's output, V's storage
                  + 2 * n * a * dv / t            // output (wo's saved input)
                  + 4 * n * a / t                 // logsumexp, fp32
                  + norm_own(kvr, 1, 2.0) + 2 * n * kvr;
    if (qr > 0) r.attention += norm_own(qr, 1, 2.0) + 2 * n * qr;
  }
  if (!x.flash_attention) {
    r.attention += 2 * a * x.seq_len * x.seq_len * x.micro_batch / (t * x.cp);  // softmax out
    r.attention -= 4 * n * a / t;
  }
  // QK-norms (Qwen3 q_norm/k_norm per head, OLMo 2 full width) on the q/k projections' bf16
  // outputs, before rotary; their outputs feed rotary, which saves nothing.
  if (m.qk_norm != 0) {
    const bool per_head = m.qk_norm == 1;
    r.attention += norm_own(a * dh / t, per_head ? a / t : 1.0, 2.0) +
                   norm_own(kv * dh / t, per_head ? kv / t : 1.0, 2.0);
  }

  // MLP: gated eager saves gate (SiLU input), SiLU output and up (Mul's operands), the product
  // (down_proj's input): 4 tensors of h_ffn. Compiled (torch/_functorch/partitioners.py with
  // torch/_functorch/config.py's defaults): mm outputs are never recomputed (gate, up saved);
  // a tensor a non-fusible op (the weight-gradient mm) reads in backward is never recomputed
  // (ban_recompute_materialized_backward: the product is saved); the SiLU output, read only by
  // pointwise ops, is recomputed: 3 tensors, Megatron's fused-SwiGLU count. GELU MLP: fc1
  // output and GELU output (fc2's saved input) both ways.
  // Liger's gated MLP (LigerSiLUMulFunction, LigerGELUMulFunction: ctx.save_for_backward(a, b))
  // keeps the same three: gate and up saved by the kernel, the product by down_proj.
  const double act_tensors = m.gated_mlp ? (o.compiled || o.liger ? 3.0 : 4.0) : 2.0;
  if (is_moe(m) && !o.dense_mlp) {
    // Hugging Face's sparse MoE block as transformers 5.x runs it by default
    // (modeling_utils.py get_correct_experts_implementation: "grouped_mm" unless the GPU or
    // PyTorch cannot dispatch it; integrations/moe.py grouped_mm_experts_forward). Per
    // token, the router (models/qwen3_moe, mixtral: *TopKRouter): softmax's fp32
    // result (E values, saved by softmax) and topk's int64 indices (k, saved by topk). Per
    // routed slot (n*k rows): the gather's int64 token index, the sort permutation (saved by
    // the two [perm] gathers) and its inverse (saved by the [inv_perm] gather), 8 B each; the
    // sorted copy of the input (h, saved by the first grouped_mm), the gate_up output (2fe:
    // SiLU saves the gate half, Mul the up half, one tensor), the SiLU output and the product
    // (fe each: Mul's and the second grouped_mm's saved operands), the down output (h, saved
    // with the routing weight, 2 B, by their product). _grouped_mm casts its input to the
    // weight's dtype (fp32 parameters under autocast: the expert path runs in fp32).
    // With tp > 1 (fsdp; etp = tp) the experts' width is split as a dense MLP's (column-parallel
    // gate_up, row-parallel down) over the full routed rows; this layout is not validated.
    const double e = static_cast<double>(m.num_experts);
    const double k = static_cast<double>(m.num_experts_per_tok);
    const double fe = static_cast<double>(expert_width(m)) / t;
    const double eb = o.autocast ? 4.0 : 2.0;
    const double e_act = m.gated_mlp ? 4.0 : 2.0;  // GELU experts: fc1 output, GELU output
    r.mlp = n * (4 * e + 8 * k) + n * k * (3 * 8 + 2 + eb * (2 * h + e_act * fe));
    const double fs = static_cast<double>(shared_expert_width(m)) *
                      static_cast<double>(m.num_shared_experts);
    if (m.num_shared_experts > 0) {
      r.mlp += e_act * 2 * n * fs / t;
      // sigmoid(gate(x)) * shared_out saves the bf16 sigmoid result and the shared output.
      if (m.shared_expert_gate) r.mlp += n * (2 + 2 * h);
    }
    if (o.lora) {
      // Frozen experts (peft's LoRA on each expert's linears, as for a dense MLP above): the
      // first grouped GEMM keeps the routed rows and the second the product only for an
      // adapter on them; gate/up adapters read the routed rows (h), down adapters the product
      // (fe), each keeping its r-wide lora_A output, over the n * k routed rows. The shared
      // experts are dense MLPs of width fs; a router adapter keeps its r-wide output (its
      // input, the norm output, is counted with the norms).
      const double ab = o.autocast ? 2.0 : o.adapter_bytes;
      const double rows = n * k;
      const double down_adapted = adapted(kLoraDown);
      r.mlp -= rows * eb * (h + fe);
      r.mlp += lora_input_rows(rows, mlp_adapted, h) + lora_input_rows(rows, down_adapted, fe);
      r.mlp += (mlp_adapted + down_adapted) * ab * rows * o.lora_rank;
      if (m.num_shared_experts > 0) {
        r.mlp -= 2 * n * fs / t;
        r.mlp += lora_inputs(down_adapted, fs / t);
        r.mlp += static_cast<double>(m.num_shared_experts) * (mlp_adapted + down_adapted) * ab *
                 n * o.lora_rank;
      }
      r.mlp += router_adapted * ab * n * o.lora_rank;
    }
  } else {
    r.mlp = act_tensors * 2 * n * f / t;
  }
  if (o.lora) {
    // The down projection's input (the product / the GELU output) is saved only for an
    // adapter on it; the attention output stays saved by SDPA, an adapted o_proj saves its own
    // input copy when its input changes (fp32 adapters, dropout). Every adapter keeps its
    // r-wide lora_A output for lora_B.
    const double ab = o.autocast ? 2.0 : o.adapter_bytes;
    if (!(is_moe(m) && !o.dense_mlp)) {
      r.mlp -= 2 * n * f / t;
      r.mlp += lora_inputs(adapted(kLoraDown), f / t);
      r.mlp += (mlp_adapted + adapted(kLoraDown)) * ab * n * o.lora_rank;
    }
    const double o_adapted = adapted(kLoraO);
    if (o_adapted > 0 && (o.lora_dropout || o.autocast || o.adapter_bytes != 2)) {
      r.attention += lora_inputs(o_adapted, a * dh / t);
    }
    r.attention += (attn_adapted + o_adapted) * ab * n * o.lora_rank;
  }
  return r;
}

double eager_head_bytes(const memest_model& m, const ActivationLayout& x,
                        const EagerBlockOptions& o) {
  const BlockDims d = block_dims(m, x);
  const double n = d.n, t = d.t, h = d.h;
  const bool sp = d.sp;
  const double in_bytes = o.autocast ? 4.0 : 2.0;
  const bool fused_norm = o.compiled || o.liger || o.block == EagerBlock::Torchtitan;
  double norm;
  if (fused_norm) {
    norm = in_bytes * n * h + 4 * n;
  } else {
    norm = (4 + (o.lora ? 0.0 : in_bytes)) * n * h + 4 * n;
  }
  norm /= sp ? t : 1.0;
  // The LM head saves the norm output (its own bf16 cast under autocast) when it is trained.
  const double head_input = o.lora ? 0.0 : 2 * n * h;
  const double ids = o.lora ? 0.0 : 8 * n;
  return norm + head_input + ids;
}

double eager_first_block_delta(const memest_model& m, const ActivationLayout& x,
                               const EagerBlockOptions& o) {
  if (!o.lora) return 0.0;
  const double n = tokens_per_gpu(x);
  const bool sp = x.sequence_parallel && x.tp > 1;
  const double h = static_cast<double>(m.hidden_size);
  const double in_bytes = o.autocast ? 4.0 : 2.0;
  const bool fused_norm = o.compiled || o.liger || o.block == EagerBlock::Torchtitan;
  // The norm's own saved tensors as eager_block_bytes counts them for a frozen scale.
  double norm = fused_norm ? in_bytes * n * h + 4 * n : 4 * n * h + 4 * n;
  norm /= sp ? x.tp : 1.0;
  double masks = 0;
  if (o.lora_dropout) {
    const unsigned qkv = m.fused_qkv ? kLoraQ : (kLoraQ | kLoraK | kLoraV);
    for (unsigned b = 1; b <= kLoraDown; b <<= 1) {
      if ((qkv & b) && (o.lora_targets & b)) masks += n * h;  // bool mask, 1 B per element
    }
  }
  return -(norm + masks);
}

double hf_cache_copies_bytes(const memest_model& m, const ActivationLayout& x,
                             double checkpointed_layers, bool autocast) {
  const double n = tokens_per_gpu(x);
  const double kvd = static_cast<double>(m.num_key_value_heads) *
                     static_cast<double>(head_dim(m)) / x.tp;
  return checkpointed_layers * n * kvd * 2 * (autocast ? 4.0 : 2.0);
}

double autocast_weight_copies_bytes(double linear_params) { return 2 * linear_params; }

// ---- 5. fp8 -----------------------------------------------------------------------------------

double quantised_element_bytes(Fp8Impl impl) {
  return impl == Fp8Impl::TransformerEngineNvfp4 ? 0.5 + 1.0 / 16 : 1.0;
}

double fp8_weight_copies_bytes(Fp8Impl impl, double linear_params) {
  if (impl == Fp8Impl::Torchao) return 0.0;
  return 2 * quantised_element_bytes(impl) * linear_params;  // row-wise + column-wise
}

double fp8_activation_delta(Fp8Impl impl, const memest_model& m, const ActivationLayout& x) {
  if (impl == Fp8Impl::Torchao) return 0.0;
  const double n = tokens_per_gpu(x);
  const double t = x.tp;
  const bool sp = x.sequence_parallel && t > 1;
  const double h = static_cast<double>(m.hidden_size);
  const double dh = static_cast<double>(head_dim(m));
  const double a = static_cast<double>(m.num_attention_heads);
  const double f = static_cast<double>(m.intermediate_size);
  // Transformer Engine module/layernorm_linear.py, layernorm_mlp.py, linear.py: the saved
  // linear input is an fp8 tensor kept for the wgrad GEMM with its column-wise (transposed)
  // data only, 1 byte per element, except a norm output that must be all-gathered again under
  // SP, which keeps its row-wise data too (2 bytes: no change).
  // q: bytes per element of one quantised copy (1, or NVFP4's 0.5625).
  const double q = quantised_element_bytes(impl);
  double delta = 0;
  if (!sp) {
    delta += 2 * n * h * (q - 2);   // two norm outputs, 2 -> q bytes
  } else {
    delta += 2 * n * h / t * (2 * q - 2);  // both copies of the local norm outputs (fp8: 0)
  }
  delta += n * f / t * (q - 2);     // fc2 input (SwiGLU/GELU output), 2 -> q bytes
  delta += n * a * dh / t * q;      // proj input: a quantised copy beside core attention's output
  return delta;
}

}  // namespace memest
