// LoRA and QLoRA (README "LoRA and QLoRA"): adapter parameter counts per family shape, NF4
// storage, the states and activations of a pretrain request with an adapter, and the refusals.
// Every expected value is worked by hand in the comment above it.
#include <doctest/doctest.h>

#include <string>

#include "activations/stack_activations.hpp"
#include "core/error.hpp"
#include "helpers.hpp"
#include "model/adapter.hpp"
#include "model/model.hpp"
#include "states/adapter_states.hpp"

namespace {

using memest::lora_bit;

// Llama-3.2-1B: h 2048, 16 layers, a 32, k 8, d 64, h_ffn 8192, v 128256, tied.
memest_model llama1b() {
  memest_model m = memest::default_model();
  m.family = MEMEST_FAMILY_LLAMA;
  m.hidden_size = 2048;
  m.num_hidden_layers = 16;
  m.num_attention_heads = 32;
  m.num_key_value_heads = 8;
  m.head_dim = 64;
  m.intermediate_size = 8192;
  m.vocab_size = 128256;
  m.tie_word_embeddings = 1;
  m.gated_mlp = 1;
  return m;
}

// GPT-2 small: h 768, 12 layers, 12 heads, fused c_attn, GELU MLP of 3072, v 50257.
memest_model gpt2() {
  memest_model m = memest::default_model();
  m.family = MEMEST_FAMILY_GPT;
  m.hidden_size = 768;
  m.num_hidden_layers = 12;
  m.num_attention_heads = 12;
  m.num_key_value_heads = 12;
  m.intermediate_size = 3072;
  m.vocab_size = 50257;
  m.tie_word_embeddings = 1;
  m.gated_mlp = 0;
  m.fused_qkv = 1;
  m.norm_type = MEMEST_NORM_LAYER;
  m.learned_position_rows = 1024;
  return m;
}

// Phi-3-mini: h 3072, 32 layers, 32 heads of 96 (MHA), fused qkv_proj and gate_up_proj, h_ffn
// 8192.
memest_model phi3mini() {
  memest_model m = memest::default_model();
  m.hidden_size = 3072;
  m.num_hidden_layers = 32;
  m.num_attention_heads = 32;
  m.num_key_value_heads = 32;
  m.intermediate_size = 8192;
  m.vocab_size = 32064;
  m.gated_mlp = 1;
  m.fused_qkv = 1;
  m.fused_gate_up = 1;
  return m;
}

// Mixtral-8x7B: h 4096, 32 layers, a 32, k 8, 8 experts of 14336, top 2.
memest_model mixtral() {
  memest_model m = memest::default_model();
  m.hidden_size = 4096;
  m.num_hidden_layers = 32;
  m.num_attention_heads = 32;
  m.num_key_value_heads = 8;
  m.intermediate_size = 14336;
  m.moe_intermediate_size = 14336;
  m.num_experts = 8;
  m.num_experts_per_tok = 2;
  m.vocab_size = 32000;
  m.gated_mlp = 1;
  return m;
}

constexpr uint32_t kSeven = lora_bit(MEMEST_LORA_Q_PROJ) | lora_bit(MEMEST_LORA_K_PROJ) |
                            lora_bit(MEMEST_LORA_V_PROJ) | lora_bit(MEMEST_LORA_O_PROJ) |
                            lora_bit(MEMEST_LORA_GATE_PROJ) | lora_bit(MEMEST_LORA_UP_PROJ) |
                            lora_bit(MEMEST_LORA_DOWN_PROJ);
constexpr uint32_t kQV = lora_bit(MEMEST_LORA_Q_PROJ) | lora_bit(MEMEST_LORA_V_PROJ);

double count(const memest_model& m, uint32_t targets, double r) {
  return memest::adapter_parameters(m, targets, r, "training.adapter.targets").total();
}

}  // namespace

