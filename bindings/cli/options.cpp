#include "options.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include <fmt/format.h>

namespace memest_cli {

namespace {

const char* sign_tag(Sign sign) {
  return sign == Sign::positive ? "POSITIVE" : sign == Sign::non_negative ? "NON-NEGATIVE" : "";
}

// The message for a text that is not a finite number of the given sign ("" when it is).
std::string real_problem(const std::string& text, Sign sign) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (end == begin || *end != '\0') return "must be a number, got " + text;
  if (!std::isfinite(v)) return "must be a finite number, got " + text;
  if (sign == Sign::positive && !(v > 0)) return "must be a positive number, got " + text;
  if (sign == Sign::non_negative && v < 0) return "must be zero or a positive number, got " + text;
  return "";
}

// The same for integers of type T: decimal digits only, and nothing clamped to T's range.
template <class T>
std::string integer_problem(const std::string& text, Sign sign) {
  const char* first = text.data();
  const char* last = first + text.size();
  if (last - first > 1 && first[0] == '+' && first[1] != '-') ++first;
  T v{};
  const auto [end, ec] = std::from_chars(first, last, v);
  const T lowest = sign == Sign::any ? std::numeric_limits<T>::min() : T(sign == Sign::positive);
  if (ec == std::errc::result_out_of_range) {
    return fmt::format("must be an integer from {} to {}, got {}", lowest,
                       std::numeric_limits<T>::max(), text);
  }
  if (ec != std::errc() || end != last) return "must be an integer, got " + text;
  if (sign == Sign::positive && v <= 0) return "must be a positive integer, got " + text;
  if (sign == Sign::non_negative && v < 0) return "must be zero or a positive integer, got " + text;
  return "";
}

// T: the integer type of each value; V: the variable (a T or a vector of T).
template <class T, class V>
CLI::Option* add_integer_of(CLI::App& cmd, const std::string& name, V& value,
                            const std::string& help, Sign sign) {
  const CLI::Validator check([sign](std::string& text) { return integer_problem<T>(text, sign); },
                             sign_tag(sign));
  return cmd.add_option(name, value, help)->check(check);
}

}  // namespace

CLI::Option* add_real(CLI::App& cmd, const std::string& name, double& value,
                      const std::string& help, Sign sign) {
  const CLI::Validator check([sign](std::string& text) { return real_problem(text, sign); },
                             sign_tag(sign));
  return cmd.add_option(name, value, help)->check(check);
}

CLI::Option* add_integer(CLI::App& cmd, const std::string& name, int64_t& value,
                         const std::string& help, Sign sign) {
  return add_integer_of<int64_t>(cmd, name, value, help, sign);
}

CLI::Option* add_integer(CLI::App& cmd, const std::string& name, int& value,
                         const std::string& help, Sign sign) {
  return add_integer_of<int>(cmd, name, value, help, sign);
}

CLI::Option* add_integer(CLI::App& cmd, const std::string& name, std::vector<int>& values,
                         const std::string& help, Sign sign) {
  return add_integer_of<int>(cmd, name, values, help, sign);
}

CLI::Option* add_choice(CLI::App& cmd, const std::string& name, std::string& value,
                        const std::string& help, std::initializer_list<const char*> choices) {
  return cmd.add_option(name, value, help)
      ->check(CLI::IsMember(std::vector<std::string>(choices.begin(), choices.end())))
      ->capture_default_str();
}

std::vector<std::string> library_names(const char* key) {
  char* text = nullptr;
  if (memest_request_json(R"({"mode": "enums"})", &text) != MEMEST_OK || !text) {
    memest_string_free(text);
    throw std::runtime_error("the library did not list its enumerations");
  }
  const ojson answer = ojson::parse(text);
  memest_string_free(text);
  return answer.at(key).get<std::vector<std::string>>();
}

std::vector<std::string> enum_names(memest_enum which) {
  std::vector<std::string> names;
  for (uint32_t i = 0; i < memest_enum_count(which); ++i) {
    names.emplace_back(memest_enum_name(which, static_cast<int32_t>(i)));
  }
  return names;
}

CLI::Option* add_enum_choice(CLI::App& cmd, const std::string& name, std::string& value,
                             const std::string& help, memest_enum which) {
  return cmd.add_option(name, value, help)->check(CLI::IsMember(enum_names(which)))->capture_default_str();
}

