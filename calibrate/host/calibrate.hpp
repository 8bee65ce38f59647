// memest-calibrate, host side: everything that needs no GPU. The raw figures (measurement.hpp)
// to and from JSON, the fits that turn them into device-profile fields, the peak BF16
// table, the profile JSON, the command line, and the program's flow around a measuring
// function. The CUDA part (cuda/measure.cu) only fills a Measurement.
//
// The profile is a JSON object that is valid as a request's "gpu" (the keys of
// libmemest/src/model/gpu_profile.hpp, in their units), plus a "measured" block of raw figures.
#pragma once

#include <nlohmann/json.hpp>

#include "measurement.hpp"

namespace memest_calibrate {

using ojson = nlohmann::ordered_json;

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

// measured block <-> Measurement. from_json accepts a profile (reads its "measured") or a bare
// measured block; throws std::runtime_error naming the field on a malformed one.
ojson measurement_to_json(const Measurement& m);
Measurement measurement_from_json(const nlohmann::json& j);

// ---------------------------------------------------------------------------------------------
// Fits and conversions

// The library's GEMM efficiency (libmemest/src/throughput/throughput.cpp):
//   eff(rows) = gemm_efficiency * rows / (rows + gemm_half_tokens)
// fitted by least squares on (rows, achieved / peak) points.
struct SaturatingFit {
  double efficiency = 0;   // the ceiling, gemm_efficiency
  double half_tokens = 0;  // rows at which half the ceiling is reached, gemm_half_tokens
  double rms = 0;          // root mean square residual
  int points = 0;
};
struct RowsValue {
  double rows;
  double value;
};
// Throws std::invalid_argument with fewer than 2 distinct row counts or a non-positive value.
SaturatingFit fit_saturating(const std::vector<RowsValue>& points);
double saturating_sse(const std::vector<RowsValue>& points, double efficiency, double half_tokens);

// The allocation granularity from cudaMalloc probes: the greatest common divisor of the
// non-zero drops of free memory (a 2 MiB page gives 2, 4, 4, 66 MiB ... -> 2 MiB); nullopt when
// no probe moved free memory.
std::optional<int64_t> allocation_granularity(const std::vector<AllocationProbe>& probes);

// Copy bandwidths in decimal GB/s. A device-to-device copy reads and writes every byte.
double hbm_gbps(const CopyTiming& t);   // 2 * bytes / seconds / 1e9
double peer_gbps(const CopyTiming& t);  // bytes / seconds / 1e9 (one direction)

// ---------------------------------------------------------------------------------------------
// Peak BF16 table (vendor dense Tensor Core figures)

struct PeakEntry {
  std::vector<std::string> tokens;  // all must appear among the device name's tokens
  double tflops;
  const char* preset;               // memest GPU preset of the same board, or nullptr
  double max_gib;                   // match only up to this capacity (0: any)
  const char* label;
};
const std::vector<PeakEntry>& peak_table();
// Upper-cased alphanumeric runs of a device name: "NVIDIA A100-SXM4-40GB" -> NVIDIA A100 SXM4 40GB
std::vector<std::string> name_tokens(const std::string& name);
// The first entry (most specific first) whose tokens the name holds; nullptr when none.
const PeakEntry* find_peak(const std::string& device_name, double memory_gib);

// ---------------------------------------------------------------------------------------------
// Command line

// Throws std::invalid_argument("--flag: ...") on a bad command line.
Options parse_args(const std::vector<std::string>& args);
std::string usage();

// ---------------------------------------------------------------------------------------------
// The profile

// Device profile from a measurement: "name", "preset" (when the device matches a memest preset;
// unmeasured fields then come from it), "memory_gib", "gpus_per_node", "peak_bf16_tflops",
// the measured profile fields, and "measured" (raw figures, fits, notes).
ojson make_profile(const Measurement& m, const Options& opt);

// The profile without "measured", as the library's gpu reader takes it today.
ojson without_measured(const ojson& profile);

// ---------------------------------------------------------------------------------------------
// The program

// main() of memest-calibrate: 0 written, 1 no device / measurement failed, 2 bad command line
// or replay file. Writes the output file only once everything succeeded.
int run(const std::vector<std::string>& args, const MeasureFn& measure, std::ostream& out,
        std::ostream& err);

}  // namespace memest_calibrate