TEST_CASE("adapters: separate QKV and gated MLP (Llama-3.2-1B, the H100 runs' counts)") {
  // r(in + out) per module, per layer at r = 16: q 16(2048 + 2048) = 65536, k and v
  // 16(2048 + 512) = 40960 each, o 65536, gate/up/down 16(2048 + 8192) = 163840 each:
  // 704512; 16 layers: 11272192 (peft printed 11,272,192 trainable on the H100).
  const memest_model m = llama1b();
  CHECK(count(m, kSeven, 16) == 11272192.0);
  // q_proj + v_proj: (65536 + 40960) * 16 = 1703936
  CHECK(count(m, kQV, 16) == 1703936.0);
  // r = 64: four times r = 16: 45088768
  CHECK(count(m, kSeven, 64) == 45088768.0);
  // lm_head 16(2048 + 128256) = 2084864; embed_tokens the same r(v + h)
  CHECK(count(m, lora_bit(MEMEST_LORA_LM_HEAD), 16) == 2084864.0);
  CHECK(count(m, lora_bit(MEMEST_LORA_EMBED_TOKENS), 16) == 2084864.0);
}

TEST_CASE("adapters: fused QKV and a GELU MLP (GPT-2)") {
  // c_attn 768 -> 2304: 8(768 + 2304) = 24576 per layer, 12 layers: 294912 (peft's
  // print_trainable_parameters for GPT-2 with its default c_attn, r 8)
  const memest_model m = gpt2();
  CHECK(count(m, lora_bit(MEMEST_LORA_Q_PROJ), 8) == 294912.0);
  // any of q/k/v is the one fused tensor
  CHECK(count(m, lora_bit(MEMEST_LORA_Q_PROJ) | lora_bit(MEMEST_LORA_K_PROJ) |
                     lora_bit(MEMEST_LORA_V_PROJ), 8) == 294912.0);
  // + c_proj 8(768 + 768) = 12288, c_fc (up_proj) 8(768 + 3072) = 30720, mlp.c_proj
  // (down_proj) 30720: 98304 per layer, 1179648
  const uint32_t all = kSeven & ~lora_bit(MEMEST_LORA_GATE_PROJ);
  CHECK(count(m, all, 8) == 1179648.0);
  // a GELU MLP has no gate_proj
  CHECK_THROWS_AS(count(m, kSeven, 8), memest::Error);
}

TEST_CASE("adapters: fused qkv_proj and gate_up_proj (Phi-3-mini)") {
  // qkv_proj 3072 -> 9216: 8(3072 + 9216) = 98304; o_proj 8 * 6144 = 49152; gate_up_proj
  // 3072 -> 16384: 8 * 19456 = 155648; down_proj 8(8192 + 3072) = 90112: 393216 per layer,
  // 32 layers: 12582912
  const memest_model m = phi3mini();
  CHECK(count(m, kSeven, 8) == 12582912.0);
  CHECK(count(m, kQV, 8) == 98304.0 * 32);
  // gate_proj alone adapts the whole fused gate_up_proj
  CHECK(count(m, lora_bit(MEMEST_LORA_GATE_PROJ), 8) == 155648.0 * 32);
}

TEST_CASE("adapters: MoE experts when targeted (Mixtral-8x7B)") {
  // attention: q 16 * 8192 = 131072, k, v 16(4096 + 1024) = 81920, o 131072: 425984.
  // one expert's w1/w3/w2 16(4096 + 14336) = 294912 each: 884736; 8 experts 7077888.
  // per layer 7503872, 32 layers: 240123904. The router is never adapted.
  const memest_model m = mixtral();
  CHECK(count(m, kSeven, 16) == 240123904.0);
  CHECK(count(m, kSeven & ~(lora_bit(MEMEST_LORA_GATE_PROJ) | lora_bit(MEMEST_LORA_UP_PROJ) |
                            lora_bit(MEMEST_LORA_DOWN_PROJ)), 16) == 425984.0 * 32);
}

