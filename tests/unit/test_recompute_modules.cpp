// Megatron-Core's recompute modules (--recompute-modules under --recompute-granularity
// selective, ABI 1.11): what each takes out of a layer's saved set, through the request and the
// typed API, and what it adds to the step. Every expected value is worked by hand in the comment
// above it.
#include <doctest/doctest.h>

#include "activations/activations.hpp"
#include "helpers.hpp"
#include "model/model.hpp"
#include "requests.hpp"

using namespace memest;
using test::json;
using test::ok;
using test::refused_field;

namespace {

// The small MoE of test_moe.cpp: h 64, 4 heads, E 8 experts of f_e 32, top-2, one shared expert
// of 64, dense MLP 256.
memest_model small_moe() {
  memest_model m = default_model();
  m.hidden_size = 64, m.num_hidden_layers = 4, m.num_attention_heads = 4;
  m.num_key_value_heads = 4, m.intermediate_size = 256, m.vocab_size = 100;
  m.num_experts = 8, m.num_experts_per_tok = 2, m.moe_intermediate_size = 32;
  m.num_shared_experts = 1, m.shared_expert_intermediate_size = 64;
  return m;
}

// s = 16, b = 1, t = 2, c = 1, SP on, recompute selective with the given modules.
ActivationLayout selective(uint32_t modules) {
  ActivationLayout x;
  x.seq_len = 16, x.micro_batch = 1, x.tp = 2, x.cp = 1;
  x.recompute = MEMEST_RECOMPUTE_SELECTIVE;
  x.recompute_modules = modules;
  return x;
}

constexpr uint32_t bit(memest_recompute_module m) { return 1u << m; }

// A qwen3_moe config.json of the same shape (no shared expert): every layer an MoE layer.
json small_qwen3_moe() {
  return {{"model_type", "qwen3_moe"}, {"hidden_size", 64}, {"num_hidden_layers", 4},
          {"num_attention_heads", 4}, {"num_key_value_heads", 4}, {"head_dim", 16},
          {"intermediate_size", 256}, {"moe_intermediate_size", 32}, {"num_experts", 8},
          {"num_experts_per_tok", 2}, {"vocab_size", 100}, {"max_position_embeddings", 64},
          {"decoder_sparse_step", 1}, {"mlp_only_layers", json::array()},
          {"tie_word_embeddings", false}};
}

json moe_request(const json& modules) {
  json training = {{"framework", "megatron"}, {"seq_len", 16}, {"micro_batch", 1},
                   {"global_batch", 4}, {"recompute", "selective"}};
  if (!modules.is_null()) training["recompute_modules"] = modules;
  return {{"mode", "pretrain"},
          {"model", small_qwen3_moe()},
          {"gpu", "h100-80gb"},
          {"parallel", {{"gpus", 2}, {"tp", 2}, {"pp", 1}, {"zero", 1}, {"sp", true}}},
          {"training", training}};
}

double stage_activations(const json& r) { return r["stages"][0]["activations_bytes"].get<double>(); }

}  // namespace

TEST_CASE("recompute modules: the MoE parts each module drops") {
  // T = 16 / 2 = 8 tokens, R = 8 * 2 * etp 2 = 32 rows (test_moe.cpp): router 320, dispatch
  // 4096, experts R * 6 * f_e / etp = 3072, combine 2112, shared 3072.
  const memest_model m = small_moe();
  const MoeActivationParts plain = moe_activation_parts(m, selective(0), 2, 0);
  CHECK(plain.experts == 3072.0);
  CHECK(plain.shared == 3072.0);
  // moe_act: the activation's output, R * 2 bytes * f_e / etp = 32 * 2 * 16 = 1024, is dropped
  const MoeActivationParts act = moe_activation_parts(m, selective(bit(MEMEST_RECOMPUTE_MODULE_MOE_ACT)), 2, 0);
  CHECK(act.experts == 2048.0);
  CHECK(act.dispatch == 4096.0);
  CHECK(act.shared == 3072.0);
  // shared_experts: the shared part only
  const MoeActivationParts shared =
      moe_activation_parts(m, selective(bit(MEMEST_RECOMPUTE_MODULE_SHARED_EXPERTS)), 2, 0);
  CHECK(shared.shared == 0.0);
  CHECK(shared.routed() == plain.routed());
  // moe: the layer is checkpointed on its input, nothing of it is kept
  CHECK(moe_activation_parts(m, selective(bit(MEMEST_RECOMPUTE_MODULE_MOE)), 2, 0).total() == 0.0);
  // the bits mean nothing outside selective recomputation (Megatron ignores them there)
  ActivationLayout none = selective(bit(MEMEST_RECOMPUTE_MODULE_MOE));
  none.recompute = MEMEST_RECOMPUTE_NONE;
  CHECK(moe_activation_parts(m, none, 2, 0).total() == plain.total());
}

