// Reading and writing the pieces every mode shares: precision fields, model and GPU objects.
#include "json/modes.hpp"

#include <algorithm>

#include "core/enums.hpp"
#include "core/limits.hpp"
#include "json/request.hpp"
#include "json/request_fields.hpp"
#include "model/adapter.hpp"
#include "model/gpu_profile.hpp"
#include "model/hybrid.hpp"
#include "model/model.hpp"
#include "plan/stack.hpp"

namespace memest {

double dtype_bytes(const JsonFields& f, const char* key, double fallback) {
  auto name = f.choice(key, {"fp32", "float32", "bf16", "bfloat16", "fp16", "float16", "fp8"});
  if (!name) return fallback;
  if (*name == "fp32" || *name == "float32") return 4;
  if (*name == "fp8") return 1;
  return 2;
}

void read_precision(const JsonFields& f, Precision& precision, bool derive) {
  double& optimizer = precision.optimizer_bytes;
  precision.param_bytes = dtype_bytes(f, "param_dtype", precision.param_bytes);
  // pretraining and the search: the framework's gradient dtype unless given (resolved with the
  // framework, plan/stack.hpp resolve_grad_bytes); model states: the ZeRO paper's fp32
  precision.grad_bytes =
      dtype_bytes(f, "grad_dtype", derive ? MEMEST_GRAD_BYTES_DERIVE : precision.grad_bytes);
  if (auto o = enum_field(f, "optimizer", MEMEST_ENUM_OPTIMIZER)) precision.optimizer = *o;
  if (derive) {
    // pretraining and the search: K follows the optimizer, the framework and the stored dtype
    // (plan/stack.hpp derived_optimizer_bytes; 12 for the default megatron + bf16 + adam)
    optimizer = MEMEST_OPTIMIZER_BYTES_DERIVE;
  } else {
    // model states (ZeRO paper Sec. 3.1, mixed precision): the optimizer's states + an fp32
    // master: Adam 8 + 4 = 12, SGD with momentum 4 + 4 = 8, plain SGD the master (4).
    if (f.has("optimizer")) {
      const int32_t o = precision.optimizer;
      optimizer = (o == MEMEST_OPTIMIZER_SGD) ? 4
                  : (o == MEMEST_OPTIMIZER_SGD_MOMENTUM) ? 8
                  : (o == MEMEST_OPTIMIZER_ADAMW_8BIT || o == MEMEST_OPTIMIZER_PAGED_ADAMW_8BIT)
                      ? 2 * (1 + 4.0 / 256) + 4
                      : 12;
    }
  }
  if (auto k = f.number("optimizer_bytes", 0, 64)) optimizer = *k;
}

const json& require_object_field(const JsonFields& f, const char* key) {
  const json* v = f.object(key);
  if (!v && std::string(key) == "gpu") {
    // no GPU is assumed (a wrong default gives a wrong verdict): the message says what to add
    throw Error(MEMEST_ERR_MISSING_FIELD, f.path_of(key),
                f.path_of(key) + ": missing: name the GPU with a preset id (e.g. \"h100-80gb\"; "
                "{\"mode\": \"presets\"} and `memest gpus` list them), {\"memory_gib\": N} or a "
                "device profile (CLI: --gpu, --memory-gib or --gpu-profile)");
  }
  if (!v) throw Error(MEMEST_ERR_MISSING_FIELD, f.path_of(key), f.path_of(key) + ": missing");
  return *v;
}

const json& block(const JsonFields& top, const char* key) {
  static const json empty = json::object();
  const json* v = top.object(key);
  return v ? *v : empty;
}

std::optional<int32_t> enum_field(const JsonFields& f, const char* key, memest_enum which) {
  auto name = f.string(key);
  if (!name) return std::nullopt;
  const int32_t v = enum_value(which, *name);
  if (v < 0) {
    fail(f.path_of(key), "must be one of " + enum_choices(which) + ", got \"" + echo(*name) + "\"");
  }
  return v;
}

TrainingGiven read_training(const JsonFields& top, PretrainRequest& r, const char* const* allowed,
                            std::size_t count) {
  JsonFields training(block(top, "training"), "training");
  training.reject_unknown(allowed, count);
  // The registry's rows (json/request_fields.cpp), in the order they were always read:
  // seq_len ... activation_model, the training stack, offload, buckets.
  read_request_fields(training, "training", 0, r);
  TrainingGiven given;
  given.micro_batch = training.has("micro_batch");
  given.recompute = training.has("recompute");
  const bool pretrain =
      std::find(allowed, allowed + count, std::string("framework")) != allowed + count;
  read_precision(training, r.precision, pretrain);
  resolve_grad_bytes(r);
  read_request_fields(training, "training", 1, r);  // moe_capacity_factor
  if (const json* o = training.object("adapter")) read_adapter(*o, r.adapter, r.model);
  resolve_adapter_bytes(r);
  return given;
}

void read_adapter(const json& object, Adapter& a, const memest_model& model) {
  JsonFields f(object, "training.adapter");
  f.reject_unknown({"type", "rank", "alpha", "dropout", "targets", "dtype", "double_quant",
                    "quantize_lm_head"});
  if (auto type = f.string("type")) {
    if (*type == "dora") {
      // peft tuners/lora/dora.py: DoraLinearLayer.get_weight_norm adds lora_B(lora_A) to the
      // dense base weight and takes its column norms in every forward, so a full-size weight
      // (per adapted module, for backward) is alive; memest does not model that yet.
      fail(f.path_of("type"), "dora is not modelled: peft's DoRA materialises W + BA to take "
                              "its weight norm in every forward (tuners/lora/dora.py); use lora "
                              "or qlora");
    }
    a.type = enum_value(MEMEST_ENUM_ADAPTER, *type);
    if (a.type < 0) {
      fail(f.path_of("type"), "must be one of " + enum_choices(MEMEST_ENUM_ADAPTER) + ", got \"" +
                                  echo(*type) + "\"");
    }
  }
  if (!f.has("type") && !object.empty()) {
    fail(f.path_of("type"), "missing: give lora or qlora (the other adapter fields need a type)",
         MEMEST_ERR_MISSING_FIELD);
  }
  a.rank = f.integer_or("rank", a.rank, -(int64_t{1} << 40), int64_t{1} << 40);
  if (auto v = f.number("alpha", -1e300, 1e300)) a.alpha = *v;
  if (auto v = f.number("dropout", -1e300, 1e300)) a.dropout = *v;
  // without a dtype the stack's (plan/stack.hpp resolve_adapter_bytes, after the framework)
  a.bytes = f.has("dtype") ? dtype_bytes(f, "dtype", a.bytes) : MEMEST_ADAPTER_BYTES_DERIVE;
  if (auto b = f.boolean("double_quant")) a.double_quant = *b;
  if (auto b = f.boolean("quantize_lm_head")) a.quantize_lm_head = *b;
  if (f.has("targets")) {
    const json& list = object.at("targets");
    const std::string path = f.path_of("targets");
    if (!list.is_array()) {
      throw Error(MEMEST_ERR_TYPE, path, path + ": must be an array of module names");
    }
    uint32_t bits = 0;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string at = path + "[" + std::to_string(i) + "]";
      if (!list[i].is_string()) {
        throw Error(MEMEST_ERR_TYPE, at, at + ": must be a module name (a string)");
      }
      const std::string name = list[i].get<std::string>();
      if (name == kAllLinearTarget) {
        // peft's target_modules="all-linear": every linear but the output layer, for this model
        bits |= all_linear_targets(model, at);
        a.all_linear = true;
        continue;
      }
      const int32_t v = enum_value(MEMEST_ENUM_LORA_TARGET, name);
      if (v < 0) {
        fail(at, "\"" + echo(name) + "\" is not a canonical module name: use " +
                     enum_choices(MEMEST_ENUM_LORA_TARGET) + " or " + kAllLinearTarget +
                     " (fused tensors such as c_attn, qkv_proj, query_key_value or gate_up_proj "
                     "are targeted through q/k/v_proj and gate/up_proj)");
      }
      bits |= 1u << v;
    }
    a.targets = bits;
  }
}

