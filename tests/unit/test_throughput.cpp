// The step-time model's mechanisms (throughput/), each on a hand-derived value: the GEMM
// roofline and its tile-quantisation efficiency, FlashAttention's rate, collectives with the
// nccl-tests bus factors and rail bandwidth, the 1F1B fill and drain, the overlap defaults, and
// the step breakdown as every front end reads it.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "helpers.hpp"
#include "model/presets.hpp"
#include "plan/plan.hpp"
#include "throughput/collectives.hpp"
#include "throughput/kernels.hpp"
#include "throughput/throughput.hpp"

using namespace memest;

namespace {

DeviceRates rates() {
  DeviceRates d;
  d.bf16_flops = 1e15;
  d.fp8_flops = 2e15;
  d.hbm_bytes = 2e12;
  d.gemm_efficiency = 0.5;
  d.fp8_gemm_efficiency = 0.5;
  d.gemm_half_dim = 0;
  d.attention_efficiency = 0.4;
  d.attention_half_seq = 1000;
  d.kernel_seconds = 1e-6;
  return d;
}

test::json pretrain(int64_t gpus, int64_t tp, int64_t pp, int64_t vpp) {
  return {{"mode", "pretrain"}, {"model", "llama-3.1-8b"}, {"gpu", "h100-80gb"},
          {"parallel", {{"gpus", gpus}, {"tp", tp}, {"pp", pp}, {"vpp", vpp}}},
          {"training", {{"seq_len", 4096}, {"micro_batch", 1}, {"global_batch", 64}}}};
}

double part(const test::json& body, const char* name) {
  return body["throughput"]["step"][name].get<double>();
}

}  // namespace

TEST_CASE("GEMM: FLOPs at the achieved rate, or bytes at HBM bandwidth when memory-bound") {
  const DeviceRates d = rates();
  // 4096^3: 2 * 4096^3 / (1e15 * 0.5) = 2.74878e-4 s, above its bytes (3 * 4096^2 * 2 / 2e12 =
  // 5.03e-5 s); plus 1 us of kernel overhead.
  CHECK(gemm_seconds(d, 4096, 4096, 4096, false) == doctest::Approx(2 * std::pow(4096.0, 3) / 5e14 + 1e-6));
  // fp8: twice the rate, 1-byte inputs; at its own ceiling (0.4 here: 2e15 * 0.4 = 8e14).
  CHECK(gemm_seconds(d, 4096, 4096, 4096, true) == doctest::Approx(2 * std::pow(4096.0, 3) / 1e15 + 1e-6));
  DeviceRates f = d;
  f.fp8_gemm_efficiency = 0.4;
  CHECK(gemm_seconds(f, 4096, 4096, 4096, true) == doctest::Approx(2 * std::pow(4096.0, 3) / 8e14 + 1e-6));
  // A GEMV-like 1 x 8192 x 8192: 2 * 8192^2 / 5e14 = 2.7e-7 s of FLOPs against
  // (2 * (8192 + 8192^2) + 2 * 8192) / 2e12 = 6.7e-5 s of bytes: memory-bound.
  CHECK(gemm_seconds(d, 1, 8192, 8192, false) ==
        doctest::Approx((2 * (8192.0 + 8192.0 * 8192) + 2 * 8192.0) / 2e12 + 1e-6));
  // Tile quantisation: with d_half = 128, a 128 x 4096 x 4096 GEMM runs at
  // 0.5 * 128/256 * (4096/4224)^2 of peak.
  DeviceRates q = d;
  q.gemm_half_dim = 128;
  CHECK(gemm_efficiency(q, 128, 4096, 4096) == doctest::Approx(0.5 * 0.5 * std::pow(4096.0 / 4224, 2)));
  // Training: forward, input gradient and weight gradient; a frozen weight has no dW.
  const LinearSeconds l = linear_seconds(d, 4096, 4096, 4096, false, true);
  const LinearSeconds frozen = linear_seconds(d, 4096, 4096, 4096, false, false);
  CHECK(l.backward == doctest::Approx(2 * l.forward));
  CHECK(frozen.backward == doctest::Approx(l.forward));
}

