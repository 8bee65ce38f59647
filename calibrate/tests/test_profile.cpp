// The device profile built from recorded measurements, field by field.
#include <doctest/doctest.h>

#include "calibrate.hpp"
#include "fixture.hpp"

using namespace memest_calibrate;

namespace {

Measurement h100() { return measurement_from_json(load_fixture("h100-sxm-80gb.synthetic.json")); }

std::vector<std::string> keys(const ojson& j) {
  std::vector<std::string> out;
  for (auto it = j.begin(); it != j.end(); ++it) out.push_back(it.key());
  return out;
}

}  // namespace

TEST_CASE("profile of the synthetic H100 fixture: every field by hand") {
  const ojson p = make_profile(h100(), Options{});
  CHECK(keys(p) == std::vector<std::string>{"name", "preset", "memory_gib", "gpus_per_node",
                                            "peak_bf16_tflops", "context_mib", "page_mib",
                                            "gemm_efficiency", "gemm_half_tokens",
                                            "gemm_half_dim", "hbm_gbps", "intra_node_gbps",
                                            "tp_bandwidth_gbps", "measured"});
  CHECK(p["name"] == "NVIDIA H100 80GB HBM3");
  // the step-time model's fields (1.5): the GEMM fit's half-efficiency rows, the copy's bandwidth
  CHECK(p["gemm_half_dim"].get<double>() == doctest::Approx(384));
  CHECK(p["hbm_gbps"].get<double>() == doctest::Approx(2855.7));
  CHECK(p["preset"] == "h100-80gb");                // the name matches the H100 SXM entry
  // total 85520809984 bytes = 81559 MiB = 81559 / 1024 GiB = 79.6474609375 GiB (exact)
  CHECK(p["memory_gib"].get<double>() == 79.6474609375);
  CHECK(p["gpus_per_node"] == 8);                   // device.count
  CHECK(p["peak_bf16_tflops"].get<double>() == 989);
  // context 532676608 (508 MiB) + cuBLAS 44040192 (42 MiB, handle included) + NCCL 650117120
  // (620 MiB) = 1170 MiB
  CHECK(p["context_mib"].get<double>() == 1170);
  CHECK(p["page_mib"].get<double>() == 2);          // gcd(2, 2, 2, 4, 4, 66 MiB)
  CHECK(p["gemm_efficiency"].get<double>() == doctest::Approx(0.8));
  CHECK(p["gemm_half_tokens"].get<double>() == doctest::Approx(384));
  // peers at 369, 371, 370, 368, 372, 370, 370 GB/s: mean 370; x 92.9 / 250 = 137.492 -> 137.5
  CHECK(p["intra_node_gbps"].get<double>() == doctest::Approx(370));
  CHECK(p["tp_bandwidth_gbps"].get<double>() == doctest::Approx(137.5));

  const ojson& m = p["measured"];
  CHECK(m["gemm"]["points"].size() == 27);
  CHECK(m["gemm"]["points"][0]["tflops"].get<double>() == doctest::Approx(0.2992 * 989).epsilon(1e-7));
  CHECK(m["gemm"]["fit"]["efficiency"].get<double>() == doctest::Approx(0.8).epsilon(1e-6));
  CHECK(m["peak"]["source"] == "built-in table: H100 SXM");
  CHECK(m["page_bytes"] == 2097152);
  CHECK(m["hbm"]["gbps"].get<double>() == doctest::Approx(2855.696).epsilon(1e-6));
  CHECK(m["peer"].size() == 7);
  CHECK(m["device"]["compute_capability"] == "9.0");
  CHECK(m["versions"]["cuda_driver"] == "13.0");
  CHECK(m["date"] == "2025-01-01T00:00:00Z");
  CHECK(m["note"].get<std::string>().rfind("SYNTHETIC", 0) == 0);
  CHECK(m["profile_notes"].empty());
}

TEST_CASE("measured block: written and read back unchanged") {
  const Measurement a = h100();
  const ojson once = measurement_to_json(a);
  const ojson twice = measurement_to_json(measurement_from_json(nlohmann::json::parse(once.dump())));
  CHECK(once == twice);
  // A whole profile is accepted too (its "measured" is read).
  const ojson profile = make_profile(a, Options{});
  CHECK(make_profile(measurement_from_json(nlohmann::json::parse(profile.dump())), Options{}) == profile);
}

