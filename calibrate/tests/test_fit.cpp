// The fits and conversions of memest-calibrate, against values derived by hand.
#include <doctest/doctest.h>

#include <fstream>

#include "calibrate.hpp"
#include "fixture.hpp"

using namespace memest_calibrate;

TEST_CASE("GEMM fit: points on the library's curve give its constants back") {
  // eff(rows) = 0.8 * rows / (rows + 1024): 256 rows -> 0.8 * 256 / 1280 = 0.16,
  // 1024 rows -> 0.4 (half the ceiling), 65536 rows -> 0.8 * 64 / 65 = 0.787692...
  std::vector<RowsValue> pts;
  for (double r = 256; r <= 65536; r *= 2) pts.push_back({r, 0.8 * r / (r + 1024)});
  CHECK(pts.front().value == doctest::Approx(0.16));
  CHECK(pts[2].value == doctest::Approx(0.4));
  const SaturatingFit f = fit_saturating(pts);
  CHECK(f.efficiency == doctest::Approx(0.8).epsilon(1e-9));
  CHECK(f.half_tokens == doctest::Approx(1024).epsilon(1e-7));
  CHECK(f.rms < 1e-9);
  CHECK(f.points == 9);
}

TEST_CASE("GEMM fit: no saturation gives half_tokens 0 and the mean") {
  // y = 0.5 at every row count: H = 0 fits exactly, E = 0.5.
  const SaturatingFit f = fit_saturating({{512, 0.5}, {4096, 0.5}, {65536, 0.5}});
  CHECK(f.half_tokens == 0);
  CHECK(f.efficiency == doctest::Approx(0.5));
}

TEST_CASE("GEMM fit: several shapes per row count fit the row count's mean") {
  // Two shapes at +-10 % around 0.6 * r / (r + 500): least squares of E * g(r) over pooled
  // points is least squares over the per-row means, which lie on the curve: E 0.6, H 500.
  std::vector<RowsValue> pts;
  for (double r = 256; r <= 65536; r *= 4) {
    const double y = 0.6 * r / (r + 500);
    pts.push_back({r, y * 1.1});
    pts.push_back({r, y * 0.9});
  }
  const SaturatingFit f = fit_saturating(pts);
  CHECK(f.efficiency == doctest::Approx(0.6).epsilon(1e-9));
  CHECK(f.half_tokens == doctest::Approx(500).epsilon(1e-6));
}

TEST_CASE("GEMM fit: the synthetic H100 fixture") {
  // fixtures/h100-sxm-80gb.synthetic.json: 27 points whose per-row means of achieved / 989
  // TFLOP/s lie on 0.8 * m / (m + 384) (see its note), so the fit is E 0.8, H 384 up to the
  // 9 significant digits the seconds are written with.
  const Measurement m = measurement_from_json(load_fixture("h100-sxm-80gb.synthetic.json"));
  REQUIRE(m.gemm.size() == 27);
  std::vector<RowsValue> pts;
  for (const GemmPoint& g : m.gemm) pts.push_back({static_cast<double>(g.m), g.tflops() / 989});
  const SaturatingFit f = fit_saturating(pts);
  CHECK(f.efficiency == doctest::Approx(0.8).epsilon(1e-6));
  CHECK(f.half_tokens == doctest::Approx(384).epsilon(1e-5));
  // A least-squares minimum: moving either constant makes the residuals larger.
  const double sse = saturating_sse(pts, f.efficiency, f.half_tokens);
  CHECK(sse < saturating_sse(pts, f.efficiency * 1.001, f.half_tokens));
  CHECK(sse < saturating_sse(pts, f.efficiency * 0.999, f.half_tokens));
  CHECK(sse < saturating_sse(pts, f.efficiency, f.half_tokens * 1.01));
  CHECK(sse < saturating_sse(pts, f.efficiency, f.half_tokens * 0.99));
  // The first point by hand: 256 x 4096 x 4096 at f = 1 - 0.06 - 0.01/2 = 0.935:
  // efficiency 0.8 * 256 / 640 * 0.935 = 0.2992.
  CHECK(pts[0].value == doctest::Approx(0.2992).epsilon(1e-8));
}