ojson comm_overlap_value(const std::string& text) {
  if (text == "default" || text == "none") return text;
  const std::vector<std::string> known = enum_names(MEMEST_ENUM_OVERLAP);
  std::string listed;
  for (const std::string& k : known) listed += (listed.empty() ? "" : ", ") + k;
  ojson names = ojson::array();
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string name = text.substr(start, comma - start);
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      throw InputError(fmt::format(
          "--comm-overlap: unknown name \"{}\" (default, none, or a comma-separated list of {})",
          name, listed));
    }
    names.push_back(name);
    start = comma + 1;
  }
  return names;
}

ojson recompute_modules_value(const std::string& text) {
  const std::vector<std::string> known = enum_names(MEMEST_ENUM_RECOMPUTE_MODULE);
  std::string listed;
  for (const std::string& k : known) listed += (listed.empty() ? "" : ", ") + k;
  if (text.empty()) {
    throw InputError("--recompute-modules: no module given: give a comma-separated list of " +
                     listed + " (--recompute none recomputes nothing)");
  }
  // split here rather than by CLI11, which drops empty items: an empty name is an error
  ojson names = ojson::array();
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string name = text.substr(start, comma - start);
    if (name.empty()) {
      throw InputError(fmt::format(
          "--recompute-modules: an empty module name in \"{}\" (two commas in a row, or one at "
          "either end): give a comma-separated list of {}",
          text, listed));
    }
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      throw InputError(fmt::format(
          "--recompute-modules: unknown module \"{}\" (a comma-separated list of {})", name,
          listed));
    }
    names.push_back(name);
    start = comma + 1;
  }
  return names;
}

void add_model_options(CLI::App& cmd, ModelChoice& choice, bool allow_count) {
  auto* preset = cmd.add_option("-m,--model", choice.preset, "Model preset id, or the Hugging Face id of a built-in checkpoint (see `memest models`)")
                     ->capture_default_str();
  auto* config = cmd.add_option("--config", choice.config_path,
                                "A Hugging Face config.json to use instead of a preset")
                     ->check(CLI::ExistingFile);
  config->excludes(preset);
  if (allow_count) {
    add_real(cmd, "--params", choice.num_parameters,
             "A bare parameter count (e.g. 7.5e9) instead of a model", Sign::positive)
        ->excludes(preset)
        ->excludes(config);
  }
}

ojson model_value(const ModelChoice& choice) {
  if (!choice.config_path.empty()) return read_config_file(choice.config_path);
  if (choice.num_parameters > 0) return {{"num_parameters", choice.num_parameters}};
  return choice.preset;
}

void add_gpu_options(CLI::App& cmd, GpuChoice& gpu) {
  auto* preset = cmd.add_option("-g,--gpu", gpu.preset, "GPU preset id (see `memest gpus`)")
                     ->capture_default_str();
  auto* memory = add_real(cmd, "--memory-gib", gpu.memory_gib,
                          "GPU capacity in GiB (overrides the preset's)", Sign::positive);
  auto* per_node = add_integer(cmd, "--gpus-per-node", gpu.gpus_per_node,
                               "GPUs per node (overrides the preset's)", Sign::positive);
  cmd.add_option("--gpu-profile", gpu.profile_path,
                 "A JSON file with a device profile, the object a request takes as \"gpu\" "
                 "(memory_gib, gpus_per_node, context_mib, fragmentation, ...)")
      ->type_name("FILE")
      ->excludes(preset)
      ->excludes(memory)
      ->excludes(per_node);
}

bool gpu_given(const GpuChoice& gpu) {
  return !gpu.preset.empty() || gpu.memory_gib > 0 || !gpu.profile_path.empty();
}

ojson gpu_value(const GpuChoice& gpu) {
  if (!gpu.profile_path.empty()) return read_json_file("--gpu-profile", gpu.profile_path);
  if (gpu.memory_gib <= 0 && gpu.gpus_per_node <= 0) return gpu.preset;
  ojson g = ojson::object();
  if (!gpu.preset.empty()) g["preset"] = gpu.preset;
  if (gpu.memory_gib > 0) g["memory_gib"] = gpu.memory_gib;
  if (gpu.gpus_per_node > 0) g["gpus_per_node"] = gpu.gpus_per_node;
  return g;
}

void add_run_options(CLI::App& cmd, RunShape& run, const std::string& gpus_help,
                     const std::string& global_batch_help) {
  add_integer(cmd, "-n,--gpus", run.gpus, gpus_help)->capture_default_str();
  add_integer(cmd, "-s,--seq,--seq-len", run.seq_len, "Sequence length")->capture_default_str();
  add_integer(cmd, "--global-batch", run.global_batch, global_batch_help)->capture_default_str();
  cmd.add_flag("--no-sp", run.no_sp, "Turn sequence parallelism off");
  cmd.add_flag("--no-flash-attention", run.no_flash, "Keep attention scores (no FlashAttention)");
}

