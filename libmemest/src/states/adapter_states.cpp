#include "states/adapter_states.hpp"

#include <algorithm>

#include "model/tensors.hpp"
#include "plan/stack.hpp"

namespace memest {

Nf4Bytes nf4_bytes(double weights, bool double_quant) {
  Nf4Bytes b;
  b.data = weights * 0.5;
  b.metadata = double_quant ? weights * (1.0 / 64 + 4.0 / (64 * 256)) : weights * (4.0 / 64);
  return b;
}

namespace {
// The linear weights of one layer range of parameter_tensors (every TensorKind::Linear: the
// attention, MLP, experts and router projections).
template <typename F>
void each_linear(const memest_model& m, F f) {
  for (const Tensor& t : parameter_tensors(m)) {
    if (t.kind == TensorKind::Linear) f(t.numel);
  }
}
}  // namespace

double quantised_weights(const memest_model& m) {
  double n = 0;
  each_linear(m, [&](double numel) { n += numel; });
  return n;
}

double quantised_head_weights(const memest_model& m, const Adapter& a) {
  if (a.type != MEMEST_ADAPTER_QLORA || !a.quantize_lm_head) return 0;
  return static_cast<double>(m.vocab_size) * static_cast<double>(m.hidden_size);
}

double largest_quantised_weight(const memest_model& m) {
  double n = 0;
  each_linear(m, [&](double numel) { n = std::max(n, numel); });
  return n;
}

AdapterStates adapter_state_bytes(const StackStateInput& in, const Adapter& a,
                                  const memest_model& m, double base_params,
                                  double adapter_params, double mixed_base_params) {
  AdapterStates s;
  const bool qlora = a.type == MEMEST_ADAPTER_QLORA;
  const double param_bytes = in.precision.param_bytes;
  // The frozen base: weights only (no gradient, no optimizer state).
  double base_bytes = base_params * param_bytes;
  double metadata = 0;
  if (qlora) {
    const double q = std::min(quantised_weights(m) + quantised_head_weights(m, a), base_params);
    const Nf4Bytes nf4 = nf4_bytes(q, a.double_quant == 1);
    base_bytes = (base_params - q) * param_bytes + nf4.data;
    metadata = nf4.metadata;
  }
  // The base's storage follows the framework's partitioning of parameters
  // (states/stack_states.hpp): sharded over the group under ZeRO-3 and FSDP2 zero 2/3, whose
  // unsharded working copies (zero 2, or pp > 1) keep what the all-gather returns: the stored
  // bytes again. Offloading parameters moves the sharded storage to host memory.
  const bool fsdp = in.stack.framework == MEMEST_FRAMEWORK_FSDP;
  const bool sharded = in.zero >= 3 || (fsdp && in.zero >= 2);
  const double div = sharded ? in.shard_group : 1.0;
  s.base_weights = base_bytes / div;
  s.quant_metadata = metadata / div;
  double base_host = 0;
  if (in.stack.offload_params) {
    base_host = s.base_weights + s.quant_metadata;
    s.base_weights = 0;
    s.quant_metadata = 0;
  }
  if (fsdp && in.zero >= 2 && (in.zero == 2 || in.pp > 1)) {
    s.base_weights += base_bytes;
    s.quant_metadata += metadata;
  }

  StackStateInput ad = in;
  ad.params = adapter_params;
  if (in.stack.framework != MEMEST_FRAMEWORK_MEGATRON) {
    ad.precision.param_bytes = a.bytes;
    ad.precision.grad_bytes = a.bytes;
    ad.precision.optimizer_bytes =
        derived_optimizer_bytes(in.precision.optimizer, in.stack.framework, a.bytes);
  }
  // Under Megatron the adapters are parameters like the others (in params_dtype, which
  // plan/stack.cpp requires of adapter.dtype): fp32 main gradients unless grad_dtype says
  // otherwise, and the request's optimizer bytes (the distributed optimizer's main copy and
  // moments), partitioned as state_bytes partitions them.
  const StackStates t = stack_state_bytes(ad);

  s.adapter_weights = t.weights;
  s.adapter_gradients = t.gradients;
  if (mixed_base_params > 0) {
    // FSDP1 with use_orig_params and whole blocks wrapped (torch/distributed/fsdp/_flat_param.py
    // FlatParamHandle: one FlatParameter per unit, requires_grad when any of its parameters
    // does; _runtime_utils.py _post_backward_hook reduce-scatters flat_param.grad): the
    // gradient is one flat tensor over the frozen weights and the adapters alike (the frozen
    // parts zero), sharded after the reduce-scatter, unsharded under no_sync -- as a full
    // fine-tuning's of the same parameters, in the adapters' (= the parameters') dtype.
    StackStateInput mixed = ad;
    mixed.params = adapter_params + mixed_base_params;
    s.adapter_gradients = stack_state_bytes(mixed).gradients;
  }
  s.adapter_optimizer = t.optimizer;
  s.total.weights = s.base_weights + s.quant_metadata + t.weights;
  s.total.gradients = s.adapter_gradients;
  s.total.optimizer = t.optimizer;
  s.total.master = t.master;
  s.total.paged = t.paged;
  s.total.host = base_host + t.host;
  return s;
}

}  // namespace memest
