// Pretraining mode beyond Table 2: every stage, schedules, SP off, CP, ZeRO, recomputation,
// verdict bands. Expected values are worked by hand in the comments.
#include <doctest/doctest.h>

#include <algorithm>

#include "helpers.hpp"
#include "requests.hpp"
#include "pretrain/pretrain.hpp"

namespace {

using test::ok;

// Llama-3.1-8B, s = 8192, b = 1 unless changed: sbh = 8192 * 4096 = 33554432 bytes.
constexpr double kSbh = 33554432.0;

test::json base_request() {
  return {{"mode", "pretrain"},
          {"model", "llama-3.1-8b"},
          {"gpu", "a100-40gb"},
          {"parallel", {{"gpus", 8}, {"tp", 4}, {"cp", 1}, {"pp", 2}}},
          {"training", {{"seq_len", 8192}, {"micro_batch", 1}}}};
}

}  // namespace

TEST_CASE("1F1B: stage i keeps p - i micro-batches — the last stage holds the LM head") {
  test::json req = base_request();
  req["parallel"] = {{"gpus", 4}, {"tp", 1}, {"pp", 4}};
  const test::json r = ok(req);
  REQUIRE(r["stages"].size() == 4);
  for (int i = 0; i < 4; ++i) {
    CHECK(r["stages"][i]["microbatches_in_flight"].get<double>() == 4 - i);
    CHECK(r["stages"][i]["layers"].get<int>() == 8);
  }
  // Stage 1 of the Table 2 layout (t = 4, p = 2): 16 layers * sbh*41/4 for one micro-batch
  // + LM head 4sbh/4 + 4sbv/4 = 5502926848 + 33554432 + 1050673152 = 6587154432 bytes.
  const test::json t2 = ok(base_request());
  CHECK(t2["stages"][1]["activations_bytes"].get<double>() == 6587154432.0);
  // Last stage parameters: hv/t + h + 16 layers: 131334144 + 4096 + 872546304.
  CHECK(t2["stages"][1]["parameters"].get<double>() == 1003884544.0);
}

TEST_CASE("Fewer micro-batches than stages: stages keep what exists — the paper number keeps p") {
  test::json req = base_request();
  req["parallel"] = {{"gpus", 4}, {"tp", 1}, {"pp", 4}};
  req["training"]["global_batch"] = 2;  // d = 1: 2 micro-batches per iteration
  const test::json r = ok(req);
  CHECK(r["training"]["num_microbatches"] == 2);
  CHECK(r["stages"][0]["microbatches_in_flight"].get<double>() == 2);
  CHECK(r["stages"][3]["microbatches_in_flight"].get<double>() == 1);
  CHECK(r["estimate_bytes"].get<double>() > r["stages"][0]["total_bytes"].get<double>());
}

TEST_CASE("Sequence parallelism off: norms and block inputs are replicated over TP") {
  // Per layer sbh(8 + (4 + 4k/a + 8h_ffn/h)/t) = sbh(8 + 33/4) = 16.25 sbh (vs 41/4 with SP).
  test::json req = base_request();
  req["parallel"] = {{"gpus", 4}, {"tp", 4}, {"pp", 1}, {"sp", false}};
  const test::json off = ok(req);
  req["parallel"]["sp"] = true;
  const test::json on = ok(req);
  // pp = 1: 32 layers + embedding 8sbh (not split without SP) + head 4sbh + 4sbv/4.
  const double head_no_sp = 4 * kSbh + 4 * 8192.0 * 128256 / 4;
  CHECK(off["stages"][0]["activations_bytes"].get<double>() ==
        32 * 16.25 * kSbh + 8 * kSbh + head_no_sp);
  const double head_sp = 4 * kSbh / 4 + 4 * 8192.0 * 128256 / 4;
  CHECK(on["stages"][0]["activations_bytes"].get<double>() ==
        32 * 41 / 4.0 * kSbh + 8 * kSbh / 4 + head_sp);
}

