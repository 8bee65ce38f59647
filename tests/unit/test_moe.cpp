// Mixture-of-experts pretraining: expert parallelism (Megatron-Core folding), the expert part
// of every stage, MoE activations and dispatch buffers, MLA activations, throughput from the
// active parameters, and the cross-check against Megatron-LM's theoretical memory formula
// (docs/moe-crosscheck.md). Every expected value is derived by hand in the comments.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "activations/activations.hpp"
#include "helpers.hpp"
#include "model/model.hpp"
#include "overheads/overheads.hpp"
#include "plan/plan.hpp"
#include "pretrain/pretrain.hpp"
#include "throughput/throughput.hpp"

namespace {

using test::json;
using namespace memest;
using test::ok;

// A tiny Llama-style MoE: h = 64, L = 4, 4 heads of 16 (4 KV heads), dense FFN 256, 8 routed
// experts of width 32, top-2, one shared expert of width 64, layer 0 dense, vocab 100, untied.
json tiny_moe() {
  return {{"hidden_size", 64},         {"num_hidden_layers", 4},     {"num_attention_heads", 4},
          {"num_key_value_heads", 4},  {"intermediate_size", 256},   {"vocab_size", 100},
          {"num_experts", 8},          {"num_experts_per_tok", 2},   {"moe_intermediate_size", 32},
          {"n_shared_experts", 1},     {"shared_expert_intermediate_size", 64},
          {"first_k_dense_replace", 1}};
}

test::Answer ask(const json& req) { return test::request(req); }

json tiny_request() {
  return {{"mode", "pretrain"},
          {"model", tiny_moe()},
          {"gpu", "h100-80gb"},
          {"parallel", {{"gpus", 8}, {"tp", 2}, {"pp", 2}, {"ep", 2}}},
          {"training", {{"seq_len", 16}, {"micro_batch", 1}}}};
}

}  // namespace

TEST_CASE("MoE stage parameters: dense layers over tp, routed experts over ep x etp, states over edp") {
  // Per layer (hand count): attention h*q + 2h*kv + q*h = 4 * 64^2 = 16384 (sharded); norms
  // 2 * 64 = 128 (replicated). Dense MLP 3 * 64 * 256 = 49152. MoE layer: shared expert
  // 3 * 64 * 64 = 12288 (sharded), router 64 * 8 = 512 (replicated), routed experts
  // 8 * 3 * 64 * 32 = 49152. Layout: 8 GPUs, tp 2, pp 2, ep 2, etp = tp = 2:
  // dp = 8 / (2*2) = 2, edp = 8 / (2*2*2) = 1.
  const json r = ok(tiny_request());
  CHECK(r["layout"]["ep"] == 2);
  CHECK(r["layout"]["etp"] == 2);
  CHECK(r["layout"]["edp"] == 1);
  CHECK(r["layout"]["dp"] == 2);
  const json& s0 = r["stages"][0];
  const json& s1 = r["stages"][1];
  // Stage 0: layers 0 (dense) and 1 (MoE).
  //   dense layer 65536/2 + 128 = 32896; MoE base (16384 + 12288)/2 + 512 + 128 = 14976;
  //   embedding 6400/2 = 3200: 51072 non-expert; experts 49152 / (ep*etp = 4) = 12288.
  CHECK(s0["experts"]["moe_layers"] == 1);
  CHECK(s0["experts"]["parameters"].get<double>() == doctest::Approx(12288));
  CHECK(s0["parameters"].get<double>() == doctest::Approx(51072 + 12288));
  // States (bf16 weights, fp32 gradients, Adam 12 sharded by ZeRO-1): non-expert optimizer
  // over dp*cp = 2: 51072*12/2 = 306432; experts over edp = 1: 12288*12 = 147456.
  CHECK(s0["experts"]["weights_bytes"].get<double>() == doctest::Approx(24576));
  CHECK(s0["experts"]["gradients_bytes"].get<double>() == doctest::Approx(49152));
  CHECK(s0["experts"]["optimizer_bytes"].get<double>() == doctest::Approx(147456));
  CHECK(s0["optimizer_bytes"].get<double>() == doctest::Approx(306432 + 147456));
  CHECK(s0["weights_bytes"].get<double>() == doctest::Approx(2 * (51072 + 12288)));
  // Stage 1: layers 2, 3 (both MoE): base 2 * 14976 = 29952, LM head 6400/2 = 3200, final
  // norm 64: 33216; experts 2 * 12288 = 24576.
  CHECK(s1["experts"]["moe_layers"] == 2);
  CHECK(s1["experts"]["parameters"].get<double>() == doctest::Approx(24576));
  CHECK(s1["parameters"].get<double>() == doctest::Approx(33216 + 24576));
  // With etp = 1 each expert is whole on its rank: 49152 / 2 = 24576 per MoE layer, and
  // edp = 8 / (1*2*2) = 2 halves the expert optimizer: 24576 * 12 / 2 = 147456.
  json req = tiny_request();
  req["parallel"]["etp"] = 1;
  const json r1 = ok(req);
  CHECK(r1["layout"]["edp"] == 2);
  CHECK(r1["stages"][0]["experts"]["parameters"].get<double>() == doctest::Approx(24576));
  CHECK(r1["stages"][0]["experts"]["optimizer_bytes"].get<double>() == doctest::Approx(147456));
}

