// JSON for launch files: mode "import" (files in, the request they describe out, each value
// with its origin) and mode "emit" (a layout out in a stack's own flags or keys).
#include "core/enums.hpp"
#include "json/modes.hpp"
#include "json/request.hpp"
#include "launch/emit.hpp"
#include "launch/import.hpp"

namespace memest {

namespace {

// The origin of a request field, for an error about that field: "(from FILE line N, KEY)".
std::string origin_note(const json& origins, const std::string& field) {
  for (std::string f = field; !f.empty(); f = f.substr(0, f.find_last_of('.') == std::string::npos ? 0 : f.find_last_of('.'))) {
    if (!origins.contains(f)) continue;
    const json& o = origins[f];
    const std::string from = o.value("from", "");
    if (from == "file") {
      std::string n = " (from " + o.value("file", std::string()) +
                      (o.contains("line") ? " line " + std::to_string(o["line"].get<int64_t>()) : "") +
                      ", " + o.value("key", std::string()) + ")";
      return n;
    }
    if (from == "default") {
      return " (" + o.value("framework", std::string()) + "'s default " + o.value("default", std::string()) + ")";
    }
    if (from == "flag") return " (from " + o.value("flag", std::string()) + ")";
    if (from == "derived") return " (derived: " + o.value("rule", std::string()) + ")";
    if (f.find('.') == std::string::npos) break;
  }
  return "";
}

std::vector<launch::LaunchFile> read_files(const JsonFields& top) {
  const json* files = top.object("files");
  if (!files) throw Error(MEMEST_ERR_MISSING_FIELD, "files", "files: missing: give [{\"name\", \"text\"}, ...]");
  if (!files->is_array()) throw Error(MEMEST_ERR_TYPE, "files", "files: expected a list of {\"name\", \"text\"}");
  std::vector<launch::LaunchFile> out;
  for (std::size_t i = 0; i < files->size(); ++i) {
    const std::string at = "files[" + std::to_string(i) + "]";
    const json& f = (*files)[i];
    if (!f.is_object()) throw Error(MEMEST_ERR_TYPE, at, at + ": expected {\"name\", \"text\"}");
    JsonFields ff(f, at);
    ff.reject_unknown({"name", "text"});
    auto text = ff.string("text");
    if (!text) throw Error(MEMEST_ERR_MISSING_FIELD, ff.path_of("text"), ff.path_of("text") + ": missing (the file's contents)");
    auto name = ff.string("name");
    out.push_back({name ? *name : "file" + std::to_string(i + 1), *text});
    if (out.size() > launch::kMaxLaunchFiles) break;
  }
  return out;
}

}  // namespace

ojson import_mode(const JsonFields& top) {
  top.reject_unknown({"mode", "files", "format", "gpu", "gpus", "model", "seq_len", "set",
                      "hf_home", "estimate"});
  launch::ImportOptions o;
  const std::vector<launch::LaunchFile> files = read_files(top);
  if (auto f = top.string("format")) o.format = *f;
  if (top.has("gpu")) {
    o.gpu = *top.object("gpu");
    if (!o.gpu.is_string() && !o.gpu.is_object()) throw Error(MEMEST_ERR_TYPE, "gpu", "gpu: expected a preset id or an object");
  }
  if (top.has("model")) {
    o.model = *top.object("model");
    if (!o.model.is_string() && !o.model.is_object()) throw Error(MEMEST_ERR_TYPE, "model", "model: expected a preset id, a Hugging Face id or a config.json object");
  }
  if (top.has("gpus")) o.gpus = top.integer("gpus", 1, kMaxGpus);
  if (top.has("seq_len")) o.seq_len = top.integer("seq_len", 1, int64_t{1} << 30);
  if (const json* set = top.object("set")) {
    if (!set->is_object()) throw Error(MEMEST_ERR_TYPE, "set", "set: expected an object of request fields");
    o.set = *set;
  }
  if (auto h = top.string("hf_home")) o.hf_home = *h;
  const bool estimate = top.boolean("estimate").value_or(false);

  launch::ImportResult r = launch::import_launch(files, o);
  // The request must be one memest estimates (so a layout it refuses ends here, not later);
  // an error names the field and where its value came from.
  ojson estimated;
  try {
    JsonFields req(r.request, "");
    PretrainRequest parsed = parse_pretrain_request(req);
    estimated = estimate_pretrain(parsed, estimate);
  } catch (const Error& e) {
    throw Error(e.status(), e.field(), std::string(e.what()) + origin_note(r.origins, e.field()));
  }
  ojson out = {{"ok", true},
               {"mode", "import"},
               {"format", r.format},
               {"files", ojson::parse(r.files.dump())},
               {"request", ojson::parse(r.request.dump())},
               {"origins", ojson::parse(r.origins.dump())},
               {"warnings", ojson::parse(r.warnings.dump())}};
  if (estimate) out["estimate"] = estimated;
  return out;
}

ojson emit_for(const PretrainRequest& r, const std::string& format, const std::string& field) {
  const ojson resolved = estimate_pretrain(r, false);  // its layout and training only
  const json layout = json::parse(resolved["layout"].dump());
  const json training = json::parse(resolved["training"].dump());
  const json out = launch::emit_launch(layout, training, r.model.num_hidden_layers, format, field);
  return ojson::parse(out.dump());
}

ojson emit_mode(const JsonFields& top) {
  top.reject_unknown({"mode", "format", "request"});
  auto format = top.string("format");
  if (!format) throw Error(MEMEST_ERR_MISSING_FIELD, "format", "format: missing (megatron, torchtitan, deepspeed or accelerate)");
  const json* request = top.object("request");
  if (!request) throw Error(MEMEST_ERR_MISSING_FIELD, "request", "request: missing (a pretrain request)");
  if (!request->is_object()) throw Error(MEMEST_ERR_TYPE, "request", "request: expected a pretrain request object");
  json copy = *request;
  copy.erase("mode");
  // the reader names fields from the request's top (parallel.tp): prefixed with request. here
  ojson out;
  try {
    out = emit_for(parse_pretrain_request(JsonFields(copy, "")), *format, "format");
  } catch (const Error& e) {
    if (e.field() == "format") throw;
    throw Error(e.status(), "request." + e.field(), "request." + std::string(e.what()));
  }
  out["ok"] = true;
  out["mode"] = "emit";
  return out;
}

}  // namespace memest
