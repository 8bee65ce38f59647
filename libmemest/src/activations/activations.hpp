// Activation memory of one micro-batch on one GPU, by family.
//
// Both families use one shape of formula; only the coefficients differ. Per transformer
// layer, in units of s*b*h bytes (16-bit activations) before any parallelism:
//   replicated  parts tensor parallelism cannot split, only sequence parallelism can
//               (norm inputs, attention/MLP inputs, dropout masks)
//   sharded     parts tensor parallelism splits by t
//   scores      coefficient of a*s^2*b: attention scores kept without FlashAttention
//
// Llama (4D paper, Eqs. 11-12, FlashAttention): replicated 8 (X 2, FFN input 2, two
//   RMSNorm inputs 4); sharded 4 + 4k/a + 8h_ffn/h (Q, attention output, K and V, four
//   h_ffn-wide tensors of SwiGLU); total 12 + 4k/a + 8h_ffn/h. Without FlashAttention the
//   softmax output (2as^2b; Llama has no attention dropout) is kept too.
// GPT (Korthikanti et al. Sec. 4.1, Eq. 1): replicated 10 (LayerNorm inputs 4, attention
//   and MLP inputs 4, two dropout masks 2); sharded 24 (Q, K, V, projection input 8,
//   GeLU input and fc2 input 16); scores 5 (softmax output, dropout mask and output):
//   sbh(34 + 5as/h). With GQA or a non-4h MLP the sharded part uses k/a and h_ffn/h.
//
// With t-way TP, c-way CP and sequence parallelism (Korthikanti Table 2; 4D paper Eq. 17):
//   per layer = sbh/c * (replicated/(SP ? t : 1) + sharded/t) + scores*a*s^2*b/(t*c)
// Selective recomputation drops the scores term; full recomputation keeps only the
// layer input, 2sbh/c (/t with SP). The embedding keeps E*sbh per micro-batch in flight
// (Llama: 8, 4D paper Eq. 13; GPT: 1, the embedding dropout mask, Korthikanti Sec. 4.3)
// and the LM head 4sbh(1 + v/h) (Eq. 14: final norm input, output-layer input, fp32 logits).
#pragma once

#include "memest/memest.h"

