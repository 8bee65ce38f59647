// memest — command-line front end of libmemest.
//
// Every subcommand builds a JSON request (DESIGN.md contract), hands it to the C API's
// memest_request_json, and prints the response; no formula lives here.
// Exit codes: 0 success, 2 bad input (one line on stderr naming the field), 1 internal error.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "format.hpp"
#include "memest/memest.h"

namespace {

using memest_cli::ojson;

constexpr int kExitOk = 0;
constexpr int kExitInternal = 1;
constexpr int kExitBadInput = 2;

int exit_code_for(memest_status status) {
  if (status == MEMEST_OK) return kExitOk;
  return status == MEMEST_ERR_INTERNAL || status == MEMEST_ERR_NO_MEMORY ? kExitInternal
                                                                         : kExitBadInput;
}

int input_error(const std::string& message) {
  std::cerr << "memest: error: " << message << "\n";
  return kExitBadInput;
}

// Calls the library. On success fills `response`; on failure prints the library's one-line
// message (and, when `error_document` is set, the {"ok": false} document on stdout).
int call_library(const std::string& request, ojson& response, bool error_document) {
  char* text = nullptr;
  const memest_status status = memest_request_json(request.c_str(), &text);
  if (!text) {
    std::cerr << "memest: error: " << memest_last_error() << "\n";
    return exit_code_for(status);
  }
  const std::string body(text);
  memest_string_free(text);
  if (status != MEMEST_OK) {
    if (error_document) std::cout << body << "\n";
    std::cerr << "memest: error: " << memest_last_error() << "\n";
    return exit_code_for(status);
  }
  response = ojson::parse(body);
  return kExitOk;
}

struct ModelChoice {
  std::string preset;
  std::string config_path;
  double num_parameters = 0;  // model-states only: a bare count
};

// The request's "model" value: a preset id, the parsed config file, or a bare count.
bool model_value(const ModelChoice& choice, ojson& out, std::string& error) {
  if (!choice.config_path.empty()) {
    std::ifstream in(choice.config_path);
    if (!in) {
      error = "--config: cannot read \"" + choice.config_path + "\"";
      return false;
    }
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    out = ojson::parse(text, nullptr, false);
    if (out.is_discarded()) {
      error = "--config: \"" + choice.config_path + "\" is not valid JSON";
      return false;
    }
    return true;
  }
  if (choice.num_parameters > 0) {
    out = {{"num_parameters", choice.num_parameters}};
    return true;
  }
  out = choice.preset;
  return true;
}

// A positive number, with a short message (CLI11's own range check prints DBL_MAX).
const CLI::Validator positive(
    [](std::string& text) {
      try {
        if (std::stod(text) > 0) return std::string();
      } catch (const std::exception&) {
      }
      return std::string("must be a positive number, got ") + text;
    },
    "POSITIVE");

void add_model_options(CLI::App& cmd, ModelChoice& choice, bool allow_count) {
  auto* preset = cmd.add_option("-m,--model", choice.preset,
                                "Model preset id (see `memest models`)")
                     ->capture_default_str();
  auto* config = cmd.add_option("--config", choice.config_path,
                                "A Hugging Face config.json to use instead of a preset")
                     ->check(CLI::ExistingFile);
  config->excludes(preset);
  if (allow_count) {
    cmd.add_option("--params", choice.num_parameters,
                   "A bare parameter count (e.g. 7.5e9) instead of a model")
        ->check(positive)
        ->excludes(preset)
        ->excludes(config);
  }
}

struct GpuChoice {
  std::string preset;
  double memory_gib = 0;
  int gpus_per_node = 0;
};

void add_gpu_options(CLI::App& cmd, GpuChoice& gpu) {
  cmd.add_option("-g,--gpu", gpu.preset, "GPU preset id (see `memest gpus`)")->capture_default_str();
  cmd.add_option("--memory-gib", gpu.memory_gib, "GPU capacity in GiB (overrides the preset's)")
      ->check(positive);
  cmd.add_option("--gpus-per-node", gpu.gpus_per_node, "GPUs per node (overrides the preset's)")
      ->check(positive);
}

ojson gpu_value(const GpuChoice& gpu) {
  if (gpu.memory_gib <= 0 && gpu.gpus_per_node <= 0) return gpu.preset;
  ojson g = ojson::object();
  if (!gpu.preset.empty()) g["preset"] = gpu.preset;
  if (gpu.memory_gib > 0) g["memory_gib"] = gpu.memory_gib;
  if (gpu.gpus_per_node > 0) g["gpus_per_node"] = gpu.gpus_per_node;
  return g;
}

int print_response(const ojson& response, const std::string& format) {
  const std::string mode = response["mode"].get<std::string>();
  if (format == "json") {
    std::cout << response.dump(2) << "\n";
  } else if (mode == "search") {
    std::cout << (format == "csv" ? memest_cli::search_csv(response)
                                  : memest_cli::search_table(response));
  } else if (mode == "finetune") {
    std::cout << (format == "csv" ? memest_cli::finetune_csv(response)
                                  : memest_cli::finetune_table(response));
  } else if (mode == "pretrain") {
    std::cout << (format == "csv" ? memest_cli::pretrain_csv(response)
                                  : memest_cli::pretrain_table(response));
  } else {
    std::cout << (format == "csv" ? memest_cli::model_states_csv(response)
                                  : memest_cli::model_states_table(response));
  }
  return kExitOk;
}

void add_format_option(CLI::App& cmd, std::string& format, const char* fallback) {
  format = fallback;
  cmd.add_option("-f,--format", format, "Output format")
      ->check(CLI::IsMember({"table", "json", "csv"}))
      ->capture_default_str();
}

// ---- memest models / memest gpus: the library's "presets" mode, a few columns of it ----

// Copies `columns` of each object in `list` (renamed: {column, key}) into table rows.
ojson pick(const ojson& list, std::initializer_list<std::pair<const char*, const char*>> columns) {
  ojson rows = ojson::array();
  for (const ojson& item : list) {
    ojson row = ojson::object();
    for (const auto& [column, key] : columns) row[column] = item[key];
    rows.push_back(row);
  }
  return rows;
}

int print_list(const ojson& rows, const std::string& format) {
  if (format == "json") std::cout << rows.dump(2) << "\n";
  else if (format == "csv") std::cout << memest_cli::list_csv(rows);
  else std::cout << memest_cli::list_table(rows);
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "memest: will this LLM training run fit in GPU memory, and where does the memory go?\n"
      "Formulas: 4D parallelism memory estimator (Llama), Korthikanti et al. (GPT), ZeRO."};
  app.set_version_flag("--version", std::string("memest ") + memest_version_string());
  app.require_subcommand(1);