TEST_CASE("FlashAttention: efficiency grows with the keys per block — backward 2.5 x forward") {
  const DeviceRates d = rates();
  // 1e12 FLOPs, 3000 keys, head dim 128: 0.4 * 3000/4000 * 128/144 = 0.26667 of 1e15.
  const AttentionSeconds a = flash_attention_seconds(d, 1e12, 3000, 128);
  CHECK(a.forward == doctest::Approx(1e12 / (1e15 * 0.4 * 0.75 * 128 / 144) + 1e-6));
  CHECK(a.backward == doctest::Approx(2.5 * 1e12 / (1e15 * 0.4 * 0.75 * 128 / 144) + 2e-6));
}

TEST_CASE("Collectives: nccl-tests bus factors, NVLink inside a node, rails across nodes") {
  memest_gpu g = default_gpu();
  g.gpus_per_node = 8, g.intra_node_gbps = 400, g.inter_node_gbps = 50;
  g.intra_node_latency_us = 10, g.inter_node_latency_us = 20;
  // All-reduce of 1 GB over 8 GPUs of one node: 2 * 7/8 * 1e9 / 4e11 + 3 steps * 10 us.
  CHECK(collective_seconds(g, Collective::AllReduce, {8, 8}, 1e9) == doctest::Approx(1.75e9 / 4e11 + 30e-6));
  // All-gather over 16 GPUs of two nodes, 8 in each: 8 rails of 50 GB/s = 400 GB/s (capped at
  // NVLink's 400): 15/16 * 1e9 / 4e11 + 4 steps * 20 us.
  CHECK(collective_seconds(g, Collective::AllGather, {16, 16}, 1e9) ==
        doctest::Approx(15.0 / 16 * 1e9 / 4e11 + 80e-6));
  // The same group strided by tp = 8 (one rank per node): one rail, 50 GB/s.
  CHECK(collective_seconds(g, Collective::AllGather, {16, 128}, 1e9) ==
        doctest::Approx(15.0 / 16 * 1e9 / 5e10 + 80e-6));
  // Two ranks per node (stride 4): 100 GB/s.
  CHECK(collective_seconds(g, Collective::ReduceScatter, {16, 64}, 1e9) ==
        doctest::Approx(15.0 / 16 * 1e9 / 1e11 + 80e-6));
  CHECK(collective_seconds(g, Collective::AllReduce, {1, 1}, 1e9) == 0);
}

TEST_CASE("Overlap defaults: each stack's own") {
  constexpr uint32_t dp = 1u << MEMEST_OVERLAP_DP, pp = 1u << MEMEST_OVERLAP_PP;
  CHECK(overlap_bits(MEMEST_OVERLAP_STACK_DEFAULT, MEMEST_FRAMEWORK_MEGATRON, 1) == (dp | pp));
  CHECK(overlap_bits(MEMEST_OVERLAP_STACK_DEFAULT, MEMEST_FRAMEWORK_FSDP, 3) == dp);
  CHECK(overlap_bits(MEMEST_OVERLAP_STACK_DEFAULT, MEMEST_FRAMEWORK_DEEPSPEED, 2) == 0);
  CHECK(overlap_bits(MEMEST_OVERLAP_STACK_DEFAULT, MEMEST_FRAMEWORK_DEEPSPEED, 3) == dp);
  CHECK(overlap_bits(0, MEMEST_FRAMEWORK_MEGATRON, 1) == 0);
}

TEST_CASE("Step breakdown: the parts sum to the step — 1F1B fill and drain from the stages' times") {
  const test::Answer a = test::request(pretrain(8, 2, 4, 1));
  REQUIRE(a.status == MEMEST_OK);
  const test::json& t = a.body["throughput"];
  double sum = 0;
  for (const auto& [name, seconds] : t["step"].items()) sum += seconds.get<double>();
  CHECK(sum == doctest::Approx(t["step_seconds"].get<double>()));
  // tokens/s = s * global batch / step; TFLOP/s from the model FLOPs (Megatron's count).
  CHECK(t["tokens_per_s"].get<double>() == doctest::Approx(4096.0 * 64 / t["step_seconds"].get<double>()));
  CHECK(t["mfu"].get<double>() == doctest::Approx(t["tflops_per_gpu"].get<double>() / 989));
  // 1 x 4 stages, m = 64 micro-batches: the bubble is (sum of stage times - the slowest) / vpp,
  // at least (p - 1) / m of the pipelined time for equal stages; with vpp 2 it halves (the
  // layers per stage still divide: 32 = 4 x 2 x 4).
  const double bubble1 = part(a.body, "bubble");
  CHECK(bubble1 > 0);
  const test::Answer b = test::request(pretrain(8, 2, 4, 2));
  REQUIRE(b.status == MEMEST_OK);
  CHECK(part(b.body, "bubble") < bubble1);
  // No pipeline, no bubble.
  const test::Answer c = test::request(pretrain(8, 2, 1, 1));
  REQUIRE(c.status == MEMEST_OK);
  CHECK(part(c.body, "bubble") == 0);
  CHECK(part(c.body, "pp_comm") == 0);
  CHECK(part(c.body, "tp_comm") > 0);
  // Without a global batch there is no step time.
  test::json no_batch = pretrain(8, 2, 1, 1);
  no_batch["training"].erase("global_batch");
  const test::Answer d = test::request(no_batch);
  REQUIRE(d.status == MEMEST_OK);
  CHECK_FALSE(d.body.contains("throughput"));
}

