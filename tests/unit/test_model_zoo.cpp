// Parameter counts of the 2024-26 families, derived by hand from the tensors each
// transformers modeling_<family>.py creates (the arithmetic is in the comments), and the
// mixture-of-experts, multi-head latent attention and multi-token-prediction fields.
#include <doctest/doctest.h>

#include <string>

#include "helpers.hpp"
#include "requests.hpp"
#include "model/model.hpp"
#include "model/tensors.hpp"

namespace {

memest_model from_config(const std::string& text) {
  memest_model m = memest_test::sized<memest_model>();
  const memest_status st = memest_model_from_config_json(text.c_str(), &m);
  INFO(memest_last_error());
  REQUIRE(st == MEMEST_OK);
  return m;
}

memest_param_count count(const memest_model& m) {
  memest_param_count c = memest_test::sized<memest_param_count>();
  REQUIRE(memest_model_parameter_count(&m, &c) == MEMEST_OK);
  return c;
}

double tensor_sum(const memest_model& m) {
  double sum = 0;
  for (const auto& t : memest::parameter_tensors(m)) sum += t.numel;
  return sum;
}

}  // namespace

TEST_CASE("Qwen3-8B: decoupled head_dim and QK-norm (q_norm, k_norm over head_dim)") {
  const memest_model m = from_config(R"({"architectures": ["Qwen3ForCausalLM"],
    "model_type": "qwen3", "attention_bias": false, "head_dim": 128, "hidden_size": 4096,
    "intermediate_size": 12288, "num_attention_heads": 32, "num_hidden_layers": 36,
    "num_key_value_heads": 8, "tie_word_embeddings": false, "vocab_size": 151936})");
  CHECK(m.qk_norm == 1);
  const memest_param_count c = count(m);
  // attention: q 4096*4096 = 16777216, k and v 2*4096*1024 = 8388608, o 16777216
  //            -> 41943040; q_norm + k_norm 2*128 = 256
  // MLP 3*4096*12288 = 150994944; two RMSNorms 8192
  // per layer 41943040 + 256 + 150994944 + 8192 = 192946432
  CHECK(c.per_layer == 192946432.0);
  // 36 layers 6946071552 + embedding and untied head 2*151936*4096 = 1244659712 + final 4096
  CHECK(c.total == 8190735360.0);  // Qwen3-8B card: 8.2B, 6.95B non-embedding
  CHECK(c.active == c.total);
  CHECK(c.mtp == 0);
  CHECK(c.moe_layers == 0);
  CHECK(tensor_sum(m) == c.total);
}

TEST_CASE("Phi-3-mini: fused qkv_proj and gate_up_proj") {
  const memest_model m = from_config(R"({"architectures": ["Phi3ForCausalLM"],
    "model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192,
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
    "tie_word_embeddings": false, "vocab_size": 32064})");
  CHECK(m.fused_qkv == 1);
  CHECK(m.fused_gate_up == 1);
  const memest_param_count c = count(m);
  // qkv_proj 3072*(3072 + 2*3072) = 28311552, o_proj 9437184 -> 37748736
  // gate_up_proj 3072*16384 = 50331648, down_proj 8192*3072 = 25165824 -> 75497472
  // norms 6144: per layer 113252352; *32 = 3624075264
  // + embedding and head 2*32064*3072 = 197001216 + final norm 3072
  CHECK(c.per_layer == 113252352.0);
  CHECK(c.total == 3821079552.0);  // Phi-3-mini: 3.8B
  // The tensors LLMem rounds: one QKV tensor and one gate-up tensor per layer.
  const auto tensors = memest::parameter_tensors(m);
  int qkv = 0, gate_up = 0;
  for (const auto& t : tensors) {
    qkv += t.numel == 3072.0 * 9216;
    gate_up += t.numel == 3072.0 * 16384;
  }
  CHECK(qkv == 32);
  CHECK(gate_up == 32);
  CHECK(tensor_sum(m) == c.total);
}

TEST_CASE("Falcon-7B and Command-R: parallel attention/MLP blocks with one norm") {
  SUBCASE("Falcon-7B: multi-query fused QKV, one LayerNorm, no biases, tied head") {
    const memest_model m = from_config(R"({"architectures": ["FalconForCausalLM"],
      "model_type": "falcon", "alibi": false, "bias": false, "hidden_size": 4544,
      "multi_query": true, "new_decoder_architecture": false, "num_attention_heads": 71,
      "num_hidden_layers": 32, "parallel_attn": true, "vocab_size": 65024})");
    CHECK(m.norms_per_layer == 1);
    CHECK(m.num_key_value_heads == 1);
    CHECK(m.family == MEMEST_FAMILY_GPT);
    const memest_param_count c = count(m);
    // query_key_value 4544*(4544 + 2*64) = 21229568, dense 4544^2 = 20647936
    // dense_h_to_4h + dense_4h_to_h 2*4544*18176 = 165183488; input_layernorm 2*4544 = 9088
    // per layer 207070080; *32 = 6626242560; + word embeddings 65024*4544 = 295469056 (tied)
    // + ln_f 9088
    CHECK(c.per_layer == 207070080.0);
    CHECK(c.total == 6921720704.0);
    CHECK(tensor_sum(m) == c.total);
  }
  SUBCASE("Falcon's new decoder architecture: num_kv_heads and two LayerNorms (ln_attn, ln_mlp)") {
    const memest_model m = from_config(R"({"model_type": "falcon", "hidden_size": 8192,
      "new_decoder_architecture": true, "multi_query": true, "num_kv_heads": 8,
      "num_attention_heads": 128, "num_hidden_layers": 60, "parallel_attn": true,
      "bias": false, "vocab_size": 65024})");
    CHECK(m.num_key_value_heads == 8);
    CHECK(m.norms_per_layer == 2);
    // query_key_value 8192*(128 + 2*8)*64 = 75497472, dense 67108864, MLP 2*8192*32768 =
    // 536870912, two LayerNorms 32768: 679510016 per layer
    CHECK(count(m).per_layer == 679510016.0);
  }
  SUBCASE("Command-R (cohere): one weight-only LayerNorm per layer, tied by default") {
    const memest_model m = from_config(R"({"architectures": ["CohereForCausalLM"],
      "model_type": "cohere", "hidden_size": 8192, "intermediate_size": 22528,
      "num_attention_heads": 64, "num_hidden_layers": 40, "num_key_value_heads": 64,
      "use_qk_norm": false, "vocab_size": 256000, "logit_scale": 0.0625})");
    const memest_param_count c = count(m);
    // attention 4*8192^2 = 268435456, MLP 3*8192*22528 = 553648128, norm 8192
    // per layer 822091776; *40 = 32883671040; + tied embedding 256000*8192 = 2097152000 + 8192
    CHECK(c.per_layer == 822091776.0);
    CHECK(c.total == 34980831232.0);  // Command-R: 35B
  }
  SUBCASE("Cohere use_qk_norm: a LayerNorm per head for q (a x d) and k (k x d)") {
    const memest_model m = from_config(R"({"model_type": "cohere", "hidden_size": 1024,
      "intermediate_size": 4096, "num_attention_heads": 8, "num_hidden_layers": 2,
      "num_key_value_heads": 2, "use_qk_norm": true, "vocab_size": 1000})");
    CHECK(m.qk_norm == 2);
    // attention 1024*1024*2 + 2*1024*256 = 2621440; q_norm 8*128 + k_norm 2*128 = 1280;
    // MLP 3*1024*4096 = 12582912; norm 1024 -> 15206656
    CHECK(count(m).per_layer == 15206656.0);
  }
}

