// `memest import FILE...`: one run's launch files read by the library (mode "import") into
// the request they describe, each value with its origin; `--estimate` runs it at once. The
// files are sent as text; every format, mapping and default is the library's.
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "commands.hpp"

namespace memest_cli {

namespace {

struct ImportOptions {
  std::vector<std::string> files;
  std::vector<std::string> formats;  // launch format and/or output format (table, json)
  GpuChoice gpu;
  std::string model;
  std::string config_path;
  int64_t gpus = 0;
  int64_t seq_len = 0;
  std::vector<std::string> set;
  std::string hf_home;
  bool estimate = false;
  bool explain = false;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// --set parallel.tp=2: a request field (dotted path) and a JSON value, or a bare word as a string.
void put_setting(ojson& set, const std::string& assignment) {
  const std::size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw InputError("--set " + assignment + ": expected FIELD=VALUE (e.g. parallel.tp=2)");
  }
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  ojson value = ojson::parse(text, nullptr, false);
  if (value.is_discarded()) value = text;
  ojson* at = &set;
  std::size_t start = 0;
  for (std::size_t dot = path.find('.'); ; dot = path.find('.', start)) {
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (part.empty()) throw InputError("--set " + assignment + ": an empty field name");
    if (dot == std::string::npos) {
      (*at)[part] = value;
      break;
    }
    if (!at->contains(part) || !(*at)[part].is_object()) (*at)[part] = ojson::object();
    at = &(*at)[part];
    start = dot + 1;
  }
}

ojson import_document(const ImportOptions& o, std::string& output) {
  ojson doc = {{"mode", "import"}};
  ojson files = ojson::array();
  for (const std::string& path : o.files) files.push_back({{"name", path}, {"text", read_text(path)}});
  doc["files"] = files;
  output = "table";
  for (const std::string& f : o.formats) {
    if (f == "table" || f == "json") output = f;
    else doc["format"] = f;
  }
  if (gpu_given(o.gpu)) doc["gpu"] = gpu_value(o.gpu);
  if (!o.config_path.empty()) doc["model"] = read_config_file(o.config_path);
  else if (!o.model.empty()) doc["model"] = o.model;
  if (o.gpus > 0) doc["gpus"] = o.gpus;
  if (o.seq_len > 0) doc["seq_len"] = o.seq_len;
  if (!o.set.empty()) {
    ojson set = ojson::object();
    for (const std::string& s : o.set) put_setting(set, s);
    doc["set"] = set;
  }
  if (!o.hf_home.empty()) doc["hf_home"] = o.hf_home;
  if (o.estimate) doc["estimate"] = true;
  return doc;
}

std::string value_text(const ojson& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("name")) return v["name"].get<std::string>() + " (config)";
  if (v.is_object()) return "(config.json fields)";
  return v.dump();
}

// "file:line key", "torchtitan default: ... (file)", "--gpu", "derived: ..."
std::string origin_text(const ojson& o) {
  const std::string from = o.value("from", "");
  if (from == "file") {
    std::string t = o.value("file", std::string());
    if (o.contains("line")) t += ":" + std::to_string(o["line"].get<int64_t>());
    if (o.contains("key")) t += " " + o["key"].get<std::string>();
    if (o.contains("resolved")) t += " (" + o["resolved"].get<std::string>() + ")";
    if (o.contains("rule")) t += " (" + o["rule"].get<std::string>() + ")";
    return t;
  }
  if (from == "default") {
    return o.value("framework", std::string()) + " default: " + o.value("default", std::string()) +
           " (" + o.value("defined_in", std::string()) + ")";
  }
  if (from == "flag") {
    std::string t = o.value("flag", std::string());
    if (o.contains("resolved")) t += " (" + o["resolved"].get<std::string>() + ")";
    return t;
  }
  if (from == "derived") return "derived: " + o.value("rule", std::string());
  return from;
}

void flatten(const ojson& v, const std::string& path, std::vector<std::pair<std::string, ojson>>& out) {
  if (v.is_object() && path != "model" && path != "gpu" && !path.empty() && path != "training.adapter.targets") {
    for (auto it = v.begin(); it != v.end(); ++it) flatten(it.value(), path + "." + it.key(), out);
    return;
  }
  if (v.is_object() && path.empty()) {
    for (auto it = v.begin(); it != v.end(); ++it) flatten(it.value(), it.key(), out);
    return;
  }
  out.emplace_back(path, v);
}

void print_import(const ojson& r) {
  std::cout << "format: " << r["format"].get<std::string>();
  for (const ojson& f : r["files"]) {
    std::cout << (f == r["files"].front() ? " (" : ", ") << f["name"].get<std::string>() << ": "
              << f["format"].get<std::string>();
  }
  std::cout << ")\n\nrequest field                  value               from\n";
  std::vector<std::pair<std::string, ojson>> fields;
  flatten(r["request"], "", fields);
  const ojson& origins = r["origins"];
  for (const auto& [path, value] : fields) {
    if (path == "mode") continue;
    std::string at = path;
    while (!origins.contains(at) && at.find('.') != std::string::npos) at = at.substr(0, at.rfind('.'));
    const std::string from = origins.contains(at) ? origin_text(origins[at]) : "";
    std::cout << fmt::format("{:<30} {:<19} {}\n", path, value_text(value), from);
  }
  if (!r["warnings"].empty()) {
    std::cout << "\nwarnings (settings memest does not represent; check them):\n";
    for (const ojson& w : r["warnings"]) {
      std::string at = w.value("file", std::string());
      if (w.contains("line")) at += ":" + std::to_string(w["line"].get<int64_t>());
      if (w.contains("key")) at += " " + w["key"].get<std::string>();
      std::cout << "  " << (at.empty() ? "" : at + ": ") << w["message"].get<std::string>() << "\n";
    }
  }
  std::cout << "\nthe request alone: memest import ... --format json | memest request -\n";
}

int run_import(const ImportOptions& o) {
  std::string output;
  const ojson doc = import_document(o, output);
  ojson response;
  if (int rc = ask_library(doc.dump(), response, false); rc != kExitOk) return rc;
  if (output == "json") {
    // the request alone, ready for `memest request`; --explain: the whole answer (origins,
    // warnings); --estimate: the pretrain response
    if (o.estimate) std::cout << response["estimate"].dump(2) << "\n";
    else if (o.explain) std::cout << response.dump(2) << "\n";
    else std::cout << response["request"].dump(2) << "\n";
    return kExitOk;
  }
  print_import(response);
  if (o.estimate) {
    std::cout << "\n";
    print_response(response["estimate"], Output{"table", false});
  }
  return kExitOk;
}

}  // namespace

