#include "throughput/throughput.hpp"

#include <algorithm>

#include "activations/activations.hpp"
#include "model/flops.hpp"
#include "model/model.hpp"
#include "plan/plan.hpp"

namespace memest {


double sharding_traffic_bytes(const Plan& plan, double params, double microbatches) {
  // The step above counts one reduce-scatter of the gradients and one all-gather of the
  // parameters. What each stack sends beyond that, per micro-batch:
  const double gather = 2 * params;  // bf16 working copies (FSDP MixedPrecision, DeepSpeed)
  const bool fsdp = plan.framework == MEMEST_FRAMEWORK_FSDP;
  double extra = 0;
  if (plan.zero >= 3 && !(fsdp && plan.pp > 1)) {
    // ZeRO-3 / fully_shard(reshard_after_forward=True): gathered in forward and again in
    // backward for every micro-batch (DeepSpeed stage3.py fetch_sub_module; FSDP2
    // _fsdp_param_group.py pre_forward / pre_backward unshard): 2m gathers, one counted.
    extra += (2 * microbatches - 1) * gather;
  } else if (fsdp && plan.zero == 2 && plan.pp == 1) {
    extra += (microbatches - 1) * gather;  // kept from forward to backward: m gathers
  }
  if ((plan.framework == MEMEST_FRAMEWORK_DEEPSPEED && plan.zero >= 2) ||
      (fsdp && plan.zero >= 2 && plan.pp == 1)) {
    // gradients reduce-scattered every micro-batch, not once a step (stage_1_and_2.py
    // reduce_ipg_grads from the backward hooks; FSDP2 post_backward)
    extra += (microbatches - 1) * params * plan.precision.grad_bytes;
  }
  return extra;
}

double offload_seconds(const Plan& plan, double params, double microbatches) {
  // Offload transfers over PCIe (gpu.pcie_gbps), counted without overlap (an upper bound):
  //  optimizer: the gradient shard goes to the host and the updated parameters come back once
  //    a step (DeepSpeed ZeRO-Offload stage_1_and_2.py async copies; CPUOffloadPolicy);
  //  params: the sharded parameters come from the host at every gather (2 per micro-batch);
  //  activations: what each micro-batch saves goes out in forward and back in backward.
  const Stack& st = plan.stack;
  if (!st.offload_optimizer && !st.offload_params && !st.offload_activations) return 0;
  const double shard = static_cast<double>(plan.dp * plan.cp);
  const Precision& pr = plan.precision;
  double bytes = 0;
  if (st.offload_optimizer || st.offload_params) bytes += params * (pr.grad_bytes + pr.param_bytes) / shard;
  if (st.offload_params) bytes += 2 * microbatches * params * pr.param_bytes / shard;
  if (st.offload_activations) {
    const double layers = static_cast<double>(std::max(plan.layers.first, plan.layers.middle));
    bytes += 2 * microbatches * layers *
             layer_activation_bytes(*plan.model, plan.coefficients, plan.layout);
  }
  return bytes / (plan.gpu->pcie_gbps * 1e9);
}


double moe_all_to_all_seconds(const Plan& plan) {
  if (!is_moe(*plan.model) || plan.ep <= 1) return 0;
  const memest_model& m = *plan.model;
  const memest_gpu& g = *plan.gpu;
  const ActivationLayout& x = plan.layout;
  const double ep = static_cast<double>(plan.ep);
  const double load = plan.moe_capacity_factor > 0 ? plan.moe_capacity_factor : 1.0;
  // Rows of h (2 bytes) one GPU sends per all-to-all: its T tokens' k copies
  // (megatron/core/transformer/moe/token_dispatcher.py: dispatch and combine in forward, their
  // transposes in backward: 4 all-to-alls per layer and micro-batch), of which (ep-1)/ep
  // leave the GPU. The ep group spans ep*etp consecutive ranks (tp innermost): inside a node
  // when that fits, else across nodes.
  const double tokens = x.seq_len * x.micro_batch / (x.cp * (x.sequence_parallel ? x.tp : 1.0));
  const double bytes = load * tokens * static_cast<double>(m.num_experts_per_tok) *
                       static_cast<double>(m.hidden_size) * 2 * (ep - 1) / ep;
  const double span = ep * static_cast<double>(plan.etp);
  const double bw = (span <= g.gpus_per_node ? g.intra_node_gbps : g.inter_node_gbps) * 1e9;
  return 4 * bytes / bw;
}


Throughput estimate_throughput(const Plan& plan) {
  Throughput out;
  if (plan.num_microbatches <= 0) return out;
  const memest_model& m = *plan.model;
  const memest_gpu& g = *plan.gpu;
  const ActivationLayout& x = plan.layout;
  const double t = x.tp, c = x.cp, p = static_cast<double>(plan.pp);
  const double vpp = static_cast<double>(plan.vpp);
  const double d = static_cast<double>(plan.dp);
  const double mb = static_cast<double>(plan.num_microbatches);
  const double s = x.seq_len, b = x.micro_batch;
  const double gpus = t * c * p * d;
  const double peak = g.peak_bf16_tflops * 1e12;
  const double first = static_cast<double>(plan.layers.first);
  const double middle = static_cast<double>(plan.layers.middle);
  const double last = static_cast<double>(plan.layers.last);

  out.model_flops = model_flops_per_token(m, plan.flops, s) * s * b * mb * d;

  // One micro-batch on one GPU of a stage: 3-pass GEMM and attention FLOPs.
  const double tokens = s * b / (t * c);
  double gemm_layer = 6 * plan.flops.active_layer_params * tokens;
  double attn_layer = 12 * s * plan.flops.score_width * tokens / 2;  // causal: half the counted
  if (x.recompute == MEMEST_RECOMPUTE_FULL) {
    gemm_layer *= 4.0 / 3;
    attn_layer *= 4.0 / 3;
  } else if (x.recompute == MEMEST_RECOMPUTE_SELECTIVE && !x.flash_attention) {
    attn_layer *= 4.0 / 3;
  }
  const double rows = s * b / c;
  const double gemm_rate = peak * g.gemm_efficiency * rows / (rows + g.gemm_half_tokens);
  const double attn_rate = peak * g.attention_efficiency / (1 + g.cp_attention_penalty * (c - 1));
  const double per_layer = gemm_layer / gemm_rate + attn_layer / attn_rate;
  const double hv = static_cast<double>(m.hidden_size) * static_cast<double>(m.vocab_size);
  const double head = 6 * hv * tokens / gemm_rate;  // the last stage also runs the LM head
  double tp_per_layer = 0;
  if (t > 1) {
    const double bw = (t <= g.gpus_per_node ? g.tp_bandwidth_gbps : g.inter_node_gbps) * 1e9;
    tp_per_layer = 8 * (t - 1) / t * (2 * s * b * static_cast<double>(m.hidden_size) / c) / bw;
  }
  // The slowest stage sets the pace: the last (LM head), or a full middle stage when an
  // uneven pipeline lightened the ends.
  // MoE layers add their all-to-alls (spread evenly over the layers for the pace).
  if (is_moe(m)) {
    tp_per_layer += moe_all_to_all_seconds(plan) * static_cast<double>(moe_layer_count(m)) /
                    static_cast<double>(m.num_hidden_layers);
  }
  double tau = last * (per_layer + tp_per_layer) + head;
  if (plan.pp > 1) tau = std::max(tau, std::max(first, middle) * (per_layer + tp_per_layer));

  double step = (mb + (p - 1) / vpp) * tau;
  const double dc = d * c;
  const double bytes_per_param = plan.zero >= 1 ? plan.precision.grad_bytes + plan.precision.param_bytes
                                                : 2 * plan.precision.grad_bytes;
  double routed = 0;  // routed-expert parameters of the whole model (MoE)
  if (is_moe(m)) routed = static_cast<double>(moe_layer_count(m)) * moe_layer_parts(m).routed;
  if (dc > 1) {
    const double params = (plan.param_count.total - routed) / (t * p);
    const double bw = (t * c * d <= g.gpus_per_node ? g.intra_node_gbps : g.inter_node_gbps) * 1e9;
    step += (dc - 1) / dc * bytes_per_param * params / bw;
    step += sharding_traffic_bytes(plan, params, mb) * (dc - 1) / dc / bw;
  }
  step += offload_seconds(plan, plan.param_count.total / (t * p), mb);
  const double edp = static_cast<double>(plan.edp);
  if (routed > 0 && edp > 1) {
    // Expert gradients are reduced over the expert data-parallel group (edp ranks, spaced
    // etp*ep apart: inside a node only when the whole expert grid of a stage fits).
    const double params = routed / (static_cast<double>(plan.ep * plan.etp) * p);
    const double span = static_cast<double>(plan.etp * plan.ep) * edp;
    const double bw = (span <= g.gpus_per_node ? g.intra_node_gbps : g.inter_node_gbps) * 1e9;
    step += (edp - 1) / edp * bytes_per_param * params / bw;
  }
  step += g.pipeline_stage_seconds * (p - 1);

  out.step_seconds = step;
  out.tflops_per_gpu = out.model_flops / (step * gpus) / 1e12;
  out.tokens_per_s = s * b * mb * d / step;
  out.bubble_fraction = (p - 1) / (vpp * mb);
  return out;
}

}  // namespace memest