TEST_CASE("Gemma 2: four RMSNorms per layer (pre/post attention, pre/post feed-forward)") {
  const memest_model m = from_config(R"({"architectures": ["Gemma2ForCausalLM"],
    "model_type": "gemma2", "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0,
    "head_dim": 256, "hidden_size": 3584, "intermediate_size": 14336,
    "num_attention_heads": 16, "num_hidden_layers": 42, "num_key_value_heads": 8,
    "query_pre_attn_scalar": 256, "sliding_window": 4096, "vocab_size": 256000})");
  CHECK(m.norms_per_layer == 4);
  CHECK(m.tie_word_embeddings == 1);  // Gemma2Config default
  const memest_param_count c = count(m);
  // q 3584*16*256 = 14680064, k and v 2*3584*8*256 = 14680064, o 14680064 -> 44040192
  // MLP 3*3584*14336 = 154140672; four norms 4*3584 = 14336: per layer 198195200
  // *42 = 8324198400; + tied embedding 256000*3584 = 917504000 + final norm 3584
  CHECK(c.per_layer == 198195200.0);
  CHECK(c.total == 9241705984.0);  // gemma-2-9b: 9.24B
  CHECK(tensor_sum(m) == c.total);
}

TEST_CASE("Mixtral-8x7B: 8 experts, top-2 -> 46.7B total, 12.9B active") {
  const memest_model m = from_config(R"({"architectures": ["MixtralForCausalLM"],
    "model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
    "num_attention_heads": 32, "num_experts_per_tok": 2, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "num_local_experts": 8, "tie_word_embeddings": false,
    "vocab_size": 32000})");
  CHECK(m.num_experts == 8);
  CHECK(m.num_experts_per_tok == 2);
  CHECK(m.moe_intermediate_size == 14336);  // Mixtral's intermediate_size is one expert's
  const memest_param_count c = count(m);
  // attention 2*4096^2 + 2*4096*1024 = 41943040; one expert 3*4096*14336 = 176160768;
  // router 4096*8 = 32768; norms 8192
  // MoE layer: 41943040 + 8*176160768 + 32768 + 8192 = 1451270144; *32 = 46440644608
  // + embedding and head 2*32000*4096 = 262144000 + final norm 4096
  CHECK(c.moe_layers == 32);
  CHECK(c.per_layer == 1451270144.0);
  CHECK(c.total == 46702792704.0);  // Mistral: 46.7B
  // active: 2 experts: 41943040 + 352321536 + 32768 + 8192 = 394305536; *32 = 12617777152
  // + 262148096
  CHECK(c.active == 12879925248.0);  // Mistral: 12.9B active
  CHECK(tensor_sum(m) == c.total);
}

TEST_CASE("Multi-head latent attention, one layer by hand") {
  SUBCASE("DeepSeek-V3: q_lora_rank 1536, kv_lora_rank 512") {
    memest_model m = memest_test::sized<memest_model>();
    memest_model_init(&m, sizeof m);
    m.hidden_size = 7168;
    m.num_hidden_layers = 1;
    m.num_attention_heads = 128;
    m.num_key_value_heads = 128;
    m.intermediate_size = 18432;
    m.vocab_size = 129280;
    m.q_lora_rank = 1536;
    m.kv_lora_rank = 512;
    m.qk_nope_head_dim = 128;
    m.qk_rope_head_dim = 64;
    m.v_head_dim = 128;
    // q_a_proj 7168*1536 = 11010048, q_a_layernorm 1536, q_b_proj 1536*128*(128+64) = 37748736
    // kv_a_proj_with_mqa 7168*(512+64) = 4128768, kv_a_layernorm 512,
    // kv_b_proj 512*128*(128+128) = 16777216, o_proj 128*128*7168 = 117440512
    // MLA = 187107328; + dense MLP 3*7168*18432 = 396361728 + norms 14336
    CHECK(memest::head_dim(m) == 192);
    CHECK(count(m).per_layer == 187107328.0 + 396361728.0 + 14336.0);
    CHECK(tensor_sum(m) == count(m).total);
  }
  SUBCASE("DeepSeek-V2-Lite: no q_lora_rank (a full q_proj)") {
    const memest_model m = from_config(R"({"architectures": ["DeepseekV2ForCausalLM"],
      "model_type": "deepseek_v2", "first_k_dense_replace": 1, "hidden_size": 2048,
      "intermediate_size": 10944, "kv_lora_rank": 512, "moe_intermediate_size": 1408,
      "moe_layer_freq": 1, "n_routed_experts": 64, "n_shared_experts": 2,
      "num_attention_heads": 16, "num_experts_per_tok": 6, "num_hidden_layers": 27,
      "num_key_value_heads": 16, "q_lora_rank": null, "qk_nope_head_dim": 128,
      "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 102400,
      "tie_word_embeddings": false})");
    CHECK(m.q_lora_rank == 0);
    const memest_param_count c = count(m);
    // q_proj 2048*16*192 = 6291456, kv_a 2048*576 = 1179648, kv_a_layernorm 512,
    // kv_b 512*16*256 = 2097152, o 16*128*2048 = 4194304: MLA 13763072
    // dense layer: + MLP 3*2048*10944 = 67239936 + norms 4096 = 81007104
    CHECK(c.per_dense_layer == 81007104.0);
    // MoE layer: expert 3*2048*1408 = 8650752; 64 routed 553648128, 2 shared 17301504,
    // router 64*2048 = 131072: 13763072 + 4096 + 553648128 + 17301504 + 131072 = 584847872
    CHECK(c.per_layer == 584847872.0);
    CHECK(c.moe_layers == 26);
    // 81007104 + 26*584847872 + 2*102400*2048 + 2048
    CHECK(c.total == 15706484224.0);  // DeepSeek-V2-Lite: 15.7B
    // active: 6 routed: 13763072 + 4096 + 51904512 + 17301504 + 131072 = 83104256;
    // 81007104 + 26*83104256 + 419432448 = 2661150208; DeepSeek's "2.4B" leaves out the
    // input embedding (209715200): 2451435008
    CHECK(c.active == 2661150208.0);
  }
}