TEST_CASE("GEMM fit: refuses what cannot be fitted") {
  CHECK_THROWS_AS(fit_saturating({}), std::invalid_argument);
  CHECK_THROWS_AS(fit_saturating({{1024, 0.5}, {1024, 0.6}}), std::invalid_argument);
  CHECK_THROWS_AS(fit_saturating({{1024, 0.5}, {2048, -0.1}}), std::invalid_argument);
  CHECK_THROWS_AS(fit_saturating({{0, 0.5}, {2048, 0.6}}), std::invalid_argument);
}

TEST_CASE("allocation granularity: the gcd of the free-memory drops") {
  const int64_t MiB = 1 << 20;
  // A 2 MiB page: 1 B -> 2 MiB, 1 MiB + 1 -> 2 MiB, 2 MiB + 1 -> 4 MiB, 64 MiB + 1 -> 66 MiB.
  CHECK(allocation_granularity({{1, 2 * MiB}, {MiB + 1, 2 * MiB}, {2 * MiB + 1, 4 * MiB},
                                {64 * MiB + 1, 66 * MiB}}) == 2 * MiB);
  // Drops of 0 (served from memory the driver already held) say nothing.
  CHECK(allocation_granularity({{1, 0}, {MiB + 1, 2 * MiB}, {3 * MiB + 1, 4 * MiB}}) == 2 * MiB);
  CHECK_FALSE(allocation_granularity({{1, 0}}).has_value());
  CHECK_FALSE(allocation_granularity({}).has_value());
}

TEST_CASE("bandwidths in decimal GB/s") {
  // 1 GiB copied on the device in 0.752 ms: 2 x 1073741824 / 0.000752 / 1e9 = 2855.696 GB/s.
  CHECK(hbm_gbps({0, 0, 1073741824, 0.000752}) == doctest::Approx(2855.696).epsilon(1e-6));
  // 256 MiB to a peer in 0.725 ms: 268435456 / 0.000725 / 1e9 = 370.256 GB/s.
  CHECK(peer_gbps({0, 1, 268435456, 0.000725}) == doctest::Approx(370.256).epsilon(1e-5));
  CHECK(peer_gbps({0, 1, 268435456, 0}) == 0);
}

TEST_CASE("peak table: CUDA device names") {
  struct Case {
    const char* name;
    double gib;
    double tflops;
    const char* preset;
  };
  const Case cases[] = {
      {"NVIDIA H100 80GB HBM3", 79.6, 989, "h100-80gb"},
      {"NVIDIA H100 PCIe", 79.6, 756, nullptr},
      {"NVIDIA H100 NVL", 93.1, 835, nullptr},
      {"NVIDIA H200", 139.8, 989, "h200-141gb"},
      {"NVIDIA GH200 480GB", 94.5, 989, nullptr},
      {"NVIDIA A100-SXM4-40GB", 39.4, 312, "a100-40gb"},
      {"NVIDIA A100-SXM4-80GB", 79.2, 312, "a100-80gb"},
      {"NVIDIA A100-PCIE-40GB", 39.4, 312, nullptr},
      {"NVIDIA A10G", 22.1, 70, "a10g-24gb"},
      {"NVIDIA A10", 22.1, 125, nullptr},
      {"NVIDIA L40S", 44.4, 362, nullptr},
      {"NVIDIA L4", 22.0, 121, "l4-24gb"},
      {"NVIDIA GeForce RTX 4090", 23.6, 165, "rtx4090-24gb"},
      {"NVIDIA B200", 178.4, 2250, "b200-180gb"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const PeakEntry* e = find_peak(c.name, c.gib);
    REQUIRE(e != nullptr);
    CHECK(e->tflops == c.tflops);
    CHECK(std::string(e->preset ? e->preset : "") == std::string(c.preset ? c.preset : ""));
  }
  CHECK(find_peak("Tesla V100-SXM2-16GB", 15.8) == nullptr);  // no BF16 Tensor Cores
  CHECK(find_peak("NVIDIA Graphics Device", 10) == nullptr);
  CHECK(name_tokens("NVIDIA A100-SXM4-40GB") ==
        std::vector<std::string>{"NVIDIA", "A100", "SXM4", "40GB"});
}