void add_precision_options(CLI::App& cmd, Precision& precision) {
  const auto dtypes = {"bf16", "fp16", "fp32", "fp8"};
  add_choice(cmd, "--param-dtype", precision.param_dtype, "Weight precision", dtypes);
  add_choice(cmd, "--grad-dtype", precision.grad_dtype,
             "Gradient precision (fp16 for the ZeRO paper's 16 bytes/param; default: fp32 for "
             "model-states, megatron and deepspeed, the parameters' dtype under fsdp, fsdp1 and "
             "pytorch, as torch keeps .grad)",
             dtypes);
  add_enum_choice(cmd, "--optimizer", precision.optimizer,
                  "Optimizer (sets bytes of state per parameter)", MEMEST_ENUM_OPTIMIZER);
}

void add_stack_options(CLI::App& cmd, StackOptions& st) {
  add_enum_choice(cmd, "--framework", st.framework,
                  "Training stack: megatron, fsdp (FSDP2: torchtitan, torchtune), fsdp1 (FSDP1 "
                  "FlatParameters: accelerate, HF Trainer, LitGPT, axolotl), deepspeed (ZeRO "
                  "0-3) or pytorch (one GPU or DDP)",
                  MEMEST_ENUM_FRAMEWORK);
  add_enum_choice(cmd, "--loss", st.loss,
                  "Loss on the logits (auto: fused under megatron, else unfused, which upcasts "
                  "to fp32; unfused_16bit keeps 16-bit logits: fp16/bf16 models without "
                  "autocast; chunked: torchtune's chunked output; chunked_lm_head: LitGPT's; "
                  "chunked_linear: torchtitan's ChunkedLossWrapper; flash_attn: flash-attn's "
                  "CrossEntropyLoss, llm-foundry's fused_crossentropy)",
                  MEMEST_ENUM_LOSS);
  add_integer(cmd, "--recompute-every", st.recompute_every,
              "Checkpoint one block in N (with --recompute)", Sign::positive)
      ->capture_default_str();
  cmd.add_flag("--fp8", st.fp8, "Float8 / Transformer Engine fp8 linear layers");
  cmd.add_flag("--fp4", st.fp4,
               "NVFP4 linear layers (Transformer Engine's NVFP4 recipe, Megatron-LM --fp4-format "
               "e2m1; --framework megatron on a GPU that trains in NVFP4: B200, GB200)");
  cmd.add_flag("--use-liger-kernel", st.use_liger_kernel,
               "Liger-Kernel's fused RMSNorm and SwiGLU/GeGLU kernels in the Hugging Face blocks "
               "(transformers' use_liger_kernel; pytorch, deepspeed, fsdp, fsdp1)");
  cmd.add_flag("--compile", st.compile,
               "torch.compile each block and the loss (fsdp, deepspeed, pytorch); the same as "
               "--compile-components all");
  add_enum_choice(cmd, "--compile-components", st.compile_components,
                  "What torch.compile compiles: none, all (blocks and loss), model (each block, "
                  "the loss eager) or loss",
                  MEMEST_ENUM_COMPILE);
  cmd.add_flag("--optimizer-in-backward", st.optimizer_in_backward,
               "Step each parameter during backward (torchtune; fsdp, pytorch)");
  cmd.add_flag("--offload-optimizer", st.offload_optimizer,
               "Optimizer states and fp32 masters in host memory");
  cmd.add_flag("--offload-params", st.offload_params,
               "Sharded parameters in host memory (fsdp zero 2/3, deepspeed zero 3)");
  cmd.add_flag("--offload-activations", st.offload_activations,
               "Saved activations in host memory (one layer staged on the GPU)");
  add_real(cmd, "--bucket-cap-mb", st.bucket_cap_mb, "DDP bucket_cap_mb (0: 25)",
           Sign::non_negative);
  cmd.add_flag("--gradient-as-bucket-view", st.gradient_as_bucket_view,
               "DDP buckets are views of the gradients (no second copy)");
  add_real(cmd, "--reduce-bucket-size", st.reduce_bucket_size,
           "DeepSpeed reduce_bucket_size, elements (0: 5e8)", Sign::non_negative);
  add_real(cmd, "--allgather-bucket-size", st.allgather_bucket_size,
           "DeepSpeed allgather_bucket_size, elements (0: 5e8)", Sign::non_negative);
  add_real(cmd, "--stage3-prefetch-bucket-size", st.prefetch_bucket_size,
           "DeepSpeed stage3_prefetch_bucket_size, elements (0: 5e7)", Sign::non_negative);
  add_real(cmd, "--stage3-max-live-parameters", st.max_live_parameters,
           "DeepSpeed stage3_max_live_parameters (0: 1e9)", Sign::non_negative);
  add_real(cmd, "--stage3-param-persistence-threshold", st.persistence_threshold,
           "DeepSpeed stage3_param_persistence_threshold (0: 1e5)", Sign::non_negative);
  std::string overlap_names;
  for (const std::string& n : enum_names(MEMEST_ENUM_OVERLAP)) {
    overlap_names += (overlap_names.empty() ? "" : ",") + n;
  }
  cmd.add_option("--comm-overlap", st.comm_overlap,
                 "Communication hidden behind compute in the step time: default (what the "
                 "training stack overlaps by itself), none, or a comma-separated list of " +
                     overlap_names)
      ->type_name("LIST")
      ->capture_default_str();
  const std::vector<std::string> dispatchers = enum_names(MEMEST_ENUM_MOE_DISPATCHER);
  std::string dispatcher_names;
  for (const std::string& n : dispatchers) {
    dispatcher_names += (dispatcher_names.empty() ? "" : ", ") + n;
  }
  add_enum_choice(cmd, "--moe-dispatcher", st.moe_dispatcher,
                  "How MoE layers send tokens between expert-parallel ranks (the step time "
                  "when ep spans nodes): " + dispatcher_names + " (default: " +
                      dispatchers.front() + ")",
                  MEMEST_ENUM_MOE_DISPATCHER);
  const std::vector<std::string> kernels = enum_names(MEMEST_ENUM_ATTENTION_KERNEL);
  std::string kernel_names;
  for (const std::string& n : kernels) {
    kernel_names += (kernel_names.empty() ? "" : ", ") + n;
  }
  add_enum_choice(cmd, "--attention-kernel", st.attention_kernel,
                  "Which attention kernels run (the step's compute on Hopper GPUs): " +
                      kernel_names + " (default: " + kernels.front() +
                      ": megatron fused, the other frameworks flash2)",
                  MEMEST_ENUM_ATTENTION_KERNEL);
  const std::vector<std::string> masters = enum_names(MEMEST_ENUM_MASTER_WEIGHTS);
  std::string master_names;
  for (const std::string& n : masters) master_names += (master_names.empty() ? "" : ", ") + n;
  add_enum_choice(cmd, "--master-weights", st.master_weights,
                  "The copy the optimizer updates beside the weights (megatron, deepspeed; "
                  "Megatron-Core --main-params-dtype / store_param_remainders, Apex "
                  "DistributedFusedAdam store_params): " + master_names + " (default: " +
                      masters.front() + ": fp32 beside 16-bit weights)",
                  MEMEST_ENUM_MASTER_WEIGHTS);
  add_choice(cmd, "--optimizer-state-dtype", st.optimizer_state_dtype,
             "The optimizer moments' dtype (Megatron-Core --exp-avg-dtype/--exp-avg-sq-dtype, "
             "NeMo optim.dtype; default: fp32 beside a master, else the weights')",
             {"fp32", "bf16", "fp16", "fp8"});
  add_choice(cmd, "--reduce-dtype", st.reduce_dtype,
             "FSDP MixedPrecisionPolicy reduce_dtype: the gradient reduction's dtype (fsdp, "
             "fsdp1; default: --grad-dtype)", {"fp32", "bf16", "fp16"});
  add_choice(cmd, "--autocast", st.autocast,
             "torch.autocast around the model (default: on for fp32 parameters outside FSDP); "
             "off with --param-dtype fp32 is pure fp32 training", {"on", "off"});
  add_choice(cmd, "--no-sync", st.no_sync,
             "FSDP keeps unsharded gradients across accumulation micro-batches (default: on "
             "for fsdp1, as accelerate does; off for fsdp)", {"on", "off"});
  add_choice(cmd, "--ddp", st.ddp,
             "DDP around the model: on also wraps one process (torchrun with DDP on one GPU); "
             "default: when data-parallel > 1", {"on", "off"});
  cmd.add_flag("--no-loss-parallel", st.no_loss_parallel,
               "Under tp > 1 the loss gathers the logits to the whole vocabulary (torchtitan "
               "without loss_parallel)");
  cmd.add_flag("--fp8-all-gather", st.fp8_all_gather,
               "FSDP2 all-gathers fp8 weights (torchao enable_fsdp_float8_all_gather; with --fp8)");
  cmd.add_flag("--logits-held", st.logits_held,
               "The training loop keeps the model's output (and its logits) through backward "
               "(`out = model(x); out.loss.backward()`)");
  add_integer(cmd, "--loss-chunks", st.loss_chunks,
              "Chunks of a chunked --loss (chunked: torchtune's num_output_chunks, default 8; "
              "chunked_lm_head: LitGPT, default one per 128 tokens; chunked_linear: torchtitan's "
              "ChunkedLossWrapper num_chunks, default 8)", Sign::positive);
  std::string module_names;
  for (const std::string& n : enum_names(MEMEST_ENUM_RECOMPUTE_MODULE)) {
    module_names += (module_names.empty() ? "" : ",") + n;
  }
  st.recompute_modules_given = cmd.add_option("--recompute-modules", st.recompute_modules,
                 "What --recompute selective checkpoints under --framework megatron "
                 "(Megatron-Core's --recompute-modules; default core_attn): a comma-separated "
                 "list of " + module_names)
      ->type_name("LIST");
  cmd.add_flag("--fsdp-use-orig-params", st.fsdp_use_orig_params,
               "fsdp1 + LoRA: whole blocks wrapped with use_orig_params=True, so each block's "
               "FlatParameter holds frozen weights and adapters and its gradient spans both "
               "(LitGPT's Fabric FSDPStrategy; accelerate's transformer wrap without peft's policy)");
}

