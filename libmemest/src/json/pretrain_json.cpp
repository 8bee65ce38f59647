// JSON for the pretraining and model-states modes.
#include <algorithm>
#include <vector>

#include "advice/advice.hpp"
#include "core/enums.hpp"
#include "core/limits.hpp"
#include "core/units.hpp"
#include "json/modes.hpp"
#include "json/request.hpp"
#include "json/request_fields.hpp"
#include "model/model.hpp"
#include "pretrain/pretrain.hpp"
#include "plan/stack.hpp"
#include "states/model_states.hpp"
#include "throughput/throughput.hpp"

namespace memest {

namespace {

ModelStatesRequest parse_model_states(const JsonFields& top) {
  top.reject_unknown({"mode", "model", "gpu", "parallel", "training"});
  ModelStatesRequest r;
  r.model = resolve_model(require_object_field(top, "model"), "model", true);
  if (const json* gpu = top.object("gpu")) r.gpu = resolve_gpu(*gpu, "gpu");
  JsonFields parallel(block(top, "parallel"), "parallel");
  parallel.reject_unknown({"gpus", "zero"});
  r.gpus = parallel.integer_or("gpus", r.gpus, 1, kMaxGpus);
  r.zero = static_cast<int32_t>(parallel.integer_or("zero", r.zero, 0, 3));
  constexpr const char* kKeys[] = {"param_dtype", "grad_dtype", "optimizer", "optimizer_bytes"};
  PretrainRequest training;
  training.precision = r.precision;
  read_training(top, training, kKeys);
  r.precision = training.precision;
  return r;
}

PretrainRequest parse_pretrain(const JsonFields& top) {
  top.reject_unknown({"mode", "model", "gpu", "parallel", "training"});
  PretrainRequest r;
  r.model = resolve_model(require_object_field(top, "model"), "model", false);
  r.gpu = resolve_gpu(require_object_field(top, "gpu"), "gpu");
  JsonFields parallel(block(top, "parallel"), "parallel");
  // the registry's parallel.* keys, in the order the error lists them (test_request_fields.cpp
  // checks they are the same set)
  parallel.reject_unknown(
      {"gpus", "tp", "cp", "pp", "vpp", "sp", "zero", "uneven_pipeline", "ep", "etp",
       "last_stage_layers", "first_stage_layers", "pipeline_layout"});
  read_request_fields(parallel, "parallel", 0, r);  // json/request_fields.cpp
  read_training(top, r, kPretrainTraining);
  return r;
}

// training.master_weights and training.optimizer_state_dtype in effect: auto resolved as a
// derived K resolves it (plan/stack.hpp derived_optimizer_bytes); with K given whole, as given.
ojson master_weights_json(const PretrainRequest& r) {
  int32_t m = r.stack.master_weights;
  if (m == MEMEST_MASTER_AUTO && r.precision.optimizer_bytes == MEMEST_OPTIMIZER_BYTES_DERIVE) {
    m = keeps_master(r.stack.framework, r.precision.param_bytes) ? MEMEST_MASTER_FP32
                                                                  : MEMEST_MASTER_NONE;
  }
  return enum_name(MEMEST_ENUM_MASTER_WEIGHTS, m);
}

ojson optimizer_state_json(const PretrainRequest& r) {
  if (r.stack.optimizer_state_bytes > 0) return dtype_name(r.stack.optimizer_state_bytes);
  const int32_t o = r.precision.optimizer;
  const bool typed_states = o == MEMEST_OPTIMIZER_ADAM || o == MEMEST_OPTIMIZER_ADAMW ||
                            o == MEMEST_OPTIMIZER_ADAMW_FOREACH ||
                            o == MEMEST_OPTIMIZER_SGD_MOMENTUM;
  if (!typed_states || r.precision.optimizer_bytes != MEMEST_OPTIMIZER_BYTES_DERIVE) {
    return "default";
  }
  const double master =
      master_weight_bytes(r.stack.master_weights, r.stack.framework, r.precision.param_bytes);
  return dtype_name(master > 0 ? 4.0 : r.precision.param_bytes);
}

// The overhead model's parts for one stage, by name (README "Overhead model").
ojson overheads_json(const memest_stage& s) {
  return {{"context_bytes", s.context_bytes},
          {"comm_buffer_bytes", s.comm_buffer_bytes},
          {"logits_bytes", s.logits_bytes},
          {"activation_correction_bytes", s.activation_correction_bytes},
          {"fragmentation_bytes", s.fragmentation_bytes},
          {"phase_overlap_bytes", s.phase_overlap_bytes},
          {"optimizer_step_bytes", s.optimizer_step_bytes}};
}

// The training stack's named parts of one stage (README "Training stack"): each is also inside
// the part named in its comment in memest.h, except paged_bytes, which is outside peak_bytes.
ojson stack_parts_json(const memest_stage& s) {
  return {{"framework_buffer_bytes", s.framework_buffer_bytes},
          {"master_weights_bytes", s.master_weights_bytes},
          {"loss_bytes", s.loss_bytes},
          {"recompute_bytes", s.recompute_bytes},
          {"offload_staging_bytes", s.offload_staging_bytes},
          {"paged_bytes", s.paged_bytes},
          {"unsharded_root_bytes", s.unsharded_root_bytes}};
}

// The LoRA / QLoRA parts of one stage (README "LoRA and QLoRA"), each also inside the part
// its memest.h comment names.
ojson adapter_parts_json(const memest_stage& s) {
  return {{"trainable_parameters", s.trainable_parameters},
          {"base_weights_bytes", s.base_weights_bytes},
          {"adapter_weights_bytes", s.adapter_weights_bytes},
          {"adapter_gradients_bytes", s.adapter_gradients_bytes},
          {"adapter_optimizer_bytes", s.adapter_optimizer_bytes},
          {"quant_metadata_bytes", s.quant_metadata_bytes},
          {"dequant_bytes", s.dequant_bytes}};
}

ojson adapter_json(const Adapter& a) {
  ojson targets = ojson::array();
  for (int32_t i = 0; i < MEMEST_LORA_TARGET_COUNT; ++i) {
    if (a.targets & (1u << i)) targets.push_back(enum_name(MEMEST_ENUM_LORA_TARGET, i));
  }
  ojson j = {{"type", enum_name(MEMEST_ENUM_ADAPTER, a.type)},
             {"rank", a.rank},
             {"alpha", a.alpha},
             {"dropout", a.dropout},
             {"targets", targets},
             {"dtype", a.bytes == 4 ? "fp32" : "bf16"}};
  // the targets were given as peft's "all-linear": "targets" above is what it meant here
  if (a.all_linear) j["all_linear"] = true;
  if (a.type == MEMEST_ADAPTER_QLORA) {
    j["double_quant"] = a.double_quant == 1;
    j["quantize_lm_head"] = a.quantize_lm_head == 1;
  }
  return j;
}

// The request fields a suggestion changes, as a request would give them.
ojson changed_fields(const PretrainRequest& from, const PretrainRequest& to) {
  ojson parallel = ojson::object(), training = ojson::object();
  if (to.gpus != from.gpus) parallel["gpus"] = to.gpus;
  if (to.tp != from.tp) parallel["tp"] = to.tp;
  if (to.cp != from.cp) parallel["cp"] = to.cp;
  if (to.pp != from.pp) parallel["pp"] = to.pp;
  if (to.vpp != from.vpp) parallel["vpp"] = to.vpp;
  if (to.zero != from.zero) parallel["zero"] = to.zero;
  if (to.ep != from.ep) parallel["ep"] = to.ep;
  if (to.etp != from.etp) parallel["etp"] = to.etp;
  if (to.last_stage_layers != from.last_stage_layers) {
    parallel["last_stage_layers"] = to.last_stage_layers;
  }
  if (to.first_stage_layers != from.first_stage_layers) {
    parallel["first_stage_layers"] = to.first_stage_layers;
  }
  if (to.pipeline_layout != from.pipeline_layout) parallel["pipeline_layout"] = to.pipeline_layout;
  // a search layout keeps the request's unevenness as the flag (advice.cpp layouts)
  if (to.uneven_pipeline != from.uneven_pipeline) parallel["uneven_pipeline"] = to.uneven_pipeline == 1;
  if (to.sequence_parallel != from.sequence_parallel) parallel["sp"] = to.sequence_parallel == 1;
  if (to.micro_batch != from.micro_batch) training["micro_batch"] = to.micro_batch;
  if (to.recompute != from.recompute) training["recompute"] = recompute_name(to.recompute);
  if (to.stack.offload_params != from.stack.offload_params) {
    training["offload"] = {{"params", to.stack.offload_params == 1}};
  }
  ojson adapter = ojson::object();
  if (to.adapter.bytes != from.adapter.bytes) adapter["dtype"] = dtype_name(to.adapter.bytes);
  if (to.adapter.double_quant != from.adapter.double_quant) {
    adapter["double_quant"] = to.adapter.double_quant == 1;
  }
  if (!adapter.empty()) training["adapter"] = adapter;
  ojson set = ojson::object();
  if (!parallel.empty()) set["parallel"] = parallel;
  if (!training.empty()) set["training"] = training;
  return set;
}

// What dominates the most loaded stage and, when it does not fit comfortably, what would.
void add_advice(const PretrainRequest& r, const memest_pretrain_result& res,
                const memest_stage& peak_stage, bool suggestions, ojson& j) {
  ojson parts = ojson::array();
  for (const Part& p : dominant_parts(peak_stage)) {
    parts.push_back({{"part", p.name}, {"bytes", p.bytes}, {"share", p.bytes / res.peak_bytes}});
  }
  j["dominant_parts"] = parts;
  if (res.peak_verdict == MEMEST_VERDICT_FITS || !suggestions) return;
  ojson list = ojson::array();
  for (const Suggestion& s : suggest(r, 5)) {
    ojson item = {{"change", s.change},
                  {"set", changed_fields(r, s.request)},
                  {"peak_bytes", s.peak_bytes},
                  {"peak_verdict", verdict_name(s.peak_verdict)}};
    if (s.tflops_per_gpu > 0) item["tflops_per_gpu"] = s.tflops_per_gpu;
    if (s.host_bytes > 0) item["host_bytes"] = s.host_bytes;
    list.push_back(item);
  }
  j["suggestions"] = list;
}

ojson pretrain_response(const PretrainRequest& r, bool suggestions) {
  // One stage per pipeline rank: pp <= num_hidden_layers <= 100000 (validated).
  std::vector<memest_stage> stages(
      static_cast<std::size_t>(std::max<int64_t>(1, std::min<int64_t>(r.pp, kMaxLayers))));
  const memest_pretrain_result res =
      compute_pretrain(r, stages.data(), static_cast<uint32_t>(stages.size()));
  ojson stage_list = ojson::array();
  for (int32_t i = 0; i < res.stage_count; ++i) {
    const memest_stage& s = stages[static_cast<std::size_t>(i)];
    stage_list.push_back({{"stage", s.index},
                          {"layers", s.layers},
                          {"microbatches_in_flight", s.microbatches_in_flight},
                          {"parameters", s.parameters},
                          {"weights_bytes", s.weights_bytes},
                          {"gradients_bytes", s.gradients_bytes},
                          {"optimizer_bytes", s.optimizer_bytes},
                          {"activations_bytes", s.activations_bytes},
                          {"total_bytes", s.total_bytes},
                          {"overheads", overheads_json(s)},
                          {"overhead_bytes", s.overhead_bytes},
                          {"peak_bytes", s.peak_bytes},
                          {"peak_allocated_bytes", s.peak_allocated_bytes},
                          {"peak_reserved_bytes", s.peak_reserved_bytes},
                          {"torch_max_memory_allocated_bytes", s.torch_max_memory_allocated_bytes},
                          {"torch_max_memory_reserved_bytes", s.torch_max_memory_reserved_bytes},
                          {"nvidia_smi_bytes", s.nvidia_smi_bytes},
                          {"host_bytes", s.host_bytes},
                          {"stack", stack_parts_json(s)}});
    if (is_moe(r.model)) {
      // The routed experts' share of the stage (included in the stage's totals above).
      stage_list.back()["experts"] = {{"moe_layers", s.moe_layers},
                                      {"parameters", s.expert_parameters},
                                      {"weights_bytes", s.expert_weights_bytes},
                                      {"gradients_bytes", s.expert_gradients_bytes},
                                      {"optimizer_bytes", s.expert_optimizer_bytes},
                                      {"activations_bytes", s.expert_activations_bytes},
                                      {"dispatch_buffer_bytes", s.moe_dispatch_bytes}};
    }
    if (s.mtp_parameters > 0) stage_list.back()["mtp_parameters"] = s.mtp_parameters;
    if (r.adapter.enabled()) stage_list.back()["adapter"] = adapter_parts_json(s);
  }
  ojson j = {{"ok", true},
          {"mode", "pretrain"},
          {"model", model_json(r.model)},
          {"gpu", gpu_json(r.gpu)},
          {"layout",
           {{"gpus", r.gpus}, {"tp", r.tp}, {"cp", r.cp}, {"pp", r.pp}, {"vpp", r.vpp},
            // the ZeRO stage the framework runs (plan/stack.cpp effective_zero: FSDP's zero 1
            // shards like 3, plain PyTorch shards nothing), not the number asked for
            {"dp", res.dp}, {"sp", r.sequence_parallel == 1},
            {"zero", effective_zero(r.stack.framework, r.zero)},
            {"uneven_pipeline", r.uneven_pipeline == 1}, {"ep", res.ep}, {"etp", res.etp},
            {"edp", res.edp}, {"last_stage_layers", r.last_stage_layers},
            {"first_stage_layers", r.first_stage_layers},
            {"pipeline_layout", r.pipeline_layout}}},
          {"training",
           {{"seq_len", r.seq_len}, {"micro_batch", r.micro_batch},
            {"global_batch", r.global_batch}, {"num_microbatches", res.num_microbatches},
            {"recompute", recompute_name(r.recompute)},
            {"recompute_modules",
             bit_names_json(MEMEST_ENUM_RECOMPUTE_MODULE, recompute_modules_in_effect(r))},
            {"flash_attention", r.flash_attention == 1},
            {"activation_model", res.activation_model == MEMEST_ACTIVATIONS_GPT ? "gpt" : "llama"},
            {"param_bytes", r.precision.param_bytes}, {"grad_bytes", r.precision.grad_bytes},
            {"optimizer_bytes", res.optimizer_bytes_per_parameter},
            {"framework", enum_text(MEMEST_ENUM_FRAMEWORK, res.framework)},
            {"optimizer", enum_text(MEMEST_ENUM_OPTIMIZER, r.precision.optimizer)},
            {"optimizer_in_backward", r.stack.optimizer_in_backward == 1},
            {"recompute_every", r.stack.recompute_every},
            {"loss", enum_text(MEMEST_ENUM_LOSS, res.loss)},
            {"fp8", r.stack.fp8 == 1},
            {"compile", r.stack.compile != MEMEST_COMPILE_NONE},
            {"compile_components", enum_text(MEMEST_ENUM_COMPILE, r.stack.compile)},
            {"offload",
             {{"optimizer", r.stack.offload_optimizer == 1},
              {"params", r.stack.offload_params == 1},
              {"activations", r.stack.offload_activations == 1}}},
            {"moe_capacity_factor", r.moe_capacity_factor},
            {"moe_dispatcher", enum_text(MEMEST_ENUM_MOE_DISPATCHER, r.stack.moe_dispatcher)},
            {"attention_kernel", enum_text(MEMEST_ENUM_ATTENTION_KERNEL,
                                           attention_kernel_in_effect(r.stack.attention_kernel, r.stack.framework))},
            {"comm_overlap", overlap_json(overlap_bits(r.stack.comm_overlap, r.stack.framework,
                                                       effective_zero(r.stack.framework, r.zero)))},
            {"reduce_dtype", dtype_name(r.stack.reduce_dtype_bytes(r.precision.grad_bytes))},
            {"loss_parallel", r.stack.loss_parallel == 1},
            {"autocast", r.stack.autocast < 0 ? ojson("default") : ojson(r.stack.autocast == 1)},
            {"fp8_all_gather", r.stack.fp8_all_gather == 1},
            {"no_sync", r.stack.no_sync < 0 ? ojson("default") : ojson(r.stack.no_sync == 1)},
            {"ddp", r.stack.ddp < 0 ? ojson("default") : ojson(r.stack.ddp == 1)},
            {"logits_held", r.stack.logits_held == 1},
            {"loss_chunks", loss_chunks_in_effect(res.loss, r.stack.loss_chunks,
                                                  r.seq_len / std::max<int64_t>(1, r.cp))},
            {"fsdp_use_orig_params", r.stack.fsdp_use_orig_params == 1},
            {"fp4", r.stack.fp4 == 1},
            {"use_liger_kernel", r.stack.use_liger_kernel == 1},
            {"master_weights", master_weights_json(r)},
            {"optimizer_state_dtype", optimizer_state_json(r)}}},
          {"estimate_bytes", res.estimate_bytes},
          {"estimate_gib", res.estimate_bytes / kGiB},
          {"peak_bytes", res.peak_bytes},
          {"peak_gib", res.peak_bytes / kGiB},
          {"peak_stage", res.peak_stage},
          {"peak_allocated_bytes", res.peak_allocated_bytes},
          {"peak_reserved_bytes", res.peak_reserved_bytes},
          {"host_bytes", res.host_bytes},
          {"paper_peak_bytes", res.paper_peak_bytes},
          {"overheads", overheads_json(stages[static_cast<std::size_t>(res.peak_stage)])},
          {"oom_predicted", res.oom_predicted == 1},
          {"capacity_bytes", res.capacity_bytes},
          {"usage_fraction", res.usage_fraction},
          {"verdict", verdict_name(res.verdict)},
          {"peak_verdict", verdict_name(res.peak_verdict)},
          {"torch_max_memory_allocated_bytes", res.torch_max_memory_allocated_bytes},
          {"torch_max_memory_reserved_bytes", res.torch_max_memory_reserved_bytes},
          {"nvidia_smi_bytes", res.nvidia_smi_bytes},
          {"peak_band_bytes", {res.peak_low_bytes, res.peak_high_bytes}},
          {"oom_probability", res.oom_probability},
          {"margin_bytes", res.margin_bytes},
          {"stages", stage_list}};
  if (res.step_seconds > 0) j["throughput"] = throughput_json(res);
  if (r.adapter.enabled()) {
    j["training"]["adapter"] = adapter_json(r.adapter);
    j["trainable_parameters"] = res.trainable_parameters;
    j["adapter"] = adapter_parts_json(stages[static_cast<std::size_t>(res.peak_stage)]);
  }
  add_advice(r, res, stages[static_cast<std::size_t>(res.peak_stage)], suggestions, j);
  return j;
}

ojson model_states_response(const ModelStatesRequest& r) {
  const memest_model_states_result res = compute_model_states(r);
  ojson j = {{"ok", true},
            {"mode", "model_states"},
            {"model", model_json(r.model)},
            {"layout", {{"gpus", r.gpus}, {"dp", r.gpus}, {"zero", r.zero}}},
            {"training",
             {{"param_bytes", r.precision.param_bytes}, {"grad_bytes", r.precision.grad_bytes},
              {"optimizer_bytes", r.precision.optimizer_bytes}}},
            {"weights_bytes", res.weights_bytes},
            {"gradients_bytes", res.gradients_bytes},
            {"optimizer_bytes", res.optimizer_bytes},
            {"estimate_bytes", res.estimate_bytes},
            {"estimate_gib", res.estimate_bytes / kGiB},
            {"estimate_gb", res.estimate_bytes / kGB},
            {"verdict", verdict_name(res.verdict)}};
  if (res.capacity_bytes > 0) {
    j["gpu"] = gpu_json(r.gpu);
    j["capacity_bytes"] = res.capacity_bytes;
    j["usage_fraction"] = res.estimate_bytes / res.capacity_bytes;
  }
  return j;
}

}  // namespace

ojson pretrain_mode(const JsonFields& top) { return pretrain_response(parse_pretrain(top), true); }

PretrainRequest parse_pretrain_request(const JsonFields& top) { return parse_pretrain(top); }

ojson estimate_pretrain(const PretrainRequest& r, bool suggestions) {
  return pretrain_response(r, suggestions);
}

ojson model_states_mode(const JsonFields& top) {
  return model_states_response(parse_model_states(top));
}

}  // namespace memest
