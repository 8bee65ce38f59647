// 4D paper, Table 2: estimated memory (GiB) per GPU, Llama-3.1-8B on A100 40GB, sequence
// 8192, global batch 1024 — all 147 cells, through the typed C API and the JSON entry point.
// Golden data: tests/data/llama31-8b-a100-table2-3.json (copied from the paper's tables).
#include <doctest/doctest.h>

#include <cmath>

#include "helpers.hpp"
#include "requests.hpp"

namespace {

double typed_estimate_gib(const test::json& row) {
  memest_test::Pretrain p("llama-3.1-8b", "a100-40gb");
  memest_pretrain_request& r = p.r;
  r.gpus = row["gpus"];
  r.tp = row["tp"];
  r.cp = row["cp"];
  r.pp = row["pp"];
  r.micro_batch = row["mbs"];
  r.seq_len = 8192;
  r.global_batch = 1024;
  memest_pretrain_result result = memest_test::sized<memest_pretrain_result>();
  memest_stage stages[4];
  REQUIRE(p.run(result, stages, 4) == MEMEST_OK);
  // With pp = 1 the single stage is the whole model; otherwise stage 0 is Eq. 18's.
  CHECK(stages[0].total_bytes == doctest::Approx(result.estimate_bytes).epsilon(1e-12));
  return result.estimate_bytes / test::kGiB;
}

}  // namespace

TEST_CASE("4D paper Table 2: all 147 cells within 0.005 GiB (typed API and JSON)") {
  const test::json ref = test::load_json("llama31-8b-a100-table2-3.json");
  int cells = 0;
  for (const auto& row : ref["rows"]) {
    CAPTURE(row.dump());
    const double paper = row["paper_estimate_gib"];
    CHECK(std::fabs(typed_estimate_gib(row) - paper) <= 0.005);

    const test::json req = {
        {"mode", "pretrain"},
        {"model", "llama-3.1-8b"},
        {"gpu", "a100-40gb"},
        {"parallel", {{"gpus", row["gpus"]}, {"tp", row["tp"]}, {"cp", row["cp"]}, {"pp", row["pp"]}}},
        {"training", {{"seq_len", 8192}, {"micro_batch", row["mbs"]}, {"global_batch", 1024}}}};
    const test::Answer a = test::request(req);
    REQUIRE(a.status == MEMEST_OK);
    CHECK(std::fabs(a.body["estimate_gib"].get<double>() - paper) <= 0.005);
    ++cells;
  }
  CHECK(cells == 147);
}

TEST_CASE("4D paper's 80 % rule holds on Table 3: no run estimated to fit went out of memory") {
  const test::json ref = test::load_json("llama31-8b-a100-table2-3.json");
  int fits = 0, oom_measured = 0;
  for (const auto& row : ref["rows"]) {
    const test::json req = {
        {"mode", "pretrain"}, {"model", "llama-3.1-8b"}, {"gpu", "a100-40gb"},
        {"parallel", {{"gpus", row["gpus"]}, {"tp", row["tp"]}, {"cp", row["cp"]}, {"pp", row["pp"]}}},
        {"training", {{"seq_len", 8192}, {"micro_batch", row["mbs"]}, {"global_batch", 1024}}}};
    const test::Answer a = test::request(req);
    REQUIRE(a.status == MEMEST_OK);
    const std::string verdict = a.body["verdict"];
    if (verdict == "fits") {
      ++fits;
      CHECK(row["measured"] == "ran");
    }
    if (row["measured"] == "OOM") {
      ++oom_measured;
      CHECK(verdict != "fits");
    }
  }
  CHECK(fits > 50);
  CHECK(oom_measured > 30);
}

TEST_CASE("Hand-worked Eq. 18 for (TP, CP, PP, MBS) = (4, 1, 2, 1) on 8 GPUs") {
  // h = 4096, L = 32, a = 32, k = 8, h_ffn = 14336, v = 128256, s = 8192, d = 1.
  // Model states: (6 + 12/1) * (hv/4 + 2*16*h^2*((1 + 1/4 + 1.5*3.5)/4 + 1/h))
  //   = 18 * (131334144 + 16*(54525952 + 8192)) = 18 * 1003880448 = 18069848064 bytes.
  // Activations: s*h/4 * (41*32 + 8*2) = 8388608 * 1328 = 11140071424 bytes.
  const test::Answer a = test::request(test::json::parse(R"({
    "mode": "pretrain", "model": "llama-3.1-8b", "gpu": "a100-40gb",
    "parallel": {"gpus": 8, "tp": 4, "cp": 1, "pp": 2},
    "training": {"seq_len": 8192, "micro_batch": 1, "global_batch": 1024}})"));
  REQUIRE(a.status == MEMEST_OK);
  const auto& s0 = a.body["stages"][0];
  CHECK(s0["parameters"].get<double>() == 1003880448.0);
  CHECK(s0["weights_bytes"].get<double>() + s0["gradients_bytes"].get<double>() +
            s0["optimizer_bytes"].get<double>() == 18069848064.0);
  CHECK(s0["activations_bytes"].get<double>() == 11140071424.0);
  CHECK(a.body["estimate_bytes"].get<double>() == 18069848064.0 + 11140071424.0);
  CHECK(a.body["verdict"] == "fits");
}
