// memest-calibrate: the raw figures a measurement produces, the options it runs with, and the
// measuring function's signature. Plain C++ without JSON, so that the CUDA side
// (cuda/measure.cu) includes only this.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace memest_calibrate {

// ---------------------------------------------------------------------------------------------
// Raw figures

// Y[m x n] = X[m x k] W[n x k]^T (nn.Linear's forward), bf16 in and out, fp32 accumulate
struct GemmPoint {
  int64_t m = 0;         // rows: tokens per GPU
  int64_t n = 0;
  int64_t k = 0;
  double seconds = 0;    // one GEMM (median over repetitions)
  double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k); }
  double tflops() const { return seconds > 0 ? flops() / seconds / 1e12 : 0; }
};

struct AllocationProbe {  // cudaMalloc(requested) lowered cudaMemGetInfo's free by free_drop
  int64_t requested_bytes = 0;
  int64_t free_drop_bytes = 0;
};

struct CopyTiming {       // bytes copied once, seconds for one copy
  int src = 0;
  int dst = 0;
  int64_t bytes = 0;
  double seconds = 0;
};

struct Measurement {
  // device
  int device_index = 0;
  int device_count = 1;           // CUDA devices visible to the process
  std::string device_name;
  std::string pci_bus_id;
  int cc_major = 0, cc_minor = 0;
  int multiprocessors = 0;
  int driver_version = 0;         // cudaDriverGetVersion: 1000 * major + 10 * minor
  int runtime_version = 0;        // cudaRuntimeGetVersion
  std::string nvml_driver_version;  // "580.65.06" when NVML answered
  std::string date;               // ISO 8601, UTC
  std::string tool_version;

  // memory
  int64_t total_bytes = 0;        // cudaMemGetInfo total
  int64_t free_bytes = 0;         // cudaMemGetInfo free right after the context was created
  int64_t context_bytes = 0;      // the context's own memory
  std::string context_method;     // "nvml" (used before vs after) or "total_minus_free"
  std::optional<int64_t> cublas_handle_bytes;     // free before vs after cublasCreate
  std::optional<int64_t> cublas_workspace_bytes;  // ... vs after the first GEMM (handle included)
  std::optional<int64_t> nccl_bytes;              // free before vs after init + one all-reduce
  int nccl_version = 0;
  int nccl_ranks = 0;
  std::string nccl_note;          // why NCCL was skipped, when it was
  std::vector<AllocationProbe> allocations;

  // speed
  std::vector<GemmPoint> gemm;
  std::optional<CopyTiming> hbm_copy;   // device-to-device copy on the measured GPU
  std::vector<CopyTiming> peer_copies;  // cudaMemcpyPeer from the measured GPU to each peer
  std::vector<std::string> notes;
  std::string note;               // free text kept with the figures (fixtures, examples)
};

// ---------------------------------------------------------------------------------------------
// Options (the command line)

struct Options {
  bool help = false;
  bool version = false;
  std::string output;              // empty: stdout
  int device = 0;
  bool quick = false;
  std::optional<double> peak_tflops;
  std::optional<int> gpus_per_node;
  std::string name;
  std::string replay;              // rebuild the profile from a recorded measured block
  bool skip_nccl = false;
};

// ---------------------------------------------------------------------------------------------
// Measuring

enum class MeasureStatus { ok, no_device, failed, bad_argument };
// Fills the Measurement; on a status other than ok, `message` is the reason (one line).
// Progress goes to `log`.
using MeasureFn = std::function<MeasureStatus(const Options&, Measurement&, std::string& message,
                                              std::ostream& log)>;

// The GEMM shapes a layout produces: rows (tokens per GPU) 256 .. 65536 in powers of 2 by
// (k, n) = (4096, 4096) attention projections, (4096, 14336) MLP up, (14336, 4096) MLP down;
// --quick: rows 256, 1024, 4096, 16384, 65536 by (4096, 4096) and (4096, 14336).
std::vector<GemmPoint> gemm_shapes(bool quick);

std::string tool_version();
std::string iso8601_now();

}  // namespace memest_calibrate