  // ---- memest pretrain ----
  auto* pretrain = app.add_subcommand(
      "pretrain", "Per-GPU memory of every pipeline stage for 4D-parallel pretraining");
  ModelChoice pre_model{"llama-3.1-8b", "", 0};
  GpuChoice pre_gpu{"a100-40gb", 0, 0};
  int64_t gpus = 8, tp = 4, cp = 1, pp = 2, vpp = 1, seq = 8192, mbs = 1, global_batch = 1024;
  int zero = 1;
  bool no_sp = false, no_flash = false, uneven = false;
  std::string recompute = "none", activation_model = "auto", param_dtype = "bf16",
              grad_dtype = "fp32", optimizer = "adam", pre_format;
  add_model_options(*pretrain, pre_model, false);
  add_gpu_options(*pretrain, pre_gpu);
  pretrain->add_option("-n,--gpus", gpus, "Number of GPUs")->capture_default_str();
  pretrain->add_option("--tp", tp, "Tensor-parallel size")->capture_default_str();
  pretrain->add_option("--cp", cp, "Context-parallel size")->capture_default_str();
  pretrain->add_option("--pp", pp, "Pipeline-parallel size")->capture_default_str();
  pretrain->add_option("--vpp", vpp, "Virtual stages per device (interleaved 1F1B)")->capture_default_str();
  pretrain->add_flag("--no-sp", no_sp, "Turn sequence parallelism off");
  pretrain->add_flag("--uneven-pipeline", uneven,
                     "When pp does not divide the layers, let the first and last stage hold one fewer");
  pretrain->add_option("--zero", zero, "ZeRO stage (1 = distributed optimizer)")
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
  pretrain->add_option("-s,--seq,--seq-len", seq, "Sequence length")->capture_default_str();
  pretrain->add_option("-b,--mbs,--micro-batch", mbs, "Micro-batch size")->capture_default_str();
  pretrain->add_option("--global-batch", global_batch, "Global batch size (0: not given)")
      ->capture_default_str();
  pretrain->add_option("--recompute", recompute, "Activation recomputation")
      ->check(CLI::IsMember({"none", "selective", "full"}))
      ->capture_default_str();
  pretrain->add_flag("--no-flash-attention", no_flash, "Keep attention scores (no FlashAttention)");
  pretrain->add_option("--activation-model", activation_model,
                       "Activation formula: by family, Llama (4D paper) or GPT (Korthikanti)")
      ->check(CLI::IsMember({"auto", "llama", "gpt"}))
      ->capture_default_str();
  pretrain->add_option("--param-dtype", param_dtype, "Weight precision")
      ->check(CLI::IsMember({"bf16", "fp16", "fp32", "fp8"}))
      ->capture_default_str();
  pretrain->add_option("--grad-dtype", grad_dtype, "Gradient precision")
      ->check(CLI::IsMember({"bf16", "fp16", "fp32", "fp8"}))
      ->capture_default_str();
  pretrain->add_option("--optimizer", optimizer, "Optimizer (sets bytes of state per parameter)")
      ->check(CLI::IsMember({"adam", "adamw", "sgd_momentum", "sgd"}))
      ->capture_default_str();
  add_format_option(*pretrain, pre_format, "table");

