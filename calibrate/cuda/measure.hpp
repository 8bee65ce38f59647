// The GPU side of memest-calibrate (measure.cu): fills a Measurement on the device the options
// name. Returns no_device (message: "no CUDA device found (cudaGetDeviceCount: ...)") when the
// CUDA runtime finds no device or no driver, bad_argument for a --device out of range.
#pragma once

#include "measurement.hpp"

namespace memest_calibrate {

MeasureStatus measure_cuda(const Options& opt, Measurement& m, std::string& message,
                           std::ostream& log);

}  // namespace memest_calibrate