const char* family_name(int32_t family) {
  const char* name = enum_name(MEMEST_ENUM_FAMILY, family);
  return name ? name : "llama";
}

const char* verdict_name(int32_t verdict) {
  const char* name = enum_name(MEMEST_ENUM_VERDICT, verdict);
  return name ? name : "unknown";
}

ojson model_json(const memest_model& m) {
  const memest_param_count c = count_parameters(m);
  // Every response reports the total and the active count (= total for a dense model).
  ojson j = {{"name", m.name}, {"num_parameters", c.total}, {"active_parameters", c.active}};
  if (is_bare_count(m)) return j;
  j["family"] = family_name(m.family);
  j["hidden_size"] = m.hidden_size;
  j["num_hidden_layers"] = m.num_hidden_layers;
  j["num_attention_heads"] = m.num_attention_heads;
  j["num_key_value_heads"] = m.num_key_value_heads;
  j["head_dim"] = head_dim(m);
  j["intermediate_size"] = m.intermediate_size;
  j["vocab_size"] = m.vocab_size;
  j["max_position_embeddings"] = m.max_position_embeddings;
  j["tie_word_embeddings"] = m.tie_word_embeddings == 1;
  // Mixture of experts, multi-head latent attention and multi-token prediction, under the
  // config.json names a model object is read with (only when the model has them).
  if (is_moe(m)) {
    j["num_experts"] = m.num_experts;
    j["num_experts_per_tok"] = m.num_experts_per_tok;
    j["moe_intermediate_size"] = expert_width(m);
    j["num_shared_experts"] = m.num_shared_experts;
    if (m.num_shared_experts > 0) j["shared_expert_intermediate_size"] = shared_expert_width(m);
    j["first_k_dense_replace"] = m.moe_first_dense_layers;
    j["moe_layer_step"] = m.moe_layer_step > 1 ? m.moe_layer_step : 1;
    j["moe_layers"] = c.moe_layers;
    j["router_bias"] = m.router_bias == 1;
    j["shared_expert_gate"] = m.shared_expert_gate == 1;
  }
  if (is_mla(m)) {
    j["q_lora_rank"] = m.q_lora_rank;
    j["kv_lora_rank"] = m.kv_lora_rank;
    j["qk_nope_head_dim"] = m.qk_nope_head_dim;
    j["qk_rope_head_dim"] = m.qk_rope_head_dim;
    j["v_head_dim"] = m.v_head_dim;
    if (m.index_n_heads > 0) {  // DeepSeek-V3.2's sparse-attention indexer
      j["index_n_heads"] = m.index_n_heads;
      j["index_head_dim"] = m.index_head_dim;
    }
  }
  if (has_mixer_pattern(m) || has_mlp_pattern(m)) {  // a hybrid model (model/hybrid.hpp)
    if (has_mixer_pattern(m)) j["mixer_pattern"] = m.mixer_pattern;
    if (has_mlp_pattern(m)) j["mlp_pattern"] = m.mlp_pattern;
    if (m.mamba_num_heads > 0) {
      j["mamba_num_heads"] = m.mamba_num_heads;
      j["mamba_head_dim"] = m.mamba_head_dim;
      j["mamba_state_size"] = m.mamba_state_size;
      j["mamba_groups"] = m.mamba_groups;
      j["mamba_conv_kernel"] = m.mamba_conv_kernel;
      j["mamba_proj_bias"] = m.mamba_proj_bias == 1;
      j["mamba_conv_bias"] = m.mamba_conv_bias == 1;
      j["mamba_norm"] = m.mamba_norm == 1;
      if (m.mamba_dt_rank > 0) j["mamba_dt_rank"] = m.mamba_dt_rank;  // Mamba-1 ('S')
    }
    if (m.linear_key_heads > 0) {
      j["linear_key_heads"] = m.linear_key_heads;
      j["linear_value_heads"] = m.linear_value_heads;
      j["linear_key_head_dim"] = m.linear_key_head_dim;
      j["linear_value_head_dim"] = m.linear_value_head_dim;
      j["linear_conv_kernel"] = m.linear_conv_kernel;
    }
  }
  if (m.attention_output_gate) j["attention_output_gate"] = true;
  // a Llama-family model with a two-matrix MLP (Nemotron-H's relu^2, Mamba2's placeholder)
  if (m.family == MEMEST_FAMILY_LLAMA && !m.gated_mlp) j["gated_mlp"] = false;
  if (m.qk_norm != 0) j["qk_norm"] = m.qk_norm == 1 ? "head" : "full";
  if (m.attention_sinks) j["attention_sinks"] = true;
  if (m.final_logit_softcapping > 0) j["final_logit_softcapping"] = m.final_logit_softcapping;
  if (m.mtp_layers > 0) {
    j["num_nextn_predict_layers"] = m.mtp_layers;
    j["mtp_parameters"] = c.mtp;
  }
  if (m.vision_excluded) {
    j["excluded"] = "vision tower and multimodal projector of the config (vision_config): only "
                    "the language model (text_config) is counted";
  }
  ojson parts = {{"embedding", c.embedding}, {"per_layer", c.per_layer}, {"lm_head", c.lm_head}};
  if (is_moe(m)) parts["per_dense_layer"] = c.per_dense_layer;
  if (m.mtp_layers > 0) parts["mtp"] = c.mtp;
  j["parameters"] = parts;
  return j;
}

ojson bit_names_json(memest_enum which, uint32_t bits) {
  ojson names = ojson::array();
  const EnumTable t = enum_table(which);
  for (uint32_t i = 0; i < t.count && i < 32; ++i) {
    if (bits & (1u << i)) names.push_back(t.names[i]);
  }
  return names;
}

ojson overlap_json(uint32_t bits) { return bit_names_json(MEMEST_ENUM_OVERLAP, bits); }

ojson gpu_json(const memest_gpu& g) {
  ojson j = {{"name", g.name},
             {"memory_bytes", g.memory_bytes},
             {"gpus_per_node", g.gpus_per_node},
             {"peak_bf16_tflops", g.peak_bf16_tflops}};
  ojson profile = ojson::object();
  for (const GpuProfileField& p : kGpuProfileFields) profile[p.key] = g.*p.member / p.scale;
  j["profile"] = profile;
  return j;
}

const char* recompute_name(int32_t r) {
  const char* name = enum_name(MEMEST_ENUM_RECOMPUTE, r);
  return name ? name : "none";
}

}  // namespace memest
