// The pretraining request's field registry (json/request_fields.hpp): the rows, and what
// reads them (the JSON reader, the C API's conversion, mode "fields", the docs table).
#include "json/request_fields.hpp"

#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>

#include "core/enums.hpp"
#include "core/limits.hpp"
#include "core/units.hpp"
#include "plan/stack.hpp"

namespace memest {

std::string RequestField::parent() const {
  const char* dot = std::strrchr(path, '.');
  return dot ? std::string(path, static_cast<std::size_t>(dot - path)) : std::string();
}

const char* RequestField::key() const {
  const char* dot = std::strrchr(path, '.');
  return dot ? dot + 1 : path;
}

namespace {

using C = memest_pretrain_request;

// How a row reaches its core member: a member of PretrainRequest or of its Stack, or (for
// the framework, stored as framework + fsdp_version) a getter and a setter.
template <typename T>
struct Access {
  std::function<T(const PretrainRequest&)> get;
  std::function<void(PretrainRequest&, T)> set;
};

template <typename T>
Access<T> top(T PretrainRequest::*m) {
  return {[m](const PretrainRequest& r) { return r.*m; }, [m](PretrainRequest& r, T v) { r.*m = v; }};
}

template <typename T>
Access<T> stack(T Stack::*m) {
  return {[m](const PretrainRequest& r) { return r.stack.*m; },
          [m](PretrainRequest& r, T v) { r.stack.*m = v; }};
}

// The C member `c` is the core member `a` (the same type: memest.h and plan/requests.hpp
// declare both).
template <typename T>
RequestField with_c(RequestField f, T C::*c, const Access<T>& a) {
  f.from_c = [c, set = a.set](const C& in, PretrainRequest& r) { set(r, in.*c); };
  f.to_c = [c, get = a.get](const PretrainRequest& r, C& out) { out.*c = get(r); };
  return f;
}

RequestField row(const char* path, FieldKind kind, const char* cli, FlagForm form,
                 const char* doc) {
  RequestField f;
  f.path = path;
  f.kind = kind;
  f.cli = cli;
  f.cli_form = form;
  f.doc = doc;
  return f;
}

template <typename T>
RequestField boolean(const char* path, T C::*c, const Access<T>& a, const char* cli,
                     FlagForm form, const char* doc) {
  RequestField f = row(path, FieldKind::Boolean, cli, form, doc);
  const char* key = f.key();
  f.read = [key, set = a.set](const JsonFields& j, PretrainRequest& r) {
    if (auto b = j.boolean(key)) set(r, static_cast<T>(*b));
  };
  f.value = [get = a.get](const PretrainRequest& r) {
    const T v = get(r);
    return v < 0 ? ojson("default") : ojson(v == 1);
  };
  f.example = a.get(PretrainRequest{}) != 1;
  return with_c(f, c, a);
}

template <typename T>
RequestField integer(const char* path, T C::*c, const Access<T>& a, int64_t min, int64_t max,
                     const char* cli, const char* doc) {
  RequestField f = row(path, FieldKind::Integer, cli, *cli ? FlagForm::Value : FlagForm::None, doc);
  f.int_min = min;
  f.int_max = max;
  const char* key = f.key();
  f.read = [key, min, max, get = a.get, set = a.set](const JsonFields& j, PretrainRequest& r) {
    set(r, static_cast<T>(j.integer_or(key, get(r), min, max)));
  };
  f.value = [get = a.get](const PretrainRequest& r) { return ojson(get(r)); };
  f.example = static_cast<int64_t>(a.get(PretrainRequest{})) + 1;
  return with_c(f, c, a);
}

RequestField number(const char* path, double C::*c, const Access<double>& a, double min,
                    double max, const char* cli, const char* doc) {
  RequestField f = row(path, FieldKind::Number, cli, *cli ? FlagForm::Value : FlagForm::None, doc);
  f.number_min = min;
  f.number_max = max;
  const char* key = f.key();
  f.read = [key, min, max, set = a.set](const JsonFields& j, PretrainRequest& r) {
    if (auto v = j.number(key, min, max)) set(r, *v);
  };
  f.value = [get = a.get](const PretrainRequest& r) { return ojson(get(r)); };
  f.example = a.get(PretrainRequest{}) + 1;
  return with_c(f, c, a);
}

RequestField enumerated(const char* path, memest_enum which, int32_t C::*c,
                        const Access<int32_t>& a, const char* cli, const char* doc) {
  RequestField f = row(path, FieldKind::Enum, cli, FlagForm::Value, doc);
  f.enumeration = which;
  const char* key = f.key();
  f.read = [key, which, set = a.set](const JsonFields& j, PretrainRequest& r) {
    if (auto v = enum_field(j, key, which)) set(r, *v);
  };
  f.value = [which, get = a.get](const PretrainRequest& r) { return ojson(enum_text(which, get(r))); };
  const EnumTable t = enum_table(which);
  f.example = t.names[static_cast<uint32_t>(a.get(PretrainRequest{}) + 1) % t.count];
  return with_c(f, c, a);
}

// A shaped value: `read` and `value` given by the row.
template <typename T>
RequestField custom(const char* path, const char* written, T C::*c, const Access<T>& a,
                    const char* cli, ojson example,
                    std::function<void(const JsonFields&, PretrainRequest&)> read,
                    std::function<ojson(const PretrainRequest&)> value, const char* doc) {
  RequestField f = row(path, FieldKind::Custom, cli, FlagForm::Value, doc);
  f.written = written;
  f.example = std::move(example);
  f.read = std::move(read);
  f.value = std::move(value);
  return with_c(f, c, a);
}

// ---- the shaped values' readers (their error texts are part of the contract)

// The value at `key` whatever its type (JsonFields::object does not check the type; the
// readers below do). `key` is present: each reader asks has() first.
const json& raw(const JsonFields& f, const char* key) { return *f.object(key); }

// training.compile: a bool (false: none, true: all, the 1.2 meaning) or a memest_compile name
void read_compile(const JsonFields& f, PretrainRequest& r) {
  if (!f.has("compile")) return;
  const json& v = raw(f, "compile");
  if (v.is_boolean()) {
    r.stack.compile = v.get<bool>() ? MEMEST_COMPILE_ALL : MEMEST_COMPILE_NONE;
  } else if (v.is_string()) {
    r.stack.compile = *enum_field(f, "compile", MEMEST_ENUM_COMPILE);
  } else {
    throw Error(MEMEST_ERR_TYPE, "training.compile",
                "training.compile: expected true, false or one of " +
                    enum_choices(MEMEST_ENUM_COMPILE) + ", got " + std::string(v.type_name()));
  }
}

// training.comm_overlap: "default" (the stack's), "none", or a list of memest_overlap names
void read_comm_overlap(const JsonFields& f, PretrainRequest& r) {
  if (!f.has("comm_overlap")) return;
  Stack& st = r.stack;
  const json& v = raw(f, "comm_overlap");
  if (v.is_string() && v.get<std::string>() == "default") {
    st.comm_overlap = MEMEST_OVERLAP_STACK_DEFAULT;
  } else if (v.is_string() && v.get<std::string>() == "none") {
    st.comm_overlap = 0;
  } else if (v.is_array()) {
    st.comm_overlap = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string at = "training.comm_overlap[" + std::to_string(i) + "]";
      const int32_t o = v[i].is_string() ? enum_value(MEMEST_ENUM_OVERLAP, v[i].get<std::string>()) : -1;
      if (o < 0) {
        fail(at, "must be one of " + enum_choices(MEMEST_ENUM_OVERLAP) +
                     (v[i].is_string() ? ", got \"" + echo(v[i].get<std::string>()) + "\"" : ", got " + std::string(v[i].type_name())));
      }
      st.comm_overlap |= 1 << o;
    }
  } else {
    throw Error(MEMEST_ERR_TYPE, "training.comm_overlap",
                "training.comm_overlap: expected \"default\", \"none\" or a list of " +
                    enum_choices(MEMEST_ENUM_OVERLAP) + ", got " +
                    (v.is_string() ? "\"" + echo(v.get<std::string>()) + "\"" : std::string(v.type_name())));
  }
}

// training.recompute_modules: Megatron-Core's --recompute-modules, a list of its module names
// (what recompute "selective" checkpoints; under none or full it has no effect, as in Megatron)
void read_recompute_modules(const JsonFields& f, PretrainRequest& r) {
  if (!f.has("recompute_modules")) return;
  Stack& st = r.stack;
  const json& v = raw(f, "recompute_modules");
  if (!v.is_array()) {
    throw Error(MEMEST_ERR_TYPE, "training.recompute_modules",
                "training.recompute_modules: expected a list of " +
                    enum_choices(MEMEST_ENUM_RECOMPUTE_MODULE) + ", got " +
                    std::string(v.type_name()));
  }
  if (v.empty()) {
    fail("training.recompute_modules",
         "an empty list recomputes nothing: give training.recompute \"none\" instead");
  }
  st.recompute_modules = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string at = "training.recompute_modules[" + std::to_string(i) + "]";
    const int32_t o =
        v[i].is_string() ? enum_value(MEMEST_ENUM_RECOMPUTE_MODULE, v[i].get<std::string>()) : -1;
    if (o < 0) {
      fail(at, "must be one of " + enum_choices(MEMEST_ENUM_RECOMPUTE_MODULE) +
                   (v[i].is_string() ? ", got \"" + echo(v[i].get<std::string>()) + "\""
                                     : ", got " + std::string(v[i].type_name())));
    }
    st.recompute_modules |= 1u << o;
  }
}


