#include "launch/import.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/enums.hpp"
#include "core/error.hpp"
#include "launch/model_names.hpp"
#include "model/adapter.hpp"
#include "model/hf_config.hpp"
#include "model/presets.hpp"

namespace memest::launch {

// ---------------------------------------------------------------- the request builder

namespace {

std::vector<std::string> split_path(const std::string& field) {
  std::vector<std::string> parts;
  std::size_t start = 0, dot;
  while ((dot = field.find('.', start)) != std::string::npos) {
    parts.push_back(field.substr(start, dot - start));
    start = dot + 1;
  }
  parts.push_back(field.substr(start));
  return parts;
}

json file_origin(const Setting& s) {
  json o = {{"from", "file"}, {"file", s.file}, {"key", s.key}};
  if (s.line > 0) o["line"] = s.line;
  return o;
}

}  // namespace

void RequestBuilder::put(const std::string& field, json value, json origin) {
  json* at = &request;
  const std::vector<std::string> parts = split_path(field);
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    if (!at->contains(parts[i]) || !(*at)[parts[i]].is_object()) (*at)[parts[i]] = json::object();
    at = &(*at)[parts[i]];
  }
  (*at)[parts.back()] = std::move(value);
  origins[field] = std::move(origin);
}

void RequestBuilder::from_file(const std::string& field, json value, const Setting& s) {
  put(field, std::move(value), file_origin(s));
}

void RequestBuilder::from_default(const std::string& field, json value,
                                  const std::string& framework, const std::string& rule,
                                  const std::string& defined_in) {
  put(field, std::move(value),
      {{"from", "default"}, {"framework", framework}, {"default", rule}, {"defined_in", defined_in}});
}

void RequestBuilder::derived(const std::string& field, json value, const std::string& rule) {
  put(field, std::move(value), {{"from", "derived"}, {"rule", rule}});
}

void RequestBuilder::from_flag(const std::string& field, json value, const std::string& flag) {
  put(field, std::move(value), {{"from", "flag"}, {"flag", flag}});
}

const json* RequestBuilder::get(const std::string& field) const {
  const json* at = &request;
  for (const std::string& p : split_path(field)) {
    if (!at->is_object() || !at->contains(p)) return nullptr;
    at = &(*at)[p];
  }
  return at;
}

bool RequestBuilder::has(const std::string& field) const { return get(field) != nullptr; }

void RequestBuilder::erase(const std::string& field) {
  json* at = &request;
  const std::vector<std::string> parts = split_path(field);
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    if (!at->contains(parts[i])) return;
    at = &(*at)[parts[i]];
  }
  at->erase(parts.back());
  origins.erase(field);
}

void RequestBuilder::warn(const Setting& s, const std::string& message) {
  json w = {{"file", s.file}, {"key", s.key}, {"message", message}};
  if (s.line > 0) w["line"] = s.line;
  warnings.push_back(std::move(w));
}

void RequestBuilder::warn(const std::string& message) {
  warnings.push_back({{"message", message}});
}

void set_model_by_name(MapContext& c, const Setting& s, const std::string& name) {
  if (auto m = model_by_hf_id(name, c.options.hf_home)) {
    c.b.from_file("model", m->model, s);
    c.b.origins["model"]["resolved"] = m->how;
    return;
  }
  c.b.origins["model"] = {{"from", "unresolved"}, {"name", name}, {"file", s.file}, {"key", s.key},
                          {"line", s.line}};
}

// ---------------------------------------------------------------- reading the files

namespace {

struct ReadFile {
  std::string format;
  Settings settings;
  std::optional<ShellCommand> command;
};

bool has_key_suffix(const Settings& s, const std::string& suffix) {
  for (const auto& [k, v] : s.all()) {
    if (k == suffix || (k.size() > suffix.size() &&
                        k.compare(k.size() - suffix.size() - 1, suffix.size() + 1, "." + suffix) == 0)) {
      return true;
    }
  }
  return false;
}

bool looks_like_toml(const std::string& text) {
  // a [table] header line that YAML would read as a flow list of one plain word
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.size() > 2 && line[0] == '[' && line.back() == ']' &&
        line.find_first_of(",'\" ") == std::string::npos) {
      return true;
    }
    at = end + 1;
  }
  return false;
}