TEST_CASE("options: --peak-tflops, --gpus-per-node, --name") {
  Options o;
  o.peak_tflops = 1000;
  o.gpus_per_node = 4;
  o.name = "lab node 3";
  const ojson p = make_profile(h100(), o);
  CHECK(p["name"] == "lab node 3");
  CHECK(p["gpus_per_node"] == 4);
  CHECK(p["peak_bf16_tflops"].get<double>() == 1000);
  // the same timings against 1000 instead of 989 TFLOP/s: 0.8 * 989 / 1000 = 0.7912
  CHECK(p["gemm_efficiency"].get<double>() == doctest::Approx(0.7912));
  CHECK(p["gemm_half_tokens"].get<double>() == doctest::Approx(384));
  CHECK(p["measured"]["peak"]["source"] == "--peak-tflops");
}

TEST_CASE("a peak below what the GEMMs reached: gemm_efficiency 1 and a note") {
  Options o;
  o.peak_tflops = 500;  // fitted ceiling 0.8 * 989 / 500 = 1.58
  const ojson p = make_profile(h100(), o);
  CHECK(p["gemm_efficiency"].get<double>() == 1);
  REQUIRE(p["measured"]["profile_notes"].size() == 1);
  CHECK(p["measured"]["profile_notes"][0].get<std::string>().find("--peak-tflops") != std::string::npos);
}

TEST_CASE("an unknown device: no peak, no gemm_efficiency, half tokens still fitted") {
  Measurement m = h100();
  m.device_name = "NVIDIA Graphics Device";
  const ojson p = make_profile(m, Options{});
  CHECK_FALSE(p.contains("preset"));
  CHECK_FALSE(p.contains("peak_bf16_tflops"));
  CHECK_FALSE(p.contains("gemm_efficiency"));
  // The half point does not depend on the scale: still 384; the ceiling in TFLOP/s is
  // 0.8 * 989 = 791.2.
  CHECK(p["gemm_half_tokens"].get<double>() == doctest::Approx(384));
  CHECK(p["measured"]["gemm"]["fit"]["ceiling_tflops"].get<double>() == doctest::Approx(791.2).epsilon(1e-6));
  CHECK(p["measured"]["peak"]["tflops"].is_null());
  CHECK(p["measured"]["profile_notes"][0].get<std::string>().find("--peak-tflops") != std::string::npos);
}

TEST_CASE("one GPU, no NCCL, no cuBLAS figures: only what was measured") {
  Measurement m = h100();
  m.device_count = 1;
  m.peer_copies.clear();
  m.nccl_bytes.reset();
  m.cublas_workspace_bytes.reset();
  m.nccl_note = "NCCL not measured: --skip-nccl";
  m.allocations.clear();
  const ojson p = make_profile(m, Options{});
  CHECK(p["gpus_per_node"] == 1);
  CHECK_FALSE(p.contains("intra_node_gbps"));
  CHECK_FALSE(p.contains("tp_bandwidth_gbps"));
  CHECK_FALSE(p.contains("page_mib"));
  CHECK(p["context_mib"].get<double>() == 510);  // 508 MiB context + 2 MiB cuBLAS handle
  CHECK(p["measured"]["nccl"]["note"] == "NCCL not measured: --skip-nccl");
  CHECK(p["measured"]["profile_notes"][0].get<std::string>().find("preset's value") != std::string::npos);
}

TEST_CASE("measured block: malformed input names the field") {
  nlohmann::json j = load_fixture("h100-sxm-80gb.synthetic.json");
  auto message = [](const nlohmann::json& doc) {
    try {
      measurement_from_json(doc);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  nlohmann::json a = j;
  a["measured"]["memory"].erase("total_bytes");
  CHECK(message(a) == "measured.memory.total_bytes: missing or not positive");
  nlohmann::json b = j;
  b["measured"]["gemm"]["points"][3]["seconds"] = "fast";
  CHECK(message(b) == "measured.gemm.points[].seconds: expected a number");
  nlohmann::json c = j;
  c["measured"]["device"].erase("name");
  CHECK(message(c) == "measured.device.name: missing");
  CHECK(message(nlohmann::json::array()).find("expected a JSON object") != std::string::npos);
}