TEST_CASE("QLoRA: NF4 storage per bitsandbytes' quantize_4bit and the QLoRA paper") {
  // Llama-3.2-1B's block linears: q 2048^2 = 4194304, k, v 2048 * 512 = 1048576, o 4194304,
  // gate/up/down 2048 * 8192 = 16777216 each: 60817408 per layer, 16 layers: 973078528.
  const memest_model m = llama1b();
  CHECK(memest::quantised_weights(m) == 973078528.0);
  CHECK(memest::largest_quantised_weight(m) == 16777216.0);
  // 0.5 byte per weight: 486539264; one fp32 absmax per 64: 973078528 / 16 = 60817408
  auto b = memest::nf4_bytes(973078528.0, false);
  CHECK(b.data == 486539264.0);
  CHECK(b.metadata == 60817408.0);
  // double quant: one uint8 per 64 weights 15204352 + one fp32 per 64 * 256 weights 237568
  b = memest::nf4_bytes(973078528.0, true);
  CHECK(b.metadata == 15441920.0);
}

TEST_CASE("QLoRA: bitsandbytes' 4-bit matmul keeps its input although the weight is frozen") {
  // Llama-3.2-1B at s 2048, b 1: n = 2048 tokens. q,v adapted with dropout: the attention
  // norm's output is held only by the adapters' dropout copies, so MatMul4Bit's saved input
  // adds 2nh = 8388608; the MLP norm's output (no adapter) 2nh = 8388608; down_proj's input
  // (the product, no adapter) 2n h_ffn = 33554432: 50331648 in all.
  const memest_model m = llama1b();
  memest::ActivationLayout x;
  x.seq_len = 2048;
  x.micro_batch = 1;
  memest::EagerBlockOptions o;
  o.lora = true;
  o.lora_targets = memest::kLoraQ | memest::kLoraV;
  o.lora_rank = 16;
  o.lora_dropout = true;
  const double lora = memest::eager_block_bytes(m, x, o).total();
  o.frozen_linears_save_input = true;
  CHECK(memest::eager_block_bytes(m, x, o).total() - lora == 50331648.0);
  // every linear adapted, no dropout: each input is already the adapters' shared tensor
  o.lora_targets = memest::kLoraAll;
  o.lora_dropout = false;
  o.frozen_linears_save_input = false;
  const double all = memest::eager_block_bytes(m, x, o).total();
  o.frozen_linears_save_input = true;
  CHECK(memest::eager_block_bytes(m, x, o).total() == all);
}

namespace {
test::json lora_request(const std::string& type) {
  return {{"mode", "pretrain"},
          {"model", {{"model_type", "llama"}, {"hidden_size", 2048}, {"num_hidden_layers", 16},
                     {"num_attention_heads", 32}, {"num_key_value_heads", 8}, {"head_dim", 64},
                     {"intermediate_size", 8192}, {"vocab_size", 128256},
                     {"tie_word_embeddings", true}, {"max_position_embeddings", 131072}}},
          {"gpu", "h100-80gb"},
          {"parallel", {{"gpus", 1}}},
          {"training",
           {{"framework", "pytorch"}, {"seq_len", 2048}, {"micro_batch", 4}, {"global_batch", 4},
            {"param_dtype", "bf16"}, {"optimizer", "adamw"},
            {"adapter",
             {{"type", type}, {"rank", 16}, {"alpha", 32}, {"dropout", 0.05},
              {"targets", {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                           "down_proj"}}}}}}};
}
}  // namespace

