// Reading and writing the pieces every mode shares: precision fields, model and GPU objects.
#include "json/modes.hpp"

#include "model/gpu_profile.hpp"
#include "model/model.hpp"
#include "json/request.hpp"

namespace memest {

double dtype_bytes(const JsonFields& f, const char* key, double fallback) {
  auto name = f.choice(key, {"fp32", "float32", "bf16", "bfloat16", "fp16", "float16", "fp8"});
  if (!name) return fallback;
  if (*name == "fp32" || *name == "float32") return 4;
  if (*name == "fp8") return 1;
  return 2;
}

void read_precision(const JsonFields& f, double& param, double& grad, double& optimizer) {
  param = dtype_bytes(f, "param_dtype", param);
  grad = dtype_bytes(f, "grad_dtype", grad);
  // K per optimizer (ZeRO paper Sec. 3.1): Adam keeps fp32 master weights, momentum and
  // variance (12); SGD with momentum master + momentum (8); plain SGD the master (4).
  if (auto o = f.choice("optimizer", {"adam", "adamw", "sgd_momentum", "sgd"})) {
    optimizer = (*o == "sgd") ? 4 : (*o == "sgd_momentum") ? 8 : 12;
  }
  if (auto k = f.number("optimizer_bytes", 0, 64)) optimizer = *k;
}

const json& require_object_field(const JsonFields& f, const char* key) {
  const json* v = f.object(key);
  if (!v) throw Error(MEMEST_ERR_MISSING_FIELD, f.path_of(key), f.path_of(key) + ": missing");
  return *v;
}

json empty_object() { return json::object(); }

int32_t recompute_value(const std::string& name) {
  return name == "full" ? MEMEST_RECOMPUTE_FULL
         : name == "selective" ? MEMEST_RECOMPUTE_SELECTIVE : MEMEST_RECOMPUTE_NONE;
}

const char* family_name(int32_t family) { return family == MEMEST_FAMILY_GPT ? "gpt" : "llama"; }

ojson model_json(const memest_model& m) {
  const memest_param_count c = count_parameters(m);
  ojson j = {{"name", m.name}, {"num_parameters", c.total}};
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
  j["parameters"] = {{"embedding", c.embedding},
                     {"per_layer", c.per_layer},
                     {"lm_head", c.lm_head}};
  return j;
}

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
  return r == MEMEST_RECOMPUTE_FULL ? "full" : r == MEMEST_RECOMPUTE_SELECTIVE ? "selective" : "none";
}

}  // namespace memest