TEST_CASE("Overlap: DP and TP communication exposed without it, hidden with it") {
  test::json r = pretrain(16, 8, 1, 1);  // dp 2 over two nodes' rails
  r["training"]["comm_overlap"] = "none";
  const test::Answer none = test::request(r);
  REQUIRE(none.status == MEMEST_OK);
  CHECK(none.body["training"]["comm_overlap"] == test::json::array());
  r["training"]["comm_overlap"] = {"dp", "tp"};
  const test::Answer both = test::request(r);
  REQUIRE(both.status == MEMEST_OK);
  CHECK(both.body["training"]["comm_overlap"] == test::json({"dp", "tp"}));
  CHECK(part(both.body, "dp_comm") < part(none.body, "dp_comm"));
  CHECK(part(both.body, "tp_comm") < part(none.body, "tp_comm"));
  CHECK(part(both.body, "compute") == doctest::Approx(part(none.body, "compute")));
  // Without overlap the DP part is one gradient reduce-scatter (fp32) and one parameter
  // all-gather (bf16) of this GPU's P parameters over dp = 2 ranks on two nodes, one rail each
  // (tp = 8 fills the node, 50 GB/s): (4 + 2) bytes * P * 1/2 / 50 GB/s + 2 x 25 us.
  const double params = none.body["stages"][0]["parameters"];
  CHECK(part(none.body, "dp_comm") == doctest::Approx(6 * params / 2 / 50e9 + 50e-6));
}

