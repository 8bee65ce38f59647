// The overhead model's oom_predicted on the 147 measured A100 runs, overhead terms by
// hand, the throughput model's FLOPs, and the layout search (same code as single estimates,
// deterministic, empty results and bad requests).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "requests.hpp"
#include "pretrain/pretrain.hpp"
#include "throughput/throughput.hpp"

namespace {

test::json table_request(const test::json& row) {
  return {{"mode", "pretrain"}, {"model", "llama-3.1-8b"}, {"gpu", "a100-40gb"},
          {"parallel", {{"gpus", row["gpus"]}, {"tp", row["tp"]}, {"cp", row["cp"]}, {"pp", row["pp"]}}},
          {"training", {{"seq_len", 8192}, {"micro_batch", row["mbs"]}, {"global_batch", 1024}}}};
}

test::json search_request() {
  return {{"mode", "search"}, {"model", "llama-3.1-8b"}, {"gpu", "a100-40gb"},
          {"parallel", {{"gpus", 64}}}, {"training", {{"seq_len", 8192}, {"global_batch", 1024}}},
          {"search", {{"top", 20}}}};
}

}  // namespace

TEST_CASE("oom_predicted on the 147 measured A100 runs: at most 4 wrong, none predicted to fit that went OOM") {
  const test::json ref = test::load_json("llama31-8b-a100-table2-3.json");
  int wrong = 0, false_fits = 0;
  for (const auto& row : ref["rows"]) {
    const test::Answer a = test::request(table_request(row));
    REQUIRE(a.status == MEMEST_OK);
    const bool predicted = a.body["oom_predicted"];
    const bool measured = row["measured"] == "OOM";
    wrong += predicted != measured;
    false_fits += measured && !predicted;
    // The paper's number stays the paper's.
    CHECK(std::fabs(a.body["estimate_gib"].get<double>() - row["paper_estimate_gib"].get<double>()) <= 0.005);
  }
  CHECK(wrong <= 4);
  CHECK(false_fits == 0);
}

TEST_CASE("Overhead terms by hand: the default example's first stage") {
  // Llama-3.1-8B, 8 A100 40GB, tp 4, pp 2, s 8192, b 1 (shipped profile: 1 GiB context,
  // fragmentation 0.1768).
  const test::Answer a = test::request(table_request(
      test::json{{"gpus", 8}, {"tp", 4}, {"cp", 1}, {"pp", 2}, {"mbs", 1}}));
  REQUIRE(a.status == MEMEST_OK);
  const auto& s0 = a.body["stages"][0];
  const auto& o = s0["overheads"];
  CHECK(o["context_bytes"].get<double>() == 1073741824.0);
  // SP all-gather 2sbh = 67108864; PP send + receive 2 * 2sbh/t = 33554432.
  CHECK(o["comm_buffer_bytes"].get<double>() == 100663296.0);
  CHECK(o["logits_bytes"].get<double>() == 0.0);  // only the last stage holds the LM head
  // 16 layers x 2 micro-batches x -2 s h_ffn / t = -1879048192; embedding: 2 x (8 s - 8 s h / t).
  CHECK(o["activation_correction_bytes"].get<double>() == -1879048192.0 + 2 * (65536.0 - 67108864.0));
  // 0.1768 x (states 18069848064 + activations 11140071424 + correction + buffers 100663296)
  CHECK(o["fragmentation_bytes"].get<double>() ==
        doctest::Approx(0.1768 * (18069848064.0 + 11140071424.0 - 2013134848.0 + 100663296.0)));
  CHECK(s0["peak_bytes"].get<double>() ==
        doctest::Approx(s0["total_bytes"].get<double>() + s0["overhead_bytes"].get<double>()));
  // The last stage carries the bf16 logits: 2 s v / t = 2 * 8192 * 128256 / 4.
  CHECK(a.body["stages"][1]["overheads"]["logits_bytes"].get<double>() == 525336576.0);
  CHECK(a.body["oom_predicted"] == false);
  CHECK(a.body["paper_peak_bytes"].get<double>() == a.body["estimate_bytes"].get<double>());
}

