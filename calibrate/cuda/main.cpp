// memest-calibrate: measures a CUDA GPU and writes a memest device profile (see --help).
#include <iostream>
#include <string>
#include <vector>

#include "calibrate.hpp"
#include "measure.hpp"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  return memest_calibrate::run(args, memest_calibrate::measure_cuda, std::cout, std::cerr);
}