TEST_CASE("adapters: the parts of a LoRA and a QLoRA run, named apart") {
  // LoRA on Llama-3.2-1B (1235814400 parameters, tied): the frozen bf16 base 2471628800 B;
  // 11272192 fp32 adapters 45088768 B, their fp32 gradients the same, AdamW's two fp32 moments
  // (no master under plain PyTorch) 90177536 B.
  auto a = test::request(lora_request("lora"));
  REQUIRE(a.status == MEMEST_OK);
  const auto& p = a.body["adapter"];
  CHECK(a.body["trainable_parameters"] == 11272192.0);
  CHECK(p["base_weights_bytes"] == 2471628800.0);
  CHECK(p["adapter_weights_bytes"] == 45088768.0);
  CHECK(p["adapter_gradients_bytes"] == 45088768.0);
  CHECK(p["adapter_optimizer_bytes"] == 90177536.0);
  CHECK(p["quant_metadata_bytes"] == 0.0);
  const auto& s = a.body["stages"][0];
  CHECK(s["weights_bytes"] == 2471628800.0 + 45088768.0);
  CHECK(s["gradients_bytes"] == 45088768.0);
  CHECK(s["optimizer_bytes"] == 90177536.0);
  CHECK(a.body["training"]["adapter"]["type"] == "lora");
  CHECK(a.body["training"]["adapter"]["dtype"] == "fp32");
  // QLoRA: the 973078528 block-linear weights in NF4 (486539264 B) + the rest in bf16
  // (262735872 * 2 = 525471744): 1012011008 B; absmax 60817408 B; one 2048 x 8192 weight
  // dequantised to bf16 at a time: 33554432 B.
  a = test::request(lora_request("qlora"));
  REQUIRE(a.status == MEMEST_OK);
  CHECK(a.body["adapter"]["base_weights_bytes"] == 1012011008.0);
  CHECK(a.body["adapter"]["quant_metadata_bytes"] == 60817408.0);
  CHECK(a.body["adapter"]["dequant_bytes"] == 33554432.0);
  CHECK(a.body["training"]["adapter"]["double_quant"] == false);
  auto dq = lora_request("qlora");
  dq["training"]["adapter"]["double_quant"] = true;
  a = test::request(dq);
  REQUIRE(a.status == MEMEST_OK);
  CHECK(a.body["adapter"]["quant_metadata_bytes"] == 15441920.0);
}

