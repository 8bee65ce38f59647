// peft's "all-linear" adapter target and the named fine-tuning recipes (docs/adapters.md
// "all-linear" and "Recipes"), through the JSON entry point. Every trainable-parameter count is
// worked by hand in the comment above it: a LoRA adapter on a linear in -> out has r (in + out)
// parameters (lora_A r x in, lora_B out x r).
#include <doctest/doctest.h>

#include <string>

#include "helpers.hpp"

namespace {

using test::json;

// One GPU, data parallel only, plain PyTorch: the smallest request an adapter is read in.
json lora_request(const std::string& model, const json& adapter, int seq_len = 2048) {
  return {{"mode", "pretrain"},
          {"model", model},
          {"gpu", "h100-80gb"},
          {"parallel", {{"gpus", 1}, {"tp", 1}, {"pp", 1}, {"zero", 0}}},
          {"training",
           {{"seq_len", seq_len}, {"micro_batch", 1}, {"framework", "pytorch"}, {"adapter", adapter}}}};
}

// A recipe request: the model, the GPU and the batch shape only, the rest from the recipe.
json recipe_request(const std::string& recipe, int gpus) {
  return {{"mode", "pretrain"},
          {"recipe", recipe},
          {"model", "llama-3.1-8b"},
          {"gpu", "h100-80gb"},
          {"parallel", {{"gpus", gpus}}},
          {"training", {{"seq_len", 2048}, {"micro_batch", 1}}}};
}

}  // namespace