std::string yaml_format(const Settings& s) {
  if (has_key_suffix(s, "_component_")) return "torchtune";
  if (s.has("distributed_type") || s.has("compute_environment")) return "accelerate";
  if (s.has("zero_optimization") || s.has("zero_optimization.stage") ||
      s.has("train_micro_batch_size_per_gpu") || s.has("train_batch_size")) {
    return "deepspeed";
  }
  if (s.has("base_model")) return "axolotl";
  if (s.has("model_name_or_path") &&
      (s.has("finetuning_type") || s.has("stage") || s.has("template") || s.has("cutoff_len"))) {
    return "llama-factory";
  }
  for (const auto& [k, v] : s.all()) {
    if (k.rfind("MODEL_ARGS.--", 0) == 0) return "megatron";  // Megatron's test-recipe YAML
  }
  for (const char* k : {"tensor_model_parallel_size", "micro_batch_size", "num_layers",
                        "model.tensor_model_parallel_size", "model.micro_batch_size",
                        "pipeline_model_parallel_size"}) {
    if (s.has(k)) return "megatron";
  }
  if (s.has("model_name_or_path") || s.has("per_device_train_batch_size")) return "hf";
  return "";
}

std::string shell_format(const ShellCommand& c) {
  const std::string& s = c.script;
  if (s.find("pretrain_") != std::string::npos || c.options.has("--tensor-model-parallel-size") ||
      c.options.has("--micro-batch-size") || c.options.has("--num-layers")) {
    return "megatron";
  }
  return "hf";  // HF TrainingArguments flags (run_clm.py, a Trainer script, accelerate launch)
}

ReadFile read_one(const LaunchFile& f, const std::string& field, const std::string& forced,
                  const std::vector<std::string>& others) {
  ReadFile r;
  check_launch_text(f, field);
  // the kind of text first (JSON, shell, TOML, YAML); a named format applies to the files of
  // a kind it can be (a DeepSpeed JSON beside a script keeps its own)
  std::size_t first = f.text.find_first_not_of(" \t\r\n");
  const bool json_like = first != std::string::npos && f.text[first] == '{';
  const std::string kind = json_like                   ? "json"
                           : looks_like_shell(f.text)  ? "shell"
                           : looks_like_toml(f.text)   ? "toml"
                                                       : "yaml";
  std::string named = forced;
  const bool fits = forced == "auto" ||
                    (forced == "torchtitan" && kind != "shell" && kind != "json") ||
                    (forced == "deepspeed" && (kind == "json" || kind == "yaml")) ||
                    ((forced == "megatron" || forced == "hf") && kind != "toml" && kind != "json") ||
                    ((forced == "torchtune" || forced == "axolotl" || forced == "llama-factory" ||
                      forced == "accelerate") && (kind == "yaml" || kind == "toml"));
  if (!fits) named = "auto";
  if (named == "torchtitan" || (named == "auto" && kind == "toml")) {
    r.settings = read_toml(f, field);
    r.format = "torchtitan";
    return r;
  }
  if (kind == "shell") {
    r.command = read_shell(f, field, others);
    r.format = named == "auto" ? shell_format(*r.command) : named;
    return r;
  }
  r.settings = read_yaml(f, field);
  r.format = named == "auto" ? yaml_format(r.settings) : named;
  if (r.format.empty()) {
    std::string keys;
    int n = 0;
    for (const auto& [k, v] : r.settings.all()) {
      if (n++ == 6) break;
      keys += (keys.empty() ? "" : ", ") + k;
    }
    throw Error(MEMEST_ERR_UNSUPPORTED, field,
                field + ": " + f.name +
                    " is not a launch file memest reads (torchtitan TOML, Megatron script or "
                    "argument YAML, DeepSpeed JSON, HF TrainingArguments, torchtune, axolotl, "
                    "LLaMA-Factory or accelerate YAML); its keys begin: " + echo(keys, 120) +
                    " (or name the format with --format)");
  }
  return r;
}