TEST_CASE("adapters: bad adapters are refused, naming the field and the reason") {
  auto refused = [](test::json req, const char* field) {
    const auto a = test::request(req);
    CHECK(a.status != MEMEST_OK);
    CHECK(a.status != MEMEST_ERR_INTERNAL);
    CHECK(a.body["error"]["field"] == field);
    return a.body["error"]["message"].get<std::string>();
  };
  auto r = lora_request("lora");
  r["training"]["adapter"]["rank"] = 0;
  refused(r, "training.adapter.rank");
  // k_proj is 2048 -> 512: rank 513 is above its smaller side
  r["training"]["adapter"]["rank"] = 513;
  CHECK(refused(r, "training.adapter.rank").find("512") != std::string::npos);
  r = lora_request("lora");
  r["training"]["adapter"]["targets"] = {"q_proj", "c_attn"};
  refused(r, "training.adapter.targets[1]");
  r = lora_request("lora");
  r["training"]["adapter"]["type"] = "dora";
  CHECK(refused(r, "training.adapter.type").find("dora.py") != std::string::npos);
  r["training"]["adapter"]["type"] = "ia3";
  refused(r, "training.adapter.type");
  r = lora_request("qlora");
  r["training"]["param_dtype"] = "fp32";
  refused(r, "training.param_dtype");
  r = lora_request("lora");
  r["training"]["adapter"]["double_quant"] = true;
  refused(r, "training.adapter.double_quant");
  r = lora_request("lora");
  r["training"]["framework"] = "megatron";
  r["training"]["adapter"]["dtype"] = "fp32";
  // Megatron builds its adapters in params_dtype (test_megatron_lora.cpp): fp32 ones are refused
  CHECK(refused(r, "training.adapter.dtype").find("params_dtype") != std::string::npos);
  r = lora_request("qlora");
  r["training"]["framework"] = "megatron";
  refused(r, "training.adapter");
  r = lora_request("lora");
  r["training"]["framework"] = "fsdp";
  r["parallel"] = {{"gpus", 2}, {"tp", 2}};
  refused(r, "parallel.tp");
  r = lora_request("lora");
  r["training"]["adapter"]["dtype"] = "fp8";
  refused(r, "training.adapter.dtype");
  // a GELU model has no gate_proj
  test::json g = lora_request("lora");
  g["model"] = {{"model_type", "gpt2"}, {"n_embd", 768}, {"n_layer", 12}, {"n_head", 12},
                {"vocab_size", 50257}, {"n_positions", 1024}};
  refused(g, "training.adapter.targets");
  // the layout search of an adapter run keeps it unsplit: pure data parallelism (or sharding)
  test::json s = lora_request("qlora");
  s["mode"] = "search";
  s["training"].erase("micro_batch");
  s["training"]["framework"] = "fsdp";
  s["training"]["global_batch"] = 64;
  s["parallel"] = {{"gpus", 8}};
  s["search"] = {{"top", 1000}, {"zero", {0, 2, 3}}};
  const test::Answer found = test::request(s);
  REQUIRE(found.status == MEMEST_OK);
  REQUIRE(found.body["count"].get<int>() > 0);
  CHECK(found.body["pruned"]["framework"].get<uint64_t>() > 0);  // tp, cp or pp > 1
  for (const auto& e : found.body["results"]) {
    CHECK(e["layout"]["tp"] == 1);
    CHECK(e["layout"]["cp"] == 1);
    CHECK(e["layout"]["pp"] == 1);
    CHECK(e["layout"]["dp"] == 8);
    CHECK(e["throughput"]["step_seconds"].get<double>() > 0);
  }
  // its single estimate is the same (the search's cache of block times included)
  const test::json& best = found.body["results"][0];
  test::json one = lora_request("qlora");
  one["training"]["framework"] = "fsdp";
  one["training"]["global_batch"] = 64;
  one["training"]["micro_batch"] = best["layout"]["micro_batch"];
  one["training"]["recompute"] = best["layout"]["recompute"];
  one["parallel"] = {{"gpus", 8}, {"zero", best["layout"]["zero"]}};
  const test::Answer single = test::request(one);
  REQUIRE(single.status == MEMEST_OK);
  CHECK(single.body["peak_bytes"] == best["peak_bytes"]);
  CHECK(single.body["throughput"]["step_seconds"].get<double>() ==
        doctest::Approx(best["throughput"]["step_seconds"].get<double>()));
}

TEST_CASE("LoRA: peft's fp32 adapters cast every adapted input to fp32 (own copy each)") {
  // Llama-3.2-1B, n = 2048 tokens, all seven adapted, r 16, no dropout. bf16 adapters share
  // each norm output (2h + 2h), the SDPA output (0 more) and the product (2f), r-wide outputs
  // 7 * 2r. fp32 adapters: q, k, v 3 * 4h, gate, up 2 * 4h, o 4h, down 4f, outputs 7 * 4r.
  // Difference per token: 24h - 4h + 4f - 2f + 14r = 40960 + 16384 + 224 = 57568 B; * 2048 =
  // 117899264. (The H100 runs: the measured gap to the bf16-adapter count is this mechanism.)
  const memest_model m = llama1b();
  memest::ActivationLayout x;
  x.seq_len = 2048;
  x.micro_batch = 1;
  memest::EagerBlockOptions o;
  o.lora = true;
  o.lora_targets = memest::kLoraAll;
  o.lora_rank = 16;
  const double bf16 = memest::eager_block_bytes(m, x, o).total();
  o.adapter_bytes = 4;
  CHECK(memest::eager_block_bytes(m, x, o).total() - bf16 == 117899264.0);
  // With dropout the fp32 dropout output (4) and its mask (1) replace bf16's output and mask
  // (3): +2 per element of each adapter's input, per token 2 * 5h (q, k, v, gate, up) + 2h (o)
  // + 2f (down) = 24576 + 16384 = 40960, and the r-wide outputs 7 * (4 - 2) * 16 = 224.
  o.lora_dropout = true;
  const double fp32_dropout = memest::eager_block_bytes(m, x, o).total();
  o.adapter_bytes = 2;
  CHECK(fp32_dropout - memest::eager_block_bytes(m, x, o).total() == (40960.0 + 224) * 2048);
}