TEST_CASE("DeepSeek-V3: shared experts, 3 dense first layers, MTP counted apart") {
  const memest_model m = from_config(R"({"architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3", "first_k_dense_replace": 3, "hidden_size": 7168,
    "intermediate_size": 18432, "kv_lora_rank": 512, "moe_intermediate_size": 2048,
    "moe_layer_freq": 1, "n_group": 8, "n_routed_experts": 256, "n_shared_experts": 1,
    "num_attention_heads": 128, "num_experts_per_tok": 8, "num_hidden_layers": 61,
    "num_key_value_heads": 128, "num_nextn_predict_layers": 1, "q_lora_rank": 1536,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "tie_word_embeddings": false,
    "topk_group": 4, "v_head_dim": 128, "vocab_size": 129280})");
  CHECK(m.moe_first_dense_layers == 3);
  CHECK(m.num_shared_experts == 1);
  CHECK(m.mtp_layers == 1);
  CHECK_FALSE(memest::is_moe_layer(m, 2));
  CHECK(memest::is_moe_layer(m, 3));
  const memest_param_count c = count(m);
  // MLA 187107328 (above); norms 14336
  // dense layer 187107328 + 14336 + 3*7168*18432 (396361728) = 583483392
  // expert 3*7168*2048 = 44040192; MoE layer: 187107328 + 14336 + 256*44040192 (11274289152)
  //   + 1 shared 44040192 + router 256*7168 (1835008) = 11507286016
  CHECK(c.per_dense_layer == 583483392.0);
  CHECK(c.per_layer == 11507286016.0);
  CHECK(c.moe_layers == 58);
  // 3*583483392 + 58*11507286016 + 2*129280*7168 + 7168 = 671026404352 (DeepSeek: 671B; the
  // router's e_score_correction_bias is a buffer in transformers, not a parameter)
  CHECK(c.total == 671026404352.0);
  // active: MoE layer with 8 routed: 187107328 + 14336 + 352321536 + 44040192 + 1835008 =
  // 585318400; 3*583483392 + 58*585318400 + 1853358080 + 7168 = 37552282624. DeepSeek's
  // README_WEIGHTS: 36.6B activated "including 0.9B for the output Head", i.e. without the
  // input embedding (926679040): 36625603584.
  CHECK(c.active == 37552282624.0);
  CHECK(c.active - 129280.0 * 7168 == 36625603584.0);
  // MTP module: enorm, hnorm, shared_head.norm 3*7168 + eh_proj 2*7168*7168 (102760448)
  // + one MoE layer 11507286016 = 11610067968 (DeepSeek: "11.5B unique parameters", the
  // embedding and head shared with the main model; with their copies 13.46B, the "14B" of
  // 685B = 671B + 14B)
  CHECK(c.mtp == 11610067968.0);
  CHECK(c.mtp + 2 * 129280.0 * 7168 == 13463426048.0);
  CHECK(tensor_sum(m) == c.total);  // the MTP module is not among the main model's tensors
}

TEST_CASE("gpt-oss: attention sinks, biases everywhere, router bias") {
  const std::string common = R"("architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss",
    "attention_bias": true, "head_dim": 64, "hidden_size": 2880, "intermediate_size": 2880,
    "num_attention_heads": 64, "num_key_value_heads": 8, "experts_per_token": 4,
    "num_experts_per_tok": 4, "sliding_window": 128, "swiglu_limit": 7.0,
    "tie_word_embeddings": false, "vocab_size": 201088,
    "layer_types": ["sliding_attention", "full_attention"])";
  SUBCASE("gpt-oss-120b: 116.8B total, 5.1B active") {
    const memest_model m =
        from_config("{" + common + R"(, "num_hidden_layers": 36, "num_local_experts": 128})");
    CHECK(m.attention_sinks == 1);
    CHECK(m.router_bias == 1);
    CHECK(m.mlp_bias == 1);
    const memest_param_count c = count(m);
    // attention: q 2880*4096 + 4096, k and v 2*(2880*512 + 512), o 4096*2880 + 2880,
    //   sinks 64 -> 26550144
    // expert: gate_up 2880*5760 + 5760, down 2880*2880 + 2880 -> 24891840
    // router 128*2880 + 128 = 368768; norms 5760
    // layer 26550144 + 128*24891840 + 368768 + 5760 = 3213080192; *36 = 115670886912
    // + embedding and unembedding 2*201088*2880 = 1158266880 + final norm 2880
    CHECK(c.per_layer == 3213080192.0);
    CHECK(c.total == 116829156672.0);  // OpenAI model card: 116.83B
    // active: 26550144 + 4*24891840 + 368768 + 5760 = 126492032; *36 + 1158269760 =
    // 5711982912; the card's 5.13B leaves out the embedding (579133440): 5132849472
    CHECK(c.active == 5711982912.0);
    CHECK(c.active - 201088.0 * 2880 == 5132849472.0);
    CHECK(tensor_sum(m) == c.total);
  }
  SUBCASE("gpt-oss-20b: 20.9B total, 3.6B active") {
    const memest_model m =
        from_config("{" + common + R"(, "num_hidden_layers": 24, "num_local_experts": 32})");
    const memest_param_count c = count(m);
    // layer 26550144 + 32*24891840 + (32*2880 + 32) + 5760 = 823186976; *24 = 19756487424
    // + 1158269760 = 20914757184 (card: 20.91B)
    CHECK(c.total == 20914757184.0);
    // active 26550144 + 99567360 + 92192 + 5760 = 126215456; *24 + 1158269760 = 4187440704;
    // without the embedding 3608307264 (card: 3.61B)
    CHECK(c.active == 4187440704.0);
    CHECK(c.active - 201088.0 * 2880 == 3608307264.0);
  }
}