void put_stack(const StackOptions& st, ojson& training) {
  if (st.framework != "megatron") training["framework"] = st.framework;
  if (st.loss != "auto") training["loss"] = st.loss;
  if (st.recompute_every != 1) training["recompute_every"] = st.recompute_every;
  if (st.fp8) training["fp8"] = true;
  if (st.compile && !st.compile_components.empty() && st.compile_components != "all") {
    throw InputError("--compile means --compile-components all, not \"" +
                     st.compile_components + "\": give one of them");
  }
  if (!st.compile_components.empty() && st.compile_components != "none") {
    training["compile"] = st.compile_components;
  } else if (st.compile) {
    training["compile"] = true;
  }
  if (st.optimizer_in_backward) training["optimizer_in_backward"] = true;
  ojson offload = ojson::object();
  if (st.offload_optimizer) offload["optimizer"] = true;
  if (st.offload_params) offload["params"] = true;
  if (st.offload_activations) offload["activations"] = true;
  if (!offload.empty()) training["offload"] = offload;
  ojson buckets = ojson::object();
  if (st.bucket_cap_mb > 0) buckets["bucket_cap_mb"] = st.bucket_cap_mb;
  if (st.gradient_as_bucket_view) buckets["gradient_as_bucket_view"] = true;
  if (st.reduce_bucket_size > 0) buckets["reduce_bucket_size"] = st.reduce_bucket_size;
  if (st.allgather_bucket_size > 0) buckets["allgather_bucket_size"] = st.allgather_bucket_size;
  if (st.prefetch_bucket_size > 0) buckets["stage3_prefetch_bucket_size"] = st.prefetch_bucket_size;
  if (st.max_live_parameters > 0) buckets["stage3_max_live_parameters"] = st.max_live_parameters;
  if (st.persistence_threshold > 0) {
    buckets["stage3_param_persistence_threshold"] = st.persistence_threshold;
  }
  if (!buckets.empty()) training["buckets"] = buckets;
  if (st.comm_overlap != "default") training["comm_overlap"] = comm_overlap_value(st.comm_overlap);
  if (!st.moe_dispatcher.empty()) training["moe_dispatcher"] = st.moe_dispatcher;
  if (!st.attention_kernel.empty()) training["attention_kernel"] = st.attention_kernel;
  if (!st.reduce_dtype.empty()) training["reduce_dtype"] = st.reduce_dtype;
  if (!st.autocast.empty()) training["autocast"] = st.autocast == "on";
  if (!st.no_sync.empty()) training["no_sync"] = st.no_sync == "on";
  if (!st.ddp.empty()) training["ddp"] = st.ddp == "on";
  if (st.no_loss_parallel) training["loss_parallel"] = false;
  if (st.fp8_all_gather) training["fp8_all_gather"] = true;
  if (st.logits_held) training["logits_held"] = true;
  if (st.loss_chunks != 0) training["loss_chunks"] = st.loss_chunks;
  if (st.fsdp_use_orig_params) training["fsdp_use_orig_params"] = true;
  if (st.fp4) training["fp4"] = true;
  if (st.use_liger_kernel) training["use_liger_kernel"] = true;
  if (!st.master_weights.empty()) training["master_weights"] = st.master_weights;
  if (!st.optimizer_state_dtype.empty()) {
    training["optimizer_state_dtype"] = st.optimizer_state_dtype;
  }
  if (st.recompute_modules_given != nullptr && st.recompute_modules_given->count() > 0) {
    training["recompute_modules"] = recompute_modules_value(st.recompute_modules);
  }
}

