#include "pretrain/pretrain.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>

#include "activations/activations.hpp"
#include "activations/stack_activations.hpp"
#include "core/error.hpp"
#include "core/verdict.hpp"
#include "model/adapter.hpp"
#include "model/model.hpp"
#include "overheads/overheads.hpp"
#include "states/adapter_states.hpp"
#include "states/model_states.hpp"
#include "states/stack_states.hpp"
#include "throughput/throughput.hpp"

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

// The activation side of the training stacks beside Megatron, for one stage: the per-layer
// terms the plan resolved once (plan/plan.hpp StackLayerTerms) over this stage's layers.
struct StackActivationTerms {
  double plain_layer = 0;    // one block keeping everything, one micro-batch
  double layers_bytes = 0;   // the stage's blocks over the micro-batches in flight
  double recompute = 0;      // the recomputation working set (once per stage)
  double weight_copies = 0;  // autocast's bf16 copies of the linear weights
};

// `moe_layers` of the stage's `layers` are an MoE model's sparse blocks (k.plain_layer), the
// others dense blocks (k.plain_dense_layer; the same for a dense model). recompute_every > 1
// is refused for a model mixing both (plan/stack.cpp), so every_nth_checkpointed_bytes sees
// one kind of block.
StackActivationTerms stack_activation_terms(const Plan& plan, double layers, double moe_layers,
                                            double in_flight, bool last,
                                            const LayerParams& layer, const EdgeParams& edge) {
  const StackLayerTerms& k = plan.stack_terms;
  StackActivationTerms r;
  const double dense_layers = layers - moe_layers;
  r.plain_layer = moe_layers > 0 ? k.plain_layer : k.plain_dense_layer;
  r.layers_bytes =
      in_flight * (k.checkpointing
                       ? every_nth_checkpointed_bytes(static_cast<int64_t>(layers),
                                                      plan.stack.recompute_every, k.kept_layer,
                                                      r.plain_layer)
                       : moe_layers * k.plain_layer + dense_layers * k.plain_dense_layer);
  // the rebuild working set exists only if some block of the stage is checkpointed:
  // recompute_every above the stage's layers checkpoints none
  const int64_t every = plan.stack.recompute_every;
  r.recompute = (k.checkpointing && every > 1 && static_cast<int64_t>(layers) < every) ? 0.0 : k.recompute;
  if (k.autocast) {
    // Autocast casts the weights of the linears it runs (attention, dense MLPs, the router,
    // shared experts); the routed experts' grouped_mm is not autocast-enabled and runs on the
    // fp32 weights themselves (transformers integrations/moe.py _grouped_mm).
    const double t = plan.layout.tp;
    const memest_model& m = *plan.model;
    double linear = dense_layers * layer.sharded / t;
    if (moe_layers > 0) {
      const double router = static_cast<double>(m.hidden_size) * static_cast<double>(m.num_experts);
      linear += moe_layers * (plan.moe_parts.base.sharded / t + router);
    }
    r.weight_copies = autocast_weight_copies_bytes(linear + (last ? edge.lm_head / t : 0.0));
  }
  return r;
}

}  // namespace