TEST_CASE("Qwen2-MoE: a shared expert with its sigmoid gate, q/k/v biases") {
  const memest_model m = from_config(R"({"architectures": ["Qwen2MoeForCausalLM"],
    "model_type": "qwen2_moe", "decoder_sparse_step": 1, "hidden_size": 2048,
    "intermediate_size": 5632, "moe_intermediate_size": 1408, "num_attention_heads": 16,
    "num_experts": 60, "num_experts_per_tok": 4, "num_hidden_layers": 24,
    "num_key_value_heads": 16, "shared_expert_intermediate_size": 5632,
    "tie_word_embeddings": false, "vocab_size": 151936})");
  CHECK(m.num_shared_experts == 1);
  CHECK(m.shared_expert_gate == 1);
  CHECK(m.attention_qkv_bias == 1);
  const memest_param_count c = count(m);
  // attention 4*2048^2 + 3*2048 = 16783360; 60 experts 60*3*2048*1408 = 519045120;
  // shared expert 3*2048*5632 = 34603008; shared_expert_gate 2048; router 60*2048 = 122880;
  // norms 4096 -> 570560512; *24 = 13693452288 + 2*151936*2048 + 2048 = 14315784192
  CHECK(c.per_layer == 570560512.0);
  CHECK(c.total == 14315784192.0);  // Qwen1.5-MoE-A2.7B: 14.3B
  // active: 16783360 + 4*8650752 + 34603008 + 2048 + 122880 + 4096 = 86118400; *24 + 622331904
  CHECK(c.active == 2689173504.0);  // 2.7B
}

TEST_CASE("Dense layers of MoE models: first_k_dense_replace, decoder_sparse_step, mlp_only_layers") {
  memest_model m = memest_test::sized<memest_model>();
  memest_model_init(&m, sizeof m);
  m.hidden_size = 64;
  m.num_hidden_layers = 10;
  m.num_attention_heads = 4;
  m.num_key_value_heads = 4;
  m.intermediate_size = 256;
  m.vocab_size = 100;
  m.num_experts = 4;
  m.num_experts_per_tok = 1;
  m.moe_intermediate_size = 32;
  m.moe_layer_step = 2;  // layers 1, 3, 5, 7, 9
  CHECK(memest::moe_layer_count(m) == 5);
  m.moe_first_dense_layers = 4;  // layers 5, 7, 9
  CHECK(memest::moe_layer_count(m) == 3);
  int listed = 0;
  for (int64_t i = 0; i < m.num_hidden_layers; ++i) listed += memest::is_moe_layer(m, i);
  CHECK(listed == 3);
  const memest_param_count c = count(m);
  CHECK(c.total == c.embedding + 7 * c.per_dense_layer + 3 * c.per_layer + c.lm_head);
  CHECK(tensor_sum(m) == c.total);

  // Qwen's mlp_only_layers as leading layers reads as first_k_dense_replace; other sets are
  // refused rather than approximated.
  const memest_model q = from_config(R"({"model_type": "qwen3_moe", "hidden_size": 64,
    "intermediate_size": 256, "moe_intermediate_size": 32, "num_attention_heads": 4,
    "num_key_value_heads": 4, "head_dim": 16, "num_hidden_layers": 6, "num_experts": 4,
    "num_experts_per_tok": 2, "vocab_size": 100, "mlp_only_layers": [0, 1]})");
  CHECK(q.moe_first_dense_layers == 2);
  CHECK(count(q).moe_layers == 4);
  memest_model r = memest_test::sized<memest_model>();
  CHECK(memest_model_from_config_json(R"({"model_type": "qwen3_moe", "hidden_size": 64,
    "intermediate_size": 256, "num_attention_heads": 4, "num_hidden_layers": 6,
    "num_experts": 4, "num_experts_per_tok": 2, "vocab_size": 100, "mlp_only_layers": [2]})",
                                      &r) == MEMEST_ERR_UNSUPPORTED);
  CHECK(std::string(memest_last_error_field()) == "model.mlp_only_layers");
}

TEST_CASE("Model type by architecture: Kimi K2's kimi_k2 is a DeepseekV3ForCausalLM") {
  const memest_model m = from_config(R"({"architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "kimi_k2", "first_k_dense_replace": 1, "hidden_size": 7168,
    "intermediate_size": 18432, "kv_lora_rank": 512, "moe_intermediate_size": 2048,
    "moe_layer_freq": 1, "n_routed_experts": 384, "n_shared_experts": 1,
    "num_attention_heads": 64, "num_experts_per_tok": 8, "num_hidden_layers": 61,
    "num_key_value_heads": 64, "num_nextn_predict_layers": 0, "q_lora_rank": 1536,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "tie_word_embeddings": false,
    "v_head_dim": 128, "vocab_size": 163840})");
  CHECK(m.num_experts == 384);
  CHECK(m.kv_lora_rank == 512);
  const memest_param_count c = count(m);
  // MLA: 11010048 + 1536 + 1536*64*192 (18874368) + 4128768 + 512 + 512*64*256 (8388608)
  //      + 64*128*7168 (58720256) = 101124096
  // dense layer 101124096 + 14336 + 396361728 = 497500160
  // MoE layer 101124096 + 14336 + 385*44040192 + 384*7168 = 17059364864
  // 497500160 + 60*17059364864 + 2*163840*7168 + 7168 = 1026408209408 (Kimi K2: 1T)
  CHECK(c.total == 1026408209408.0);
  CHECK(c.mtp == 0);
}

TEST_CASE("Multimodal configs: the language model of text_config, the vision tower named apart") {
  // gemma-3-27b-it: text_config leaves vocab_size (262208) to Gemma3TextConfig's default.
  const memest_model m = from_config(R"({"architectures": ["Gemma3ForConditionalGeneration"],
    "model_type": "gemma3", "mm_tokens_per_image": 256,
    "text_config": {"head_dim": 128, "hidden_size": 5376, "intermediate_size": 21504,
      "model_type": "gemma3_text", "num_attention_heads": 32, "num_hidden_layers": 62,
      "num_key_value_heads": 16, "query_pre_attn_scalar": 168, "sliding_window": 1024},
    "vision_config": {"hidden_size": 1152, "intermediate_size": 4304, "model_type":
      "siglip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 27,
      "patch_size": 14, "vision_use_head": false}})");
  CHECK(m.vision_excluded == 1);
  CHECK(m.vocab_size == 262208);
  CHECK(m.qk_norm == 1);
  const memest_param_count c = count(m);
  // q 5376*4096, k and v 2*5376*2048, o 4096*5376 -> 66060288; q_norm + k_norm 256;
  // MLP 3*5376*21504 = 346816512; four norms 21504: per layer 412898560
  // 62 layers 25599710720 + final norm 5376 (Gemma 3 report: 25,600M non-embedding)
  // + tied embedding 262208*5376 = 1409630208
  CHECK(c.per_layer == 412898560.0);
  CHECK(c.total == 27009346304.0);
  // The JSON answer says what was left out.
  const test::Answer a = test::request(std::string(R"({"mode": "model_states", "gpu": "h100-80gb",
    "model": {"model_type": "gemma3", "text_config": {"head_dim": 128, "hidden_size": 5376,
      "intermediate_size": 21504, "model_type": "gemma3_text", "num_attention_heads": 32,
      "num_hidden_layers": 62, "num_key_value_heads": 16}, "vision_config": {}}})"));
  REQUIRE(a.status == MEMEST_OK);
  CHECK(a.body["model"]["excluded"].get<std::string>().find("vision") != std::string::npos);
  CHECK(a.body["model"]["num_parameters"] == 27009346304.0);
}

