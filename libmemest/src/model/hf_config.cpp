#include "model/hf_config.hpp"

#include <cstring>
#include <limits>

#include "model/model.hpp"

namespace memest {

namespace {

// How one Hugging Face model_type builds its layers. Field names and defaults follow
// the matching transformers configuration and modeling classes.
struct Convention {
  const char* model_type;
  memest_family family;
  bool gated_mlp;
  memest_norm_type norm;
  int norms_per_layer;
  bool qkv_bias;
  bool out_bias;
  bool mlp_bias;
  bool lm_head_bias;
  bool embedding_norm;
  bool learned_positions;
  int position_offset;  // OPT and BioGPT keep 2 extra rows in their position table
  bool tied_default;    // tie_word_embeddings when the file does not say
  bool multi_query_default;
  bool fused_qkv;    // one Q/K/V tensor (matters for per-tensor page rounding)
  bool logits_fp32;  // the modeling code casts logits to fp32 before the loss (LLMem's B)
};

constexpr Convention kConventions[] = {
    // type          family               gated  norm               n/l  qkv    out    mlp    head   embN   learned off tied  mq  fused  fp32
    {"llama",       MEMEST_FAMILY_LLAMA, true,  MEMEST_NORM_RMS,   2, false, false, false, false, false, false, 0, false, false, false, true},
    {"mistral",     MEMEST_FAMILY_LLAMA, true,  MEMEST_NORM_RMS,   2, false, false, false, false, false, false, 0, false, false, false, true},
    {"qwen2",       MEMEST_FAMILY_LLAMA, true,  MEMEST_NORM_RMS,   2, true,  false, false, false, false, false, 0, false, false, false, true},
    {"gemma",       MEMEST_FAMILY_LLAMA, true,  MEMEST_NORM_RMS,   2, false, false, false, false, false, false, 0, true,  false, false, true},
    {"gpt2",        MEMEST_FAMILY_GPT,   false, MEMEST_NORM_LAYER, 2, true,  true,  true,  false, false, true,  0, true,  false, true,  false},
    {"gpt_bigcode", MEMEST_FAMILY_GPT,   false, MEMEST_NORM_LAYER, 2, true,  true,  true,  false, false, true,  0, true,  true, true,  false},
    {"gpt_neo",     MEMEST_FAMILY_GPT,   false, MEMEST_NORM_LAYER, 2, false, true,  true,  false, false, true,  0, true,  false, false, true},
    {"gpt_neox",    MEMEST_FAMILY_GPT,   false, MEMEST_NORM_LAYER, 2, true,  true,  true,  false, false, false, 0, false, false, true,  false},
    {"opt",         MEMEST_FAMILY_GPT,   false, MEMEST_NORM_LAYER, 2, true,  true,  true,  false, false, true,  2, true,  false, false, false},
    {"biogpt",      MEMEST_FAMILY_GPT,   false, MEMEST_NORM_LAYER, 2, true,  true,  true,  false, false, true,  2, true,  false, false, false},
    {"bloom",       MEMEST_FAMILY_GPT,   false, MEMEST_NORM_LAYER, 2, true,  true,  true,  false, true,  false, 0, true,  false, true,  false},
    {"codegen",     MEMEST_FAMILY_GPT,   false, MEMEST_NORM_LAYER, 1, false, false, true,  true,  false, false, 0, false, false, true,  true},
    {"gptj",        MEMEST_FAMILY_GPT,   false, MEMEST_NORM_LAYER, 1, false, false, true,  true,  false, false, 0, false, false, false, true},
};

// architectures[0] → model_type, for files that lack model_type.
constexpr std::pair<const char*, const char*> kArchitectures[] = {
    {"LlamaForCausalLM", "llama"},        {"MistralForCausalLM", "mistral"},
    {"Qwen2ForCausalLM", "qwen2"},        {"GemmaForCausalLM", "gemma"},
    {"GPT2LMHeadModel", "gpt2"},          {"GPTBigCodeForCausalLM", "gpt_bigcode"},
    {"GPTNeoForCausalLM", "gpt_neo"},     {"GPTNeoXForCausalLM", "gpt_neox"},
    {"OPTForCausalLM", "opt"},            {"BioGptForCausalLM", "biogpt"},
    {"BloomForCausalLM", "bloom"},        {"CodeGenForCausalLM", "codegen"},
    {"GPTJForCausalLM", "gptj"},
};

// Mixture-of-experts and other shapes this version does not model.
constexpr const char* kUnsupported[] = {"mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2",
                                        "deepseek_v3", "dbrx", "jamba", "mamba", "t5", "bart"};

const Convention* find_convention(const std::string& type) {
  for (const auto& c : kConventions)
    if (type == c.model_type) return &c;
  return nullptr;
}

int64_t need(const JsonFields& f, std::initializer_list<const char*> keys, int64_t min,
             int64_t max) {
  const char* key = f.first_present(keys);
  if (!key) {
    const char* first = *keys.begin();
    throw Error(MEMEST_ERR_MISSING_FIELD, f.path_of(first), f.path_of(first) + ": missing");
  }
  return *f.integer(key, min, max);
}

int64_t maybe(const JsonFields& f, std::initializer_list<const char*> keys, int64_t fallback,
              int64_t min, int64_t max) {
  const char* key = f.first_present(keys);
  return key ? *f.integer(key, min, max) : fallback;
}

std::string resolve_model_type(const JsonFields& f, const json& object) {
  if (auto t = f.string("model_type")) return *t;
  if (const json* arch = f.object("architectures")) {
    if (!arch->is_array() || arch->empty() || !(*arch)[0].is_string()) {
      throw Error(MEMEST_ERR_TYPE, f.path_of("architectures"),
                  f.path_of("architectures") + ": expected a list of class names");
    }
    const std::string name = (*arch)[0].get<std::string>();
    for (const auto& [cls, type] : kArchitectures)
      if (name == cls) return type;
    fail(f.path_of("architectures"), "unknown architecture \"" + echo(name) +
                                         "\"; set model_type to one of " + supported_model_types(),
         MEMEST_ERR_UNSUPPORTED);
  }
  (void)object;
  // Plain numbers: the family field (memest's own) picks Llama or GPT conventions.
  auto family = f.choice("family", {"llama", "gpt"});
  return family && *family == "gpt" ? "gpt2" : "llama";
}

}  // namespace

std::string supported_model_types() {
  std::string s;
  for (const auto& c : kConventions) s += (s.empty() ? "" : ", ") + std::string(c.model_type);
  return s;
}

memest_model model_from_json(const json& object, const std::string& prefix) {
  JsonFields f(object, prefix, Nulls::Absent);
  memest_model m = default_model();
  if (auto name = f.string("name")) copy_name(m.name, *name);
  else if (auto path = f.string("_name_or_path")) copy_name(m.name, *path);

  // A bare count: only the model-states mode accepts it (validate_model decides).
  const bool has_dims = f.first_present({"hidden_size", "n_embd", "n_embed", "d_model"});
  if (!has_dims && f.has("num_parameters")) {
    m.num_parameters = *f.number("num_parameters", 1, kMaxBareParameters);
    if (m.name[0] == '\0') copy_name(m.name, "custom");
    return m;
  }

  const std::string type = resolve_model_type(f, object);
  for (const char* u : kUnsupported) {
    if (type == u) {
      fail(f.path_of("model_type"), "\"" + echo(type) +
                                        "\" (mixture of experts or non-decoder) is not supported; "
                                        "supported: " + supported_model_types(),
           MEMEST_ERR_UNSUPPORTED);
    }
  }
  const Convention* c = find_convention(type);
  if (!c) {
    fail(f.path_of("model_type"), "unknown model_type \"" + echo(type) + "\"; supported: " +
                                      supported_model_types() +
                                      " (or omit model_type and give the dimensions)",
         MEMEST_ERR_UNSUPPORTED);
  }
  if (m.name[0] == '\0') copy_name(m.name, "custom-" + type);

  constexpr int64_t big = std::numeric_limits<int32_t>::max();
  m.family = c->family;
  m.gated_mlp = c->gated_mlp;
  m.norm_type = c->norm;
  m.norms_per_layer = c->norms_per_layer;
  m.attention_qkv_bias = c->qkv_bias;
  m.attention_out_bias = c->out_bias;
  m.mlp_bias = c->mlp_bias;
  m.lm_head_bias = c->lm_head_bias;
  m.embedding_norm = c->embedding_norm;
  m.fused_qkv = c->fused_qkv;
  m.logits_fp32 = c->logits_fp32;

  m.hidden_size = need(f, {"hidden_size", "n_embd", "n_embed", "d_model"}, 1, big);
  m.num_hidden_layers = need(f, {"num_hidden_layers", "n_layer", "num_layers"}, 1, big);
  m.num_attention_heads = need(f, {"num_attention_heads", "n_head", "num_heads"}, 1, big);
  const bool multi_query = f.boolean("multi_query").value_or(c->multi_query_default);
  m.num_key_value_heads =
      multi_query ? 1 : maybe(f, {"num_key_value_heads"}, m.num_attention_heads, 1, big);
  m.head_dim = maybe(f, {"head_dim"}, 0, 0, big);
  // A GeLU MLP without an explicit width is 4h (GPT-2's n_inner = null, BLOOM, GPT-Neo).
  m.intermediate_size =
      maybe(f, {"intermediate_size", "ffn_dim", "n_inner"}, c->gated_mlp ? 0 : 4 * m.hidden_size,
            1, big);
  if (m.intermediate_size == 0) need(f, {"intermediate_size"}, 1, big);
  m.vocab_size = need(f, {"vocab_size"}, 1, big);
  m.max_position_embeddings =
      maybe(f, {"max_position_embeddings", "n_positions", "n_ctx"}, 0, 0, big);
  if (c->learned_positions) {
    if (m.max_position_embeddings == 0) need(f, {"max_position_embeddings", "n_positions"}, 1, big);
    m.learned_position_rows = m.max_position_embeddings + c->position_offset;
  }
  m.tie_word_embeddings = f.boolean("tie_word_embeddings").value_or(c->tied_default);

  // Per-file switches that change shapes.
  if (auto b = f.boolean("attention_bias")) {  // Llama: q, k, v and o; GPT-NeoX: all
    m.attention_qkv_bias = *b;
    m.attention_out_bias = *b;
  }
  if (auto b = f.boolean("mlp_bias")) m.mlp_bias = *b;
  if (auto b = f.boolean("enable_bias")) {  // OPT
    m.attention_qkv_bias = m.attention_out_bias = m.mlp_bias = *b;
  }
  if (type == "opt") {
    m.final_norm = f.boolean("do_layer_norm_before").value_or(true) &&
                   !f.boolean("_remove_final_layer_norm").value_or(false);
    if (auto proj = f.integer("word_embed_proj_dim", 1, big); proj && *proj != m.hidden_size) {
      fail(f.path_of("word_embed_proj_dim"),
           "OPT embedding projections (word_embed_proj_dim != hidden_size) are not supported",
           MEMEST_ERR_UNSUPPORTED);
    }
  }
  if (auto fam = f.choice("family", {"llama", "gpt"})) {  // memest's own override
    m.family = *fam == "gpt" ? MEMEST_FAMILY_GPT : MEMEST_FAMILY_LLAMA;
  }
  return m;
}

}  // namespace memest