constexpr int64_t kBig = int64_t{1} << 40;  // real limits are checked by the estimator
constexpr double kBucketMax = 1e15;

std::vector<RequestField> build() {
  using R = PretrainRequest;
  using S = Stack;
  const Access<int32_t> framework = {
      [](const R& r) { return reported_framework(r.stack); },
      [](R& r, int32_t v) { set_framework(r.stack, v); }};
  std::vector<RequestField> rows = {
      // ---- parallel (json/pretrain_json.cpp parse_pretrain)
      integer("parallel.gpus", &C::gpus, top(&R::gpus), -kBig, kBig, "--gpus",
              "GPUs in all; the data-parallel size is gpus / (tp * cp * pp)"),
      integer("parallel.tp", &C::tp, top(&R::tp), -kBig, kBig, "--tp", "tensor-parallel size"),
      integer("parallel.cp", &C::cp, top(&R::cp), -kBig, kBig, "--cp", "context-parallel size"),
      integer("parallel.pp", &C::pp, top(&R::pp), -kBig, kBig, "--pp", "pipeline-parallel size"),
      integer("parallel.vpp", &C::vpp, top(&R::vpp), -kBig, kBig, "--vpp",
              "virtual stages per device (interleaved 1F1B); 1: plain 1F1B"),
      integer("parallel.ep", &C::ep, top(&R::ep), -kBig, kBig, "--ep",
              "expert-parallel size (mixture-of-experts models); must divide the experts"),
      integer("parallel.etp", &C::etp, top(&R::etp), -kBig, kBig, "--etp",
              "expert tensor-parallel size; 0: the same as tp"),
      integer("parallel.last_stage_layers", &C::last_stage_layers, top(&R::last_stage_layers),
              -kBig, kBig, "--last-stage-layers",
              "> 0: the last pipeline stage holds exactly this many layers "
              "(--decoder-last-pipeline-num-layers)"),
      integer("parallel.first_stage_layers", &C::first_stage_layers, top(&R::first_stage_layers),
              -kBig, kBig, "--first-stage-layers",
              "> 0: the first pipeline stage holds exactly this many layers "
              "(--decoder-first-pipeline-num-layers)"),
      [] {
        // a borrowed const char* in the C struct: capi.cpp copies it by hand
        RequestField f = row("parallel.pipeline_layout", FieldKind::String, "--pipeline-layout",
                             FlagForm::Value,
                             "Megatron-LM's --pipeline-model-parallel-layout (E, t, m and L per "
                             "virtual stage); empty: none");
        f.read = [](const JsonFields& j, R& r) {
          if (auto s = j.string("pipeline_layout")) r.pipeline_layout = *s;
        };
        f.value = [](const R& r) { return ojson(r.pipeline_layout); };
        f.example = "Et*2|tL";
        return f;
      }(),
      boolean("parallel.sp", &C::sequence_parallel, top(&R::sequence_parallel), "--no-sp",
              FlagForm::WhenFalse, "sequence parallelism with tensor parallelism"),
      boolean("parallel.uneven_pipeline", &C::uneven_pipeline, top(&R::uneven_pipeline),
              "--uneven-pipeline", FlagForm::WhenTrue,
              "when pp does not divide the layers, the first and the last stage may each hold one "
              "layer fewer"),
      integer("parallel.zero", &C::zero, top(&R::zero), 0, 3, "--zero",
              "ZeRO stage (1: the distributed optimizer over d * cp)"),
      // ---- training (json/common.cpp read_training)
      integer("training.seq_len", &C::seq_len, top(&R::seq_len), -kBig, kBig, "--seq-len",
              "sequence length in tokens"),
      integer("training.micro_batch", &C::micro_batch, top(&R::micro_batch), -kBig, kBig,
              "--micro-batch", "micro-batch size (a search pins it when given)"),
      integer("training.global_batch", &C::global_batch, top(&R::global_batch), -kBig, kBig,
              "--global-batch", "global batch in sequences; 0: not given (pipeline assumed full)"),
      enumerated("training.recompute", MEMEST_ENUM_RECOMPUTE, &C::recompute, top(&R::recompute),
                 "--recompute", "activation recomputation (a search pins it when given)"),
      boolean("training.flash_attention", &C::flash_attention, top(&R::flash_attention),
              "--no-flash-attention", FlagForm::WhenFalse,
              "fused attention (no s x s score matrix kept)"),
      enumerated("training.activation_model", MEMEST_ENUM_ACTIVATION_MODEL, &C::activation_model,
                 top(&R::activation_model), "--activation-model",
                 "the activation formulas: auto (by family), llama or gpt"),
      // the training stack (README "Training stack"; plan/stack.hpp checks the combinations)
      [&] {
        RequestField f =
            enumerated("training.framework", MEMEST_ENUM_FRAMEWORK, &C::framework, framework,
                       "--framework", "the training stack (fsdp1: FSDP with FlatParameters)");
        f.example = "fsdp1";  // stored as fsdp + fsdp_version 1 (plan/stack.hpp set_framework)
        return f;
      }(),
      boolean("training.optimizer_in_backward", &C::optimizer_in_backward,
              stack(&S::optimizer_in_backward), "--optimizer-in-backward", FlagForm::WhenTrue,
              "the step runs per parameter during backward (torchtune)"),
      integer("training.recompute_every", &C::recompute_every, stack(&S::recompute_every), -kBig,
              kBig, "--recompute-every", "one block in N is checkpointed"),
      enumerated("training.loss", MEMEST_ENUM_LOSS, &C::loss, stack(&S::loss), "--loss",
                 "the loss on the logits (auto: by framework)"),
      boolean("training.fp8", &C::fp8, stack(&S::fp8), "--fp8", FlagForm::WhenTrue,
              "Float8 / Transformer Engine fp8 linear layers (needs gpu.fp8)"),
      custom("training.compile", "true, false or a compile name", &C::compile,
             stack(&S::compile), "--compile-components", "model", read_compile,
             [](const R& r) { return ojson(enum_text(MEMEST_ENUM_COMPILE, r.stack.compile)); },
             "what torch.compile compiles (true: all, false: none)"),
      [] {
        RequestField f = row("training.reduce_dtype", FieldKind::Dtype, "--reduce-dtype",
                             FlagForm::Value,
                             "the gradient reduction's dtype (FSDP MixedPrecisionPolicy "
                             "reduce_dtype); default: the gradients' dtype");
        f.read = [](const JsonFields& j, R& r) {
          if (j.has("reduce_dtype")) r.stack.reduce_bytes = dtype_bytes(j, "reduce_dtype", 4);
        };
        f.value = [](const R& r) {
          return r.stack.reduce_bytes > 0 ? ojson(dtype_name(r.stack.reduce_bytes)) : ojson("default");
        };
        f.example = "bf16";
        return with_c(f, &C::reduce_bytes, stack(&S::reduce_bytes));
      }(),
      boolean("training.loss_parallel", &C::loss_parallel, stack(&S::loss_parallel),
              "--no-loss-parallel", FlagForm::WhenFalse,
              "under tp > 1 the loss works on vocab-parallel logits; false: gathered first"),
      boolean("training.autocast", &C::autocast, stack(&S::autocast), "--autocast",
              FlagForm::OnOff,
              "torch.autocast around the model; default: on for fp32 parameters outside FSDP"),
      boolean("training.fp8_all_gather", &C::fp8_all_gather, stack(&S::fp8_all_gather),
              "--fp8-all-gather", FlagForm::WhenTrue,
              "FSDP2 all-gathers fp8 weights (torchao; needs fp8)"),
      boolean("training.no_sync", &C::no_sync, stack(&S::no_sync), "--no-sync", FlagForm::OnOff,
              "FSDP keeps unsharded gradients across accumulation micro-batches; default: fsdp1 "
              "does"),
      boolean("training.logits_held", &C::logits_held, stack(&S::logits_held), "--logits-held",
              FlagForm::WhenTrue,
              "the training loop keeps the model's output (and its logits) through backward"),
      boolean("training.ddp", &C::ddp, stack(&S::ddp), "--ddp", FlagForm::OnOff,
              "DDP around the model; default: when data-parallel > 1; true also wraps one process"),
      integer("training.loss_chunks", &C::loss_chunks, stack(&S::loss_chunks), INT32_MIN,
              INT32_MAX, "--loss-chunks", "chunks of a chunked loss; 0: the loss's own default"),
      boolean("training.fsdp_use_orig_params", &C::fsdp_use_orig_params,
              stack(&S::fsdp_use_orig_params), "--fsdp-use-orig-params", FlagForm::WhenTrue,
              "fsdp1 + LoRA: each block's FlatParameter mixes frozen weights and adapters"),
      boolean("training.fp4", &C::fp4, stack(&S::fp4), "--fp4", FlagForm::WhenTrue,
              "NVFP4 linear layers (megatron, a GPU with fp4, fp8 off)"),
      boolean("training.use_liger_kernel", &C::use_liger_kernel, stack(&S::use_liger_kernel),
              "--use-liger-kernel", FlagForm::WhenTrue,
              "Liger-Kernel's fused RMSNorm and gated-MLP kernels in the Hugging Face blocks"),
      // 1.15: how the optimizer stores what it updates (plan/stack.hpp derived_optimizer_bytes)
      [] {
        RequestField f = enumerated(
            "training.master_weights", MEMEST_ENUM_MASTER_WEIGHTS, &C::master_weights,
            stack(&S::master_weights), "--master-weights",
            "the copy the optimizer updates (megatron, deepspeed; --main-params-dtype, "
            "store_param_remainders); auto: fp32 beside 16-bit weights");
        f.example = "remainder";
        return f;
      }(),
      [] {
        RequestField f = row("training.optimizer_state_dtype", FieldKind::Dtype,
                             "--optimizer-state-dtype", FlagForm::Value,
                             "the optimizer moments' dtype (--exp-avg-dtype, NeMo optim.dtype); "
                             "default: fp32 beside a master, else the weights'");
        f.read = [](const JsonFields& j, R& r) {
          if (j.has("optimizer_state_dtype")) {
            r.stack.optimizer_state_bytes = dtype_bytes(j, "optimizer_state_dtype", 4);
          }
        };
        f.value = [](const R& r) {
          return r.stack.optimizer_state_bytes > 0 ? ojson(dtype_name(r.stack.optimizer_state_bytes))
                                                   : ojson("default");
        };
        f.example = "bf16";
        return with_c(f, &C::optimizer_state_bytes, stack(&S::optimizer_state_bytes));
      }(),
      enumerated("training.moe_dispatcher", MEMEST_ENUM_MOE_DISPATCHER, &C::moe_dispatcher,
                 stack(&S::moe_dispatcher), "--moe-dispatcher",
                 "how MoE layers send tokens between expert-parallel ranks"),
      enumerated("training.attention_kernel", MEMEST_ENUM_ATTENTION_KERNEL, &C::attention_kernel,
                 stack(&S::attention_kernel), "--attention-kernel",
                 "whose attention kernels run (auto: megatron fused, the others flash2; triton: a Triton FlashAttention kernel, llm-foundry MPT's attn_impl triton)"),
      custom("training.comm_overlap", "\"default\", \"none\" or a list of overlap names",
             &C::comm_overlap, stack(&S::comm_overlap), "--comm-overlap", ojson::array({"tp"}),
             read_comm_overlap,
             [](const R& r) {
               const int32_t o = r.stack.comm_overlap;
               return o == MEMEST_OVERLAP_STACK_DEFAULT ? ojson("default")
                      : o == 0                          ? ojson("none")
                                                        : overlap_json(static_cast<uint32_t>(o));
             },
             "communication hidden behind compute in the step time"),
      custom("training.recompute_modules", "a list of recompute_module names",
             &C::recompute_modules, stack(&S::recompute_modules), "--recompute-modules",
             ojson::array({"mlp"}), read_recompute_modules,
             [](const R& r) {
               const uint32_t m = r.stack.recompute_modules;
               return m == 0 ? ojson("default") : bit_names_json(MEMEST_ENUM_RECOMPUTE_MODULE, m);
             },
             "what recompute selective checkpoints under megatron; default: core_attn"),
      boolean("training.offload.optimizer", &C::offload_optimizer, stack(&S::offload_optimizer),
              "--offload-optimizer", FlagForm::WhenTrue,
              "optimizer states and fp32 masters in host memory"),
      boolean("training.offload.params", &C::offload_params, stack(&S::offload_params),
              "--offload-params", FlagForm::WhenTrue,
              "sharded parameters in host memory (fsdp zero 2/3, deepspeed zero 3)"),
      boolean("training.offload.activations", &C::offload_activations,
              stack(&S::offload_activations), "--offload-activations", FlagForm::WhenTrue,
              "saved activations in host memory, one layer staged"),
      number("training.buckets.bucket_cap_mb", &C::ddp_bucket_mib, stack(&S::ddp_bucket_mib), 0,
             kBucketMax, "--bucket-cap-mb", "DDP bucket_cap_mb; 0: 25"),
      boolean("training.buckets.gradient_as_bucket_view", &C::ddp_gradient_as_bucket_view,
              stack(&S::ddp_gradient_as_bucket_view), "--gradient-as-bucket-view",
              FlagForm::WhenTrue, "DDP buckets are views of the gradients (no copy)"),
      number("training.buckets.reduce_bucket_size", &C::ds_reduce_bucket_size,
             stack(&S::ds_reduce_bucket_size), 0, kBucketMax, "--reduce-bucket-size",
             "DeepSpeed reduce_bucket_size, elements; 0: 5e8"),
      number("training.buckets.allgather_bucket_size", &C::ds_allgather_bucket_size,
             stack(&S::ds_allgather_bucket_size), 0, kBucketMax, "--allgather-bucket-size",
             "DeepSpeed allgather_bucket_size, elements; 0: 5e8"),
      number("training.buckets.stage3_prefetch_bucket_size", &C::ds_prefetch_bucket_size,
             stack(&S::ds_prefetch_bucket_size), 0, kBucketMax, "--stage3-prefetch-bucket-size",
             "DeepSpeed stage3_prefetch_bucket_size, elements; 0: 5e7"),
      number("training.buckets.stage3_max_live_parameters", &C::ds_max_live_parameters,
             stack(&S::ds_max_live_parameters), 0, kBucketMax, "--stage3-max-live-parameters",
             "DeepSpeed stage3_max_live_parameters; 0: 1e9"),
      number("training.buckets.stage3_param_persistence_threshold",
             &C::ds_param_persistence_threshold, stack(&S::ds_param_persistence_threshold), 0,
             kBucketMax, "--stage3-param-persistence-threshold",
             "DeepSpeed stage3_param_persistence_threshold; 0: 1e5"),
      // read after the precision fields (json/common.cpp read_training)
      number("training.moe_capacity_factor", &C::moe_capacity_factor,
             top(&R::moe_capacity_factor), 0, kMaxCapacityFactor, "--moe-capacity-factor",
             "0: drop-less routing; > 0: each expert's tokens cut or padded to this factor"),
  };
  for (RequestField& f : rows) {
    if (f.parent() == "training.buckets") f.echoed = false;  // not echoed in the response
  }
  rows.back().phase = 1;
  return rows;
}

