#include "model/hf_config.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "model/hybrid.hpp"
#include "model/model.hpp"

namespace memest {

namespace {

// How the experts of a mixture-of-experts family are named in its config.json.
enum class Experts {
  None,      // dense
  Mixtral,   // num_local_experts / num_experts; intermediate_size is one expert's width
  Qwen,      // num_experts, moe_intermediate_size, shared_expert_intermediate_size (+ its gate),
             // decoder_sparse_step, mlp_only_layers; intermediate_size is the dense MLP's
  DeepSeek,  // n_routed_experts, n_shared_experts, moe_intermediate_size, first_k_dense_replace
  Llama4,    // num_local_experts, one shared expert; intermediate_size the experts' width,
             // intermediate_size_mlp the dense layers', interleave_moe_layer_step
  Dbrx,      // ffn_config {moe_num_experts, moe_top_k, ffn_hidden_size}
  Ernie,     // moe_num_experts, moe_k, moe_intermediate_size, moe_num_shared_experts (one shared
             // MLP of that many experts' width), moe_layer_start_index .. moe_layer_end_index
};

// How one Hugging Face model_type builds its layers. Field names and defaults follow the
// matching transformers configuration and modeling classes (modeling_<family>.py).
struct Convention {
  const char* model_type = "";
  memest_family family = MEMEST_FAMILY_LLAMA;
  bool gated_mlp = true;
  memest_norm_type norm = MEMEST_NORM_RMS;  // weight-only LayerNorms count as RMS (h each)
  int norms_per_layer = 2;
  bool qkv_bias = false;
  bool out_bias = false;
  bool mlp_bias = false;
  bool lm_head_bias = false;
  bool embedding_norm = false;
  bool learned_positions = false;
  int position_offset = 0;           // OPT and BioGPT keep 2 extra rows in their position table
  bool tied_default = false;         // tie_word_embeddings when the file does not say
  bool multi_query_default = false;
  bool fused_qkv = false;            // one Q/K/V tensor (matters for per-tensor page rounding)
  bool logits_fp32 = true;           // logits cast to fp32 before the loss (LLMem's B)
  bool attention_bias_sets_out = true;  // attention_bias also puts a bias on o_proj
  int qk_norm = 0;                   // memest_model.qk_norm
  bool fused_gate_up = false;
  bool attention_sinks = false;
  bool router_bias = false;
  bool mla = false;                  // multi-head latent attention fields (DeepSeek-V2/V3)
  Experts experts = Experts::None;
  const char* text_of = nullptr;     // multimodal wrapper: the model_type of its text_config
};

using Edit = std::function<void(Convention&)>;

std::vector<Convention> make_conventions() {
  std::vector<Convention> t;
  auto add = [&](const char* type, const Edit& edit) {
    Convention c;
    c.model_type = type;
    if (edit) edit(c);
    t.push_back(c);
  };
  auto gpt = [](Convention& c) {  // LayerNorm, GeLU MLP with biases, dropout
    c.family = MEMEST_FAMILY_GPT;
    c.gated_mlp = false;
    c.norm = MEMEST_NORM_LAYER;
    c.qkv_bias = c.out_bias = c.mlp_bias = true;
  };
  // ---- the 1.0 families (values unchanged)
  add("llama", nullptr);
  add("mistral", nullptr);
  add("qwen2", [](Convention& c) { c.qkv_bias = true; });
  add("gemma", [](Convention& c) { c.tied_default = true; });
  add("gpt2", [&](Convention& c) {
    gpt(c);
    c.learned_positions = true;
    c.tied_default = true;
    c.fused_qkv = true;
    c.logits_fp32 = false;
  });
  add("gpt_bigcode", [&](Convention& c) {
    gpt(c);
    c.learned_positions = true;
    c.tied_default = true;
    c.multi_query_default = true;
    c.fused_qkv = true;
    c.logits_fp32 = false;
  });
  add("gpt_neo", [&](Convention& c) {
    gpt(c);
    c.qkv_bias = false;
    c.learned_positions = true;
    c.tied_default = true;
  });
  add("gpt_neox", [&](Convention& c) {
    gpt(c);
    c.fused_qkv = true;
    c.logits_fp32 = false;
  });
  add("opt", [&](Convention& c) {
    gpt(c);
    c.learned_positions = true;
    c.position_offset = 2;
    c.tied_default = true;
    c.logits_fp32 = false;
  });
  add("biogpt", [&](Convention& c) {
    gpt(c);
    c.learned_positions = true;
    c.position_offset = 2;
    c.tied_default = true;
    c.logits_fp32 = false;
  });
  add("bloom", [&](Convention& c) {
    gpt(c);
    c.embedding_norm = true;
    c.tied_default = true;
    c.fused_qkv = true;
    c.logits_fp32 = false;
  });
  add("codegen", [&](Convention& c) {  // parallel attention + MLP sharing ln_1
    gpt(c);
    c.norms_per_layer = 1;
    c.qkv_bias = c.out_bias = false;
    c.lm_head_bias = true;
    c.fused_qkv = true;
  });
  add("gptj", [&](Convention& c) {
    gpt(c);
    c.norms_per_layer = 1;
    c.qkv_bias = c.out_bias = false;
    c.lm_head_bias = true;
  });
  // ---- dense families of 2024-26
  add("qwen3", [](Convention& c) { c.qk_norm = 1; });  // q_norm, k_norm over head_dim
  add("gemma2", [](Convention& c) {  // input, post-attention, pre- and post-feedforward norms
    c.tied_default = true;
    c.norms_per_layer = 4;
  });
  add("gemma3_text", [](Convention& c) {
    c.tied_default = true;
    c.norms_per_layer = 4;
    c.qk_norm = 1;
  });
  add("phi3", [](Convention& c) {  // qkv_proj, gate_up_proj
    c.fused_qkv = true;
    c.fused_gate_up = true;
  });
  add("olmo2", [](Convention& c) { c.qk_norm = 2; });  // q_norm a*d, k_norm k*d; post-norms
  add("starcoder2", [&](Convention& c) {  // use_bias on every linear; LayerNorm
    gpt(c);
    c.tied_default = true;
  });
  add("falcon", [&](Convention& c) {  // query_key_value, dense; bias, parallel_attn read below
    gpt(c);
    c.qkv_bias = c.out_bias = c.mlp_bias = false;
    c.tied_default = true;
    c.fused_qkv = true;
  });
  add("cohere", [](Convention& c) {  // parallel block, one weight-only LayerNorm
    c.norms_per_layer = 1;
    c.tied_default = true;
  });
  add("internlm2", [](Convention& c) { c.fused_qkv = true; });  // wqkv; "bias" read below
  add("glm", [](Convention& c) {
    c.qkv_bias = true;
    c.attention_bias_sets_out = false;
    c.fused_gate_up = true;
  });
  add("glm4", [](Convention& c) {  // + post_self_attn_layernorm, post_mlp_layernorm
    c.qkv_bias = true;
    c.attention_bias_sets_out = false;
    c.fused_gate_up = true;
    c.norms_per_layer = 4;
  });
  // ---- mixture-of-experts families
  add("mixtral", [](Convention& c) { c.experts = Experts::Mixtral; });
  add("qwen2_moe", [](Convention& c) {
    c.qkv_bias = true;  // qkv_bias, read below
    c.experts = Experts::Qwen;
  });
  add("qwen3_moe", [](Convention& c) {
    c.qk_norm = 1;
    c.experts = Experts::Qwen;
  });
  add("deepseek_v2", [](Convention& c) {
    c.mla = true;
    c.experts = Experts::DeepSeek;
  });
  add("deepseek_v3", [](Convention& c) {
    c.mla = true;
    c.experts = Experts::DeepSeek;
  });
  add("gpt_oss", [](Convention& c) {  // biases everywhere, sinks, router bias
    c.qkv_bias = c.out_bias = c.mlp_bias = true;
    c.attention_sinks = true;
    c.router_bias = true;
    c.fused_gate_up = true;
    c.experts = Experts::Mixtral;
  });
  add("llama4_text", [](Convention& c) { c.experts = Experts::Llama4; });  // L2 QK-norm: no weights
  add("olmoe", [](Convention& c) {
    c.qk_norm = 2;
    c.experts = Experts::Mixtral;
  });
  add("dbrx", [](Convention& c) {  // Wqkv, out_proj; weight-only LayerNorms norm_1, norm_2
    c.fused_qkv = true;
    c.experts = Experts::Dbrx;
  });
  // ---- families of 2025-26
  add("smollm3", [](Convention& c) { c.tied_default = true; });  // NoPE layers: no weights
  add("seed_oss", [](Convention& c) {  // q/k/v biases (attention_bias), o_proj's apart
    c.qkv_bias = true;
    c.attention_bias_sets_out = false;  // attention_out_bias, read below
  });
  add("phi", [&](Convention& c) {  // Phi-2: parallel attention + MLP sharing input_layernorm
    gpt(c);
    c.norms_per_layer = 1;
    c.lm_head_bias = true;
  });
  add("glm4_moe", [](Convention& c) {  // attention_bias: q/k/v only; use_qk_norm read below
    c.attention_bias_sets_out = false;
    c.experts = Experts::DeepSeek;
  });
  add("minimax_m2", [](Convention& c) { c.experts = Experts::Mixtral; });  // q/k norms below
  add("ernie4_5_moe", [](Convention& c) {  // use_bias read below
    c.tied_default = true;
    c.experts = Experts::Ernie;
  });
  add("deepseek_v32", [](Convention& c) {  // DeepSeek-V3 + the sparse-attention indexer
    c.mla = true;
    c.experts = Experts::DeepSeek;
  });
  // ---- hybrid families: Mamba-2 / gated DeltaNet layers beside attention (read_hybrid)
  add("nemotron_h", [](Convention& c) {  // NemotronHMLP: up_proj, relu^2, down_proj
    c.gated_mlp = false;
  });
  add("qwen3_next", [](Convention& c) {  // Qwen3-MoE's experts, gated attention, QK-norms
    c.qk_norm = 1;
    c.experts = Experts::Qwen;
  });
  add("falcon_h1", nullptr);
  add("bamba", nullptr);
  add("granitemoehybrid", nullptr);  // experts read by read_hybrid (GraniteMoeHybridMoE)
  add("mamba2", [](Convention& c) { c.gated_mlp = false; });  // no attention, no MLP
  add("jamba", nullptr);  // Mamba-1 layers, attention every attn_layer_period (read_jamba)
  // Mamba-1 language models: a norm and a Mamba-1 mixer per layer, no attention, no MLP
  // (modeling_mamba.py MambaBlock, modeling_falcon_mamba.py); the head tied unless the file
  // says otherwise (PretrainedConfig's default; FalconMamba-7B unties it)
  add("mamba", [](Convention& c) {
    c.gated_mlp = false;
    c.tied_default = true;
  });
  add("falcon_mamba", [](Convention& c) {
    c.gated_mlp = false;
    c.tied_default = true;
  });
  add("kimi_linear", [](Convention& c) {  // KDA layers beside MLA, DeepSeek-V3's experts
    c.mla = true;
    c.experts = Experts::DeepSeek;
  });
  // ---- multimodal configs: the language model of text_config (vision tower left out)
  add("gemma3", [](Convention& c) { c.text_of = "gemma3_text"; });
  add("llama4", [](Convention& c) { c.text_of = "llama4_text"; });
  return t;
}

const std::vector<Convention>& conventions() {
  static const std::vector<Convention> table = make_conventions();
  return table;
}

// architectures[0] → model_type, for files that lack model_type or carry one of their own
// (Kimi K2's "kimi_k2" is a DeepseekV3ForCausalLM).
constexpr std::pair<const char*, const char*> kArchitectures[] = {
    {"LlamaForCausalLM", "llama"},
    {"MistralForCausalLM", "mistral"},
    {"Qwen2ForCausalLM", "qwen2"},
    {"GemmaForCausalLM", "gemma"},
    {"GPT2LMHeadModel", "gpt2"},
    {"GPTBigCodeForCausalLM", "gpt_bigcode"},
    {"GPTNeoForCausalLM", "gpt_neo"},
    {"GPTNeoXForCausalLM", "gpt_neox"},
    {"OPTForCausalLM", "opt"},
    {"BioGptForCausalLM", "biogpt"},
    {"BloomForCausalLM", "bloom"},
    {"CodeGenForCausalLM", "codegen"},
    {"GPTJForCausalLM", "gptj"},
    {"Qwen3ForCausalLM", "qwen3"},
    {"Gemma2ForCausalLM", "gemma2"},
    {"Gemma3ForCausalLM", "gemma3_text"},
    {"Gemma3ForConditionalGeneration", "gemma3"},
    {"Phi3ForCausalLM", "phi3"},
    {"Olmo2ForCausalLM", "olmo2"},
    {"Starcoder2ForCausalLM", "starcoder2"},
    {"FalconForCausalLM", "falcon"},
    {"RWForCausalLM", "falcon"},
    {"CohereForCausalLM", "cohere"},
    {"InternLM2ForCausalLM", "internlm2"},
    {"GlmForCausalLM", "glm"},
    {"Glm4ForCausalLM", "glm4"},
    {"MixtralForCausalLM", "mixtral"},
    {"Qwen2MoeForCausalLM", "qwen2_moe"},
    {"Qwen3MoeForCausalLM", "qwen3_moe"},
    {"DeepseekV2ForCausalLM", "deepseek_v2"},
    {"DeepseekV3ForCausalLM", "deepseek_v3"},
    {"GptOssForCausalLM", "gpt_oss"},
    {"Llama4ForCausalLM", "llama4_text"},
    {"Llama4ForConditionalGeneration", "llama4"},
    {"OlmoeForCausalLM", "olmoe"},
    {"DbrxForCausalLM", "dbrx"},
    {"SmolLM3ForCausalLM", "smollm3"},
    {"SeedOssForCausalLM", "seed_oss"},
    {"PhiForCausalLM", "phi"},
    {"Glm4MoeForCausalLM", "glm4_moe"},
    {"MiniMaxM2ForCausalLM", "minimax_m2"},
    {"Ernie4_5_MoeForCausalLM", "ernie4_5_moe"},
    {"DeepseekV32ForCausalLM", "deepseek_v32"},
    {"NemotronHForCausalLM", "nemotron_h"},
    {"Qwen3NextForCausalLM", "qwen3_next"},
    {"FalconH1ForCausalLM", "falcon_h1"},
    {"BambaForCausalLM", "bamba"},
    {"GraniteMoeHybridForCausalLM", "granitemoehybrid"},
    {"Mamba2ForCausalLM", "mamba2"},
    {"JambaForCausalLM", "jamba"},
    {"MambaForCausalLM", "mamba"},
    {"FalconMambaForCausalLM", "falcon_mamba"},
    {"KimiLinearForCausalLM", "kimi_linear"},
};

// Earlier model_type spellings of a family (Falcon's first uploads, RWForCausalLM).
constexpr std::pair<const char*, const char*> kAliases[] = {
    {"RefinedWebModel", "falcon"},  // Falcon-7B: multi-query, parallel attention
    {"RefinedWeb", "falcon"},       // Falcon-40B: the new decoder architecture (n_head_kv)
};

// Shapes this version does not model, with the reason.
constexpr std::pair<const char*, const char*> kUnsupported[] = {
    {"rwkv", "a recurrent model, not a transformer"},
    {"t5", "an encoder-decoder model"},
    {"bart", "an encoder-decoder model"},
};

const Convention* find_convention(const std::string& type) {
  for (const auto& c : conventions())
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

constexpr int64_t kBig = std::numeric_limits<int32_t>::max();

std::string mapped_architecture(const JsonFields& f) {
  const json* arch = f.object("architectures");
  if (!arch) return "";
  if (!arch->is_array() || arch->empty() || !(*arch)[0].is_string()) {
    throw Error(MEMEST_ERR_TYPE, f.path_of("architectures"),
                f.path_of("architectures") + ": expected a list of class names");
  }
  const std::string name = (*arch)[0].get<std::string>();
  for (const auto& [cls, type] : kArchitectures)
    if (name == cls) return type;
  return "";
}

std::string first_architecture(const JsonFields& f) {
  const json* arch = f.object("architectures");
  return arch && arch->is_array() && !arch->empty() && (*arch)[0].is_string()
             ? (*arch)[0].get<std::string>()
             : std::string();
}

// The model_type whose conventions apply, or "" for plain numbers (no model_type, no
// architectures). An unknown model_type falls back on architectures[0].
std::string resolve_model_type(const JsonFields& f) {
  const auto type = f.string("model_type");
  if (type && find_convention(*type)) return *type;
  if (type) {
    for (const auto& [alias, family] : kAliases)
      if (*type == alias) return family;
  }
  const std::string by_arch = mapped_architecture(f);
  if (!by_arch.empty()) return by_arch;
  const std::string arch = first_architecture(f);
  const std::string supported = "supported: " + supported_model_types();
  if (type) {
    for (const auto& [name, why] : kUnsupported) {
      if (*type == name) {
        fail(f.path_of("model_type"),
             "\"" + echo(*type) + "\" (" + why + ") is not supported; " + supported,
             MEMEST_ERR_UNSUPPORTED);
      }
    }
    fail(f.path_of("model_type"),
         "unknown model_type \"" + echo(*type) + "\"" +
             (arch.empty() ? std::string() : " (architectures[0] \"" + echo(arch) + "\" is not known either)") +
             "; " + supported + " (or omit model_type and architectures and give the dimensions)",
         MEMEST_ERR_UNSUPPORTED);
  }
  if (f.has("architectures")) {
    fail(f.path_of("architectures"),
         "unknown architecture \"" + echo(arch) + "\"; set model_type to one of " +
             supported_model_types(),
         MEMEST_ERR_UNSUPPORTED);
  }
  return "";
}

// Qwen's mlp_only_layers (layers kept dense) must be empty or the leading layers 0..k-1, which
// memest holds as moe_first_dense_layers; any other set is refused, not approximated.
int64_t leading_layers(const JsonFields& f, const char* key) {
  const json* list = f.object(key);
  if (!list) return 0;
  if (!list->is_array()) {
    throw Error(MEMEST_ERR_TYPE, f.path_of(key), f.path_of(key) + ": expected a list of layer indices");
  }
  int64_t expected = 0;
  for (const json& v : *list) {
    if (!v.is_number_integer() || v.get<int64_t>() != expected) {
      fail(f.path_of(key),
           "only the leading layers 0, 1, ..., k-1 can be kept dense (as first_k_dense_replace); "
           "this list is not supported",
           MEMEST_ERR_UNSUPPORTED);
    }
    ++expected;
  }
  return expected;
}

// The experts of an MoE family (also read, with these names, from a model object without a
// model_type: plain numbers may describe an MoE model).
// ERNIE 4.5 (modeling_ernie4_5_moe): the layers from moe_layer_start_index to
// moe_layer_end_index (-1: the last) every moe_layer_interval have moe_num_experts routed
// experts of moe_intermediate_size, top moe_k, and one shared MLP as wide as
// moe_num_shared_experts experts (Ernie4_5_MoeMLP of moe_intermediate_size x that number: the
// same parameters as that many experts). The router's moe_statics.e_score_correction_bias (E
// values per layer, requires_grad=False, used for top-k selection only) is not counted, like
// DeepSeek-V3's e_score_correction_bias.
void read_ernie_experts(const JsonFields& f, memest_model& m) {
  m.num_experts = need(f, {"moe_num_experts"}, 1, kMaxExperts);
  m.num_experts_per_tok = need(f, {"moe_k"}, 1, kMaxExperts);
  m.moe_intermediate_size = need(f, {"moe_intermediate_size"}, 1, kBig);
  const int64_t shared = maybe(f, {"moe_num_shared_experts"}, 0, 0, kMaxExperts);
  if (shared > 0) {
    m.num_shared_experts = 1;
    m.shared_expert_intermediate_size = shared * m.moe_intermediate_size;
  }
  m.moe_first_dense_layers = maybe(f, {"moe_layer_start_index"}, 0, 0, kBig);
  if (auto step = f.integer("moe_layer_interval", 1, kBig); step && *step != 1) {
    // ERNIE makes layer i sparse when (i - start) % interval == 0, which memest's step
    // (i + 1) % step == 0 does not express; the released configs say 1.
    fail(f.path_of("moe_layer_interval"), "only 1 (every layer from moe_layer_start_index) is supported",
         MEMEST_ERR_UNSUPPORTED);
  }
  if (auto end = f.integer("moe_layer_end_index", -1, kBig);
      end && *end != -1 && *end != m.num_hidden_layers - 1) {
    fail(f.path_of("moe_layer_end_index"),
         "only -1 or the last layer (num_hidden_layers - 1) is supported: memest keeps dense "
         "layers at the start only",
         MEMEST_ERR_UNSUPPORTED);
  }
}

void read_experts(const JsonFields& f, const Convention& c, memest_model& m) {
  if (c.experts == Experts::Ernie) {
    read_ernie_experts(f, m);
    return;
  }
  if (c.experts == Experts::Dbrx) {
    const json* ffn = f.object("ffn_config");
    if (!ffn) {
      throw Error(MEMEST_ERR_MISSING_FIELD, f.path_of("ffn_config"), f.path_of("ffn_config") + ": missing");
    }
    JsonFields g(*ffn, f.path_of("ffn_config"), Nulls::Absent);
    m.num_experts = need(g, {"moe_num_experts"}, 1, kMaxExperts);
    m.num_experts_per_tok = need(g, {"moe_top_k"}, 1, kMaxExperts);
    m.moe_intermediate_size = need(g, {"ffn_hidden_size"}, 1, kBig);
    m.intermediate_size = m.moe_intermediate_size;
    return;
  }
  m.num_experts = maybe(f, {"num_local_experts", "n_routed_experts", "num_experts"}, 0, 0, kMaxExperts);
  if (m.num_experts == 0) {
    if (c.experts != Experts::None) {
      need(f, {"num_local_experts", "n_routed_experts", "num_experts"}, 1, kMaxExperts);
    }
    // Plain numbers: an expert field without experts is a mistake, not a dense model.
    if (const char* key = f.first_present({"num_experts_per_tok", "moe_intermediate_size",
                                           "n_shared_experts", "num_shared_experts",
                                           "shared_expert_intermediate_size",
                                           "first_k_dense_replace"})) {
      fail(f.path_of(key), "is set but the model has no experts (num_local_experts, "
                           "n_routed_experts or num_experts)");
    }
    return;
  }
  m.num_experts_per_tok = need(
      f, {"num_experts_per_tok", "experts_per_token", "num_experts_per_token", "moe_top_k"}, 1,
      kMaxExperts);
  m.moe_intermediate_size = maybe(f, {"moe_intermediate_size"}, 0, 0, kBig);
  m.num_shared_experts = maybe(f, {"n_shared_experts", "num_shared_experts"}, 0, 0, kMaxExperts);
  m.shared_expert_intermediate_size = maybe(f, {"shared_expert_intermediate_size"}, 0, 0, kBig);
  m.moe_first_dense_layers = maybe(f, {"first_k_dense_replace"}, 0, 0, kBig);
  m.moe_layer_step =
      maybe(f, {"decoder_sparse_step", "interleave_moe_layer_step", "moe_layer_step"}, 1, 0, kBig);
  if (auto freq = f.integer("moe_layer_freq", 0, kBig); freq && *freq > 1) {
    // DeepSeek's own modeling code makes layer i sparse when i % moe_layer_freq == 0, which
    // memest's step (i + 1) % step == 0 does not express; every released config says 1.
    fail(f.path_of("moe_layer_freq"), "only 1 (every layer after first_k_dense_replace) is supported",
         MEMEST_ERR_UNSUPPORTED);
  }
  const int64_t dense_prefix = leading_layers(f, "mlp_only_layers");
  if (dense_prefix > m.moe_first_dense_layers) m.moe_first_dense_layers = dense_prefix;
  if (m.shared_expert_intermediate_size > 0 && m.num_shared_experts == 0) {
    m.num_shared_experts = 1;  // Qwen2-MoE: one shared expert with a sigmoid gate
    m.shared_expert_gate = c.experts == Experts::Qwen;
  }
  if (c.experts == Experts::Llama4) {
    // Llama4TextMoe: routed experts and one shared expert of intermediate_size; the dense
    // layers' MLP is intermediate_size_mlp.
    m.moe_intermediate_size = m.intermediate_size;
    m.num_shared_experts = 1;
    m.shared_expert_intermediate_size = m.intermediate_size;
    m.intermediate_size = maybe(f, {"intermediate_size_mlp"}, m.intermediate_size, 1, kBig);
    const json* listed = f.object("moe_layers");
    // (An out-of-range layer count is refused by validate_model; do not walk it here.)
    if (listed && m.num_hidden_layers <= kMaxLayers) {
      // Newer files list the MoE layers; they must be the ones the step gives.
      bool same = listed->is_array();
      int64_t count = 0;
      for (int64_t i = 0; same && i < m.num_hidden_layers; ++i) {
        if (!is_moe_layer(m, i)) continue;
        same = count < static_cast<int64_t>(listed->size()) && (*listed)[count].is_number_integer() &&
               (*listed)[count].get<int64_t>() == i;
        ++count;
      }
      if (!same || count != static_cast<int64_t>(listed->size())) {
        fail(f.path_of("moe_layers"),
             "differs from the layers interleave_moe_layer_step gives; not supported",
             MEMEST_ERR_UNSUPPORTED);
      }
    }
  }
  if (m.moe_intermediate_size == 0) m.moe_intermediate_size = m.intermediate_size;  // Mixtral
  m.router_bias = c.router_bias;
}

void read_mla(const JsonFields& f, memest_model& m) {
  m.kv_lora_rank = maybe(f, {"kv_lora_rank"}, 0, 0, kBig);
  if (m.kv_lora_rank == 0) {
    // the other latent-attention fields mean nothing without it: refused, not ignored
    for (const char* key : {"q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"}) {
      if (maybe(f, {key}, 0, 0, kBig) != 0) {
        fail(f.path_of(key), "is given without kv_lora_rank, which turns multi-head latent "
                             "attention on: give kv_lora_rank too, or leave it out");
      }
    }
    return;
  }
  m.q_lora_rank = maybe(f, {"q_lora_rank"}, 0, 0, kBig);  // null: a full q_proj
  m.qk_nope_head_dim = need(f, {"qk_nope_head_dim"}, 0, kBig);
  m.qk_rope_head_dim = need(f, {"qk_rope_head_dim"}, 0, kBig);
  m.v_head_dim = need(f, {"v_head_dim"}, 1, kBig);
  m.head_dim = m.qk_nope_head_dim + m.qk_rope_head_dim;
}

// Falcon (modeling_falcon): the fused query_key_value is (a + 2k) * d wide with
// new_decoder_architecture (k = num_kv_heads), h + 2d with multi_query, else 3h; the MLP is
// ffn_hidden_size (4h); one LayerNorm per parallel block, two (ln_attn, ln_mlp) under the new
// decoder architecture, two without parallel_attn.
void read_falcon(const JsonFields& f, memest_model& m) {
  const bool bias = f.boolean("bias").value_or(false);
  m.attention_qkv_bias = m.attention_out_bias = m.mlp_bias = bias;
  // The first Falcon-40B upload (model_type "RefinedWeb") has the new architecture implied.
  const bool legacy_40b = f.string("model_type").value_or("") == "RefinedWeb";
  const bool new_arch = f.boolean("new_decoder_architecture").value_or(legacy_40b);
  const bool parallel = f.boolean("parallel_attn").value_or(true);
  if (new_arch) {
    m.num_key_value_heads = maybe(f, {"num_kv_heads", "n_head_kv"}, m.num_attention_heads, 1, kBig);
  } else {
    m.num_key_value_heads = f.boolean("multi_query").value_or(true) ? 1 : m.num_attention_heads;
  }
  int64_t lns = 2;
  if (parallel) {
    const int64_t in_parallel = maybe(f, {"num_ln_in_parallel_attn"}, new_arch ? 2 : 1, 1, 2);
    lns = in_parallel == 2 ? 2 : 1;
  }
  m.norms_per_layer = static_cast<int32_t>(lns);
  m.intermediate_size = maybe(f, {"ffn_hidden_size"}, 4 * m.hidden_size, 1, kBig);
}

// DBRX (modeling_dbrx): d_model, n_heads, n_layers, attn_config.kv_n_heads.
void read_dbrx_attention(const JsonFields& f, memest_model& m) {
  if (const json* attn = f.object("attn_config")) {
    JsonFields a(*attn, f.path_of("attn_config"), Nulls::Absent);
    m.num_key_value_heads = maybe(a, {"kv_n_heads"}, m.num_attention_heads, 1, kBig);
  }
}

// MiniMax-M2 (modeling_minimax_m2): use_qk_norm with qk_norm_type "per_layer" is one RMSNorm
// over all query heads (a*d) and one over all key heads (k*d); the experts are
// num_local_experts MLPs of intermediate_size (block_sparse_moe w1, w2, w3), the router h x E.
// Its e_score_correction_bias is a buffer, not counted (as DeepSeek-V3's). num_mtp_modules is
// not counted either: the released checkpoints hold no multi-token-prediction weights (their
// tensors are the 62 decoder layers, embedding, norm and head).
void read_minimax(const JsonFields& f, memest_model& m) {
  if (f.boolean("use_qk_norm").value_or(true)) {
    const std::string kind = f.string("qk_norm_type").value_or("per_layer");
    if (kind != "per_layer") {
      fail(f.path_of("qk_norm_type"), "only \"per_layer\" (one norm over all heads) is supported",
           MEMEST_ERR_UNSUPPORTED);
    }
    m.qk_norm = 2;
  }
  if (maybe(f, {"shared_intermediate_size"}, 0, 0, kBig) > 0) {
    fail(f.path_of("shared_intermediate_size"),
         "a MiniMax shared expert is not supported (the released configs say 0)",
         MEMEST_ERR_UNSUPPORTED);
  }
}

// DeepSeek-V3.2's sparse-attention indexer (DeepSeek's inference model.py, class Indexer):
// wq_b q_lora_rank -> index_n_heads x index_head_dim, wk h -> index_head_dim, k_norm a LayerNorm
// of index_head_dim (weight and bias), weights_proj h -> index_n_heads; no biases. index_topk
// (the tokens each query keeps) has no parameters.
void read_indexer(const JsonFields& f, memest_model& m) {
  m.index_n_heads = need(f, {"index_n_heads"}, 1, kBig);
  m.index_head_dim = need(f, {"index_head_dim"}, 1, kBig);
  need(f, {"index_topk"}, 1, kBig);
  if (m.q_lora_rank == 0) {
    fail(f.path_of("q_lora_rank"),
         "must be set: the sparse-attention indexer's wq_b reads the query's low-rank latent",
         MEMEST_ERR_UNSUPPORTED);
  }
}


// ---- hybrid families (model/hybrid.hpp): the layer pattern and the mixer dimensions.

void set_pattern(char (&dst)[MEMEST_MAX_PATTERN_LAYERS + 1], const std::string& src,
                 const std::string& field) {
  if (src.size() > MEMEST_MAX_PATTERN_LAYERS) {
    fail(field, "describes " + std::to_string(src.size()) + " layers; memest holds at most " +
                    std::to_string(MEMEST_MAX_PATTERN_LAYERS),
         MEMEST_ERR_UNSUPPORTED);
  }
  std::memcpy(dst, src.data(), src.size());
  dst[src.size()] = '\0';
}

// A list of strings (layer_types, layers_block_type) mapped to one pattern character each.
std::string pattern_from_names(const JsonFields& f, const char* key,
                               std::initializer_list<std::pair<const char*, char>> names) {
  const json* list = f.object(key);
  if (!list->is_array()) {
    throw Error(MEMEST_ERR_TYPE, f.path_of(key), f.path_of(key) + ": expected a list of layer types");
  }
  if (list->size() > MEMEST_MAX_PATTERN_LAYERS) {
    fail(f.path_of(key), "lists more than " + std::to_string(MEMEST_MAX_PATTERN_LAYERS) + " layers",
         MEMEST_ERR_UNSUPPORTED);
  }
  std::string out;
  for (size_t i = 0; i < list->size(); ++i) {
    const json& v = (*list)[i];
    char c = 0;
    if (v.is_string()) {
      for (const auto& [name, ch] : names)
        if (v.get<std::string>() == name) c = ch;
    }
    if (!c) {
      std::string known;
      for (const auto& [name, ch] : names) known += (known.empty() ? "\"" : ", \"") + std::string(name) + "\"";
      fail(f.path_of(key) + "[" + std::to_string(i) + "]", "unknown layer type; expected " + known,
           MEMEST_ERR_UNSUPPORTED);
    }
    out += c;
  }
  return out;
}

// mamba_d_head may say "auto" (Bamba, GraniteMoeHybrid): d_inner / heads.
int64_t mamba_head_dim_of(const JsonFields& f, const char* key, int64_t inner, int64_t heads) {
  const json* v = f.object(key);
  if (v && v->is_string()) {
    if (v->get<std::string>() != "auto") fail(f.path_of(key), "expected a number or \"auto\"");
    if (heads <= 0 || inner % heads != 0) {
      fail(f.path_of(key), "\"auto\" needs mamba_n_heads to divide mamba_expand x hidden_size");
    }
    return inner / heads;
  }
  return need(f, {key}, 1, kBig);
}

// The Mamba-2 mixer under each family's names: Mamba2Config (num_heads, head_dim, state_size,
// n_groups, conv_kernel, expand, use_bias, use_conv_bias), NemotronHConfig (mamba_num_heads,
// mamba_head_dim, ssm_state_size, n_groups, conv_kernel, use_bias, use_conv_bias), and the
// mamba_* names of BambaConfig, GraniteMoeHybridConfig and FalconH1Config.
void read_mamba2(const JsonFields& f, const std::string& type, memest_model& m) {
  const bool prefixed = type == "bamba" || type == "granitemoehybrid" || type == "falcon_h1";
  if (prefixed) {
    m.mamba_num_heads = need(f, {"mamba_n_heads"}, 1, kBig);
    const int64_t expand = maybe(f, {"mamba_expand"}, 2, 1, kBig);
    int64_t inner = expand * m.hidden_size;
    if (type == "falcon_h1") inner = maybe(f, {"mamba_d_ssm"}, inner, 1, kBig);
    m.mamba_head_dim = mamba_head_dim_of(f, "mamba_d_head", inner, m.mamba_num_heads);
    m.mamba_state_size = need(f, {"mamba_d_state"}, 1, kBig);
    m.mamba_groups = maybe(f, {"mamba_n_groups"}, 1, 1, kBig);
    m.mamba_conv_kernel = maybe(f, {"mamba_d_conv"}, 4, 1, kBig);
    m.mamba_proj_bias = f.boolean("mamba_proj_bias").value_or(false);
    m.mamba_conv_bias = f.boolean("mamba_conv_bias").value_or(true);
    // FalconH1Mixer: the gated RMSNorm only with mamba_rms_norm
    if (type == "falcon_h1") m.mamba_norm = f.boolean("mamba_rms_norm").value_or(false);
    return;
  }
  m.mamba_num_heads = need(f, type == "mamba2" ? std::initializer_list<const char*>{"num_heads"}
                                               : std::initializer_list<const char*>{"mamba_num_heads"},
                           1, kBig);
  m.mamba_head_dim = need(f, type == "mamba2" ? std::initializer_list<const char*>{"head_dim"}
                                              : std::initializer_list<const char*>{"mamba_head_dim"},
                          1, kBig);
  m.mamba_state_size = need(f, {"ssm_state_size", "state_size"}, 1, kBig);
  m.mamba_groups = maybe(f, {"n_groups"}, 1, 1, kBig);
  m.mamba_conv_kernel = maybe(f, {"conv_kernel"}, 4, 1, kBig);
  m.mamba_proj_bias = f.boolean("use_bias").value_or(false);
  m.mamba_conv_bias = f.boolean("use_conv_bias").value_or(true);
}

// Nemotron-H's hybrid_override_pattern (configuration_nemotron_h.py): one block per character,
// each a norm and one mixer: 'M' Mamba-2, '*' attention, '-' MLP, 'E' MoE.
void read_nemotron_h(const JsonFields& f, memest_model& m) {
  const std::string pattern = f.string("hybrid_override_pattern").value_or("");
  if (pattern.empty()) need(f, {"hybrid_override_pattern"}, 1, 1);  // names it as missing
  std::string mixers, mlps;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c != 'M' && c != '*' && c != '-' && c != 'E') {
      fail(f.path_of("hybrid_override_pattern"),
           "layer " + std::to_string(i) + " is not one of 'M' (Mamba-2), '*' (attention), '-' "
           "(MLP), 'E' (MoE)",
           MEMEST_ERR_UNSUPPORTED);
    }
    mixers += c == 'M' ? kMixerMamba2 : c == '*' ? kMixerAttention : kMixerNone;
    mlps += c == '-' ? kMlpDense : c == 'E' ? kMlpMoe : kMlpNone;
  }
  set_pattern(m.mixer_pattern, mixers, f.path_of("hybrid_override_pattern"));
  set_pattern(m.mlp_pattern, mlps, f.path_of("hybrid_override_pattern"));
  if (auto b = f.boolean("mlp_bias")) m.mlp_bias = *b;
  if (mixers.find(kMixerMamba2) != std::string::npos) read_mamba2(f, "nemotron_h", m);
  if (mlps.find(kMlpMoe) != std::string::npos) {
    // NemotronHMOE (modeling_nemotron_h.py): n_routed_experts non-gated experts of
    // moe_intermediate_size, one shared expert of moe_shared_expert_intermediate_size, a
    // router h x E (its e_score_correction_bias a buffer, not counted).
    m.num_experts = need(f, {"n_routed_experts"}, 1, kMaxExperts);
    m.num_experts_per_tok = need(f, {"num_experts_per_tok"}, 1, kMaxExperts);
    m.moe_intermediate_size = need(f, {"moe_intermediate_size"}, 1, kBig);
    m.num_shared_experts = maybe(f, {"n_shared_experts"}, 1, 0, kMaxExperts);
    m.shared_expert_intermediate_size =
        maybe(f, {"moe_shared_expert_intermediate_size"}, m.moe_intermediate_size, 1, kBig);
  }
}

// Qwen3-Next (configuration_qwen3_next.py): layer_types "linear_attention" (gated DeltaNet) or
// "full_attention" (gated attention), else every full_attention_interval-th layer attention;
// every layer has the MoE MLP unless listed in mlp_only_layers (read with the experts).
void read_qwen3_next(const JsonFields& f, memest_model& m) {
  std::string mixers;
  if (f.has("layer_types")) {
    mixers = pattern_from_names(f, "layer_types", {{"linear_attention", kMixerDeltaNet},
                                                   {"full_attention", kMixerAttention}});
  } else {
    const int64_t interval = maybe(f, {"full_attention_interval"}, 4, 1, kBig);
    for (int64_t i = 0; i < m.num_hidden_layers && i < MEMEST_MAX_PATTERN_LAYERS + 1; ++i) {
      mixers += (i + 1) % interval == 0 ? kMixerAttention : kMixerDeltaNet;
    }
  }
  set_pattern(m.mixer_pattern, mixers, f.path_of("layer_types"));
  m.attention_output_gate = 1;
  m.linear_key_heads = need(f, {"linear_num_key_heads"}, 1, kBig);
  m.linear_value_heads = need(f, {"linear_num_value_heads"}, 1, kBig);
  m.linear_key_head_dim = need(f, {"linear_key_head_dim"}, 1, kBig);
  m.linear_value_head_dim = need(f, {"linear_value_head_dim"}, 1, kBig);
  m.linear_conv_kernel = maybe(f, {"linear_conv_kernel_dim"}, 4, 1, kBig);
}

// A Mamba-1 mixer's dt_rank under `key`: an integer, or "auto" (and absent) for
// ceil(hidden / 16) (JambaConfig, MambaConfig, FalconMambaConfig).
int64_t dt_rank_of(const JsonFields& f, const char* key, int64_t hidden) {
  const json* rank = f.object(key);
  const bool automatic = !rank || (rank->is_string() && rank->get<std::string>() == "auto");
  if (rank && rank->is_string() && !automatic) fail(f.path_of(key), "must be a positive integer or \"auto\"");
  return automatic ? (hidden + 15) / 16 : need(f, {key}, 1, kBig);
}

// A Mamba-1 mixer of d_inner `inner` under a family's key names (JambaConfig's mamba_*,
// MambaConfig's plain ones; the defaults are both classes'): its channels held as heads of
// dimension 1 in one B/C group; `norms`: RMSNorms with weights on dt, B and C (Jamba's).
struct Mamba1Keys {
  const char* state;
  const char* conv;
  const char* dt_rank;
  const char* proj_bias;
  const char* conv_bias;
};
void read_mamba1_mixer(const JsonFields& f, memest_model& m, int64_t inner, const Mamba1Keys& k,
                       bool norms) {
  m.mamba_num_heads = inner;
  m.mamba_head_dim = 1;
  m.mamba_groups = 1;
  m.mamba_state_size = maybe(f, {k.state}, 16, 1, kBig);
  m.mamba_conv_kernel = maybe(f, {k.conv}, 4, 1, kBig);
  m.mamba_dt_rank = dt_rank_of(f, k.dt_rank, m.hidden_size);
  m.mamba_proj_bias = f.boolean(k.proj_bias).value_or(false);
  m.mamba_conv_bias = f.boolean(k.conv_bias).value_or(true);
  m.mamba_norm = norms ? 1 : 0;
}

// Mamba and FalconMamba (configuration_mamba.py MambaConfig, configuration_falcon_mamba.py):
// every layer a norm and a Mamba-1 mixer (MambaMixer: in_proj h x 2 d_inner, conv1d, x_proj,
// dt_proj, A_log, D, out_proj; use_bias on in_proj and out_proj, use_conv_bias), no MLP.
// d_inner is the file's intermediate_size, or expand x hidden without it (the config class
// sets expand x hidden first, and a saved intermediate_size then overrides it: FalconMamba-7B
// saves expand 16 with intermediate_size 8192). FalconMamba's RMSNorms on B, C and dt carry
// no weight (rms_forward): no parameters, as Mamba's absent ones (mamba_norm 0); their saved
// fp32 tensors, (dt_rank + 2 state) wide per token, are left out of the activations.
void read_mamba1_lm(const JsonFields& f, memest_model& m) {
  const int64_t layers = std::min<int64_t>(m.num_hidden_layers, MEMEST_MAX_PATTERN_LAYERS + 1);
  const int64_t inner = maybe(f, {"intermediate_size"}, maybe(f, {"expand"}, 2, 1, kBig) * m.hidden_size, 1, kBig);
  read_mamba1_mixer(f, m, inner, {"state_size", "conv_kernel", "time_step_rank", "use_bias", "use_conv_bias"}, false);
  // no attention: its fields mirror the mixer's channels, as Mamba2's do its heads
  m.num_attention_heads = m.num_key_value_heads = inner;
  m.head_dim = 1;
  set_pattern(m.mixer_pattern, std::string(static_cast<size_t>(layers), kMixerMamba1), f.path_of("num_hidden_layers"));
  set_pattern(m.mlp_pattern, std::string(static_cast<size_t>(layers), kMlpNone), f.path_of("num_hidden_layers"));
}

// Jamba (configuration_jamba.py JambaConfig, its defaults): layer i is attention when
// i % attn_layer_period == attn_layer_offset, else Mamba-1; its MLP is the MoE of num_experts
// MLPs of intermediate_size (a router without bias) when i % expert_layer_period ==
// expert_layer_offset and num_experts > 1, else the dense MLP. The Mamba-1 mixer
// (JambaMambaMixer): d_inner = mamba_expand x hidden, mamba_d_state, mamba_d_conv, mamba_dt_rank
// ("auto": ceil(hidden / 16)), mamba_conv_bias, mamba_proj_bias, and RMSNorms on dt, B and C.
void read_jamba(const JsonFields& f, memest_model& m) {
  const int64_t layers = std::min<int64_t>(m.num_hidden_layers, MEMEST_MAX_PATTERN_LAYERS + 1);
  const int64_t attn_period = maybe(f, {"attn_layer_period"}, 8, 1, kBig);
  const int64_t attn_offset = maybe(f, {"attn_layer_offset"}, 4, 0, kBig);
  const int64_t expert_period = maybe(f, {"expert_layer_period"}, 2, 1, kBig);
  const int64_t expert_offset = maybe(f, {"expert_layer_offset"}, 1, 0, kBig);
  // JambaConfig asserts both offsets lie within their periods
  if (attn_offset >= attn_period) {
    fail(f.path_of("attn_layer_offset"), "must be below attn_layer_period=" + std::to_string(attn_period));
  }
  if (expert_offset >= expert_period) {
    fail(f.path_of("expert_layer_offset"),
         "must be below expert_layer_period=" + std::to_string(expert_period));
  }
  const int64_t experts = maybe(f, {"num_experts"}, 16, 1, kMaxExperts);
  std::string mixers, mlps;
  for (int64_t i = 0; i < layers; ++i) {
    mixers += i % attn_period == attn_offset ? kMixerAttention : kMixerMamba1;
    mlps += experts > 1 && i % expert_period == expert_offset ? kMlpMoe : kMlpDense;
  }
  if (experts > 1) {
    m.num_experts = experts;
    m.num_experts_per_tok = maybe(f, {"num_experts_per_tok"}, 2, 1, kMaxExperts);
    m.moe_intermediate_size = m.intermediate_size;
  }
  read_mamba1_mixer(f, m, maybe(f, {"mamba_expand"}, 2, 1, kBig) * m.hidden_size,
                    {"mamba_d_state", "mamba_d_conv", "mamba_dt_rank", "mamba_proj_bias", "mamba_conv_bias"},
                    true);
  set_pattern(m.mixer_pattern, mixers, f.path_of("num_hidden_layers"));
  set_pattern(m.mlp_pattern, mlps, f.path_of("num_hidden_layers"));
}

// Kimi Linear (configuration_kimi.py KimiLinearConfig, modeling_kimi.py): layer i (counted from
// 1 in linear_attn_config) is Kimi Delta Attention when listed in kda_layers, else multi-head
// latent attention (read_mla); linear_attn_config's num_heads heads of head_dim for keys and
// values alike, short_conv_kernel_size. The MLPs are DeepSeek-V3's (read_experts).
void read_kimi_linear(const JsonFields& outer, memest_model& m) {
  const json* config = outer.object("linear_attn_config");
  if (!config || !config->is_object()) {
    throw Error(config ? MEMEST_ERR_TYPE : MEMEST_ERR_MISSING_FIELD, outer.path_of("linear_attn_config"),
                outer.path_of("linear_attn_config") +
                    (config ? ": expected an object" : ": missing (it lists the KDA layers)"));
  }
  JsonFields f(*config, outer.path_of("linear_attn_config"), Nulls::Absent);
  const int64_t layers = std::min<int64_t>(m.num_hidden_layers, MEMEST_MAX_PATTERN_LAYERS + 1);
  std::string mixers(static_cast<size_t>(layers), kMixerAttention);
  const json* kda = f.object("kda_layers");
  if (!kda || !kda->is_array()) {
    throw Error(kda ? MEMEST_ERR_TYPE : MEMEST_ERR_MISSING_FIELD, f.path_of("kda_layers"),
                f.path_of("kda_layers") + (kda ? ": expected a list of layer numbers" : ": missing"));
  }
  for (size_t k = 0; k < kda->size(); ++k) {
    const json& v = (*kda)[k];
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > layers) {
      fail(f.path_of("kda_layers") + "[" + std::to_string(k) + "]",
           "must be a layer number from 1 to num_hidden_layers (Kimi Linear counts from 1)");
    }
    mixers[static_cast<size_t>(v.get<int64_t>() - 1)] = kMixerKda;
  }
  const int64_t heads = need(f, {"num_heads"}, 1, kBig);
  const int64_t dim = need(f, {"head_dim"}, 1, kBig);
  const int64_t kernel = maybe(f, {"short_conv_kernel_size"}, 4, 1, kBig);
  if (!kda->empty()) {  // (the fields mean nothing without a KDA layer)
    m.linear_key_heads = m.linear_value_heads = heads;
    m.linear_key_head_dim = m.linear_value_head_dim = dim;
    m.linear_conv_kernel = kernel;
  }
  m.head_dim = 0;  // the config's head_dim (hidden / heads) is not the latent attention's
  set_pattern(m.mixer_pattern, mixers, outer.path_of("num_hidden_layers"));
}

