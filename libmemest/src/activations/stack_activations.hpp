// Activation-side mechanisms of the training stacks other than Megatron-LM (FSDP2 with
// torchtitan/torchtune, DeepSpeed, plain PyTorch / Hugging Face), as pure functions of the
// model, the activation layout and plain numbers. The stage loop (pretrain/) decides where each
// term is added; nothing here changes the Megatron numbers of activations.hpp.
//
// Conventions, for every function below:
//   * bytes on ONE GPU;
//   * "per micro-batch" means for the s*b/cp tokens of one micro-batch (ActivationLayout's
//     seq_len * micro_batch / cp); a stage multiplies by the micro-batches it has in flight;
//   * activations are bf16 (2 bytes) unless a parameter says otherwise.
// Each function cites the framework source file whose mechanism it models; docs/
// stack-activations.md derives every term and compares them with measured runs.
#pragma once

#include <cstdint>

#include "activations/activations.hpp"
#include "memest/memest.h"

namespace memest {

// ---------------------------------------------------------------------------------------------
// 1. Loss memory (last pipeline stage)
// ---------------------------------------------------------------------------------------------

enum class LossKind {
  Fused,        // Megatron's vocab-parallel cross-entropy (megatron/core/tensor_parallel/cross_entropy.py)
  Unfused,      // F.cross_entropy(logits.float(), labels) (HF loss_utils.py, torchtitan components/loss.py)
  Chunked,      // torchtune CEWithChunkedOutputLoss (modules/loss/ce_chunked_output_loss.py)
  LinearFused,  // Liger-Kernel fused linear + cross-entropy (ops/fused_linear_cross_entropy.py)
  Unfused16Bit, // F.cross_entropy on the model's 16-bit logits, no .float() and no autocast
                // (HF modeling_gpt2.py before 4.46; fp16 DeepSpeed / ColossalAI Gemini models)
  ChunkedLmHead, // LitGPT: GPT.forward(lm_head_chunk_size=128) returns the logits as a list of
                 // sequence chunks, which Lightning Fabric's convert_output casts to fp32;
                 // utils.py chunked_cross_entropy runs F.cross_entropy per chunk
  ChunkedLinear, // torchtitan ChunkedLossWrapper (components/loss.py): LM head + loss + that
                 // chunk's backward, one chunk at a time
  FlashAttn,     // flash-attn's CrossEntropyLoss (flash_attn/losses/cross_entropy.py): one
                 // kernel on the 16-bit logits (llm-foundry's loss_fn fused_crossentropy)
};

struct LossInputs {
  double tokens = 0;          // tokens whose logits this GPU computes, per micro-batch: s*b/cp
  double vocab = 0;           // vocabulary columns on this GPU: v/tp (v when the loss is not
                              // vocab-parallel)
  double hidden = 0;          // h, the width of the output layer's input (LinearFused)
  double logit_bytes = 2;     // bytes per logit the output layer writes (2: bf16, 4: fp32)
  double chunks = 8;          // Chunked, ChunkedLmHead, ChunkedLinear: the chunks (plan/stack.hpp
                              // loss_chunks_in_effect)
  bool logits_held = false;   // the training loop still references the logits during the
                              // backward (a plain `out = model(...); out.loss.backward()`);
                              // torchtitan (`del pred`), torchtune (`del logits`), Megatron and
                              // the HF Trainer drop them before backward
  bool held_fp32 = false;     // the logits held are the model's own fp32 upcast (HF models
                              // with `logits = logits.float()`, memest_model.logits_fp32): 4
                              // bytes per logit held instead of logit_bytes
  bool compiled = false;      // Unfused / Chunked: the loss function is torch.compile'd
                              // (torchtitan compile.components "loss", torchtune compile_loss)
  bool shift_copy = false;    // the loss shifts the logits (`logits[..., :-1, :].contiguous()`)
                              // instead of padding the labels: one more copy in the forward.
                              // Unfused: HF ForCausalLMLoss of 4.46-4.48 shifted its fp32 copy
                              // (4 bytes; 4.49 pads the labels, torchtitan never shifts: not
                              // set). Unfused16Bit: the pre-4.46 models' own shift of their
                              // 16-bit logits (d bytes; the plan always sets it for this kind)
};

struct LossMemory {
  double forward = 0;   // bytes alive at the loss's forward peak
  double backward = 0;  // bytes alive at the loss's backward peak
  double peak() const { return forward > backward ? forward : backward; }
};

// Bytes per GPU per micro-batch on the LAST stage that the logits and the loss hold at their
// forward and backward peaks, logits included (both peaks coincide with every activation of the
// stage alive: the end of the forward and the start of the backward). The output layer's input
// and the final norm (Eq. 14's 4sbh) are not included. With N = tokens, V = vocab, d =
// logit_bytes, c = 4 when d < 4 (the fp32 copy .float() makes) else 0, C = chunks:
//   Fused        forward N*V*(d + c), backward N*V*(4 + (d < 4 ? d : 0)): peak 6 bytes per bf16
//                logit, today's Megatron numbers (Eq. 14's 4sbv/t + the overhead model's 2sbv/(tc))
//   Unfused      forward N*V*(d + c + 4), backward N*V*12 (+ d when logits_held): 10 and 12
//                bytes per bf16 logit; shift_copy adds 4 to the forward (14)
//   Unfused16Bit forward N*V*(2d + (shift_copy ? d : 0)), backward N*V*3d (+ d when
//                logits_held): 6 and 6 bytes per fp16 logit with the shift
//   Chunked      forward N*V*(d + 4 + c/C), backward N*V*(4 + 8/C) (+ d when logits_held)
//   ChunkedLmHead forward N*V*max(d + 4, 8), backward N*V*(8 + 8/C): Fabric's fp32 copy of
//                every chunk (referenced by the loop through backward), the fp32 log-probs, one
//                chunk's two fp32 gradients
//   ChunkedLinear forward N*V*(12 + d)/C + 4*N*h, backward N*h*(4 + d): one chunk's logits,
//                fp32 copy, log-probs and gradients at a time, beside the fp32 GradAccumulator
//                of the hidden states (and its cast back to their dtype); compiled: the
//                chunk's term is N*V*2d/C
//   FlashAttn    forward N*V*d + 4N, backward N*V*2d + 4N (+ d when logits_held is not
//                already the saved logits: never): 2 and 4 bytes per bf16 logit
//   compiled     Unfused, Unfused16Bit: forward N*V*d, backward N*V*2d (the saved input and
//                its gradient);
//                Chunked: forward N*V*d, backward N*V*d*(1 + 1/C)
//   LinearFused  forward r*V*d + N*h*d + 4N with r = min(N, next_pow2(ceil(N / ceil(V/h)))),
//                backward N*h*d
LossMemory loss_memory(LossKind kind, const LossInputs& in);

// ---------------------------------------------------------------------------------------------
// 2. torchtitan's per-op selective activation checkpointing (op_selective)
// ---------------------------------------------------------------------------------------------

// What one checkpointed block keeps, bytes per GPU per micro-batch, for a dense block with
// standard attention (MoE routers/experts are not modelled here). Parts:
struct OpSelectiveLayer {
  double block_input = 0;     // the checkpoint's input (residual stream), /t with SP
  double mm_outputs = 0;      // outputs of the 1st, 3rd, 5th ... mm of the block, plus every
                              // addmm (linears with a bias); row-parallel outputs are full-size
  double attention_out = 0;   // SDPA output (flash / efficient / cuDNN)
  double logsumexp = 0;       // SDPA's fp32 logsumexp
  double scores = 0;          // without FlashAttention: the saved bmm output Q K^T
  double reduce_scatter = 0;  // TP with SP: reduce-scatter outputs of wo and w2
  double total() const {
    return block_input + mm_outputs + attention_out + logsumexp + scores + reduce_scatter;
  }
  // Not part of total(): the bytes of this saved set that the block's recomputation in
  // backward reuses as its own saved tensors (block input, V, gate/up or fc1 outputs, SDPA
  // output and logsumexp), to pass as recompute_working_set's kept_layer.
  double reused_by_recompute = 0;
};
// residual_bytes: bytes per element of the residual stream (2 under FSDP2's bf16 param_dtype;
// 4 with fp32 parameters under autocast). gqa_native: SDPA reads V as wv wrote it (enable_gqa)
// rather than a repeat_kv copy (only reused_by_recompute depends on it).
OpSelectiveLayer op_selective_layer(const memest_model& m, const ActivationLayout& x,
                                    double residual_bytes = 2, bool gqa_native = true);

// torchtitan's layer-level policy (selective_ac_option = "N", torchtitan 2025; `recompute_every`
// N): the i-th wrapped block (1-based, counted over the blocks this process wraps) is fully
// checkpointed when i % N == 0, the others keep everything. Returns the stage's activation bytes
// for `layers` blocks, given the bytes of one fully checkpointed block (`checkpointed_layer`) and
// of one block without checkpointing (`plain_layer`), both per micro-batch. every <= 1
// checkpoints every block.
double every_nth_checkpointed_bytes(int64_t layers, int64_t every, double checkpointed_layer,
                                    double plain_layer);

// ---------------------------------------------------------------------------------------------
// 3. Recomputation working set (any framework)
// ---------------------------------------------------------------------------------------------

struct RecomputeWorkingSet {
  double rebuilt = 0;    // the block being recomputed: its activations beyond what the policy
                         // kept (present only under full / op_selective recomputation)
  double gradients = 0;  // backward temporaries of the block's backward (present under EVERY
                         // policy, recomputation or not): the block-output gradient and the
                         // MLP's intermediate gradients at the MLP backward's peak
  double total() const { return rebuilt + gradients; }
};
// One-off addition per stage (any stage), bytes per GPU, once (one micro-batch: the one whose
// backward runs), at the stage's backward peak. full_layer: one layer's activations without
// checkpointing (layer_activation_bytes, or eager_block_bytes(...).total()); kept_layer: what
// the checkpointed layer keeps and the recomputation reuses (full: its input;
// op_selective: OpSelectiveLayer::reused_by_recompute). residual_bytes as above.
// moe_block: the block is an MoE model's sparse block (eager_block_bytes' Hugging Face
// grouped path), whose elementwise MLP backward runs over its n*k routed rows of
// moe_intermediate_size (or a shared expert's width, whichever is wider).
RecomputeWorkingSet recompute_working_set(const memest_model& m, const ActivationLayout& x,
                                          double full_layer, double kept_layer,
                                          double residual_bytes = 2, bool moe_block = false);
// The same with Megatron's numbers: full_layer = layer_activation_bytes(recompute none) less
// the fused-SwiGLU correction of overheads.cpp (Llama model), kept_layer = the 2sbh input.
RecomputeWorkingSet megatron_full_recompute_working_set(const memest_model& m,
                                                        const ActivationCoefficients& k,
                                                        memest_activation_model which,
                                                        const ActivationLayout& x);

// ---------------------------------------------------------------------------------------------
// 4. Eager PyTorch blocks (Hugging Face LlamaDecoderLayer, torchtitan's TransformerBlock)
// ---------------------------------------------------------------------------------------------

enum class EagerBlock {
  HuggingFace,  // modeling_llama.py: LlamaRMSNorm upcasts to fp32 in Python
  Torchtitan,   // torchtitan models/llama3: nn.RMSNorm (the fused _fused_rms_norm kernel)
};

struct EagerBlockOptions {
  EagerBlock block = EagerBlock::HuggingFace;
  bool autocast = false;    // fp32 parameters under torch.autocast(bf16): fp32 residual stream
                            // and one bf16 cast of a norm output per consuming linear
  bool gqa_native = true;   // SDPA enable_gqa (HF with no mask and torch >= 2.5; torchtitan
                            // 2026); false: repeat_kv copies K and V to all heads
  bool compiled = false;    // torch.compile (inductor's min-cut partitioner) on each block
  // Liger-Kernel (liger_kernel/transformers/monkey_patch.py apply_liger_kernel_to_*, its
  // defaults): LigerRMSNorm (ops/rms_norm.py: saves X, W and the fp32 RSTD, not the upcast
  // or the normalised tensor) and LigerSwiGLUMLP / LigerGEGLUMLP (ops/swiglu.py, geglu.py:
  // save the gate and up outputs, recompute the activation in backward). The dense MLP and
  // every norm; an MoE block's experts are counted as Hugging Face's grouped path.
  bool liger = false;
  // LoRA (peft tuners/lora/layer.py Linear.forward; torchtune modules/peft/lora.py): frozen
  // base weights and norm scales, adapters on the linears in lora_targets (LoraTarget bits).
  bool lora = false;
  unsigned lora_targets = 0;
  double lora_rank = 0;
  bool lora_dropout = false;  // lora_dropout > 0 (nn.Dropout; peft and torchtune use
                              // nn.Identity for 0)
  double adapter_bytes = 2;   // bytes per adapter weight: peft casts adapters to fp32 by default
                              // (autocast_adapter_dtype=True) and then casts each adapter's
                              // input to fp32 (_cast_input_dtype): 4
  bool dense_mlp = false;     // an MoE model's dense layer (moe_first_dense_layers, ...)
  // QLoRA under bitsandbytes (autograd/_functions.py MatMul4Bit.forward: `ctx.tensors = (A, B)`
  // whenever A or B needs a gradient): every frozen 4-bit linear keeps its input A for
  // grad_A although its weight is frozen. A norm output shared with the adapters' lora_A (no
  // dropout) is the same tensor; with dropout, or on a linear without an adapter, it is one more
  // reference that keeps the bf16 tensor alive. torchao's NF4 (torchtune: LinearNF4 saves only
  // the weight) does not, so it is left false there.
  bool frozen_linears_save_input = false;
};

enum LoraTarget : unsigned {
  kLoraQ = 1u << 0,
  kLoraK = 1u << 1,
  kLoraV = 1u << 2,
  kLoraO = 1u << 3,
  kLoraGate = 1u << 4,
  kLoraUp = 1u << 5,
  kLoraDown = 1u << 6,
  kLoraAll = 0x7fu,
  kLoraRouter = 1u << 9,  // an MoE layer's router (MEMEST_LORA_ROUTER)
};

struct EagerBlockBytes {
  double norms = 0;      // both RMSNorms with what the linears after them save
  double attention = 0;  // Q, K, V as SDPA saves them, the output, the logsumexp; QK-norms
  double mlp = 0;        // gate/up outputs, activation output, product (or fc1/act for GELU);
                         // for an MoE layer the router and the routed (and shared) experts
  double total() const { return norms + attention + mlp; }
};
// Bytes one block saves for backward without checkpointing, per GPU per micro-batch.
// With lora, only what the trainable adapters and the gradient flow need is saved: autograd
// saves a matmul's input only when its weight requires grad (tools/autograd/
// gen_variable_type.py guard_for: an input used by one derivative formula only is saved under
// should_compute_output of that edge; mm's self feeds only mat2's), so a frozen linear saves
// nothing and a frozen norm scale does not save the normalised tensor; each adapted linear
// saves its lora_A input (shared with the base input, or with dropout its own dropout output
// 2 bytes + bool mask 1 byte per element) and its r-wide lora_A output (2r). lora_targets of
// a fused QKV model: kLoraQ stands for the fused projection; of a GELU MLP: kLoraUp is fc1,
// kLoraDown fc2. An MoE block's experts are frozen like any linear: the grouped GEMMs keep
// their inputs (the routed rows, the product) only for an adapter on them; gate/up/down
// adapters sit on every routed and shared expert, kLoraRouter on the router. Not modelled
// with compiled.
// Tensor parallelism as torchtitan applies it (colwise/rowwise DTensor linears; with SP the
// linears save their all-gathered input at full sequence length).
EagerBlockBytes eager_block_bytes(const memest_model& m, const ActivationLayout& x,
                                  const EagerBlockOptions& o);

// The last stage's eager head without the loss, bytes per GPU per micro-batch: the final
// RMSNorm (as the block's norms) with its output saved by a trainable LM head, and the int64
// token ids a trainable embedding saves (EmbeddingBackward keeps its indices, 8 B per token).
// With lora both are frozen: the norm keeps only its upcast and rsqrt.
double eager_head_bytes(const memest_model& m, const ActivationLayout& x,
                        const EagerBlockOptions& o);

// Change of the FIRST block's saved bytes (first stage) when the embedding is frozen (lora):
// its input does not require grad, so the attention norm (frozen scale, input without grad)
// saves nothing, and dropout on the adapters' inputs keeps no mask (no NativeDropoutBackward
// is recorded for an input without grad). Negative or 0; per GPU per micro-batch.
double eager_first_block_delta(const memest_model& m, const ActivationLayout& x,
                               const EagerBlockOptions& o);

// Hugging Face's DynamicCache when checkpointing wraps the decoder layers from outside
// (torch.distributed's checkpoint_wrapper, not model.gradient_checkpointing_enable(), which
// turns use_cache off): use_cache follows config.use_cache (true), each attention layer's
// cache update concatenates K and V onto an empty tensor (a copy), and the checkpoint keeps
// the cache object alive through the layer's kwargs until that layer's backward. Without
// checkpointing the cache dies with the model's output before backward. Bytes per GPU per
// micro-batch for `checkpointed_layers` layers: K and V, k*d each per token, bf16; under
// autocast both fp32 (rotary follows the fp32 cos/sin, and the cache's empty tensors take K's
// dtype, so torch.cat promotes the bf16 V too).
double hf_cache_copies_bytes(const memest_model& m, const ActivationLayout& x,
                             double checkpointed_layers, bool autocast);

// Bytes of the bf16 copies autocast makes of linear weights (fp32 parameters): autocast's cache
// holds every cast weight until the autocast region exits (after the loss's forward); after
// that a copy lives on only where a saved tensor holds it, i.e. the mm saved its bf16 weight
// for backward: the layers that are not checkpointed and the LM head (a checkpointed layer's
// forward saves nothing). Per GPU per stage, not per micro-batch. `linear_params`: parameters
// of those linear layers on this GPU (q/k/v/o, MLP, the LM head; never the embedding, which
// autocast does not cast).
double autocast_weight_copies_bytes(double linear_params);

// ---------------------------------------------------------------------------------------------
// 5. fp8 linears
// ---------------------------------------------------------------------------------------------

enum class Fp8Impl {
  Torchao,            // torchao float8/float8_linear.py (tensorwise, dynamic scaling)
  TransformerEngine,  // Transformer Engine's Linear / LayerNormLinear / LayerNormMLP
  TransformerEngineNvfp4,  // the same modules under TE's NVFP4BlockScaling recipe
};
// Bytes per element of one quantised copy (row-wise or column-wise) of a tensor: fp8 1;
// NVFP4 (TE docs/features/low_precision_training/nvfp4: E2M1 values with one FP8 E4M3 scale
// per 16 consecutive elements, plus one fp32 scale per tensor) 0.5 + 1/16 = 0.5625.
double quantised_element_bytes(Fp8Impl impl);
// Persistent fp8 weight copies, bytes per GPU for `linear_params` parameters of fp8 linears on
// the stage (per stage, not per micro-batch).
// torchao: 0 (casts are made per matmul and freed; FSDP2's fp8 all-gather changes the
// unsharded parameters, a state-side term). Transformer Engine: 2 bytes per parameter (the fp8
// weight and its fp8 transpose, cached across the micro-batches of a step); under NVFP4 the
// row-wise and the (transposed) column-wise copies, 2 x 0.5625 = 1.125 bytes per parameter.
double fp8_weight_copies_bytes(Fp8Impl impl, double linear_params);
// Change of one block's saved activations, bytes per GPU per micro-batch (negative: less).
// torchao (eager): 0, Float8Linear saves its high-precision input and weight and re-casts in
// backward. Transformer Engine: the linears' inputs that only a linear keeps are saved in fp8
// (the two norm outputs without SP and the SwiGLU/GELU output: -1 byte per element) and the
// projection keeps an fp8 copy of the attention output beside the bf16 one core attention
// keeps (+1). Under NVFP4 the same tensors at 0.5625 bytes per element (the wgrad operand's
// column-wise copy), and a norm output re-gathered under SP keeps both copies (2 x 0.5625
// against bf16's 2). Add per layer to Megatron's layer_activation_bytes (any stage). Read from
// the code, not yet checked against a measurement.
double fp8_activation_delta(Fp8Impl impl, const memest_model& m, const ActivationLayout& x);

}  // namespace memest
