// memest-calibrate's command line and flow, with a stand-in for the GPU measurement.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "calibrate.hpp"
#include "fixture.hpp"

using namespace memest_calibrate;
namespace fs = std::filesystem;

namespace {

struct Outcome {
  int rc;
  std::string out, err;
};

Outcome call(const std::vector<std::string>& args, const MeasureFn& measure) {
  std::ostringstream out, err;
  const int rc = run(args, measure, out, err);
  return {rc, out.str(), err.str()};
}

MeasureFn no_device() {
  return [](const Options&, Measurement&, std::string& message, std::ostream&) {
    message = "no CUDA device found (cudaGetDeviceCount: cudaErrorNoDevice: no CUDA-capable device is detected)";
    return MeasureStatus::no_device;
  };
}

MeasureFn from_fixture() {
  return [](const Options&, Measurement& m, std::string&, std::ostream& log) {
    m = measurement_from_json(load_fixture("h100-sxm-80gb.synthetic.json"));
    log << "memest-calibrate: (fixture)\n";
    return MeasureStatus::ok;
  };
}

MeasureFn must_not_run() {
  return [](const Options&, Measurement&, std::string&, std::ostream&) {
    FAIL("the GPU was measured");
    return MeasureStatus::failed;
  };
}

size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / "memest-calibrate-tests";
  fs::create_directories(dir);
  const fs::path p = dir / name;
  fs::remove(p);
  return p;
}

}  // namespace

TEST_CASE("--help: usage on stdout, exit 0, nothing measured") {
  const Outcome o = call({"--help"}, must_not_run());
  CHECK(o.rc == 0);
  CHECK(o.out.rfind("Usage: memest-calibrate", 0) == 0);
  CHECK(o.err.empty());
  for (const char* flag : {"--output", "--device", "--quick", "--peak-tflops", "--gpus-per-node",
                           "--name", "--replay", "--skip-nccl"}) {
    CHECK(o.out.find(flag) != std::string::npos);
  }
  CHECK(call({"-h"}, must_not_run()).rc == 0);
  CHECK(call({"--version"}, must_not_run()).out == "memest-calibrate " + tool_version() + "\n");
}

TEST_CASE("no device: exit 1, one line on stderr, no output file") {
  const fs::path file = scratch("no-device.json");
  const Outcome o = call({"--output", file.string()}, no_device());
  CHECK(o.rc == 1);
  CHECK(o.out.empty());
  CHECK(lines(o.err) == 1);
  CHECK(o.err.rfind("memest-calibrate: no CUDA device found (cudaGetDeviceCount: ", 0) == 0);
  CHECK_FALSE(fs::exists(file));
}

TEST_CASE("bad command lines: exit 2, one line naming the flag") {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const Case cases[] = {
      {{"--bogus"}, "memest-calibrate: error: --bogus: unknown option (see --help)\n"},
      {{"--device"}, "memest-calibrate: error: --device: missing value\n"},
      {{"--device", "x"}, "memest-calibrate: error: --device: expected an integer in [0, 1023], got 'x'\n"},
      {{"--peak-tflops=0"}, "memest-calibrate: error: --peak-tflops: expected a value in (0, 1e6]\n"},
      {{"--peak-tflops", "fast"}, "memest-calibrate: error: --peak-tflops: expected a number, got 'fast'\n"},
      {{"--gpus-per-node", "0"}, "memest-calibrate: error: --gpus-per-node: expected an integer in [1, 1024], got '0'\n"},
      {{"--quick=yes"}, "memest-calibrate: error: --quick: takes no value\n"},
      {{"--output", ""}, "memest-calibrate: error: --output: empty file name\n"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args[0]);
    const Outcome o = call(c.args, must_not_run());
    CHECK(o.rc == 2);
    CHECK(o.err == c.message);
    CHECK(o.out.empty());
  }
}

