#include "launch/emit.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/units.hpp"

namespace memest::launch {

using json = nlohmann::json;

namespace {

int64_t get_int(const json& o, const char* key, int64_t fallback) {
  return o.contains(key) && o[key].is_number_integer() ? o[key].get<int64_t>() : fallback;
}
bool get_bool(const json& o, const char* key) {
  return o.contains(key) && o[key].is_boolean() && o[key].get<bool>();
}
std::string get_str(const json& o, const char* key, const std::string& fallback) {
  return o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : fallback;
}

struct Out {
  json settings = json::array();
  void add(const std::string& key, json value, const std::string& section = "") {
    json s = {{"key", key}, {"value", std::move(value)}};
    if (!section.empty()) s["section"] = section;
    settings.push_back(std::move(s));
  }
};

std::string value_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {  // several values of one option (nargs='*'): space-separated
    std::string out;
    for (const json& e : v) out += (out.empty() ? "" : " ") + value_text(e);
    return out;
  }
  return v.dump();
}

// How the optimizer stores K (the response's echo, in effect) as Megatron-LM's
// --use-precision-aware-optimizer flags (megatron/core/optimizer/optimizer_config.py: fp32 main
// parameters over bf16 weights keep the remainders, --main-params-dtype fp16 an fp16 copy,
// --exp-avg-dtype / --exp-avg-sq-dtype the moments).
void megatron_optimizer_storage(const json& t, const std::string& param, const std::string& field,
                                Out& o) {
  const std::string master = get_str(t, "master_weights", "fp32");
  const std::string states = get_str(t, "optimizer_state_dtype", "default");
  const bool custom_states = states != "default" && states != "fp32";
  if (master == "none" && param == "fp32") return;  // fp32 weights are their own master
  if (master == "none" || master == "bf16") {
    fail(field, "master_weights " + master + " (Apex DistributedFusedAdam's store under NeMo) "
                "has no Megatron-LM flag: its precision-aware optimizer keeps fp32 main "
                "parameters (the remainders over bf16 weights) or fp16 ones");
  }
  if (master == "fp32" && custom_states && param == "bf16") {
    fail(field, "Megatron-LM's precision-aware optimizer keeps the fp32 remainders over bf16 "
                "weights, not a whole fp32 copy: emit master_weights remainder");
  }
  if (master != "remainder" && master != "fp16" && !custom_states) return;
  o.add("--use-precision-aware-optimizer", true);
  if (master == "fp16") o.add("--main-params-dtype", "fp16");
  if (custom_states) {
    o.add("--exp-avg-dtype", states);
    o.add("--exp-avg-sq-dtype", states);
  }
}

// Megatron-LM's flags (megatron/training/arguments.py).
json megatron(const json& l, const json& t, int64_t layers, const std::string& field) {
  Out o;
  const std::string rc = get_str(t, "recompute", "none");
  if (rc == "op_selective") fail(field, "op_selective is torchtitan's policy; Megatron has full and selective");
  if (rc == "full" && get_int(t, "recompute_every", 1) > 1) {
    // memest's recompute_every N checkpoints one layer in N (torchtitan's option "N");
    // Megatron's --recompute-num-layers N checkpoints groups of N layers: not the same
    fail(field, "recompute_every " + std::to_string(get_int(t, "recompute_every", 1)) +
                    " (one layer in N) has no Megatron flag: --recompute-num-layers groups layers");
  }
  o.add("--tensor-model-parallel-size", get_int(l, "tp", 1));
  o.add("--pipeline-model-parallel-size", get_int(l, "pp", 1));
  const int64_t vpp = get_int(l, "vpp", 1);
  if (vpp > 1) {
    const int64_t pp = get_int(l, "pp", 1);
    if (layers > 0 && layers % (pp * vpp) == 0) {
      o.add("--num-layers-per-virtual-pipeline-stage", layers / (pp * vpp));
    } else {
      o.add("--num-virtual-stages-per-pipeline-rank", vpp);
    }
  }
  if (get_int(l, "cp", 1) > 1) o.add("--context-parallel-size", get_int(l, "cp", 1));
  if (get_int(l, "ep", 1) > 1) o.add("--expert-model-parallel-size", get_int(l, "ep", 1));
  if (get_int(l, "etp", 1) > 1) o.add("--expert-tensor-parallel-size", get_int(l, "etp", 1));
  if (get_bool(l, "sp") && get_int(l, "tp", 1) > 1) o.add("--sequence-parallel", true);
  if (get_int(l, "zero", 1) >= 1) o.add("--use-distributed-optimizer", true);
  if (get_int(l, "first_stage_layers", 0) > 0 && get_int(l, "pp", 1) > 1 && get_bool(l, "uneven_pipeline")) {
    o.add("--decoder-first-pipeline-num-layers", get_int(l, "first_stage_layers", 0));
  }
  o.add("--micro-batch-size", get_int(t, "micro_batch", 1));
  // no global batch in the request: Megatron's default (micro-batch x dp) is left to it
  if (get_int(t, "global_batch", 0) > 0) o.add("--global-batch-size", get_int(t, "global_batch", 0));
  o.add("--seq-length", get_int(t, "seq_len", 1));
  if (rc == "full") {
    o.add("--recompute-granularity", "full");
    o.add("--recompute-method", "uniform");
    o.add("--recompute-num-layers", 1);
  } else if (rc == "selective") {
    o.add("--recompute-granularity", "selective");
    // the modules in effect (the response's echo); Megatron's default core_attn needs no flag
    const json modules = t.contains("recompute_modules") ? t["recompute_modules"] : json::array();
    if (modules.is_array() && !modules.empty() && modules != json::array({"core_attn"})) {
      o.add("--recompute-modules", modules);
    }
  }
  const std::string p = dtype_name(t.value("param_bytes", 2.0));
  if (p == "bf16") o.add("--bf16", true);
  if (get_bool(t, "fp8")) o.add("--fp8-format", "hybrid");
  if (get_bool(t, "fp4")) o.add("--fp4-format", "e2m1");
  megatron_optimizer_storage(t, p, field, o);
  if (get_str(t, "moe_dispatcher", "alltoall") == "deepep") o.add("--moe-token-dispatcher-type", "flex");
  std::string text;
  for (const json& s : o.settings) {
    text += s["key"].get<std::string>();
    if (!(s["value"].is_boolean())) text += " " + value_text(s["value"]);
    text += " \\\n";
  }
  if (text.size() >= 3) text.resize(text.size() - 3), text += "\n";
  return {{"settings", o.settings}, {"text", text}};
}

// torchtitan's TOML keys (torchtitan/config/job_config.py).
json torchtitan(const json& l, const json& t, const std::string& field) {
  Out o;
  const std::string fw = get_str(t, "framework", "megatron");
  if (fw != "fsdp") {
    fail(field, "torchtitan shards with FSDP2: emit a layout with training.framework fsdp (this one "
                "is " + fw + ")");
  }
  const int64_t dp = get_int(l, "dp", 1);
  o.add("data_parallel_shard_degree", dp, "parallelism");
  o.add("tensor_parallel_degree", get_int(l, "tp", 1), "parallelism");
  o.add("pipeline_parallel_degree", get_int(l, "pp", 1), "parallelism");
  o.add("context_parallel_degree", get_int(l, "cp", 1), "parallelism");
  if (get_int(l, "ep", 1) > 1) o.add("expert_parallel_degree", get_int(l, "ep", 1), "parallelism");
  if (get_int(l, "zero", 3) == 2) o.add("fsdp_reshard_after_forward", "never", "parallelism");
  const int64_t micro = get_int(t, "micro_batch", 1);
  const int64_t dp_ranks = std::max<int64_t>(dp, 1);
  const int64_t global = get_int(t, "global_batch", 0) > 0 ? get_int(t, "global_batch", 0)
                                                           : micro * dp_ranks;
  if (get_int(l, "pp", 1) > 1) {
    o.add("pipeline_parallel_schedule", get_int(l, "vpp", 1) > 1 ? "Interleaved1F1B" : "1F1B", "parallelism");
    o.add("pipeline_parallel_microbatch_size", micro, "parallelism");
    o.add("local_batch_size", dp > 0 ? global / dp : global, "training");
  } else {
    o.add("local_batch_size", micro, "training");
    if (dp > 0 && global != micro * dp) o.add("global_batch_size", global, "training");
  }
  o.add("seq_len", get_int(t, "seq_len", 1), "training");
  const std::string rc = get_str(t, "recompute", "none");
  if (rc == "op_selective") {
    o.add("mode", "selective", "activation_checkpoint");
    o.add("selective_ac_option", "op", "activation_checkpoint");
  } else if (rc == "full" && get_int(t, "recompute_every", 1) > 1) {
    o.add("mode", "selective", "activation_checkpoint");
    o.add("selective_ac_option", std::to_string(get_int(t, "recompute_every", 1)), "activation_checkpoint");
  } else if (rc == "full" || rc == "none") {
    o.add("mode", rc, "activation_checkpoint");
  } else {
    fail(field, "Megatron's selective recomputation has no torchtitan setting (full, op_selective)");
  }
  const std::string comp = get_str(t, "compile_components", "none");
  if (comp != "none") {
    o.add("enable", true, "compile");
    json parts = comp == "all" ? json::array({"model", "loss"}) : json::array({comp});
    o.add("components", parts, "compile");
  }
  if (get_bool(t, "fp8")) o.add("converters", json::array({"float8"}), "model");
  std::string text, section;
  std::vector<std::string> order;
  for (const json& s : o.settings) {
    const std::string sec = s["section"].get<std::string>();
    if (std::find(order.begin(), order.end(), sec) == order.end()) order.push_back(sec);
  }
  for (const std::string& sec : order) {
    text += "[" + sec + "]\n";
    for (const json& s : o.settings) {
      if (s["section"] != sec) continue;
      text += s["key"].get<std::string>() + " = " + s["value"].dump() + "\n";
    }
    text += "\n";
  }
  if (!text.empty()) text.pop_back();
  return {{"settings", o.settings}, {"text", text}};
}

void data_parallel_only(const json& l, const std::string& stack, const std::string& field) {
  for (const char* k : {"tp", "pp", "cp"}) {
    if (get_int(l, k, 1) > 1) {
      fail(field, stack + " runs data parallel only: this layout has " + k + " " +
                      std::to_string(get_int(l, k, 1)) + " (emit megatron or torchtitan)");
    }
  }
}

// A DeepSpeed config (deepspeed/runtime/config.py, zero/config.py).
json deepspeed(const json& l, const json& t, const std::string& field) {
  data_parallel_only(l, "DeepSpeed ZeRO", field);
  const int64_t micro = get_int(t, "micro_batch", 1);
  const int64_t dp = std::max<int64_t>(get_int(l, "dp", 1), 1);
  const int64_t global = get_int(t, "global_batch", 0) > 0 ? get_int(t, "global_batch", 0) : micro * dp;
  json ds = {{"train_batch_size", global},
             {"train_micro_batch_size_per_gpu", micro},
             {"gradient_accumulation_steps", global / (micro * dp)},
             {"zero_optimization", {{"stage", get_int(l, "zero", 0)}}}};
  const json off = t.value("offload", json::object());
  if (get_bool(off, "optimizer")) ds["zero_optimization"]["offload_optimizer"] = {{"device", "cpu"}};
  if (get_bool(off, "params")) ds["zero_optimization"]["offload_param"] = {{"device", "cpu"}};
  const std::string p = dtype_name(t.value("param_bytes", 2.0));
  if (p == "bf16") ds["bf16"] = {{"enabled", true}};
  // how the optimizer stores K (deepspeed/runtime/precision_config.py): a 16-bit master of the
  // weights' dtype, bf16 moments beside a bf16 master; the others have no DeepSpeed key
  const std::string master = get_str(t, "master_weights", "fp32");
  const std::string states = get_str(t, "optimizer_state_dtype", "default");
  const bool custom_states = states != "default" && states != "fp32";
  if (master == "bf16" && p == "bf16") {
    ds["bf16"]["bf16_master_weights_and_grads"] = true;
    if (states == "bf16") ds["bf16"]["bf16_optimizer_states"] = true;
  } else if ((master != "fp32" && !(master == "none" && p == "fp32")) || custom_states) {
    fail(field, "master_weights " + master + " with optimizer_state_dtype " + states +
                    " has no DeepSpeed setting: DeepSpeed keeps an fp32 master and fp32 states, "
                    "or with bf16 weights bf16 ones (bf16_master_weights_and_grads, "
                    "bf16_optimizer_states)");
  } else if (states == "bf16") {
    fail(field, "bf16_optimizer_states needs bf16_master_weights_and_grads: master_weights bf16");
  }
  Out o;
  for (auto it = ds.begin(); it != ds.end(); ++it) o.add(it.key(), it.value());
  return {{"settings", o.settings}, {"text", ds.dump(2) + "\n"}};
}

// An accelerate config (src/accelerate/commands/config/config_args.py).
json accelerate(const json& l, const json& t, const std::string& field) {
  data_parallel_only(l, "accelerate", field);
  Out o;
  const std::string fw = get_str(t, "framework", "pytorch");
  const int64_t zero = get_int(l, "zero", 0);
  std::string text;
  auto line = [&](const std::string& key, const json& v, const std::string& section = "") {
    o.add(key, v, section);
    text += (section.empty() ? "" : "  ") + key + ": " + (v.is_string() ? v.get<std::string>() : v.dump()) + "\n";
  };
  line("compute_environment", "LOCAL_MACHINE");
  if (fw == "fsdp" || fw == "fsdp1") {
    line("distributed_type", "FSDP");
    text += "fsdp_config:\n";
    line("fsdp_version", fw == "fsdp" ? 2 : 1, "fsdp_config");
    if (fw == "fsdp") {
      line("fsdp_reshard_after_forward", zero != 2, "fsdp_config");
    } else {
      line("fsdp_sharding_strategy", zero == 2 ? "SHARD_GRAD_OP" : zero == 0 ? "NO_SHARD" : "FULL_SHARD", "fsdp_config");
    }
    line("fsdp_offload_params", get_bool(t.value("offload", json::object()), "params"), "fsdp_config");
    line("fsdp_activation_checkpointing", get_str(t, "recompute", "none") == "full", "fsdp_config");
  } else if (fw == "deepspeed") {
    line("distributed_type", "DEEPSPEED");
    text += "deepspeed_config:\n";
    line("zero_stage", zero, "deepspeed_config");
    const json off = t.value("offload", json::object());
    line("offload_optimizer_device", get_bool(off, "optimizer") ? "cpu" : "none", "deepspeed_config");
    line("offload_param_device", get_bool(off, "params") ? "cpu" : "none", "deepspeed_config");
    const int64_t micro = get_int(t, "micro_batch", 1);
    const int64_t dp = std::max<int64_t>(get_int(l, "dp", 1), 1);
    const int64_t global = get_int(t, "global_batch", 0) > 0 ? get_int(t, "global_batch", 0) : micro * dp;
    line("gradient_accumulation_steps", global / (micro * dp), "deepspeed_config");
  } else if (fw == "pytorch") {
    line("distributed_type", get_int(l, "gpus", 1) > 1 ? "MULTI_GPU" : "NO");
  } else {
    fail(field, "accelerate runs FSDP, DeepSpeed or DDP: this layout's framework is " + fw);
  }
  line("mixed_precision", get_bool(t, "fp8") ? "fp8" : "bf16");
  line("num_machines", 1);
  line("num_processes", get_int(l, "gpus", 1));
  return {{"settings", o.settings}, {"text", text}};
}

}  // namespace

json emit_launch(const json& layout, const json& training, int64_t num_layers,
                 const std::string& format, const std::string& field) {
  json out;
  if (format == "megatron") out = megatron(layout, training, num_layers, field);
  else if (format == "torchtitan") out = torchtitan(layout, training, field);
  else if (format == "deepspeed") out = deepspeed(layout, training, field);
  else if (format == "accelerate") out = accelerate(layout, training, field);
  else fail(field, "must be megatron, torchtitan, deepspeed or accelerate, got \"" + echo(format) + "\"");
  out["format"] = format;
  return out;
}

}  // namespace memest::launch