TEST_CASE("JSON: every model reports num_parameters and active_parameters — MoE fields round-trip") {
  const test::Answer dense = test::request(
      std::string(R"({"mode": "model_states", "model": "llama-3.1-8b", "gpu": "h100-80gb"})"));
  REQUIRE(dense.status == MEMEST_OK);
  CHECK(dense.body["model"]["active_parameters"] == dense.body["model"]["num_parameters"]);
  CHECK_FALSE(dense.body["model"].contains("num_experts"));

  const std::string mixtral = R"({"model_type": "mixtral", "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_experts_per_tok": 2,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8,
    "tie_word_embeddings": false, "vocab_size": 32000})";
  const test::Answer moe = test::request(R"({"mode": "model_states", "gpu": "h100-80gb",
    "parallel": {"gpus": 8, "zero": 3}, "model": )" + mixtral + "}");
  REQUIRE(moe.status == MEMEST_OK);
  const auto& mj = moe.body["model"];
  CHECK(mj["num_parameters"] == 46702792704.0);
  CHECK(mj["active_parameters"] == 12879925248.0);
  CHECK(mj["num_experts"] == 8);
  CHECK(mj["num_experts_per_tok"] == 2);
  // Model states hold every expert (no expert parallelism): bf16 weights 2 + fp32 gradients 4
  // + Adam 12 = 18 bytes per parameter, all sharded over the 8 GPUs by ZeRO-3.
  CHECK(moe.body["estimate_bytes"] == 46702792704.0 * 18 / 8);

  // The response's model object, given back as plain numbers, is the same model.
  test::json again = mj;
  again.erase("name");
  const test::Answer back = test::request(
      test::json{{"mode", "model_states"}, {"gpu", "h100-80gb"}, {"model", again}});
  REQUIRE(back.status == MEMEST_OK);
  CHECK(back.body["model"]["num_parameters"] == mj["num_parameters"]);
  CHECK(back.body["model"]["active_parameters"] == mj["active_parameters"]);
}

TEST_CASE("A Mixtral config.json is answered by pretraining, the search and fine-tuning") {
  const std::string mixtral = R"({"model_type": "mixtral", "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_experts_per_tok": 2,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8,
    "vocab_size": 32000})";
  for (const char* mode : {"pretrain", "search", "finetune"}) {
    CAPTURE(mode);
    std::string req = std::string(R"({"mode": ")") + mode + R"(", "gpu": "h100-80gb", "model": )" +
                      mixtral;
    if (std::string(mode) != "finetune") {
      req += R"(, "parallel": {"gpus": 8}, "training": {"global_batch": 64})";
    } else {
      req += R"(, "parallel": {"gpus": 8}, "finetune": {"method": "zero3", "batch": 1})";
    }
    const test::Answer a = test::request(req + "}");
    REQUIRE(a.status == MEMEST_OK);
    // Mistral AI's 46.7B: the eight experts of every layer are counted, not one dense MLP.
    if (std::string(mode) == "finetune") CHECK(a.body["model"]["num_parameters"] == 46702792704.0);
  }
  // The typed API answers pretraining, with the expert part of every stage.
  memest_test::Pretrain p("llama-3.1-8b", "h100-80gb");
  p.model.num_experts = 8;
  p.model.num_experts_per_tok = 2;
  memest_pretrain_result res = memest_test::sized<memest_pretrain_result>();
  memest_stage stage = memest_test::sized<memest_stage>();
  REQUIRE(p.run(res, &stage, 1) == MEMEST_OK);
  CHECK(stage.moe_layers == 32);
  CHECK(stage.expert_parameters > 0);
  CHECK(res.ep == 1);
  CHECK(res.edp == 1);
}

TEST_CASE("GLM-4.5 (glm4_moe): q/k/v biases without o_proj's, head_dim QK-norm, 3 dense layers, MTP apart") {
  // zai-org/GLM-4.5's shapes (NeMo Megatron-Bridge's GLM 4.5 page lists the same: 92 layers,
  // the first 3 dense, 160 experts of 1536 top-8, one shared expert, QK LayerNorm).
  const memest_model m = from_config(R"({"architectures": ["Glm4MoeForCausalLM"],
    "model_type": "glm4_moe", "attention_bias": true, "first_k_dense_replace": 3,
    "head_dim": 128, "hidden_size": 5120, "intermediate_size": 12288,
    "moe_intermediate_size": 1536, "n_routed_experts": 160, "n_shared_experts": 1,
    "num_attention_heads": 96, "num_experts_per_tok": 8, "num_hidden_layers": 92,
    "num_key_value_heads": 8, "num_nextn_predict_layers": 1, "partial_rotary_factor": 0.5,
    "tie_word_embeddings": false, "use_qk_norm": true, "vocab_size": 151552})");
  CHECK(m.attention_qkv_bias == 1);
  CHECK(m.attention_out_bias == 0);  // Glm4MoeAttention: o_proj has no bias
  CHECK(m.qk_norm == 1);
  CHECK(m.mtp_layers == 1);
  const memest_param_count c = count(m);
  // attention: q 5120*12288 = 62914560, k and v 2*5120*1024 = 10485760, o 62914560
  //   -> 136314880; biases q 12288 + k, v 2048 = 14336; q_norm + k_norm 2*128 = 256
  //   -> 136329472 (partial rotary changes no parameter)
  // dense layer: + MLP 3*5120*12288 = 188743680 + two norms 10240 = 325083392
  CHECK(c.per_dense_layer == 325083392.0);
  // MoE layer: expert 3*5120*1536 = 23592960; 160 routed 3774873600 + 1 shared 23592960
  //   + router 160*5120 = 819200: 136329472 + 10240 + 3774873600 + 23592960 + 819200
  CHECK(c.per_layer == 3935625472.0);
  // 3*325083392 + 89*3935625472 + embedding and head 2*151552*5120 (1551892480) + 5120
  CHECK(c.total == 352797814784.0);
  // active: 8 routed: 136329472 + 10240 + 188743680 + 23592960 + 819200 = 349495552;
  //   3*325083392 + 89*349495552 + 1551897600 = 33632251904; without the input embedding
  //   (775946240) 32856305664 (GLM: 32B active)
  CHECK(c.active == 33632251904.0);
  // MTP layer (layer 92): enorm, hnorm, shared_head.norm 3*5120 + eh_proj 2*5120*5120
  //   (52428800) + one MoE layer = 3988069632. The model card's 355B total matches neither
  //   352.80B (without it) nor 356.79B (with it); the Hub's 358B label is the checkpoint's
  //   tensors: 352.80B + 3.99B + the layer's stored embedding and head 1.55B = 358.34B.
  CHECK(c.mtp == 3988069632.0);
  CHECK(c.total + c.mtp + 2 * 151552.0 * 5120 == 358337776896.0);
  CHECK(tensor_sum(m) == c.total);
}

