#include "states/model_states.hpp"

#include <cmath>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "model/model.hpp"
#include "core/verdict.hpp"

namespace memest {

StateBytes state_bytes(double params, const Precision& precision, int zero, double shard_group) {
  StateBytes s;
  s.weights = params * precision.param_bytes / (zero >= 3 ? shard_group : 1.0);
  s.gradients = params * precision.grad_bytes / (zero >= 2 ? shard_group : 1.0);
  s.optimizer = params * precision.optimizer_bytes / (zero >= 1 ? shard_group : 1.0);
  return s;
}

void validate_precision(const Precision& p, const char* prefix) {
  const std::string base(prefix);
  auto check = [&](double v, const char* name, double min) {
    if (!std::isfinite(v) || v < min || v > 64) {
      fail(base + "." + name, "must be between " + std::to_string(static_cast<int>(min)) +
                                  " and 64 bytes per parameter");
    }
  };
  check(p.param_bytes, "param_dtype", 0.125);  // down to 1-bit weights
  check(p.grad_bytes, "grad_dtype", 0.125);
  check(p.optimizer_bytes, "optimizer", 0);
}

void validate_zero(int zero, const char* field) {
  if (zero < 0 || zero > 3) fail(field, "must be 0, 1, 2 or 3, got " + std::to_string(zero));
}

memest_model_states_result compute_model_states(const memest_model_states_request& r) {
  if (r.struct_size < sizeof(memest_model_states_request)) {
    fail("struct_size", "smaller than this version's request; call memest_model_states_request_init",
         MEMEST_ERR_STRUCT_SIZE);
  }
  validate_model(r.model, "model", true);
  if (r.gpus < 1 || r.gpus > (int64_t{1} << 24)) {
    fail("parallel.gpus", "must be between 1 and 16777216, got " + std::to_string(r.gpus));
  }
  validate_zero(r.zero, "parallel.zero");
  const Precision precision{r.param_bytes, r.grad_bytes, r.optimizer_bytes};
  validate_precision(precision, "training");
  const double capacity = validate_capacity(r.gpu, "gpu", false);

  memest_model_states_result out;
  std::memset(&out, 0, sizeof out);
  out.struct_size = sizeof out;
  out.num_parameters = count_parameters(r.model).total;
  const StateBytes s = state_bytes(out.num_parameters, precision, r.zero,
                                   static_cast<double>(r.gpus));
  out.weights_bytes = s.weights;
  out.gradients_bytes = s.gradients;
  out.optimizer_bytes = s.optimizer;
  out.estimate_bytes = s.total();
  out.capacity_bytes = capacity;
  out.verdict = verdict_for(out.estimate_bytes, capacity);
  return out;
}

}  // namespace memest