void add_adapter_options(CLI::App& cmd, AdapterOptions& a) {
  add_enum_choice(cmd, "--adapter", a.type,
                  "Train a LoRA adapter on a frozen base (lora: base in --param-dtype; qlora: "
                  "base linears in NF4); qlora needs --framework pytorch, fsdp or deepspeed; under "
                  "megatron lora runs with tp/pp/cp/ep, its adapters in the --param-dtype "
                  "(ms-swift's Megatron LoRA)",
                  MEMEST_ENUM_ADAPTER);
  a.rank = add_integer(cmd, "--lora-rank", a.rank_value, "LoRA rank r (default 8, peft's)");
  a.alpha = add_real(cmd, "--lora-alpha", a.alpha_value, "LoRA alpha (default 8)", Sign::any);
  a.dropout = add_real(cmd, "--lora-dropout", a.dropout_value, "LoRA dropout (default 0)", Sign::any);
  std::string targets;  // the library's lora_target names
  for (const std::string& t : enum_names(MEMEST_ENUM_LORA_TARGET)) {
    targets += (targets.empty() ? "" : ", ") + t;
  }
  cmd.add_option("--lora-targets", a.targets_text,
                 "Modules to adapt, comma-separated: " + targets +
                     " (in_proj, out_proj: a hybrid's Mamba / gated DeltaNet mixers), or "
                     "all-linear (peft's: every linear but the output layer) (default "
                     "q_proj,v_proj)");
  a.dtype = add_choice(cmd, "--adapter-dtype", a.dtype_value,
                       "Adapter weights, gradients and optimizer states (default: fp32, as peft "
                       "casts them; under megatron the --param-dtype)", {"fp32", "bf16", "fp16"});
  cmd.add_flag("--double-quant", a.double_quant,
               "QLoRA: quantise the absmax statistics too (bnb_4bit_use_double_quant)");
  cmd.add_flag("--quantize-lm-head", a.quantize_lm_head,
               "QLoRA: the (untied) LM head in NF4 too (LitGPT's --quantize bnb.nf4)");
}