TEST_CASE("Context parallelism splits activations, and the optimizer over d x c only") {
  test::json req = base_request();
  req["parallel"] = {{"gpus", 8}, {"tp", 4}, {"cp", 2}, {"pp", 1}};
  const test::json cp2 = ok(req);
  req["parallel"] = {{"gpus", 4}, {"tp", 4}, {"cp", 1}, {"pp", 1}};
  const test::json cp1 = ok(req);
  const auto& a = cp2["stages"][0];
  const auto& b = cp1["stages"][0];
  CHECK(a["activations_bytes"].get<double>() * 2 == b["activations_bytes"].get<double>());
  CHECK(a["weights_bytes"] == b["weights_bytes"]);
  CHECK(a["gradients_bytes"] == b["gradients_bytes"]);
  CHECK(a["optimizer_bytes"].get<double>() * 2 == b["optimizer_bytes"].get<double>());
}

TEST_CASE("ZeRO stages in pretraining shard over d x c") {
  test::json req = base_request();
  req["parallel"] = {{"gpus", 32}, {"tp", 4}, {"cp", 2}, {"pp", 1}};  // d = 4, d*c = 8
  const double p = ok(req)["stages"][0]["parameters"].get<double>();
  for (int zero = 0; zero <= 3; ++zero) {
    CAPTURE(zero);
    req["parallel"]["zero"] = zero;
    const auto s = ok(req)["stages"][0];
    CHECK(s["weights_bytes"].get<double>() == 2 * p / (zero >= 3 ? 8 : 1));
    CHECK(s["gradients_bytes"].get<double>() == 4 * p / (zero >= 2 ? 8 : 1));
    CHECK(s["optimizer_bytes"].get<double>() == 12 * p / (zero >= 1 ? 8 : 1));
  }
}

TEST_CASE("Recomputation and FlashAttention for Llama") {
  test::json req = base_request();
  req["parallel"] = {{"gpus", 4}, {"tp", 4}, {"pp", 1}};
  const double with_fa = ok(req)["stages"][0]["activations_bytes"];
  // Without FlashAttention the softmax output is kept: 2as^2b/t = 2*32*8192^2/4 per layer.
  req["training"]["flash_attention"] = false;
  const double no_fa = ok(req)["stages"][0]["activations_bytes"];
  CHECK(no_fa - with_fa == 32 * 1073741824.0);
  // Selective recomputation drops exactly that term again.
  req["training"]["recompute"] = "selective";
  CHECK(ok(req)["stages"][0]["activations_bytes"].get<double>() == with_fa);
  // Full recomputation: 2sbh/t per layer + embedding + head.
  req["training"]["recompute"] = "full";
  const double head = 4 * kSbh / 4 + 4 * 8192.0 * 128256 / 4;
  CHECK(ok(req)["stages"][0]["activations_bytes"].get<double>() ==
        32 * 2 * kSbh / 4 + 8 * kSbh / 4 + head);
}

TEST_CASE("Verdict bands: fits <= 80 %, tight <= 100 %, oom above") {
  const double estimate_gib = ok(base_request())["estimate_gib"];  // 27.203857421875
  auto verdict_at = [&](double capacity_gib) {
    test::json req = base_request();
    req["gpu"] = {{"memory_gib", capacity_gib}};
    return ok(req)["verdict"].get<std::string>();
  };
  CHECK(verdict_at(estimate_gib / 0.79) == "fits");
  CHECK(verdict_at(estimate_gib / 0.81) == "tight");
  CHECK(verdict_at(estimate_gib) == "tight");
  CHECK(verdict_at(estimate_gib * 0.99) == "oom");
}

TEST_CASE("GPT family by its own activation model — the user can override the family's choice") {
  test::json req = {{"mode", "pretrain"},
                    {"model", "gpt2"},
                    {"gpu", "a100-80gb"},
                    {"parallel", {{"gpus", 1}}},
                    {"training", {{"seq_len", 1024}, {"flash_attention", false}}}};
  const test::json gpt = ok(req);
  CHECK(gpt["training"]["activation_model"] == "gpt");
  // One layer: sbh(34 + 5as/h) = 1024*768*(34 + 5*12*1024/768) = 786432 * 114.
  // 12 layers + embedding dropout sbh + head 4sbh + 4sbv.
  const double sbh = 1024.0 * 768;
  CHECK(gpt["stages"][0]["activations_bytes"].get<double>() ==
        12 * 114 * sbh + sbh + 4 * sbh + 4 * 1024.0 * 50257);
  req["training"]["activation_model"] = "llama";
  CHECK(ok(req)["training"]["activation_model"] == "llama");
}

