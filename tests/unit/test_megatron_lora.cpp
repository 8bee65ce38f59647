// LoRA under Megatron-Core (ms-swift's Megatron back end, swift/megatron/tuners/lora.py
// LoraParallelLinear): the adapters as each tensor-parallel rank holds them, Megatron's states
// for the trainable parameters only, and the saved tensors a frozen base frees and the adapters
// add. Every expected value is worked by hand in the comment above it.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "activations/activations.hpp"
#include "helpers.hpp"
#include "model/adapter.hpp"
#include "model/presets.hpp"
#include "requests.hpp"

using namespace memest;
using test::ok;
using test::refused_field;

namespace {

constexpr uint32_t kAllBlockTargets =
    lora_bit(MEMEST_LORA_Q_PROJ) | lora_bit(MEMEST_LORA_K_PROJ) | lora_bit(MEMEST_LORA_V_PROJ) |
    lora_bit(MEMEST_LORA_O_PROJ) | lora_bit(MEMEST_LORA_GATE_PROJ) |
    lora_bit(MEMEST_LORA_UP_PROJ) | lora_bit(MEMEST_LORA_DOWN_PROJ);

test::json megatron_lora(const test::json& adapter, int tp) {
  return {{"mode", "pretrain"},
          {"model", "llama-3.1-8b"},
          {"gpu", "h100-80gb"},
          {"parallel", {{"gpus", 8}, {"tp", tp}, {"pp", 1}, {"zero", 1}}},
          {"training",
           {{"seq_len", 4096},
            {"micro_batch", 1},
            {"global_batch", 64},
            {"framework", "megatron"},
            {"adapter", adapter}}}};
}

const test::json kAllLinearBf16 = {
    {"type", "lora"},
    {"rank", 16},
    {"dtype", "bf16"},
    {"targets", {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}}};

}  // namespace

TEST_CASE("Megatron LoRA: adapters per tensor-parallel rank") {
  // Llama-3.1-8B: h 4096, 32 heads of 128, 8 KV heads, f 14336. r = 16, t = 2.
  // linear_qkv (column): A whole r h = 65536, B split r (4096 + 2 * 1024) / 2 = 49152 -> 114688
  // linear_proj (row): A split r 4096 / 2 = 32768, B whole r h = 65536 -> 98304
  // linear_fc1 (column): 65536 + r 2 * 14336 / 2 = 229376 -> 294912
  // linear_fc2 (row): r 14336 / 2 = 114688 + 65536 -> 180224
  // one layer: 688128
  const memest_model m = find_model_preset("llama-3.1-8b", "model").model;
  const MegatronAdapterParams p = megatron_adapter_parameters(m, kAllBlockTargets, 16, 2, 1, 1);
  CHECK(p.dense_layer == 688128.0);
  CHECK(p.moe_layer == 0.0);
  // t = 1: r (in + out) per linear, as peft counts them: 16 (4096 + 6144) + 16 (4096 + 4096)
  // + 16 (4096 + 28672) + 16 (14336 + 4096) = 163840 + 131072 + 524288 + 294912 = 1114112
  CHECK(megatron_adapter_parameters(m, kAllBlockTargets, 16, 1, 1, 1).dense_layer == 1114112.0);
  // Megatron fuses q, k and v: q_proj alone adapts all of linear_qkv (t = 1: 163840)
  CHECK(megatron_adapter_parameters(m, lora_bit(MEMEST_LORA_Q_PROJ), 16, 1, 1, 1).dense_layer ==
        163840.0);
  // the whole model: 32 layers x 1114112 = 35651584
  CHECK(megatron_adapter_total(m, kAllBlockTargets, 16, 0) == 35651584.0);
}

TEST_CASE("Megatron LoRA: routed experts split over ep and etp, the router whole") {
  // Qwen3-30B-A3B: h 2048, 128 experts of width 768, no shared expert. gate/up/down on the
  // experts, ep 8, etp 1: 16 local experts, each fc1 16 (2048 + 1536) = 57344 and fc2
  // 16 (768 + 2048) = 45056: 16 x 102400 = 1638400. The router (r = 16): 16 (2048 + 128) = 34816.
  const memest_model m = find_model_preset("qwen3-30b-a3b", "model").model;
  const uint32_t mlp = lora_bit(MEMEST_LORA_GATE_PROJ) | lora_bit(MEMEST_LORA_UP_PROJ) |
                       lora_bit(MEMEST_LORA_DOWN_PROJ);
  const MegatronAdapterParams p = megatron_adapter_parameters(m, mlp, 16, 1, 8, 1);
  CHECK(p.moe_experts == 1638400.0);
  CHECK(p.moe_layer == 0.0);
  const MegatronAdapterParams router =
      megatron_adapter_parameters(m, lora_bit(MEMEST_LORA_ROUTER), 16, 4, 8, 1);
  CHECK(router.moe_layer == 34816.0);
}