void put_adapter(const AdapterOptions& a, ojson& training) {
  ojson j = ojson::object();
  if (!a.type.empty()) j["type"] = a.type;
  if (a.rank && a.rank->count() > 0) j["rank"] = a.rank_value;
  if (a.alpha && a.alpha->count() > 0) j["alpha"] = a.alpha_value;
  if (a.dropout && a.dropout->count() > 0) j["dropout"] = a.dropout_value;
  if (!a.targets_text.empty()) {
    // split here rather than by CLI11, which drops empty items: an empty name is an error
    ojson targets = ojson::array();
    std::size_t start = 0;
    while (start <= a.targets_text.size()) {
      const std::size_t comma = std::min(a.targets_text.find(',', start), a.targets_text.size());
      const std::string name = a.targets_text.substr(start, comma - start);
      if (name.empty()) {
        throw InputError("--lora-targets: an empty module name in \"" + a.targets_text +
                         "\" (two commas in a row, or one at either end): give comma-separated "
                         "names such as q_proj,v_proj");
      }
      targets.push_back(name);
      start = comma + 1;
    }
    j["targets"] = targets;
  }
  if (a.dtype && a.dtype->count() > 0) j["dtype"] = a.dtype_value;
  if (a.double_quant) j["double_quant"] = true;
  if (a.quantize_lm_head) j["quantize_lm_head"] = true;
  if (!j.empty()) training["adapter"] = j;
}

const std::vector<FieldFlag>& suggestion_flag_table() {
  // One row per field of changed_fields (libmemest/src/json/pretrain_json.cpp). A field the
  // library starts to suggest without a row here is printed as the request field, said to have
  // no flag.
  static const std::vector<FieldFlag> table = {
      {"parallel.gpus", "--gpus", FlagForm::value},
      {"parallel.tp", "--tp", FlagForm::value},
      {"parallel.cp", "--cp", FlagForm::value},
      {"parallel.pp", "--pp", FlagForm::value},
      {"parallel.vpp", "--vpp", FlagForm::value},
      {"parallel.zero", "--zero", FlagForm::value},
      {"parallel.ep", "--ep", FlagForm::value},
      {"parallel.etp", "--etp", FlagForm::value},
      {"parallel.last_stage_layers", "--last-stage-layers", FlagForm::value},
      {"parallel.first_stage_layers", "--first-stage-layers", FlagForm::value},
      {"parallel.pipeline_layout", "--pipeline-layout", FlagForm::value},
      {"parallel.uneven_pipeline", "--uneven-pipeline", FlagForm::when_true},
      {"parallel.sp", "--no-sp", FlagForm::when_false},
      {"training.micro_batch", "--micro-batch", FlagForm::value},
      {"training.recompute", "--recompute", FlagForm::value},
      {"training.offload.params", "--offload-params", FlagForm::when_true},
      {"training.adapter.dtype", "--adapter-dtype", FlagForm::value},
      {"training.adapter.double_quant", "--double-quant", FlagForm::when_true},
  };
  return table;
}

