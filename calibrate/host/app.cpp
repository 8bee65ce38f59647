// memest-calibrate's command line and flow; the GPU work comes in as a MeasureFn.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include "calibrate.hpp"

#ifndef MEMEST_CALIBRATE_VERSION
#define MEMEST_CALIBRATE_VERSION "0.0.0"
#endif

namespace memest_calibrate {

std::string tool_version() { return MEMEST_CALIBRATE_VERSION; }

std::string iso8601_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

std::string usage() {
  return R"(Usage: memest-calibrate [options]

Measures the CUDA GPU this process sees and writes a memest device profile: a JSON object
that is a request's "gpu" as it stands (memest pretrain --gpu-profile FILE; Python:
memest.load_gpu_profile(FILE)), with the raw figures in its "measured" block.

It measures the capacity, the CUDA context, the cuBLAS handle and workspace, the allocation
granularity, NCCL's communicator buffers (when libnccl.so.2 loads), bf16 GEMM throughput for
rows (tokens per GPU) 256 .. 65536 (fitted to gemm_efficiency and gemm_half_tokens), the HBM
copy bandwidth, and the peer-to-peer bandwidth to the other local GPUs (intra_node_gbps).

Options:
  -o, --output FILE     write the profile to FILE (default: standard output)
  --device N            the CUDA device to measure (default 0)
  --quick               10 GEMM shapes instead of 27
  --peak-tflops X       the GPU's dense BF16 peak in TFLOP/s (default: built-in table by name)
  --gpus-per-node N     gpus_per_node of the profile (default: the CUDA devices visible)
  --name NAME           the profile's name (default: the device name)
  --skip-nccl           do not load NCCL
  --replay FILE         rebuild the profile from the "measured" block of an earlier profile
                        (no GPU needed; e.g. with another --peak-tflops)
  --version             print the version
  -h, --help            print this help

Exit status: 0 profile written; 1 no CUDA device, or a measurement failed (nothing written);
2 bad command line or replay file.
)";
}

namespace {

double parse_number(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(v)) {
    throw std::invalid_argument(flag + ": expected a number, got '" + text + "'");
  }
  return v;
}

int parse_int(const std::string& flag, const std::string& text, int min, int max) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v < min || v > max) {
    throw std::invalid_argument(flag + ": expected an integer in [" + std::to_string(min) + ", " +
                                std::to_string(max) + "], got '" + text + "'");
  }
  return static_cast<int>(v);
}

}  // namespace

Options parse_args(const std::vector<std::string>& args) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::optional<std::string> inline_value;
    if (flag.rfind("--", 0) == 0) {
      if (const auto eq = flag.find('='); eq != std::string::npos) {
        inline_value = flag.substr(eq + 1);
        flag = flag.substr(0, eq);
      }
    }
    auto value = [&]() -> std::string {
      if (inline_value) return *inline_value;
      if (i + 1 >= args.size()) throw std::invalid_argument(flag + ": missing value");
      return args[++i];
    };
    auto no_value = [&]() {
      if (inline_value) throw std::invalid_argument(flag + ": takes no value");
    };
    if (flag == "-h" || flag == "--help") {
      no_value();
      o.help = true;
    } else if (flag == "--version") {
      no_value();
      o.version = true;
    } else if (flag == "-o" || flag == "--output") {
      o.output = value();
      if (o.output.empty()) throw std::invalid_argument(flag + ": empty file name");
    } else if (flag == "--device") {
      o.device = parse_int(flag, value(), 0, 1023);
    } else if (flag == "--quick") {
      no_value();
      o.quick = true;
    } else if (flag == "--peak-tflops") {
      const double v = parse_number(flag, value());
      if (!(v > 0) || v > 1e6) throw std::invalid_argument(flag + ": expected a value in (0, 1e6]");
      o.peak_tflops = v;
    } else if (flag == "--gpus-per-node") {
      o.gpus_per_node = parse_int(flag, value(), 1, 1024);
    } else if (flag == "--name") {
      o.name = value();
      if (o.name.empty()) throw std::invalid_argument(flag + ": empty name");
    } else if (flag == "--replay") {
      o.replay = value();
      if (o.replay.empty()) throw std::invalid_argument(flag + ": empty file name");
    } else if (flag == "--skip-nccl") {
      no_value();
      o.skip_nccl = true;
    } else {
      throw std::invalid_argument(flag + ": unknown option (see --help)");
    }
  }
  return o;
}

std::vector<GemmPoint> gemm_shapes(bool quick) {
  struct Kn {
    int64_t k, n;
  };
  const std::vector<Kn> full = {{4096, 4096}, {4096, 14336}, {14336, 4096}};
  const std::vector<Kn> small = {{4096, 4096}, {4096, 14336}};
  std::vector<GemmPoint> out;
  for (const Kn& s : quick ? small : full) {
    for (int64_t rows = 256; rows <= 65536; rows *= quick ? 4 : 2) {
      GemmPoint g;
      g.m = rows;
      g.k = s.k;
      g.n = s.n;
      out.push_back(g);
    }
  }
  return out;
}

int run(const std::vector<std::string>& args, const MeasureFn& measure, std::ostream& out,
        std::ostream& err) {
  Options opt;
  try {
    opt = parse_args(args);
  } catch (const std::invalid_argument& e) {
    err << "memest-calibrate: error: " << e.what() << "\n";
    return 2;
  }
  if (opt.help) {
    out << usage();
    return 0;
  }
  if (opt.version) {
    out << "memest-calibrate " << tool_version() << "\n";
    return 0;
  }

  Measurement m;
  if (!opt.replay.empty()) {
    std::ifstream in(opt.replay);
    if (!in) {
      err << "memest-calibrate: error: --replay: cannot read " << opt.replay << "\n";
      return 2;
    }
    try {
      m = measurement_from_json(nlohmann::json::parse(in));
    } catch (const std::exception& e) {
      err << "memest-calibrate: error: --replay " << opt.replay << ": " << e.what() << "\n";
      return 2;
    }
  } else {
    std::string message;
    MeasureStatus status;
    try {
      status = measure(opt, m, message, err);
    } catch (const std::exception& e) {
      status = MeasureStatus::failed;
      message = e.what();
    }
    switch (status) {
      case MeasureStatus::ok:
        break;
      case MeasureStatus::no_device:
        err << "memest-calibrate: " << message << "\n";
        return 1;
      case MeasureStatus::bad_argument:
        err << "memest-calibrate: error: " << message << "\n";
        return 2;
      case MeasureStatus::failed:
        err << "memest-calibrate: measurement failed: " << message << "\n";
        return 1;
    }
    if (m.date.empty()) m.date = iso8601_now();
    if (m.tool_version.empty()) m.tool_version = tool_version();
  }

  const std::string text = make_profile(m, opt).dump(2) + "\n";
  if (opt.output.empty()) {
    out << text;
    out.flush();
    return out ? 0 : 1;
  }
  std::ofstream file(opt.output, std::ios::binary | std::ios::trunc);
  file << text;
  file.close();
  if (!file) {
    err << "memest-calibrate: cannot write " << opt.output << "\n";
    return 1;
  }
  return 0;
}

}  // namespace memest_calibrate