TEST_CASE("MiniMax-M2: full-width q/k norms (per_layer), 256 experts, no MTP tensors") {
  const memest_model m = from_config(R"({"architectures": ["MiniMaxM2ForCausalLM"],
    "model_type": "minimax_m2", "head_dim": 128, "hidden_size": 3072,
    "intermediate_size": 1536, "num_attention_heads": 48, "num_experts_per_tok": 8,
    "num_hidden_layers": 62, "num_key_value_heads": 8, "num_local_experts": 256,
    "num_mtp_modules": 3, "use_mtp": true, "qk_norm_type": "per_layer", "rotary_dim": 64,
    "shared_intermediate_size": 0, "tie_word_embeddings": false, "use_qk_norm": true,
    "use_routing_bias": true, "vocab_size": 200064})");
  CHECK(m.qk_norm == 2);
  CHECK(m.moe_intermediate_size == 1536);  // intermediate_size is one expert's width
  CHECK(m.router_bias == 0);  // e_score_correction_bias: a buffer
  CHECK(m.mtp_layers == 0);   // num_mtp_modules: not in the released checkpoints
  const memest_param_count c = count(m);
  // attention: q 3072*6144 = 18874368, k and v 2*3072*1024 = 6291456, o 18874368 -> 44040192;
  //   q_norm 48*128 = 6144 + k_norm 8*128 = 1024 (Qwen3's per-head norms would be 256)
  // expert 3*3072*1536 = 14155776, 256 of them 3623878656; router 256*3072 = 786432; norms 6144
  // layer 44040192 + 7168 + 3623878656 + 786432 + 6144 = 3668718592
  CHECK(c.per_layer == 3668718592.0);
  // 62 layers 227460552704 + embedding and head 2*200064*3072 = 1229193216 + 3072
  CHECK(c.total == 228689748992.0);  // MiniMax: 230B
  // active: 44040192 + 7168 + 8*14155776 + 786432 + 6144 = 158086144; *62 = 9801340928
  //   + 1229196288 = 11030537216; without the input embedding 10415940608 (MiniMax: 10B)
  CHECK(c.active == 11030537216.0);
  CHECK(c.mtp == 0);
  CHECK(tensor_sum(m) == c.total);
  memest_model r = memest_test::sized<memest_model>();
  CHECK(memest_model_from_config_json(R"({"model_type": "minimax_m2", "hidden_size": 64,
    "intermediate_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2,
    "num_local_experts": 4, "num_experts_per_tok": 2, "vocab_size": 100,
    "shared_intermediate_size": 64})", &r) == MEMEST_ERR_UNSUPPORTED);
  CHECK(std::string(memest_last_error_field()) == "model.shared_intermediate_size");
}

TEST_CASE("ERNIE 4.5 MoE: moe_* names, one shared MLP two experts wide, layer 0 dense, tied") {
  const memest_model m = from_config(R"({"architectures": ["Ernie4_5_MoeForCausalLM"],
    "model_type": "ernie4_5_moe", "hidden_size": 2560, "intermediate_size": 12288,
    "moe_intermediate_size": 1536, "num_hidden_layers": 28, "num_attention_heads": 20,
    "num_key_value_heads": 4, "head_dim": null, "moe_num_experts": 64,
    "moe_num_shared_experts": 2, "moe_k": 6, "moe_layer_start_index": 1,
    "moe_layer_end_index": -1, "moe_layer_interval": 1, "use_bias": false,
    "vocab_size": 103424})");
  CHECK(m.tie_word_embeddings == 1);  // Ernie4_5_MoeConfig's default
  CHECK(m.num_experts == 64);
  CHECK(m.num_shared_experts == 1);
  CHECK(m.shared_expert_intermediate_size == 3072);  // Ernie4_5_MoeMLP(1536 * 2)
  CHECK(m.moe_first_dense_layers == 1);
  const memest_param_count c = count(m);
  // attention: q 2560*2560 = 6553600, k and v 2*2560*512 = 2621440, o 6553600 -> 15728640
  // dense layer 0: + MLP 3*2560*12288 = 94371840 + norms 5120 = 110105600
  CHECK(c.per_dense_layer == 110105600.0);
  // MoE layer: 64 experts of 3*2560*1536 = 11796480 (754974720), shared 3*2560*3072 =
  //   23592960, router 64*2560 = 163840: 15728640 + 754974720 + 23592960 + 163840 + 5120
  CHECK(c.per_layer == 794465280.0);
  CHECK(c.moe_layers == 27);
  // 110105600 + 27*794465280 + tied embedding 103424*2560 = 264765440 + 2560
  CHECK(c.total == 21825436160.0);  // Baidu: 21B (cut)
  // active: 15728640 + 6*11796480 + 23592960 + 163840 + 5120 = 110269440; *27 + 110105600
  //   + 264765440 + 2560 = 3352148480 (Baidu: 3B)
  CHECK(c.active == 3352148480.0);
  CHECK(tensor_sum(m) == c.total);
  // Dense layers after the experts, or sparse layers at a stride, are refused.
  memest_model r = memest_test::sized<memest_model>();
  CHECK(memest_model_from_config_json(R"({"model_type": "ernie4_5_moe", "hidden_size": 64,
    "intermediate_size": 128, "moe_intermediate_size": 32, "num_hidden_layers": 4,
    "num_attention_heads": 4, "moe_num_experts": 4, "moe_k": 2, "vocab_size": 100,
    "moe_layer_end_index": 2})", &r) == MEMEST_ERR_UNSUPPORTED);
  CHECK(std::string(memest_last_error_field()) == "model.moe_layer_end_index");
  CHECK(memest_model_from_config_json(R"({"model_type": "ernie4_5_moe", "hidden_size": 64,
    "intermediate_size": 128, "moe_intermediate_size": 32, "num_hidden_layers": 4,
    "num_attention_heads": 4, "moe_num_experts": 4, "moe_k": 2, "vocab_size": 100,
    "moe_layer_interval": 2})", &r) == MEMEST_ERR_UNSUPPORTED);
  CHECK(std::string(memest_last_error_field()) == "model.moe_layer_interval");
}