namespace {

// A word a POSIX shell reads back as itself: as is when plain, else in single quotes.
std::string shell_word(const std::string& text) {
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_.,:/=+-", c);
  });
  if (plain) return text;
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The (dotted path, value) of each leaf of `fields` under `path`, in order.
void leaves(const std::string& path, const ojson& fields,
            std::vector<std::pair<std::string, ojson>>& out) {
  for (const auto& [key, value] : fields.items()) {
    const std::string at = path.empty() ? key : path + "." + key;
    if (value.is_object()) {
      leaves(at, value, out);
    } else {
      out.emplace_back(at, value);
    }
  }
}

std::string value_text(const ojson& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

}  // namespace

FlagChange suggestion_flags(const ojson& set, const ojson& layout) {
  std::vector<std::pair<std::string, ojson>> fields;
  leaves("", set, fields);
  const bool gpus_changed = std::any_of(fields.begin(), fields.end(), [](const auto& f) {
    return f.first == "parallel.gpus";
  });
  if (gpus_changed) {
    for (const char* key : {"tp", "cp", "pp"}) {
      const std::string path = std::string("parallel.") + key;
      const bool in_set = std::any_of(fields.begin(), fields.end(),
                                      [&](const auto& f) { return f.first == path; });
      if (!in_set && layout.contains(key)) fields.emplace_back(path, layout[key]);
    }
  }
  FlagChange change;
  const std::vector<FieldFlag>& table = suggestion_flag_table();
  for (const auto& [path, value] : fields) {
    const auto row = std::find_if(table.begin(), table.end(),
                                  [&](const FieldFlag& f) { return path == f.field; });
    if (row == table.end() || (row->form != FlagForm::value && !value.is_boolean())) {
      change.no_flag.push_back(path + "=" + value_text(value));
    } else if (row->form == FlagForm::value) {
      change.add.push_back(row->flag);
      change.add.push_back(shell_word(value_text(value)));
    } else if (value.get<bool>() == (row->form == FlagForm::when_true)) {
      change.add.push_back(row->flag);
    } else {
      change.drop.push_back(row->flag);
    }
  }
  return change;
}

std::string flag_change_text(const FlagChange& change) {
  std::vector<std::string> parts;
  std::string words;
  for (const std::string& w : change.add) words += (words.empty() ? "" : " ") + w;
  if (!words.empty()) parts.push_back(words);
  for (const std::string& f : change.drop) parts.push_back("without " + f);
  for (const std::string& f : change.no_flag) parts.push_back(f + " (no flag sets it)");
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

void put_precision(const Precision& precision, ojson& training) {
  training["param_dtype"] = precision.param_dtype;
  if (!precision.grad_dtype.empty()) training["grad_dtype"] = precision.grad_dtype;
  training["optimizer"] = precision.optimizer;
}

void add_format_option(CLI::App& cmd, Output& output, const char* fallback) {
  output.format = fallback;
  add_choice(cmd, "-f,--format", output.format, "Output format", {"table", "json", "csv"});
}

void add_wide_flag(CLI::App& cmd, Output& output) {
  cmd.add_flag("--wide", output.wide,
               "Search table with every column (dp, ep, estimate, tokens/s, bubble, MFU, the step "
               "breakdown, the reason); "
               "the default one fits 100 columns");
}

namespace {

// A SAX pass before the DOM is built: nesting deeper than 256 levels (no real request or
// config.json comes near; the DOM's dump recursed into a stack overflow at 100,000), a key given twice in one object (the DOM would keep the last
// silently) and numbers that overflow a double are refused naming the flag.
struct StrictJson : nlohmann::json_sax<ojson> {
  static constexpr std::size_t kMaxDepth = 256;
  std::string flag, problem;
  std::vector<std::vector<std::string>> keys;  // per open object, the keys seen
  std::size_t depth = 0;

  bool open() {
    if (++depth > kMaxDepth) {
      problem = fmt::format("nested deeper than {} levels", kMaxDepth);
      return false;
    }
    return true;
  }
  bool start_object(std::size_t) override {
    keys.emplace_back();
    return open();
  }
  bool end_object() override {
    keys.pop_back();
    --depth;
    return true;
  }
  bool start_array(std::size_t) override {
    keys.emplace_back();  // arrays have no keys; keeps the stack aligned with depth
    return open();
  }
  bool end_array() override {
    keys.pop_back();
    --depth;
    return true;
  }
  bool key(string_t& k) override {
    std::vector<std::string>& seen = keys.back();
    if (std::find(seen.begin(), seen.end(), k) != seen.end()) {
      problem = fmt::format("the key \"{}\" is given twice in one object", k);
      return false;
    }
    seen.push_back(k);
    return true;
  }
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t v, const string_t& text) override {
    if (!std::isfinite(v)) {
      problem = fmt::format("the number {} is out of a double's range", text);
      return false;
    }
    return true;
  }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    problem = e.what();
    // "[json.exception.parse_error.101] parse error at line L, column C: ..." -> the message
    if (const auto pos = problem.find("] "); problem.rfind("[json.exception", 0) == 0 && pos != std::string::npos) {
      problem.erase(0, pos + 2);
    }
    return false;
  }
};

}  // namespace