// Bamba (attn_layer_indices), GraniteMoeHybrid (layer_types "mamba"/"attention"), Falcon-H1
// (every layer attention beside Mamba-2), Mamba2 (every layer Mamba-2 alone, no MLP).
void read_hybrid(const JsonFields& f, const std::string& type, memest_model& m) {
  if (type == "nemotron_h") return read_nemotron_h(f, m);
  if (type == "jamba") return read_jamba(f, m);
  if (type == "mamba" || type == "falcon_mamba") return read_mamba1_lm(f, m);
  if (type == "kimi_linear") return read_kimi_linear(f, m);
  if (type == "qwen3_next") return read_qwen3_next(f, m);
  const int64_t layers = std::min<int64_t>(m.num_hidden_layers, MEMEST_MAX_PATTERN_LAYERS + 1);
  std::string mixers;
  if (type == "falcon_h1") {
    mixers.assign(static_cast<size_t>(layers), kMixerParallel);
  } else if (type == "mamba2") {
    mixers.assign(static_cast<size_t>(layers), kMixerMamba2);
    set_pattern(m.mlp_pattern, std::string(static_cast<size_t>(layers), kMlpNone), f.path_of("num_hidden_layers"));
  } else if (type == "bamba") {
    mixers.assign(static_cast<size_t>(layers), kMixerMamba2);
    const json* list = f.object("attn_layer_indices");
    if (list && !list->is_array()) {
      throw Error(MEMEST_ERR_TYPE, f.path_of("attn_layer_indices"),
                  f.path_of("attn_layer_indices") + ": expected a list of layer indices");
    }
    for (size_t k = 0; list && k < list->size(); ++k) {
      const json& v = (*list)[k];
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= layers) {
        fail(f.path_of("attn_layer_indices") + "[" + std::to_string(k) + "]",
             "must be a layer index below num_hidden_layers");
      }
      mixers[static_cast<size_t>(v.get<int64_t>())] = kMixerAttention;
    }
  } else if (type == "granitemoehybrid") {
    mixers = f.has("layer_types")
                 ? pattern_from_names(f, "layer_types", {{"mamba", kMixerMamba2}, {"attention", kMixerAttention}})
                 : std::string(static_cast<size_t>(layers), kMixerAttention);
    // GraniteMoeHybridMoE / GraniteMoeSharedMLP: num_local_experts gated experts of
    // intermediate_size (input_linear 2f x h, output_linear h x f), a router h x E without a
    // bias, and a shared gated MLP of shared_intermediate_size; without experts only the
    // shared MLP (a dense model's MLP).
    const int64_t experts = maybe(f, {"num_local_experts"}, 0, 0, kMaxExperts);
    const int64_t shared = maybe(f, {"shared_intermediate_size"}, 0, 0, kBig);
    if (experts > 0) {
      m.num_experts = experts;
      m.num_experts_per_tok = need(f, {"num_experts_per_tok"}, 1, kMaxExperts);
      m.moe_intermediate_size = m.intermediate_size;
      if (shared > 0) {
        m.num_shared_experts = 1;
        m.shared_expert_intermediate_size = shared;
      }
    } else {
      if (shared == 0) need(f, {"shared_intermediate_size"}, 1, kBig);
      m.intermediate_size = shared;
    }
  }
  if (mixers.find(kMixerMamba2) != std::string::npos || mixers.find(kMixerParallel) != std::string::npos) {
    read_mamba2(f, type, m);
  }
  // Mamba2 has no attention: its attention fields mirror the mixer's heads (the layout's
  // head checks then hold the Mamba heads to tp, as Megatron's MambaMixer does).
  if (type == "mamba2") m.num_attention_heads = m.num_key_value_heads = m.mamba_num_heads;
  set_pattern(m.mixer_pattern, mixers, f.path_of("num_hidden_layers"));
}


