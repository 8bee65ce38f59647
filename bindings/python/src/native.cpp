// memest._native: the pybind11 bridge to libmemest's C API (memest.h). Thin on purpose: it
// converts strings and structs and turns a failed status into a memest.MemestError subclass;
// every number comes from the C library. The Python package (memest/) builds on this.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include <memest/memest.h>

namespace py = pybind11;

namespace {

// Raises the memest.MemestError subclass for `status`, with the thread's last error field and
// message (read right after the failing call, on the same thread).
[[noreturn]] void raise_error(memest_status status) {
  const std::string field = memest_last_error_field();
  const std::string message = memest_last_error();
  py::object make = py::module_::import("memest._errors").attr("_make_error");
  py::object exc = make(static_cast<int>(status), memest_status_name(status), field, message);
  PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(exc.ptr())), exc.ptr());
  throw py::error_already_set();
}

void check(memest_status status) {
  if (status != MEMEST_OK) raise_error(status);
}

// Raises the subclass for `status` with a message of this bridge's own (a request the C
// library cannot be handed as it is).
[[noreturn]] void raise_own_error(memest_status status, const std::string &field,
                                  const std::string &message) {
  py::object make = py::module_::import("memest._errors").attr("_make_error");
  py::object exc = make(static_cast<int>(status), memest_status_name(status), field, message);
  PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(exc.ptr())), exc.ptr());
  throw py::error_already_set();
}

// The library's enumerations by the names the JSON "enums" mode gives them.
struct EnumKind {
  const char *key;
  memest_enum which;
};
constexpr EnumKind kEnums[] = {
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
    {"master_weights", MEMEST_ENUM_MASTER_WEIGHTS},
};

memest_enum enum_kind(const std::string &key) {
  for (const EnumKind &k : kEnums) {
    if (key == k.key) return k.which;
  }
  throw py::key_error("no memest enumeration named '" + key + "'");
}

py::list enum_names(memest_enum which) {
  py::list names;
  const uint32_t n = memest_enum_count(which);
  for (uint32_t v = 0; v < n; ++v) names.append(memest_enum_name(which, static_cast<int32_t>(v)));
  return names;
}

py::dict model_dict(const memest_model &m) {
  py::dict d;
  d["name"] = std::string(m.name);
  const char *family = memest_enum_name(MEMEST_ENUM_FAMILY, m.family);
  d["family"] = family ? family : "unknown";
  d["hidden_size"] = m.hidden_size;
  d["num_hidden_layers"] = m.num_hidden_layers;
  d["num_attention_heads"] = m.num_attention_heads;
  d["num_key_value_heads"] = m.num_key_value_heads;
  d["head_dim"] = m.head_dim;
  d["intermediate_size"] = m.intermediate_size;
  d["vocab_size"] = m.vocab_size;
  d["max_position_embeddings"] = m.max_position_embeddings;
  d["tie_word_embeddings"] = m.tie_word_embeddings == 1;
  d["final_logit_softcapping"] = m.final_logit_softcapping;  // 1.6: 0 = none (Gemma 2: 30)
  // 1.8: hybrid models, one character per layer ("" for a model of attention layers only):
  // mixers 'A' attention, 'M' Mamba-2, 'G' gated DeltaNet, 'P' attention beside Mamba-2, '-'
  // none (1.13: 'S' Mamba-1, 'K' Kimi Delta Attention); MLPs 'D' dense, 'E' experts, '-' none. The mixers' dimensions are 0 without them.
  d["mixer_pattern"] = std::string(m.mixer_pattern);
  d["mlp_pattern"] = std::string(m.mlp_pattern);
  d["mamba_num_heads"] = m.mamba_num_heads;
  d["mamba_head_dim"] = m.mamba_head_dim;
  d["mamba_state_size"] = m.mamba_state_size;
  d["mamba_groups"] = m.mamba_groups;
  d["mamba_conv_kernel"] = m.mamba_conv_kernel;
  d["mamba_proj_bias"] = m.mamba_proj_bias == 1;
  d["mamba_conv_bias"] = m.mamba_conv_bias == 1;
  d["mamba_norm"] = m.mamba_norm == 1;
  d["linear_key_heads"] = m.linear_key_heads;
  d["linear_value_heads"] = m.linear_value_heads;
  d["linear_key_head_dim"] = m.linear_key_head_dim;
  d["linear_value_head_dim"] = m.linear_value_head_dim;
  d["linear_conv_kernel"] = m.linear_conv_kernel;
  d["attention_output_gate"] = m.attention_output_gate == 1;
  // 1.13: 'S' Mamba-1 (d_inner heads of dimension 1) and 'K' Kimi Delta Attention mixers
  d["mamba_dt_rank"] = m.mamba_dt_rank;
  memest_param_count c;
  c.struct_size = sizeof c;
  if (m.hidden_size > 0) {
    check(memest_model_parameter_count(&m, &c));
    d["num_parameters"] = c.total;
    d["parameters"] = py::dict(py::arg("embedding") = c.embedding,
                               py::arg("per_layer") = c.per_layer,
                               py::arg("lm_head") = c.lm_head);
  } else {
    d["num_parameters"] = m.num_parameters;
  }
  return d;
}