void check_json_text(const std::string& what, const std::string& text) {
  if (const auto nul = text.find('\0'); nul != std::string::npos) {
    throw InputError(fmt::format("{}: a NUL byte at offset {} (a JSON text has none)", what, nul));
  }
  StrictJson sax;
  if (!ojson::sax_parse(text, &sax) || !sax.problem.empty()) {
    throw InputError(fmt::format("{} is not valid JSON: {}", what,
                                 sax.problem.empty() ? "parse error" : sax.problem));
  }
}

namespace {

// A Hugging Face config.json may hold Python's bare Infinity, -Infinity and NaN (Nemotron-H's
// time_step_limit). The library reads them (memest_model_from_config_json refuses them, by
// name, only where it needs a finite number); once it has accepted the file, the CLI's own
// reader takes each such token outside a string as null: a value the library does not read.
std::string non_finite_as_null(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '+' || c == '-'; };
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] == '"') {  // copy a string whole, escapes respected
      std::size_t j = i + 1;
      while (j < text.size() && text[j] != '"') j += text[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, text.size());
      out.append(text, i, j - i);
      i = j;
      continue;
    }
    bool replaced = false;
    if (i == 0 || !word(text[i - 1])) {
      for (const char* token : {"-Infinity", "Infinity", "NaN"}) {
        const std::size_t len = std::strlen(token);
        if (text.compare(i, len, token) == 0 && (i + len >= text.size() || !word(text[i + len]))) {
          out += "null";
          i += len;
          replaced = true;
          break;
        }
      }
    }
    if (!replaced) out += text[i++];
  }
  return out;
}

}  // namespace

ojson read_config_file(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) {
    throw InputError(fmt::format("--config: cannot read \"{}\" ({})", path, std::strerror(errno)));
  }
  std::string text;
  char buf[65536];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, file)) > 0) text.append(buf, n);
  const bool failed = std::ferror(file);
  std::fclose(file);
  if (failed) throw InputError(fmt::format("--config: cannot read \"{}\"", path));
  const std::string cleaned = non_finite_as_null(text);
  check_json_text(fmt::format("--config: \"{}\"", path), cleaned);  // NUL, depth, duplicates
  {
    memest_model model;
    if (memest_model_init(&model, sizeof model) == MEMEST_OK &&
        memest_model_from_config_json(text.c_str(), &model) != MEMEST_OK &&
        std::string(memest_last_error()).find("not valid JSON") == std::string::npos) {
      // the library's own reading names the field (a needed value that is not finite, ...)
      throw InputError(fmt::format("--config: \"{}\": {}", path, memest_last_error()));
    }
  }
  return ojson::parse(cleaned);
}

ojson read_json_file(const std::string& flag, const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  std::string text;
  int error = file ? 0 : errno;
  if (file) {
    errno = 0;
    char buf[65536];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, file)) > 0) text.append(buf, n);
    if (std::ferror(file)) error = errno ? errno : EIO;
    std::fclose(file);
  }
  if (error) throw InputError(fmt::format("{}: cannot read \"{}\" ({})", flag, path, std::strerror(error)));
  check_json_text(fmt::format("{}: \"{}\"", flag, path), text);
  try {
    return ojson::parse(text);
  } catch (const ojson::parse_error& e) {
    // what() is "[json.exception.parse_error.101] parse error at line L, column C: ...".
    std::string what = e.what();
    if (const auto pos = what.find("] "); what.rfind("[json.exception", 0) == 0 && pos != std::string::npos)
      what.erase(0, pos + 2);
    throw InputError(fmt::format("{}: \"{}\" is not valid JSON: {}", flag, path, what));
  }
}

}  // namespace memest_cli