TEST_CASE("SmolLM3 and Seed-OSS: Llama layers — NoPE layers add nothing, Seed-OSS's o_proj has no bias") {
  SUBCASE("SmolLM3-3B: GQA, tied by default, no_rope_layers change no parameter") {
    const memest_model m = from_config(R"({"architectures": ["SmolLM3ForCausalLM"],
      "model_type": "smollm3", "hidden_size": 2048, "intermediate_size": 11008,
      "num_attention_heads": 16, "num_hidden_layers": 36, "num_key_value_heads": 4,
      "no_rope_layer_interval": 4, "vocab_size": 128256})");
    CHECK(m.tie_word_embeddings == 1);  // SmolLM3Config's default
    const memest_param_count c = count(m);
    // attention 2*2048^2 + 2*2048*512 = 10485760, MLP 3*2048*11008 = 67633152, norms 4096
    CHECK(c.per_layer == 78123008.0);
    // 36*78123008 = 2812428288 + tied embedding 128256*2048 = 262668288 + 2048
    CHECK(c.total == 3075098624.0);  // model page: 3.08B
    CHECK(tensor_sum(m) == c.total);
  }
  SUBCASE("Seed-OSS-36B: q/k/v biases (attention_bias), none on o_proj (attention_out_bias)") {
    const memest_model m = from_config(R"({"architectures": ["SeedOssForCausalLM"],
      "model_type": "seed_oss", "attention_bias": true, "attention_out_bias": false,
      "head_dim": 128, "hidden_size": 5120, "intermediate_size": 27648, "mlp_bias": false,
      "num_attention_heads": 80, "num_hidden_layers": 64, "num_key_value_heads": 8,
      "tie_word_embeddings": false, "vocab_size": 155136})");
    CHECK(m.attention_qkv_bias == 1);
    CHECK(m.attention_out_bias == 0);
    const memest_param_count c = count(m);
    // q 5120*10240 = 52428800, k and v 2*5120*1024 = 10485760, o 52428800 -> 115343360;
    // biases 10240 + 2*1024 = 12288; MLP 3*5120*27648 = 424673280; norms 10240
    CHECK(c.per_layer == 540039168.0);
    // 64*540039168 = 34562506752 + 2*155136*5120 = 1588592640 + 5120
    CHECK(c.total == 36151104512.0);  // safetensors index: 36,151,104,512
    // With attention_out_bias o_proj gains a bias of 5120 per layer.
    const memest_model o = from_config(R"({"model_type": "seed_oss", "attention_out_bias": true,
      "head_dim": 128, "hidden_size": 5120, "intermediate_size": 27648,
      "num_attention_heads": 80, "num_hidden_layers": 64, "num_key_value_heads": 8,
      "vocab_size": 155136})");
    CHECK(count(o).per_layer == 540039168.0 + 5120);
  }
}

TEST_CASE("Phi-2 (phi): parallel attention + MLP under one LayerNorm, biases, untied head with bias") {
  const memest_model m = from_config(R"({"architectures": ["PhiForCausalLM"],
    "model_type": "phi", "hidden_act": "gelu_new", "hidden_size": 2560,
    "intermediate_size": 10240, "max_position_embeddings": 2048, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 32, "partial_rotary_factor": 0.4,
    "qk_layernorm": false, "tie_word_embeddings": false, "vocab_size": 51200})");
  CHECK(m.family == MEMEST_FAMILY_GPT);
  CHECK(m.norms_per_layer == 1);
  CHECK(m.norm_type == MEMEST_NORM_LAYER);
  CHECK(m.lm_head_bias == 1);
  CHECK(m.gated_mlp == 0);
  CHECK(m.learned_position_rows == 0);  // rotary (on 40 % of head_dim): no table
  const memest_param_count c = count(m);
  // q, k, v, dense 4*2560^2 + 4*2560 = 26224640; fc1 2560*10240 + 10240, fc2 10240*2560
  //   + 2560 -> 52441600; input_layernorm 2*2560: per layer 78671360
  CHECK(c.per_layer == 78671360.0);
  // 32*78671360 = 2517483520 + embed_tokens 51200*2560 = 131072000 + final_layernorm 5120
  //   + lm_head 131072000 + its bias 51200
  CHECK(c.total == 2779683840.0);  // Phi-2: 2.7B (2,779,683,840 counted by PyTorch)
  CHECK(tensor_sum(m) == c.total);
  memest_model r = memest_test::sized<memest_model>();
  CHECK(memest_model_from_config_json(R"({"model_type": "phi", "hidden_size": 64,
    "intermediate_size": 256, "num_attention_heads": 4, "num_hidden_layers": 2,
    "vocab_size": 100, "qk_layernorm": true})", &r) == MEMEST_ERR_UNSUPPORTED);
  CHECK(std::string(memest_last_error_field()) == "model.qk_layernorm");
}