TEST_CASE("Model FLOPs match Megatron-LM's formula for Llama-3.1-8B") {
  // 12 B s L h^2 ((1 + k/a + s/h) + 1.5 h_ffn/h + v/(2 L h)) per iteration, B = 1024.
  const double h = 4096, L = 32, s = 8192, v = 128256;
  const double megatron = 12 * 1024 * s * L * h * h * ((1 + 0.25 + s / h) + 1.5 * 14336 / h + v / (2 * L * h));
  memest_model m = memest_test::sized<memest_model>();
  REQUIRE(memest_model_from_preset("llama-3.1-8b", &m) == MEMEST_OK);
  CHECK(memest::model_flops_per_token(m, s) * s * 1024 == doctest::Approx(megatron).epsilon(1e-12));
}

TEST_CASE("Search results are the single estimates of the same layouts, in a stable order") {
  const test::Answer first = test::request(search_request());
  const test::Answer again = test::request(search_request());
  REQUIRE(first.status == MEMEST_OK);
  CHECK(first.body["results"] == again.body["results"]);
  CHECK(first.body["count"] == 20);
  double previous = 1e30;
  for (const auto& e : first.body["results"]) {
    CHECK(e["tflops_per_gpu"].get<double>() <= previous);
    previous = e["tflops_per_gpu"];
    CHECK(e["oom_predicted"] == false);
    const auto& l = e["layout"];
    const test::Answer single = test::request(test::json{
        {"mode", "pretrain"}, {"model", "llama-3.1-8b"}, {"gpu", "a100-40gb"},
        {"parallel", {{"gpus", 64}, {"tp", l["tp"]}, {"cp", l["cp"]}, {"pp", l["pp"]}, {"vpp", l["vpp"]}, {"zero", l["zero"]}}},
        {"training", {{"seq_len", 8192}, {"micro_batch", l["micro_batch"]}, {"global_batch", 1024},
                      {"recompute", l["recompute"]}}}});
    REQUIRE(single.status == MEMEST_OK);
    CHECK(single.body["peak_bytes"] == e["peak_bytes"]);
    CHECK(single.body["estimate_bytes"] == e["estimate_bytes"]);
  }
  const auto& pruned = first.body["pruned"];
  uint64_t total = 0;
  for (const auto& [k, v] : pruned.items()) total += v.get<uint64_t>();
  CHECK(first.body["candidates"].get<uint64_t>() == total + first.body["ranked"].get<uint64_t>());
  CHECK(pruned["oom"].get<uint64_t>() > 0);
  CHECK(pruned["tp_across_nodes"].get<uint64_t>() > 0);
}

TEST_CASE("A shortlist of layouts: invalid ones counted, OOM ones ranked last only when asked") {
  test::json req = search_request();
  req["search"]["layouts"] = test::json::array({
      {{"tp", 4}, {"pp", 2}},                  // fits
      {{"tp", 2}, {"cp", 1}, {"pp", 1}},       // 45 GiB estimate: OOM
      {{"tp", 3}},                             // tp does not divide the heads
      {{"tp", 16}},                            // across nodes
  });
  test::Answer a = test::request(req);
  REQUIRE(a.status == MEMEST_OK);
  CHECK(a.body["count"] == 1);
  CHECK(a.body["results"][0]["layout"]["tp"] == 4);
  CHECK(a.body["pruned"]["oom"] == 1);
  CHECK(a.body["pruned"]["tp_heads"] == 1);
  CHECK(a.body["pruned"]["tp_across_nodes"] == 1);
  req["search"]["include_oom"] = true;
  a = test::request(req);
  REQUIRE(a.status == MEMEST_OK);
  CHECK(a.body["count"] == 2);
  CHECK(a.body["results"][1]["oom_predicted"] == true);
}

TEST_CASE("No layout fits: an empty result with the reason, not an error") {
  test::json req = search_request();
  req["model"] = "llama-3.1-70b";
  req["gpu"] = "v100-16gb";
  req["parallel"]["gpus"] = 8;
  const test::Answer a = test::request(req);
  REQUIRE(a.status == MEMEST_OK);
  CHECK(a.body["count"] == 0);
  CHECK(a.body["results"].empty());
  CHECK(a.body["message"].get<std::string>().find("no layout fits") != std::string::npos);
  CHECK(a.body["pruned"]["oom"].get<uint64_t>() == a.body["evaluated"].get<uint64_t>());
}