Command add_import(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "import", "Read one run's launch files (torchtitan TOML, Megatron script, DeepSpeed JSON + "
                "script, torchtune / axolotl / LLaMA-Factory / accelerate YAML) into a request");
  auto o = std::make_shared<ImportOptions>();
  cmd->add_option("files", o->files, "The run's files (a DeepSpeed JSON with the script that "
                                     "launches it is one run)")
      ->required()
      ->check(CLI::ExistingFile);
  std::vector<std::string> formats = library_names("launch_formats");  // the library's list
  formats.insert(formats.begin(), "auto");
  formats.push_back("table");
  formats.push_back("json");
  cmd->add_option("-f,--format", o->formats,
                  "The files' format (auto: detected by content; torchtitan, megatron, deepspeed, "
                  "hf, torchtune, axolotl, llama-factory, accelerate) and/or the output (table: "
                  "each value with its origin; json: the request alone, for `memest request`); "
                  "may be given twice")
      ->check(CLI::IsMember(formats))
      ->expected(1);
  cmd->get_option("--format")->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  add_gpu_options(*cmd, o->gpu);
  auto* model = cmd->add_option("-m,--model", o->model,
                                "The model when the files name none or one memest does not know: "
                                "a preset id or a Hugging Face id");
  cmd->add_option("--config", o->config_path, "A Hugging Face config.json as the model")
      ->check(CLI::ExistingFile)
      ->excludes(model);
  add_integer(*cmd, "-n,--gpus", o->gpus, "Number of GPUs, when the files do not fix it",
              Sign::positive);
  add_integer(*cmd, "-s,--seq,--seq-len", o->seq_len,
              "Sequence length, when the files do not give it", Sign::positive);
  cmd->add_option("--set", o->set, "Override a request field: FIELD=VALUE (e.g. parallel.tp=2, "
                                   "training.micro_batch=4); repeatable");
  cmd->add_option("--hf-home", o->hf_home,
                  "The Hugging Face hub cache to look up unknown model ids in (default: "
                  "HF_HUB_CACHE, HF_HOME/hub or ~/.cache/huggingface/hub)");
  cmd->add_flag("--estimate", o->estimate, "Run the request at once (the pretrain answer)");
  cmd->add_flag("--explain", o->explain,
                "With --format json: the whole answer (request, origins, warnings)");
  return {cmd, [o] { return run_import(*o); }};
}

}  // namespace memest_cli