const char* kind_name(FieldKind k) {
  switch (k) {
    case FieldKind::Boolean: return "boolean";
    case FieldKind::Integer: return "integer";
    case FieldKind::Number: return "number";
    case FieldKind::Enum: return "enum";
    case FieldKind::Dtype: return "dtype";
    case FieldKind::String: return "string";
    case FieldKind::Custom: return "custom";
  }
  return "custom";
}

const char* form_name(FlagForm f) {
  switch (f) {
    case FlagForm::None: return "none";
    case FlagForm::Value: return "value";
    case FlagForm::WhenTrue: return "when_true";
    case FlagForm::WhenFalse: return "when_false";
    case FlagForm::OnOff: return "on_off";
  }
  return "none";
}

constexpr const char* kDtypeNames[] = {"fp32", "float32", "bf16", "bfloat16",
                                       "fp16", "float16", "fp8"};

ojson choices_json(const RequestField& f) {
  ojson names = ojson::array();
  if (f.kind == FieldKind::Enum) {
    const EnumTable t = enum_table(f.enumeration);
    for (uint32_t i = 0; i < t.count; ++i) names.push_back(t.names[i]);
  } else {
    for (const char* d : kDtypeNames) names.push_back(d);
  }
  return names;
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// What a row takes, in words, for the docs table.
std::string values_text(const RequestField& f) {
  switch (f.kind) {
    case FieldKind::Boolean: return "true, false";
    case FieldKind::Integer:
      if (f.int_max >= kBig) return "an integer (checked when estimated)";
      return "an integer, " + std::to_string(f.int_min) + " to " + std::to_string(f.int_max);
    case FieldKind::Number:
      return "a number, " + number_text(f.number_min) + " to " + number_text(f.number_max);
    case FieldKind::Enum:
    case FieldKind::Dtype: {
      std::string s;
      for (const auto& n : choices_json(f)) s += (s.empty() ? "" : ", ") + n.get<std::string>();
      return s;
    }
    case FieldKind::String: return "a string";
    case FieldKind::Custom: return f.written;
  }
  return "";
}

}  // namespace