int main_rank(const std::string& format) {
  // which file describes the run when several are given (the others are its helpers)
  if (format == "torchtitan" || format == "megatron" || format == "torchtune" ||
      format == "axolotl" || format == "llama-factory") {
    return 3;
  }
  if (format == "hf") return 2;
  if (format == "accelerate") return 1;
  return 0;  // deepspeed
}

}  // namespace

// ---------------------------------------------------------------- after the mapper

namespace {

// The GPU count from the launcher's options (torchrun --nproc_per_node x --nnodes, deepspeed
// --num_gpus x --num_nodes, accelerate --num_processes), when they are numbers.
void gpus_from_launcher(MapContext& c) {
  if (!c.run.command || c.b.has("parallel.gpus")) return;
  const Settings& o = c.run.command->launcher_options;
  auto integer = [&](std::initializer_list<const char*> keys) -> const Setting* {
    for (const char* k : keys) {
      if (const Setting* s = o.take(k)) {
        const std::string v = s->value.is_string() ? s->value.get<std::string>() : s->value.dump();
        if (!v.empty() && std::all_of(v.begin(), v.end(), ::isdigit) && v.size() < 7) return s;
      }
    }
    return nullptr;
  };
  const Setting* per_node = integer({"--nproc_per_node", "--nproc-per-node", "--num_gpus",
                                     "--num-gpus", "--num_processes", "--num-processes"});
  const Setting* nodes = integer({"--nnodes", "--num_nodes", "--num-nodes", "--num_machines"});
  if (!per_node) return;
  int64_t gpus = integer_of(*per_node);
  // accelerate's --num_processes counts every process of every machine
  const bool total = per_node->key.find("num_processes") != std::string::npos ||
                     per_node->key.find("num-processes") != std::string::npos;
  if (nodes && !total) gpus *= integer_of(*nodes);
  c.b.from_file("parallel.gpus", gpus, *per_node);
  if (nodes && !total) c.b.origins["parallel.gpus"]["times"] = json{{"key", nodes->key}, {"line", nodes->line}};
}

int64_t request_int(const RequestBuilder& b, const std::string& field, int64_t fallback) {
  const json* v = b.get(field);
  return v && v->is_number_integer() ? v->get<int64_t>() : fallback;
}

void apply_flags(RequestBuilder& b, const ImportOptions& o) {
  if (!o.gpu.is_null()) b.from_flag("gpu", o.gpu, "--gpu");
  if (o.gpus) b.from_flag("parallel.gpus", *o.gpus, "--gpus");
  if (!o.model.is_null()) {
    json model = o.model;
    std::string how;
    if (model.is_string()) {
      const std::string id = model.get<std::string>();
      if (auto m = model_by_hf_id(id, o.hf_home)) {
        model = m->model, how = m->how;
      } else if (id.find('/') != std::string::npos) {
        // a Hugging Face id memest does not know: asked for as a file's unknown name is
        b.erase("model");
        b.origins["model"] = {{"from", "unresolved"}, {"name", id}, {"file", "--model"}};
        model = nullptr;
      }
    }
    if (!model.is_null()) {
      b.from_flag("model", model, "--model");
      if (!how.empty()) b.origins["model"]["resolved"] = how;
    }
  }
  if (o.seq_len) b.from_flag("training.seq_len", *o.seq_len, "--seq");
  // --set: any request field, as a nested object; each leaf is an override
  std::function<void(const json&, const std::string&)> walk = [&](const json& v, const std::string& path) {
    if (v.is_object() && !v.empty() && path != "model" && path != "gpu" && path != "training.adapter.targets") {
      for (auto it = v.begin(); it != v.end(); ++it) walk(it.value(), path.empty() ? it.key() : path + "." + it.key());
      return;
    }
    b.from_flag(path, v, "--set " + path);
  };
  if (o.set.is_object() && !o.set.empty()) walk(o.set, "");
}

// The values a run needs that no file gave: each error names the flag that gives it.
void require_given(const RequestBuilder& b) {
  if (!b.has("gpu")) {
    throw Error(MEMEST_ERR_MISSING_FIELD, "gpu",
                "gpu: launch files do not say which GPU runs them: add --gpu with a preset id "
                "(memest gpus lists them, e.g. h100-80gb), or --memory-gib, or --gpu-profile");
  }
  if (!b.has("parallel.gpus")) {
    throw Error(MEMEST_ERR_MISSING_FIELD, "gpus",
                "gpus: the files do not fix the number of GPUs (the launcher uses every visible "
                "device): add --gpus N");
  }
  if (!b.has("model")) {
    const json& o = b.origins.contains("model") ? b.origins["model"] : json();
    if (o.is_object() && o.value("from", "") == "unresolved") {
      const std::string name = o.value("name", "");
      throw Error(MEMEST_ERR_MISSING_FIELD, "model",
                  "model: " + o.value("file", std::string()) + " names \"" + echo(name) +
                      "\", which is neither a built-in preset nor in the local Hugging Face "
                      "cache (" + hf_cache_dir_name(name) + "): add --model with a preset id "
                      "(memest models), a Hugging Face id, or --config with its config.json");
    }
    throw Error(MEMEST_ERR_MISSING_FIELD, "model",
                "model: the files name no model: add --model with a preset id (memest models) "
                "or a Hugging Face id, or --config with its config.json");
  }
  if (!b.has("training.seq_len")) {
    throw Error(MEMEST_ERR_MISSING_FIELD, "seq_len",
                "seq_len: the files give no sequence length (the data decides it): add --seq N");
  }
}

// The global batch, when no file gave it: micro-batch x accumulation x data-parallel size.
void derive_global_batch(RequestBuilder& b) {
  if (b.has("training.global_batch")) return;
  const int64_t gpus = request_int(b, "parallel.gpus", 0);
  const int64_t model_parallel = request_int(b, "parallel.tp", 1) * request_int(b, "parallel.pp", 1) *
                                 request_int(b, "parallel.cp", 1);
  if (gpus <= 0 || model_parallel <= 0 || gpus % model_parallel != 0) return;
  const int64_t dp = gpus / model_parallel;
  const int64_t micro = request_int(b, "training.micro_batch", 1);
  b.derived("training.global_batch", micro * b.accumulation * dp,
            "micro_batch x gradient accumulation (" + std::to_string(b.accumulation) +
                ") x data-parallel size (" + std::to_string(dp) + ")");
  if (!b.accumulation_origin.is_null()) b.origins["training.global_batch"]["accumulation"] = b.accumulation_origin;
}

// What needs the resolved model: DeepSpeed's "auto" buckets and torchtitan's
// pipeline_parallel_layers_per_stage.
void settle_with_model(RequestBuilder& b) {
  if (!b.has("model")) return;  // asked for by require_given
  const json* given = b.get("training.adapter.targets");
  const bool names_out_proj = given && given->is_array() &&
                              std::find(given->begin(), given->end(), json("out_proj")) != given->end();
  if (b.pending_auto.empty() && !b.layers_per_stage && !b.all_linear_targets && !names_out_proj &&
      !(b.clm_block_size && !b.has("training.seq_len"))) {
    return;
  }
  const json& model = *b.get("model");
  const memest_model m = model.is_string() ? find_model_preset(model.get<std::string>(), "model").model
                                           : model_from_json(model, "model");
  if (b.clm_block_size && !b.has("training.seq_len")) {
    // examples/pytorch/language-modeling/run_clm.py: block_size = min(1024,
    // tokenizer.model_max_length) when --block_size is not given
    b.from_default("training.seq_len", std::min<int64_t>(1024, m.max_position_embeddings), "transformers",
                   "run_clm.py block_size = min(1024, model_max_length)",
                   "examples/pytorch/language-modeling/run_clm.py");
  }
  if (names_out_proj && !b.all_linear_targets) {
    // "out_proj" is a Mamba / gated DeltaNet mixer's output projection on a hybrid (its
    // attention's is o_proj: NemotronH, Jamba, Falcon-H1, Qwen3-Next); elsewhere the
    // attention's output projection (OPT, BART name it so)
    const LayerMix all = layer_mix(m, 0, m.num_hidden_layers);
    if (all.mamba + all.parallel + all.deltanet == 0 || uses_kda(m)) {
      json renamed = json::array();
      for (const json& t : *given) {
        const json name = t == "out_proj" ? json("o_proj") : t;
        if (std::find(renamed.begin(), renamed.end(), name) == renamed.end()) renamed.push_back(name);
      }
      b.request["training"]["adapter"]["targets"] = renamed;
    }
  }
  if (b.all_linear_targets && b.has("training.adapter.targets")) {
    // peft's all-linear: every nn.Linear but the output layer, for this model (an MoE router
    // is one; a GELU MLP has no gate_proj): model/adapter.hpp all_linear_targets, the meaning
    // the JSON reader's "all-linear" target has too
    const uint32_t bits = all_linear_targets(m, "training.adapter.targets");
    json targets = json::array();
    for (int32_t i = 0; i < MEMEST_LORA_TARGET_COUNT; ++i) {
      if (bits & (1u << i)) targets.push_back(enum_name(MEMEST_ENUM_LORA_TARGET, i));
    }
    b.request["training"]["adapter"]["targets"] = targets;
  }
  // transformers/integrations/deepspeed.py trainer_config_finalize: reduce_bucket_size =
  // hidden^2, stage3_prefetch_bucket_size = 0.9 hidden^2 (an integer since 4.39),
  // stage3_param_persistence_threshold = 10 hidden; the others keep DeepSpeed's defaults
  const double h = static_cast<double>(m.hidden_size);
  for (const RequestBuilder::Pending& p : b.pending_auto) {
    double v = -1;
    if (p.field == "training.buckets.reduce_bucket_size") v = h * h;
    else if (p.field == "training.buckets.stage3_prefetch_bucket_size") v = std::floor(0.9 * h * h);
    else if (p.field == "training.buckets.stage3_param_persistence_threshold") v = 10 * h;
    if (v < 0) continue;  // "auto" elsewhere: DeepSpeed's own default (memest's)
    b.from_file(p.field, v, p.at);
    b.origins[p.field]["rule"] = "\"auto\": the HF Trainer's value from hidden_size " +
                                 std::to_string(m.hidden_size) +
                                 " (transformers/integrations/deepspeed.py)";
  }
  if (b.layers_per_stage) {
    // torchtitan/distributed/pipeline_parallel.py: ceil((layers + 2) / layers_per_stage)
    // stages, the embedding and the head each weighted as a layer, over pp ranks
    const Setting& at = *b.layers_per_stage;
    const int64_t per = integer_of(at);
    const int64_t pp = request_int(b, "parallel.pp", 1);
    const int64_t stages = per > 0 ? (m.num_hidden_layers + 2 + per - 1) / per : 0;
    if (per <= 0 || pp <= 0 || stages % pp != 0) {
      throw Error(MEMEST_ERR_INVALID_ARGUMENT, at.file + ":" + at.key,
                  where(at) + ": " + std::to_string(stages) + " stages of " + std::to_string(per) +
                      " layers (with the embedding and the head) do not divide over pp " +
                      std::to_string(pp));
    }
    b.from_file("parallel.vpp", stages / pp, at);
    b.origins["parallel.vpp"]["rule"] = "ceil((num_hidden_layers + 2) / layers_per_stage) / pp";
  }
}

}  // namespace

