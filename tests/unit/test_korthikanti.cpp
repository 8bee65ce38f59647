// Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models",
// Table 2 (activation memory per transformer layer), checked against values worked by hand
// for GPT-3 175B (a = 96, h = 12288, s = 2048, b = 1) and the 22B model of its Table 3
// (a = 64, h = 6144, s = 2048, b = 4), both with t = 8.
#include <doctest/doctest.h>

#include "helpers.hpp"
#include "model/model.hpp"
#include "activations/activations.hpp"

namespace {

memest_model gpt_model(int64_t h, int64_t a, int64_t layers) {
  memest_model m = memest::default_model();
  m.family = MEMEST_FAMILY_GPT;
  m.hidden_size = h;
  m.num_attention_heads = a;
  m.num_key_value_heads = a;
  m.intermediate_size = 4 * h;
  m.num_hidden_layers = layers;
  m.vocab_size = 51200;  // the paper's v
  m.gated_mlp = 0;
  m.norm_type = MEMEST_NORM_LAYER;
  return m;
}

struct Row {
  double tp;
  bool sp;
  bool flash;
  memest_recompute recompute;
};

double per_layer(const memest_model& m, double s, double b, const Row& row) {
  const auto k = memest::activation_coefficients(m, MEMEST_ACTIVATIONS_GPT);
  memest::ActivationLayout x;
  x.seq_len = s;
  x.micro_batch = b;
  x.tp = row.tp;
  x.sequence_parallel = row.sp;
  x.flash_attention = row.flash;
  x.recompute = row.recompute;
  return memest::layer_activation_bytes(m, k, x);
}

}  // namespace

TEST_CASE("Korthikanti Table 2, GPT-3 175B: every row by hand") {
  const memest_model m = gpt_model(12288, 96, 96);
  // sbh = 2048 * 12288 = 25165824; 5as/h = 5 * 96 * 2048 / 12288 = 80.
  // no parallelism: sbh(34 + 80) = 2868903936
  CHECK(per_layer(m, 2048, 1, {1, false, false, MEMEST_RECOMPUTE_NONE}) == 2868903936.0);
  // tensor parallel: sbh(10 + 24/8 + 80/8) = 23 sbh
  CHECK(per_layer(m, 2048, 1, {8, false, false, MEMEST_RECOMPUTE_NONE}) == 578813952.0);
  // tensor + sequence parallel: sbh(34/8 + 80/8) = 14.25 sbh
  CHECK(per_layer(m, 2048, 1, {8, true, false, MEMEST_RECOMPUTE_NONE}) == 358612992.0);
  // tensor parallel + selective recomputation: sbh(10 + 24/8) = 13 sbh
  CHECK(per_layer(m, 2048, 1, {8, false, false, MEMEST_RECOMPUTE_SELECTIVE}) == 327155712.0);
  // tensor + sequence parallel + selective: 34 sbh / 8 = 4.25 sbh
  CHECK(per_layer(m, 2048, 1, {8, true, false, MEMEST_RECOMPUTE_SELECTIVE}) == 106954752.0);
  // full recomputation: 2 sbh (2 sbh / t with sequence parallelism)
  CHECK(per_layer(m, 2048, 1, {8, false, false, MEMEST_RECOMPUTE_FULL}) == 50331648.0);
  CHECK(per_layer(m, 2048, 1, {8, true, false, MEMEST_RECOMPUTE_FULL}) == 6291456.0);
  // FlashAttention keeps no scores: the same as selective recomputation.
  CHECK(per_layer(m, 2048, 1, {8, true, true, MEMEST_RECOMPUTE_NONE}) == 106954752.0);
}

TEST_CASE("Korthikanti Table 2, 22B model (micro-batch 4): every row by hand") {
  const memest_model m = gpt_model(6144, 64, 48);
  // sbh = 2048 * 4 * 6144 = 50331648; 5as/h = 5 * 64 * 2048 / 6144 = 320/3.
  CHECK(per_layer(m, 2048, 4, {1, false, false, MEMEST_RECOMPUTE_NONE}) ==
        doctest::Approx(7079985152.0).epsilon(1e-14));  // sbh (34 + 320/3)
  CHECK(per_layer(m, 2048, 4, {8, false, false, MEMEST_RECOMPUTE_NONE}) ==
        doctest::Approx(1325400064.0).epsilon(1e-14));  // sbh (10 + 3 + 40/3)
  CHECK(per_layer(m, 2048, 4, {8, true, false, MEMEST_RECOMPUTE_NONE}) ==
        doctest::Approx(884998144.0).epsilon(1e-14));   // sbh (4.25 + 40/3)
  CHECK(per_layer(m, 2048, 4, {8, false, false, MEMEST_RECOMPUTE_SELECTIVE}) == 654311424.0);
  CHECK(per_layer(m, 2048, 4, {8, true, false, MEMEST_RECOMPUTE_SELECTIVE}) == 213909504.0);
  CHECK(per_layer(m, 2048, 4, {8, false, false, MEMEST_RECOMPUTE_FULL}) == 100663296.0);
}

TEST_CASE("Korthikanti Sec. 5: selective recomputation saves 70 % (GPT-3) and 65 % (MT-NLG)") {
  const memest_model gpt3 = gpt_model(12288, 96, 96);
  const memest_model mtnlg = gpt_model(20480, 128, 105);
  for (const auto& [m, saving] : {std::pair{gpt3, 0.70}, std::pair{mtnlg, 0.65}}) {
    const double all = per_layer(m, 2048, 1, {8, true, false, MEMEST_RECOMPUTE_NONE});
    const double sel = per_layer(m, 2048, 1, {8, true, false, MEMEST_RECOMPUTE_SELECTIVE});
    CHECK(1 - sel / all == doctest::Approx(saving).epsilon(0.01));
  }
}

TEST_CASE("GPT-3 175B first stage through the API: TP 8, PP 8, SP + selective, interleaved x3") {
  // Table 3 layout: t = 8, p = 8, 64 GPUs, b = 1. First stage holds L layers of 34 sbh / t
  // plus the embedding dropout mask for p micro-batches (Korthikanti Eq. 5 + Sec. 4.3):
  // 96 * 106954752 + 8 * 25165824 / 8 = 10292822016 bytes.
  test::json req = {{"mode", "pretrain"},
                    {"model", "gpt3-175b"},
                    {"gpu", "a100-80gb"},
                    {"parallel", {{"gpus", 64}, {"tp", 8}, {"pp", 8}, {"sp", true}}},
                    {"training", {{"seq_len", 2048}, {"micro_batch", 1}, {"global_batch", 64},
                                  {"recompute", "selective"}, {"flash_attention", false}}}};
  test::Answer a = test::request(req);
  REQUIRE(a.status == MEMEST_OK);
  CHECK(a.body["training"]["activation_model"] == "gpt");
  CHECK(a.body["stages"][0]["activations_bytes"].get<double>() == 10292822016.0);
  // Interleaved with 3 chunks per device: layers scaled by 1 + (p-1)/(p*m) = 31/24.
  // 10267656192 * 31/24 + 25165824 = 13287555072 bytes.
  req["parallel"]["vpp"] = 3;
  a = test::request(req);
  REQUIRE(a.status == MEMEST_OK);
  CHECK(a.body["stages"][0]["activations_bytes"].get<double>() == 13287555072.0);
  CHECK(a.body["stages"][0]["microbatches_in_flight"].get<double>() ==
        doctest::Approx(8 * 31.0 / 24).epsilon(1e-15));
}