const std::vector<RequestField>& pretrain_request_fields() {
  static const std::vector<RequestField> rows = build();
  return rows;
}

void read_request_fields(const JsonFields& block, const std::string& block_path, int phase,
                         PretrainRequest& r) {
  const std::string prefix = block_path + ".";
  const std::vector<RequestField>& rows = pretrain_request_fields();
  std::string nested_path;  // the nested block being read ("training.offload")
  std::optional<JsonFields> nested;
  for (const RequestField& f : rows) {
    if (f.phase != phase || std::strncmp(f.path, prefix.c_str(), prefix.size()) != 0) continue;
    const std::string parent = f.parent();
    if (parent == block_path) {
      f.read(block, r);
      continue;
    }
    if (parent != nested_path) {
      nested_path = parent;
      nested.reset();
      const std::string key = parent.substr(prefix.size());
      if (const json* o = block.object(key.c_str())) {
        nested.emplace(*o, parent);
        std::vector<const char*> keys;
        for (const RequestField& g : rows) {
          if (g.parent() == parent) keys.push_back(g.key());
        }
        nested->reject_unknown(keys.data(), keys.size());
      }
    }
    if (nested) f.read(*nested, r);
  }
}

void request_fields_to_c(const PretrainRequest& r, memest_pretrain_request& c) {
  for (const RequestField& f : pretrain_request_fields()) {
    if (f.to_c) f.to_c(r, c);
  }
}

