// The pretraining stacks' launch files: torchtitan TOML, Megatron-LM / NeMo launch scripts and
// argument YAML, HF TrainingArguments (with a DeepSpeed JSON or an accelerate config). Each
// default cites the framework file that defines it (tests/data/launch/MAPPING-*.md).
#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "launch/import.hpp"
#include "launch/mapping.hpp"
#include "launch/model_names.hpp"
#include "model/presets.hpp"

namespace memest::launch {

// ---------------------------------------------------------------- torchtitan

namespace {

constexpr const char* kTitan = "torchtitan";
constexpr const char* kJobConfig = "torchtitan/config/job_config.py";

// Keys that do not change memory or the layout (logging, checkpoint files, the learning-rate
// schedule, the data source): read as nothing, without a warning.
constexpr const char* kTitanIgnored[] = {
    "job.", "profiling.", "metrics.", "lr_scheduler.", "checkpoint.", "comm.", "validation.",
    "fault_tolerance.", "memory_estimation.", "experimental.", "optimizer.lr", "optimizer.eps",
    "optimizer.weight_decay", "optimizer.beta", "training.dataset", "training.steps",
    "training.max_norm", "training.gc_", "training.seed", "training.deterministic",
    "training.warmup", "model.tokenizer_path", "model.hf_assets_path", "model.print_after",
    "activation_checkpoint.preserve_rng_state", "activation_checkpoint.early_stop",
    "activation_checkpoint.debug", "activation_checkpoint.determinism_check",
    "parallelism.context_parallel_rotate_method", "parallelism.enable_async_tensor_parallel",
    "parallelism.context_parallel_load_balancer", "float8.recipe_name", "float8.filter_fqns",
    "float8.emulate", "float8.precompute_float8_dynamic_scale_for_fsdp", "compile.backend",
    "parallelism.pipeline_parallel_expert_parallel_overlap", "training.dataloader.",
    "quantize.linear.float8.recipe_name", "quantize.linear.float8.filter_fqns",
    "quantize.linear.float8.emulate"};

}  // namespace

void map_torchtitan(MapContext& c) {
  const Settings& s = c.run.settings;
  RequestBuilder& b = c.b;
  Reader r{s, b, kTitan, kJobConfig};
  b.derived("training.framework", "fsdp",
            "torchtitan shards with FSDP2 fully_shard (torchtitan/models/llama3/infra/parallelize.py)");

  // the model: model.name + model.flavor (torchtitan/models/<name>/__init__.py)
  {
    const Setting* name = s.take("model.name");
    const Setting* flavor = s.take("model.flavor");
    const std::string n = name ? string_of(*name) : "llama3";
    const std::string f = flavor ? string_of(*flavor) : "debugmodel";
    if (auto m = model_by_torchtitan_flavor(n, f)) {
      if (flavor) {
        b.from_file("model", m->model, *flavor);
      } else {
        b.from_default("model", m->model, kTitan, "Model.flavor", kJobConfig);
      }
      b.origins["model"]["resolved"] = m->how;
    } else if (flavor) {
      b.origins["model"] = {{"from", "unresolved"}, {"name", n + " " + f}, {"file", flavor->file},
                            {"key", flavor->key}, {"line", flavor->line}};
    }
  }

  // parallelism
  const int64_t tp = r.integer("parallelism.tensor_parallel_degree", "parallel.tp", 1);
  const int64_t pp = r.integer("parallelism.pipeline_parallel_degree", "parallel.pp", 1);
  const int64_t cp = r.integer("parallelism.context_parallel_degree", "parallel.cp", 1);
  r.integer("parallelism.expert_parallel_degree", "parallel.ep", 1);
  r.integer("parallelism.expert_tensor_parallel_degree", "parallel.etp", 1, /*set_default=*/false);
  const Setting* shard = s.take("parallelism.data_parallel_shard_degree");
  const Setting* replicate = s.take("parallelism.data_parallel_replicate_degree");
  const int64_t dp_shard = shard ? integer_of(*shard) : -1;
  const int64_t dp_replicate = replicate ? integer_of(*replicate) : 1;
  if (replicate && dp_replicate > 1) {
    throw Error(MEMEST_ERR_UNSUPPORTED, replicate->file + ":" + replicate->key,
                where(*replicate) + ": HSDP (" + std::to_string(dp_replicate) +
                    " replicas of each shard group) is not modelled: memest shards the states "
                    "over every data-parallel rank");
  }
  if (dp_shard > 0) {
    b.derived("parallel.gpus", dp_shard * dp_replicate * tp * pp * cp,
              "data_parallel_shard_degree x data_parallel_replicate_degree x tp x pp x cp");
  }
  if (tp > 1) {
    b.derived("parallel.sp", true,
              "torchtitan's tensor-parallel plan shards the norms' activations over the sequence "
              "(SequenceParallel in torchtitan/models/llama3/infra/parallelize.py)");
  }
  if (const Setting* v = s.take("parallelism.fsdp_reshard_after_forward")) {
    const std::string mode = string_of(*v);
    if (mode == "never") b.from_file("parallel.zero", 2, *v);
    else if (mode == "always" || mode == "default") b.from_file("parallel.zero", 3, *v);
    else r.bad(*v, "default, always or never");
  } else {
    b.from_default("parallel.zero", 3, kTitan,
                   "Parallelism.fsdp_reshard_after_forward = \"default\" (reshard after forward)",
                   kJobConfig);
  }
  if (const Setting* v = s.take("parallelism.disable_loss_parallel")) {
    if (boolean_of(*v) && tp > 1) b.from_file("training.loss_parallel", false, *v);
  }

  // pipeline schedule: multi-stage schedules hold 2 stages per rank unless
  // pipeline_parallel_layers_per_stage says otherwise (torchtitan/distributed/pipeline_parallel.py)
  if (pp > 1) {
    const Setting* sched = s.take("parallelism.pipeline_parallel_schedule");
    const std::string schedule = sched ? string_of(*sched) : "1F1B";
    const Setting* lps = s.take("parallelism.pipeline_parallel_layers_per_stage");
    const bool single = schedule == "1F1B" || schedule == "GPipe";
    if (schedule == "GPipe" && sched) {
      b.warn(*sched, "GPipe keeps every micro-batch's activations until the backward; memest "
                     "models 1F1B's pp in flight, so the first stage's activations are too small");
    } else if (!single && schedule != "Interleaved1F1B" && schedule != "LoopedBFS" && sched) {
      b.warn(*sched, "schedule " + schedule + " is timed and held as interleaved 1F1B");
    }
    if (!single) {
      if (lps) {
        b.layers_per_stage = *lps;  // settled with the model's layers (import.cpp)
      } else {
        b.from_default("parallel.vpp", 2, kTitan, "stages_per_rank = 2 for a multi-stage schedule",
                       "torchtitan/distributed/pipeline_parallel.py");
      }
      b.derived("parallel.uneven_pipeline", true,
                "torchtitan splits the layers with the embedding and the head weighted as layers "
                "(generate_llm_fqn_per_model_part)");
    }
    if (const Setting* v = s.take("parallelism.pipeline_parallel_first_stage_less_layers")) (void)v;
    if (const Setting* v = s.take("parallelism.pipeline_parallel_last_stage_less_layers")) (void)v;
  }

  // batch and sequence
  const Setting* local = s.take("training.local_batch_size");
  if (!local) local = s.take("training.batch_size");  // before torchtitan 0.2
  const int64_t local_batch = local ? integer_of(*local) : 8;
  if (pp > 1) {
    // each pipeline micro-batch is pipeline_parallel_microbatch_size sequences
    const int64_t micro = r.integer("parallelism.pipeline_parallel_microbatch_size",
                                    "training.micro_batch", 1);
    if (micro > 0 && local_batch % micro == 0) {
      b.accumulation = local_batch / micro;
      b.accumulation_origin = local ? json{{"key", local->key}, {"line", local->line}}
                                    : json{{"default", "Training.local_batch_size = 8"}};
    }
  } else if (local) {
    b.from_file("training.micro_batch", local_batch, *local);
  } else {
    b.from_default("training.micro_batch", 8, kTitan, "Training.local_batch_size = 8", kJobConfig);
  }
  if (const Setting* v = s.take("training.global_batch_size")) {
    if (integer_of(*v) > 0) b.from_file("training.global_batch", integer_of(*v), *v);
  }
  r.integer("training.seq_len", "training.seq_len", 2048);

  // precision: FSDP2 keeps fp32 shards and computes in mixed_precision_param; training.dtype
  // bfloat16 stores the parameters in bf16 (torchtitan/distributed/utils.py, job_config.py)
  {
    const Setting* dtype = s.take("training.dtype");
    const bool bf16 = dtype && string_of(*dtype) == "bfloat16";
    const std::string stored = bf16 ? "bf16" : "fp32";
    if (dtype) {
      b.from_file("training.param_dtype", stored, *dtype);
      b.from_file("training.grad_dtype", stored, *dtype);
    } else {
      b.from_default("training.param_dtype", "fp32", kTitan, "Training.dtype = \"float32\"", kJobConfig);
      b.from_default("training.grad_dtype", "fp32", kTitan, "Training.dtype = \"float32\"", kJobConfig);
    }
    s.take("training.mixed_precision_param");
    if (const Setting* v = s.take("training.mixed_precision_reduce")) {
      b.from_file("training.reduce_dtype", string_of(*v) == "bfloat16" ? "bf16" : "fp32", *v);
    } else if (!bf16) {
      b.from_default("training.reduce_dtype", "fp32", kTitan,
                     "Training.mixed_precision_reduce = \"float32\"", kJobConfig);
    }
  }
  if (const Setting* v = s.take("training.enable_cpu_offload")) {
    if (boolean_of(*v)) {
      b.from_file("training.offload.params", true, *v);
      b.from_file("training.offload.optimizer", true, *v);
    }
  }

  // activation checkpointing (torchtitan/distributed/activation_checkpoint.py)
  {
    const Setting* mode = s.take("activation_checkpoint.mode");
    const Setting* option = s.take("activation_checkpoint.selective_ac_option");
    const std::string m = mode ? string_of(*mode) : "selective";
    const std::string o = option ? string_of(*option) : "2";
    const Setting* at = mode ? mode : option;
    auto set = [&](const std::string& field, json v) {
      if (at) b.from_file(field, v, *at);
      else b.from_default(field, v, kTitan, "ActivationCheckpoint.mode = \"selective\", selective_ac_option = \"2\"", kJobConfig);
    };
    if (m == "none") {
      set("training.recompute", "none");
    } else if (m == "full") {
      set("training.recompute", "full");
    } else if (m == "selective" && o == "op") {
      set("training.recompute", "op_selective");
    } else if (m == "selective") {
      const Setting probe{json(o), option ? option->file : "", option ? option->line : 0,
                          "activation_checkpoint.selective_ac_option"};
      const int64_t every = integer_of(probe);
      if (every < 1) r.bad(probe, "\"op\" or a positive integer");
      set("training.recompute", "full");
      if (every > 1) set("training.recompute_every", every);
    } else if (mode) {
      b.warn(*mode, "activation checkpointing mode " + m +
                        " is not modelled: the request keeps no checkpointing (recompute none)");
      b.from_file("training.recompute", "none", *mode);
    }
  }

  // compile, fp8, optimizer
  {
    const Setting* enable = s.take("compile.enable");
    const Setting* comps = s.take("compile.components");
    if (enable && boolean_of(*enable)) {
      std::vector<std::string> parts = {"model", "loss"};
      if (comps && comps->value.is_array()) {
        parts.clear();
        for (const json& p : comps->value) parts.push_back(p.is_string() ? p.get<std::string>() : "");
      }
      const bool model = std::find(parts.begin(), parts.end(), "model") != parts.end();
      const bool loss = std::find(parts.begin(), parts.end(), "loss") != parts.end();
      b.from_file("training.compile", model && loss ? "all" : model ? "model" : loss ? "loss" : "none",
                  comps ? *comps : *enable);
    }
  }
  if (const Setting* conv = s.take("model.converters")) {
    const std::string all = conv->value.dump();
    if (all.find("float8") != std::string::npos) b.from_file("training.fp8", true, *conv);
    if (all.find("mx") != std::string::npos) {
      b.warn(*conv, "MX (microscaling) linears are not modelled; held as bf16");
    }
  }
  for (const char* key : {"float8.enable_fsdp_float8_all_gather",
                          "quantize.linear.float8.enable_fsdp_float8_all_gather"}) {
    if (const Setting* v = s.take(key)) {
      if (boolean_of(*v)) b.from_file("training.fp8_all_gather", true, *v);
    }
  }
  {
    const Setting* name = s.take("optimizer.name");
    const Setting* impl = s.take("optimizer.implementation");
    const std::string n = name ? string_of(*name) : "AdamW";
    const std::string i = impl ? string_of(*impl) : "fused";
    const Setting* at = impl ? impl : name;
    std::string opt;
    if (n == "AdamW" || n == "Adam") opt = i == "foreach" ? "adamw_foreach" : "adamw";
    else if (n == "SGD") opt = "sgd_momentum";
    if (opt.empty()) {
      if (name) b.warn(*name, "optimizer " + n + " is not modelled: held as AdamW");
      opt = "adamw";
    }
    if (at) b.from_file("training.optimizer", opt, *at);
    else b.from_default("training.optimizer", opt, kTitan, "Optimizer.name = \"AdamW\", implementation = \"fused\"", kJobConfig);
    if (const Setting* v = s.take("optimizer.early_step_in_backward")) {
      if (boolean_of(*v)) b.from_file("training.optimizer_in_backward", true, *v);
    }
  }
  r.warn_unread(kTitanIgnored, std::size(kTitanIgnored));
}

// ---------------------------------------------------------------- Megatron-LM / NeMo

namespace {

constexpr const char* kMegatron = "Megatron-LM";
constexpr const char* kArguments = "megatron/training/arguments.py";

// Megatron's arguments in any of their spellings: "--micro-batch-size" on a command line,
// "micro_batch_size" in an argument YAML, "model.micro_batch_size" in a NeMo 1 YAML.
class MegatronArgs {
 public:
  explicit MegatronArgs(const Run& run) : run_(run) {}