memest_stage stage_memory(const Plan& plan, int64_t i, bool cap) {
  const memest_model& m = *plan.model;
  const double t = static_cast<double>(plan.tp);
  const bool first = i == 0;
  const bool last = i == plan.pp - 1;
  const double layers = static_cast<double>(plan.layers.of(i, plan.pp));
  const int64_t moe_count =
      is_moe(m) ? stage_moe_layers(m, plan.layers, plan.pp, plan.vpp, i) : 0;
  const double moe_layers = static_cast<double>(moe_count);
  const double dense_layers = layers - moe_layers;
  // Routed experts are split over ep x etp ranks (megatron/core/transformer/moe/experts.py:
  // num_local_experts = E / ep, each expert's width / etp).
  const double expert_split = static_cast<double>(plan.ep) * static_cast<double>(plan.etp);

  // Parameters on one GPU of this stage (4D paper Eqs. 6-9; Eq. 10 for the sharding group).
  const LayerParams& layer = plan.dense_layer;
  const EdgeParams& edge = plan.edge;
  double params = dense_layers * (layer.sharded / t + layer.replicated);
  double expert_params = 0;
  if (moe_count > 0) {
    const MoeLayerParts& moe = plan.moe_parts;
    params += moe_layers * (moe.base.sharded / t + moe.base.replicated);
    expert_params += moe_layers * moe.routed / expert_split;
  }
  // A hybrid model's layers: their mixers instead of attention, absent blocks.
  const LayerMix mix = stage_layer_mix(m, plan.layers, plan.pp, plan.vpp, i);
  if (mix.any()) {
    const LayerParams d = hybrid_params_delta(m, mix);
    params += d.sharded / t + d.replicated;
  }
  if (first) params += edge.word_embedding / t + edge.embedding_extra;
  double mtp_params = 0;
  double mtp_activations = 0;
  const double in_flight = microbatches_in_flight(plan, i, cap);
  if (last) {
    params += edge.lm_head / t + edge.final_norm;
    // Tied embeddings under PP: the last stage keeps its own copy of the word embeddings.
    if (m.tie_word_embeddings && plan.pp > 1) params += edge.word_embedding / t;
  }
  const bool mtp_here = trains_mtp(plan) && i == plan.layers.mtp_stage(plan.pp);
  if (mtp_here && !first && !m.tie_word_embeddings) {
    // The MTP modules embed the shifted tokens themselves: the rank that runs them builds its
    // own embedding (megatron/core/models/gpt/gpt_model.py: LanguageModelEmbedding where
    // pre_process or mtp_process); a tied model's last stage already holds that copy.
    params += edge.word_embedding / t;
    mtp_params += edge.word_embedding / t;
  }
  if (mtp_here) {
    // Multi-token-prediction modules sit after the last layer, on the last pipeline stage or
    // where a layout puts its 'm' (megatron/core/transformer/multi_token_prediction.py): their
    // norms and eh_proj, one decoder layer each (MoE or dense as layer L + j would be); their
    // logits and loss run through the output layer, on the last stage (gpt_model.py
    // _postprocess, process_mtp_loss).
    for (int64_t j = 0; j < m.mtp_layers; ++j) {
      const LayerParams extra = mtp_extra_params(m);
      double own = extra.sharded / t + extra.replicated;
      if (is_moe_layer(m, m.num_hidden_layers + j)) {
        const MoeLayerParts& moe = plan.moe_parts;
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
      // (4 bytes): 8 sbh, on the sequence-parallel shard.
      mtp_activations += in_flight * 8 * plan.layout.seq_len * plan.layout.micro_batch *
                         static_cast<double>(m.hidden_size) /
                         (plan.layout.cp * (plan.layout.sequence_parallel ? t : 1.0));
    }
  }
  if (last && trains_mtp(plan)) {
    // each MTP module's logits through the shared head (as Eq. 14 for the main head)
    mtp_activations += static_cast<double>(m.mtp_layers) * head_activation_bytes(m, plan.layout);
  }
  // States per framework (states/stack_states.hpp; under megatron the ZeRO partitioning of
  // state_bytes exactly).
  StackStateInput sin;
  sin.params = params;
  sin.largest_tensor =
      std::max(edge.word_embedding, static_cast<double>(m.hidden_size) *
                                        static_cast<double>(m.intermediate_size)) / t;
  if (moe_count > 0) {
    // transformers 5.x keeps a layer's experts as 3-D parameters: gate_up_proj (E x 2fe x h)
    // is one tensor (models/qwen3_moe/modeling_qwen3_moe.py Qwen3MoeExperts)
    const double gate_up = static_cast<double>(m.num_experts) * (m.gated_mlp ? 2.0 : 1.0) *
                           static_cast<double>(expert_width(m)) *
                           static_cast<double>(m.hidden_size) / expert_split;
    sin.largest_tensor = std::max(sin.largest_tensor, gate_up);
  }
  sin.shard_group = static_cast<double>(plan.dp * plan.cp);
  sin.pp = plan.pp;
  sin.zero = plan.zero;
  sin.precision = plan.precision;
  sin.stack = plan.stack;
  sin.accumulates = plan.num_microbatches > 1;
  StackStates ss;
  AdapterStates as;  // LoRA / QLoRA parts (zero without an adapter)
  double trainable = params;
  double adapter_block = 0;  // one layer's adapter parameters
  double expert_trainable = 0;  // Megatron: the routed experts' adapters on this GPU
  const bool megatron_lora = plan.adapter.enabled() && plan.framework == MEMEST_FRAMEWORK_MEGATRON;
  if (megatron_lora) {
    // LoRA under Megatron (model/adapter.hpp megatron_adapter_parameters): this stage's layers'
    // adapters as each rank holds them; the frozen base (params, experts included) keeps its
    // weights only. Trainable parameters keep Megatron's states (bf16 weights, fp32 main
    // gradients, the distributed optimizer's fp32 main copy and moments): the grad buffers and
    // the optimizer cover parameters that require a gradient only
    // (megatron/core/distributed/distributed_data_parallel.py, param_and_grad_buffer.py).
    const MegatronAdapterParams mp = megatron_adapter_parameters(
        m, plan.adapter.targets, static_cast<double>(plan.adapter.rank), t,
        static_cast<double>(plan.ep), static_cast<double>(plan.etp));
    trainable = dense_layers * mp.dense_layer + moe_layers * mp.moe_layer + mp.blocks.delta(mix);
    expert_trainable = moe_layers * mp.moe_experts;
    if (mtp_here) {
      for (int64_t j = 0; j < m.mtp_layers; ++j) {
        const bool moe_mtp = is_moe_layer(m, m.num_hidden_layers + j);
        trainable += moe_mtp ? mp.moe_layer : mp.dense_layer;
        if (moe_mtp) expert_trainable += mp.moe_experts;
      }
    }
    as = adapter_state_bytes(sin, plan.adapter, m, params + expert_params, trainable);
    ss = as.total;
  } else if (plan.adapter.enabled()) {
    // Adapters only under pp = tp = 1 (plan/stack.cpp validate_adapter): the stage is the model.
    const AdapterParams ap = adapter_parameters(m, plan.adapter.targets,
                                                static_cast<double>(plan.adapter.rank), "");
    trainable = ap.total();
    adapter_block = ap.largest_layer(m);
    // the frozen base holds the experts too (no gradient, no optimizer state); adapters run
    // without expert parallelism, so the experts shard with the rest (validate_adapter)
    // fsdp1 with fsdp_use_orig_params: the blocks' frozen weights share FlatParameters with
    // the adapters; the root unit (embedding, final norm, head) holds no adapter and stays
    // frozen (plan/stack.cpp allows it with lora at pp = tp = 1 only: the stage is the model)
    const double mixed_base =
        plan.stack.fsdp_use_orig_params == 1
            ? params + expert_params - (edge.word_embedding + edge.embedding_extra +
                                        edge.final_norm + edge.lm_head)
            : 0.0;
    as = adapter_state_bytes(sin, plan.adapter, m, params + expert_params, trainable,
                             std::max(0.0, mixed_base));
    ss = as.total;
  } else {
    ss = stack_state_bytes(sin);
  }
  // Expert parameters' gradients and optimizer states are reduced and sharded over the
  // expert data-parallel group (megatron/core/distributed/distributed_data_parallel.py keeps
  // them in separate buffers on the expert data-parallel group;
  // megatron/core/optimizer/__init__.py builds their distributed optimizer over that group).
  // Under fsdp and pytorch (ep = 1, etp = tp: plan/stack.cpp) edp = dp * cp, the group the
  // other parameters shard over: FSDP2 shards the experts with the rest of their block.
  StackStates es;  // (under an adapter the frozen experts are in the base: as above)
  if (expert_trainable > 0) {
    // Megatron's expert adapters: their states over the expert data-parallel group
    StackStateInput ein = sin;
    ein.params = expert_trainable;
    ein.shard_group = static_cast<double>(plan.edp);
    es = stack_state_bytes(ein);
  } else if (expert_params > 0 && !plan.adapter.enabled()) {
    StackStateInput ein = sin;
    ein.params = expert_params;
    ein.shard_group = static_cast<double>(plan.edp);
    es = stack_state_bytes(ein);
    // with the step in backward one gradient is alive at a time: counted once, in ss, whose
    // largest_tensor includes the experts' own
    if (plan.stack.optimizer_in_backward) es.gradients = 0;
  }
  StateBytes states;
  states.weights = ss.weights + es.weights;
  // FSDP1's root unit (pp = 1: this stage is the model) stays gathered between forward and
  // backward: the embedding, the final norm and the LM head (NF4 when quantised).
  double unsharded_root = 0;
  if (first && last) {
    const double gather = fsdp_gather_bytes(plan.stack, plan.precision.param_bytes);
    const double head_q = quantised_head_weights(m, plan.adapter);
    const double root = edge.word_embedding + edge.embedding_extra + edge.final_norm +
                        edge.lm_head - head_q;  // lm_head is 0 when tied
    const Nf4Bytes head_nf4 = nf4_bytes(head_q, plan.adapter.double_quant == 1);
    unsharded_root = fsdp1_unsharded_root_bytes(plan.stack, plan.zero, plan.pp, root, gather);
    if (unsharded_root > 0) unsharded_root += head_nf4.data + head_nf4.metadata;
  }
  states.weights += unsharded_root;
  states.gradients = ss.gradients + es.gradients;
  states.optimizer = ss.optimizer + es.optimizer;
  // The training stack's buffers (0 under megatron). FSDP2 gathers a whole block at a time:
  // an MoE block with all its experts (ep = 1 outside megatron).
  double block = layer.sharded / t + layer.replicated;
  if (moe_count > 0) {
    const MoeLayerParts& moe = plan.moe_parts;
    block = std::max(block, moe.base.sharded / t + moe.base.replicated + moe.routed / expert_split);
  }
  // DDP buckets every gradient, the experts' too (under megatron no DDP bucket is counted)
  const double bucketed = params + expert_params;
  // DDP-wrapped: with more than one data-parallel rank, or on one process when the request
  // says so (training.ddp: torchrun with DDP around one GPU). A bucket size alone -- 25, DDP's
  // documented default -- does not wrap one process (the HF Trainer, accelerate and torchtune
  // wrap only when the world is larger).
  const bool ddp = ddp_wrapped(plan);
  // gradient_as_bucket_view: the gradients are views of DDP's buckets (no second copy)
  const bool bucket_view = plan.stack.ddp_gradient_as_bucket_view == 1;
  double framework_buffers = 0;
  if (plan.adapter.enabled()) {
    // Only parameters that require a gradient are bucketed or reduce-scattered (DDP's reducer
    // and FSDP2's foreach_reduce skip the frozen ones; DeepSpeed's ipg buffer holds gradients):
    // the collectives of the gradients see the adapters alone. FSDP2 and ZeRO-3 still gather
    // the frozen base block by block, in its stored bytes.
    const double ab = plan.adapter.bytes;
    // one frozen block as gathered: NF4 data and statistics for QLoRA's linears
    double base_block_bytes = block * plan.precision.param_bytes;
    if (plan.adapter.type == MEMEST_ADAPTER_QLORA) {
      const double q = quantised_weights(m) / static_cast<double>(m.num_hidden_layers);  // blocks
      const Nf4Bytes nf4 = nf4_bytes(q, plan.adapter.double_quant == 1);
      base_block_bytes = (block - q) * plan.precision.param_bytes + nf4.data + nf4.metadata;
    }
    switch (plan.framework) {
      case MEMEST_FRAMEWORK_FSDP:
        if (plan.zero >= 2) {
          // one block's reduce-scatter input: the adapters' gradients, or with
          // fsdp_use_orig_params the block's whole flat gradient (states/adapter_states.cpp)
          framework_buffers = (adapter_block + (plan.stack.fsdp_use_orig_params == 1 ? block : 0.0)) * ab;
          if (plan.zero == 3) framework_buffers += 2 * (base_block_bytes + adapter_block * ab);
        } else {
          framework_buffers = ddp_bucket_bytes(trainable, ab, ddp, bucket_view);
        }
        break;
      case MEMEST_FRAMEWORK_PYTORCH:
        framework_buffers = ddp_bucket_bytes(trainable, ab, ddp, bucket_view);
        break;
      case MEMEST_FRAMEWORK_DEEPSPEED: {
        const double reduce = plan.stack.ds_reduce_bucket_size > 0 ? plan.stack.ds_reduce_bucket_size
                                                                    : kDsReduceBucketSize;
        // the ipg buffer is allocated whole, in the adapters' dtype (states/stack_states.hpp)
        if (plan.zero >= 1) framework_buffers = reduce * ab;
        // ZeRO-3 gathers whole modules, the (tied) embedding too: see the full-model case below
        const double embedding_bytes =
            (first || last ? edge.word_embedding : 0.0) * plan.precision.param_bytes;
        if (plan.zero == 3) {
          // the reduce-scatter's flat copy of the adapters' gradients, the module being run
          // and the next one prefetched, and with offload_param the partition's copy
          const double largest = std::max(base_block_bytes, embedding_bytes);
          framework_buffers += std::min(reduce, trainable) * ab + base_block_bytes + largest +
                               deepspeed_offload_gather_copy_bytes(plan.stack, plan.zero, largest,
                                                                   sin.shard_group);
        }
        break;
      }
      default: break;
    }
  } else switch (plan.framework) {
    case MEMEST_FRAMEWORK_FSDP:
      framework_buffers = plan.zero >= 2
                              ? fsdp_buffer_bytes(block, plan.zero, plan.pp,
                                                  plan.stack.reduce_dtype_bytes(plan.precision.grad_bytes),
                                                  fsdp_gather_bytes(plan.stack, plan.precision.param_bytes))
                              : ddp_bucket_bytes(bucketed, plan.precision.grad_bytes, ddp,
                                                 bucket_view);
      break;
    case MEMEST_FRAMEWORK_PYTORCH:
      framework_buffers = ddp_bucket_bytes(bucketed, plan.precision.grad_bytes, ddp, bucket_view);
      break;
    case MEMEST_FRAMEWORK_DEEPSPEED: {
      const double threshold = plan.stack.ds_param_persistence_threshold > 0
                                   ? plan.stack.ds_param_persistence_threshold
                                   : kDsParamPersistenceThreshold;
      // tensors at or below the threshold stay whole: the norms (h elements each)
      const double persistent =
          static_cast<double>(m.hidden_size) <= threshold ? layers * layer.replicated : 0.0;
      // ZeRO-3 gathers a whole module's parameters before its forward (and backward):
      // the embedding's and the LM head's (the tied embedding's again) are each one module,
      // larger than a block on vocabularies like BLOOM's (runtime/zero/
      // partitioned_param_coordinator.py fetch_sub_module gathers module.parameters()).
      double gathered_module = block;
      if (first || last) gathered_module = std::max(gathered_module, edge.word_embedding / t);
      if (last) gathered_module = std::max(gathered_module, edge.lm_head / t);
      framework_buffers =
          deepspeed_buffer_bytes(params, gathered_module, persistent, plan.zero, plan.precision,
                                 plan.stack) +
          deepspeed_offload_gather_copy_bytes(plan.stack, plan.zero,
                                              gathered_module * plan.precision.param_bytes,
                                              sin.shard_group);
      break;
    }
    default: break;
  }

  // Activations (Eq. 17 for the first stage, generalised per stage).
  const bool megatron = plan.framework == MEMEST_FRAMEWORK_MEGATRON;
  double activations = 0;
  double per_layer = 0;        // one layer, one micro-batch, as the offload stages it
  StackActivationTerms st;     // the other stacks' terms (zero under megatron)
  double expert_activations = 0;
  if (megatron) {
    per_layer = layer_activation_bytes(m, plan.coefficients, plan.layout);
    activations = in_flight * dense_layers * per_layer;
    if (moe_count > 0) {
      const double etp = static_cast<double>(plan.etp);
      activations += in_flight * moe_layers *
                     moe_layer_activation_bytes(m, plan.coefficients, plan.layout, etp,
                                                plan.moe_capacity_factor);
      expert_activations =
          in_flight * moe_layers *
          moe_activation_parts(m, plan.layout, etp, plan.moe_capacity_factor).routed();
    }
    activations += mtp_activations;
    if (megatron_lora) {
      // the frozen base's freed inputs and the adapters' own saved tensors, per layer
      // (activations/activations.hpp megatron_lora_layer_delta)
      MegatronLoraActivation la;
      la.targets = plan.adapter.targets;
      la.rank = static_cast<double>(plan.adapter.rank);
      la.dropout = plan.adapter.dropout > 0;
      const double etp = static_cast<double>(plan.etp);
      auto delta = [&](bool moe) {
        return megatron_lora_layer_delta(m, plan.layout, la, moe, etp, plan.moe_capacity_factor);
      };
      double lora = dense_layers * delta(false) + moe_layers * delta(true);
      if (mix.any()) {
        // a hybrid's layers: the attention's and the dense MLP's halves where they exist, the
        // mixers' in_proj / out_proj adapters (activations/mixer_activations.hpp)
        const MixerAdapterActivation ma{la.targets, la.rank, la.dropout, true};
        AdapterBlocks halves;
        halves.attention = megatron_lora_attention_delta(m, plan.layout, la);
        halves.dense_mlp = megatron_lora_mlp_delta(m, plan.layout, la, false, etp,
                                                   plan.moe_capacity_factor);
        halves.mamba = mixer_adapter_saved_bytes(m, plan.layout, ma, false);
        halves.deltanet = mixer_adapter_saved_bytes(m, plan.layout, ma, true);
        lora += halves.delta(mix);
      }
      if (mtp_here) {
        for (int64_t j = 0; j < m.mtp_layers; ++j) {
          lora += delta(is_moe_layer(m, m.num_hidden_layers + j));
        }
      }
      activations += in_flight * lora;
    }
    activations += in_flight * hybrid_activation_delta(
                                   m, plan.layout, mix,
                                   megatron_block_shares(m, plan.coefficients, plan.layout),
                                   true);
  } else {
    st = stack_activation_terms(plan, layers, moe_layers, in_flight, last, layer, edge);
    if (moe_count > 0) {
      // the MoE blocks that keep everything (none under full recomputation of every block)
      const StackLayerTerms& k = plan.stack_terms;
      const int64_t every = plan.stack.recompute_every;
      const double kept_whole =
          !k.checkpointing ? moe_layers
                           : (every > 1 ? moe_layers - static_cast<double>(moe_count / every) : 0.0);
      expert_activations = in_flight * kept_whole * k.moe_routed;
    }
    per_layer = st.plain_layer;
    activations = st.layers_bytes + st.recompute;
    // hybrid layers that keep everything (checkpointed blocks keep their input, any kind)
    if (!plan.stack_terms.checkpointing) {
      activations +=
          in_flight * hybrid_activation_delta(m, plan.layout, mix, plan.stack_terms.shares, false);
      if (plan.adapter.enabled()) {  // the mixers' in_proj / out_proj adapters under peft
        const MixerAdapterActivation ma{plan.adapter.targets,
                                        static_cast<double>(plan.adapter.rank),
                                        plan.adapter.dropout > 0, false};
        activations += in_flight * (static_cast<double>(mix.mamba + mix.parallel) *
                                        mixer_adapter_saved_bytes(m, plan.layout, ma, false) +
                                    static_cast<double>(mix.deltanet) *
                                        mixer_adapter_saved_bytes(m, plan.layout, ma, true));
      }
    }
  }
  if (plan.stack.fp8 || plan.stack.fp4) {
    // fp8 linears (activations/stack_activations.hpp): Transformer Engine under megatron and
    // deepspeed, torchao's Float8Linear under fsdp and pytorch; only blocks that keep their
    // activations change. NVFP4: Transformer Engine under megatron (plan/stack.cpp).
    const Fp8Impl impl = plan.stack.fp4 ? Fp8Impl::TransformerEngineNvfp4
                         : (megatron || plan.framework == MEMEST_FRAMEWORK_DEEPSPEED)
                             ? Fp8Impl::TransformerEngine
                             : Fp8Impl::Torchao;
    const double linear = layers * layer.sharded / t + (last ? edge.lm_head / t : 0.0);
    double copies = fp8_weight_copies_bytes(impl, linear);
    if (plan.stack.fp8 && impl == Fp8Impl::TransformerEngine && plan.precision.param_bytes == 1) {
      // fp8 parameters (param_dtype fp8: Megatron-LM --fp8-param-gather, Transformer Engine's
      // fp8_model_init): each linear weight is a Float8Tensor whose data is the row-wise fp8
      // copy (transformer_engine/pytorch/tensor/float8_tensor.py); only the column-wise
      // (transposed) copy is added. The embedding, the output layer and the norms are not
      // Transformer Engine linears and stay in bf16: one byte more than param_dtype says.
      copies /= 2;
      double bf16 = layers * layer.replicated;
      if (first) bf16 += edge.word_embedding / t + edge.embedding_extra;
      if (last) {
        bf16 += edge.lm_head / t + edge.final_norm;
        if (m.tie_word_embeddings && plan.pp > 1) bf16 += edge.word_embedding / t;
      }
      copies += bf16 * (2 - plan.precision.param_bytes);
    }
    states.weights += copies;
    if (plan.layout.recompute == MEMEST_RECOMPUTE_NONE) {
      activations += in_flight * layers * fp8_activation_delta(impl, m, plan.layout);
    }
  }
  states.weights += st.weight_copies;
  params += expert_params;
  double dequant = 0;
  if (plan.adapter.type == MEMEST_ADAPTER_QLORA) {
    // one linear dequantised to param_dtype at a time (states/adapter_states.hpp)
    dequant = std::max(largest_quantised_weight(m), quantised_head_weights(m, plan.adapter)) *
              plan.precision.param_bytes;
    activations += dequant;
  }
  double embedded = 0;
  if (first) {
    embedded = static_cast<double>(plan.pp);  // Eq. 13: p micro-batches
    if (cap && plan.num_microbatches > 0) embedded = std::min(embedded, static_cast<double>(plan.num_microbatches));
    activations += embedded * embedding_activation_bytes(m, plan.coefficients, plan.layout);
  }
  double loss_logits = -1;  // the overhead model's bf16 logits (megatron + fused)
  if (last) {
    if (megatron && plan.loss == MEMEST_LOSS_FUSED) {
      activations += head_activation_bytes(m, plan.layout);  // Eq. 14, one micro-batch
    } else {
      // Eq. 14's final-norm and output-layer inputs; the logits and the loss by the stack's
      // loss (activations/stack_activations.hpp loss_memory), in the logits part
      const ActivationLayout& x = plan.layout;
      activations += 4 * x.seq_len * x.micro_batch / x.cp * static_cast<double>(m.hidden_size) /
                     (x.sequence_parallel ? x.tp : 1.0);
      loss_logits = plan.stack_terms.loss;
    }
  }

  // Activation offloading (torchtune/training/_activation_offloading.py OffloadActivations;
  // Megatron-Core cpu_offload): the layers' saved activations go to host memory; what one
  // layer saved for one micro-batch stays on the GPU as the staging buffer of the copy stream.
  // Under checkpointing that is the block's input, not the block: the offload hooks see only
  // what torch/utils/checkpoint.py saves, and the rebuilt block stays on the GPU (its own
  // term). (Megatron-Core refuses cpu_offloading with recomputation, so there it is the block.)
  double host_activations = 0, staging = 0;
  if (plan.stack.offload_activations) {
    host_activations = megatron ? in_flight * layers * per_layer : st.layers_bytes;
    staging = layers > 0 && in_flight > 0 ? host_activations / (in_flight * layers) : 0.0;
    activations -= host_activations;
  }

  // fsdp and pytorch without gradient accumulation: gradients appear during backward as the
  // activations are freed (torch/optim/optimizer.py zero_grad(set_to_none=True) at every step;
  // torchtune and torchtitan call it), so the forward-end set (activations and the loss) and
  // the backward-end set (gradients and the block being recomputed) peak at different times.
  double phase_overlap = 0;
  const bool frees_gradients = plan.framework == MEMEST_FRAMEWORK_FSDP ||
                               plan.framework == MEMEST_FRAMEWORK_PYTORCH;
  if (frees_gradients && plan.pp == 1 && plan.num_microbatches <= 1 &&
      !plan.stack.optimizer_in_backward) {
    // Under DDP with gradient_as_bucket_view the gradients are views of the reducer's buckets
    // (torch/csrc/distributed/c10d/reducer.cpp initialize_buckets allocates bucket.gradients
    // for the reducer's lifetime): zero_grad(set_to_none=True) drops the views, not the memory,
    // so the gradients stay through the forward and are not part of the backward-end set.
    const bool gradients_persist = ddp && bucket_view;
    const double forward_end = activations - st.recompute + std::max(loss_logits, 0.0);
    const double backward_end = (gradients_persist ? 0.0 : states.gradients) + st.recompute;
    phase_overlap = -std::min(forward_end, backward_end);
  } else if (last && loss_logits > 0 && st.recompute > 0) {
    // Otherwise the loss and the rebuilt block still never coexist: the loss's temporaries die
    // when its backward has produced the last block's output gradient, and only then does that
    // block's backward rerun its forward (torch/utils/checkpoint.py recomputes on unpack, in
    // backward), so the last stage holds the larger of the two, not both.
    phase_overlap = -std::min(loss_logits, st.recompute);
  }

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
  const OverheadParts o =
      stage_overheads(plan, i, dense_layers, in_flight, embedded, states.total(), activations,
                      moe_layers, framework_buffers + staging, loss_logits, phase_overlap);
  s.context_bytes = o.context;
  s.comm_buffer_bytes = o.comm_buffers;
  s.logits_bytes = o.logits;
  s.activation_correction_bytes = o.activation_correction;
  s.fragmentation_bytes = o.fragmentation;
  // optimizer.step() runs after the backward has freed every activation and the loss: its
  // temporaries add to the peak only beyond what those freed (states/stack_states.hpp
  // optimizer_step_temporary_bytes). Offloaded optimizers step on the CPU.
  const double moments_on_gpu = states.optimizer - (plan.stack.offload_optimizer ? 0.0 : ss.master + es.master);
  const double step_temporaries =
      optimizer_step_temporary_bytes(plan.precision.optimizer, std::max(moments_on_gpu, 0.0)) +
      deepspeed_fp16_step_temporary_bytes(plan.stack, plan.zero, plan.precision.param_bytes,
                                          plan.adapter.enabled() ? trainable + expert_trainable
                                                                 : params);  // what it steps
  const double freed_by_step = activations + std::max(loss_logits, 0.0) + o.phase_overlap;
  s.optimizer_step_bytes = std::max(0.0, step_temporaries - std::max(freed_by_step, 0.0));
  s.unsharded_root_bytes = unsharded_root;
  s.overhead_bytes = o.total() + s.optimizer_step_bytes;
  s.peak_bytes = s.total_bytes + s.overhead_bytes;
  // Allocated vs reserved: the caching allocator reserves what it has allocated plus the
  // fragmentation term (README "Allocated and reserved").
  s.peak_reserved_bytes = s.peak_bytes;
  s.peak_allocated_bytes = s.peak_bytes - s.fragmentation_bytes;
  s.host_bytes = ss.host + es.host + host_activations;
  s.paged_bytes = ss.paged + es.paged;
  // What PyTorch and nvidia-smi report: the allocator's counters leave out the CUDA context;
  // nvidia-smi shows the process's whole footprint, managed (paged) memory resident included.
  s.torch_max_memory_allocated_bytes = s.peak_allocated_bytes - s.context_bytes;
  s.torch_max_memory_reserved_bytes = s.peak_reserved_bytes - s.context_bytes;
  s.nvidia_smi_bytes = s.peak_reserved_bytes + s.paged_bytes;
  s.framework_buffer_bytes = framework_buffers;
  s.master_weights_bytes = plan.stack.offload_optimizer ? 0.0 : ss.master + es.master;
  s.offload_staging_bytes = staging;
  s.loss_bytes = std::max(loss_logits, 0.0);
  s.recompute_bytes = st.recompute;
  s.phase_overlap_bytes = o.phase_overlap;
  s.moe_layers = moe_count;
  s.expert_parameters = expert_params;
  if (!plan.adapter.enabled()) {  // (an adapter's expert states are its adapters', below)
    s.expert_weights_bytes = es.weights;
    s.expert_gradients_bytes = es.gradients;
    s.expert_optimizer_bytes = es.optimizer;
  }
  s.expert_activations_bytes = expert_activations;
  s.moe_dispatch_bytes = o.moe_dispatch;
  s.mtp_parameters = mtp_params;
  if (plan.adapter.enabled()) {
    s.trainable_parameters = trainable + expert_trainable;
    s.base_weights_bytes = as.base_weights;
    s.adapter_weights_bytes = as.adapter_weights + es.weights;
    s.adapter_gradients_bytes = as.adapter_gradients + es.gradients;
    s.adapter_optimizer_bytes = as.adapter_optimizer + es.optimizer;
    s.quant_metadata_bytes = as.quant_metadata;
    s.dequant_bytes = dequant;
  }
  return s;
}

MiddleStages middle_stages(const Plan& plan) {
  // Stages that hold the same layers (as many, as many MoE layers, the same hybrid mixers, the
  // MTP modules or not) differ only in the micro-batches they keep in flight, fewer the later
  // they come (both schedules: microbatches_in_flight): of such middle stages the earliest is
  // the most loaded and stands for the rest. A plain pipeline needs one (the second); an MoE
  // model's dense leading layers, a hybrid pattern or a --pipeline-model-parallel-layout a few
  // more.
  const memest_model& m = *plan.model;
  struct Shape {
    int64_t layers, moe_layers;
    LayerMix mix;
    bool mtp;
    bool operator==(const Shape& o) const {
      return layers == o.layers && moe_layers == o.moe_layers && mix.mamba == o.mix.mamba &&
             mix.deltanet == o.mix.deltanet && mix.parallel == o.mix.parallel &&
             mix.no_mixer == o.mix.no_mixer && mix.no_mlp == o.mix.no_mlp && mtp == o.mtp;
    }
  };
  std::array<Shape, MiddleStages::kMax> seen{};
  MiddleStages out;
  const bool mtp = trains_mtp(plan);
  const bool moe = is_moe(m);
  const bool pattern = has_mixer_pattern(m) || has_mlp_pattern(m);
  // one kind of layer, an even split: every middle stage has the second's shape
  const int64_t end = moe || pattern || mtp || !plan.layers.rank.empty()
                          ? plan.pp - 1
                          : std::min<int64_t>(2, plan.pp - 1);
  for (int64_t i = 1; i < end; ++i) {
    const Shape shape{plan.layers.of(i, plan.pp),
                      moe ? stage_moe_layers(m, plan.layers, plan.pp, plan.vpp, i) : 0,
                      pattern ? stage_layer_mix(m, plan.layers, plan.pp, plan.vpp, i) : LayerMix{},
                      mtp && i == plan.layers.mtp_stage(plan.pp)};
    if (std::find(seen.begin(), seen.begin() + out.count, shape) != seen.begin() + out.count) {
      continue;
    }
    if (out.count == MiddleStages::kMax) {  // more shapes than kept: every stage from here on
      out.all_from = i;
      break;
    }
    seen[out.count] = shape;
    out.stage[out.count++] = i;
  }
  return out;
}

double peak_memory(const Plan& plan, int32_t* peak_stage, double stop_above,
                   double* estimate_bytes, const MiddleStages* middle) {
  // The first and the last stage (embedding, LM head) apart, and the middle stages that stand
  // for the others (middle_stages).
  int32_t best = 0;
  const memest_stage first = stage_memory(plan, 0, true);
  double peak = first.peak_bytes;
  if (estimate_bytes) {
    // Eq. 18's number: the first stage with the paper's p micro-batches in flight, the same
    // stage unless the iteration has fewer micro-batches than that
    const bool same = microbatches_in_flight(plan, 0, false) == microbatches_in_flight(plan, 0, true);
    *estimate_bytes = same ? first.total_bytes : stage_memory(plan, 0, false).total_bytes;
  }
  auto consider = [&](int64_t i) {
    if (peak > stop_above) return;
    const double p = stage_memory(plan, i, true).peak_bytes;
    if (p > peak) {
      peak = p;
      best = static_cast<int32_t>(i);
    }
  };
  const MiddleStages own = middle ? MiddleStages{} : middle_stages(plan);
  const MiddleStages& stages = middle ? *middle : own;
  for (std::size_t k = 0; k < stages.count; ++k) consider(stages.stage[k]);
  if (stages.all_from > 0) {
    for (int64_t i = stages.all_from; i + 1 < plan.pp; ++i) consider(i);
  }
  if (plan.pp > 1) consider(plan.pp - 1);
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
      out.peak_allocated_bytes = s.peak_allocated_bytes;
      out.peak_reserved_bytes = s.peak_reserved_bytes;
      out.host_bytes = s.host_bytes;
      out.torch_max_memory_allocated_bytes = s.torch_max_memory_allocated_bytes;
      out.torch_max_memory_reserved_bytes = s.torch_max_memory_reserved_bytes;
      out.nvidia_smi_bytes = s.nvidia_smi_bytes;
    }
    out.paper_peak_bytes = std::max(out.paper_peak_bytes, s.total_bytes);
  }
  out.oom_predicted = out.peak_bytes > capacity;
  out.peak_verdict = peak_verdict_for(out.peak_bytes, capacity);
  out.peak_low_bytes = peak_band_low(out.peak_bytes);
  out.peak_high_bytes = peak_band_high(out.peak_bytes);
  out.oom_probability = oom_probability(out.peak_bytes, capacity);
  out.margin_bytes = capacity - out.peak_bytes;
  out.framework = reported_framework(plan.stack);
  out.loss = plan.loss;
  out.optimizer_bytes_per_parameter = plan.precision.optimizer_bytes;
  out.ep = plan.ep;
  out.etp = plan.etp;
  out.edp = plan.edp;
  out.trainable_parameters = out.num_parameters;
  if (plan.adapter.enabled()) {
    const double rank = static_cast<double>(plan.adapter.rank);
    out.trainable_parameters =
        plan.framework == MEMEST_FRAMEWORK_MEGATRON
            ? megatron_adapter_total(r.model, plan.adapter.targets, rank,
                                     trains_mtp(plan) ? r.model.mtp_layers : 0)
            : adapter_parameters(r.model, plan.adapter.targets, rank, "").total();
    if (plan.framework != MEMEST_FRAMEWORK_MEGATRON) {  // (Megatron: the request's, above)
      out.optimizer_bytes_per_parameter = derived_optimizer_bytes(
          r.precision.optimizer, r.stack.framework, plan.adapter.bytes);
    }
  }
  // The step time of the layout, when the global batch (the micro-batches per step) is known.
  if (plan.num_microbatches > 0 && r.gpu.peak_bf16_tflops > 0) {
    const Throughput t = estimate_throughput(plan);
    if (!std::isfinite(t.step_seconds) || !(t.step_seconds > 0)) {
      fail("", "the sizes given overflow a finite step time", MEMEST_ERR_OVERFLOW);
    }
    write_throughput(t, out);
  }
  // Only now, with every check passed, write the caller's stage array.
  const int64_t written = std::min<int64_t>(plan.pp, stages ? stage_capacity : 0);
  for (int64_t i = 0; i < written; ++i) stages[i] = stage_memory(plan, i, true);
  out.usage_fraction = out.estimate_bytes / capacity;
  out.verdict = verdict_for(out.estimate_bytes, capacity);
  return out;
}

}  // namespace memest