void request_fields_from_c(const memest_pretrain_request& c, PretrainRequest& r) {
  for (const RequestField& f : pretrain_request_fields()) {
    if (f.from_c) f.from_c(c, r);
  }
}

ojson fields_mode(const JsonFields& top) {
  top.reject_unknown({"mode"});
  const PretrainRequest defaults;
  ojson list = ojson::array();
  for (const RequestField& f : pretrain_request_fields()) {
    ojson j = {{"path", f.path}, {"kind", kind_name(f.kind)}, {"default", f.value(defaults)}};
    if (f.kind == FieldKind::Integer) {
      j["min"] = f.int_min;
      j["max"] = f.int_max;
    } else if (f.kind == FieldKind::Number) {
      j["min"] = f.number_min;
      j["max"] = f.number_max;
    } else if (f.kind == FieldKind::Enum || f.kind == FieldKind::Dtype) {
      j["choices"] = choices_json(f);
    } else if (f.kind == FieldKind::Custom) {
      j["written"] = f.written;
    }
    if (*f.cli) {
      j["cli"] = f.cli;
      j["cli_form"] = form_name(f.cli_form);
    }
    j["c_member"] = f.from_c ? true : false;
    j["doc"] = f.doc;
    list.push_back(j);
  }
  return {{"ok", true}, {"mode", "fields"}, {"request_mode", "pretrain"}, {"fields", list}};
}

std::string request_fields_markdown() {
  const PretrainRequest defaults;
  std::string out =
      "| Field | Takes | Default | CLI | What it is |\n"
      "|---|---|---|---|---|\n";
  for (const RequestField& f : pretrain_request_fields()) {
    const ojson d = f.value(defaults);
    const std::string def = d.is_string() ? d.get<std::string>() : d.dump();
    out += "| `" + std::string(f.path) + "` | " + values_text(f) + " | " +
           (def.empty() ? std::string("empty") : "`" + def + "`") + " | " +
           (*f.cli ? "`" + std::string(f.cli) + "`" : std::string("")) + " | " + f.doc + " |\n";
  }
  return out;
}

}  // namespace memest