namespace memest {

struct ActivationCoefficients {
  double replicated = 0;
  double sharded = 0;
  double scores = 0;
  double embedding = 0;
  double mlp = 0;  // bytes per token per unit of FFN width inside `sharded` (Llama 8, GPT 4)
};

ActivationCoefficients activation_coefficients(const memest_model& m,
                                               memest_activation_model which);

struct ActivationLayout {
  double seq_len = 0;
  double micro_batch = 0;
  double tp = 1;
  double cp = 1;
  bool sequence_parallel = true;
  bool flash_attention = true;
  memest_recompute recompute = MEMEST_RECOMPUTE_NONE;
  // Megatron-Core's recompute_modules in effect (plan/stack.hpp recompute_modules_in_effect):
  // bits (1u << memest_recompute_module), 0 unless recompute is SELECTIVE under Megatron
  uint32_t recompute_modules = 0;
};

// Whether Megatron recomputes `module` under this layout's selective recomputation.
bool recomputes(const ActivationLayout& x, memest_recompute_module module);

// What Megatron-Core's output-discarding and module checkpoints
// (transformer_config.py recompute_modules; transformer_layer.py, moe/moe_layer.py,
// moe/experts.py, multi_latent_attention.py) take out of one layer's saved set under recompute
// SELECTIVE, in bytes per micro-batch on one GPU (sbh_c = s*b*h/c, sp = t with SP else 1):
//   layernorm    each norm not fused into the next linear (Transformer Engine specs,
//                models/gpt/gpt_layer_specs.py: latent attention's input norm, an MoE layer's
//                pre-MLP norm) loses its output: 2 sbh_c / sp each;
//   mla_up_proj  Q, K and V of latent attention (the up projections' and RoPE's outputs):
//                (4 a (d_nope + d_rope) + 2 a d_v) s b / (c t);
//   mlp          a dense layer's MLP, checkpointed with its fused norm: the MLP's tensors and
//                the norm output, mlp_activation_bytes + 2 sbh_c / sp;
//   moe, moe_act, shared_experts: in moe_activation_parts.
// core_attn is the selective recomputation Korthikanti et al. describe (scores only).
double attention_side_recomputed_bytes(const memest_model& m, const ActivationLayout& x);
double dense_mlp_recomputed_bytes(const memest_model& m, const ActivationCoefficients& k,
                                  const ActivationLayout& x);

// Bytes for one (dense) transformer layer, one micro-batch, one GPU, with the recompute
// modules' savings (attention_side_recomputed_bytes, dense_mlp_recomputed_bytes).
double layer_activation_bytes(const memest_model& m, const ActivationCoefficients& k,
                              const ActivationLayout& x);
// The dense MLP's share of layer_activation_bytes before any recompute module (0 under full
// recomputation).
double mlp_activation_bytes(const memest_model& m, const ActivationCoefficients& k,
                            const ActivationLayout& x);

// What one MoE layer keeps for backward for one micro-batch on one GPU beyond its attention
// part, under Megatron-Core's all-to-all token dispatcher
// (megatron/core/transformer/moe/token_dispatcher.py). T = s*b/(c * (SP ? t : 1)) tokens enter
// the layer on a GPU; each goes to k experts; an expert-parallel rank's experts receive
// R = load * T * k * etp rows (the etp ranks of an expert all see its rows), where `load` is
// 1 for drop-less routing (the average load, which the balancing loss drives towards) or the
// capacity factor when one is given (each expert's rows are cut or padded to it).
// Under Megatron's recompute modules: moe keeps none of these (the MoE layer is checkpointed
// on its input), moe_act drops the experts' activation output (R x 2 f_e / etp),
// shared_experts drops the shared part.
struct MoeActivationParts {
  double router = 0;    // fp32 scores + routing map, T x E x (4 + 1)
  double dispatch = 0;  // permuted tokens, the experts' fc1 input: R x h x 2
  double experts = 0;   // fc1 output and activation output: R x (6 | 4) x f_e / etp
  double combine = 0;   // unpermute keeps the expert outputs and probs: load T k (2h + 4)
  double shared = 0;    // shared experts' fc1 + activation outputs: T' x n_s (6 | 4) f_s / t
  double routed() const { return router + dispatch + experts + combine; }
  double total() const { return routed() + shared; }
};
MoeActivationParts moe_activation_parts(const memest_model& m, const ActivationLayout& x,
                                        double etp, double capacity_factor);
// Bytes for one MoE layer, one micro-batch, one GPU: the layer formula without its dense MLP,
// plus the MoE parts (full recomputation keeps only the layer input, as for a dense layer);
// the layernorm module also drops the unfused pre-MLP norm's output.
double moe_layer_activation_bytes(const memest_model& m, const ActivationCoefficients& k,
                                  const ActivationLayout& x, double etp, double capacity_factor);

// LoRA on a frozen base under Megatron-Core (ms-swift swift/megatron/tuners/lora.py
// LoraParallelLinear): what one layer's saved tensors change by, for one micro-batch on one GPU.
// The frozen linears stop saving their inputs: Transformer Engine keeps a linear's input only
// for its weight gradient (transformer_engine/pytorch/module/linear.py and
// layernorm_linear.py: backward_needs_input = is_grad_enabled and weight.requires_grad), so
// linear_qkv's and linear_fc1's normed inputs, linear_fc2's input (the activation output), the
// experts' fc1 input (the permuted tokens) and their fc2 input are freed; linear_proj's input
// stays, FlashAttention keeps it as its output (without FlashAttention it is freed too). Each
// adapter then saves what its own linears need: on linear_qkv / linear_fc1 lora_A's input,
// gathered from the sequence-parallel region to the whole local sequence (n x h); on
// linear_proj / linear_fc2 the tensor-parallel input the base reads (linear_fc2's comes back);
// and every lora_B its r-wide input (n x r). Dropout > 0 saves its output and a 1-byte mask in
// place of the input. Under full recomputation the layer keeps its input only: no change.
struct MegatronLoraActivation {
  uint32_t targets = 0;  // bits of memest_lora_target
  double rank = 0;
  bool dropout = false;
};
double megatron_lora_layer_delta(const memest_model& m, const ActivationLayout& x,
                                 const MegatronLoraActivation& a, bool moe_layer, double etp,
                                 double capacity_factor);
// The same split by half-block: the attention's part (linear_qkv, core attention, linear_proj)
// and the MLP's (linear_fc1/fc2, the experts, the router, the shared experts), for a hybrid's
// layers that hold one half only (model/hybrid.hpp).
double megatron_lora_attention_delta(const memest_model& m, const ActivationLayout& x,
                                     const MegatronLoraActivation& a);
double megatron_lora_mlp_delta(const memest_model& m, const ActivationLayout& x,
                               const MegatronLoraActivation& a, bool moe_layer, double etp,
                               double capacity_factor);

// Bytes the embedding keeps per micro-batch in flight (first stage).
double embedding_activation_bytes(const memest_model& m, const ActivationCoefficients& k,
                                  const ActivationLayout& x);
// Bytes of the LM head: final norm input, output-layer input, fp32 logits (last stage).
double head_activation_bytes(const memest_model& m, const ActivationLayout& x);

}  // namespace memest