  // ---- memest model-states ----
  auto* states = app.add_subcommand(
      "model-states", "Model-state memory per GPU (weights, gradients, optimizer) under ZeRO");
  ModelChoice ms_model{"llama-3.1-8b", "", 0};
  GpuChoice ms_gpu{"", 0, 0};
  int64_t ms_gpus = 1;
  int ms_zero = 0;
  std::string ms_param = "bf16", ms_grad = "fp32", ms_optimizer = "adam", ms_format;
  add_model_options(*states, ms_model, true);
  add_gpu_options(*states, ms_gpu);
  states->add_option("-n,--gpus", ms_gpus, "Data-parallel degree N_d")->capture_default_str();
  states->add_option("--zero", ms_zero, "ZeRO stage: 0 none, 1 P_os, 2 P_os+g, 3 P_os+g+p")
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
  states->add_option("--param-dtype", ms_param, "Weight precision")
      ->check(CLI::IsMember({"bf16", "fp16", "fp32", "fp8"}))
      ->capture_default_str();
  states->add_option("--grad-dtype", ms_grad, "Gradient precision (fp16 for the ZeRO paper's 16 bytes/param)")
      ->check(CLI::IsMember({"bf16", "fp16", "fp32", "fp8"}))
      ->capture_default_str();
  states->add_option("--optimizer", ms_optimizer, "Optimizer")
      ->check(CLI::IsMember({"adam", "adamw", "sgd_momentum", "sgd"}))
      ->capture_default_str();
  add_format_option(*states, ms_format, "table");

  // ---- memest finetune ----
  auto* finetune = app.add_subcommand(
      "finetune", "LLMem peak memory for fine-tuning (CDP, ZeRO-3, 1D TP, DP+TP) and the method choice");
  ModelChoice ft_model{"opt-1.3b", "", 0};
  GpuChoice ft_gpu{"v100-16gb", 0, 0};
  int64_t ft_gpus = 4, ft_tp = 0, ft_batch = 1, ft_seq = 512;
  std::string ft_method = "auto", ft_format, ft_dtype = "fp16";
  bool ft_no_checkpointing = false, ft_flash = false;
  double ft_base_mib = -1, ft_page_mib = 0, ft_chunk_bytes = 0;
  add_model_options(*finetune, ft_model, false);
  add_gpu_options(*finetune, ft_gpu);
  finetune->add_option("-n,--gpus", ft_gpus, "Number of GPUs (gpu_n)")->capture_default_str();
  finetune->add_option("--method", ft_method,
                       "cdp, zero3 (advanced DP), tp (1D TP over all GPUs), dp+tp, or auto (Algorithm 1)")
      ->check(CLI::IsMember({"cdp", "zero3", "tp", "dp+tp", "auto"}))
      ->capture_default_str();
  finetune->add_option("--tp", ft_tp, "Tensor-parallel size for dp+tp (auto: best when 0)")
      ->capture_default_str();
  finetune->add_option("-b,--batch", ft_batch, "Batch size per GPU (ignored by auto)")->capture_default_str();
  finetune->add_option("-s,--seq,--seq-len", ft_seq, "Sequence length")->capture_default_str();
  finetune->add_flag("--no-gradient-checkpointing", ft_no_checkpointing,
                     "Keep every layer's activations (LLMem assumes checkpointing)");
  finetune->add_flag("--flash-attention", ft_flash, "Without checkpointing: attention scores not kept");
  finetune->add_option("--dtype", ft_dtype, "16-bit parameter type")
      ->check(CLI::IsMember({"fp16", "bf16"}))
      ->capture_default_str();
  finetune->add_option("--base-mib", ft_base_mib, "m_base in MiB (default: the GPU preset's)");
  finetune->add_option("--page-mib", ft_page_mib, "CUDA page size in MiB (default: 2)")->check(positive);
  finetune->add_option("--chunk-bytes", ft_chunk_bytes, "Chunk size x 2 bytes (default: searched)")
      ->check(positive);
  add_format_option(*finetune, ft_format, "table");

