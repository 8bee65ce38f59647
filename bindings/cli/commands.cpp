// pretrain, model-states, finetune, request, models and gpus (search is in search.cpp).
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "commands.hpp"

namespace memest_cli {

namespace {

// ---- memest pretrain ----

struct PretrainOptions {
  ModelChoice model{"llama-3.1-8b"};
  GpuChoice gpu{"a100-40gb"};
  RunShape run;
  int64_t tp = 4, cp = 1, pp = 2, vpp = 1, micro_batch = 1;
  int64_t ep = 1, etp = 0, first_stage_layers = 0, last_stage_layers = 0;
  double moe_capacity_factor = 0;
  int zero = 1;
  bool uneven = false;
  std::string recompute = "none", activation_model = "auto", pipeline_layout;
  Precision precision;
  StackOptions stack;
  AdapterOptions adapter;
  std::string emit;  // print the layout as a stack's settings instead of the estimate
  std::string recipe;  // a library recipe (mode "presets" lists them with their fields)
  Output output;
  // --tp, --cp, --pp: whether the command line set them (fit_default_layout)
  CLI::Option *tp_flag = nullptr, *cp_flag = nullptr, *pp_flag = nullptr;
  CLI::App* cmd = nullptr;  // which flags the command line gave (with --recipe)
};

// The request fields this command always writes (with its own defaults) and the flags that set
// them. With --recipe, each such field the recipe sets is left out of the request unless its
// flag was given, so that the recipe's value applies and a flag given still wins.
constexpr std::pair<const char*, const char*> kRecipeFlags[] = {
    {"parallel.gpus", "--gpus"},           {"parallel.tp", "--tp"},
    {"parallel.cp", "--cp"},               {"parallel.pp", "--pp"},
    {"parallel.zero", "--zero"},           {"training.recompute", "--recompute"},
    {"training.param_dtype", "--param-dtype"}, {"training.grad_dtype", "--grad-dtype"},
    {"training.optimizer", "--optimizer"}, {"training.framework", "--framework"},
    {"training.loss", "--loss"},           {"training.compile", "--compile-components"}};

// The library's fields of one recipe (mode "presets").
ojson recipe_fields(const std::string& name) {
  ojson presets;
  if (ask_library(R"({"mode": "presets"})", presets, false) != kExitOk) {
    throw std::runtime_error("the library did not list its recipes");
  }
  for (const ojson& r : presets["recipes"]) {
    if (r["name"] == name) return r["fields"];
  }
  return ojson::object();  // an unknown name: the library refuses it, naming "recipe"
}

void apply_recipe_flags(const PretrainOptions& o, ojson& request) {
  if (o.recipe.empty()) return;
  request["recipe"] = o.recipe;
  const ojson fields = recipe_fields(o.recipe);
  for (const auto& [path, flag] : kRecipeFlags) {
    const std::string p = path;
    const std::string block = p.substr(0, p.find('.')), key = p.substr(p.find('.') + 1);
    const bool given = o.cmd->count(flag) > 0 || (p == "training.compile" && o.cmd->count("--compile") > 0);
    if (!given) {
      if (fields.contains(p)) request[block].erase(key);
    } else if (p == "training.framework") {
      request[block][key] = o.stack.framework;  // written even when it is the default
    } else if (p == "training.loss") {
      request[block][key] = o.stack.loss;
    }
  }
}

constexpr const char* kDefaultLayoutNote =
    " (the default applies where tp x cp x pp, and etp x ep x pp, divide --gpus; elsewhere, e.g. --gpus 1, an unset "
    "--tp, --cp or --pp is 1)";

void add_layout_options(CLI::App& cmd, PretrainOptions& o) {
  o.tp_flag = add_integer(cmd, "--tp", o.tp, std::string("Tensor-parallel size") + kDefaultLayoutNote)
                  ->capture_default_str();
  o.cp_flag = add_integer(cmd, "--cp", o.cp, "Context-parallel size")->capture_default_str();
  o.pp_flag = add_integer(cmd, "--pp", o.pp, std::string("Pipeline-parallel size") + kDefaultLayoutNote)
                  ->capture_default_str();
  add_integer(cmd, "--vpp", o.vpp, "Virtual stages per device (interleaved 1F1B)")->capture_default_str();
  cmd.add_flag("--uneven-pipeline", o.uneven,
               "When pp does not divide the layers, let the first and last stage hold one fewer");
  add_integer(cmd, "--zero", o.zero, "ZeRO stage (1 = distributed optimizer)")
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
  add_integer(cmd, "-b,--mbs,--micro-batch", o.micro_batch, "Micro-batch size")->capture_default_str();
  add_integer(cmd, "--ep", o.ep, "Expert-parallel size (mixture-of-experts models)")
      ->capture_default_str();
  add_integer(cmd, "--etp", o.etp, "Expert tensor-parallel size (0 = the same as --tp)")
      ->capture_default_str();
  add_integer(cmd, "--first-stage-layers", o.first_stage_layers,
              "Layers of the first pipeline stage (Megatron's --decoder-first-pipeline-num-layers); "
              "the others split the rest (0: automatic)")
      ->capture_default_str();
  add_integer(cmd, "--last-stage-layers", o.last_stage_layers,
              "Layers of the last pipeline stage (Megatron's --decoder-last-pipeline-num-layers); "
              "the others split the rest (0: automatic)")
      ->capture_default_str();
  cmd.add_option("--pipeline-layout", o.pipeline_layout,
                 "Megatron's --pipeline-model-parallel-layout, e.g. \"Et*3|(tt|)*29,m|L\": "
                 "pp x vpp virtual stages split by '|' (E embedding, t layer, m MTP, L loss); "
                 "--vpp must equal its stages / --pp (default: none)");
  add_real(cmd, "--moe-capacity-factor", o.moe_capacity_factor,
           "MoE expert capacity factor (0 = drop-less routing)", Sign::non_negative)
      ->capture_default_str();
}

// Whether tp x cp x pp divides gpus (stepwise: no product to overflow).
bool layout_divides(int64_t gpus, int64_t tp, int64_t cp, int64_t pp) {
  if (gpus <= 0 || tp <= 0 || cp <= 0 || pp <= 0) return true;  // the library names the field
  return gpus % tp == 0 && (gpus / tp) % cp == 0 && (gpus / tp / cp) % pp == 0;
}

// The default layout (tp 4, cp 1, pp 2: the README's example on 8 GPUs) is kept where it
// divides --gpus, for the expert layers too (etp x ep x pp, etp unset being tp: the library's
// PretrainRequest::expert_tp); elsewhere (one GPU, two, six, --ep 8 on 8 GPUs...) each of
// --tp, --cp and --pp that the command line leaves unset is 1, so that `memest pretrain
// --gpus 1` estimates one GPU instead of refusing a layout nobody asked for. A value given on
// the command line is kept as given: when it does not divide, the library's refusal names it.
void fit_default_layout(PretrainOptions& o) {
  const int64_t etp = o.etp > 0 ? o.etp : o.tp;
  if (layout_divides(o.run.gpus, o.tp, o.cp, o.pp) &&
      (o.ep <= 1 || layout_divides(o.run.gpus, etp, o.ep, o.pp))) {
    return;
  }
  if (o.tp_flag->count() == 0) o.tp = 1;
  if (o.cp_flag->count() == 0) o.cp = 1;
  if (o.pp_flag->count() == 0) o.pp = 1;
}

ojson pretrain_request(const PretrainOptions& o) {
  ojson training = {{"seq_len", o.run.seq_len},         {"micro_batch", o.micro_batch},
                    {"global_batch", o.run.global_batch}, {"recompute", o.recompute},
                    {"flash_attention", !o.run.no_flash}, {"activation_model", o.activation_model}};
  put_precision(o.precision, training);
  put_stack(o.stack, training);
  if (o.moe_capacity_factor != 0) training["moe_capacity_factor"] = o.moe_capacity_factor;
  put_adapter(o.adapter, training);
  return {{"mode", "pretrain"},
          {"model", model_value(o.model)},
          {"gpu", gpu_value(o.gpu)},
          {"parallel",
           {{"gpus", o.run.gpus}, {"tp", o.tp}, {"cp", o.cp}, {"pp", o.pp}, {"vpp", o.vpp},
            {"sp", !o.run.no_sp}, {"zero", o.zero}, {"uneven_pipeline", o.uneven},
            {"ep", o.ep}, {"etp", o.etp}, {"first_stage_layers", o.first_stage_layers},
            {"last_stage_layers", o.last_stage_layers}, {"pipeline_layout", o.pipeline_layout}}},
          {"training", training}};
}

// ---- memest model-states ----

struct ModelStatesOptions {
  ModelChoice model{"llama-3.1-8b"};
  GpuChoice gpu;  // optional: without one, no capacity and no verdict
  int64_t gpus = 1;
  int zero = 0;
  Precision precision;
  Output output;
};

ojson model_states_request(const ModelStatesOptions& o) {
  ojson training = ojson::object();
  put_precision(o.precision, training);
  ojson request = {{"mode", "model_states"},
                   {"model", model_value(o.model)},
                   {"parallel", {{"gpus", o.gpus}, {"zero", o.zero}}},
                   {"training", training}};
  if (gpu_given(o.gpu)) request["gpu"] = gpu_value(o.gpu);
  return request;
}

// ---- memest finetune ----

struct FinetuneOptions {
  ModelChoice model{"opt-1.3b"};
  GpuChoice gpu{"v100-16gb"};
  int64_t gpus = 4, tp = 0, batch = 1, seq_len = 512;
  std::string method = "auto", dtype = "fp16";
  bool no_checkpointing = false, flash = false;
  double base_mib = -1, page_mib = 0, chunk_bytes = 0;  // below zero / zero: not given
  Output output;
};

void add_finetune_environment(CLI::App& cmd, FinetuneOptions& o) {
  add_real(cmd, "--base-mib", o.base_mib, "m_base in MiB (default: the GPU preset's)",
           Sign::non_negative);
  add_real(cmd, "--page-mib", o.page_mib, "CUDA page size in MiB (default: 2)", Sign::positive);
  add_real(cmd, "--chunk-bytes", o.chunk_bytes, "Chunk size x 2 bytes (default: searched)",
           Sign::positive);
}

ojson finetune_request(const FinetuneOptions& o) {
  ojson options = {{"method", o.method}, {"batch", o.batch},
                   {"gradient_checkpointing", !o.no_checkpointing},
                   {"flash_attention", o.flash}, {"dtype", o.dtype}};
  if (o.tp > 0) options["tp"] = o.tp;
  if (o.base_mib >= 0) options["base_bytes"] = o.base_mib * 1024 * 1024;
  if (o.page_mib > 0) options["page_bytes"] = o.page_mib * 1024 * 1024;
  if (o.chunk_bytes > 0) options["chunk_bytes"] = o.chunk_bytes;
  return {{"mode", "finetune"},
          {"model", model_value(o.model)},
          {"gpu", gpu_value(o.gpu)},
          {"parallel", {{"gpus", o.gpus}}},
          {"training", {{"seq_len", o.seq_len}}},
          {"finetune", options}};
}

// ---- memest request ----

std::string read_request(const std::string& path) {
  std::string text;
  if (path == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(path);
    if (!in) throw InputError("cannot read request file \"" + path + "\"");
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // the C API reads a C string: a NUL byte would end the request early, the rest unread
  if (const auto nul = text.find('\0'); nul != std::string::npos) {
    throw InputError("request " + (path == "-" ? std::string("(stdin)") : "\"" + path + "\"") +
                     ": a NUL byte at offset " + std::to_string(nul) + " (a JSON text has none)");
  }
  return text;
}

// ---- memest models / gpus: a few columns of the library's "presets" mode ----

using Columns = std::vector<std::pair<const char*, const char*>>;  // {column, key}

const Columns kModelColumns = {
    {"id", "id"}, {"name", "name"}, {"family", "family"}, {"num_parameters", "num_parameters"},
    {"active_parameters", "active_parameters"}, {"experts", "num_experts"},
    {"top_k", "num_experts_per_tok"},
    {"layers", "num_hidden_layers"}, {"hidden", "hidden_size"}, {"heads", "num_attention_heads"},
    {"kv_heads", "num_key_value_heads"}, {"ffn", "intermediate_size"}, {"vocab", "vocab_size"},
    {"max_positions", "max_position_embeddings"}, {"tied", "tie_word_embeddings"}};

const Columns kGpuColumns = {{"id", "id"}, {"name", "name"}, {"memory_gib", "memory_gib"},
                             {"gpus_per_node", "gpus_per_node"},
                             {"peak_bf16_tflops", "peak_bf16_tflops"}};

const Columns kRecipeColumns = {{"name", "name"}, {"description", "description"},
                                {"source", "source"}};

// Prints `columns` of each object in the presets response's `list` ("models" or "gpus").
int print_presets(const char* list, const Columns& columns, const std::string& format) {
  ojson presets;
  if (int rc = ask_library(R"({"mode": "presets"})", presets, false); rc != kExitOk) return rc;
  ojson rows = ojson::array();
  for (const ojson& item : presets[list]) {
    ojson row = ojson::object();
    for (const auto& [column, key] : columns) row[column] = item[key];
    rows.push_back(row);
  }
  if (format == "json") std::cout << rows.dump(2) << "\n";
  else if (format == "csv") std::cout << list_csv(rows);
  else std::cout << list_table(rows);
  return kExitOk;
}

}  // namespace

Command add_pretrain(CLI::App& app) {
  auto* cmd = app.add_subcommand("pretrain",
                                 "Per-GPU memory of every pipeline stage for 4D-parallel pretraining");
  auto o = std::make_shared<PretrainOptions>();
  add_model_options(*cmd, o->model, false);
  add_gpu_options(*cmd, o->gpu);
  add_run_options(*cmd, o->run, "Number of GPUs", "Global batch size (0: not given)");
  add_layout_options(*cmd, *o);
  add_enum_choice(*cmd, "--recompute", o->recompute,
                  "Activation recomputation (op_selective: torchtitan's per-op policy)",
                  MEMEST_ENUM_RECOMPUTE);
  add_choice(*cmd, "--activation-model", o->activation_model,
             "Activation formula: by family, Llama (4D paper) or GPT (Korthikanti)",
             {"auto", "llama", "gpt"});
  add_precision_options(*cmd, o->precision);
  add_stack_options(*cmd, o->stack);
  add_adapter_options(*cmd, o->adapter);
  cmd->add_option("--emit", o->emit,
             "Print this layout in a stack's own terms instead of the estimate: Megatron flags, "
             "torchtitan TOML keys, a DeepSpeed JSON or an accelerate config")
      ->check(CLI::IsMember(library_names("emit_formats")));
  std::string recipe_help =
      "A fine-tuning recipe from the library (memest recipes): its fields fill what the "
      "command line does not give; a flag given wins. One of:";
  for (const std::string& n : library_names("recipes")) recipe_help += " " + n;
  cmd->add_option("--recipe", o->recipe, recipe_help)->check(CLI::IsMember(library_names("recipes")));
  o->cmd = cmd;
  add_format_option(*cmd, o->output, "table");
  // The flags a suggestion is printed as (options.cpp's table): each must be one of this
  // command's, and a later copy wins, so that those flags appended to the command line apply.
  for (const FieldFlag& row : suggestion_flag_table()) {
    CLI::Option* flag = cmd->get_option_no_throw(row.flag);
    if (!flag) throw std::logic_error(std::string("pretrain has no flag ") + row.flag + " for " + row.field);
    flag->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
  return {cmd, [o] {
            fit_default_layout(*o);
            ojson request = pretrain_request(*o);
            apply_recipe_flags(*o, request);
            if (o->emit.empty()) return answer(request.dump(), o->output);
            if (!o->recipe.empty()) {
              throw InputError("--emit does not take --recipe: give the recipe's settings as flags");
            }
            const ojson doc = {{"mode", "emit"}, {"format", o->emit}, {"request", request}};
            ojson response;
            if (int rc = ask_library(doc.dump(), response, false); rc != kExitOk) return rc;
            if (o->output.format == "json") std::cout << response.dump(2) << "\n";
            else std::cout << response["text"].get<std::string>();
            return kExitOk;
          }};
}

Command add_model_states(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "model-states", "Model-state memory per GPU (weights, gradients, optimizer) under ZeRO");
  auto o = std::make_shared<ModelStatesOptions>();
  add_model_options(*cmd, o->model, true);
  add_gpu_options(*cmd, o->gpu);
  add_integer(*cmd, "-n,--gpus", o->gpus, "Data-parallel degree N_d")->capture_default_str();
  add_integer(*cmd, "--zero", o->zero, "ZeRO stage: 0 none, 1 P_os, 2 P_os+g, 3 P_os+g+p")
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
  add_precision_options(*cmd, o->precision);
  add_format_option(*cmd, o->output, "table");
  return {cmd, [o] { return answer(model_states_request(*o).dump(), o->output); }};
}

Command add_finetune(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "finetune", "LLMem peak memory for fine-tuning (CDP, ZeRO-3, 1D TP, DP+TP) and the method choice");
  auto o = std::make_shared<FinetuneOptions>();
  add_model_options(*cmd, o->model, false);
  add_gpu_options(*cmd, o->gpu);
  add_integer(*cmd, "-n,--gpus", o->gpus, "Number of GPUs (gpu_n)")->capture_default_str();
  add_choice(*cmd, "--method", o->method,
             "cdp, zero3 (advanced DP), tp (1D TP over all GPUs), dp+tp, or auto (Algorithm 1)",
             {"cdp", "zero3", "tp", "dp+tp", "auto"});
  add_integer(*cmd, "--tp", o->tp, "Tensor-parallel size for dp+tp (auto: best when 0)")
      ->capture_default_str();
  add_integer(*cmd, "-b,--batch", o->batch, "Batch size per GPU (ignored by auto)")->capture_default_str();
  add_integer(*cmd, "-s,--seq,--seq-len", o->seq_len, "Sequence length")->capture_default_str();
  cmd->add_flag("--no-gradient-checkpointing", o->no_checkpointing,
                "Keep every layer's activations (LLMem assumes checkpointing)");
  cmd->add_flag("--flash-attention", o->flash, "Without checkpointing: attention scores not kept");
  add_choice(*cmd, "--dtype", o->dtype, "16-bit parameter type", {"fp16", "bf16"});
  add_finetune_environment(*cmd, *o);
  add_format_option(*cmd, o->output, "table");
  return {cmd, [o] { return answer(finetune_request(*o).dump(), o->output); }};
}

Command add_request(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "request", "Answer a JSON request (file or stdin) with the JSON response, as the C API does");
  struct RequestOptions {
    std::string path = "-";
    Output output;
  };
  auto o = std::make_shared<RequestOptions>();
  cmd->add_option("file", o->path, "Request file, or - for standard input")->capture_default_str();
  add_format_option(*cmd, o->output, "json");
  add_wide_flag(*cmd, o->output);
  // In JSON, a refused request also prints the library's {"ok": false} document.
  return {cmd, [o] { return answer(read_request(o->path), o->output, o->output.format == "json"); }};
}

Command add_models(CLI::App& app) {
  auto* cmd = app.add_subcommand("models", "List the built-in model presets");
  auto o = std::make_shared<Output>();
  add_format_option(*cmd, *o, "table");
  return {cmd, [o] { return print_presets("models", kModelColumns, o->format); }};
}

Command add_recipes(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "recipes", "List the library's fine-tuning recipes (pretrain --recipe NAME) and their sources");
  auto o = std::make_shared<Output>();
  add_format_option(*cmd, *o, "table");
  return {cmd, [o] {
            if (o->format != "json") return print_presets("recipes", kRecipeColumns, o->format);
            ojson presets;  // JSON: each recipe whole, with its fields and their sources
            if (int rc = ask_library(R"({"mode": "presets"})", presets, false); rc != kExitOk) return rc;
            std::cout << presets["recipes"].dump(2) << "\n";
            return kExitOk;
          }};
}

Command add_gpus(CLI::App& app) {
  auto* cmd = app.add_subcommand("gpus", "List the built-in GPU presets");
  auto o = std::make_shared<Output>();
  add_format_option(*cmd, *o, "table");
  return {cmd, [o] { return print_presets("gpus", kGpuColumns, o->format); }};
}

}  // namespace memest_cli