TEST_CASE("The most loaded stage is always the first or the last (what the search relies on)") {
  int checked = 0;
  for (const char* model : {"llama-3.1-8b", "llama-3.1-70b", "gpt3-175b", "opt-1.3b", "bloom-3b"}) {
    for (int64_t pp : {2, 3, 4, 5, 6, 8, 16}) {
      for (int64_t vpp : {1, 2}) {
       for (int32_t uneven : {0, 1}) {
        for (int64_t mbs : {1, 4}) {
          for (int64_t gb : {0, 8, 512}) {
            memest::PretrainRequest r;
            r.model = memest_test::model_preset(model);
            r.gpu = memest_test::gpu_preset("h100-80gb");
            r.gpus = 2 * pp;
            r.tp = 2;
            r.pp = pp;
            r.vpp = vpp;
            r.micro_batch = mbs;
            r.global_batch = gb;
            r.seq_len = 2048;
            r.uneven_pipeline = uneven;
            memest::LayoutCheck check;
            if (memest::check_layout(r, check) != memest::LayoutIssue::None) continue;
            const memest::Plan plan = memest::make_plan(r);
            double loop_peak = 0;
            for (int64_t i = 0; i < pp; ++i) {
              loop_peak = std::max(loop_peak, memest::stage_memory(plan, i, true).peak_bytes);
            }
            CHECK(memest::peak_memory(plan, nullptr) == loop_peak);
            ++checked;
          }
        }
       }
      }
    }
  }
  CHECK(checked > 100);
}

TEST_CASE("Uneven pipelines: the first and the last stage may hold one layer fewer (Llama 3 405B)") {
  test::json req = {{"mode", "pretrain"},
                    {"model", "llama-3.1-405b"},
                    {"gpu", "h100-80gb"},
                    {"parallel", {{"gpus", 16}, {"tp", 1}, {"pp", 16}}},
                    {"training", {{"seq_len", 8192}, {"global_batch", 2048}}}};
  test::Answer a = test::request(req);
  CHECK(a.status == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(a.body["error"]["message"] == "parallel.pp=16 does not divide num_hidden_layers=126");
  req["parallel"]["uneven_pipeline"] = true;
  const test::json r = ok(req);
  // 126 layers = 7 + 14 x 8 + 7.
  CHECK(r["stages"][0]["layers"] == 7);
  CHECK(r["stages"][1]["layers"] == 8);
  CHECK(r["stages"][14]["layers"] == 8);
  CHECK(r["stages"][15]["layers"] == 7);
  double params = 0;
  for (const auto& s : r["stages"]) params += s["parameters"].get<double>();
  CHECK(params == 405853388800.0);  // tp = 1: every parameter on exactly one stage
  // One layer fewer than pp would need: only the first stage is lighter (32 = 10 + 11 + 11).
  req["model"] = "llama-3.1-8b";
  req["parallel"] = {{"gpus", 3}, {"tp", 1}, {"pp", 3}, {"uneven_pipeline", true}};
  const test::json three = ok(req);
  CHECK(three["stages"][0]["layers"] == 10);
  CHECK(three["stages"][1]["layers"] == 11);
  CHECK(three["stages"][2]["layers"] == 11);
  // A shortfall of more than two layers (32 over 5 stages of 7 = 35): the end stages give up
  // 3, the first (with the embedding) the larger half: 5 + 7 + 7 + 7 + 6.
  req["parallel"] = {{"gpus", 5}, {"tp", 1}, {"pp", 5}, {"uneven_pipeline", true}};
  const test::json five = ok(req);
  CHECK(five["stages"][0]["layers"] == 5);
  CHECK(five["stages"][1]["layers"] == 7);
  CHECK(five["stages"][3]["layers"] == 7);
  CHECK(five["stages"][4]["layers"] == 6);
  // 32 over 20 stages of 2 = 40: the end stages would give up 8 of their 4 layers: refused.
  req["parallel"] = {{"gpus", 20}, {"tp", 1}, {"pp", 20}, {"uneven_pipeline", true}};
  a = test::request(req);
  CHECK(a.status == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(a.body["error"]["field"] == "parallel.pp");
  CHECK(a.body["error"]["message"].get<std::string>().find("would hold no layer") != std::string::npos);
}