TEST_CASE("DeepSeek-V3.2 (deepseek_v32): DeepSeek-V3 plus the sparse-attention indexer in every layer") {
  const std::string config = R"({"architectures": ["DeepseekV32ForCausalLM"],
    "model_type": "deepseek_v32", "first_k_dense_replace": 3, "hidden_size": 7168,
    "index_head_dim": 128, "index_n_heads": 64, "index_topk": 2048,
    "intermediate_size": 18432, "kv_lora_rank": 512, "moe_intermediate_size": 2048,
    "moe_layer_freq": 1, "n_routed_experts": 256, "n_shared_experts": 1,
    "num_attention_heads": 128, "num_experts_per_tok": 8, "num_hidden_layers": 61,
    "num_key_value_heads": 128, "num_nextn_predict_layers": 1, "q_lora_rank": 1536,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "tie_word_embeddings": false,
    "v_head_dim": 128, "vocab_size": 129280})";
  const memest_model m = from_config(config);
  CHECK(m.index_n_heads == 64);
  CHECK(m.index_head_dim == 128);
  const memest_param_count c = count(m);
  // Indexer (DeepSeek's model.py, class Indexer; the checkpoint's self_attn.indexer.*):
  //   wq_b 1536*64*128 = 12582912, wk 7168*128 = 917504, k_norm weight and bias 2*128 = 256,
  //   weights_proj 7168*64 = 458752 -> 13959424 per layer, replicated under tensor parallelism
  // dense layer: DeepSeek-V3's 583483392 + 13959424
  CHECK(c.per_dense_layer == 597442816.0);
  // MoE layer: 11507286016 + 13959424
  CHECK(c.per_layer == 11521245440.0);
  // DeepSeek-V3's 671026404352 + 61*13959424 (851524864)
  CHECK(c.total == 671877929216.0);
  // active: 37552282624 + 851524864
  CHECK(c.active == 38403807488.0);
  // MTP layer: DeepSeek-V3's 11610067968 + its indexer; with the layer's stored embedding and
  // head (2*129280*7168 = 1853358080) the checkpoint holds 685355314688 (the Hub: 685B)
  CHECK(c.mtp == 11624027392.0);
  CHECK(c.total + c.mtp + 2 * 129280.0 * 7168 == 685355314688.0);
  CHECK(tensor_sum(m) == c.total);
  // The indexer is replicated, not split, over tensor-parallel ranks.
  const memest::LayerParams dense = memest::dense_layer_params(m);
  memest_model v3 = m;
  v3.index_n_heads = v3.index_head_dim = 0;
  CHECK(dense.replicated - memest::dense_layer_params(v3).replicated == 13959424.0);
  CHECK(dense.sharded == memest::dense_layer_params(v3).sharded);
  // The JSON answer names the indexer, and gives the same model back.
  const test::Answer a = test::request(R"({"mode": "model_states", "gpu": "h100-80gb", "model": )" +
                                       config + "}");
  REQUIRE(a.status == MEMEST_OK);
  CHECK(a.body["model"]["index_n_heads"] == 64);
  test::json again = a.body["model"];
  again.erase("name");
  const test::Answer back = test::request(
      test::json{{"mode", "model_states"}, {"gpu", "h100-80gb"}, {"model", again}});
  REQUIRE(back.status == MEMEST_OK);
  CHECK(back.body["model"]["num_parameters"] == c.total);
  // index_topk is required (it is the model's), the indexer needs q_lora_rank.
  memest_model r = memest_test::sized<memest_model>();
  std::string no_topk = config;
  no_topk.replace(no_topk.find(R"("index_topk": 2048,)"), 19, "");
  CHECK(memest_model_from_config_json(no_topk.c_str(), &r) == MEMEST_ERR_MISSING_FIELD);
  CHECK(std::string(memest_last_error_field()) == "model.index_topk");
  memest_model bad = m;
  bad.q_lora_rank = 0;
  CHECK(memest_model_validate(&bad) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(std::string(memest_last_error_field()) == "model.index_n_heads");
}

TEST_CASE("Recurrent and encoder-decoder models are refused by name") {
  // (Mamba and FalconMamba, once refused here, are read since 1.14: test_configs.cpp)
  const std::pair<const char*, const char*> refused[] = {{"rwkv", "recurrent model"},
                                                         {"t5", "encoder-decoder model"}};
  for (const auto& [type, reason] : refused) {
    CAPTURE(type);
    memest_model r = memest_test::sized<memest_model>();
    const std::string text = std::string(R"({"model_type": ")") + type +
                             R"(", "architectures": ["SomethingForCausalLM"], "hidden_size": 64})";
    CHECK(memest_model_from_config_json(text.c_str(), &r) == MEMEST_ERR_UNSUPPORTED);
    CHECK(std::string(memest_last_error_field()) == "model.model_type");
    const std::string message = memest_last_error();
    CHECK(message.find(std::string("\"") + type + "\"") != std::string::npos);
    CHECK(message.find(reason) != std::string::npos);
  }
}

TEST_CASE("Python's Infinity, -Infinity and NaN tokens: accepted outside strings, refused where needed") {
  // Nemotron-H's config.json says "time_step_limit": [0.0, Infinity] (Python's json.dump).
  const std::string llama = R"("model_type": "llama", "hidden_size": 64, "intermediate_size": 256,
    "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 100)";
  SUBCASE("fields memest does not read may hold them; strings keep them as text") {
    const memest_model m = from_config("{" + llama + R"(,
      "time_step_limit": [0.0, Infinity], "floor": -Infinity, "ratio": NaN,
      "name": "Infinity \"NaN\" -Infinity", "NaN": [NaN,Infinity,-Infinity], "after": "NaN",
      "nested": {"x": [1, {"y": NaN}], "z": "Infinity"}})");
    CHECK(std::string(m.name) == "Infinity \"NaN\" -Infinity");
    CHECK(count(m).total > 0);
    // the same through a JSON request's model object
    const test::Answer a = test::request(R"({"mode": "model_states", "gpu": "h100-80gb",
      "model": {)" + llama + R"(, "time_step_limit": [0.0, Infinity], "eps": NaN}})");
    REQUIRE(a.status == MEMEST_OK);
    CHECK(a.body["model"]["num_parameters"] == count(m).total);
  }
  SUBCASE("a field memest needs is named, and said not to be finite") {
    memest_model r = memest_test::sized<memest_model>();
    CHECK(memest_model_from_config_json(R"({"model_type": "llama", "hidden_size": Infinity,
      "intermediate_size": 256, "num_attention_heads": 4, "num_hidden_layers": 2,
      "vocab_size": 100})", &r) == MEMEST_ERR_TYPE);
    CHECK(std::string(memest_last_error_field()) == "model.hidden_size");
    CHECK(std::string(memest_last_error()).find("not finite (Infinity)") != std::string::npos);
    CHECK(memest_model_from_config_json(("{" + llama + R"(, "final_logit_softcapping": NaN})").c_str(),
                                        &r) == MEMEST_ERR_INVALID_ARGUMENT);
    CHECK(std::string(memest_last_error_field()) == "model.final_logit_softcapping");
    CHECK(std::string(memest_last_error()).find("not finite (NaN)") != std::string::npos);
    const test::Answer a = test::request(R"({"mode": "model_states", "gpu": "h100-80gb",
      "model": {)" + llama + R"(}, "parallel": {"gpus": -Infinity}})");
    CHECK(a.status == MEMEST_ERR_TYPE);
    CHECK(a.body["error"]["field"] == "parallel.gpus");
  }
  SUBCASE("other words stay invalid JSON") {
    memest_model r = memest_test::sized<memest_model>();
    for (const char* bad : {R"({"x": NaNa})", R"({"x": Infinity1})", R"({"x": -NaN})",
                            R"({"x": infinity})", R"({"x": xNaN})"}) {
      CAPTURE(bad);
      CHECK(memest_model_from_config_json(bad, &r) == MEMEST_ERR_PARSE);
    }
  }
}
