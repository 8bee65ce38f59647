// `memest import`: one run's launch files (a torchtitan TOML, a Megatron launch script, a
// DeepSpeed JSON with the script that launches it, a torchtune / axolotl / LLaMA-Factory /
// accelerate YAML) read into the memest pretraining request the run describes, every value
// tagged with where it came from (docs/launch-import.md).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launch/sources.hpp"
#include "memest/memest.h"

namespace memest::launch {

// What the user adds beside the files (CLI flags, JSON fields of the import request): the
// values a launch file cannot give, and overrides of what it says.
struct ImportOptions {
  std::string format = "auto";  // or one of kLaunchFormats
  json gpu;                     // a preset id or a gpu object; null when not given
  std::optional<int64_t> gpus;
  json model;                   // a preset id, a Hugging Face id, or a config.json object
  std::optional<int64_t> seq_len;
  json set = json::object();    // request fields to override, as a nested object
  std::string hf_home;          // where to look for cached config.json files ("" = the
                                // environment's HF_HUB_CACHE / HF_HOME / ~/.cache/huggingface)
};

constexpr const char* kLaunchFormats[] = {"torchtitan", "megatron",  "deepspeed",
                                          "hf",         "torchtune", "axolotl",
                                          "llama-factory", "accelerate"};

struct ImportResult {
  std::string format;  // the run's main format
  json request;        // a complete "pretrain" request
  json origins;        // request field path -> where its value came from
  json warnings;       // settings that change memory but the request cannot represent
  json files;          // each file with the format it was read as
};

ImportResult import_launch(const std::vector<LaunchFile>& files, const ImportOptions& options);

// The request being built, with the origin of each field. Field paths are dotted request
// paths ("parallel.tp", "training.adapter.rank").
class RequestBuilder {
 public:
  // A value read from a launch file.
  void from_file(const std::string& field, json value, const Setting& s);
  // The framework's default for what the files leave out, with the file that defines it.
  void from_default(const std::string& field, json value, const std::string& framework,
                    const std::string& rule, const std::string& defined_in);
  // A value derived from others (e.g. the global batch from micro-batch × accumulation × dp).
  void derived(const std::string& field, json value, const std::string& rule);
  // A value the user gave beside the files.
  void from_flag(const std::string& field, json value, const std::string& flag);

  bool has(const std::string& field) const;
  const json* get(const std::string& field) const;
  void erase(const std::string& field);

  // A setting that changes memory but has no request field: listed, never dropped.
  void warn(const Setting& s, const std::string& message);
  void warn(const std::string& message);

  json request = json::object();
  json origins = json::object();
  json warnings = json::array();
  // Gradient-accumulation steps, for the global batch when the files give none (micro-batch
  // x accumulation x data-parallel size, once the GPU count is known).
  int64_t accumulation = 1;
  json accumulation_origin;
  // Values that need the resolved model, settled once "model" is known (flags included):
  // DeepSpeed's "auto" bucket sizes (from hidden_size) and torchtitan's
  // pipeline_parallel_layers_per_stage (stages per rank from num_hidden_layers).
  struct Pending {
    std::string field;
    Setting at;
  };
  std::vector<Pending> pending_auto;
  std::optional<Setting> layers_per_stage;
  bool all_linear_targets = false;  // peft "all-linear": an MoE model's router too
  bool clm_block_size = false;      // run_clm.py: its block size from the model when not given
  // Megatron's vocabulary before padding to a multiple of divisor x tp
  // (megatron/training/tokenizer/tokenizer.py _vocab_size_with_padding); 0 = none
  int64_t megatron_vocab = 0;
  int64_t megatron_vocab_divisor = 128;

 private:
  void put(const std::string& field, json value, json origin);
};

// One run's files after reading, by role.
struct Run {
  std::string format;                 // the main format
  const LaunchFile* main = nullptr;
  Settings settings;                  // the main file's settings (TOML/YAML/JSON formats)
  std::optional<ShellCommand> command;  // a launch script's training command
  const LaunchFile* command_file = nullptr;
  std::optional<Settings> deepspeed;  // a DeepSpeed JSON of the run
  const LaunchFile* deepspeed_file = nullptr;
  std::optional<Settings> accelerate;  // an accelerate config of the run
  const LaunchFile* accelerate_file = nullptr;
};

// The mappers, one per ecosystem (map_pretraining.cpp, map_finetuning.cpp). Each fills the
// builder from the run and the framework's defaults; the model may be left to the caller
// (model_hint: the name the files give, resolved by model_names.hpp).
struct MapContext {
  const Run& run;
  RequestBuilder& b;
  const ImportOptions& options;
};

void map_torchtitan(MapContext& c);
void map_megatron(MapContext& c);
void map_hf_trainer(MapContext& c);  // HF TrainingArguments (+ DeepSpeed, + accelerate)
void map_accelerate_only(MapContext& c);
void map_deepspeed_only(MapContext& c);
void map_torchtune(MapContext& c);
void map_axolotl(MapContext& c);
void map_llama_factory(MapContext& c);

// Shared by several mappers: a DeepSpeed config's ZeRO stage, offload, micro-batch and
// precision, with "auto" resolved from the HF TrainingArguments values already in the
// builder; an accelerate config's distributed type and plugins.
void apply_deepspeed(MapContext& c, const Settings& ds);
void apply_accelerate(MapContext& c, const Settings& acc);
// HF TrainingArguments (shell flags or YAML keys of the same names): micro-batch,
// accumulation, checkpointing, precision, optimizer, fsdp.
void apply_training_arguments(MapContext& c, const Settings& args, const std::string& prefix);

// The model a file names (a Hugging Face id or path, a torchtitan flavor, a torchtune
// builder), resolved by model_names.hpp into "model"; left unset when it cannot be, so that
// the user's --model is asked for by name.
void set_model_by_name(MapContext& c, const Setting& s, const std::string& name);

}  // namespace memest::launch
