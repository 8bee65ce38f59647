// Hugging Face config.json → model: each family's conventions give the real shapes.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "helpers.hpp"
#include "requests.hpp"
#include "model/tensors.hpp"

namespace {

memest_model from_config(const char* text) {
  memest_model m = memest_test::sized<memest_model>();
  const memest_status st = memest_model_from_config_json(text, &m);
  INFO(memest_last_error());
  REQUIRE(st == MEMEST_OK);
  return m;
}

double params(const memest_model& m) {
  memest_param_count c = memest_test::sized<memest_param_count>();
  REQUIRE(memest_model_parameter_count(&m, &c) == MEMEST_OK);
  return c.total;
}

}  // namespace

TEST_CASE("A full Llama config.json, with fields memest does not use, reads as Llama-3.1-8B") {
  const memest_model m = from_config(R"({
    "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096,
    "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 131072,
    "mlp_bias": false, "model_type": "llama", "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "pretraining_tp": 1,
    "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 8.0, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "transformers_version": "4.43.0.dev0", "use_cache": true, "vocab_size": 128256})");
  CHECK(m.family == MEMEST_FAMILY_LLAMA);
  CHECK(m.num_key_value_heads == 8);
  CHECK(params(m) == 8030261248.0);
}

TEST_CASE("Model type conventions") {
  SUBCASE("Qwen2 has q/k/v biases although its file does not say so") {
    const memest_model m = from_config(R"({"model_type": "qwen2", "hidden_size": 3584,
      "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
      "num_key_value_heads": 4, "vocab_size": 152064, "tie_word_embeddings": false})");
    CHECK(m.attention_qkv_bias == 1);
    CHECK(params(m) == 7615616512.0);  // Qwen2.5-7B
  }
  SUBCASE("GPT-2: n_embd names, n_inner null means 4h, learned positions, tied by default") {
    const memest_model m = from_config(R"({"model_type": "gpt2", "n_embd": 768, "n_layer": 12,
      "n_head": 12, "n_inner": null, "n_positions": 1024, "vocab_size": 50257})");
    CHECK(m.family == MEMEST_FAMILY_GPT);
    CHECK(m.intermediate_size == 3072);
    CHECK(m.tie_word_embeddings == 1);
    CHECK(m.learned_position_rows == 1024);
    CHECK(params(m) == 124439808.0);  // GPT-2 small
  }
  SUBCASE("GPT-BigCode multi_query: one key/value head") {
    memest_model m = memest_test::sized<memest_model>();
    REQUIRE(memest_model_from_preset("gpt-bigcode-santacoder", &m) == MEMEST_OK);
    CHECK(m.num_key_value_heads == 1);
    CHECK(params(m) == 1124886528.0);
  }
  SUBCASE("Gemma: head_dim differs from hidden/heads") {
    memest_model m = memest_test::sized<memest_model>();
    REQUIRE(memest_model_from_preset("gemma-7b", &m) == MEMEST_OK);
    CHECK(m.head_dim == 256);
    CHECK(params(m) == 8537680896.0);
  }
  SUBCASE("BLOOM: ALiBi (no positions), LayerNorm after the embedding") {
    memest_model m = memest_test::sized<memest_model>();
    REQUIRE(memest_model_from_preset("bloom-1b1", &m) == MEMEST_OK);
    CHECK(m.embedding_norm == 1);
    CHECK(m.learned_position_rows == 0);
    CHECK(params(m) == 1065314304.0);
  }
  SUBCASE("CodeGen: one LayerNorm per layer, untied head with bias") {
    memest_model m = memest_test::sized<memest_model>();
    REQUIRE(memest_model_from_preset("codegen-2b-nl", &m) == MEMEST_OK);
    CHECK(m.norms_per_layer == 1);
    CHECK(m.lm_head_bias == 1);
    CHECK(params(m) == 2779356160.0);
  }
  SUBCASE("architectures alone identifies the type") {
    const memest_model m = from_config(R"({"architectures": ["GPTNeoXForCausalLM"],
      "hidden_size": 6144, "intermediate_size": 24576, "num_hidden_layers": 44,
      "num_attention_heads": 64, "vocab_size": 50432, "max_position_embeddings": 2048})");
    CHECK(m.family == MEMEST_FAMILY_GPT);
    CHECK(params(m) == 20554567680.0);  // GPT-NeoX-20B
  }
  SUBCASE("Plain numbers without model_type: Llama conventions, or GPT with family") {
    const memest_model llama = from_config(R"({"hidden_size": 4096, "intermediate_size": 11008,
      "num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 32000})");
    CHECK(params(llama) == 6738415616.0);  // Llama-2-7B
    const memest_model gpt = from_config(R"({"family": "gpt", "hidden_size": 768,
      "num_hidden_layers": 12, "num_attention_heads": 12, "vocab_size": 50257,
      "max_position_embeddings": 1024, "name": "my-gpt"})");
    CHECK(gpt.family == MEMEST_FAMILY_GPT);
    CHECK(std::strcmp(gpt.name, "my-gpt") == 0);
    CHECK(params(gpt) == 124439808.0);
  }
}

