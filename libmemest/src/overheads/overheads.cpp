#include "overheads/overheads.hpp"

#include "plan/plan.hpp"

namespace memest {

double moe_dispatch_buffer_bytes(const Plan& plan) {
  if (plan.ep * plan.etp <= 1) return 0;
  const ActivationLayout& x = plan.layout;
  const memest_model& m = *plan.model;
  // megatron/core/transformer/moe/token_dispatcher.py (MoEAlltoAllTokenDispatcher):
  // token_dispatch's all_to_all (and the etp all-gather) writes R = load*T*k*etp rows of h
  // into a fresh buffer; token_combine's all_to_all writes load*T*k rows back. The same
  // rows, once saved for backward, are counted in the activations (dispatch, combine); these
  // are the communication buffers of the layer in flight, 2 bytes per element.
  const double load = plan.moe_capacity_factor > 0 ? plan.moe_capacity_factor : 1.0;
  const double tokens = x.seq_len * x.micro_batch / (x.cp * (x.sequence_parallel ? x.tp : 1.0));
  const double k = static_cast<double>(m.num_experts_per_tok);
  const double h = static_cast<double>(m.hidden_size);
  const double rows = load * tokens * k;
  return rows * static_cast<double>(plan.etp) * h * 2 + rows * h * 2;
}

OverheadParts stage_overheads(const Plan& plan, int64_t i, double layers, double in_flight,
                              double embedded, double states_bytes, double activation_bytes,
                              double moe_layers, double stack_buffers, double loss_logits,
                              double phase_overlap) {
  const memest_model& m = *plan.model;
  const memest_gpu& g = *plan.gpu;
  const ActivationLayout& x = plan.layout;
  const double t = x.tp, c = x.cp;
  const double sb = x.seq_len * x.micro_batch;
  const double h = static_cast<double>(m.hidden_size);
  const double v = static_cast<double>(m.vocab_size);
  const bool last = i == plan.pp - 1;

  OverheadParts o;
  o.context = g.context_bytes;
  double buffers = 0;
  if (t > 1 && x.sequence_parallel) buffers += 2 * sb * h / c;  // SP all-gather of a layer input
  if (plan.pp > 1) buffers += 2 * (2 * sb * h / (t * c));        // PP send + receive
  buffers += stack_buffers;
  if (moe_layers > 0) {
    o.moe_dispatch = moe_dispatch_buffer_bytes(plan);
    buffers += o.moe_dispatch;
  }
  o.comm_buffers = buffers + (c > 1 ? g.cp_buffer_bytes : 0.0);
  if (last) o.logits = loss_logits >= 0 ? loss_logits : 2 * sb * v / (t * c);

  if (plan.activation_model == MEMEST_ACTIVATIONS_LLAMA && x.recompute != MEMEST_RECOMPUTE_FULL) {
    // (the other stacks' eager blocks are counted exactly: activations/stack_activations.hpp)
    if (m.gated_mlp && plan.framework == MEMEST_FRAMEWORK_MEGATRON &&
        !recomputes(x, MEMEST_RECOMPUTE_MODULE_MLP)) {
      // Eq. 12 counts 8 sbh_ffn; a fused SwiGLU keeps 6 sbh_ffn (none when the recompute
      // module mlp checkpoints the dense MLP)
      const double f = static_cast<double>(m.intermediate_size);
      o.activation_correction -= layers * in_flight * 2 * sb * f / (t * c);
    }
    if (i == 0) {  // Eq. 13's 8sbh per micro-batch: the embedding keeps int64 ids, 8sb
      o.activation_correction +=
          embedded * (8 * sb / c - embedding_activation_bytes(m, plan.coefficients, x));
    }
  }
  o.phase_overlap = phase_overlap;
  const bool single_stream = plan.framework == MEMEST_FRAMEWORK_PYTORCH && !ddp_wrapped(plan);
  const double fragmentation =
      g.fragmentation * (single_stream ? kSingleStreamFragmentationShare : 1.0);
  o.fragmentation = fragmentation * (states_bytes + activation_bytes + o.activation_correction +
                                       o.logits + buffers + phase_overlap);
  return o;
}

}  // namespace memest
