// Units used in messages and formatting. The 4D paper's "GB" are GiB (2^30 bytes);
// the ZeRO table in the lecture uses decimal GB (10^9 bytes).
#pragma once

namespace memest {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kGB = 1e9;

// A dtype's name by its bytes per element, as responses and emitted flags spell it: 2 bytes
// read as bf16 (a request's 16-bit default; fp16 costs the same bytes).
constexpr const char* dtype_name(double bytes) {
  return bytes == 4 ? "fp32" : bytes == 1 ? "fp8" : "bf16";
}

}  // namespace memest