TEST_CASE("recompute modules: norms, the dense MLP and latent attention's up projections") {
  const memest_model m = small_moe();
  const ActivationCoefficients k = activation_coefficients(m, MEMEST_ACTIVATIONS_LLAMA);
  const double moe_plain = moe_layer_activation_bytes(m, k, selective(0), 2, 0);
  const double dense_plain = layer_activation_bytes(m, k, selective(0));
  // core_attn is Megatron's default: the same as selective without modules
  CHECK(layer_activation_bytes(m, k, selective(bit(MEMEST_RECOMPUTE_MODULE_CORE_ATTN))) == dense_plain);
  // layernorm: an MoE layer's pre-MLP norm is a separate TENorm, its output 2 s b h / t =
  // 2 * 16 * 64 / 2 = 1024 bytes is dropped; a dense Llama layer's norms are fused (no change)
  const uint32_t norm = bit(MEMEST_RECOMPUTE_MODULE_LAYERNORM);
  CHECK(moe_plain - moe_layer_activation_bytes(m, k, selective(norm), 2, 0) == 1024.0);
  CHECK(layer_activation_bytes(m, k, selective(norm)) == dense_plain);
  // mlp: a dense layer's SwiGLU tensors 8 * s b * f / t = 8 * 16 * 256 / 2 = 16384 and the fused
  // norm's output 1024; an MoE layer has no dense MLP to recompute
  const uint32_t mlp = bit(MEMEST_RECOMPUTE_MODULE_MLP);
  CHECK(dense_plain - layer_activation_bytes(m, k, selective(mlp)) == 17408.0);
  CHECK(moe_layer_activation_bytes(m, k, selective(mlp), 2, 0) == moe_plain);
  // moe: the routed parts (320 + 4096 + 3072 + 2112) and the shared 3072 = 12672
  CHECK(moe_plain - moe_layer_activation_bytes(m, k, selective(bit(MEMEST_RECOMPUTE_MODULE_MOE)), 2, 0) ==
        12672.0);

  // Latent attention: a = 4 heads, d_nope 16, d_rope 8, d_v 16. mla_up_proj drops Q and K
  // (2 bytes x a x 24 each) and V (2 x a x 16) per token: (4 * 4 * 24 + 2 * 4 * 16) * s b / t =
  // 512 * 16 / 2 = 4096; layernorm drops the separate input norm's output, 1024.
  memest_model mla = m;
  mla.num_experts = 0, mla.num_shared_experts = 0;
  mla.q_lora_rank = 32, mla.kv_lora_rank = 16;
  mla.qk_nope_head_dim = 16, mla.qk_rope_head_dim = 8, mla.v_head_dim = 16;
  REQUIRE(is_mla(mla));
  const ActivationCoefficients km = activation_coefficients(mla, MEMEST_ACTIVATIONS_LLAMA);
  const double mla_plain = layer_activation_bytes(mla, km, selective(0));
  CHECK(mla_plain - layer_activation_bytes(mla, km, selective(bit(MEMEST_RECOMPUTE_MODULE_MLA_UP_PROJ))) ==
        4096.0);
  CHECK(mla_plain - layer_activation_bytes(mla, km, selective(norm)) == 1024.0);
}

TEST_CASE("recompute modules through a request: the stage, the echo, the experts' share") {
  // 4 MoE layers, pp 1 (one micro-batch in flight), tp 2 with SP, etp = tp = 2: per layer the
  // routed parts 320 + 4096 + 3072 + 2112 = 9600 (no shared expert) and the pre-MLP norm's
  // output 1024.
  const json plain = ok(moe_request(nullptr));
  CHECK(plain["training"]["recompute_modules"] == json::array({"core_attn"}));
  CHECK(plain["stages"][0]["experts"]["activations_bytes"].get<double>() == 4 * 9600.0);
  const json moe = ok(moe_request({"moe"}));
  CHECK(moe["training"]["recompute_modules"] == json::array({"moe"}));
  CHECK(stage_activations(plain) - stage_activations(moe) == 4 * 9600.0);
  CHECK(moe["stages"][0]["experts"]["activations_bytes"].get<double>() == 0.0);
  const json both = ok(moe_request({"layernorm", "moe"}));
  CHECK(both["training"]["recompute_modules"] == json::array({"layernorm", "moe"}));
  CHECK(stage_activations(plain) - stage_activations(both) == 4 * (9600.0 + 1024.0));
  // moe_act: 4 x 1024
  CHECK(stage_activations(plain) - stage_activations(ok(moe_request({"moe_act"}))) == 4 * 1024.0);
  // the peak falls with the activations (and their fragmentation share)
  CHECK(both["peak_bytes"].get<double>() < plain["peak_bytes"].get<double>());
  // under recompute none the modules have no effect, and the echo says so
  json none = moe_request({"moe"});
  none["training"]["recompute"] = "none";
  const json r = ok(none);
  CHECK(r["training"]["recompute_modules"] == json::array());
  json none_plain = moe_request(nullptr);
  none_plain["training"]["recompute"] = "none";
  CHECK(r["peak_bytes"] == ok(none_plain)["peak_bytes"]);
}