TEST_CASE("Megatron LoRA: the saved tensors a frozen layer frees and its adapters add") {
  // Llama-3.1-8B, s 4096, b 1, t 2 with SP, FlashAttention, r 16, no dropout: n = 4096 tokens.
  // freed: linear_qkv's normed input 2 n h / 2 = 16777216; linear_fc1's the same; linear_fc2's
  // input 2 n f / t = 2 x 4096 x 7168 = 58720256.
  // adapted linear_qkv: lora_A keeps the gathered input 2 n h = 33554432, lora_B 2 n r = 131072;
  // linear_proj: lora_B 131072 (FlashAttention keeps lora_A's input); linear_fc1: 33554432 +
  // 131072; linear_fc2: its input back 58720256 + 131072.
  // all seven: -16777216 + 33685504 + 131072 - 16777216 - 58720256 + 33685504 + 58851328
  //          = 34078720
  const memest_model m = find_model_preset("llama-3.1-8b", "model").model;
  ActivationLayout x;
  x.seq_len = 4096;
  x.micro_batch = 1;
  x.tp = 2;
  MegatronLoraActivation a;
  a.targets = kAllBlockTargets;
  a.rank = 16;
  CHECK(megatron_lora_layer_delta(m, x, a, false, 1, 0) == 34078720.0);
  // q and v only (all of linear_qkv): -16777216 + 33685504 - 16777216 - 58720256 = -58589184
  a.targets = lora_bit(MEMEST_LORA_Q_PROJ) | lora_bit(MEMEST_LORA_V_PROJ);
  CHECK(megatron_lora_layer_delta(m, x, a, false, 1, 0) == -58589184.0);
  // dropout 0.05: lora_A keeps its dropout output and mask, 3 n h = 50331648, in place of the
  // gathered input: -16777216 + 50331648 + 131072 - 16777216 - 58720256 = -41811968
  a.dropout = true;
  CHECK(megatron_lora_layer_delta(m, x, a, false, 1, 0) == -41811968.0);
  // full recomputation keeps the layer input only, with or without adapters
  x.recompute = MEMEST_RECOMPUTE_FULL;
  CHECK(megatron_lora_layer_delta(m, x, a, false, 1, 0) == 0.0);
}

TEST_CASE("Megatron LoRA: the states of the trainable parameters only") {
  // t 2, dp 4 (8 GPUs), zero 1 (the distributed optimizer over dp): 32 x 688128 = 22020096
  // adapter parameters a rank: weights 2 B = 44040192, fp32 main gradients 4 B = 88080384,
  // main copy and moments 12 B / 4 = 66060288. The frozen base keeps 2 B per parameter.
  const test::json r = ok(megatron_lora(kAllLinearBf16, 2));
  const test::json& s = r["stages"][0];
  const test::json& ad = s["adapter"];
  CHECK(ad["trainable_parameters"].get<double>() == 22020096.0);
  CHECK(ad["adapter_weights_bytes"].get<double>() == 44040192.0);
  CHECK(ad["adapter_gradients_bytes"].get<double>() == 88080384.0);
  CHECK(ad["adapter_optimizer_bytes"].get<double>() == 66060288.0);
  const double base_params = s["parameters"].get<double>();
  CHECK(ad["base_weights_bytes"].get<double>() == base_params * 2);
  CHECK(s["gradients_bytes"].get<double>() == 88080384.0);
  CHECK(r["trainable_parameters"].get<double>() == 35651584.0);
}

TEST_CASE("Megatron LoRA: the stage's activations move by the layers' deltas") {
  // The same run without an adapter keeps Megatron's full-training activations; with LoRA on
  // all seven projections each of the 32 layers adds 34078720 bytes (one micro-batch in flight
  // at pp 1): 32 x 34078720 = 1090519040.
  const test::json lora = ok(megatron_lora(kAllLinearBf16, 2));
  test::json full_req = megatron_lora(kAllLinearBf16, 2);
  full_req["training"].erase("adapter");
  const test::json full = ok(full_req);
  CHECK(lora["stages"][0]["activations_bytes"].get<double>() -
            full["stages"][0]["activations_bytes"].get<double>() ==
        1090519040.0);
}