ImportResult import_launch(const std::vector<LaunchFile>& files, const ImportOptions& options) {
  if (files.empty()) fail("files", "give at least one launch file", MEMEST_ERR_MISSING_FIELD);
  if (files.size() > kMaxLaunchFiles) {
    fail("files", std::to_string(files.size()) + " files, more than one run's " +
                      std::to_string(kMaxLaunchFiles));
  }
  const bool known_format =
      options.format == "auto" ||
      std::find_if(std::begin(kLaunchFormats), std::end(kLaunchFormats),
                   [&](const char* f) { return options.format == f; }) != std::end(kLaunchFormats);
  if (!known_format) {
    fail("format", "must be auto, torchtitan, megatron, deepspeed, hf, torchtune, axolotl, "
                   "llama-factory or accelerate, got \"" + echo(options.format) + "\"");
  }
  std::vector<ReadFile> read;
  Run run;
  ImportResult result;
  result.files = json::array();
  int best = -1;
  std::size_t main_index = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::string field = "files[" + std::to_string(i) + "]";
    const std::string& forced = options.format;  // applied where the file's kind allows
    std::vector<std::string> others;
    for (std::size_t k = 0; k < files.size(); ++k) {
      if (k != i) others.push_back(files[k].name);
    }
    read.push_back(read_one(files[i], field, forced, others));
    result.files.push_back({{"name", files[i].name}, {"format", read.back().format}});
    const int rank = main_rank(read.back().format);
    if (rank == best && rank >= 2 && read.back().format != "hf") {
      fail("files", files[main_index].name + " and " + files[i].name +
                        " each describe a run: give one run's files");
    }
    if (rank > best) best = rank, main_index = i;
  }
  if (options.format != "auto" &&
      std::none_of(read.begin(), read.end(), [&](const ReadFile& r) { return r.format == options.format; })) {
    fail("format", "none of the files reads as " + options.format + " (their formats: " +
                       result.files.dump() + ")");
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    ReadFile& r = read[i];
    if (i == main_index) {
      run.format = r.format;
      run.main = &files[i];
      run.settings = std::move(r.settings);
      if (r.command) run.command = std::move(r.command), run.command_file = &files[i];
      continue;
    }
    if (r.format == "deepspeed") {
      run.deepspeed = std::move(r.settings), run.deepspeed_file = &files[i];
    } else if (r.format == "accelerate") {
      run.accelerate = std::move(r.settings), run.accelerate_file = &files[i];
    } else if (r.command) {
      run.command = std::move(r.command), run.command_file = &files[i];
    } else {
      fail("files[" + std::to_string(i) + "]", files[i].name + " (" + r.format +
                                                   ") is not part of a " + read[main_index].format +
                                                   " run");
    }
  }
  // A Megatron run is launched by its shell script; an HF-Trainer run is too, and so is an
  // accelerate one. The main file stays the one read above.
  RequestBuilder b;
  b.request["mode"] = "pretrain";
  b.origins["mode"] = {{"from", "derived"}, {"rule", "a launch file describes one layout"}};
  MapContext c{run, b, options};
  gpus_from_launcher(c);
  if (run.format == "torchtitan") map_torchtitan(c);
  else if (run.format == "megatron") map_megatron(c);
  else if (run.format == "hf") map_hf_trainer(c);
  else if (run.format == "accelerate") map_accelerate_only(c);
  else if (run.format == "deepspeed") map_deepspeed_only(c);
  else if (run.format == "torchtune") map_torchtune(c);
  else if (run.format == "axolotl") map_axolotl(c);
  else map_llama_factory(c);
  apply_flags(b, options);
  // PyTorch keeps each .grad in its parameter's dtype, and DeepSpeed's ZeRO reduces and
  // partitions the 16-bit gradients (its fp32 copy is the optimizer's master): outside
  // Megatron, whose main_grad is fp32 by default, gradients are stored as the parameters are
  const json* fw = b.get("training.framework");
  const json* pd = b.get("training.param_dtype");
  if (fw && pd && !b.has("training.grad_dtype") && *fw != "megatron") {
    b.derived("training.grad_dtype", *pd,
              *fw == "deepspeed" ? "DeepSpeed ZeRO keeps the gradients in the 16-bit dtype "
                                   "(deepspeed/runtime/zero/stage_1_and_2.py)"
                                 : "PyTorch stores .grad in the parameter's dtype");
  }
  if (b.megatron_vocab > 0 && b.has("model") && b.get("model")->is_object() &&
      b.origins["model"].value("from", "") == "file") {
    const int64_t tp = std::max<int64_t>(request_int(b, "parallel.tp", 1), 1);
    const int64_t d = b.megatron_vocab_divisor * tp;
    b.request["model"]["vocab_size"] = (b.megatron_vocab + d - 1) / d * d;
    b.origins["model"]["vocab"] = std::to_string(b.megatron_vocab) + " padded to a multiple of " +
                                  std::to_string(b.megatron_vocab_divisor) + " x tp " + std::to_string(tp);
  }
  settle_with_model(b);
  require_given(b);
  derive_global_batch(b);
  result.format = run.format;
  result.request = std::move(b.request);
  result.origins = std::move(b.origins);
  result.warnings = std::move(b.warnings);
  return result;
}

}  // namespace memest::launch