TEST_CASE("fine-tuning: LoRA and QLoRA beside CPU offloading, marked as a different method") {
  // LLaMA-7B on the default 4 x V100 16GB at seq 512: no full fine-tuning method fits batch 1,
  // Algorithm 1 falls back to CPU offloading (LLMem's result, unchanged), and the adapters are
  // listed beside it, never selected.
  const auto a = test::request(test::json{{"mode", "finetune"}, {"model", "llama-7b"},
                                          {"gpu", "v100-16gb"}, {"parallel", {{"gpus", 4}}},
                                          {"finetune", {{"method", "auto"}}}});
  REQUIRE(a.status == MEMEST_OK);
  CHECK(a.body["selected"] == "cpu_offload");
  REQUIRE(a.body["alternatives"].size() == 2);
  for (const auto& alt : a.body["alternatives"]) {
    CHECK(alt["different_training_method"] == true);
    CHECK(alt["framework"] == "fsdp");
    // q_proj + v_proj at r 8 on LLaMA-7B (MHA): 2 * 8 * (4096 + 4096) * 32 = 4194304
    CHECK(alt["trainable_parameters"] == 4194304.0);
    const int64_t b = alt["max_batch"].get<int64_t>();
    REQUIRE(b > 0);
    // the largest batch: the same adapter at b fits the GPU, at b + 1 it does not
    auto at = [&](int64_t batch) {
      test::json req = {{"mode", "pretrain"}, {"model", "llama-7b"}, {"gpu", "v100-16gb"},
                        {"parallel", {{"gpus", 4}, {"zero", 3}}},
                        {"training",
                         {{"framework", "fsdp"}, {"seq_len", 512}, {"micro_batch", batch},
                          {"global_batch", batch * 4}, {"recompute", "full"},
                          {"flash_attention", false}, {"param_dtype", "bf16"},
                          {"optimizer", "adamw"}, {"adapter", alt["adapter"]}}}};
      const auto r = test::request(req);
      REQUIRE(r.status == MEMEST_OK);
      return r.body;
    };
    CHECK(at(b)["oom_predicted"] == false);
    CHECK(at(b)["peak_bytes"] == alt["peak_bytes"]);
    CHECK(at(b + 1)["oom_predicted"] == true);
  }
}

TEST_CASE("fine-tuning: on one GPU the adapter alternatives run plain PyTorch, not a ZeRO stage") {
  // Llama-3.1-8B on one RTX 4090 at seq 512: full fine-tuning falls back to CPU offloading;
  // the alternatives run under framework pytorch and must be estimated, not refused (they
  // were refused with "parallel.zero" when the alternative kept FSDP's zero 3).
  const auto a = test::request(test::json{{"mode", "finetune"}, {"model", "llama-3.1-8b"},
                                          {"gpu", "rtx4090-24gb"}, {"parallel", {{"gpus", 1}}},
                                          {"training", {{"seq_len", 512}}},
                                          {"finetune", {{"method", "auto"}}}});
  REQUIRE(a.status == MEMEST_OK);
  CHECK(a.body["selected"] == "cpu_offload");
  CHECK(a.body["layout"]["gpus"] == 1);  // the answer names the GPU count it was asked about
  REQUIRE(a.body["alternatives"].size() == 2);
  for (const auto& alt : a.body["alternatives"]) {
    CHECK(alt["framework"] == "pytorch");
    CHECK_FALSE(alt.contains("reason"));
    CHECK(alt["peak_bytes"].get<double>() > 0);
  }
  // QLoRA's NF4 base leaves room for a batch on 24 GB
  CHECK(a.body["alternatives"][1]["max_batch"].get<int64_t>() >= 1);
}