  // ---- memest search ----
  auto* search = app.add_subcommand(
      "search", "Rank parallel layouts by predicted throughput among those predicted to fit");
  ModelChoice se_model{"llama-3.1-8b", "", 0};
  GpuChoice se_gpu{"a100-40gb", 0, 0};
  int64_t se_gpus = 64, se_seq = 8192, se_global = 1024, se_top = 10;
  int64_t se_max_tp = 0, se_max_cp = 0, se_max_pp = 0, se_max_vpp = 4, se_max_mbs = 0;
  std::vector<std::string> se_recompute{"none", "selective", "full"};
  std::vector<int> se_zero{1};
  bool se_tp_across = false, se_include_oom = false, se_no_flash = false, se_no_sp = false,
       se_even = false;
  std::string se_format;
  add_model_options(*search, se_model, false);
  add_gpu_options(*search, se_gpu);
  search->add_option("-n,--gpus", se_gpus, "Number of GPUs")->capture_default_str();
  search->add_option("-s,--seq,--seq-len", se_seq, "Sequence length")->capture_default_str();
  search->add_option("--global-batch", se_global, "Global batch size")->capture_default_str();
  search->add_option("--top", se_top, "Layouts to show")->check(CLI::Range(1, 10000))->capture_default_str();
  search->add_option("--max-tp", se_max_tp, "Largest tp (0: the node size)")->capture_default_str();
  search->add_option("--max-cp", se_max_cp, "Largest cp (0: no limit)")->capture_default_str();
  search->add_option("--max-pp", se_max_pp, "Largest pp (0: no limit)")->capture_default_str();
  search->add_option("--max-vpp", se_max_vpp, "Largest interleaving factor")->capture_default_str();
  search->add_option("--max-mbs", se_max_mbs, "Largest micro-batch (0: no limit)")->capture_default_str();
  search->add_option("--recompute", se_recompute, "Recomputation options to try")
      ->check(CLI::IsMember({"none", "selective", "full"}))
      ->capture_default_str();
  search->add_option("--zero", se_zero, "ZeRO stages to try")->check(CLI::Range(0, 3))->capture_default_str();
  search->add_flag("--tp-across-nodes", se_tp_across, "Allow tp larger than a node");
  search->add_flag("--include-oom", se_include_oom, "Rank layouts predicted to OOM too (after those that fit)");
  search->add_flag("--no-flash-attention", se_no_flash, "Keep attention scores");
  search->add_flag("--no-sp", se_no_sp, "Turn sequence parallelism off");
  search->add_flag("--even-pipeline", se_even, "Only pipelines whose stages hold equal layers");
  add_format_option(*search, se_format, "table");

  // ---- memest request ----
  auto* request = app.add_subcommand(
      "request", "Answer a JSON request (file or stdin) with the JSON response, as the C API does");
  std::string request_path = "-", request_format;
  request->add_option("file", request_path, "Request file, or - for standard input")
      ->capture_default_str();
  add_format_option(*request, request_format, "json");

  // ---- memest models / gpus ----
  auto* models = app.add_subcommand("models", "List the built-in model presets");
  std::string models_format;
  add_format_option(*models, models_format, "table");
  auto* gpus_cmd = app.add_subcommand("gpus", "List the built-in GPU presets");
  std::string gpus_format;
  add_format_option(*gpus_cmd, gpus_format, "table");