TEST_CASE("options parse") {
  const Options o = parse_args({"-o", "p.json", "--device=3", "--quick", "--peak-tflops", "756",
                                "--gpus-per-node", "4", "--name", "H100 PCIe box", "--skip-nccl"});
  CHECK(o.output == "p.json");
  CHECK(o.device == 3);
  CHECK(o.quick);
  CHECK(*o.peak_tflops == 756);
  CHECK(*o.gpus_per_node == 4);
  CHECK(o.name == "H100 PCIe box");
  CHECK(o.skip_nccl);
  CHECK(o.replay.empty());
}

TEST_CASE("the measurement's own errors") {
  MeasureFn bad_device = [](const Options&, Measurement&, std::string& message, std::ostream&) {
    message = "--device 9: only 8 CUDA device(s) visible (0..7)";
    return MeasureStatus::bad_argument;
  };
  Outcome o = call({"--device", "9"}, bad_device);
  CHECK(o.rc == 2);
  CHECK(o.err == "memest-calibrate: error: --device 9: only 8 CUDA device(s) visible (0..7)\n");
  MeasureFn throws = [](const Options&, Measurement&, std::string&, std::ostream&) -> MeasureStatus {
    throw std::runtime_error("cublasCreate: cuBLAS status 1");
  };
  const fs::path file = scratch("failed.json");
  o = call({"-o", file.string()}, throws);
  CHECK(o.rc == 1);
  CHECK(o.err == "memest-calibrate: measurement failed: cublasCreate: cuBLAS status 1\n");
  CHECK_FALSE(fs::exists(file));
}

TEST_CASE("a measurement is written to stdout or to --output") {
  Outcome o = call({}, from_fixture());
  CHECK(o.rc == 0);
  const nlohmann::json p = nlohmann::json::parse(o.out);
  CHECK(p["context_mib"] == 1170);
  CHECK(o.err == "memest-calibrate: (fixture)\n");  // progress on stderr

  const fs::path file = scratch("profile.json");
  o = call({"--output", file.string(), "--name", "node-7"}, from_fixture());
  CHECK(o.rc == 0);
  CHECK(o.out.empty());
  const nlohmann::json q = load_json(file.string());
  CHECK(q["name"] == "node-7");
  CHECK(q["measured"]["gemm"]["points"].size() == 27);
  fs::remove(file);
}

TEST_CASE("--replay: the profile again from recorded figures, no GPU") {
  const Outcome o = call({"--replay", fixture_path("h100-sxm-80gb.synthetic.json")}, must_not_run());
  CHECK(o.rc == 0);
  const ojson expected = make_profile(measurement_from_json(load_fixture("h100-sxm-80gb.synthetic.json")), Options{});
  CHECK(ojson::parse(o.out) == expected);
  // with another peak
  const Outcome p = call({"--replay", fixture_path("h100-sxm-80gb.synthetic.json"), "--peak-tflops", "1000"},
                         must_not_run());
  CHECK(nlohmann::json::parse(p.out)["gemm_efficiency"].get<double>() == doctest::Approx(0.7912));

  const Outcome missing = call({"--replay", fixture_path("no-such-file.json")}, must_not_run());
  CHECK(missing.rc == 2);
  CHECK(missing.err.find("--replay: cannot read") != std::string::npos);
  const Outcome not_json = call({"--replay", std::string(CALIBRATE_FIXTURES) + "/../test_app.cpp"}, must_not_run());
  CHECK(not_json.rc == 2);
  CHECK(lines(not_json.err) == 1);
}

TEST_CASE("GEMM shapes: 27 in full, 10 with --quick") {
  const std::vector<GemmPoint> full = gemm_shapes(false);
  CHECK(full.size() == 27);
  CHECK(full.front().m == 256);
  CHECK(full[8].m == 65536);
  CHECK(full.back().k == 14336);
  const std::vector<GemmPoint> quick = gemm_shapes(true);
  CHECK(quick.size() == 10);
  CHECK(quick[1].m == 1024);
}