// memest's own names for a hybrid model (model/hybrid.hpp), as a response's model object
// writes them.
void read_hybrid_fields(const JsonFields& f, memest_model& m) {
  for (auto [key, dst] : {std::pair<const char*, char*>{"mixer_pattern", m.mixer_pattern},
                          std::pair<const char*, char*>{"mlp_pattern", m.mlp_pattern}}) {
    if (auto p = f.string(key)) {
      if (p->size() > MEMEST_MAX_PATTERN_LAYERS || p->find('\0') != std::string::npos) {
        fail(f.path_of(key), "must be at most " + std::to_string(MEMEST_MAX_PATTERN_LAYERS) +
                                 " layer characters");
      }
      std::memcpy(dst, p->data(), p->size());
      dst[p->size()] = '\0';
    }
  }
  const std::pair<const char*, int64_t*> dims[] = {
      {"mamba_num_heads", &m.mamba_num_heads}, {"mamba_head_dim", &m.mamba_head_dim},
      {"mamba_state_size", &m.mamba_state_size}, {"mamba_groups", &m.mamba_groups},
      {"mamba_conv_kernel", &m.mamba_conv_kernel}, {"linear_key_heads", &m.linear_key_heads},
      {"linear_value_heads", &m.linear_value_heads},
      {"linear_key_head_dim", &m.linear_key_head_dim},
      {"linear_value_head_dim", &m.linear_value_head_dim},
      {"linear_conv_kernel", &m.linear_conv_kernel}, {"mamba_dt_rank", &m.mamba_dt_rank}};
  for (const auto& [key, dst] : dims) *dst = maybe(f, {key}, *dst, 0, kBig);
  const std::pair<const char*, int32_t*> flags[] = {{"mamba_proj_bias", &m.mamba_proj_bias},
                                                    {"mamba_conv_bias", &m.mamba_conv_bias},
                                                    {"mamba_norm", &m.mamba_norm},
                                                    {"attention_output_gate", &m.attention_output_gate}};
  for (const auto& [key, dst] : flags)
    if (auto b = f.boolean(key)) *dst = *b;
}

