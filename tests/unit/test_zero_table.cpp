// The lecture's ZeRO table (ZeRO paper Table 1): per-device model-state memory in decimal GB
// for 7.5B, 128B and 1T parameters, DP 1..1024, stages P_os / P_os+g / P_os+g+p, K = 12 and
// fp16 weights and gradients (16 bytes per parameter). Printed cells are rounded or cut
// (257.75 is printed 257): a cell matches when it equals the value rounded or truncated to
// the printed number of decimals.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "helpers.hpp"
#include "requests.hpp"

namespace {

struct Cell {
  double params;
  int dp;
  const char* printed[3];  // P_os, P_os+g, P_os+g+p as printed
};

// Transcribed from shared/papers/lecture-distributed-training.txt ("Optimizer Parallelism").
const Cell kTable[] = {
    {7.5e9, 1, {"120", "120", "120"}},     {128e9, 1, {"2048", "2048", "2048"}},
    {1e12, 1, {"16000", "16000", "16000"}}, {7.5e9, 4, {"52.5", "41.3", "30"}},
    {128e9, 4, {"896", "704", "512"}},     {1e12, 4, {"7000", "5500", "4000"}},
    {7.5e9, 16, {"35.6", "21.6", "7.5"}},  {128e9, 16, {"608", "368", "128"}},
    {1e12, 16, {"4750", "2875", "1000"}},  {7.5e9, 64, {"31.4", "16.6", "1.88"}},
    {128e9, 64, {"536", "284", "32"}},     {1e12, 64, {"4187", "2218", "250"}},
    {7.5e9, 256, {"30.4", "15.4", "0.47"}}, {128e9, 256, {"518", "263", "8"}},
    {1e12, 256, {"4046", "2054", "62.5"}}, {7.5e9, 1024, {"30.1", "15.1", "0.12"}},
    {128e9, 1024, {"513", "257", "2"}},    {1e12, 1024, {"4011", "2013", "15.6"}},
};

bool matches_print(double value, const std::string& printed) {
  const auto dot = printed.find('.');
  const int decimals = dot == std::string::npos ? 0 : static_cast<int>(printed.size() - dot - 1);
  const double scale = std::pow(10.0, decimals);
  const double shown = std::stod(printed);
  const double rounded = std::round(value * scale) / scale;
  const double truncated = std::floor(value * scale) / scale;
  return std::fabs(rounded - shown) < 1e-9 || std::fabs(truncated - shown) < 1e-9;
}

}  // namespace

TEST_CASE("Lecture ZeRO table: 54 cells, through the typed API and the JSON entry point") {
  int checked = 0;
  for (const Cell& cell : kTable) {
    for (int stage = 1; stage <= 3; ++stage) {
      CAPTURE(cell.params);
      CAPTURE(cell.dp);
      CAPTURE(stage);
      memest_test::ModelStates ms;
      memest_model_states_request& r = ms.r;
      ms.model.num_parameters = cell.params;
      r.gpus = cell.dp;
      r.zero = stage;
      r.param_bytes = 2;  // fp16 weights
      r.grad_bytes = 2;   // fp16 gradients (the ZeRO paper's 16 bytes/param)
      memest_model_states_result out = memest_test::sized<memest_model_states_result>();
      REQUIRE(memest_model_states(&r, &out) == MEMEST_OK);
      const double gb = out.estimate_bytes / 1e9;
      CHECK(matches_print(gb, cell.printed[stage - 1]));

      const test::Answer a = test::request(test::json{
          {"mode", "model_states"},
          {"model", {{"num_parameters", cell.params}}},
          {"parallel", {{"gpus", cell.dp}, {"zero", stage}}},
          {"training", {{"param_dtype", "fp16"}, {"grad_dtype", "fp16"}, {"optimizer", "adam"}}}});
      REQUIRE(a.status == MEMEST_OK);
      CHECK(a.body["estimate_gb"].get<double>() == doctest::Approx(gb).epsilon(1e-15));
      ++checked;
    }
  }
  CHECK(checked == 54);
}

TEST_CASE("ZeRO stages by hand: 7.5B, N_d = 64, K = 12 (ZeRO paper Figure 1)") {
  // Baseline (2 + 2 + 12) * 7.5e9 = 120 GB; P_os: 4*7.5 + 90/64 = 31.40625 GB;
  // P_os+g: 2*7.5 + 105/64 = 16.640625 GB; P_os+g+p: 120/64 = 1.875 GB.
  const double expected[4] = {120e9, 31.40625e9, 16.640625e9, 1.875e9};
  for (int stage = 0; stage <= 3; ++stage) {
    memest_test::ModelStates ms;
    memest_model_states_request& r = ms.r;
    ms.model.num_parameters = 7.5e9;
    r.gpus = 64;
    r.zero = stage;
    r.param_bytes = 2;
    r.grad_bytes = 2;
    memest_model_states_result out = memest_test::sized<memest_model_states_result>();
    REQUIRE(memest_model_states(&r, &out) == MEMEST_OK);
    CHECK(out.estimate_bytes == doctest::Approx(expected[stage]).epsilon(1e-15));
  }
}

TEST_CASE("Default precision is the 4D paper's 18 bytes/param (bf16 + fp32 grads + Adam)") {
  memest_test::ModelStates ms;
  memest_model_states_request& r = ms.r;
  ms.model = memest_test::model_preset("llama-3.1-8b");
  memest_model_states_result out = memest_test::sized<memest_model_states_result>();
  REQUIRE(memest_model_states(&r, &out) == MEMEST_OK);
  CHECK(out.weights_bytes == 2.0 * 8030261248.0);
  CHECK(out.gradients_bytes == 4.0 * 8030261248.0);
  CHECK(out.optimizer_bytes == 12.0 * 8030261248.0);
  CHECK(out.estimate_bytes == 18.0 * 8030261248.0);
  CHECK(out.verdict == MEMEST_VERDICT_UNKNOWN);  // no GPU given

  // With a GPU: 144.5 GB of model states do not fit one 80 GiB GPU.
  ms.use_gpu("a100-80gb");
  REQUIRE(memest_model_states(&r, &out) == MEMEST_OK);
  CHECK(out.verdict == MEMEST_VERDICT_OOM);
  // ZeRO-3 over 8 GPUs: 18.07 GB per GPU = 21 % of 80 GiB: fits.
  r.gpus = 8;
  r.zero = 3;
  REQUIRE(memest_model_states(&r, &out) == MEMEST_OK);
  CHECK(out.estimate_bytes == 18.0 * 8030261248.0 / 8);
  CHECK(out.verdict == MEMEST_VERDICT_FITS);
}
