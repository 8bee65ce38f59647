// A written profile, used as a request's "gpu" through the library's JSON entry point
// (memest_request_json): the response's capacity and overheads come from the profile.
#include <doctest/doctest.h>

#include <memest/memest.h>

#include "calibrate.hpp"
#include "fixture.hpp"

using namespace memest_calibrate;
using nlohmann::json;

namespace {

json request(const json& req, memest_status* status = nullptr) {
  char* out = nullptr;
  const memest_status s = memest_request_json(req.dump().c_str(), &out);
  REQUIRE(out != nullptr);
  json response = json::parse(out);
  memest_string_free(out);
  if (status) *status = s;
  return response;
}

json pretrain_with(const json& gpu) {
  return {{"mode", "pretrain"},
          {"model", "llama-3.1-8b"},
          {"gpu", gpu},
          {"parallel", {{"gpus", 8}, {"tp", 4}, {"pp", 2}}},
          {"training", {{"seq_len", 8192}, {"micro_batch", 1}, {"global_batch", 1024}}}};
}

// The overhead model (libmemest/src/overheads/overheads.cpp): fragmentation is a fraction of
// every modelled byte but the context and the CP buffers (cp = 1 here, so none):
// fragmentation x (total + activation correction + logits + comm buffers), per stage.
void check_overheads(const json& response, double context_mib, double fragmentation) {
  CHECK(response["overheads"]["context_bytes"].get<double>() == context_mib * kMiB);
  REQUIRE(response["stages"].size() == 2);
  for (const json& stage : response["stages"]) {
    const json& o = stage["overheads"];
    CHECK(o["context_bytes"].get<double>() == context_mib * kMiB);
    const double held = stage["total_bytes"].get<double>() +
                        o["activation_correction_bytes"].get<double>() +
                        o["logits_bytes"].get<double>() + o["comm_buffer_bytes"].get<double>();
    CHECK(o["fragmentation_bytes"].get<double>() == doctest::Approx(fragmentation * held).epsilon(1e-12));
    CHECK(stage["peak_bytes"].get<double>() ==
          doctest::Approx(stage["total_bytes"].get<double>() + stage["overhead_bytes"].get<double>()));
  }
}

}  // namespace

TEST_CASE("round trip: a memest-calibrate profile as the gpu of a pretrain request") {
  const ojson profile = make_profile(measurement_from_json(load_fixture("h100-sxm-80gb.synthetic.json")), Options{});
  // The profile goes whole, "measured" block included (the library accepts and ignores it).
  const json gpu = json::parse(profile.dump());

  memest_status status = MEMEST_ERR_INTERNAL;
  const json r = request(pretrain_with(gpu), &status);
  INFO(r.dump());
  REQUIRE(status == MEMEST_OK);
  REQUIRE(r["ok"] == true);

  // capacity: memory_gib in bytes, i.e. the measured cudaMemGetInfo total (85520809984)
  CHECK(r["capacity_bytes"].get<double>() == profile["memory_gib"].get<double>() * kGiB);
  CHECK(r["capacity_bytes"].get<double>() == 85520809984.0);
  CHECK(r["gpu"]["name"] == "NVIDIA H100 80GB HBM3");
  CHECK(r["gpu"]["gpus_per_node"] == 8);
  CHECK(r["gpu"]["peak_bf16_tflops"].get<double>() == 989);

  // Every profile field the tool wrote is the one the library used ...
  const json& used = r["gpu"]["profile"];
  for (const char* key : {"context_mib", "page_mib", "gemm_efficiency", "gemm_half_tokens",
                          "intra_node_gbps", "tp_bandwidth_gbps"}) {
    CAPTURE(key);
    CHECK(used[key].get<double>() == doctest::Approx(profile[key].get<double>()).epsilon(1e-12));
  }
  // ... and what it did not measure comes from the h100-80gb preset it named.
  CHECK(used["fragmentation"].get<double>() == 0.1768);
  CHECK(used["inter_node_gbps"].get<double>() == 50);

  // context 1170 MiB (see test_profile.cpp), fragmentation the preset's
  check_overheads(r, 1170, 0.1768);
}

TEST_CASE("round trip: the shipped example profile") {
  const json example = load_json(example_path("h100-sxm-80gb.example.json"));
  CHECK(example["name"].get<std::string>().find("example profile, not measured") != std::string::npos);
  CHECK(example["measured"]["note"].get<std::string>().rfind("EXAMPLE, not a measurement", 0) == 0);
  const json& gpu = example;  // as written, "measured" included

  memest_status status = MEMEST_ERR_INTERNAL;
  const json r = request(pretrain_with(gpu), &status);
  INFO(r.dump());
  REQUIRE(status == MEMEST_OK);
  CHECK(r["capacity_bytes"].get<double>() == example["memory_gib"].get<double>() * kGiB);
  check_overheads(r, example["context_mib"].get<double>(), example["fragmentation"].get<double>());
  // Every profile key of the example is one the library reports back, with the same value.
  for (auto it = gpu.begin(); it != gpu.end(); ++it) {
    if (it.key() == "name" || it.key() == "preset" || it.key() == "memory_gib" ||
        it.key() == "gpus_per_node" || it.key() == "peak_bf16_tflops" || it.key() == "measured") {
      continue;
    }
    CAPTURE(it.key());
    REQUIRE(r["gpu"]["profile"].contains(it.key()));
    CHECK(r["gpu"]["profile"][it.key()].get<double>() == it.value().get<double>());
  }
}

TEST_CASE("round trip: a profile without a known peak still answers") {
  Measurement m = measurement_from_json(load_fixture("h100-sxm-80gb.synthetic.json"));
  m.device_name = "NVIDIA Graphics Device";
  const json gpu = json::parse(make_profile(m, Options{}).dump());
  memest_status status = MEMEST_ERR_INTERNAL;
  const json r = request(pretrain_with(gpu), &status);
  INFO(r.dump());
  CHECK(status == MEMEST_OK);
  CHECK(r["capacity_bytes"].get<double>() == 85520809984.0);
}