// Fields Gemma 3's text_config leaves to Gemma3TextConfig's defaults.
void gemma3_text_defaults(const JsonFields& f, memest_model& m) {
  if (!f.has("vocab_size")) m.vocab_size = 262208;
  if (!f.has("head_dim")) m.head_dim = 256;
}

}  // namespace

std::string supported_model_types() {
  std::string s;
  for (const auto& c : conventions()) s += (s.empty() ? "" : ", ") + std::string(c.model_type);
  return s;
}

memest_model model_from_json(const json& object, const std::string& prefix) {
  JsonFields outer(object, prefix, Nulls::Absent);
  memest_model m = default_model();
  if (auto name = outer.string("name")) copy_name(m.name, *name);
  else if (auto path = outer.string("_name_or_path");
           path && std::any_of(path->begin(), path->end(), [](unsigned char ch) { return std::isalnum(ch); })) {
    copy_name(m.name, *path);  // (a save_pretrained from "./" names nothing: custom-<type> below)
  }

  // A bare count: only the model-states mode accepts it (validate_model decides).
  const bool has_dims = outer.first_present({"hidden_size", "n_embd", "n_embed", "d_model"});
  if (!has_dims && outer.has("num_parameters") && !outer.has("text_config")) {
    m.num_parameters = *outer.number("num_parameters", 1, kMaxBareParameters);
    if (m.name[0] == '\0') copy_name(m.name, "custom");
    return m;
  }

  std::string type = resolve_model_type(outer);
  const Convention* c = type.empty() ? find_convention("llama") : find_convention(type);
  // A multimodal config: the language model is its text_config; the vision tower and the
  // multimodal projector are left out (vision_excluded).
  const json* text = nullptr;
  if (c->text_of) {
    text = outer.object("text_config");
    if (!text) {
      throw Error(MEMEST_ERR_MISSING_FIELD, outer.path_of("text_config"),
                  outer.path_of("text_config") + ": missing (a " + type +
                      " config holds its language model there)");
    }
    m.vision_excluded = 1;
  }
  JsonFields f = text ? JsonFields(*text, outer.path_of("text_config"), Nulls::Absent) : outer;
  const std::string outer_type = type;  // the name a multimodal model is known by
  if (text) {
    const auto inner_type = f.string("model_type");
    type = inner_type && find_convention(*inner_type) && !find_convention(*inner_type)->text_of
               ? *inner_type
               : c->text_of;
    c = find_convention(type);
  }
  const bool plain = type.empty();  // plain numbers: Llama conventions, or GPT with "family"
  if (plain) {
    auto family = f.choice("family", {"llama", "gpt"});
    if (family && *family == "gpt") c = find_convention("gpt2");
  }
  if (m.name[0] == '\0') copy_name(m.name, "custom-" + std::string(plain ? c->model_type : outer_type));

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
  // memest's own key, in any config: whether the model code the run uses casts its logits to
  // fp32 before the loss. The family's Hugging Face class decides by default; a stack that runs
  // its own model code says false (NeMo AutoModel's gpt-oss returns bf16 logits to its
  // MaskedCrossEntropy(fp32_upcast=False); torchtitan's models leave the cast to the loss).
  if (auto b = outer.boolean("logits_fp32")) m.logits_fp32 = *b;
  m.qk_norm = c->qk_norm;
  m.fused_gate_up = c->fused_gate_up;
  m.attention_sinks = c->attention_sinks;

  m.hidden_size = need(f, {"hidden_size", "n_embd", "n_embed", "d_model"}, 1, kBig);
  m.num_hidden_layers = need(f, {"num_hidden_layers", "n_layer", "num_layers", "n_layers"}, 1, kBig);
  if (type == "gemma3_text") {  // Gemma3TextConfig defaults for what text_config leaves out
    m.num_attention_heads = maybe(f, {"num_attention_heads"}, 8, 1, kBig);
  } else if (type == "mamba" || type == "falcon_mamba") {
    m.num_attention_heads = 1;  // no attention: read_mamba1_lm mirrors the mixer's channels
  } else {
    m.num_attention_heads = need(f, {"num_attention_heads", "n_head", "num_heads", "n_heads"}, 1, kBig);
  }
  const bool multi_query = f.boolean("multi_query").value_or(c->multi_query_default);
  m.num_key_value_heads =
      multi_query ? 1
                  : maybe(f, {"num_key_value_heads"},
                          type == "gemma3_text" ? 4 : m.num_attention_heads, 1, kBig);
  m.head_dim = maybe(f, {"head_dim"}, 0, 0, kBig);
  if (type == "gemma3_text") gemma3_text_defaults(f, m);
  // A GeLU MLP without an explicit width is 4h (GPT-2's n_inner = null, BLOOM, GPT-Neo).
  m.intermediate_size =
      maybe(f, {"intermediate_size", "ffn_dim", "n_inner"}, c->gated_mlp ? 0 : 4 * m.hidden_size,
            1, kBig);
  if (m.intermediate_size == 0 && c->experts != Experts::Dbrx) need(f, {"intermediate_size"}, 1, kBig);
  if (m.vocab_size == 0) m.vocab_size = need(f, {"vocab_size"}, 1, kBig);
  m.max_position_embeddings =
      maybe(f, {"max_position_embeddings", "n_positions", "n_ctx", "max_seq_len"}, 0, 0, kBig);
  if (c->learned_positions) {
    if (m.max_position_embeddings == 0) need(f, {"max_position_embeddings", "n_positions"}, 1, kBig);
    m.learned_position_rows = m.max_position_embeddings + c->position_offset;
  }
  m.tie_word_embeddings = f.boolean("tie_word_embeddings").value_or(c->tied_default);

  // Per-file switches that change shapes.
  if (auto b = f.boolean("attention_bias")) {  // Llama: q, k, v and o; GPT-NeoX: all
    m.attention_qkv_bias = *b;
    m.attention_out_bias = c->attention_bias_sets_out && *b;
  }
  if (auto b = f.boolean("mlp_bias")) m.mlp_bias = *b;
  if (auto b = f.boolean("enable_bias")) {  // OPT
    m.attention_qkv_bias = m.attention_out_bias = m.mlp_bias = *b;
  }
  if (type == "opt") {
    m.final_norm = f.boolean("do_layer_norm_before").value_or(true) &&
                   !f.boolean("_remove_final_layer_norm").value_or(false);
    if (auto proj = f.integer("word_embed_proj_dim", 1, kBig); proj && *proj != m.hidden_size) {
      fail(f.path_of("word_embed_proj_dim"),
           "OPT embedding projections (word_embed_proj_dim != hidden_size) are not supported",
           MEMEST_ERR_UNSUPPORTED);
    }
  }
  if (type == "qwen2_moe") {
    if (auto b = f.boolean("qkv_bias")) m.attention_qkv_bias = *b;
  }
  if (type == "starcoder2") {
    if (auto b = f.boolean("use_bias")) m.attention_qkv_bias = m.attention_out_bias = m.mlp_bias = *b;
  }
  if (type == "internlm2") {  // "bias" on wqkv and wo; the MLP has none
    if (auto b = f.boolean("bias")) m.attention_qkv_bias = m.attention_out_bias = *b;
  }
  if (type == "cohere" && f.boolean("use_qk_norm").value_or(false)) m.qk_norm = 2;
  if (type == "glm4_moe" && f.boolean("use_qk_norm").value_or(false)) m.qk_norm = 1;  // head_dim wide
  if (type == "seed_oss") {  // SeedOssAttention: o_proj's bias is attention_out_bias
    if (auto b = f.boolean("attention_out_bias")) m.attention_out_bias = *b;
  }
  if (type == "ernie4_5_moe") {  // use_bias: q/k/v/o and the MLPs
    if (auto b = f.boolean("use_bias")) m.attention_qkv_bias = m.attention_out_bias = m.mlp_bias = *b;
  }
  if (type == "phi" && f.boolean("qk_layernorm").value_or(false)) {
    fail(f.path_of("qk_layernorm"),
         "Phi's per-head q/k LayerNorms (weight and bias) are not supported (phi-1, phi-1.5 and "
         "phi-2 say false)",
         MEMEST_ERR_UNSUPPORTED);
  }
  if (type == "minimax_m2") read_minimax(f, m);
  if (type == "falcon") read_falcon(f, m);
  if (type == "dbrx") read_dbrx_attention(f, m);
  if (c->mla || plain) read_mla(f, m);
  if (c->experts != Experts::None || plain) read_experts(f, *c, m);
  if (c->experts != Experts::None || c->mla || plain) {
    m.mtp_layers = maybe(f, {"num_nextn_predict_layers"}, 0, 0, kBig);
  }
  if (type == "nemotron_h" || type == "qwen3_next" || type == "falcon_h1" || type == "bamba" ||
      type == "granitemoehybrid" || type == "mamba2" || type == "jamba" || type == "kimi_linear" ||
      type == "mamba" || type == "falcon_mamba") {
    read_hybrid(f, type, m);
  }
  if (type == "deepseek_v32") {
    read_indexer(f, m);
  } else if (plain) {  // memest's own model object (a response's, given back)
    m.index_n_heads = maybe(f, {"index_n_heads"}, 0, 0, kBig);
    m.index_head_dim = maybe(f, {"index_head_dim"}, 0, 0, kBig);
  }
  // Gemma 2's logit soft-capping (models/gemma2/modeling_gemma2.py Gemma2ForCausalLM.forward:
  // logits / cap, tanh, * cap); Gemma 3 writes null
  if (auto cap = f.number("final_logit_softcapping", 0, 1e6)) m.final_logit_softcapping = *cap;
  if (plain) {
    // memest's own names for what Hugging Face files say through their model_type.
    if (auto b = f.boolean("router_bias")) m.router_bias = *b;
    if (auto b = f.boolean("shared_expert_gate")) m.shared_expert_gate = *b;
    if (auto b = f.boolean("attention_sinks")) m.attention_sinks = *b;
    if (auto b = f.boolean("fused_gate_up")) m.fused_gate_up = *b;
    if (auto b = f.boolean("gated_mlp")) m.gated_mlp = *b;
    if (auto q = f.choice("qk_norm", {"none", "head", "full"})) {
      m.qk_norm = *q == "head" ? 1 : *q == "full" ? 2 : 0;
    }
    read_hybrid_fields(f, m);
  }
  if (auto fam = f.choice("family", {"llama", "gpt"})) {  // memest's own override
    m.family = *fam == "gpt" ? MEMEST_FAMILY_GPT : MEMEST_FAMILY_LLAMA;
  }
  return m;
}

}  // namespace memest