py::dict gpu_dict(const memest_gpu &g) {
  py::dict d;
  d["name"] = std::string(g.name);
  d["memory_bytes"] = g.memory_bytes;
  d["gpus_per_node"] = g.gpus_per_node;
  d["peak_bf16_tflops"] = g.peak_bf16_tflops;
  d["context_bytes"] = g.context_bytes;
  d["page_bytes"] = g.page_bytes;
  return d;
}

}  // namespace

PYBIND11_MODULE(_native, m) {
  m.doc() = "Low-level bridge to libmemest's C API (use the memest package instead).";

  m.def("version_string", [] { return std::string(memest_version_string()); },
        "The C library's version string (memest_version_string).");
  m.def("version_number", [] { return memest_version_number(); },
        "The C library's version number (memest_version_number).");
  m.def("status_name", [](int status) {
    return std::string(memest_status_name(static_cast<memest_status>(status)));
  }, "The lower-case name of a memest_status code.");

  m.def("enums", [] {
    py::dict d;
    for (const EnumKind &k : kEnums) d[k.key] = enum_names(k.which);
    return d;
  }, "Every enumeration's names by value (memest_enum_count, memest_enum_name).");
  m.def("enum_value", [](const std::string &kind, const std::string &name) {
    return memest_enum_value(enum_kind(kind), name.c_str());
  }, py::arg("kind"), py::arg("name"),
  "The value named `name` in enumeration `kind` (\"status\", ...), or -1 (memest_enum_value).");
  m.def("verdict_limit", [](const std::string &verdict) {
    const int32_t v = memest_enum_value(MEMEST_ENUM_VERDICT, verdict.c_str());
    if (v < 0) throw py::key_error("no verdict named '" + verdict + "'");
    return memest_verdict_limit(static_cast<memest_verdict>(v));
  }, py::arg("verdict"),
  "The upper bound of a verdict band as a fraction of capacity (memest_verdict_limit).");

  m.def("request_json", [](const std::string &request) {
    // The C entry point reads a NUL-terminated string: a NUL inside would cut the request
    // short without a word, so it is refused here as the parse error it is.
    const std::size_t nul = request.find('\0');
    if (nul != std::string::npos) {
      raise_own_error(MEMEST_ERR_PARSE, "",
                      "request is not valid JSON: a NUL byte at offset " + std::to_string(nul) +
                          " (a C string ends there)");
    }
    char *response = nullptr;
    memest_status status;
    {
      py::gil_scoped_release release;
      status = memest_request_json(request.c_str(), &response);
    }
    if (status != MEMEST_OK) {
      memest_string_free(response);
      raise_error(status);
    }
    std::string text(response ? response : "");
    memest_string_free(response);
    return text;
  }, py::arg("request"),
  "Answers a JSON request with memest_request_json; raises MemestError on a bad request.");

  m.def("model_preset_ids", [] {
    py::list ids;
    for (uint32_t i = 0; i < memest_model_preset_count(); ++i) ids.append(memest_model_preset_id(i));
    return ids;
  });
  m.def("gpu_preset_ids", [] {
    py::list ids;
    for (uint32_t i = 0; i < memest_gpu_preset_count(); ++i) ids.append(memest_gpu_preset_id(i));
    return ids;
  });
  m.def("model_from_preset", [](const std::string &id) {
    if (id.find('\0') != std::string::npos) {
      raise_own_error(MEMEST_ERR_UNKNOWN_PRESET, "model", "model: no preset id holds a NUL byte");
    }
    memest_model model;
    check(memest_model_init(&model, sizeof model));
    check(memest_model_from_preset(id.c_str(), &model));
    return model_dict(model);
  }, py::arg("id"));
  m.def("gpu_from_preset", [](const std::string &id) {
    if (id.find('\0') != std::string::npos) {
      raise_own_error(MEMEST_ERR_UNKNOWN_PRESET, "gpu", "gpu: no preset id holds a NUL byte");
    }
    memest_gpu gpu;
    check(memest_gpu_init(&gpu, sizeof gpu));
    check(memest_gpu_from_preset(id.c_str(), &gpu));
    return gpu_dict(gpu);
  }, py::arg("id"));
  m.def("model_from_config_json", [](const std::string &text) {
    if (text.find('\0') != std::string::npos) {
      raise_own_error(MEMEST_ERR_PARSE, "", "config_json is not valid JSON: it holds a NUL byte");
    }
    memest_model model;
    check(memest_model_init(&model, sizeof model));
    check(memest_model_from_config_json(text.c_str(), &model));
    check(memest_model_validate(&model));
    return model_dict(model);
  }, py::arg("config_json"),
  "Reads a Hugging Face config.json text with memest_model_from_config_json.");
}
