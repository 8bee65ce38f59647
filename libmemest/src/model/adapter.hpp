// LoRA adapter parameters (README "LoRA and QLoRA"): which modules of a model a canonical
// target name stands for, and how many parameters the adapters on them have. A LoRA adapter on
// a linear of in_features x out_features adds lora_A (r x in) and lora_B (out x r): r(in + out)
// parameters, no bias (peft tuners/lora/layer.py LoraLayer.update_layer: nn.Linear(in, r,
// bias=False), nn.Linear(r, out, bias=False)); on an embedding of v x h, lora_embedding_A
// (r x v) and lora_embedding_B (h x r): r(v + h) (the same file, Embedding.update_layer).
#pragma once

#include <cstdint>
#include <string>

#include "memest/memest.h"
#include "model/hybrid.hpp"

namespace memest {

constexpr uint32_t lora_bit(memest_lora_target t) { return 1u << static_cast<unsigned>(t); }
constexpr uint32_t kLoraAllTargets = (1u << MEMEST_LORA_TARGET_COUNT) - 1u;
// peft's default target_modules for Llama-style models (utils/constants.py
// TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING: "llama": ["q_proj", "v_proj"]).
constexpr uint32_t kLoraDefaultTargets = lora_bit(MEMEST_LORA_Q_PROJ) | lora_bit(MEMEST_LORA_V_PROJ);

// One layer's adapters by the block they sit in, for a hybrid model's layer kinds
// (model/hybrid.hpp LayerMix): what the attention targets put on one attention, the MLP
// targets on one dense MLP, in_proj / out_proj on one state-space or delta-rule mixer; or any
// other per-block quantity of the adapters (the bytes they save, pretrain/pretrain.cpp).
struct AdapterBlocks {
  double attention = 0;
  double dense_mlp = 0;
  double mamba = 0;     // a Mamba-1 / Mamba-2 mixer ('S', 'M', and beside attention in 'P')
  double deltanet = 0;  // a gated DeltaNet mixer ('G')
  // What the layers of `mix` hold beyond as many attention + MLP layers (negative where they
  // hold less), as hybrid_params_delta counts their parameters.
  double delta(const LayerMix& mix) const;
  // The most one layer of the model's kinds adds to an attention + MLP layer (0 without mixers).
  double largest_extra(const LayerMix& all) const;
};

struct AdapterParams {
  double dense_layer = 0;  // one layer with a dense MLP
  double moe_layer = 0;    // one layer with an MoE MLP (every expert's adapters)
  double layers = 0;       // every layer of the model
  double embed_tokens = 0;
  double lm_head = 0;
  AdapterBlocks blocks;  // dense_layer and moe_layer hold the attention's and the MLP's
  double total() const { return layers + embed_tokens + lm_head; }
  // One layer's adapters, the largest of the model's layer kinds (the FSDP unit's buffers).
  double largest_layer(const memest_model& m) const;
};

// Adapter parameters of rank `rank` on the modules in `targets` (bits of memest_lora_target).
// Fused projections: any of q/k/v_proj targets the one fused QKV tensor (h -> q + 2kv), any of
// gate/up_proj the fused gate_up_proj (h -> 2 h_ffn). A GELU MLP's fc1 is up_proj, its fc2
// down_proj. MoE layers: gate/up/down_proj adapt every routed and shared expert's MLP (peft
// matches the module name in every expert, as ms-swift's all-linear does); router adapts the
// router (h -> E), refused on a dense model.
// Hybrid models (model/hybrid.hpp): the attention targets on the attention layers only ('A',
// 'P'), the MLP targets on the layers with an MLP ('D', 'E'), in_proj / out_proj on the mixers
// (Hugging Face NemotronHMamba2Mixer, Mamba2Mixer, JambaMambaMixer: in_proj h -> z, x (and
// Mamba-2's B, C, dt), out_proj d_inner -> h; Qwen3NextGatedDeltaNet: in_proj_qkvz h -> q, k, v,
// z and in_proj_ba h -> b, a, two adapters, and out_proj). Kimi Delta Attention names its
// projections q/k/v/f/g/b/o_proj, which in_proj / out_proj do not stand for: refused. Qwen3-Next's
// gated q_proj (attention_output_gate) is twice the query width.
// Throws memest::Error naming `field` when the model has no such module (gate_proj on a GELU
// MLP, q/k/v_proj under multi-head latent attention or on a hybrid without attention layers,
// in_proj / out_proj on a model without Mamba / gated DeltaNet mixers).
AdapterParams adapter_parameters(const memest_model& m, uint32_t targets, double rank,
                                 const std::string& field);

// The smaller side of the mixer linears in_proj or out_proj (`target`) adapts, the narrowest
// over the model's mixer kinds (the input projection's main linear: Qwen3-Next's in_proj_qkvz,
// not the value-heads-wide in_proj_ba); the hidden size without such mixers.
int64_t mixer_adapter_side(const memest_model& m, memest_lora_target target);
// peft's target_modules="all-linear" (peft/tuners/tuners_utils.py
// _maybe_include_all_linear_layers: every nn.Linear of the model but the output layer, which
// get_output_embeddings() names) as canonical targets: the attention's q/k/v/o_proj, the MLP's
// gate_proj (a gated MLP only), up_proj and down_proj, and on a mixture-of-experts model the
// router (an nn.Linear h -> E, named "gate" in Mixtral, Qwen-MoE, DeepSeek) with every expert's
// projections. Neither embedding is a linear. The one meaning of "all-linear" in memest: the
// JSON reader's "all-linear" target and the launch importer's all-linear settings both use it.
// On a hybrid: the attention targets where it has attention layers, the MLP's where it has
// MLPs, in_proj and out_proj on its Mamba-2 / gated DeltaNet mixers.
// Throws memest::Error naming `field` for a model whose linears the canonical names cannot all
// say: multi-head latent attention (q_a/q_b_proj, kv_a_proj_with_mqa, kv_b_proj), Mamba-1
// (x_proj, dt_proj) and Kimi Delta Attention mixers (q/k/v/f/g/b_proj).
uint32_t all_linear_targets(const memest_model& m, const std::string& field);
// The name a target list gives for it (peft's INCLUDE_LINEAR_LAYERS_SHORTHAND).
constexpr const char* kAllLinearTarget = "all-linear";

// One layer's adapters on one GPU under Megatron-Core's LoRA (ms-swift
// swift/megatron/tuners/lora.py LoraParallelLinear; peft tuners/lora/tp_layer.py splits the
// same way). Megatron fuses q/k/v into linear_qkv and gate/up into linear_fc1, so any of them
// adapts the whole fused linear. On a column-parallel linear (linear_qkv, linear_fc1) lora_A
// (r x in) is whole on every rank and lora_B (out/t x r) split; on a row-parallel one
// (linear_proj, linear_fc2) lora_A (r x in/t) is split and lora_B (out x r) whole. The routed
// experts' grouped linears split alike over etp, with E/ep experts on a rank; the router's
// adapters (TELinear, no parallel mode) are whole; the shared experts are one MLP of
// num_shared_experts x their width (megatron/core/transformer/moe/shared_experts.py).
// lm_head and embed_tokens take no adapter there (plan/stack.cpp validate_adapter).
// A hybrid's mixers (megatron/core/ssm/mamba_mixer.py, gated_delta_net/gdn.py): in_proj
// column-parallel (Mamba-2: z, x, B, C, dt; gated DeltaNet: one linear for q, k, v, z, b, a),
// out_proj row-parallel; Megatron-Bridge's Nemotron-H PEFT recipes target both beside
// linear_qkv, linear_proj, linear_fc1, linear_fc2 (recipes/nemotronh).
struct MegatronAdapterParams {
  double dense_layer = 0;  // a layer with a dense MLP
  double moe_layer = 0;    // an MoE layer's attention, router and shared-expert adapters
  double moe_experts = 0;  // an MoE layer's routed experts' adapters on this rank
  AdapterBlocks blocks;    // a hybrid's layer kinds, as dense_layer splits them
};
MegatronAdapterParams megatron_adapter_parameters(const memest_model& m, uint32_t targets,
                                                  double rank, double tp, double ep,
                                                  double etp);
// The whole model's adapters under Megatron (t = ep = etp = 1), with `mtp_layers` trained
// multi-token-prediction layers (each a decoder layer of its kind).
double megatron_adapter_total(const memest_model& m, uint32_t targets, double rank,
                              int64_t mtp_layers);

// "q_proj,v_proj" for a target mask.
std::string target_list(uint32_t targets);

}  // namespace memest
