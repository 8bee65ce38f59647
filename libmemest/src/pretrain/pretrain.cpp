#include "pretrain/pretrain.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "activations/activations.hpp"
#include "core/error.hpp"
#include "core/verdict.hpp"
#include "model/model.hpp"
#include "overheads/overheads.hpp"
#include "states/model_states.hpp"

namespace memest {

namespace {

// Micro-batches of one stage's activations kept at once by stage i.
// 1F1B (PipeDream-Flush, 4D paper Sec. 3.2.2): stage i keeps p - i micro-batches.
// Interleaved 1F1B (Megatron-LM): device i keeps (p-i-1)*2 + (vpp-1)*p + 1 model chunks of
// L/(p*vpp) layers; for i = 0 that is L(1 + (p-1)/(p*vpp)) layers (Korthikanti Sec. 4.2.3).
// `cap` limits it to the micro-batches an iteration has, when known.
double microbatches_in_flight(const Plan& plan, int64_t i, bool cap) {
  const double p = static_cast<double>(plan.pp);
  const double v = static_cast<double>(plan.vpp);
  const double m = static_cast<double>(plan.num_microbatches);
  double chunks = plan.vpp == 1 ? p - static_cast<double>(i)
                                : (p - static_cast<double>(i) - 1) * 2 + (v - 1) * p + 1;
  if (cap && plan.num_microbatches > 0) chunks = std::min(chunks, m * v);
  return plan.vpp == 1 ? chunks : chunks / v;
}

}  // namespace

memest_stage stage_memory(const Plan& plan, int64_t i, bool cap) {
  const memest_model& m = *plan.model;
  const double t = static_cast<double>(plan.tp);
  const bool first = i == 0;
  const bool last = i == plan.pp - 1;
  const double layers = static_cast<double>(plan.layers.of(i, plan.pp));
  const int64_t moe_count = stage_moe_layers(m, plan.layers, plan.pp, plan.vpp, i);
  const double moe_layers = static_cast<double>(moe_count);
  const double dense_layers = layers - moe_layers;
  // Routed experts are split over ep x etp ranks (megatron/core/transformer/moe/experts.py:
  // num_local_experts = E / ep, each expert's width / etp).
  const double expert_split = static_cast<double>(plan.ep) * static_cast<double>(plan.etp);

  // Parameters on one GPU of this stage (4D paper Eqs. 6-9; Eq. 10 for the sharding group).
  const LayerParams layer = dense_layer_params(m);
  const EdgeParams edge = edge_params(m);
  double params = dense_layers * (layer.sharded / t + layer.replicated);
  double expert_params = 0;
  if (moe_count > 0) {
    const MoeLayerParts moe = moe_layer_parts(m);
    params += moe_layers * (moe.base.sharded / t + moe.base.replicated);
    expert_params += moe_layers * moe.routed / expert_split;
  }
  if (first) params += edge.word_embedding / t + edge.embedding_extra;
  double mtp_params = 0;
  double mtp_activations = 0;
  const double in_flight = microbatches_in_flight(plan, i, cap);
  if (last) {
    params += edge.lm_head / t + edge.final_norm;
    // Tied embeddings under PP: the last stage keeps its own copy of the word embeddings.
    if (m.tie_word_embeddings && plan.pp > 1) params += edge.word_embedding / t;
    // Multi-token-prediction modules sit after the last layer, on the last pipeline stage
    // (megatron/core/transformer/multi_token_prediction.py): their norms and eh_proj, one
    // decoder layer each (MoE or dense as layer L + j would be), the shared head reused.
    for (int64_t j = 0; j < m.mtp_layers; ++j) {
      const LayerParams extra = mtp_extra_params(m);
      double own = extra.sharded / t + extra.replicated;
      if (is_moe_layer(m, m.num_hidden_layers + j)) {
        const MoeLayerParts moe = moe_layer_parts(m);
        own += moe.base.sharded / t + moe.base.replicated;
        expert_params += moe.routed / expert_split;
        mtp_params += moe.routed / expert_split;
        mtp_activations += in_flight * moe_layer_activation_bytes(m, plan.coefficients, plan.layout,
                                                                  static_cast<double>(plan.etp),
                                                                  plan.moe_capacity_factor);
      } else {
        own += layer.sharded / t + layer.replicated;
        mtp_activations += in_flight * layer_activation_bytes(m, plan.coefficients, plan.layout);
      }
      params += own;
      mtp_params += own;
      // enorm and hnorm inputs (2 bytes each) and eh_proj's input, the 2h-wide concatenation
      // (4 bytes): 8 sbh, on the sequence-parallel shard; and the module's logits through
      // the shared head (as Eq. 14 for the main head).
      mtp_activations += in_flight * 8 * plan.layout.seq_len * plan.layout.micro_batch *
                             static_cast<double>(m.hidden_size) /
                             (plan.layout.cp * (plan.layout.sequence_parallel ? t : 1.0)) +
                         head_activation_bytes(m, plan.layout);
    }
  }
  const StateBytes dense_states = state_bytes(params, plan.precision, plan.zero,
                                              static_cast<double>(plan.dp * plan.cp));
  // Expert parameters' gradients and optimizer states are reduced and sharded over the
  // expert data-parallel group (megatron/core/distributed/distributed_data_parallel.py keeps
  // them in separate buffers on the expert data-parallel group;
  // megatron/core/optimizer/__init__.py builds their distributed optimizer over that group).
  const StateBytes expert_states =
      state_bytes(expert_params, plan.precision, plan.zero, static_cast<double>(plan.edp));
  StateBytes states = dense_states;
  states.weights += expert_states.weights;
  states.gradients += expert_states.gradients;
  states.optimizer += expert_states.optimizer;
  params += expert_params;

  // Activations (Eq. 17 for the first stage, generalised per stage).
  double activations =
      in_flight * dense_layers * layer_activation_bytes(m, plan.coefficients, plan.layout);
  double expert_activations = 0;
  if (moe_count > 0) {
    const double etp = static_cast<double>(plan.etp);
    activations += in_flight * moe_layers *
                   moe_layer_activation_bytes(m, plan.coefficients, plan.layout, etp,
                                              plan.moe_capacity_factor);
    expert_activations = in_flight * moe_layers *
                         moe_activation_parts(m, plan.layout, etp, plan.moe_capacity_factor).routed();
  }
  activations += mtp_activations;
  double embedded = 0;
  if (first) {
    embedded = static_cast<double>(plan.pp);  // Eq. 13: p micro-batches
    if (cap && plan.num_microbatches > 0) embedded = std::min(embedded, static_cast<double>(plan.num_microbatches));
    activations += embedded * embedding_activation_bytes(m, plan.coefficients, plan.layout);
  }
  if (last) activations += head_activation_bytes(m, plan.layout);  // Eq. 14, one micro-batch

  memest_stage s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  s.index = static_cast<int32_t>(i);
  s.layers = plan.layers.of(i, plan.pp);
  s.microbatches_in_flight = in_flight;
  s.parameters = params;
  s.weights_bytes = states.weights;
  s.gradients_bytes = states.gradients;
  s.optimizer_bytes = states.optimizer;
  s.activations_bytes = activations;
  s.total_bytes = states.total() + activations;
  const OverheadParts o = stage_overheads(plan, i, dense_layers, in_flight, embedded,
                                          states.total(), activations, moe_layers);
  s.context_bytes = o.context;
  s.comm_buffer_bytes = o.comm_buffers;
  s.logits_bytes = o.logits;
  s.activation_correction_bytes = o.activation_correction;
  s.fragmentation_bytes = o.fragmentation;
  s.overhead_bytes = o.total();
  s.peak_bytes = s.total_bytes + s.overhead_bytes;
  s.moe_layers = moe_count;
  s.expert_parameters = expert_params;
  s.expert_weights_bytes = expert_states.weights;
  s.expert_gradients_bytes = expert_states.gradients;
  s.expert_optimizer_bytes = expert_states.optimizer;
  s.expert_activations_bytes = expert_activations;
  s.moe_dispatch_bytes = o.moe_dispatch;
  s.mtp_parameters = mtp_params;
  return s;
}

double peak_memory(const Plan& plan, int32_t* peak_stage) {
  // The most loaded stage is the first, the second or the last: middle stages hold the same
  // layers with fewer micro-batches in flight the later they come (both schedules), and no
  // embedding or LM head; the second stands for them (it can pass a first stage that an
  // uneven pipeline made one layer lighter). So three stages suffice.
  // A mixture-of-experts model can hold a different number of MoE layers per stage (dense
  // leading layers, a layer step): every stage is computed.
  int32_t best = 0;
  double peak = stage_memory(plan, 0, true).peak_bytes;
  auto consider = [&](int64_t i) {
    if (i <= 0 || i >= plan.pp) return;
    const double p = stage_memory(plan, i, true).peak_bytes;
    if (p > peak) {
      peak = p;
      best = static_cast<int32_t>(i);
    }
  };
  if (is_moe(*plan.model)) {
    for (int64_t i = 1; i < plan.pp; ++i) consider(i);
  } else {
    for (int64_t i : {int64_t{1}, plan.pp - 1}) consider(i);
  }
  if (peak_stage) *peak_stage = best;
  return peak;
}

memest_pretrain_result compute_pretrain(const PretrainRequest& r, memest_stage* stages,
                                        uint32_t stage_capacity) {
  const Plan plan = make_plan(r);
  const double capacity = r.gpu.memory_bytes;

  memest_pretrain_result out;
  std::memset(&out, 0, sizeof out);
  out.struct_size = sizeof out;
  out.num_parameters = count_parameters(r.model).total;
  out.dp = plan.dp;
  out.num_microbatches = plan.num_microbatches;
  // Eq. 18: the first stage with the paper's p micro-batches in flight (pp = 1: whole model,
  // including the LM head and final norm, 2hv/t + h instead of hv/t: with that, the paper's
  // Table 2 reproduces).
  out.estimate_bytes = stage_memory(plan, 0, false).total_bytes;
  out.capacity_bytes = capacity;
  out.stage_count = static_cast<int32_t>(plan.pp);
  out.activation_model = plan.activation_model;
  if (!std::isfinite(out.estimate_bytes)) {
    fail("", "the sizes given overflow a finite byte count", MEMEST_ERR_OVERFLOW);
  }
  for (int64_t i = 0; i < plan.pp; ++i) {
    const memest_stage s = stage_memory(plan, i, true);
    if (!std::isfinite(s.peak_bytes)) {
      fail("", "the sizes given overflow a finite byte count", MEMEST_ERR_OVERFLOW);
    }
    if (s.peak_bytes > out.peak_bytes) {
      out.peak_bytes = s.peak_bytes;
      out.peak_stage = static_cast<int32_t>(i);
    }
    out.paper_peak_bytes = std::max(out.paper_peak_bytes, s.total_bytes);
  }
  out.oom_predicted = out.peak_bytes > capacity;
  out.peak_verdict = peak_verdict_for(out.peak_bytes, capacity);
  out.ep = plan.ep;
  out.etp = plan.etp;
  out.edp = plan.edp;
  // Only now, with every check passed, write the caller's stage array.
  const int64_t written = std::min<int64_t>(plan.pp, stages ? stage_capacity : 0);
  for (int64_t i = 0; i < written; ++i) stages[i] = stage_memory(plan, i, true);
  out.usage_fraction = out.estimate_bytes / capacity;
  out.verdict = verdict_for(out.estimate_bytes, capacity);
  return out;
}

}  // namespace memest
