// The device-profile fields of memest_gpu, described once: the preset loader, the JSON
// request reader and the JSON response writer all walk this table.
#pragma once

#include <string>

#include "memest/memest.h"

namespace memest {

struct GpuProfileField {
  const char* key;            // JSON name (presets, requests, responses, calibrate/ profiles)
  double memest_gpu::*member;
  double scale;               // JSON value * scale = struct value (MiB -> bytes)
  double min, max;            // accepted JSON values
  double positive_min = 0;    // for a field where 0 means "derive it": the least value above 0
                              // (a denormal peak or efficiency would make a step time infinite)
};

constexpr double kMiBytes = 1024.0 * 1024.0;
// The least peak (TFLOP/s) above 0 any peak field takes: peak_bf16_tflops and the table's.
constexpr double kMinPositivePeakTflops = 1e-3;

constexpr GpuProfileField kGpuProfileFields[] = {
    {"context_mib", &memest_gpu::context_bytes, kMiBytes, 0, 1e7},
    {"page_mib", &memest_gpu::page_bytes, kMiBytes, 1.0 / 1024, 1e6},
    {"cp_buffer_mib", &memest_gpu::cp_buffer_bytes, kMiBytes, 0, 1e7},
    {"fragmentation", &memest_gpu::fragmentation, 1, 0, 10},
    {"gemm_efficiency", &memest_gpu::gemm_efficiency, 1, 1e-3, 1},
    {"gemm_half_tokens", &memest_gpu::gemm_half_tokens, 1, 0, 1e9},
    {"attention_efficiency", &memest_gpu::attention_efficiency, 1, 1e-3, 1},
    {"cp_attention_penalty", &memest_gpu::cp_attention_penalty, 1, 0, 100},
    {"tp_bandwidth_gbps", &memest_gpu::tp_bandwidth_gbps, 1, 1e-3, 1e6},
    {"intra_node_gbps", &memest_gpu::intra_node_gbps, 1, 1e-3, 1e6},
    {"inter_node_gbps", &memest_gpu::inter_node_gbps, 1, 1e-3, 1e6},
    {"pipeline_stage_seconds", &memest_gpu::pipeline_stage_seconds, 1, 0, 1e6},
    // appended in 1.2: offload transfers (throughput) and the fp8 capability (0 or 1)
    {"pcie_gbps", &memest_gpu::pcie_gbps, 1, 1e-3, 1e6},
    {"fp8", &memest_gpu::fp8, 1, 0, 1},
    // appended in 1.5: the step-time model (throughput/kernels.hpp, collectives.hpp)
    {"peak_fp8_tflops", &memest_gpu::peak_fp8_tflops, 1, 0, 1e6, kMinPositivePeakTflops},
    {"hbm_gbps", &memest_gpu::hbm_gbps, 1, 1e-3, 1e6},
    {"gemm_half_dim", &memest_gpu::gemm_half_dim, 1, 0, 1e6},
    {"attention_half_seq", &memest_gpu::attention_half_seq, 1, 0, 1e9},
    {"kernel_overhead_us", &memest_gpu::kernel_overhead_us, 1, 0, 1e6},
    {"intra_node_latency_us", &memest_gpu::intra_node_latency_us, 1, 0, 1e6},
    {"inter_node_latency_us", &memest_gpu::inter_node_latency_us, 1, 0, 1e6},
    {"fp8_gemm_efficiency", &memest_gpu::fp8_gemm_efficiency, 1, 0, 1, 1e-3},
    {"fa2_attention_efficiency", &memest_gpu::fa2_attention_efficiency, 1, 0, 1, 1e-3},
    // appended in 1.9: NVFP4 training (0 or 1) and its peak
    {"fp4", &memest_gpu::fp4, 1, 0, 1},
    {"peak_fp4_tflops", &memest_gpu::peak_fp4_tflops, 1, 0, 1e6, kMinPositivePeakTflops},
    // appended in 1.17: Triton's FlashAttention kernels (0: derived, throughput.cpp)
    {"triton_attention_efficiency", &memest_gpu::triton_attention_efficiency, 1, 0, 1, 1e-3},
};

// The profile every preset starts from (data/gpus.json "defaults"), no capacity.
memest_gpu default_gpu();

// Accepted capacity (memory_gib) and peak (peak_bf16_tflops), as the JSON reader takes them.
constexpr double kMinMemoryGib = 1e-3, kMaxMemoryGib = 1e6;
constexpr double kMaxPeakTflops = 1e6;
constexpr int32_t kMaxGpusPerNode = 1024;

// Checks every field of a GPU (typed or read from JSON) against the ranges above and the
// profile table, naming "<field>.<key>"; returns the capacity in bytes. A capacity of 0 (none
// given) is accepted only when !required.
double validate_gpu(const memest_gpu& gpu, const std::string& field, bool required);

}  // namespace memest