TEST_CASE("Typed search: allocation-free top-k into the caller's buffer") {
  memest_test::Pretrain base("llama-3.1-8b", "a100-40gb");
  memest_search_request r;
  REQUIRE(memest_search_request_init(&r, sizeof r) == MEMEST_OK);
  r.base = &base.r;
  base.r.gpus = 64;
  base.r.seq_len = 8192;
  base.r.global_batch = 1024;
  memest_search_result res = memest_test::sized<memest_search_result>();
  memest_search_entry top[3];
  uint64_t pruned[MEMEST_PRUNE_REASON_COUNT];
  REQUIRE(memest_search(&r, &res, top, sizeof top[0], 3, pruned, MEMEST_PRUNE_REASON_COUNT) ==
          MEMEST_OK);
  CHECK(res.count == 3);
  uint64_t sum = 0;
  for (uint64_t n : pruned) sum += n;
  CHECK(sum == res.pruned_total);
  CHECK(res.candidates == res.evaluated + res.pruned_total - pruned[MEMEST_PRUNE_OOM]);
  CHECK(res.ranked >= 3);
  CHECK(top[0].tflops_per_gpu >= top[1].tflops_per_gpu);
  CHECK(top[0].tokens_per_s == doctest::Approx(8192.0 * 1024 / top[0].step_seconds));
  base.r.global_batch = 0;
  CHECK(memest_search(&r, &res, top, sizeof top[0], 3, nullptr, 0) == MEMEST_ERR_MISSING_FIELD);
  CHECK(std::string(memest_last_error_field()) == "training.global_batch");
  CHECK(std::string(memest_prune_reason_name(MEMEST_PRUNE_OOM)) == "oom");
}

TEST_CASE("The search tries uneven pipelines unless told not to") {
  test::json req = search_request();
  req["model"] = "llama-3.1-405b";
  req["gpu"] = "h100-80gb";
  req["parallel"]["gpus"] = 2048;
  req["training"]["global_batch"] = 2048;
  req["search"] = {{"top", 5}, {"zero", {1, 3}}, {"include_oom", true}, {"max_vpp", 1}};
  const test::Answer uneven = test::request(req);
  REQUIRE(uneven.status == MEMEST_OK);
  req["search"]["uneven_pipeline"] = false;
  const test::Answer even = test::request(req);
  REQUIRE(even.status == MEMEST_OK);
  // 126 layers: pp 4, 8, 16, 32, 64 are possible only unevenly.
  CHECK(uneven.body["evaluated"].get<uint64_t>() > even.body["evaluated"].get<uint64_t>());
  CHECK(even.body["pruned"]["layers_not_divisible"].get<uint64_t>() >
        uneven.body["pruned"]["layers_not_divisible"].get<uint64_t>());
  for (const auto& e : even.body["results"]) CHECK(126 % e["layout"]["pp"].get<int64_t>() == 0);
}

TEST_CASE("The search takes the pretrain training block: a given recompute or micro-batch pins it") {
  test::json req = search_request();
  req["training"]["recompute"] = "selective";  // equivalent to none under FlashAttention,
  req["training"]["micro_batch"] = 2;          // but it is the only choice here: ranked
  const test::Answer a = test::request(req);
  REQUIRE(a.status == MEMEST_OK);
  REQUIRE(a.body["count"].get<int>() > 0);
  CHECK(a.body["pruned"]["equivalent"] == 0);
  for (const auto& e : a.body["results"]) {
    CHECK(e["layout"]["recompute"] == "selective");
    CHECK(e["layout"]["micro_batch"] == 2);
  }
  req["search"]["recompute"] = {"none"};  // pinned twice: refused, naming the field
  const test::Answer b = test::request(req);
  CHECK(b.status == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(b.body["error"]["field"] == "training.recompute");
}
