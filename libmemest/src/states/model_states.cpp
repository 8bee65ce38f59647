#include "states/model_states.hpp"

#include <cmath>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "core/limits.hpp"
#include "core/verdict.hpp"
#include "model/gpu_profile.hpp"
#include "model/model.hpp"
#include "plan/plan.hpp"

namespace memest {

StateBytes state_bytes(double params, const Precision& precision, int zero, double shard_group) {
  StateBytes s;
  s.weights = params * precision.param_bytes / (zero >= 3 ? shard_group : 1.0);
  s.gradients = params * precision.grad_bytes / (zero >= 2 ? shard_group : 1.0);
  s.optimizer = params * precision.optimizer_bytes / (zero >= 1 ? shard_group : 1.0);
  return s;
}

memest_model_states_result compute_model_states(const ModelStatesRequest& r) {
  validate_model(r.model, "model", true);
  check_range("parallel.gpus", r.gpus, 1, kMaxGpus);
  validate_zero(r.zero, "parallel.zero");
  const Precision& precision = r.precision;
  validate_precision(precision, "training");
  const double capacity = validate_gpu(r.gpu, "gpu", false);

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