TEST_CASE("Unsupported and malformed configs are refused with the field named") {
  memest_model m = memest_test::sized<memest_model>();
  memest_model_init(&m, sizeof m);
  CHECK(memest_model_from_config_json(R"({"model_type": "rwkv", "hidden_size": 4096})", &m) ==
        MEMEST_ERR_UNSUPPORTED);
  CHECK(std::string(memest_last_error_field()) == "model.model_type");
  // The refusal lists the supported families.
  CHECK(std::string(memest_last_error()).find("deepseek_v3") != std::string::npos);
  CHECK(memest_model_from_config_json(R"({"architectures": ["XForCausalLM"], "hidden_size": 64})",
                                      &m) == MEMEST_ERR_UNSUPPORTED);
  CHECK(std::string(memest_last_error_field()) == "model.architectures");
  CHECK(memest_model_from_config_json(R"({"model_type": "llama", "hidden_size": 4096})", &m) ==
        MEMEST_ERR_MISSING_FIELD);
  CHECK(std::string(memest_last_error_field()) == "model.num_hidden_layers");
  CHECK(memest_model_from_config_json("{not json", &m) == MEMEST_ERR_PARSE);
  CHECK(memest_model_from_config_json(R"({"model_type": "llama", "hidden_size": "4096"})", &m) ==
        MEMEST_ERR_TYPE);
  CHECK(std::string(memest_last_error_field()) == "model.hidden_size");
  CHECK(m.hidden_size == 0);  // untouched on failure
}

TEST_CASE("Pipeline stages hold every parameter exactly once (tp = 1), tied copy aside") {
  for (const char* id : {"llama-3.1-8b", "gpt2", "opt-1.3b", "bloom-1b1", "codegen-2b-nl", "qwen3-8b",
                         "gemma-2-9b", "gemma-3-1b", "phi-3.5-mini", "olmo-2-7b", "starcoder2-7b",
                         "falcon-7b", "command-r", "glm-4-9b", "internlm2.5-7b"}) {
    CAPTURE(id);
    memest_test::Pretrain p(id, "h100-80gb");
    p.r.gpus = 4;
    p.r.tp = 1;
    p.r.pp = 4;
    p.r.uneven_pipeline = 1;  // Gemma 2's 42 and Gemma 3 1B's 26 layers: lighter end stages
    p.r.seq_len = 1024;
    memest_pretrain_result res = memest_test::sized<memest_pretrain_result>();
    memest_stage stages[4];
    REQUIRE(p.run(res, stages, 4) == MEMEST_OK);
    double sum = 0;
    for (const auto& s : stages) sum += s.parameters;
    memest_param_count c = memest_test::sized<memest_param_count>();
    REQUIRE(memest_model_parameter_count(&p.model, &c) == MEMEST_OK);
    const double tied_copy = p.model.tie_word_embeddings
                                 ? static_cast<double>(p.model.vocab_size * p.model.hidden_size)
                                 : 0.0;
    CHECK(sum == c.total + tied_copy);
  }
}

TEST_CASE("The tensors LLMem sees add up to the parameter count, for every preset") {
  for (uint32_t i = 0; i < memest_model_preset_count(); ++i) {
    const char* id = memest_model_preset_id(i);
    CAPTURE(id);
    memest_model m = memest_test::sized<memest_model>();
    REQUIRE(memest_model_from_preset(id, &m) == MEMEST_OK);
    double sum = 0;
    for (const auto& t : memest::parameter_tensors(m)) sum += t.numel;
    CHECK(sum == params(m));
  }
}