  const Setting* take(const std::string& name) const {
    std::string dashes = name, unders = name;
    std::replace(dashes.begin(), dashes.end(), '_', '-');
    std::replace(unders.begin(), unders.end(), '-', '_');
    if (run_.command) {
      for (const std::string& k : {"--" + dashes, "--" + unders}) {
        if (const Setting* s = run_.command->options.take(k)) return s;
      }
    }
    for (const std::string& k : {unders, "model." + unders, "trainer." + unders,
                                 "MODEL_ARGS.--" + dashes}) {
      if (const Setting* s = run_.settings.take(k)) return s;
    }
    return nullptr;
  }
  bool flag(const std::string& name, bool* seen = nullptr, const Setting** at = nullptr) const {
    const Setting* s = take(name);
    if (seen) *seen = s != nullptr;
    if (at) *at = s;
    return s && boolean_of(*s);
  }

 private:
  const Run& run_;
};

// Megatron's own tokenizers (megatron/training/tokenizer/tokenizer.py) whose vocabulary is
// fixed; --vocab-size or a model id gives the others.
[[noreturn]] void r_bad_divisor(const Setting& s) {
  throw Error(MEMEST_ERR_INVALID_ARGUMENT, s.file + ":" + s.key, where(s) + ": must be a positive integer");
}

int64_t tokenizer_vocab(const std::string& type) {
  if (type == "GPT2BPETokenizer") return 50257;
  if (type == "Llama2Tokenizer") return 32000;  // Llama 2's SentencePiece model
  if (type == "BertWordPieceLowerCase" || type == "BertWordPieceCase") return 30522;
  return 0;
}

}  // namespace


// How the optimizer stores what it updates (training.master_weights,
// training.optimizer_state_dtype; plan/stack.hpp derived_optimizer_bytes).
//  Megatron-LM: --use-precision-aware-optimizer with --main-params-dtype (fp32: the fp32
//    remainders over bf16 weights, store_param_remainders' default; fp16: an fp16 copy) and
//    --exp-avg-dtype / --exp-avg-sq-dtype (megatron/core/optimizer/optimizer_config.py;
//    without the flag Megatron ignores them).
//  NeMo 1 (model.optim.name distributed_fused_adam): Apex's DistributedFusedAdam with
//    optim.dtype (default fp32) as NeMo's setup_optimization sets it up
//    (nemo/collections/nlp/models/language_modeling/megatron_base_model.py): fp8_params keeps
//    a master in optim.dtype (store_params), optim.dtype equal to the 16-bit weights none,
//    fp32 over bf16 weights the remainders (store_param_remainders); optim.store_params /
//    optim.store_param_remainders given say it themselves.
namespace {

void map_optimizer_storage(const MegatronArgs& a, RequestBuilder& b, const Setting* nemo_dfa) {
  const json* pd = b.get("training.param_dtype");
  const std::string param = pd && pd->is_string() ? pd->get<std::string>() : "fp32";
  const Setting* aware_at = nullptr;
  bool aware_seen = false;
  const bool aware = a.flag("use-precision-aware-optimizer", &aware_seen, &aware_at);
  const Setting* main_dtype = a.take("main-params-dtype");
  const Setting* avg = a.take("exp-avg-dtype");
  const Setting* avg_sq = a.take("exp-avg-sq-dtype");
  if (!aware) {
    for (const Setting* v : {main_dtype, avg, avg_sq}) {
      if (v) b.warn(*v, v->key + " applies with --use-precision-aware-optimizer only "
                        "(megatron/core/optimizer/optimizer_config.py): ignored");
    }
  } else {
    const std::string md = main_dtype ? string_of(*main_dtype) : "fp32";
    if (md == "fp16") {
      b.from_file("training.master_weights", "fp16", *main_dtype);
    } else if (param == "bf16") {
      b.derived("training.master_weights", "remainder",
                "--use-precision-aware-optimizer with fp32 main parameters over bf16 weights "
                "keeps the fp32 remainders (store_param_remainders, default True: "
                "megatron/core/optimizer/optimizer_config.py)");
    }
    const auto bytes = [](const std::string& d) { return d == "fp32" ? 4 : d == "fp8" ? 1 : 2; };
    const std::string e = avg ? string_of(*avg) : "fp32";
    const std::string q = avg_sq ? string_of(*avg_sq) : "fp32";
    if (avg || avg_sq) {
      const std::string wider = bytes(q) > bytes(e) ? q : e;
      b.from_file("training.optimizer_state_dtype", wider, avg ? *avg : *avg_sq);
      if (e != q) {
        b.warn(avg ? *avg : *avg_sq, "exp_avg in " + e + " and exp_avg_sq in " + q +
                                         ": memest has one dtype for both moments, counted "
                                         "as the wider, " + wider);
      }
    }
  }
  if (!nemo_dfa) return;
  const Setting* dtype = a.take("optim.dtype");
  const Setting* store_params = a.take("optim.store_params");
  const Setting* remainders = a.take("optim.store_param_remainders");
  const Setting* fp8_params = a.take("fp8_params");
  std::string state = dtype ? string_of(*dtype) : "fp32";
  if (state == "bf16-mixed" || state == "bfloat16" || state == "torch.bfloat16") state = "bf16";
  if (state == "16" || state == "float16" || state == "torch.float16") state = "fp16";
  if (state == "32" || state == "float32" || state == "torch.float32") state = "fp32";
  if (state != "fp32" && state != "bf16" && state != "fp16") {
    if (dtype) b.warn(*dtype, "optim.dtype " + state + " is not modelled: held as fp32");
    state = "fp32";
  }
  if (dtype && state != "fp32") b.from_file("training.optimizer_state_dtype", state, *dtype);
  const std::string model = param == "fp8" ? "bf16" : param;  // fp8 weights sit in a bf16 model
  if (store_params && boolean_of(*store_params)) {
    b.from_file("training.master_weights", state, *store_params);
  } else if (remainders && boolean_of(*remainders)) {
    b.from_file("training.master_weights", "remainder", *remainders);
  } else if (store_params) {
    b.from_file("training.master_weights", "none", *store_params);
  } else if ((fp8_params && boolean_of(*fp8_params)) || param == "fp8") {
    // fp8_params (store_params): a master in optim.dtype
    if (fp8_params) b.from_file("training.master_weights", state, *fp8_params);
    else b.derived("training.master_weights", state, "fp8_params keeps the optimizer's own copy "
                   "(store_params: NeMo megatron_base_model.py setup_optimization)");
  } else if (state == model) {
    b.derived("training.master_weights", "none",
              "Apex DistributedFusedAdam with optim.dtype equal to the weights' keeps no master "
              "(store_params False: NeMo megatron_base_model.py setup_optimization)");
  } else if (state == "fp32" && model == "bf16") {
    b.derived("training.master_weights", "remainder",
              "Apex DistributedFusedAdam with fp32 states over bf16 weights keeps the fp32 "
              "remainders (store_param_remainders: NeMo megatron_base_model.py "
              "setup_optimization)");
  }
}

}  // namespace

void map_megatron(MapContext& c) {
  RequestBuilder& b = c.b;
  MegatronArgs a(c.run);
  auto integer = [&](const char* name, const char* field, int64_t fallback, bool set_default = true) {
    if (const Setting* s = a.take(name)) {
      const int64_t v = integer_of(*s);
      if (field) b.from_file(field, v, *s);
      return v;
    }
    if (field && set_default) {
      b.from_default(field, fallback, kMegatron, std::string("--") + name + " default " + std::to_string(fallback), kArguments);
    }
    return fallback;
  };
  if (c.run.command) {
    // Megatron's other model scripts train what no supported family describes
    const std::string& script = c.run.command->script;
    for (const char* other : {"pretrain_bert", "pretrain_t5", "pretrain_vision", "pretrain_ict",
                              "pretrain_retro", "pretrain_vlm"}) {
      if (script.find(other) != std::string::npos) {
        throw Error(MEMEST_ERR_UNSUPPORTED, "files",
                    c.run.command_file->name + " line " + std::to_string(c.run.command->line) +
                        ": " + script + " trains an encoder or a multimodal model; memest "
                        "estimates decoder-only language models (pretrain_gpt.py, pretrain_mamba.py)");
      }
    }
  }
  b.derived("training.framework", "megatron", "a Megatron-LM launch (pretrain_*.py)");
  const int64_t tp = integer("tensor-model-parallel-size", "parallel.tp", 1);
  const int64_t pp = integer("pipeline-model-parallel-size", "parallel.pp", 1);
  integer("context-parallel-size", "parallel.cp", 1);
  integer("expert-model-parallel-size", "parallel.ep", 1);
  integer("expert-tensor-parallel-size", "parallel.etp", 0, false);
  {
    const Setting* sp = nullptr;
    bool seen = false;
    const bool on = a.flag("sequence-parallel", &seen, &sp);
    // Megatron turns sequence parallelism off at tp 1 (arguments.py validate_args)
    if (seen) b.from_file("parallel.sp", on && tp > 1, *sp);
    else b.from_default("parallel.sp", false, kMegatron, "--sequence-parallel off", kArguments);
  }
  const Setting* nemo_dfa = nullptr;  // NeMo 1's optim.name distributed_fused_adam (Apex)
  {
    const Setting* at = nullptr;
    bool seen = false;
    const bool dist = a.flag("use-distributed-optimizer", &seen, &at);
    const Setting* mfsdp = nullptr;
    bool mfsdp_seen = false;
    const bool megatron_fsdp = a.flag("use-megatron-fsdp", &mfsdp_seen, &mfsdp);
    if (megatron_fsdp) {
      // Megatron-FSDP shards by --data-parallel-sharding-strategy: optim (ZeRO-1),
      // optim_grads (ZeRO-2), optim_grads_params (ZeRO-3, the default)
      // (megatron/core/distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py)
      const Setting* strategy = a.take("data-parallel-sharding-strategy");
      const std::string st = strategy ? string_of(*strategy) : "optim_grads_params";
      const int z = st == "optim" ? 1 : st == "optim_grads" ? 2 : st == "no_shard" ? 0 : 3;
      b.from_file("parallel.zero", z, strategy ? *strategy : *mfsdp);
    } else if (seen) {
      b.from_file("parallel.zero", dist ? 1 : 0, *at);
    } else if (const Setting* opt = a.take("optim.name");
               opt && string_of(*opt) == "distributed_fused_adam" && (nemo_dfa = opt)) {
      // a NeMo 1 config's model.optim.name: NeMo's DistributedFusedAdam shards the optimizer
      // states and the fp32 main parameters over the data-parallel group
      // (nemo/core/optim/distributed_adam.py), as Megatron's distributed optimizer does
      b.from_file("parallel.zero", 1, *opt);
    } else {
      b.from_default("parallel.zero", 0, kMegatron, "--use-distributed-optimizer off", kArguments);
    }
  }
  // virtual pipeline: --num-layers-per-virtual-pipeline-stage N or
  // --num-virtual-stages-per-pipeline-rank V
  const int64_t layers = integer("num-layers", nullptr, 0);
  if (const Setting* v = a.take("num-virtual-stages-per-pipeline-rank")) {
    b.from_file("parallel.vpp", integer_of(*v), *v);
  } else if (const Setting* per_stage = a.take("num-layers-per-virtual-pipeline-stage")) {
    const int64_t per = integer_of(*per_stage);
    if (per <= 0 || layers <= 0 || pp <= 0 || layers % (pp * per) != 0) {
      throw Error(MEMEST_ERR_INVALID_ARGUMENT, per_stage->file + ":" + per_stage->key,
                  where(*per_stage) + ": " + std::to_string(per) +
                      " layers per virtual stage do not divide " + std::to_string(layers) +
                      " layers over pp " + std::to_string(pp));
    }
    b.from_file("parallel.vpp", layers / (pp * per), *per_stage);
  }
  if (const Setting* v = a.take("decoder-first-pipeline-num-layers")) {
    b.from_file("parallel.first_stage_layers", integer_of(*v), *v);
  }
  if (const Setting* v = a.take("decoder-last-pipeline-num-layers")) {
    b.from_file("parallel.last_stage_layers", integer_of(*v), *v);
  }
  if (const Setting* v = a.take("pipeline-model-parallel-layout")) {
    b.from_file("parallel.pipeline_layout", string_of(*v), *v);
  }

  // batch, sequence
  if (const Setting* v = a.take("micro-batch-size")) {
    b.from_file("training.micro_batch", integer_of(*v), *v);
  } else {
    b.from_default("training.micro_batch", 1, kMegatron, "--micro-batch-size (None: 1 per step)", kArguments);
  }
  if (const Setting* v = a.take("global-batch-size")) b.from_file("training.global_batch", integer_of(*v), *v);
  if (const Setting* v = a.take("seq-length")) b.from_file("training.seq_len", integer_of(*v), *v);
  else if (const Setting* e = a.take("encoder-seq-length")) b.from_file("training.seq_len", integer_of(*e), *e);

  // recomputation: Megatron's --recompute-*, or NeMo 1's model.activations_checkpoint_* (NeMo
  // passes them on as recompute_granularity, recompute_method and recompute_num_layers:
  // nemo/collections/nlp/models/language_modeling/megatron_base_model.py
  // build_transformer_config); a null granularity (Megatron-Bridge's and NeMo's YAML, Megatron's
  // default None) is no recomputation
  const Setting* granularity = a.take("recompute-granularity");
  if (!granularity) granularity = a.take("activations_checkpoint_granularity");
  const Setting* null_granularity = nullptr;
  if (granularity && granularity->value.is_null()) {
    null_granularity = granularity;
    granularity = nullptr;
  }
  auto either = [&](const char* megatron, const char* nemo) {
    const Setting* s = a.take(megatron);
    if (!s) s = a.take(nemo);
    return s && !s->value.is_null() ? s : nullptr;
  };
  if (const Setting* v = granularity) {
    const std::string g = string_of(*v);
    if (g != "full" && g != "selective") throw Error(MEMEST_ERR_INVALID_ARGUMENT, v->file + ":" + v->key, where(*v) + ": must be full or selective, got \"" + echo(g) + "\"");
    b.from_file("training.recompute", g, *v);
    if (g == "full") {
      const Setting* method = either("recompute-method", "activations_checkpoint_method");
      const Setting* num = either("recompute-num-layers", "activations_checkpoint_num_layers");
      if (method && string_of(*method) == "block" && num) {
        b.warn(*num, "--recompute-method block with --recompute-num-layers " + string_of(*num) +
                         ": only that many layers per stage are recomputed; memest recomputes "
                         "every layer, so the activations are too small");
      } else if (method && string_of(*method) == "uniform" && num && integer_of(*num) > 1) {
        b.warn(*num, "--recompute-method uniform with --recompute-num-layers " + string_of(*num) +
                         ": checkpoints every group of layers; memest checkpoints every layer");
      }
    }
  } else if (null_granularity) {
    b.from_file("training.recompute", "none", *null_granularity);
  } else {
    b.from_default("training.recompute", "none", kMegatron, "--recompute-granularity None", kArguments);
  }
  if (const Setting* v = a.take("recompute-activations")) {
    if (boolean_of(*v)) b.from_file("training.recompute", "selective", *v);
  }
  if (const Setting* v = a.take("recompute-modules")) {
    // --recompute-modules core_attn moe_act ... (nargs='*'; a YAML list in Megatron-Bridge /
    // NeMo 2): the request reads the names and refuses an unknown one by its index
    json names = json::array();
    if (v->value.is_array()) {
      for (const json& n : v->value) {
        if (!n.is_string()) {
          throw Error(MEMEST_ERR_TYPE, v->file + ":" + v->key, where(*v) + ": must be a list of module names");
        }
        names.push_back(n);
      }
    } else {
      names.push_back(string_of(*v));
    }
    if (!names.empty()) b.from_file("training.recompute_modules", names, *v);
  }

  // precision: --bf16 / --fp16 store bf16/fp16 weights beside the fp32 main copy (the
  // distributed optimizer's); without either Megatron trains in fp32
  {
    bool bf16_seen = false, fp16_seen = false;
    const Setting *bf = nullptr, *fp = nullptr;
    const bool bf16 = a.flag("bf16", &bf16_seen, &bf);
    const bool fp16 = a.flag("fp16", &fp16_seen, &fp);
    // A NeMo 1 config says trainer.precision (bf16, bf16-mixed, 16, 16-mixed, 32) and
    // model.megatron_amp_O2 (O2: 16-bit weights beside the optimizer's fp32 main copy, as
    // Megatron's --bf16; nemo/collections/nlp/parts/megatron_trainer_builder.py)
    std::string nemo;  // "bf16" or "fp16" from trainer.precision
    const Setting* prec = (bf16 || fp16) ? nullptr : a.take("precision");
    if (prec) {
      const std::string p = string_of(*prec);
      if (p.rfind("bf16", 0) == 0) nemo = "bf16";
      else if (p == "16" || p.rfind("16-", 0) == 0) nemo = "fp16";
      if (!nemo.empty() && !a.flag("megatron_amp_O2")) {
        b.warn(*prec, "mixed precision without megatron_amp_O2 keeps fp32 weights under "
                      "autocast, which framework megatron does not model: counted as 16-bit "
                      "weights beside an fp32 main copy (megatron_amp_O2)");
      }
    }
    if (bf16) b.from_file("training.param_dtype", "bf16", *bf);
    else if (fp16) b.from_file("training.param_dtype", "fp16", *fp);
    else if (!nemo.empty()) b.from_file("training.param_dtype", nemo, *prec);
    else b.from_default("training.param_dtype", "fp32", kMegatron, "--bf16 and --fp16 off: fp32 training", kArguments);
    // main_grad: fp16 under --fp16; fp32 under --bf16 (--accumulate-allreduce-grads-in-fp32)
    // unless --grad-reduce-in-bf16
    const Setting* reduce16 = nullptr;
    bool reduce16_seen = false;
    const bool grad_bf16 = a.flag("grad-reduce-in-bf16", &reduce16_seen, &reduce16);
    // NeMo 1: model.optim.grad_sync_dtype bf16 keeps the main gradients in bf16
    // (megatron_gpt_model.py: grad_reduce_in_fp32 = grad_sync_dtype == fp32)
    const Setting* sync = nemo.empty() ? nullptr : a.take("optim.grad_sync_dtype");
    if (fp16) b.from_file("training.grad_dtype", "fp16", *fp);
    else if (nemo == "fp16") b.from_file("training.grad_dtype", "fp16", *prec);
    else if (nemo == "bf16" && sync && string_of(*sync) == "bf16") b.from_file("training.grad_dtype", "bf16", *sync);
    else if (nemo == "bf16") b.from_default("training.grad_dtype", "fp32", "NeMo", "optim.grad_sync_dtype fp32 (main gradients in fp32)", "nemo/collections/nlp/models/language_modeling/megatron_gpt_model.py");
    else if (bf16 && grad_bf16) b.from_file("training.grad_dtype", "bf16", *reduce16);
    else if (bf16) b.from_default("training.grad_dtype", "fp32", kMegatron, "--accumulate-allreduce-grads-in-fp32 under --bf16", kArguments);
    else b.from_default("training.grad_dtype", "fp32", kMegatron, "fp32 training", kArguments);
  }
  if (const Setting* v = a.take("fp8-format")) {
    b.from_file("training.fp8", true, *v);
    // --fp8-param-gather keeps the weights in fp8 (Transformer Engine's Float8Tensor)
    if (const Setting* g = a.take("fp8-param-gather"); g && boolean_of(*g)) {
      b.from_file("training.param_dtype", "fp8", *g);
    }
  }
  if (!b.has("training.fp8")) {
    // NeMo 1: model.fp8 (Transformer Engine fp8, fp8_hybrid / fp8_e4m3 choose the format) and
    // model.fp8_params (fp8_model_init: Float8Tensor weights, fp8_param_gather;
    // nemo/collections/nlp/models/language_modeling/megatron_gpt_model.py)
    if (const Setting* v = a.take("fp8")) {
      const std::string s = string_of(*v);
      if (s == "true" || s == "True" || s == "1" || s == "hybrid" || s == "e4m3") {
        b.from_file("training.fp8", true, *v);
        if (const Setting* g = a.take("fp8_params"); g && boolean_of(*g)) {
          b.from_file("training.param_dtype", "fp8", *g);
        }
      }
    }
  }
  map_optimizer_storage(a, b, nemo_dfa);
  if (const Setting* v = a.take("fp4-format")) {
    // --fp4-format e2m1 (megatron/training/arguments.py): Transformer Engine's NVFP4 recipe.
    // --first-last-layers-bf16 keeps end layers out of it, which is not modelled: every layer
    // is counted in NVFP4 (its weight copies and its quantised saved inputs).
    b.from_file("training.fp4", true, *v);
    if (const Setting* g = a.take("first-last-layers-bf16"); g && boolean_of(*g)) {
      b.warn(*g, "--first-last-layers-bf16 keeps the first and last layers in bf16, which is "
                 "not modelled: every layer is counted in NVFP4");
    }
  }
  if (const Setting* v = a.take("optimizer")) {
    const std::string o = string_of(*v);
    if (o == "adam") b.from_file("training.optimizer", "adam", *v);
    else if (o == "sgd") b.from_file("training.optimizer", "sgd_momentum", *v);
    else b.warn(*v, "optimizer " + o + " is not modelled: held as Adam");
  }
  if (const Setting* v = a.take("moe-token-dispatcher-type")) {
    if (string_of(*v) == "flex") b.from_file("training.moe_dispatcher", "deepep", *v);
  }
  if (const Setting* v = a.take("moe-expert-capacity-factor")) {
    b.from_file("training.moe_capacity_factor", number_of(*v), *v);
  }
  for (const char* name : {"cpu-offloading", "optimizer-cpu-offload"}) {
    if (const Setting* v = a.take(name)) {
      if (boolean_of(*v)) b.warn(*v, std::string("--") + name + " is not modelled for Megatron");
    }
  }

  // the model: --model (a flag of memest) wins; else the shape flags
  const Setting* hidden = a.take("hidden-size");
  if (layers > 0 && hidden) {
    json m = json::object();
    m["num_hidden_layers"] = layers;
    m["hidden_size"] = integer_of(*hidden);
    const Setting* heads = a.take("num-attention-heads");
    if (heads) m["num_attention_heads"] = integer_of(*heads);
    bool gqa_seen = false;
    if (a.flag("group-query-attention", &gqa_seen)) {
      if (const Setting* g = a.take("num-query-groups")) m["num_key_value_heads"] = integer_of(*g);
    } else if (heads) {
      m["num_key_value_heads"] = integer_of(*heads);
    }
    if (const Setting* kv = a.take("kv-channels")) m["head_dim"] = integer_of(*kv);
    const bool swiglu = a.flag("swiglu");
    const Setting* ffn = a.take("ffn-hidden-size");
    m["intermediate_size"] = ffn ? integer_of(*ffn) : 4 * integer_of(*hidden);
    bool untie_seen = false;
    m["tie_word_embeddings"] = !a.flag("untie-embeddings-and-output-weights", &untie_seen);
    if (const Setting* v = a.take("max-position-embeddings")) m["max_position_embeddings"] = integer_of(*v);
    else if (b.has("training.seq_len")) m["max_position_embeddings"] = *b.get("training.seq_len");
    if (!swiglu) {
      m["family"] = "gpt";
    }
    if (const Setting* e = a.take("num-experts")) {
      m["num_local_experts"] = integer_of(*e);
      const Setting* k = a.take("moe-router-topk");
      m["num_experts_per_tok"] = k ? integer_of(*k) : 2;
      if (const Setting* w = a.take("moe-ffn-hidden-size")) m["moe_intermediate_size"] = integer_of(*w);
      else m["moe_intermediate_size"] = m["intermediate_size"];
      if (const Setting* sh = a.take("moe-shared-expert-intermediate-size")) {
        m["shared_expert_intermediate_size"] = integer_of(*sh);
        m["n_shared_experts"] = 1;
      }
    }
    if (a.flag("multi-latent-attention")) {
      if (const Setting* q = a.take("q-lora-rank")) m["q_lora_rank"] = integer_of(*q);
      if (const Setting* kv = a.take("kv-lora-rank")) m["kv_lora_rank"] = integer_of(*kv);
      if (const Setting* q = a.take("qk-head-dim")) m["qk_nope_head_dim"] = integer_of(*q);
      if (const Setting* q = a.take("qk-pos-emb-head-dim")) m["qk_rope_head_dim"] = integer_of(*q);
      if (const Setting* v = a.take("v-head-dim")) m["v_head_dim"] = integer_of(*v);
    }
    // the vocabulary: --vocab-size, or the tokenizer's, padded to a multiple of
    // --make-vocab-size-divisible-by x tp (megatron/training/tokenizer/tokenizer.py
    // _vocab_size_with_padding)
    int64_t vocab = 0;
    const Setting* vocab_at = a.take("vocab-size");
    if (vocab_at) vocab = integer_of(*vocab_at);
    const Setting* tok = a.take("tokenizer-type");
    if (!vocab && tok) vocab = tokenizer_vocab(string_of(*tok));
    // --vocab-file with --merge-file and no type: the GPT-2 BPE files of Megatron's examples
    if (!vocab && !tok && a.take("merge-file")) vocab = tokenizer_vocab("GPT2BPETokenizer");
    if (!vocab && tok) {
      // HuggingFaceTokenizer --tokenizer-model meta-llama/...: the vocabulary of that model
      if (const Setting* tm = a.take("tokenizer-model")) {
        if (auto match = model_by_hf_id(string_of(*tm), c.options.hf_home); match && match->model.is_string()) {
          vocab = find_model_preset(match->model.get<std::string>(), "model").model.vocab_size;
        }
      }
    }
    if (vocab > 0) {
      // padded once the tensor-parallel size is final (a --set may change it: import.cpp)
      const Setting* div = a.take("make-vocab-size-divisible-by");
      b.megatron_vocab = vocab;
      b.megatron_vocab_divisor = div ? integer_of(*div) : 128;
      if (b.megatron_vocab_divisor <= 0) r_bad_divisor(*div);
      m["vocab_size"] = vocab;
    }
    if (m.contains("vocab_size")) {
      b.from_file("model", m, *hidden);
      b.origins["model"]["rule"] = "the shape flags (--num-layers, --hidden-size, ...) as config.json fields";
    } else {
      b.origins["model"] = {{"from", "unresolved"}, {"name", "the script's shape flags (no --vocab-size or known tokenizer)"},
                            {"file", hidden->file}, {"key", hidden->key}, {"line", hidden->line}};
    }
  }
  if (c.run.command) {
    static constexpr const char* kMegatronIgnored[] = {
        "--data-path", "--vocab-file", "--merge-file", "--save", "--load", "--tensorboard-dir",
        "--log-", "--eval-", "--lr", "--min-lr", "--weight-decay", "--clip-grad", "--adam-",
        "--init-method-std", "--train-iters", "--train-samples", "--split", "--save-interval",
        "--exit-", "--distributed-backend", "--wandb", "--seed", "--no-", "--attention-dropout",
        "--hidden-dropout", "--position-embedding-type", "--rotary-", "--normalization",
        "--use-rotary", "--data-cache-path", "--tokenizer-", "--mock-data", "--use-mcore-models",
        "--transformer-impl", "--disable-bias-linear", "--overlap-", "--use-flash-attn",
        "--attention-backend", "--timing-", "--ckpt-", "--dist-ckpt", "--use-dist-ckpt",
        "--manual-gc", "--bias-", "--apply-", "--moe-aux-loss", "--moe-router-load-balancing",
        "--moe-grouped-gemm", "--moe-z-loss", "--moe-router-", "--moe-permute", "--qk-layernorm",
        "--rope-", "--ffn-hidden-size", "--norm-epsilon", "--swiglu", "--untie",
        "--group-query-attention", "--num-query-groups", "--num-attention-heads", "--kv-channels",
        "--make-vocab-size-divisible-by", "--max-position-embeddings", "--num-experts",
        "--moe-ffn-hidden-size", "--moe-shared-expert", "--multi-latent-attention",
        "--q-lora-rank", "--kv-lora-rank", "--qk-head-dim", "--qk-pos-emb-head-dim",
        "--v-head-dim", "--lr-", "--accumulate-allreduce-grads-in-fp32", "--fp8-", "--tp-comm",
        "--num-workers", "--dataloader-type", "--use-checkpoint-args", "--finetune",
        "--recompute-method", "--recompute-num-layers", "--num-layers", "--hidden-size",
        "--override-opt_param-scheduler", "--profile", "--nsys", "--record-memory-history",
        "--cross-entropy-loss-fusion", "--calculate-per-token-loss", "--async-", "--full-validation",
        "--eod-mask-loss", "--reset-", "--global-batch-size", "--kv-channels"};
    warn_unread_options(b, c.run.command->options, kMegatronIgnored, std::size(kMegatronIgnored));
  }
}

// ---------------------------------------------------------------- HF TrainingArguments

namespace {
constexpr const char* kHf = "transformers";
constexpr const char* kTrainingArgs = "src/transformers/training_args.py";
}  // namespace

void apply_training_arguments(MapContext& c, const Settings& args, const std::string& prefix) {
  RequestBuilder& b = c.b;
  auto take = [&](const char* name) { return args.take(prefix + name); };
  if (const Setting* v = take("per_device_train_batch_size")) {
    b.from_file("training.micro_batch", integer_of(*v), *v);
  } else if (!b.has("training.micro_batch")) {
    b.from_default("training.micro_batch", 8, kHf, "TrainingArguments.per_device_train_batch_size = 8", kTrainingArgs);
  }
  if (const Setting* v = take("gradient_accumulation_steps")) {
    b.accumulation = integer_of(*v);
    b.accumulation_origin = {{"file", v->file}, {"key", v->key}, {"line", v->line}};
  }
  if (const Setting* v = take("gradient_checkpointing")) {
    b.from_file("training.recompute", boolean_of(*v) ? "full" : "none", *v);
  } else if (!b.has("training.recompute")) {
    b.from_default("training.recompute", "none", kHf, "TrainingArguments.gradient_checkpointing = False", kTrainingArgs);
  }
  // precision: the Trainer loads the model in fp32 unless the script says otherwise, and
  // --bf16 / --fp16 autocast around it (amp)
  const Setting* bf = take("bf16");
  const Setting* fp = take("fp16");
  if ((bf && boolean_of(*bf)) || (fp && boolean_of(*fp))) {
    b.from_file("training.autocast", true, bf && boolean_of(*bf) ? *bf : *fp);
  }
  if (!b.has("training.param_dtype")) {
    b.from_default("training.param_dtype", "fp32", kHf,
                   "from_pretrained loads fp32 weights unless torch_dtype is given",
                   "src/transformers/modeling_utils.py");
    b.from_default("training.grad_dtype", "fp32", kHf, "gradients in the parameters' dtype",
                   "src/transformers/modeling_utils.py");
  }
  if (const Setting* v = take("optim")) {
    const std::string o = string_of(*v);
    const std::string mapped = hf_optimizer(o);
    if (!mapped.empty()) {
      b.from_file("training.optimizer", mapped, *v);
    } else {
      b.warn(*v, "optimizer " + o + " is not modelled: held as AdamW");
    }
  } else if (!b.has("training.optimizer")) {
    b.from_default("training.optimizer", "adamw", kHf,
                   "TrainingArguments.optim = \"adamw_torch_fused\" (torch >= 2.8; fused AdamW)",
                   kTrainingArgs);
  }
  if (const Setting* v = take("torch_compile")) {
    if (boolean_of(*v)) b.from_file("training.compile", "model", *v);
  }
  // use_liger_kernel: the Trainer patches the model with Liger's defaults
  // (_apply_liger_kernel_to_instance: rms_norm, swiglu / geglu, fused_linear_cross_entropy), and
  // passes the labels in training, so the patched forward never materialises the logits
  // (liger_kernel/transformers/model/llama.py lce_forward: skip_logits)
  if (const Setting* v = take("use_liger_kernel"); v && boolean_of(*v)) {
    b.from_file("training.use_liger_kernel", true, *v);
    b.from_file("training.loss", "linear_fused", *v);
    if (const Setting* k = take("liger_kernel_config"); k && !k->value.is_null()) {
      b.warn(*k, "liger_kernel_config is not read: Liger's defaults (RMSNorm, SwiGLU/GeGLU, fused "
                 "linear cross-entropy) are modelled");
    }
  }
  if (const Setting* v = take("max_seq_length")) b.from_file("training.seq_len", integer_of(*v), *v);
  if (const Setting* v = take("block_size")) b.from_file("training.seq_len", integer_of(*v), *v);
  if (const Setting* v = take("model_max_length")) {
    if (!b.has("training.seq_len")) b.from_file("training.seq_len", integer_of(*v), *v);
  }
  if (const Setting* v = take("model_name_or_path")) set_model_by_name(c, *v, string_of(*v));
  // --fsdp "full_shard auto_wrap [offload]" (TrainingArguments.fsdp, FSDP1)
  if (const Setting* v = take("fsdp")) {
    const std::string f = v->value.is_array() ? v->value.dump() : string_of(*v);
    if (!f.empty() && f != "false" && f != "\"\"") {
      b.from_file("training.framework", "fsdp1", *v);
      const bool grad_op = f.find("shard_grad_op") != std::string::npos;
      b.from_file("parallel.zero", grad_op ? 2 : 3, *v);
      if (f.find("offload") != std::string::npos) b.from_file("training.offload.params", true, *v);
      if (f.find("hybrid_shard") != std::string::npos) b.warn(*v, "hybrid_shard: memest shards over every data-parallel rank");
    }
  }
}

void map_hf_trainer(MapContext& c) {
  RequestBuilder& b = c.b;
  if (!c.run.command) {
    // TrainingArguments in a YAML/JSON file (e.g. a LLaMA-Factory-free HfArgumentParser file)
    b.from_default("training.framework", "pytorch", kHf, "the Trainer wraps the model in DDP", kTrainingArgs);
    apply_training_arguments(c, c.run.settings, "");
  } else {
    b.from_default("training.framework", "pytorch", kHf,
                   "the Trainer wraps the model in DistributedDataParallel", kTrainingArgs);
    apply_training_arguments(c, c.run.command->options, "--");
    if (c.run.command->script.find("run_clm") != std::string::npos) b.clm_block_size = true;
  }
  b.from_default("parallel.tp", 1, kHf, "data parallel only", kTrainingArgs);
  b.from_default("parallel.pp", 1, kHf, "data parallel only", kTrainingArgs);
  if (!b.has("parallel.zero")) b.from_default("parallel.zero", 0, kHf, "DDP keeps whole states", kTrainingArgs);
  if (c.run.accelerate) apply_accelerate(c, *c.run.accelerate);
  // --deepspeed ds_config.json: the JSON given beside the script
  const Setting* ds_flag = c.run.command ? c.run.command->options.take("--deepspeed") : nullptr;
  if (c.run.deepspeed) {
    apply_deepspeed(c, *c.run.deepspeed);
  } else if (ds_flag) {
    throw Error(MEMEST_ERR_MISSING_FIELD, "files",
                where(*ds_flag) + " names the DeepSpeed config " + string_of(*ds_flag) +
                    ": give that file too (memest import script.sh ds_config.json)");
  }
  if (c.run.command) {
    static constexpr const char* kHfIgnored[] = {
        "--output_dir", "--overwrite_output_dir", "--do_train", "--do_eval", "--dataset_",
        "--learning_rate", "--num_train_epochs", "--max_steps", "--logging_", "--save_",
        "--eval_", "--evaluation_strategy", "--warmup_", "--lr_scheduler_type", "--weight_decay",
        "--report_to", "--seed", "--run_name", "--per_device_eval_batch_size", "--tokenizer_name",
        "--cache_dir", "--train_file", "--validation_file", "--preprocessing_num_workers",
        "--dataloader_", "--adam_", "--max_grad_norm", "--push_to_hub", "--hub_", "--deepspeed",
        "--config_name", "--trust_remote_code", "--torch_dtype", "--ddp_", "--tf32",
        "--remove_unused_columns", "--streaming", "--overwrite_cache", "--validation_split_percentage",
        "--low_cpu_mem_usage", "--use_fast_tokenizer", "--fp16_opt_level", "--disable_tqdm",
        "--max_train_samples", "--max_eval_samples", "--local_rank", "--fsdp_config",
        "--fsdp_transformer_layer_cls_to_wrap", "--model_name_or_path"};
    warn_unread_options(b, c.run.command->options, kHfIgnored, std::size(kHfIgnored));
  }
}

// ---------------------------------------------------------------- DeepSpeed JSON

namespace {
constexpr const char* kDeepSpeed = "DeepSpeed";
constexpr const char* kDsConfig = "deepspeed/runtime/zero/config.py";

bool is_auto(const Setting& s) { return s.value.is_string() && s.value.get<std::string>() == "auto"; }
}  // namespace

void apply_deepspeed(MapContext& c, const Settings& ds) {
  RequestBuilder& b = c.b;
  b.derived("training.framework", "deepspeed", "a DeepSpeed config runs the DeepSpeed engine");
  b.origins["training.framework"]["file"] = c.run.deepspeed_file ? c.run.deepspeed_file->name : "";
  if (const Setting* v = ds.take("zero_optimization.stage")) {
    b.from_file("parallel.zero", integer_of(*v), *v);
  } else {
    b.from_default("parallel.zero", 0, kDeepSpeed, "ZeroStageEnum.disabled (stage 0)", kDsConfig);
  }
  for (const char* key : {"zero_optimization.offload_optimizer.device", "zero_optimization.cpu_offload"}) {
    if (const Setting* v = ds.take(key)) {
      const std::string d = v->value.is_boolean() ? (v->value.get<bool>() ? "cpu" : "none") : string_of(*v);
      if (d == "cpu" || d == "nvme") b.from_file("training.offload.optimizer", true, *v);
    }
  }
  if (const Setting* v = ds.take("zero_optimization.offload_param.device")) {
    const std::string d = string_of(*v);
    if (d == "cpu" || d == "nvme") b.from_file("training.offload.params", true, *v);
  }
  // micro-batch and accumulation: numbers, or "auto" = the Trainer's (already in the builder)
  if (const Setting* v = ds.take("train_micro_batch_size_per_gpu")) {
    if (!is_auto(*v)) b.from_file("training.micro_batch", integer_of(*v), *v);
  }
  if (const Setting* v = ds.take("gradient_accumulation_steps")) {
    if (!is_auto(*v)) {
      b.accumulation = integer_of(*v);
      b.accumulation_origin = {{"file", v->file}, {"key", v->key}, {"line", v->line}};
    }
  }
  if (const Setting* v = ds.take("train_batch_size")) {
    if (!is_auto(*v)) b.from_file("training.global_batch", integer_of(*v), *v);
  }
  // precision: bf16/fp16 enabled stores 16-bit weights beside DeepSpeed's fp32 master
  // (deepspeed/runtime/bf16_optimizer.py, fp16/fused_optimizer.py); "auto" follows --bf16/--fp16
  for (const char* kind : {"bf16", "fp16"}) {
    if (const Setting* v = ds.take(std::string(kind) + ".enabled")) {
      bool on = false;
      if (is_auto(*v)) {
        const json* autocast = b.get("training.autocast");
        on = autocast && autocast->is_boolean() && autocast->get<bool>() &&
             b.origins["training.autocast"].value("key", "").find(kind) != std::string::npos;
      } else {
        on = boolean_of(*v);
      }
      if (on) {
        b.from_file("training.param_dtype", kind, *v);
        b.erase("training.grad_dtype");
        b.erase("training.autocast");
      }
    }
  }
  // 16-bit masters (1.15; deepspeed/runtime/precision_config.py): bf16_master_weights_and_grads
  // (fp16_master_weights_and_grads) keeps ZeRO's master partition in 16 bits,
  // bf16_optimizer_states the moments too
  for (const char* kind : {"bf16", "fp16"}) {
    const std::string key = std::string(kind) + "." + kind + "_master_weights_and_grads";
    if (const Setting* v = ds.take(key); v && boolean_of(*v)) {
      b.from_file("training.master_weights", kind, *v);
    }
  }
  if (const Setting* v = ds.take("bf16.bf16_optimizer_states"); v && boolean_of(*v)) {
    b.from_file("training.optimizer_state_dtype", "bf16", *v);
  }
  if (const Setting* v = ds.take("optimizer.type")) {
    const std::string t = string_of(*v);
    const Setting* torch_adam = ds.take("optimizer.params.torch_adam");
    if ((t == "AdamW" || t == "adamw" || t == "Adam" || t == "adam") && torch_adam && boolean_of(*torch_adam)) {
      // torch_adam: torch.optim.AdamW, foreach on CUDA (deepspeed/runtime/engine.py
      // _configure_basic_optimizer)
      b.from_file("training.optimizer", "adamw_foreach", *torch_adam);
    } else if (t == "AdamW" || t == "adamw") {
      b.from_file("training.optimizer", "adamw", *v);
    } else if (t == "Adam" || t == "adam" || t == "FusedAdam") {
      b.from_file("training.optimizer", "adam", *v);
    } else {
      b.warn(*v, "DeepSpeed optimizer " + t + " is not modelled: held as Adam");
    }
  }
  // bucket sizes: numbers, or "auto" = the Trainer's from the model's hidden size
  // (transformers/integrations/deepspeed.py HfTrainerDeepSpeedConfig.trainer_config_finalize)
  const std::pair<const char*, const char*> kBuckets[] = {
      {"zero_optimization.reduce_bucket_size", "training.buckets.reduce_bucket_size"},
      {"zero_optimization.allgather_bucket_size", "training.buckets.allgather_bucket_size"},
      {"zero_optimization.stage3_prefetch_bucket_size", "training.buckets.stage3_prefetch_bucket_size"},
      {"zero_optimization.stage3_max_live_parameters", "training.buckets.stage3_max_live_parameters"},
      {"zero_optimization.stage3_param_persistence_threshold", "training.buckets.stage3_param_persistence_threshold"}};
  for (const auto& [key, field] : kBuckets) {
    // DeepSpeed's ZeRO config also takes the stage3 keys without their prefix (pydantic
    // aliases in deepspeed/runtime/zero/config.py)
    const std::string alias = std::string("zero_optimization.") +
                              (std::string(key).rfind("zero_optimization.stage3_", 0) == 0
                                   ? std::string(key).substr(std::string("zero_optimization.stage3_").size())
                                   : std::string("-"));
    const Setting* v = ds.take(key);
    if (!v) v = ds.take(alias);
    if (v) {
      if (is_auto(*v)) {
        b.pending_auto.push_back({field, *v});
      } else {
        b.from_file(field, number_of(*v), *v);
      }
    }
  }
  if (const Setting* v = ds.take("activation_checkpointing.cpu_checkpointing")) {
    if (boolean_of(*v)) b.from_file("training.offload.activations", true, *v);
  }
  static constexpr const char* kDsIgnored[] = {
      "optimizer.params", "scheduler", "steps_per_print", "wall_clock_breakdown", "gradient_clipping",
      "zero_optimization.overlap_comm", "zero_optimization.contiguous_gradients",
      "zero_optimization.sub_group_size", "zero_optimization.reduce_scatter",
      "zero_optimization.allgather_partitions", "zero_optimization.stage3_gather_16bit_weights_on_model_save",
      "zero_optimization.stage3_gather_fp16_weights_on_model_save", "zero_optimization.round_robin_gradients",
      "zero_optimization.offload_optimizer.pin_memory", "zero_optimization.offload_param.pin_memory",
      "zero_optimization.offload_optimizer.nvme_path", "zero_optimization.offload_param.nvme_path",
      "zero_optimization.offload_optimizer.buffer_count", "zero_optimization.offload_param.buffer_count",
      "zero_optimization.offload_optimizer.fast_init", "zero_optimization.offload_param.buffer_size",
      "zero_optimization.offload_param.max_in_cpu", "zero_optimization.offload_optimizer.ratio",
      "fp16.loss_scale", "fp16.initial_scale_power", "fp16.loss_scale_window", "fp16.hysteresis",
      "fp16.min_loss_scale", "fp16.auto_cast", "fp16.consecutive_hysteresis", "bf16.immediate_grad_update",
      "zero_allow_untested_optimizer", "tensorboard", "wandb", "csv_monitor", "flops_profiler",
      "comms_logger", "data_efficiency", "zero_force_ds_cpu_optimizer", "gradient_predivide_factor",
      "prescale_gradients", "communication_data_type", "amp.", "activation_checkpointing.",
      "aio.", "checkpoint.", "dump_state", "memory_breakdown", "zero_optimization.stage3_max_reuse_distance",
      "zero_optimization.ignore_unused_parameters", "zero_optimization.load_from_fp32_weights",
      "zero_optimization.elastic_checkpoint", "zero_optimization.reduce_scatter"};
  warn_unread_options(b, ds, kDsIgnored, std::size(kDsIgnored));
}

void map_deepspeed_only(MapContext& c) {
  // A DeepSpeed JSON alone: its own numbers, and "auto" values from the Trainer's defaults.
  RequestBuilder& b = c.b;
  Run& run = const_cast<Run&>(c.run);
  if (!run.deepspeed) {
    run.deepspeed = std::move(run.settings);
    run.deepspeed_file = run.main;
  }
  b.from_default("parallel.tp", 1, kDeepSpeed, "data parallel only", kDsConfig);
  b.from_default("parallel.pp", 1, kDeepSpeed, "data parallel only", kDsConfig);
  Settings none;
  apply_training_arguments(c, none, "--");
  apply_deepspeed(c, *run.deepspeed);
}

// ---------------------------------------------------------------- accelerate

namespace {
constexpr const char* kAccelerate = "accelerate";
constexpr const char* kAccDataclasses = "src/accelerate/utils/dataclasses.py";
}  // namespace

void apply_accelerate(MapContext& c, const Settings& acc) {
  RequestBuilder& b = c.b;
  if (const Setting* v = acc.take("num_processes")) {
    if (!b.has("parallel.gpus") || b.origins["parallel.gpus"].value("from", "") != "file") {
      b.from_file("parallel.gpus", integer_of(*v), *v);
    }
  }
  const Setting* type = acc.take("distributed_type");
  const std::string t = type ? string_of(*type) : "NO";
  if (t == "FSDP") {
    const Setting* version = acc.take("fsdp_config.fsdp_version");
    const bool v2 = version && integer_of(*version) == 2;
    b.from_file("training.framework", v2 ? "fsdp" : "fsdp1", version ? *version : *type);
    // sharding: FSDP1 fsdp_sharding_strategy (FULL_SHARD, SHARD_GRAD_OP, NO_SHARD,
    // HYBRID_SHARD or 1-4), FSDP2 fsdp_reshard_after_forward
    if (const Setting* v = acc.take("fsdp_config.fsdp_sharding_strategy")) {
      const std::string st = string_of(*v);
      if (st == "FULL_SHARD" || st == "1") b.from_file("parallel.zero", 3, *v);
      else if (st == "SHARD_GRAD_OP" || st == "2") b.from_file("parallel.zero", 2, *v);
      else if (st == "NO_SHARD" || st == "3") b.from_file("parallel.zero", 0, *v);
      else if (st == "HYBRID_SHARD" || st == "4" || st == "HYBRID_SHARD_ZERO2" || st == "5") {
        b.from_file("parallel.zero", 3, *v);
        b.warn(*v, "hybrid sharding: memest shards over every data-parallel rank");
      } else {
        throw Error(MEMEST_ERR_INVALID_ARGUMENT, v->file + ":" + v->key,
                    where(*v) + ": must be FULL_SHARD, SHARD_GRAD_OP, NO_SHARD or HYBRID_SHARD, got \"" + echo(st) + "\"");
      }
    } else if (const Setting* r = acc.take("fsdp_config.fsdp_reshard_after_forward")) {
      b.from_file("parallel.zero", boolean_of(*r) ? 3 : 2, *r);
    } else {
      b.from_default("parallel.zero", 3, kAccelerate,
                     "FullyShardedDataParallelPlugin.sharding_strategy = FULL_SHARD", kAccDataclasses);
    }
    if (const Setting* v = acc.take("fsdp_config.fsdp_offload_params")) {
      if (boolean_of(*v)) {
        b.from_file("training.offload.params", true, *v);
        b.from_file("training.offload.optimizer", true, *v);
      }
    }
    if (const Setting* v = acc.take("fsdp_config.fsdp_activation_checkpointing")) {
      if (boolean_of(*v)) b.from_file("training.recompute", "full", *v);
    }
  } else if (t == "DEEPSPEED") {
    b.from_file("training.framework", "deepspeed", *type);
    if (const Setting* v = acc.take("deepspeed_config.zero_stage")) b.from_file("parallel.zero", integer_of(*v), *v);
    if (const Setting* v = acc.take("deepspeed_config.offload_optimizer_device")) {
      if (string_of(*v) == "cpu" || string_of(*v) == "nvme") b.from_file("training.offload.optimizer", true, *v);
    }
    if (const Setting* v = acc.take("deepspeed_config.offload_param_device")) {
      if (string_of(*v) == "cpu" || string_of(*v) == "nvme") b.from_file("training.offload.params", true, *v);
    }
    if (const Setting* v = acc.take("deepspeed_config.gradient_accumulation_steps")) {
      b.accumulation = integer_of(*v);
      b.accumulation_origin = {{"file", v->file}, {"key", v->key}, {"line", v->line}};
    }
    if (const Setting* v = acc.take("deepspeed_config.deepspeed_config_file")) {
      if (!c.run.deepspeed) {
        throw Error(MEMEST_ERR_MISSING_FIELD, "files",
                    where(*v) + " names the DeepSpeed config " + string_of(*v) +
                        ": give that file too");
      }
    }
  } else if (t == "MULTI_GPU" || t == "NO") {
    if (type) {
      b.from_file("training.framework", "pytorch", *type);
      b.from_file("parallel.zero", 0, *type);
      if (t == "NO" && !b.has("parallel.gpus")) b.from_file("parallel.gpus", 1, *type);
    } else {
      b.from_default("training.framework", "pytorch", kAccelerate, "distributed_type = NO", kAccDataclasses);
      b.from_default("parallel.zero", 0, kAccelerate, "distributed_type = NO", kAccDataclasses);
    }
  } else if (type) {
    throw Error(MEMEST_ERR_UNSUPPORTED, type->file + ":" + type->key,
                where(*type) + ": distributed_type " + echo(t) +
                    " is not modelled (MULTI_GPU, FSDP, DEEPSPEED or NO)");
  }
  // parallelism_config (accelerate >= 1.10, ParallelismConfig): cp and tp sizes; hybrid
  // sharding (dp_replicate_size > 1) has no request field and is refused
  if (const Setting* v = acc.take("parallelism_config.parallelism_config_cp_size")) {
    b.from_file("parallel.cp", integer_of(*v), *v);
  }
  if (const Setting* v = acc.take("parallelism_config.parallelism_config_tp_size")) {
    b.from_file("parallel.tp", integer_of(*v), *v);
  }
  if (const Setting* v = acc.take("parallelism_config.parallelism_config_dp_replicate_size"); v && integer_of(*v) > 1) {
    throw Error(MEMEST_ERR_UNSUPPORTED, v->file + ":" + v->key,
                where(*v) + ": hybrid sharding (" + string_of(*v) + " replicas of each shard group) is "
                "not modelled: memest shards the states over every data-parallel rank");
  }
  acc.take("parallelism_config.parallelism_config_dp_shard_size");
  // mixed_precision: bf16/fp16 autocast around fp32 weights; "no" trains in fp32
  if (const Setting* v = acc.take("mixed_precision")) {
    const std::string mp = string_of(*v);
    if (mp == "no") {
      if (b.get("training.framework") && *b.get("training.framework") != "fsdp") b.from_file("training.autocast", false, *v);
    } else if (mp == "fp8") {
      b.from_file("training.fp8", true, *v);
    }
  }
  if (const Setting* v = acc.take("dynamo_config.dynamo_backend")) {
    if (string_of(*v) != "NO") b.from_file("training.compile", "model", *v);
  }
  static constexpr const char* kAccIgnored[] = {
      "compute_environment", "debug", "downcast_bf16", "machine_rank", "main_training_function",
      "num_machines", "rdzv_backend", "same_network", "tpu_", "use_cpu", "main_process_",
      "gpu_ids", "enable_cpu_affinity", "fsdp_config.fsdp_auto_wrap_policy",
      "fsdp_config.fsdp_transformer_layer_cls_to_wrap", "fsdp_config.fsdp_backward_prefetch",
      "fsdp_config.fsdp_forward_prefetch", "fsdp_config.fsdp_state_dict_type",
      "fsdp_config.fsdp_sync_module_states", "fsdp_config.fsdp_cpu_ram_efficient_loading",
      "fsdp_config.fsdp_use_orig_params", "fsdp_config.fsdp_min_num_params",
      "fsdp_config.fsdp_backward_prefetch_policy", "deepspeed_config.zero3_init_flag",
      "deepspeed_config.zero3_save_16bit_model", "deepspeed_config.deepspeed_multinode_launcher",
      "deepspeed_config.gradient_clipping", "dynamo_config.", "megatron_lm_config"};
  warn_unread_options(b, acc, kAccIgnored, std::size(kAccIgnored));
}

void map_accelerate_only(MapContext& c) {
  RequestBuilder& b = c.b;
  Run& run = const_cast<Run&>(c.run);
  if (!run.accelerate) {
    run.accelerate = std::move(run.settings);
    run.accelerate_file = run.main;
  }
  b.from_default("parallel.tp", 1, kAccelerate, "data parallel only", kAccDataclasses);
  b.from_default("parallel.pp", 1, kAccelerate, "data parallel only", kAccDataclasses);
  // the config holds no batch, optimizer or precision of the model: the training script's
  b.derived("training.micro_batch", 1, "an accelerate config holds no batch size (the script's "
                                       "DataLoader): 1 unless --set training.micro_batch=N");
  b.derived("training.optimizer", "adamw", "an accelerate config names no optimizer: AdamW "
                                           "unless --set training.optimizer=...");
  b.derived("training.param_dtype", "fp32", "from_pretrained loads fp32 weights unless torch_dtype is given");
  b.derived("training.grad_dtype", "fp32", "gradients in the parameters' dtype");
  b.derived("training.recompute", "none", "no activation checkpointing unless the config or the script turns it on");
  b.warn("the accelerate config alone gives no micro-batch, optimizer or sequence: check "
         "training.micro_batch and training.optimizer, or give the launch script too");
  apply_accelerate(c, *run.accelerate);
  if (run.deepspeed) apply_deepspeed(c, *run.deepspeed);
}

}  // namespace memest::launch
