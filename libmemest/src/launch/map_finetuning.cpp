// The fine-tuning stacks' launch files: torchtune recipe YAML, axolotl YAML, LLaMA-Factory
// YAML. A run is a pretraining request with the training stack and, for LoRA / QLoRA,
// training.adapter (README "LoRA and QLoRA"). Each default cites the framework file that
// defines it (tests/data/launch/MAPPING-finetuning.md).
#include <algorithm>

#include "core/error.hpp"
#include "launch/import.hpp"
#include "launch/mapping.hpp"
#include "launch/model_names.hpp"

namespace memest::launch {

namespace {

// peft's module names of the seven linears, the canonical names memest's targets take.
constexpr const char* kAllLinears[] = {"q_proj", "k_proj", "v_proj", "o_proj",
                                       "gate_proj", "up_proj", "down_proj"};

json all_linears() {
  json t = json::array();
  for (const char* n : kAllLinears) t.push_back(n);
  return t;
}

// A list of target module names as the frameworks spell them -> memest's canonical names;
// unknown names are refused by name.
json canonical_targets(const Setting& s) {
  json out = json::array();
  auto add = [&](const std::string& n) {
    static const std::pair<const char*, const char*> kNames[] = {
        {"q_proj", "q_proj"}, {"k_proj", "k_proj"}, {"v_proj", "v_proj"}, {"o_proj", "o_proj"},
        // out_proj: a hybrid's mixer output projection, or on a model without such mixers the
        // attention's (OPT, BART); import.cpp settle_with_model decides with the model
        {"output_proj", "o_proj"}, {"out_proj", "out_proj"}, {"gate_proj", "gate_proj"},
        {"in_proj", "in_proj"}, {"in_proj_qkvz", "in_proj"}, {"in_proj_ba", "in_proj"},
        {"up_proj", "up_proj"}, {"down_proj", "down_proj"}, {"w1", "gate_proj"}, {"w3", "up_proj"},
        {"w2", "down_proj"}, {"lm_head", "lm_head"}, {"output", "lm_head"},
        {"embed_tokens", "embed_tokens"}, {"qkv_proj", "q_proj"}, {"gate_up_proj", "gate_proj"},
        {"c_attn", "q_proj"}, {"c_proj", "o_proj"}, {"query_key_value", "q_proj"},
        {"dense", "o_proj"}, {"fc1", "up_proj"}, {"fc2", "down_proj"}};
    for (const auto& [from, to] : kNames) {
      if (n == from) {
        if (std::find(out.begin(), out.end(), json(to)) == out.end()) out.push_back(to);
        return;
      }
    }
    throw Error(MEMEST_ERR_UNSUPPORTED, s.file + ":" + s.key,
                where(s) + ": target module \"" + echo(n) + "\" is not one memest knows (q_proj "
                "k_proj v_proj o_proj gate_proj up_proj down_proj lm_head embed_tokens, a "
                "hybrid's in_proj out_proj, or their frameworks' names for them)");
  };
  if (s.value.is_array()) {
    for (const json& v : s.value) {
      if (!v.is_string()) throw Error(MEMEST_ERR_TYPE, s.file + ":" + s.key, where(s) + ": must be a list of module names");
      add(v.get<std::string>());
    }
  } else {
    // "q_proj,v_proj" (LLaMA-Factory) or one name
    std::string list = string_of(s);
    std::size_t start = 0;
    while (start <= list.size()) {
      std::size_t comma = list.find(',', start);
      if (comma == std::string::npos) comma = list.size();
      std::string n = list.substr(start, comma - start);
      n.erase(0, n.find_first_not_of(' '));
      n.erase(n.find_last_not_of(' ') + 1);
      if (!n.empty()) add(n);
      start = comma + 1;
    }
  }
  return out;
}

// The optimizer names of torch / bitsandbytes / torchao components (torchtune) and of
// transformers' OptimizerNames (axolotl, LLaMA-Factory).
std::string optimizer_of_component(const std::string& component, bool fused) {
  if (component == "torch.optim.AdamW" || component == "torch.optim.Adam") return fused ? "adamw" : "adamw_foreach";
  if (component == "bitsandbytes.optim.PagedAdamW8bit") return "paged_adamw_8bit";
  if (component == "bitsandbytes.optim.PagedAdamW" || component == "bitsandbytes.optim.PagedAdamW32bit") return "paged_adamw_32bit";
  if (component == "bitsandbytes.optim.AdamW8bit" || component == "torchao.optim.AdamW8bit" ||
      component == "torchao.prototype.low_bit_optim.AdamW8bit") {
    return "adamw_8bit";
  }
  if (component == "torch.optim.SGD") return "sgd_momentum";
  return "";
}

}  // namespace

// ---------------------------------------------------------------- torchtune

namespace {
constexpr const char* kTune = "torchtune";
}  // namespace

void map_torchtune(MapContext& c) {
  const Settings& s = c.run.settings;
  RequestBuilder& b = c.b;
  // the recipe: tune run [--nproc_per_node N] RECIPE --config CONFIG; else the config's name
  std::string recipe;
  if (c.run.command && c.run.command->launcher == "tune") recipe = c.run.command->script;
  if (recipe == "run" && c.run.command) recipe = "";
  const std::string name = c.run.main ? c.run.main->name : "";
  const bool single = recipe.find("single_device") != std::string::npos ||
                      (recipe.empty() && name.find("single_device") != std::string::npos);
  const std::string recipe_file = single ? "recipes/full_finetune_single_device.py"
                                         : "recipes/full_finetune_distributed.py";
  Reader r{s, b, kTune, recipe_file};
  if (single) {
    b.derived("training.framework", "pytorch", "a single-device recipe (" + (recipe.empty() ? name : recipe) + ")");
    b.derived("parallel.gpus", 1, "a single-device recipe");
    b.derived("parallel.zero", 0, "one GPU");
  } else {
    b.derived("training.framework", "fsdp",
              "the distributed recipes shard with FSDP2 fully_shard (torchtune/training/_distributed.py)");
    b.from_default("parallel.zero", 3, kTune, "fsdp_reshard_after_forward = True", recipe_file);
  }
  b.derived("parallel.tp", 1, "data parallel (FSDP) only");
  b.derived("parallel.pp", 1, "data parallel (FSDP) only");

  // the model builder and its adapter
  // preference and distillation recipes train beside a reference or teacher model
  for (const std::string& what : {recipe, name}) {
    for (const char* kind : {"dpo", "ppo", "kd_", "knowledge_distillation", "grpo"}) {
      if (what.find(kind) != std::string::npos) {
        throw Error(MEMEST_ERR_UNSUPPORTED, "files",
                    what + ": a " + kind + " recipe trains beside a reference, reward or teacher "
                    "model, which memest does not model (fine-tuning recipes are)");
      }
    }
  }
  const Setting* component = s.take("model._component_");
  if (!component) {
    throw Error(MEMEST_ERR_MISSING_FIELD, "model._component_",
                (c.run.main ? c.run.main->name : std::string("the file")) + ": model._component_ is missing: a torchtune config names its model builder");
  }
  const std::string builder = string_of(*component);
  if (auto m = model_by_torchtune_builder(builder)) {
    b.from_file("model", m->model, *component);
    b.origins["model"]["resolved"] = m->how;
  } else {
    b.origins["model"] = {{"from", "unresolved"}, {"name", builder}, {"file", component->file},
                          {"key", component->key}, {"line", component->line}};
  }
  const std::string leaf = builder.substr(builder.find_last_of('.') + 1);
  const bool qlora = leaf.rfind("qlora_", 0) == 0;
  const bool lora = qlora || leaf.rfind("lora_", 0) == 0;
  const std::string builders = "torchtune/models/<family>/_model_builders.py";
  if (lora) {
    b.from_file("training.adapter.type", qlora ? "qlora" : "lora", *component);
    json targets = json::array();
    if (const Setting* v = s.take("model.lora_attn_modules")) {
      targets = canonical_targets(*v);
      b.from_file("training.adapter.targets", targets, *v);
    }
    json t = b.has("training.adapter.targets") ? *b.get("training.adapter.targets") : json::array();
    if (const Setting* v = s.take("model.apply_lora_to_mlp"); v && boolean_of(*v)) {
      for (const char* n : {"gate_proj", "up_proj", "down_proj"}) t.push_back(n);
      b.from_file("training.adapter.targets", t, *v);
    }
    if (const Setting* v = s.take("model.apply_lora_to_output"); v && boolean_of(*v)) {
      t.push_back("lm_head");
      b.from_file("training.adapter.targets", t, *v);
    }
    r.integer("model.lora_rank", "training.adapter.rank", 8);
    if (const Setting* v = s.take("model.lora_alpha")) b.from_file("training.adapter.alpha", number_of(*v), *v);
    else b.from_default("training.adapter.alpha", 16, kTune, "lora_alpha = 16", builders);
    if (const Setting* v = s.take("model.lora_dropout")) b.from_file("training.adapter.dropout", number_of(*v), *v);
    else b.from_default("training.adapter.dropout", 0.0, kTune, "lora_dropout = 0.0", builders);
    // adapters in the model's dtype (torchtune's LoRALinear holds them as the base's dtype)
    if (qlora) {
      b.from_default("training.adapter.double_quant", true, kTune,
                     "torchao NF4Tensor: block 64, its scalers quantised per 256",
                     "torchtune/modules/low_precision/_utils.py");
    }
  }

  // batch, sequence, precision
  r.integer("batch_size", "training.micro_batch", 2);
  if (const Setting* v = s.take("gradient_accumulation_steps")) {
    b.accumulation = integer_of(*v);
    b.accumulation_origin = {{"file", v->file}, {"key", v->key}, {"line", v->line}};
  }
  if (const Setting* v = s.take("tokenizer.max_seq_len"); v && !v->value.is_null()) {
    b.from_file("training.seq_len", integer_of(*v), *v);
  }
  {
    const Setting* v = s.take("dtype");
    const std::string d = v ? string_of(*v) : "bf16";
    const std::string stored = d == "fp32" ? "fp32" : "bf16";
    if (v) {
      b.from_file("training.param_dtype", stored, *v);
      b.from_file("training.grad_dtype", stored, *v);
    } else {
      b.from_default("training.param_dtype", "bf16", kTune, "dtype = bf16", recipe_file);
      b.from_default("training.grad_dtype", "bf16", kTune, "dtype = bf16", recipe_file);
    }
    if (lora) {
      if (v) b.from_file("training.adapter.dtype", stored, *v);
      else b.from_default("training.adapter.dtype", "bf16", kTune, "LoRA weights in the model's dtype", recipe_file);
    }
  }
  if (const Setting* v = s.take("enable_activation_checkpointing")) {
    b.from_file("training.recompute", boolean_of(*v) ? "full" : "none", *v);
  } else {
    b.from_default("training.recompute", "none", kTune, "enable_activation_checkpointing = False", recipe_file);
  }
  if (const Setting* v = s.take("enable_activation_offloading"); v && boolean_of(*v)) {
    b.from_file("training.offload.activations", true, *v);
  }
  if (const Setting* v = s.take("fsdp_cpu_offload"); v && boolean_of(*v)) {
    b.from_file("training.offload.params", true, *v);
    b.from_file("training.offload.optimizer", true, *v);
  }
  if (const Setting* v = s.take("optimizer_in_bwd"); v && boolean_of(*v)) {
    b.from_file("training.optimizer_in_backward", true, *v);
  }
  if (const Setting* v = s.take("optimizer._component_")) {
    const Setting* fused = s.take("optimizer.fused");
    const std::string o = optimizer_of_component(string_of(*v), fused && boolean_of(*fused));
    if (o.empty()) b.warn(*v, "optimizer " + string_of(*v) + " is not modelled: held as AdamW");
    else b.from_file("training.optimizer", o, fused ? *fused : *v);
  }
  if (const Setting* v = s.take("loss._component_")) {
    const std::string l = string_of(*v);
    if (l.find("CEWithChunkedOutputLoss") != std::string::npos) b.from_file("training.loss", "chunked", *v);
    else if (l.find("LinearCrossEntropyLoss") != std::string::npos) {
      // torchtune/modules/loss/ce_chunked_output_loss.py's successor projects the hidden states
      // chunk by chunk but keeps every chunk's fp32 log-probabilities: closer to the chunked
      // loss (which it over-counts by about 2 bytes a logit) than to a fused one
      b.from_file("training.loss", "chunked", *v);
      b.warn(*v, "LinearCrossEntropyLoss held as the chunked loss (about 2 bytes a logit high)");
    }
    else if (l.find("CrossEntropyLoss") == std::string::npos) b.warn(*v, "loss " + l + " is not modelled");
  }
  if (const Setting* v = s.take("compile"); v && boolean_of(*v)) b.from_file("training.compile", "all", *v);
  if (const Setting* v = s.take("dataset.packed"); v && boolean_of(*v) && !b.has("training.seq_len")) {
    b.warn(*v, "packed: every sequence is tokenizer.max_seq_len long; give --seq");
  }
  static constexpr const char* kIgnored[] = {
      "output_dir", "tokenizer.", "checkpointer.", "resume_from_checkpoint", "dataset.", "seed",
      "shuffle", "optimizer.lr", "optimizer.weight_decay", "optimizer.betas", "optimizer.eps",
      "lr_scheduler.", "epochs", "max_steps_per_epoch", "device", "metric_logger.",
      "log_every_n_steps", "log_peak_memory_stats", "log_level", "profiler.", "clip_grad_norm",
      "save_adapter_weights_only", "custom_sharded_layers", "collate_fn", "save_last_epoch_only",
      "run_val_every_n_steps", "dataset_val.", "model.quantize_base", "model.use_dora",
      "optimizer.foreach", "loss.num_output_chunks", "fsdp_reshard_after_forward", "output_dir",
      "log_every_n_steps", "quantizer.", "model._component_"};
  r.warn_unread(kIgnored, std::size(kIgnored));
}

// ---------------------------------------------------------------- axolotl

namespace {
constexpr const char* kAxolotl = "axolotl";
constexpr const char* kAxolotlSchema = "src/axolotl/utils/schemas/config.py";
}  // namespace

void map_axolotl(MapContext& c) {
  const Settings& s = c.run.settings;
  RequestBuilder& b = c.b;
  Reader r{s, b, kAxolotl, kAxolotlSchema};
  if (const Setting* v = s.take("base_model")) set_model_by_name(c, *v, string_of(*v));
  b.derived("parallel.tp", 1, "data parallel only");
  b.derived("parallel.pp", 1, "data parallel only");

  if (const Setting* v = s.take("rl"); v && !v->value.is_null()) {
    throw Error(MEMEST_ERR_UNSUPPORTED, v->file + ":" + v->key,
                where(*v) + ": " + string_of(*v) + " trains beside a reference or reward model, "
                "which memest does not model (supervised fine-tuning is)");
  }
  if (const Setting* v = s.take("load_in_8bit"); v && boolean_of(*v)) {
    b.warn(*v, "an LLM.int8 (8-bit) base is not modelled: held as a 16-bit base, about twice "
               "the base weights LLM.int8 stores");
  }
  const Setting* adapter = s.take("adapter");
  const std::string a = adapter && !adapter->value.is_null() ? string_of(*adapter) : "";
  const Setting* four = s.take("load_in_4bit");
  if (a == "qlora" || a == "lora") {
    const bool qlora = a == "qlora" || (four && boolean_of(*four));
    b.from_file("training.adapter.type", qlora ? "qlora" : "lora", *adapter);
    if (const Setting* v = s.take("lora_target_linear"); v && boolean_of(*v)) {
      b.from_file("training.adapter.targets", all_linears(), *v);
      b.all_linear_targets = true;  // peft's all-linear also adapts an MoE router
    } else if (const Setting* t = s.take("lora_target_modules")) {
      b.from_file("training.adapter.targets", canonical_targets(*t), *t);
    }
    r.integer("lora_r", "training.adapter.rank", 8);
    if (const Setting* v = s.take("lora_alpha")) b.from_file("training.adapter.alpha", number_of(*v), *v);
    if (const Setting* v = s.take("lora_dropout")) b.from_file("training.adapter.dropout", number_of(*v), *v);
    if (qlora) {
      b.from_default("training.adapter.double_quant", true, kAxolotl,
                     "bnb_4bit_use_double_quant = True", "src/axolotl/loaders/model.py");
    }
  } else if (adapter && !a.empty()) {
    throw Error(MEMEST_ERR_UNSUPPORTED, adapter->file + ":" + adapter->key,
                where(*adapter) + ": adapter " + echo(a) + " is not modelled (lora, qlora)");
  }
  // micro-batch, accumulation, sequence
  r.integer("micro_batch_size", "training.micro_batch", 1);
  if (const Setting* v = s.take("gradient_accumulation_steps")) {
    b.accumulation = integer_of(*v);
    b.accumulation_origin = {{"file", v->file}, {"key", v->key}, {"line", v->line}};
  }
  r.integer("sequence_len", "training.seq_len", 512);
  if (const Setting* v = s.take("gradient_checkpointing")) {
    const bool on = v->value.is_string() ? string_of(*v) != "false" : boolean_of(*v);
    b.from_file("training.recompute", on ? "full" : "none", *v);
  } else {
    b.from_default("training.recompute", "none", kAxolotl, "gradient_checkpointing = False", kAxolotlSchema);
  }
  // precision: bf16 true/auto loads the model in bf16 (axolotl's torch_dtype)
  {
    const Setting* bf = s.take("bf16");
    const Setting* fp = s.take("fp16");
    const bool bf16 = bf && (bf->value.is_string() ? string_of(*bf) == "auto" || string_of(*bf) == "true" : boolean_of(*bf));
    const bool fp16 = fp && !fp->value.is_null() && boolean_of(*fp);
    const Setting* at = bf16 ? bf : fp16 ? fp : nullptr;
    const std::string d = bf16 ? "bf16" : fp16 ? "fp16" : "fp32";
    if (at) {
      b.from_file("training.param_dtype", d, *at);
    } else {
      b.from_default("training.param_dtype", "fp32", kAxolotl, "bf16 and fp16 unset: fp32 weights", kAxolotlSchema);
    }
    if (b.has("training.adapter.type")) {
      b.from_default("training.adapter.dtype", "fp32", "peft", "autocast_adapter_dtype = True casts adapters to fp32",
                     "src/peft/tuners/tuners_utils.py");
    }
  }
  if (const Setting* v = s.take("optimizer")) {
    const std::string o = hf_optimizer(string_of(*v));
    if (o.empty()) b.warn(*v, "optimizer " + string_of(*v) + " is not modelled: held as AdamW");
    else b.from_file("training.optimizer", o, *v);
  } else {
    b.from_default("training.optimizer", "adamw", kAxolotl, "optimizer = adamw_torch_fused", kAxolotlSchema);
  }
  if (const Setting* v = s.take("torch_compile"); v && !v->value.is_null() &&
                                                  (v->value.is_string() || boolean_of(*v))) {
    b.from_file("training.compile", "model", *v);
  }
  // the stack: a DeepSpeed JSON, fsdp, or DDP
  const Setting* ds = s.take("deepspeed");
  const Setting* fsdp = s.take("fsdp");
  const Setting* fsdp_version = s.take("fsdp_version");
  if (!fsdp_version) fsdp_version = s.take("fsdp_config.fsdp_version");
  if (ds && !ds->value.is_null()) {
    if (!c.run.deepspeed) {
      throw Error(MEMEST_ERR_MISSING_FIELD, "files",
                  where(*ds) + " names the DeepSpeed config " + string_of(*ds) + ": give that file too");
    }
    apply_deepspeed(c, *c.run.deepspeed);
    if (b.has("training.adapter.type") || b.get("training.param_dtype")) {
      // axolotl loads bf16 weights; DeepSpeed keeps its fp32 master beside them
    }
  } else if ((fsdp && !fsdp->value.is_null() && fsdp->value != json::array()) || fsdp_version) {
    const bool v2 = fsdp_version && integer_of(*fsdp_version) == 2;
    b.from_file("training.framework", v2 ? "fsdp" : "fsdp1", fsdp ? *fsdp : *fsdp_version);
    // accelerate's FSDP upcasts the trainable parameters to fp32 and computes and reduces in
    // the mixed-precision dtype (src/accelerate/accelerator.py prepare_model)
    const json* half = b.get("training.param_dtype");
    if (half && *half != "fp32") {
      const json reduce = *half;
      if (!b.has("training.adapter.type")) {
        b.derived("training.param_dtype", "fp32", "accelerate's FSDP keeps fp32 trainable parameters");
        b.derived("training.grad_dtype", "fp32", "gradients in the parameters' dtype");
      }
      b.derived("training.reduce_dtype", reduce, "accelerate's FSDP MixedPrecision reduce_dtype");
    }
    const std::string f = fsdp ? fsdp->value.dump() : "";
    b.from_file("parallel.zero", f.find("shard_grad_op") != std::string::npos ? 2 : 3, fsdp ? *fsdp : *fsdp_version);
    // CPUOffload(offload_params=True) also keeps the gradients and the optimizer step on the CPU
    for (const char* key : {"fsdp_config.fsdp_offload_params", "fsdp_config.offload_params"}) {
      if (const Setting* v = s.take(key); v && boolean_of(*v)) {
        b.from_file("training.offload.params", true, *v);
        b.from_file("training.offload.optimizer", true, *v);
      }
    }
    if (const Setting* v = s.take("fsdp_config.fsdp_activation_checkpointing"); v && boolean_of(*v)) {
      b.from_file("training.recompute", "full", *v);
    }
    if (const Setting* v = s.take("fsdp_config.activation_checkpointing"); v && boolean_of(*v)) {
      b.from_file("training.recompute", "full", *v);
    }
    if (const Setting* v = s.take("fsdp_config.reshard_after_forward"); v && !boolean_of(*v)) {
      b.from_file("parallel.zero", 2, *v);
    }
  } else {
    b.derived("training.framework", "pytorch", "no deepspeed or fsdp: one GPU, or DDP across several");
    b.derived("parallel.zero", 0, "DDP keeps whole states");
  }
  if (const Setting* v = s.take("activation_offloading"); v && !v->value.is_null() &&
                                                        (v->value.is_string() || boolean_of(*v))) {
    b.from_file("training.offload.activations", true, *v);
  }
  // Liger's RMSNorm and gated-MLP kernels (axolotl's LigerPlugin): training.use_liger_kernel
  // models both; one without the other is not modelled
  {
    const Setting* norm = s.take("liger_rms_norm");
    const Setting* glu = s.take("liger_glu_activation");
    const bool n = norm && !norm->value.is_null() && boolean_of(*norm);
    const bool g = glu && !glu->value.is_null() && boolean_of(*glu);
    if (n && g) {
      b.from_file("training.use_liger_kernel", true, *norm);
    } else if (n || g) {
      b.warn(n ? *norm : *glu, std::string(n ? "liger_rms_norm without liger_glu_activation" : "liger_glu_activation without liger_rms_norm") +
                                   ": memest models Liger's RMSNorm and gated-MLP kernels together "
                                   "(training.use_liger_kernel); held as Hugging Face's modules");
    }
  }
  // fused linear cross-entropy kernels: Liger's and Apple's cut cross-entropy (a plugin)
  if (const Setting* v = s.take("liger_fused_linear_cross_entropy"); v && boolean_of(*v)) {
    b.from_file("training.loss", "linear_fused", *v);
  }
  if (const Setting* v = s.take("plugins"); v && v->value.dump().find("CutCrossEntropyPlugin") != std::string::npos) {
    b.from_file("training.loss", "linear_fused", *v);
  }
  static constexpr const char* kIgnored[] = {
      "base_model_config", "model_type", "tokenizer_type", "tokenizer_config", "trust_remote_code",
      "strict", "datasets", "dataset_prepared_path", "val_set_size", "output_dir", "lora_model_dir",
      "lora_fan_in_fan_out", "wandb_", "num_epochs", "max_steps", "lr_scheduler", "learning_rate",
      "train_on_inputs", "group_by_length", "tf32", "early_stopping_patience", "resume_from_checkpoint",
      "local_rank", "logging_steps", "xformers_attention", "flash_attention", "sdp_attention",
      "s2_attention", "warmup_", "evals_per_epoch", "eval_", "saves_per_epoch", "save_", "debug",
      "weight_decay", "special_tokens", "tokens", "pad_to_sequence_len", "eval_sample_packing",
      "chat_template", "hub_", "hf_use_auth_token", "load_best_model_at_end", "gradient_checkpointing_kwargs",
      "fsdp_config.", "max_grad_norm", "adam_", "seed", "plugins", "liger_", "cut_cross_entropy",
      "unfrozen_parameters", "is_llama_derived_model", "is_mistral_derived_model", "is_qwen_derived_model",
      "use_tensorboard", "shuffle_merged_datasets", "dataset_processes", "auto_resume_from_checkpoints",
      "lora_modules_to_save", "peft_", "loss_watchdog_", "neftune_noise_alpha", "noisy_embedding_alpha",
      "logging_", "micro_batch_size", "sample_packing", "lr_quadratic_warmup", "cosine_", "eval_table_",
      "bnb_config_kwargs", "flash_attn_", "rl", "qlora_sharded_model_loading", "dataloader_",
      "remove_unused_columns", "train_on_inputs", "gptq", "max_packed_sequence_len", "rope_scaling"};
  r.warn_unread(kIgnored, std::size(kIgnored));
}

// ---------------------------------------------------------------- LLaMA-Factory

namespace {
constexpr const char* kFactory = "LLaMA-Factory";
constexpr const char* kFinetuningArgs = "src/llamafactory/hparams/finetuning_args.py";
constexpr const char* kModelArgs = "src/llamafactory/hparams/model_args.py";
}  // namespace

void map_llama_factory(MapContext& c) {
  const Settings& s = c.run.settings;
  RequestBuilder& b = c.b;
  Reader r{s, b, kFactory, kFinetuningArgs};
  if (const Setting* v = s.take("stage")) {
    const std::string st = string_of(*v);
    if (st != "sft" && st != "pt") {
      throw Error(MEMEST_ERR_UNSUPPORTED, v->file + ":" + v->key,
                  where(*v) + ": stage " + echo(st) + " trains beside a reference, reward or value "
                  "model, which memest does not model (sft and pt are)");
    }
  }
  if (const Setting* v = s.take("model_name_or_path")) set_model_by_name(c, *v, string_of(*v));
  b.derived("parallel.tp", 1, "data parallel only");
  b.derived("parallel.pp", 1, "data parallel only");
  const Setting* type = s.take("finetuning_type");
  const std::string ft = type ? string_of(*type) : "lora";
  const Setting* qbit = s.take("quantization_bit");
  if (ft == "lora") {
    const bool qlora = qbit && !qbit->value.is_null() && integer_of(*qbit) == 4;
    if (qbit && !qbit->value.is_null() && !qlora) {
      throw Error(MEMEST_ERR_UNSUPPORTED, qbit->file + ":" + qbit->key,
                  where(*qbit) + ": an " + string_of(*qbit) + "-bit base is not modelled (4-bit QLoRA is)");
    }
    if (type) b.from_file("training.adapter.type", qlora ? "qlora" : "lora", qlora ? *qbit : *type);
    else b.from_default("training.adapter.type", qlora ? "qlora" : "lora", kFactory, "finetuning_type = \"lora\"", kFinetuningArgs);
    const int64_t rank = r.integer("lora_rank", "training.adapter.rank", 8);
    if (const Setting* v = s.take("lora_alpha"); v && !v->value.is_null()) {
      b.from_file("training.adapter.alpha", number_of(*v), *v);
    } else {
      b.from_default("training.adapter.alpha", rank * 2, kFactory, "lora_alpha = lora_rank * 2", kFinetuningArgs);
    }
    if (const Setting* v = s.take("lora_dropout")) b.from_file("training.adapter.dropout", number_of(*v), *v);
    else b.from_default("training.adapter.dropout", 0.0, kFactory, "lora_dropout = 0.0", kFinetuningArgs);
    const Setting* target = s.take("lora_target");
    if (target && string_of(*target) != "all") {
      b.from_file("training.adapter.targets", canonical_targets(*target), *target);
    } else if (target) {
      b.from_file("training.adapter.targets", all_linears(), *target);
      b.all_linear_targets = true;
    } else {
      b.from_default("training.adapter.targets", all_linears(), kFactory, "lora_target = \"all\"", kFinetuningArgs);
      b.all_linear_targets = true;
    }
    if (qlora) {
      const Setting* dq = s.take("double_quantization");
      if (dq) b.from_file("training.adapter.double_quant", boolean_of(*dq), *dq);
      else b.from_default("training.adapter.double_quant", true, kFactory, "double_quantization = True", kModelArgs);
    }
  } else if (ft != "full") {
    throw Error(MEMEST_ERR_UNSUPPORTED, type->file + ":" + type->key,
                where(*type) + ": finetuning_type " + echo(ft) + " is not modelled (lora, full)");
  }
  // TrainingArguments: micro-batch, accumulation, precision, optimizer, deepspeed
  apply_training_arguments(c, s, "");
  // LLaMA-Factory checkpoints gradients unless told not to
  // (src/llamafactory/model/model_utils/checkpointing.py prepare_model_for_training)
  if (const Setting* v = s.take("disable_gradient_checkpointing")) {
    b.from_file("training.recompute", boolean_of(*v) ? "none" : "full", *v);
  } else if (b.origins.value("training.recompute", json::object()).value("from", "") != "file") {
    b.from_default("training.recompute", "full", kFactory, "disable_gradient_checkpointing = False", kModelArgs);
  }
  // enable_liger_kernel (ModelArguments): src/llamafactory/model/model_utils/liger_kernel.py
  // applies Liger's kernels with their defaults, fused linear cross-entropy included, since sft
  // and pt do not need the logits (loader.py: require_logits = stage not in ["pt", "sft"])
  if (const Setting* v = s.take("enable_liger_kernel"); v && boolean_of(*v)) {
    b.from_file("training.use_liger_kernel", true, *v);
    b.from_file("training.loss", "linear_fused", *v);
  }
  if (const Setting* v = s.take("cutoff_len")) b.from_file("training.seq_len", integer_of(*v), *v);
  else b.from_default("training.seq_len", 2048, kFactory, "cutoff_len = 2048", "src/llamafactory/hparams/data_args.py");
  // precision: the model is loaded in the compute dtype (bf16/fp16); trainable parameters are
  // upcast to fp32 unless pure_bf16 (src/llamafactory/model/adapter.py)
  const Setting* bf = s.peek("bf16");
  const Setting* fp = s.peek("fp16");
  const Setting* pure = s.take("pure_bf16");
  const bool half = (bf && boolean_of(*bf)) || (fp && boolean_of(*fp));
  if (half) {
    const std::string d = bf && boolean_of(*bf) ? "bf16" : "fp16";
    const Setting& at = bf && boolean_of(*bf) ? *bf : *fp;
    b.erase("training.autocast");
    if (ft == "full") {
      const bool pure_bf16 = pure && boolean_of(*pure);
      b.from_file("training.param_dtype", pure_bf16 ? d : "fp32", pure_bf16 ? *pure : at);
      b.from_file("training.grad_dtype", pure_bf16 ? d : "fp32", pure_bf16 ? *pure : at);
      if (!pure_bf16) b.from_file("training.autocast", true, at);
    } else {
      b.from_file("training.param_dtype", d, at);
      b.erase("training.grad_dtype");
      b.from_default("training.adapter.dtype", pure && boolean_of(*pure) ? d : "fp32", kFactory,
                     "trainable parameters upcast to fp32 unless pure_bf16", "src/llamafactory/model/adapter.py");
    }
  }
  if (const Setting* ds = s.take("deepspeed"); ds && !ds->value.is_null()) {
    if (!c.run.deepspeed) {
      throw Error(MEMEST_ERR_MISSING_FIELD, "files",
                  where(*ds) + " names the DeepSpeed config " + string_of(*ds) + ": give that file too");
    }
    const json keep = b.get("training.param_dtype") ? *b.get("training.param_dtype") : json();
    apply_deepspeed(c, *c.run.deepspeed);
  } else if (c.run.accelerate) {
    apply_accelerate(c, *c.run.accelerate);
  } else {
    b.derived("training.framework", "pytorch", "no deepspeed: one GPU, or DDP across several");
    b.derived("parallel.zero", 0, "DDP keeps whole states");
  }
  static constexpr const char* kIgnored[] = {
      "do_train", "do_eval", "dataset", "eval_dataset", "template", "overwrite_cache",
      "preprocessing_num_workers", "dataloader_num_workers", "output_dir", "logging_steps",
      "save_steps", "plot_loss", "overwrite_output_dir", "save_only_model", "report_to",
      "learning_rate", "num_train_epochs", "lr_scheduler_type", "warmup_ratio", "warmup_steps",
      "ddp_timeout", "resume_from_checkpoint", "val_size", "per_device_eval_batch_size",
      "eval_strategy", "eval_steps", "trust_remote_code", "max_samples", "image_max_pixels",
      "video_max_pixels", "quantization_method", "flash_attn", "bf16", "fp16",
      "push_to_hub", "hub_", "max_steps", "run_name", "save_strategy", "seed", "adapter_name_or_path",
      "export_", "infer_backend", "lora_target", "tokenized_path", "streaming", "buffer_size",
      "mix_strategy", "interleave_probs", "neat_packing", "packing", "pref_beta", "pref_loss",
      "weight_decay", "max_grad_norm", "use_unsloth", "include_num_input_tokens_seen", "optim"};
  r.warn_unread(kIgnored, std::size(kIgnored));
}

}  // namespace memest::launch