TEST_CASE("MoE activation terms, one function each, on hand-derived values") {
  // s = 16, b = 1, t = 2, c = 1, SP on: T = 16 / 2 = 8 tokens per GPU. E = 8, k = 2, h = 64,
  // f_e = 32, etp = 2, drop-less (load 1): R = 8 * 2 * 2 = 32 rows.
  memest_model m = default_model();
  m.hidden_size = 64, m.num_hidden_layers = 4, m.num_attention_heads = 4;
  m.num_key_value_heads = 4, m.intermediate_size = 256, m.vocab_size = 100;
  m.num_experts = 8, m.num_experts_per_tok = 2, m.moe_intermediate_size = 32;
  m.num_shared_experts = 1, m.shared_expert_intermediate_size = 64;
  ActivationLayout x;
  x.seq_len = 16, x.micro_batch = 1, x.tp = 2, x.cp = 1;
  const MoeActivationParts p = moe_activation_parts(m, x, 2, 0);
  CHECK(p.router == doctest::Approx(8 * 8 * 5));       // T*E*(4 + 1) = 320
  CHECK(p.dispatch == doctest::Approx(32 * 64 * 2));   // R*h*2 = 4096
  CHECK(p.experts == doctest::Approx(32 * 6 * 16));    // R*6*f_e/etp = 3072
  CHECK(p.combine == doctest::Approx(8 * 2 * 132));    // T*k*(2h + 4) = 2112
  CHECK(p.shared == doctest::Approx(16 * 6 * 64 / 2)); // sb/c * 6 f_s / t = 3072
  // A capacity factor of 1.5 scales the routed rows: R = 48.
  const MoeActivationParts q = moe_activation_parts(m, x, 2, 1.5);
  CHECK(q.dispatch == doctest::Approx(48 * 64 * 2));
  CHECK(q.experts == doctest::Approx(48 * 6 * 16));
  CHECK(q.combine == doctest::Approx(1.5 * 8 * 2 * 132));
  CHECK(q.router == doctest::Approx(p.router));
  // Full recomputation keeps only the layer input (no MoE term).
  x.recompute = MEMEST_RECOMPUTE_FULL;
  CHECK(moe_activation_parts(m, x, 2, 0).total() == 0);
  x.recompute = MEMEST_RECOMPUTE_NONE;
  // The MoE layer = the dense layer without its MLP (Llama: 8 sbh_ffn/t = 16*8*256/2 = 16384)
  // plus the MoE parts (320 + 4096 + 3072 + 2112 + 3072 = 12672).
  const ActivationCoefficients k = activation_coefficients(m, MEMEST_ACTIVATIONS_LLAMA);
  CHECK(mlp_activation_bytes(m, k, x) == doctest::Approx(16384));
  CHECK(moe_layer_activation_bytes(m, k, x, 2, 0) ==
        doctest::Approx(layer_activation_bytes(m, k, x) - 16384 + 12672));
}

TEST_CASE("MoE dispatch buffers: the all-to-all receive buffers of one layer") {
  // Tiny model, t = 2, SP, ep = 2, etp = 2: T = 8, k = 2: dispatch 8*2*2 rows * 64 * 2 = 4096
  // bytes, combine 8*2 rows * 64 * 2 = 2048: 6144.
  const json r = ok(tiny_request());
  CHECK(r["stages"][0]["experts"]["dispatch_buffer_bytes"].get<double>() == doctest::Approx(6144));
  // ep = etp = 1 (tp 1): no all-to-all, no buffer.
  json req = tiny_request();
  req["parallel"] = {{"gpus", 8}, {"pp", 2}};
  CHECK(ok(req)["stages"][0]["experts"]["dispatch_buffer_bytes"].get<double>() == 0);
}

