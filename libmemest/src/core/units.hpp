// Units used in messages and formatting. The 4D paper's "GB" are GiB (2^30 bytes);
// the ZeRO table in the lecture uses decimal GB (10^9 bytes).
#pragma once

namespace memest {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kGB = 1e9;

}  // namespace memest