TEST_CASE("comm_overlap: a bad value names the field") {
  test::json r = pretrain(8, 2, 1, 1);
  r["training"]["comm_overlap"] = {"dp", "xx"};
  test::Answer a = test::request(r);
  CHECK(a.status == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(a.body["error"]["field"] == "training.comm_overlap[1]");
  r["training"]["comm_overlap"] = 3;
  a = test::request(r);
  CHECK(a.status == MEMEST_ERR_TYPE);
  CHECK(a.body["error"]["field"] == "training.comm_overlap");
}

TEST_CASE("fp8 GEMMs make a step faster on an fp8 GPU — the search tries both and marks ties") {
  test::json r = pretrain(8, 1, 1, 1);
  const test::Answer bf16 = test::request(r);
  r["training"]["fp8"] = true;
  const test::Answer fp8 = test::request(r);
  REQUIRE(bf16.status == MEMEST_OK);
  REQUIRE(fp8.status == MEMEST_OK);
  CHECK(part(fp8.body, "compute") < part(bf16.body, "compute"));
  test::json s = {{"mode", "search"}, {"model", "llama-3.1-8b"}, {"gpu", "h100-80gb"},
                  {"parallel", {{"gpus", 8}}}, {"training", {{"seq_len", 4096}, {"global_batch", 64}}},
                  {"search", {{"top", 10000}, {"fp8", {false, true}}}}};
  const test::Answer found = test::request(s);
  REQUIRE(found.status == MEMEST_OK);
  bool some_fp8 = false, some_bf16 = false;
  const double margin = found.body["tie_margin"];
  CHECK(margin == doctest::Approx(kThroughputTieMargin));
  const double best = found.body["results"][0]["tokens_per_s"];
  for (const auto& e : found.body["results"]) {
    (e["fp8"].get<bool>() ? some_fp8 : some_bf16) = true;
    const double gap = 1 - e["tokens_per_s"].get<double>() / best;
    CHECK(e["gap_to_best"].get<double>() == doctest::Approx(gap));
    CHECK(e["tie"].get<bool>() == (gap <= margin));
  }
  CHECK(some_fp8);
  CHECK(some_bf16);
  CHECK(found.body["results"][0]["fp8"] == true);  // fp8 GEMMs win on an H100
  // An A100 has no fp8: asking for both keeps the runnable option only; fp8 alone is refused.
  s["gpu"] = "a100-80gb";
  CHECK(test::request(s).status == MEMEST_OK);
  s["search"]["fp8"] = {true};
  const test::Answer refused = test::request(s);
  CHECK(refused.status == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(refused.body["error"]["field"] == "search.fp8");
}

TEST_CASE("All-to-all across nodes: the off-node share through each rank's own NIC") {
  memest_gpu g = default_gpu();
  g.gpus_per_node = 8, g.intra_node_gbps = 400, g.inter_node_gbps = 50;
  g.intra_node_latency_us = 10, g.inter_node_latency_us = 20;
  // 16 ranks on two nodes: of what a rank sends to the 15 others, 8/15 leaves the node (at
  // 50 GB/s), 7/15 stays (400 GB/s): the NIC is the slower path. 1 GB buffer, factor 15/16:
  // 4 steps * 20 us + 1e9 * 15/16 * 8/15 / 5e10.
  CHECK(collective_seconds(g, Collective::AllToAll, {16, 16}, 1e9) ==
        doctest::Approx(80e-6 + 1e9 * 15.0 / 16 * 8.0 / 15 / 5e10));
  // Inside a node it is NVLink's, like the other collectives.
  CHECK(collective_seconds(g, Collective::AllToAll, {8, 8}, 1e9) == doctest::Approx(30e-6 + 1e9 * 7.0 / 8 / 4e11));
}

TEST_CASE("DeepEP sends a token once per remote node: less EP time than all-to-all across nodes") {
  // Qwen3-30B-A3B (128 experts, top 8) with ep 16 over two H100 nodes: all-to-all sends 8 copies,
  // 8/15 of them off the node; DeepEP about 1 - (1/2)^8 = 0.996 of a token to the other node.
  test::json r = {{"mode", "pretrain"}, {"model", "qwen3-30b-a3b"}, {"gpu", "h100-80gb"},
                  {"parallel", {{"gpus", 16}, {"ep", 16}}},
                  {"training", {{"seq_len", 4096}, {"micro_batch", 1}, {"global_batch", 64}}}};
  const test::Answer a2a = test::request(r);
  r["training"]["moe_dispatcher"] = "deepep";
  const test::Answer deepep = test::request(r);
  REQUIRE(a2a.status == MEMEST_OK);
  REQUIRE(deepep.status == MEMEST_OK);
  CHECK(deepep.body["training"]["moe_dispatcher"] == "deepep");
  CHECK(part(deepep.body, "ep_comm") < 0.5 * part(a2a.body, "ep_comm"));
  CHECK(part(deepep.body, "compute") == doctest::Approx(part(a2a.body, "compute")));
  // Inside one node the two dispatchers cost the same.
  r["parallel"] = {{"gpus", 8}, {"ep", 8}};
  const test::Answer inside_deepep = test::request(r);
  r["training"]["moe_dispatcher"] = "alltoall";
  const test::Answer inside_a2a = test::request(r);
  CHECK(part(inside_deepep.body, "ep_comm") == doctest::Approx(part(inside_a2a.body, "ep_comm")));
  r["training"]["moe_dispatcher"] = "nccl";
  const test::Answer bad = test::request(r);
  CHECK(bad.status == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(bad.body["error"]["field"] == "training.moe_dispatcher");
}

namespace {

Plan plan_of(PretrainRequest& r) { return make_plan(r); }

PretrainRequest h100_llama8b() {
  PretrainRequest r;
  r.model = find_model_preset("llama-3.1-8b", "model").model;
  r.gpu = find_gpu_preset("h100-80gb", "gpu").gpu;
  r.gpus = 4, r.pp = 4, r.seq_len = 4096, r.micro_batch = 1, r.global_batch = 32;
  r.stack.comm_overlap = 0;
  return r;
}

double kernels(const LayerTime& l) { return l.forward + l.backward + l.recompute; }

}  // namespace

TEST_CASE("1F1B: m x the slowest stage + the others' fill and drain / vpp, from the block times") {
  PretrainRequest r = h100_llama8b();  // 32 layers over 4 stages of 8, m = 32, one GPU per stage
  const Plan plan = plan_of(r);
  const LayerTimes b = layer_times(plan);
  const Throughput t = estimate_throughput(plan);
  // Stage times: 8 layers each, the embedding on the first and the head and loss on the last,
  // plus the blocking sends (one stage's output forward, its gradient back: 2 per micro-batch).
  const double send = t.parts.seconds[MEMEST_STEP_PP_COMM] / 32;
  const double first = 8 * b.dense.total() + b.embed.total() + send;
  const double middle = 8 * b.dense.total() + send;
  const double last = 8 * b.dense.total() + b.head.total() + send;
  const double slowest = std::max(first, last);
  CHECK(t.parts.seconds[MEMEST_STEP_BUBBLE] ==
        doctest::Approx((first + 2 * middle + last) - slowest));
  CHECK(t.parts.seconds[MEMEST_STEP_COMPUTE] ==
        doctest::Approx(32 * (8 * (b.dense.forward + b.dense.backward) + b.head.forward + b.head.backward)));
  // Each send: 4096 x 4096 x 2 bytes between neighbours in one node: 10 us + 32 MiB / 450 GB/s.
  CHECK(send == doctest::Approx(2 * (10e-6 + 4096.0 * 4096 * 2 / 450e9)));
  // Interleaving (vpp 2) divides the fill and drain by 2 (the stages keep their layers).
  r.vpp = 2;
  const Plan interleaved = plan_of(r);
  const Throughput ti = estimate_throughput(interleaved);
  const double send2 = ti.parts.seconds[MEMEST_STEP_PP_COMM] / 32;  // 2 chunks: twice the sends
  CHECK(send2 == doctest::Approx(2 * send));
  const double first2 = first - send + send2, middle2 = middle - send + send2, last2 = last - send + send2;
  CHECK(ti.parts.seconds[MEMEST_STEP_BUBBLE] ==
        doctest::Approx((first2 + 2 * middle2 + last2 - std::max(first2, last2)) / 2));
}

TEST_CASE("Recompute repeats the checkpointed layers' forward — the optimizer moves its bytes at HBM rate") {
  PretrainRequest r = h100_llama8b();
  r.pp = 1, r.gpus = 1, r.global_batch = 4;
  const Plan none = plan_of(r);
  r.recompute = MEMEST_RECOMPUTE_FULL;
  const Plan full = plan_of(r);
  const LayerTimes b = layer_times(full);
  CHECK(b.dense.recompute == doctest::Approx(b.dense.forward));
  CHECK(estimate_throughput(full).parts.seconds[MEMEST_STEP_RECOMPUTE] ==
        doctest::Approx(4 * 32 * b.dense.forward));
  CHECK(estimate_throughput(none).parts.seconds[MEMEST_STEP_RECOMPUTE] == 0);
  // Adam with fp32 masters on one GPU (zero 1 over 1 rank): per parameter it reads and writes
  // K = 12 bytes of states and masters, reads and writes the fp32 gradient (4 + 4: the step and
  // the clipping norm), writes the bf16 weight (2), and zeroes the gradient (4): 38 bytes, at
  // 3.35 TB/s, plus 4 kernel launches of 4 us.
  const double params = full.param_count.total;
  CHECK(estimate_throughput(full).parts.seconds[MEMEST_STEP_OPTIMIZER] ==
        doctest::Approx(params * 38 / 3.35e12 + 16e-6));
}

TEST_CASE("Attention kernels: FlashAttention-2 on Hopper below the fused kernels — the same on Ampere") {
  test::json r = {{"mode", "pretrain"}, {"model", "llama-3.1-8b"}, {"gpu", "h100-80gb"},
                  {"parallel", {{"gpus", 8}, {"zero", 3}}},
                  {"training", {{"framework", "fsdp"}, {"seq_len", 8192}, {"micro_batch", 1},
                                {"global_batch", 8}, {"recompute", "full"}}}};
  const test::Answer automatic = test::request(r);
  REQUIRE(automatic.status == MEMEST_OK);
  CHECK(automatic.body["training"]["attention_kernel"] == "flash2");  // PyTorch SDPA's
  r["training"]["attention_kernel"] = "fused";
  const test::Answer fused = test::request(r);
  REQUIRE(fused.status == MEMEST_OK);
  CHECK(fused.body["training"]["attention_kernel"] == "fused");
  // The attention's forward and backward (3.5 x its forward FLOPs) run at 0.35/0.75 of the rate:
  // everything else is the same, so the compute part grows by that much alone.
  const double slower = part(automatic.body, "compute") - part(fused.body, "compute");
  CHECK(slower > 0);
  const memest_gpu h = find_gpu_preset("h100-80gb", "gpu").gpu;
  CHECK(h.fa2_attention_efficiency == doctest::Approx(0.35 / 0.75 * h.attention_efficiency).epsilon(0.01));
  // One micro-batch per GPU (8 sequences over dp 8) x 32 layers x (forward + backward 2.5) x
  // causal forward FLOPs 2 s^2 a d (8192^2 x 4096 x 2), at 989 TFLOP/s x eff x 8192/(8192 + 512)
  // x 128/144 (the recomputed forward counts as recompute, not compute).
  const double flops = 32 * 3.5 * 2 * 8192.0 * 8192 * 4096;
  const double rate = 989e12 * (8192.0 / (8192 + 512)) * (128.0 / 144);
  CHECK(slower == doctest::Approx(flops / rate * (1 / h.fa2_attention_efficiency - 1 / h.attention_efficiency)));
  // Megatron runs the fused kernels; an A100 has no slower FlashAttention-2 to run.
  r["gpu"] = "a100-80gb";
  const test::Answer a100_fused = test::request(r);
  r["training"]["attention_kernel"] = "flash2";
  const test::Answer a100_flash2 = test::request(r);
  CHECK(part(a100_flash2.body, "compute") == doctest::Approx(part(a100_fused.body, "compute")));
}

TEST_CASE("Attention kernels: Triton's FlashAttention at its share of FlashAttention-2's (1.17)") {
  // llm-foundry's MPT with attn_impl triton on 8 x A100 80GB under FSDP: the same request with
  // flash2 and with triton differs in the attention's rate alone.
  test::json r = {{"mode", "pretrain"}, {"model", "llama-3.1-8b"}, {"gpu", "a100-80gb"},
                  {"parallel", {{"gpus", 8}, {"zero", 3}}},
                  {"training", {{"framework", "fsdp"}, {"seq_len", 8192}, {"micro_batch", 1},
                                {"global_batch", 8}, {"recompute", "full"},
                                {"attention_kernel", "flash2"}}}};
  const test::Answer flash2 = test::request(r);
  r["training"]["attention_kernel"] = "triton";
  const test::Answer triton = test::request(r);
  REQUIRE(flash2.status == MEMEST_OK);
  REQUIRE(triton.status == MEMEST_OK);
  CHECK(triton.body["training"]["attention_kernel"] == "triton");
  // 32 layers x (forward + backward 2.5) x causal forward FLOPs 2 s^2 a d at 312 TFLOP/s x
  // 8192/(8192 + 512) x 128/144: FlashAttention-2 at the A100's 0.76, Triton at 0.49 of it.
  const double flops = 32 * 3.5 * 2 * 8192.0 * 8192 * 4096;
  const double rate = 312e12 * (8192.0 / (8192 + 512)) * (128.0 / 144);
  const double slower = part(triton.body, "compute") - part(flash2.body, "compute");
  CHECK(slower == doctest::Approx(flops / rate * (1 / (0.49 * 0.76) - 1 / 0.76)));
  // A profile's triton_attention_efficiency replaces the share: at FlashAttention-2's own value
  // the two kernels take the same time.
  r["gpu"] = {{"preset", "a100-80gb"}, {"triton_attention_efficiency", 0.76}};
  const test::Answer same = test::request(r);
  REQUIRE(same.status == MEMEST_OK);
  CHECK(part(same.body, "compute") == doctest::Approx(part(flash2.body, "compute")));
  // ... and is echoed, and checked like every efficiency
  CHECK(same.body["gpu"]["profile"]["triton_attention_efficiency"].get<double>() == doctest::Approx(0.76));
  r["gpu"] = {{"preset", "a100-80gb"}, {"triton_attention_efficiency", 1.5}};
  const test::Answer bad = test::request(r);
  CHECK(bad.status != MEMEST_OK);
  CHECK(bad.body["error"]["field"] == "gpu.triton_attention_efficiency");
}