TEST_CASE("all-linear on Llama-3.1-8B is the seven projections of every block") {
  // Llama-3.1-8B: h 4096, 32 layers, 32 heads and 8 KV heads of 128 (q 4096, k/v 1024 wide),
  // h_ffn 14336. r 16, per layer:
  //   q_proj    16 (4096 + 4096)  = 131072
  //   k_proj    16 (4096 + 1024)  =  81920
  //   v_proj    16 (4096 + 1024)  =  81920
  //   o_proj    16 (4096 + 4096)  = 131072
  //   gate_proj 16 (4096 + 14336) = 294912
  //   up_proj   16 (4096 + 14336) = 294912
  //   down_proj 16 (14336 + 4096) = 294912
  //   sum 1310720; x 32 layers = 41943040 (no lm_head, no embedding: neither is adapted)
  const json r = test::ok(lora_request("llama-3.1-8b",
                                       {{"type", "lora"}, {"rank", 16}, {"targets", {"all-linear"}}}));
  CHECK(r["trainable_parameters"] == 41943040.0);
  const json& a = r["training"]["adapter"];
  CHECK(a["targets"] ==
        json({"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}));
  CHECK(a["all_linear"] == true);
  // the same request with the seven names listed gives the same answer, without "all_linear"
  const json listed = test::ok(lora_request(
      "llama-3.1-8b", {{"type", "lora"},
                       {"rank", 16},
                       {"targets", {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                    "up_proj", "down_proj"}}}));
  CHECK(listed["peak_bytes"] == r["peak_bytes"]);
  CHECK_FALSE(listed["training"]["adapter"].contains("all_linear"));
}

TEST_CASE("all-linear on an MoE model adapts the router and every expert") {
  // Mixtral-8x7B: h 4096, 32 layers, q 4096, k/v 1024, 8 experts of 14336. r 8, per layer:
  //   attention 8 (8192) + 8 (5120) + 8 (5120) + 8 (8192)        = 212992
  //   router    8 (4096 + 8)                                     =  32832
  //   experts   8 x 3 x 8 (4096 + 14336) = 8 x 3 x 147456        = 3538944
  //   sum 3784768; x 32 = 121112576
  const json r = test::ok(lora_request("mixtral-8x7b",
                                       {{"type", "lora"}, {"rank", 8}, {"targets", {"all-linear"}}}));
  CHECK(r["trainable_parameters"] == 121112576.0);
  CHECK(r["training"]["adapter"]["targets"] == json({"q_proj", "k_proj", "v_proj", "o_proj",
                                                     "gate_proj", "up_proj", "down_proj",
                                                     "router"}));
}

TEST_CASE("all-linear on GPT-2 has no gate_proj: c_attn, c_proj, c_fc and the MLP's c_proj") {
  // GPT-2: h 768, 12 layers, fused c_attn (768 -> 2304), GELU MLP of 3072. r 8, per layer:
  //   c_attn 8 (768 + 2304) = 24576, attn c_proj 8 (768 + 768) = 12288,
  //   c_fc 8 (768 + 3072) = 30720, mlp c_proj 8 (3072 + 768) = 30720; sum 98304
  //   x 12 = 1179648
  const json r = test::ok(lora_request("gpt2", {{"type", "lora"}, {"targets", {"all-linear"}}}, 1024));
  CHECK(r["trainable_parameters"] == 1179648.0);
  CHECK(r["training"]["adapter"]["targets"] ==
        json({"q_proj", "k_proj", "v_proj", "o_proj", "up_proj", "down_proj"}));
}

TEST_CASE("all-linear beside another name, and where it cannot be said") {
  // with lm_head too: Llama-3.1-8B r 8 all-linear = 41943040 / 2 = 20971520, lm_head
  // 8 (4096 + 128256) = 1058816; 22030336
  const json r = test::ok(lora_request(
      "llama-3.1-8b", {{"type", "lora"}, {"rank", 8}, {"targets", {"all-linear", "lm_head"}}}));
  CHECK(r["trainable_parameters"] == 22030336.0);
  // DeepSeek-V3's latent attention has no q/k/v_proj: refused, naming the list item
  const test::Answer mla = test::request(
      lora_request("deepseek-v2-lite", {{"type", "lora"}, {"targets", {"all-linear"}}}));
  CHECK(mla.status == MEMEST_ERR_UNSUPPORTED);
  CHECK(mla.body["error"]["field"] == "training.adapter.targets[0]");
  // a misspelling is still refused, the message offering all-linear
  const test::Answer bad = test::request(
      lora_request("llama-3.1-8b", {{"type", "lora"}, {"targets", {"all_linear"}}}));
  CHECK(bad.status == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(bad.body["error"]["field"] == "training.adapter.targets[0]");
  CHECK(bad.body["error"]["message"].get<std::string>().find("all-linear") != std::string::npos);
}

TEST_CASE("the recipes are listed by the enums and presets modes") {
  const json enums = test::ok({{"mode", "enums"}});
  CHECK(enums["recipes"] == json({"answerai-fsdp-qlora", "torchtune-lora-single-device",
                                  "torchtune-lora", "peft-lora-defaults"}));
  const json presets = test::ok({{"mode", "presets"}});
  REQUIRE(presets["recipes"].size() == 4);
  for (const json& r : presets["recipes"]) {
    INFO(r["name"]);
    CHECK_FALSE(r["source"].get<std::string>().empty());
    // every field has its source
    CHECK(r["fields"].size() == r["field_sources"].size());
    for (auto it = r["fields"].begin(); it != r["fields"].end(); ++it) {
      CHECK(r["field_sources"].contains(it.key()));
    }
  }
  const json& answerai = presets["recipes"][0];
  CHECK(answerai["fields"]["training.adapter.rank"] == 64);
  CHECK(answerai["fields"]["training.adapter.alpha"] == 16);
  CHECK(answerai["fields"]["training.adapter.dropout"] == 0.1);
}

TEST_CASE("answerai-fsdp-qlora: rank 64 on six projections, the same answer as its fields") {
  // lora_target_modules "all" = q, k, v, gate, up, down (no o_proj). r 64, per layer:
  //   q 64 (8192) = 524288, k 64 (5120) = 327680, v 327680,
  //   gate/up/down 3 x 64 (18432) = 3538944; sum 4718592; x 32 = 150994944
  const json r = test::ok(recipe_request("answerai-fsdp-qlora", 2));
  CHECK(r["trainable_parameters"] == 150994944.0);
  const json& a = r["training"]["adapter"];
  CHECK(a["type"] == "qlora");
  CHECK(a["rank"] == 64);
  CHECK(a["alpha"] == 16.0);
  CHECK(a["dropout"] == 0.1);
  CHECK(a["double_quant"] == true);
  CHECK(a["dtype"] == "fp32");
  CHECK(r["recipe"]["name"] == "answerai-fsdp-qlora");
  CHECK(r["recipe"]["set"]["training.framework"] == "fsdp1");
  CHECK(r["recipe"]["set"]["training.offload.params"] == true);
  CHECK(r["recipe"]["kept"].empty());
  // the recipe is its fields: the request with them written out answers the same peak
  json explicit_request = recipe_request("answerai-fsdp-qlora", 2);
  explicit_request.erase("recipe");
  explicit_request["parallel"].update({{"tp", 1}, {"pp", 1}, {"zero", 3}});
  explicit_request["training"].update(
      {{"framework", "fsdp1"}, {"fsdp_use_orig_params", false}, {"param_dtype", "bf16"},
       {"grad_dtype", "bf16"}, {"optimizer", "adamw_foreach"}, {"recompute", "full"},
       {"offload", {{"params", true}, {"optimizer", true}}},
       {"adapter",
        {{"type", "qlora"}, {"rank", 64}, {"alpha", 16}, {"dropout", 0.1},
         {"targets", {"q_proj", "k_proj", "v_proj", "gate_proj", "up_proj", "down_proj"}},
         {"double_quant", true}, {"dtype", "fp32"}}}});
  const json e = test::ok(explicit_request);
  CHECK(e["peak_bytes"] == r["peak_bytes"]);
  CHECK(e["host_bytes"] == r["host_bytes"]);
  CHECK_FALSE(e.contains("recipe"));
}

TEST_CASE("torchtune and peft recipes") {
  // torchtune: r 8 on q, v, o (output_proj) and the MLP:
  //   q 8 (8192) = 65536, v 8 (5120) = 40960, o 65536, gate/up/down 3 x 8 (18432) = 442368;
  //   sum 614400; x 32 = 19660800
  const json single = test::ok(recipe_request("torchtune-lora-single-device", 1));
  CHECK(single["trainable_parameters"] == 19660800.0);
  CHECK(single["training"]["adapter"]["alpha"] == 16.0);
  CHECK(single["training"]["adapter"]["dtype"] == "bf16");
  CHECK(single["recipe"]["set"]["training.recompute"] == "full");
  CHECK(single["recipe"]["set"]["training.loss"] == "chunked");
  const json distributed = test::ok(recipe_request("torchtune-lora", 2));
  CHECK(distributed["trainable_parameters"] == 19660800.0);
  CHECK(distributed["recipe"]["set"]["training.framework"] == "fsdp");
  CHECK(distributed["recipe"]["set"]["training.recompute"] == "none");
  // peft's defaults: r 8 on q_proj and v_proj: (65536 + 40960) x 32 = 3407872
  json peft = recipe_request("peft-lora-defaults", 1);
  peft["parallel"].update({{"tp", 1}, {"pp", 1}, {"zero", 0}});
  peft["training"]["framework"] = "pytorch";
  const json p = test::ok(peft);
  CHECK(p["trainable_parameters"] == 3407872.0);
  CHECK(p["training"]["adapter"]["alpha"] == 8.0);
  CHECK(p["training"]["adapter"]["dtype"] == "fp32");
}

TEST_CASE("a request's own fields win over its recipe's") {
  // answerai-fsdp-qlora with rank 16: q 16 (8192) + k, v 16 (5120) + gate/up/down 3 x 16 (18432)
  //   = 131072 + 163840 + 884736 = 1179648; x 32 = 37748736
  json req = recipe_request("answerai-fsdp-qlora", 2);
  req["training"]["adapter"] = {{"rank", 16}};
  req["training"]["recompute"] = "none";
  const json r = test::ok(req);
  CHECK(r["trainable_parameters"] == 37748736.0);
  CHECK(r["recipe"]["kept"] == json({"training.recompute", "training.adapter.rank"}));
  CHECK_FALSE(r["recipe"]["set"].contains("training.adapter.rank"));
  CHECK(r["recipe"]["set"]["training.adapter.alpha"] == 16);
}

TEST_CASE("a bad recipe is refused naming the recipe field") {
  json unknown = recipe_request("axolotl", 1);
  const test::Answer a = test::request(unknown);
  CHECK(a.status == MEMEST_ERR_UNKNOWN_PRESET);
  CHECK(a.body["error"]["field"] == "recipe");
  CHECK(a.body["error"]["message"] ==
        "recipe: unknown recipe \"axolotl\": use answerai-fsdp-qlora, "
        "torchtune-lora-single-device, torchtune-lora, peft-lora-defaults");
  json number = recipe_request("peft-lora-defaults", 1);
  number["recipe"] = 3;
  CHECK(test::request(number).status == MEMEST_ERR_TYPE);
  CHECK(test::refused_field(number) == "recipe");
  json search = recipe_request("peft-lora-defaults", 1);
  search["mode"] = "search";
  CHECK(test::refused_field(search) == "recipe");
}
