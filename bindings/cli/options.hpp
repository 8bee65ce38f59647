// Options that several subcommands share (the model, the GPU, the output, numbers that must be
// finite), and the errors the CLI reports itself. Every other check is the library's.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "memest/memest.h"

#include "format.hpp"

namespace memest_cli {

constexpr int kExitOk = 0;
constexpr int kExitInternal = 1;
constexpr int kExitBadInput = 2;  // one line on stderr naming the flag or the request field

// Bad input found after the flags are parsed (an unreadable file, a file that is not JSON).
// The message names the flag; main prints it as "memest: error: MESSAGE" and exits 2.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---- numbers: every numeric flag goes through one of these ----

enum class Sign { any, non_negative, positive };

// A floating flag: a finite number ("inf", "nan", "1e999" are refused) of the given sign.
CLI::Option* add_real(CLI::App& cmd, const std::string& name, double& value,
                      const std::string& help, Sign sign);
// An integer flag: decimal digits that fit the type (no silent clamping), of the given sign.
CLI::Option* add_integer(CLI::App& cmd, const std::string& name, int64_t& value,
                         const std::string& help, Sign sign = Sign::any);
CLI::Option* add_integer(CLI::App& cmd, const std::string& name, int& value,
                         const std::string& help, Sign sign = Sign::any);
// A list of integers (each checked as above).
CLI::Option* add_integer(CLI::App& cmd, const std::string& name, std::vector<int>& values,
                         const std::string& help, Sign sign = Sign::any);

// An option whose value is one of `choices` (shown in --help with its default).
CLI::Option* add_choice(CLI::App& cmd, const std::string& name, std::string& value,
                        const std::string& help, std::initializer_list<const char*> choices);

// An option whose value is a name of the library's enumeration `which` (memest_enum_name).
CLI::Option* add_enum_choice(CLI::App& cmd, const std::string& name, std::string& value,
                             const std::string& help, memest_enum which);

// ---- the model: --model PRESET, --config FILE, or (model-states) --params COUNT ----

struct ModelChoice {
  ModelChoice() = default;
  explicit ModelChoice(std::string default_preset) : preset(std::move(default_preset)) {}
  std::string preset;
  std::string config_path;
  double num_parameters = 0;  // model-states only: a bare count
};

void add_model_options(CLI::App& cmd, ModelChoice& choice, bool allow_count);
// The request's "model": a preset id, the parsed config file, or {"num_parameters": N}.
ojson model_value(const ModelChoice& choice);

// ---- the GPU: --gpu PRESET with --memory-gib / --gpus-per-node, or --gpu-profile FILE ----

struct GpuChoice {
  GpuChoice() = default;
  explicit GpuChoice(std::string default_preset) : preset(std::move(default_preset)) {}
  std::string preset;
  double memory_gib = 0;   // 0: the preset's
  int gpus_per_node = 0;   // 0: the preset's
  std::string profile_path;
};

void add_gpu_options(CLI::App& cmd, GpuChoice& gpu);
// Whether the command line named a GPU at all (model-states runs without one).
bool gpu_given(const GpuChoice& gpu);
// The request's "gpu": the preset id, {"preset", overrides...}, or the profile file's object.
ojson gpu_value(const GpuChoice& gpu);

// ---- the run that pretrain and search share: GPUs, sequence, global batch, SP, FlashAttention ----

struct RunShape {
  int64_t gpus = 8;
  int64_t seq_len = 8192;
  int64_t global_batch = 1024;
  bool no_sp = false;
  bool no_flash = false;
};

void add_run_options(CLI::App& cmd, RunShape& run, const std::string& gpus_help,
                     const std::string& global_batch_help);

// ---- precisions and optimizer (pretrain, model-states) ----

struct Precision {
  std::string param_dtype = "bf16";
  std::string grad_dtype;  // "" (not sent): the library's default for the mode and framework
  std::string optimizer = "adam";
};

void add_precision_options(CLI::App& cmd, Precision& precision);
// Adds param_dtype, grad_dtype and optimizer to the request's "training" object.
void put_precision(const Precision& precision, ojson& training);

// ---- the training stack (pretrain, search): README "Training stack" ----

struct StackOptions {
  std::string framework = "megatron";
  std::string loss = "auto";
  int64_t recompute_every = 1;
  bool fp8 = false, compile = false, optimizer_in_backward = false;
  std::string compile_components;  // memest_compile name; empty: --compile decides
  bool offload_optimizer = false, offload_params = false, offload_activations = false;
  // framework buckets: 0 = the framework's default
  double bucket_cap_mb = 0, reduce_bucket_size = 0, allgather_bucket_size = 0;
  double prefetch_bucket_size = 0, max_live_parameters = 0, persistence_threshold = 0;
  bool gradient_as_bucket_view = false;
  // --comm-overlap: "default" (the stack's own), "none", or names of MEMEST_ENUM_OVERLAP
  std::string comm_overlap = "default";
  // --moe-dispatcher: a name of MEMEST_ENUM_MOE_DISPATCHER; empty: the library's default
  std::string moe_dispatcher;
  // --attention-kernel: a name of MEMEST_ENUM_ATTENTION_KERNEL; empty: the library's default
  std::string attention_kernel;
  // 1.6: the precision policy and the loss; empty / default: the library's default
  std::string reduce_dtype;        // --reduce-dtype fp32|bf16|fp16
  std::string autocast;            // --autocast on|off
  std::string no_sync;             // --no-sync on|off
  std::string ddp;                 // --ddp on|off (1.7)
  bool no_loss_parallel = false;   // --no-loss-parallel
  bool fp8_all_gather = false;     // --fp8-all-gather
  bool logits_held = false;        // --logits-held
  int64_t loss_chunks = 0;         // --loss-chunks (1.9)
  bool fsdp_use_orig_params = false;  // --fsdp-use-orig-params (1.9)
  bool fp4 = false;                // --fp4 (1.9)
  bool use_liger_kernel = false;   // --use-liger-kernel (1.12)
  // 1.15: how the optimizer stores its states; empty: the library's default
  std::string master_weights;         // --master-weights: a name of MEMEST_ENUM_MASTER_WEIGHTS
  std::string optimizer_state_dtype;  // --optimizer-state-dtype fp32|bf16|fp16|fp8
  // --recompute-modules (1.11): a comma-separated list of MEMEST_ENUM_RECOMPUTE_MODULE names;
  // empty: none given (Megatron's default, core_attn)
  std::string recompute_modules;
  CLI::Option* recompute_modules_given = nullptr;  // set by add_stack_options
};

void add_stack_options(CLI::App& cmd, StackOptions& stack);
// Adds the fields that differ from the defaults to the request's "training" object (a
// default request is the same document as before the training stack existed).
void put_stack(const StackOptions& stack, ojson& training);

// The request's training.comm_overlap for the flag's value: "default", "none", or a list of the
// library's overlap names (MEMEST_ENUM_OVERLAP); InputError naming --comm-overlap otherwise.
ojson comm_overlap_value(const std::string& text);

// The request's training.recompute_modules for --recompute-modules' value: a list of the
// library's recompute module names (MEMEST_ENUM_RECOMPUTE_MODULE); InputError naming
// --recompute-modules for an empty item or an unknown name.
ojson recompute_modules_value(const std::string& text);

// The names of the library's enumeration `which`, in value order.
std::vector<std::string> enum_names(memest_enum which);
// A list of names the library's {"mode": "enums"} answer holds beside the enumerations
// ("launch_formats", "emit_formats").
std::vector<std::string> library_names(const char* key);

// ---- LoRA / QLoRA (pretrain): README "LoRA and QLoRA" ----

struct AdapterOptions {
  std::string type;  // empty: no adapter
  std::string targets_text;  // --lora-targets as given: comma-separated module names
  CLI::Option *rank = nullptr, *alpha = nullptr, *dropout = nullptr, *dtype = nullptr;
  int64_t rank_value = 0;
  double alpha_value = 0, dropout_value = 0;
  std::string dtype_value;
  bool double_quant = false;
  bool quantize_lm_head = false;
};

void add_adapter_options(CLI::App& cmd, AdapterOptions& adapter);
// Adds training.adapter when any adapter option was given (the library checks every value,
// and refuses rank or targets without --adapter).
void put_adapter(const AdapterOptions& adapter, ojson& training);

// ---- a suggestion as the flags that apply it ----

// How a request field is written on the `memest pretrain` command line: a flag with the value,
// a flag present when the field is true (absent when false), or one present when it is false.
enum class FlagForm { value, when_true, when_false };

struct FieldFlag {
  const char* field;  // the request field, as a dotted path: "parallel.zero"
  const char* flag;   // the pretrain flag that sets it: "--zero"
  FlagForm form;
};

// Every request field a suggestion of the library's can set (libmemest's pretrain_json.cpp
// changed_fields) and the `memest pretrain` flag that sets it. The table lives in options.cpp
// beside most of these flags (the layout flags and --recompute are in commands.cpp);
// add_pretrain checks that each flag here is one of its own and lets the last copy of each win,
// so that a suggestion's flags appended to the command line apply.
const std::vector<FieldFlag>& suggestion_flag_table();

// A suggestion's "set" as `memest pretrain` flags.
struct FlagChange {
  std::vector<std::string> add;      // words to append, values shell-quoted: "--zero", "3"
  std::vector<std::string> drop;     // flags to leave out: "--no-sp" (sequence parallelism on)
  std::vector<std::string> no_flag;  // "parallel.x=1" for a field no flag sets
};

// `set` is a suggestion's "set"; `layout` the response's "layout". When the suggestion changes
// the GPU count, the tp, cp and pp in effect are written too: the CLI's default layout follows
// --gpus (fit_default_layout), and the suggestion keeps them.
FlagChange suggestion_flags(const ojson& set, const ojson& layout);
// "--recompute full --zero 3", "without --no-sp", "parallel.x=1 (no flag sets it)", joined by "; ".
std::string flag_change_text(const FlagChange& change);

// ---- the output ----

struct Output {
  std::string format;  // table, json or csv
  bool wide = false;   // search tables: every column
};

void add_format_option(CLI::App& cmd, Output& output, const char* fallback);
void add_wide_flag(CLI::App& cmd, Output& output);

// Refuses a JSON text a reader would take wrongly: a NUL byte (the C API reads up to it),
// nesting past 256 levels, a key given twice in one object, a number out of a double's range;
// InputError naming `what` (the flag and the file, or the request's source).
void check_json_text(const std::string& what, const std::string& text);

// The JSON document in `path`; InputError naming `flag` when unreadable or not JSON (including
// what check_json_text refuses).
ojson read_json_file(const std::string& flag, const std::string& path);
// A Hugging Face config.json for --config: read_json_file's checks, the library's own reading
// first (its field-named errors), Python's bare Infinity/NaN tokens accepted where the library
// does not need the value.
ojson read_config_file(const std::string& path);

}  // namespace memest_cli
