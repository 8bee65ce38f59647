// The JSON entry point: parse the request, dispatch on "mode" (json/*_json.cpp), answer.
#include "json/request.hpp"

#include "core/enums.hpp"
#include "core/units.hpp"
#include "json/modes.hpp"
#include "json/recipes.hpp"
#include "json/request_fields.hpp"
#include "model/gpu_profile.hpp"
#include "model/hf_config.hpp"
#include "model/model.hpp"
#include "model/presets.hpp"
#include "launch/emit.hpp"
#include "launch/import.hpp"

namespace memest {

namespace {

// The built-in presets with their shapes, sources and device profiles (`memest models`,
// `memest gpus`, the web page's pickers).
ojson presets_response() {
  ojson models = ojson::array();
  for (const ModelPreset& p : model_presets()) {
    const memest_model& m = p.model;
    const memest_param_count c = count_parameters(m);
    models.push_back({{"id", p.id},
                      {"name", m.name},
                      {"family", family_name(m.family)},
                      {"num_parameters", c.total},
                      {"active_parameters", c.active},
                      {"num_experts", m.num_experts},
                      {"num_experts_per_tok", m.num_experts_per_tok},
                      {"published_params", p.published_params},
                      {"published_active_params", p.published_active_params},
                      {"num_hidden_layers", m.num_hidden_layers},
                      {"hidden_size", m.hidden_size},
                      {"num_attention_heads", m.num_attention_heads},
                      {"num_key_value_heads", m.num_key_value_heads},
                      {"intermediate_size", m.intermediate_size},
                      {"vocab_size", m.vocab_size},
                      {"max_position_embeddings", m.max_position_embeddings},
                      {"tie_word_embeddings", m.tie_word_embeddings == 1},
                      {"source", p.source}});
  }
  ojson gpus = ojson::array();
  for (const GpuPreset& p : gpu_presets()) {
    ojson g = gpu_json(p.gpu);
    g["id"] = p.id;
    g["memory_gib"] = p.gpu.memory_bytes / kGiB;
    g["context_bytes"] = p.gpu.context_bytes;
    g["page_bytes"] = p.gpu.page_bytes;
    g["source"] = p.source;
    g["memory_source"] = p.memory_source;
    g["nominal_gib"] = p.nominal_gib;
    gpus.push_back(g);
  }
  // the fine-tuning recipes a request's "recipe" names, with their fields and sources
  return {{"ok", true}, {"mode", "presets"}, {"models", models}, {"gpus", gpus},
          {"recipes", recipes_json()}};
}

}  // namespace

// Every enumeration's names and the verdict bands, from core/enums: what bindings and the web
// page read instead of spelling them out.
ojson enums_mode(const JsonFields& top) {
  top.reject_unknown({"mode"});
  const std::pair<const char*, memest_enum> kinds[] = {
      {"status", MEMEST_ENUM_STATUS},
      {"family", MEMEST_ENUM_FAMILY},
      {"verdict", MEMEST_ENUM_VERDICT},
      {"recompute", MEMEST_ENUM_RECOMPUTE},
      {"activation_model", MEMEST_ENUM_ACTIVATION_MODEL},
      {"prune_reason", MEMEST_ENUM_PRUNE_REASON},
      {"finetune_method", MEMEST_ENUM_FINETUNE_METHOD},
      {"framework", MEMEST_ENUM_FRAMEWORK},
      {"loss", MEMEST_ENUM_LOSS},
      {"optimizer", MEMEST_ENUM_OPTIMIZER},
      {"adapter", MEMEST_ENUM_ADAPTER},
      {"lora_target", MEMEST_ENUM_LORA_TARGET},
      {"compile", MEMEST_ENUM_COMPILE},
      {"overlap", MEMEST_ENUM_OVERLAP},
      {"step_part", MEMEST_ENUM_STEP_PART},
      {"moe_dispatcher", MEMEST_ENUM_MOE_DISPATCHER},
      {"attention_kernel", MEMEST_ENUM_ATTENTION_KERNEL},
      {"recompute_module", MEMEST_ENUM_RECOMPUTE_MODULE},
      {"master_weights", MEMEST_ENUM_MASTER_WEIGHTS}};
  ojson enums = ojson::object();
  for (const auto& [key, which] : kinds) {
    const EnumTable t = enum_table(which);
    ojson names = ojson::array();
    for (uint32_t i = 0; i < t.count; ++i) names.push_back(t.names[i]);
    enums[key] = names;
  }
  // beside the enumerations: the launch files' formats (mode "import") and the stacks a layout
  // is emitted for (mode "emit", search.emit)
  ojson launch_formats = ojson::array(), emit_formats = ojson::array();
  for (const char* f : launch::kLaunchFormats) launch_formats.push_back(f);
  for (const char* f : launch::kEmitFormats) emit_formats.push_back(f);
  ojson recipe_names = ojson::array();  // a request's "recipe" (mode "presets" has their fields)
  for (const Recipe& r : recipes()) recipe_names.push_back(r.name);
  return {{"ok", true},
          {"mode", "enums"},
          {"enums", enums},
          {"verdict_bands", {{"fits", kFitsFraction}, {"tight", kTightFraction}}},
          {"peak_verdict_bands", {{"fits", MEMEST_PEAK_FITS_FRACTION}, {"tight", 1.0}}},
          {"peak_error_sigma", MEMEST_PEAK_ERROR_SIGMA},
          {"search_max_oom_probability", MEMEST_SEARCH_MAX_OOM_PROBABILITY},
          {"launch_formats", launch_formats},
          {"emit_formats", emit_formats},
          {"recipes", recipe_names}};
}

memest_model resolve_model(const json& value, const std::string& field, bool allow_bare) {
  memest_model m;
  if (value.is_string()) {
    m = find_model_preset(value.get<std::string>(), field).model;
  } else if (value.is_object()) {
    m = model_from_json(value, field);
  } else {
    throw Error(MEMEST_ERR_TYPE, field,
                field + ": expected a preset id or a config.json object");
  }
  validate_model(m, field, allow_bare);
  return m;
}

memest_gpu resolve_gpu(const json& value, const std::string& field) {
  if (value.is_string()) return find_gpu_preset(value.get<std::string>(), field).gpu;
  if (!value.is_object()) {
    throw Error(MEMEST_ERR_TYPE, field, field + ": expected a preset id or an object");
  }
  JsonFields f(value, field);
  for (auto it = value.begin(); it != value.end(); ++it) {
    bool known = false;
    for (const char* k : {"preset", "name", "memory_gib", "gpus_per_node", "peak_bf16_tflops",
                          "measured"})
      known = known || it.key() == k;
    for (const GpuProfileField& p : kGpuProfileFields) known = known || it.key() == p.key;
    if (!known) {
      throw Error(MEMEST_ERR_UNKNOWN_FIELD, f.path_of(it.key().c_str()),
                  f.path_of(it.key().c_str()) +
                      ": unknown field (known: preset, name, memory_gib, gpus_per_node, "
                      "peak_bf16_tflops, measured and the device-profile fields of "
                      "data/gpus.json)");
    }
  }
  // "measured" (the raw figures a calibrate/ profile carries) is accepted and not read.
  if (const json* measured = f.object("measured"); measured && !measured->is_object()) {
    throw Error(MEMEST_ERR_TYPE, f.path_of("measured"), f.path_of("measured") + ": expected an object");
  }
  memest_gpu g = default_gpu();
  if (auto preset = f.string("preset")) g = find_gpu_preset(*preset, f.path_of("preset")).gpu;
  else copy_name(g.name, "custom");
  if (auto name = f.string("name")) copy_name(g.name, *name);
  if (auto gib = f.number("memory_gib", 1e-3, 1e6)) g.memory_bytes = *gib * kGiB;
  g.gpus_per_node = static_cast<int32_t>(f.integer_or("gpus_per_node", g.gpus_per_node, 1, 1024));
  if (auto tf = f.number("peak_bf16_tflops", 0, 1e6)) g.peak_bf16_tflops = *tf;
  for (const GpuProfileField& p : kGpuProfileFields) {
    if (auto v = f.number(p.key, p.min, p.max)) g.*p.member = *v * p.scale;
  }
  if (g.memory_bytes <= 0) {
    throw Error(MEMEST_ERR_MISSING_FIELD, f.path_of("memory_gib"),
                f.path_of("memory_gib") + ": missing (or give \"preset\")");
  }
  return g;
}

std::string answer_request(const std::string& text) {
  json doc = parse_document(text, "request");
  // a named recipe (json/recipes.hpp) fills the fields the request leaves out
  std::string mode_name;
  if (doc.is_object() && doc.contains("mode") && doc.at("mode").is_string()) {
    mode_name = doc.at("mode").get<std::string>();
  }
  const ojson recipe = apply_recipe(doc, mode_name);
  JsonFields top(doc, "");
  auto mode = top.choice("mode", {"pretrain", "model_states", "finetune", "search", "presets",
                                  "enums", "import", "emit", "fields"});
  if (!mode) {
    throw Error(MEMEST_ERR_MISSING_FIELD, "mode",
                "mode: missing (pretrain, model_states, finetune, search, presets, enums, import, "
                "emit or fields)");
  }
  ojson response;
  if (*mode == "presets") {
    top.reject_unknown({"mode"});
    response = presets_response();
  } else if (*mode == "enums") {
    response = enums_mode(top);
  } else if (*mode == "fields") {
    response = fields_mode(top);  // json/request_fields.cpp: the pretraining request's fields
  } else if (*mode == "pretrain") {
    response = pretrain_mode(top);
  } else if (*mode == "model_states") {
    response = model_states_mode(top);
  } else if (*mode == "finetune") {
    response = finetune_mode(top);
  } else if (*mode == "import") {
    response = import_mode(top);
  } else if (*mode == "emit") {
    response = emit_mode(top);
  } else {
    response = search_mode(top);
  }
  if (!recipe.is_null()) response["recipe"] = recipe;
  return response.dump(2, ' ', false, ojson::error_handler_t::replace);
}

std::string error_response(memest_status status, const std::string& field,
                           const std::string& message) {
  const ojson j = {{"ok", false},
                  {"error", {{"code", enum_name(MEMEST_ENUM_STATUS, status)},
                             {"field", field},
                             {"message", message}}}};
  return j.dump(2, ' ', false, ojson::error_handler_t::replace);
}

}  // namespace memest