  // CLI11 would report a mistyped subcommand as "A subcommand is required": name it instead.
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) known = known || sub->check_name(argv[1]);
    if (!known) {
      return input_error(std::string("unknown subcommand \"") + argv[1] +
                         "\" (pretrain, finetune, search, model-states, request, models, gpus; see memest --help)");
    }
  }
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return std::string("memest: error: ") + e.what() + "\nRun with --help for more information.\n";
  });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help / version / the parse error
    return code == 0 ? kExitOk : kExitBadInput;
  }

  try {
    if (models->parsed() || gpus_cmd->parsed()) {
      ojson presets;
      if (int rc = call_library(R"({"mode": "presets"})", presets, false); rc != kExitOk) return rc;
      if (models->parsed()) {
        return print_list(pick(presets["models"], {{"id", "id"}, {"name", "name"}, {"family", "family"},
                                                   {"num_parameters", "num_parameters"},
                                                   {"layers", "num_hidden_layers"}, {"hidden", "hidden_size"},
                                                   {"heads", "num_attention_heads"},
                                                   {"kv_heads", "num_key_value_heads"},
                                                   {"ffn", "intermediate_size"}, {"vocab", "vocab_size"},
                                                   {"max_positions", "max_position_embeddings"},
                                                   {"tied", "tie_word_embeddings"}}),
                          models_format);
      }
      return print_list(pick(presets["gpus"], {{"id", "id"}, {"name", "name"}, {"memory_gib", "memory_gib"},
                                               {"gpus_per_node", "gpus_per_node"},
                                               {"peak_bf16_tflops", "peak_bf16_tflops"}}),
                        gpus_format);
    }

    std::string text, format;
    bool error_document = false;
    if (request->parsed()) {
      if (request_path == "-") {
        text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
      } else {
        std::ifstream in(request_path);
        if (!in) return input_error("cannot read request file \"" + request_path + "\"");
        text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      }
      format = request_format;
      error_document = format == "json";
    } else {
      std::string error;
      ojson req;
      if (search->parsed()) {
        ojson model;
        if (!model_value(se_model, model, error)) return input_error(error);
        req = {{"mode", "search"},
               {"model", model},
               {"gpu", gpu_value(se_gpu)},
               {"parallel", {{"gpus", se_gpus}, {"sp", !se_no_sp}}},
               {"training", {{"seq_len", se_seq}, {"global_batch", se_global}, {"flash_attention", !se_no_flash}}},
               {"search",
                {{"top", se_top}, {"max_tp", se_max_tp}, {"max_cp", se_max_cp}, {"max_pp", se_max_pp},
                 {"max_vpp", se_max_vpp}, {"max_micro_batch", se_max_mbs}, {"recompute", se_recompute},
                 {"zero", se_zero}, {"tp_within_node", !se_tp_across}, {"include_oom", se_include_oom},
                 {"uneven_pipeline", !se_even}}}};
        format = se_format;
      } else if (finetune->parsed()) {
        ojson model;
        if (!model_value(ft_model, model, error)) return input_error(error);
        ojson options = {{"method", ft_method}, {"batch", ft_batch},
                         {"gradient_checkpointing", !ft_no_checkpointing},
                         {"flash_attention", ft_flash}, {"dtype", ft_dtype}};
        if (ft_tp > 0) options["tp"] = ft_tp;
        if (ft_base_mib >= 0) options["base_bytes"] = ft_base_mib * 1024 * 1024;
        if (ft_page_mib > 0) options["page_bytes"] = ft_page_mib * 1024 * 1024;
        if (ft_chunk_bytes > 0) options["chunk_bytes"] = ft_chunk_bytes;
        req = {{"mode", "finetune"},
               {"model", model},
               {"gpu", gpu_value(ft_gpu)},
               {"parallel", {{"gpus", ft_gpus}}},
               {"training", {{"seq_len", ft_seq}}},
               {"finetune", options}};
        format = ft_format;
      } else if (pretrain->parsed()) {
        ojson model;
        if (!model_value(pre_model, model, error)) return input_error(error);
        req = {{"mode", "pretrain"},
               {"model", model},
               {"gpu", gpu_value(pre_gpu)},
               {"parallel",
                {{"gpus", gpus}, {"tp", tp}, {"cp", cp}, {"pp", pp}, {"vpp", vpp},
                 {"sp", !no_sp}, {"zero", zero}, {"uneven_pipeline", uneven}}},
               {"training",
                {{"seq_len", seq}, {"micro_batch", mbs}, {"global_batch", global_batch},
                 {"recompute", recompute}, {"flash_attention", !no_flash},
                 {"activation_model", activation_model}, {"param_dtype", param_dtype},
                 {"grad_dtype", grad_dtype}, {"optimizer", optimizer}}}};
        format = pre_format;
      } else {
        ojson model;
        if (!model_value(ms_model, model, error)) return input_error(error);
        req = {{"mode", "model_states"},
               {"model", model},
               {"parallel", {{"gpus", ms_gpus}, {"zero", ms_zero}}},
               {"training",
                {{"param_dtype", ms_param}, {"grad_dtype", ms_grad}, {"optimizer", ms_optimizer}}}};
        if (!ms_gpu.preset.empty() || ms_gpu.memory_gib > 0) req["gpu"] = gpu_value(ms_gpu);
        format = ms_format;
      }
      text = req.dump();
    }
    ojson response;
    if (int rc = call_library(text, response, error_document); rc != kExitOk) return rc;
    return print_response(response, format);
  } catch (const std::exception& e) {
    std::cerr << "memest: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}