TEST_CASE("Megatron LoRA: what it refuses, by field") {
  test::json q = kAllLinearBf16;
  q["type"] = "qlora";
  CHECK(refused_field(megatron_lora(q, 2)) == "training.adapter");
  test::json fp32 = kAllLinearBf16;
  fp32["dtype"] = "fp32";
  CHECK(refused_field(megatron_lora(fp32, 2)) == "training.adapter.dtype");
  test::json head = kAllLinearBf16;
  head["targets"] = {"q_proj", "lm_head"};
  CHECK(refused_field(megatron_lora(head, 2)) == "training.adapter.targets");
  // outside Megatron, tensor parallelism with adapters stays refused
  test::json fsdp = megatron_lora(kAllLinearBf16, 2);
  fsdp["training"]["framework"] = "fsdp";
  CHECK(refused_field(fsdp) == "parallel.tp");
}

TEST_CASE("Adapter dtype by default: the model's param_dtype under Megatron, fp32 elsewhere (1.16)") {
  // Llama-3.1-8B, all seven block projections at r 16 over tp 2, on Megatron's fused linears
  // (A whole and B split on a column-parallel one, A split and B whole on a row-parallel one):
  // linear_qkv 4096 x 16 + 16 x 6144 / 2 = 114688, linear_proj 2048 x 16 + 16 x 4096 = 98304,
  // linear_fc1 4096 x 16 + 16 x 28672 / 2 = 294912, linear_fc2 7168 x 16 + 16 x 4096 = 180224:
  // 688128 per layer and rank, 32 layers = 22020096, bf16: 44040192 bytes on a rank.
  test::json derived = kAllLinearBf16;
  derived.erase("dtype");
  const test::json a = ok(megatron_lora(derived, 2));
  const test::json b = ok(megatron_lora(kAllLinearBf16, 2));
  CHECK(a["training"]["adapter"]["dtype"] == "bf16");
  CHECK(a["stages"][0]["adapter"]["adapter_weights_bytes"] == 44040192.0);
  CHECK(a["stages"][0] == b["stages"][0]);
  // outside Megatron the default stays peft's fp32: on one GPU, unfused (q 16 x 8192, k and v
  // 16 x 5120, o 16 x 8192, gate, up and down 16 x 18432) 1310720 per layer, 41943040 in all,
  // 4 bytes each
  test::json pytorch = megatron_lora(derived, 1);
  pytorch["training"]["framework"] = "pytorch";
  pytorch["parallel"] = {{"gpus", 1}};
  const test::json c = ok(pytorch);
  CHECK(c["training"]["adapter"]["dtype"] == "fp32");
  CHECK(c["stages"][0]["adapter"]["adapter_weights_bytes"] == 41943040.0 * 4);
  // the typed API: _init keeps fp32; MEMEST_ADAPTER_BYTES_DERIVE asks for the stack's
  memest_test::Pretrain p("llama-3.1-8b", "h100-80gb");
  CHECK(p.r.adapter_bytes == 4.0);
  p.r.framework = MEMEST_FRAMEWORK_MEGATRON;
  p.r.tp = 2, p.r.pp = 1, p.r.cp = 1, p.r.gpus = 8, p.r.zero = 1;
  p.r.seq_len = 4096, p.r.micro_batch = 1, p.r.global_batch = 64;
  p.r.adapter = MEMEST_ADAPTER_LORA;
  p.r.lora_rank = 16;
  p.r.lora_targets = kAllBlockTargets;
  memest_pretrain_result out = memest_test::sized<memest_pretrain_result>();
  CHECK(p.run(out) == MEMEST_ERR_INVALID_ARGUMENT);  // fp32 adapters under Megatron
  CHECK(std::string(memest_last_error_field()) == "training.adapter.dtype");
  p.r.adapter_bytes = MEMEST_ADAPTER_BYTES_DERIVE;
  memest_stage stage;
  std::memset(&stage, 0, sizeof stage);
  REQUIRE(p.run(out, &stage, 1) == MEMEST_OK);
  CHECK(stage.adapter_weights_bytes == 44040192.0);
  CHECK(out.peak_bytes == b["peak_bytes"].get<double>());
}