TEST_CASE("recompute modules through the typed API equal the request's") {
  // Qwen3-30B-A3B, tp 2, ep 4 on 8 H100s, selective with layernorm + moe
  memest_test::Pretrain p("qwen3-30b-a3b", "h100-80gb");
  p.r.gpus = 8, p.r.tp = 2, p.r.ep = 4, p.r.seq_len = 4096, p.r.micro_batch = 1;
  p.r.global_batch = 64;
  p.r.recompute = MEMEST_RECOMPUTE_SELECTIVE;
  p.r.recompute_modules = bit(MEMEST_RECOMPUTE_MODULE_LAYERNORM) | bit(MEMEST_RECOMPUTE_MODULE_MOE);
  memest_pretrain_result typed;
  REQUIRE(p.run(typed) == MEMEST_OK);
  const json r = ok({{"mode", "pretrain"}, {"model", "qwen3-30b-a3b"}, {"gpu", "h100-80gb"},
                     {"parallel", {{"gpus", 8}, {"tp", 2}, {"ep", 4}}},
                     {"training",
                      {{"seq_len", 4096}, {"micro_batch", 1}, {"global_batch", 64},
                       {"recompute", "selective"}, {"recompute_modules", {"layernorm", "moe"}}}}});
  CHECK(typed.peak_bytes == r["peak_bytes"].get<double>());
  memest_test::Pretrain plain = p;
  plain.r.recompute_modules = 0;
  memest_pretrain_result before;
  REQUIRE(plain.run(before) == MEMEST_OK);
  CHECK(typed.peak_bytes < before.peak_bytes);
  // a bit past the last module is refused by name
  p.r.recompute_modules = 1u << MEMEST_RECOMPUTE_MODULE_COUNT;
  CHECK(p.run(typed) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(std::string(memest_last_error_field()) == "training.recompute_modules");
  CHECK(std::string(memest_enum_name(MEMEST_ENUM_RECOMPUTE_MODULE, MEMEST_RECOMPUTE_MODULE_MLA_UP_PROJ)) ==
        "mla_up_proj");
  CHECK(memest_enum_count(MEMEST_ENUM_RECOMPUTE_MODULE) == 7);
}

TEST_CASE("recompute modules: refused by field where they mean nothing") {
  CHECK(refused_field(moe_request({"attn"})) == "training.recompute_modules[0]");
  CHECK(refused_field(moe_request({"moe", 3})) == "training.recompute_modules[1]");
  CHECK(refused_field(moe_request(json::array())) == "training.recompute_modules");
  CHECK(refused_field(moe_request("moe")) == "training.recompute_modules");
  // mla_up_proj without latent attention (Megatron raises the same)
  CHECK(refused_field(moe_request({"mla_up_proj"})) == "training.recompute_modules");
  // the MoE modules on a dense model
  json dense = moe_request({"moe_act"});
  dense["model"] = "llama-3.1-8b";
  CHECK(refused_field(dense) == "training.recompute_modules");
  // another framework recomputes by training.recompute alone
  json fsdp = moe_request({"moe"});
  fsdp["training"]["framework"] = "fsdp";
  CHECK(refused_field(fsdp) == "training.recompute_modules");
}

TEST_CASE("recompute modules in the step: the recomputed MoE layer dispatches and combines again") {
  // With no overlap, an MoE layer's expert-parallel time is passes x (all-to-all + etp gather):
  // 4 passes (dispatch and combine, forward and backward), 6 when the moe module reruns the
  // layer's forward: 1.5 times. Its kernels run again too: recompute > 0 where it was 0.
  memest_test::Pretrain p("qwen3-30b-a3b", "h100-80gb");
  p.r.gpus = 16, p.r.tp = 1, p.r.ep = 16, p.r.seq_len = 4096, p.r.global_batch = 64;
  p.r.recompute = MEMEST_RECOMPUTE_SELECTIVE;
  p.r.comm_overlap = 0;
  auto times = [](const memest_pretrain_request& c) {
    memest_pretrain_result out = memest_test::sized<memest_pretrain_result>();
    REQUIRE(memest_pretrain(&c, &out, nullptr, sizeof(memest_stage), 0) == MEMEST_OK);
    return out;
  };
  const memest_pretrain_result plain = times(p.r);
  p.r.recompute_modules = bit(MEMEST_RECOMPUTE_MODULE_MOE);
  const memest_pretrain_result moe = times(p.r);
  CHECK(plain.recompute_seconds == 0.0);
  CHECK(moe.recompute_seconds > 0.0);
  CHECK(moe.ep_comm_seconds == doctest::Approx(1.5 * plain.ep_comm_seconds).epsilon(1e-12));
  CHECK(moe.step_seconds > plain.step_seconds);
}
