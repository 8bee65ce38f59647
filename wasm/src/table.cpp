// WASM-only helper: a table of pretraining estimates (layouts x GPU counts) in one call.
//
// The JSON entry point costs ~0.6 ms a request under Emscripten's JavaScript exception handling
// (every potentially-throwing call goes through a JS trampoline), too slow to recompute a
// 500-cell table as the user types. Here the base request is read once, its model and GPU are
// resolved by the library's own resolvers (the ones memest_request_json uses), and each cell is
// one call of the typed, allocation-free memest_pretrain. No formula lives here.
#include <cstdlib>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "json/request.hpp"  // memest::resolve_model / resolve_gpu: the JSON contract's resolvers
#include "memest/memest.h"
#include "pretrain/pretrain.hpp"  // memest::check_layout: the estimator's own non-throwing layout checks

namespace {

using ojson = nlohmann::ordered_json;

char* to_c_string(const std::string& text) {
  char* out = static_cast<char*>(std::malloc(text.size() + 1));
  if (out != nullptr) std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

ojson error_json(memest_status status, const std::string& field, const std::string& message) {
  return {{"ok", false},
          {"error", {{"code", memest_status_name(status)}, {"field", field}, {"message", message}}}};
}

ojson last_error_json() {
  return error_json(memest_last_error_code(), memest_last_error_field(), memest_last_error());
}

// Reads the base request's fields the table varies around (the page's own subset of the
// pretrain contract; anything else is refused so that a cell never silently differs).
memest_pretrain_request base_request(const memest::json& spec) {
  memest_pretrain_request r;
  memest_pretrain_request_init(&r);
  if (!spec.contains("model")) throw memest::Error(MEMEST_ERR_MISSING_FIELD, "model", "model: missing");
  if (!spec.contains("gpu")) throw memest::Error(MEMEST_ERR_MISSING_FIELD, "gpu", "gpu: missing");
  r.model = memest::resolve_model(spec.at("model"), "model", false);
  r.gpu = memest::resolve_gpu(spec.at("gpu"), "gpu");
  auto integer = [](const memest::json& obj, const char* key, int64_t& out) {
    if (obj.contains(key) && obj.at(key).is_number_integer()) out = obj.at(key).get<int64_t>();
  };
  auto boolean = [](const memest::json& obj, const char* key, int32_t& out) {
    if (obj.contains(key) && obj.at(key).is_boolean()) out = obj.at(key).get<bool>() ? 1 : 0;
  };
  if (spec.contains("parallel")) {
    const auto& p = spec.at("parallel");
    integer(p, "vpp", r.vpp);
    boolean(p, "sp", r.sequence_parallel);
    int64_t zero = r.zero;
    integer(p, "zero", zero);
    r.zero = static_cast<int32_t>(zero);
  }
  if (spec.contains("training")) {
    const auto& t = spec.at("training");
    integer(t, "seq_len", r.seq_len);
    integer(t, "global_batch", r.global_batch);
    boolean(t, "flash_attention", r.flash_attention);
    if (t.contains("recompute") && t.at("recompute").is_string()) {
      const std::string rc = t.at("recompute").get<std::string>();
      r.recompute = rc == "full" ? MEMEST_RECOMPUTE_FULL
                    : rc == "selective" ? MEMEST_RECOMPUTE_SELECTIVE : MEMEST_RECOMPUTE_NONE;
    }
  }
  return r;
}

}  // namespace

extern "C" {

/** Answers {"model", "gpu", "parallel": {vpp, sp, zero}, "training": {seq_len, global_batch,
 *  recompute, flash_attention}, "cells": [[gpus, tp, cp, pp, micro_batch], ...], "messages"}
 *  with
 *  {"ok": true, "cells": [{"ok": true, "estimate_bytes", "peak_bytes", "usage_fraction",
 *  "verdict"} | {"ok": false, "error": {...}}, ...]}, or {"ok": false, "error"} when the base
 *  (model, gpu) is bad. Returns a malloc'd string (free with memest_string_free); NULL when
 *  memory runs out. */
__attribute__((used, visibility("default"))) char* memest_wasm_pretrain_table(const char* spec_text) {
  try {
    memest::json spec;
    try {
      spec = memest::json::parse(spec_text != nullptr ? spec_text : "");
    } catch (const std::exception& e) {
      return to_c_string(error_json(MEMEST_ERR_PARSE, "", e.what()).dump());
    }
    memest_pretrain_request base;
    try {
      base = base_request(spec);
    } catch (const memest::Error& e) {
      return to_c_string(error_json(e.status(), e.field(), e.what()).dump());
    }
    // "messages": false skips the error text of cells whose layout the library's own
    // check_layout refuses (an exception under JS exception handling costs ~0.1 ms a cell);
    // such a cell answers {"ok": false, "issue": "<check name>"} and the caller asks for the
    // message of one cell when it needs it.
    const bool messages = !(spec.contains("messages") && spec.at("messages").is_boolean() &&
                            !spec.at("messages").get<bool>());
    ojson cells = ojson::array();
    if (spec.contains("cells") && spec.at("cells").is_array()) {
      for (const auto& cell : spec.at("cells")) {
        memest_pretrain_request r = base;
        const auto at = [&](std::size_t i, int64_t fallback) {
          return cell.is_array() && cell.size() > i && cell[i].is_number_integer()
                     ? cell[i].get<int64_t>() : fallback;
        };
        r.gpus = at(0, r.gpus);
        r.tp = at(1, r.tp);
        r.cp = at(2, r.cp);
        r.pp = at(3, r.pp);
        r.micro_batch = at(4, r.micro_batch);
        if (!messages && r.gpus > 0 && r.tp > 0 && r.cp > 0 && r.pp > 0 && r.vpp > 0 &&
            r.micro_batch > 0 && r.seq_len > 0 && r.global_batch >= 0) {
          memest::LayoutCheck check;
          const memest::LayoutIssue issue = memest::check_layout(r, check);
          if (issue != memest::LayoutIssue::None) {
            cells.push_back({{"ok", false}, {"issue", memest::layout_issue_name(issue)}});
            continue;
          }
        }
        memest_pretrain_result res;
        if (memest_pretrain(&r, &res, nullptr, 0) != MEMEST_OK) {
          cells.push_back(last_error_json());
          continue;
        }
        cells.push_back({{"ok", true},
                         {"estimate_bytes", res.estimate_bytes},
                         {"peak_bytes", res.peak_bytes},
                         {"usage_fraction", res.usage_fraction},
                         {"verdict", memest_verdict_name(static_cast<memest_verdict>(res.verdict))}});
      }
    }
    return to_c_string(ojson{{"ok", true}, {"cells", cells}}.dump());
  } catch (...) {
    return nullptr;
  }
}

}  // extern "C"