TEST_CASE("MLA activations: heads at their own widths, compressed q/kv per sequence shard") {
  // h = 64, a = 4, d_nope 16, d_rope 8, d_v 16, q rank 32, kv rank 16.
  // Heads: Q and K 4*24/64 = 1.5 h each, V and the output 4*16/64 = 1 h each:
  // 2*1.5 + 2*1.5 + 2 + 2 = 10 sbh; compressed: 2*(32 + 32 + (16 + 8) + 16)/64 = 3.25 sbh.
  memest_model m = default_model();
  m.hidden_size = 64, m.num_attention_heads = 4, m.num_key_value_heads = 4;
  m.intermediate_size = 128, m.kv_lora_rank = 16, m.q_lora_rank = 32;
  m.qk_nope_head_dim = 16, m.qk_rope_head_dim = 8, m.v_head_dim = 16;
  const ActivationCoefficients k = activation_coefficients(m, MEMEST_ACTIVATIONS_LLAMA);
  CHECK(k.replicated == doctest::Approx(8 + 3.25));
  CHECK(k.sharded == doctest::Approx(10 + 8 * 2.0));  // + SwiGLU 8 * 128/64
}

TEST_CASE("Expert-parallel layout checks name the field and the reason") {
  struct Case {
    json parallel;
    const char* field;
    const char* words;
  } cases[] = {
      {{{"gpus", 8}, {"ep", 3}}, "parallel.ep", "does not divide num_experts=8"},
      {{{"gpus", 8}, {"ep", 8}, {"pp", 2}}, "parallel.ep", "etp*ep*pp=16"},
      {{{"gpus", 8}, {"tp", 2}, {"sp", false}}, "parallel.sp", "sequence parallelism"},
      {{{"gpus", 6}, {"etp", 3}, {"tp", 1}, {"ep", 2}}, "parallel.etp", "moe_intermediate_size=32"},
      {{{"gpus", 8}, {"ep", 0}}, "parallel.ep", ""},
      {{{"gpus", 8}, {"etp", -1}}, "parallel.etp", ""},
  };
  for (const Case& c : cases) {
    json req = tiny_request();
    req["parallel"] = c.parallel;
    CAPTURE(c.parallel.dump());
    const test::Answer a = ask(req);
    CHECK(a.status == MEMEST_ERR_INVALID_ARGUMENT);
    CHECK(a.body["error"]["field"] == c.field);
    CHECK(a.body["error"]["message"].get<std::string>().find(c.words) != std::string::npos);
  }
  // A dense model refuses ep/etp > 1 and a capacity factor, with the reason.
  json dense = {{"mode", "pretrain"}, {"model", "llama-3.1-8b"}, {"gpu", "h100-80gb"},
                {"parallel", {{"gpus", 8}, {"ep", 2}}}};
  test::Answer a = ask(dense);
  CHECK(a.status == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(a.body["error"]["field"] == "parallel.ep");
  CHECK(a.body["error"]["message"].get<std::string>().find("dense") != std::string::npos);
  dense["parallel"] = {{"gpus", 8}, {"etp", 2}};
  CHECK(ask(dense).body["error"]["field"] == "parallel.etp");
  dense["parallel"] = {{"gpus", 8}};
  dense["training"] = {{"moe_capacity_factor", 1.25}};
  CHECK(ask(dense).body["error"]["field"] == "training.moe_capacity_factor");
  // A capacity factor so small no expert keeps a token is refused, not estimated (a subnormal
  // factor gave the search a NaN step time; fuzzer finding)
  for (const double cf : {4.9406564584124654e-324, 1e-9, 0.009}) {
    CAPTURE(cf);
    const json moe = {{"mode", "search"}, {"model", "mixtral-8x7b"}, {"gpu", "h100-80gb"},
                      {"parallel", {{"gpus", 8}}},
                      {"training", {{"global_batch", 64}, {"moe_capacity_factor", cf}}}};
    const test::Answer r = ask(moe);
    CHECK(r.status == MEMEST_ERR_INVALID_ARGUMENT);
    CHECK(r.body["error"]["field"] == "training.moe_capacity_factor");
  }
}

TEST_CASE("Dense models: ep = etp = 1 and no expert part — the search enumerates no ep") {
  const json r = ok({{"mode", "pretrain"}, {"model", "llama-3.1-8b"}, {"gpu", "h100-80gb"},
                     {"parallel", {{"gpus", 8}, {"tp", 2}}}});
  CHECK(r["layout"]["ep"] == 1);
  CHECK(r["layout"]["etp"] == 1);
  CHECK(r["layout"]["edp"] == 4);
  CHECK_FALSE(r["stages"][0].contains("experts"));
  const json s = ok({{"mode", "search"}, {"model", "llama-3.1-8b"}, {"gpu", "h100-80gb"},
                     {"parallel", {{"gpus", 16}}}, {"training", {{"global_batch", 64}}},
                     {"search", {{"top", 100}}}});
  for (const json& e : s["results"]) CHECK(e["layout"]["ep"] == 1);
  CHECK(s["pruned"]["ep_experts"] == 0);
  CHECK(s["pruned"]["expert_gpus"] == 0);
}

TEST_CASE("The search ranks expert-parallel layouts of an MoE model") {
  const json s = ok({{"mode", "search"}, {"model", "mixtral-8x7b"}, {"gpu", "h100-80gb"},
                     {"parallel", {{"gpus", 64}}},
                     {"training", {{"seq_len", 4096}, {"global_batch", 256}}},
                     {"search", {{"top", 20}, {"max_vpp", 1}}}});
  REQUIRE(s["results"].size() > 0);
  bool some_ep = false;
  for (const json& e : s["results"]) {
    const int64_t ep = e["layout"]["ep"];
    const int64_t etp = e["layout"]["etp"];
    const int64_t pp = e["layout"]["pp"];
    CHECK(8 % ep == 0);
    CHECK(e["layout"]["edp"].get<int64_t>() * etp * ep * pp == 64);
    some_ep = some_ep || ep > 1;
  }
  CHECK(some_ep);  // holding all 8 experts per GPU is slower than splitting them
}

TEST_CASE("Throughput: FLOPs from the active parameters — all-to-all time per MoE layer") {
  // Tiny model at s = 16: layers' active parameters = dense layer 65536 + 128 = 65664, plus 3
  // MoE layers of 16384 + 12288 + 512 + 128 + 2 * 3 * 64 * 32 = 41600: 190464.
  // F/token = 6 * 190464 + 6 * v * h (6 * 6400) + 12 * s * L * a * d (12 * 16 * 4 * 64):
  // 1142784 + 38400 + 49152 = 1230336.
  memest_model m = default_model();
  m.hidden_size = 64, m.num_hidden_layers = 4, m.num_attention_heads = 4;
  m.num_key_value_heads = 4, m.intermediate_size = 256, m.vocab_size = 100;
  m.num_experts = 8, m.num_experts_per_tok = 2, m.moe_intermediate_size = 32;
  m.num_shared_experts = 1, m.shared_expert_intermediate_size = 64, m.moe_first_dense_layers = 1;
  CHECK(model_flops_per_token(m, 16) == doctest::Approx(1230336));
  // All-to-all of one MoE layer, one micro-batch: T = 8 tokens, k = 2, h = 64: 8*2*64*2 bytes
  // per all-to-all, (ep-1)/ep = 1/2 leaves the GPU: 1024 bytes, 4 of them, each one collective
  // latency (log2(ep) = 1 step) plus its bytes over the node's bandwidth (ep*etp = 4 <= 8 GPUs
  // per node).
  PretrainRequest r;
  r.model = m;
  memest_gpu g = default_gpu();
  REQUIRE(memest_gpu_from_preset("h100-80gb", &g) == MEMEST_OK);
  r.gpu = g;
  r.gpus = 8, r.tp = 2, r.pp = 2, r.ep = 2, r.seq_len = 16;
  const Plan plan = make_plan(r);
  CHECK(moe_all_to_all_seconds(plan) ==
        doctest::Approx(4 * (g.intra_node_latency_us * 1e-6 + 1024 / (g.intra_node_gbps * 1e9))));
  r.ep = 1;
  CHECK(moe_all_to_all_seconds(make_plan(r)) == 0);
}

// Megatron-LM's theoretical memory formula (megatron/training/theoretical_memory_usage.py,
// compute_weight_and_optimizer_memory): on the most loaded shard, non-expert parameters at
// 6 + 12/dp bytes (distributed optimizer) and routed-expert parameters at 6 + 12/edp; they
// are derived by hand below from the formula's terms. memest's first stage (weights +
// gradients + optimizer) is compared with them; docs/moe-crosscheck.md explains each gap.
TEST_CASE("Cross-check with Megatron-LM's theoretical weight + optimizer memory") {
  auto states = [](const json& request) {
    const json r = ok(request);
    const json& s = r["stages"][0];
    return s["weights_bytes"].get<double>() + s["gradients_bytes"].get<double>() +
           s["optimizer_bytes"].get<double>();
  };
  SUBCASE("Mixtral 8x7B, TP1 PP4 EP8 on 32 GPUs (Megatron-LM examples/mixtral)") {
    // attention 2h^2(1 + 8/32) = 41943040; norms 2h = 8192; router h*E = 32768; routed
    // 2*h*f*E*3/2 = 1409286144 per layer; embedding h*v = 131072000 (32000 is a multiple of
    // 128: no padding). dp = 32/4 = 8, edp = 32/(1*8*4) = 1.
    // Non-expert on the first shard: 41943040*32/4 + 131072000 = 466616320 (TP-sharded)
    // + ((8192 + 32768)*32 + 4096)/4 = 328704 (replicated) = 466945024, at 6 + 12/8 = 7.5.
    // Experts: 1409286144*32/4/8 = 1409286144 at 6 + 12/1 = 18.
    // 466945024*7.5 + 1409286144*18 = 3502087680 + 25367150592 = 28869238272 bytes.
    // memest leaves the final norm (its 1024 of the 4096/4 above) to the last stage.
    const double megatron = 28869238272.0;
    const double ours = states({{"mode", "pretrain"}, {"model", "mixtral-8x7b"},
                                {"gpu", "h100-80gb"},
                                {"parallel", {{"gpus", 32}, {"pp", 4}, {"ep", 8}}},
                                {"training", {{"seq_len", 4096}}}});
    CHECK(ours == doctest::Approx(megatron).epsilon(1e-5));
  }
  SUBCASE("Qwen3-30B-A3B, TP2 PP2 EP8 ETP1 on 64 GPUs") {
    // attention 2h^2(1 + 4/32)(4096/2048) = 18874368; norms 4096; router 2048*128 = 262144;
    // routed 2*2048*768*128*3/2 = 603979776; Megatron pads the vocabulary to a multiple of
    // 128*tp = 256: 152064, embedding 2048*152064 = 311427072. dp = 64/4 = 16,
    // edp = 64/(1*8*2) = 4.
    // TP-sharded: (18874368*48/2 + 311427072)/2 = 382205952; replicated:
    // ((4096 + 262144)*48 + 2048)/2 = 6390784; at 6 + 12/16 = 6.75: 2623027968.
    // Experts: 603979776*48/2/8 = 1811939328 at 6 + 12/4 = 9: 16307453952.
    // Total 18930481920 bytes. memest counts the unpadded vocabulary and the QK-norms.
    const double megatron = 18930481920.0;
    const double ours = states({{"mode", "pretrain"}, {"model", "qwen3-30b-a3b"},
                                {"gpu", "h100-80gb"},
                                {"parallel", {{"gpus", 64}, {"tp", 2}, {"pp", 2}, {"ep", 8},
                                              {"etp", 1}}},
                                {"training", {{"seq_len", 4096}}}});
    CHECK(ours == doctest::Approx(megatron).epsilon(1e-3));
  }
  SUBCASE("DeepSeek-V3, TP1 PP1 EP64 on 2048 GPUs (whole model per pipeline rank)") {
    // MLA attention: q 1536*(7168 + 128*192 + 1) = 48760320, kv 512*(7168 + 128*256 + 1) =
    // 20447744, rope key 7168*64 = 458752, o 128*128*7168 = 117440512: 187107328.
    // Dense MLP 3*7168*18432 = 396361728; shared 3*7168*2048 = 44040192; routed
    // 256*3*7168*2048 = 11274289152; norms 14336; router 7168*256 = 1835008; 3 dense + 58 MoE
    // layers; the MTP block one MoE layer; embedding 7168*129280 = 926679040, twice (pp = 1,
    // untied). TP-sharded: 583469056*3 + 231147520*58 + 231147520 + 2*926679040 =
    // 17241468928; replicated 14336*3 + 1849344*58 + 7168 + 1849344 = 109161472;
    // dp = 2048: (17241468928 + 109161472)*(6 + 12/2048) = 104205446250.
    // Experts (58 + 1)*11274289152/64 = 10393485312, edp = 2048/64 = 32: *6.375 =
    // 66258468864. Total 170463915114 bytes. memest adds the MTP module's eh_proj
    // (2*7168^2) and its three norms: 102781952 * 6.00586 = 617 MB, +0.36 % (docs).
    const double megatron = 170463915114.0;
    const double ours = states({{"mode", "pretrain"}, {"model", "deepseek-v3"},
                                {"gpu", "h100-80gb"},
                                {"parallel", {{"gpus", 2048}, {"ep", 64}}},
                                {"training", {{"seq_len", 4096}}}});
    CHECK(ours == doctest::Approx(megatron).epsilon(0.01));
    CHECK(ours > megatron);  // memest's extra terms only add
  }
}

TEST_CASE("Published MoE layouts fit") {
  // Megatron-LM examples/mixtral/train_mixtral_8x7b_distributed.sh: TP1, PP4, EP8, SP,
  // distributed optimizer, micro-batch 1, global batch 256, seq 4096; the smallest world it
  // allows is 32 GPUs (etp*ep*pp = 32).
  const json r = ok({{"mode", "pretrain"}, {"model", "mixtral-8x7b"}, {"gpu", "h100-80gb"},
                     {"parallel", {{"gpus", 32}, {"pp", 4}, {"ep", 8}}},
                     {"training", {{"seq_len", 4096}, {"micro_batch", 1}, {"global_batch", 256}}}});
  CHECK(r["peak_verdict"] != "oom");
  // Megatron-Bridge recipes/mixtral/mixtral.py (mixtral_8x7b_pretrain_config): TP2, PP1,
  // EP4, ETP1, SP, selective recompute, micro-batch 2, seq 4096 — with ETP 1 every GPU holds
  // a quarter of all experts (11.3B parameters, 6 bytes each before the optimizer): it cannot
  // fit 80 GB, and memest says so.
  const json bridge = ok({{"mode", "pretrain"}, {"model", "mixtral-8x7b"}, {"gpu", "h100-80gb"},
                          {"parallel", {{"gpus", 64}, {"tp", 2}, {"ep", 4}, {"etp", 1}}},
                          {"training", {{"seq_len", 4096}, {"micro_batch", 2},
                                        {"recompute", "selective"}}}});
  CHECK(bridge["peak_verdict"] == "oom");
  // DeepSeek-V3 technical report (Sec. 3.2): 2048 H800 (80 GB, as the H100 SXM), PP16, EP64,
  // no TP, ZeRO-1 data parallelism, seq 4096, batch 15360 sequences; 61 layers over 16
  // stages: 4 per stage and 1 (with the MTP module) on the last. DeepSeek keeps activations in
  // FP8 and recomputes norms and MLA up-projections, which memest does not model; its closest
  // setting, full recomputation, fits; without any recomputation memest predicts OOM.
  json ds = {{"mode", "pretrain"}, {"model", "deepseek-v3"}, {"gpu", "h100-80gb"},
             {"parallel", {{"gpus", 2048}, {"pp", 16}, {"ep", 64}, {"last_stage_layers", 1}}},
             {"training", {{"seq_len", 4096}, {"global_batch", 15360}, {"recompute", "full"}}}};
  const json d = ok(ds);
  CHECK(d["peak_verdict"] != "oom");
  CHECK(d["layout"]["edp"] == 2);  // 2048 / (1 * 64 * 16)
  CHECK(d["stages"][15]["layers"] == 1);
  CHECK(d["stages"][15]["mtp_parameters"].get<double>() > 0);
  CHECK(d["stages"][0]["experts"]["moe_layers"] == 1);  // layers 0-2 dense, 3 MoE
  CHECK(d["stages"][1]["experts"]["moe_layers"] == 4);
  ds["training"]["recompute"] = "none";
  CHECK(ok(ds)["peak_verdict"] == "oom");
}

TEST_CASE("last_stage_layers: Megatron's --decoder-last-pipeline-num-layers") {
  // 4 layers, pp 2, last stage 1 layer: the first stage holds 3. pp 3 with last 1 leaves 3
  // layers for 2 stages: refused, naming the field.
  json req = tiny_request();
  req["parallel"]["last_stage_layers"] = 1;
  const json r = ok(req);
  CHECK(r["stages"][0]["layers"] == 3);
  CHECK(r["stages"][1]["layers"] == 1);
  CHECK(r["stages"][0]["experts"]["moe_layers"] == 2);  // layers 1, 2
  req["parallel"] = {{"gpus", 6}, {"pp", 3}, {"last_stage_layers", 1}};
  const test::Answer a = ask(req);
  CHECK(a.status == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(a.body["error"]["field"] == "parallel.last_stage_layers");
}
