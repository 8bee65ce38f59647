// WASM-only helper: a table of pretraining estimates (layouts x GPU counts) in one call.
//
// The JSON entry point costs ~0.6 ms a request under Emscripten's JavaScript exception handling
// (every potentially-throwing call goes through a JS trampoline), too slow to recompute a
// 500-cell table as the user types. Here the base request is read once, by the library's own
// readers of the pretrain contract (the ones memest_request_json uses), and each cell is one run
// of the estimator behind memest_pretrain (memest::compute_pretrain, no stage array). No formula
// lives here.
#include <cstdlib>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/json_fields.hpp"  // memest::parse_document, JsonFields: the strict JSON reading
#include "json/modes.hpp"        // memest::read_training, block: the pretrain mode's readers
#include "json/request.hpp"      // memest::resolve_model / resolve_gpu: the contract's resolvers
#include "memest/memest.h"
#include "plan/plan.hpp"          // memest::check_layout: the estimator's non-throwing layout checks
#include "pretrain/pretrain.hpp"  // memest::compute_pretrain: what memest_pretrain runs

namespace memest {
// Defined in plan/plan.cpp beside check_layout (the name of a refused layout's check); its
// header does not declare it.
const char* layout_issue_name(LayoutIssue issue);
}  // namespace memest

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

// The fields each cell gives ([gpus, tp, cp, pp, micro_batch]): left out of the base, so that a
// value the form holds there (valid or not) never decides a cell.
void drop_cell_fields(memest::json& spec) {
  if (spec.contains("parallel") && spec.at("parallel").is_object()) {
    for (const char* key : {"gpus", "tp", "cp", "pp"}) spec.at("parallel").erase(key);
  }
  if (spec.contains("training") && spec.at("training").is_object()) {
    spec.at("training").erase("micro_batch");
  }
}

// Reads the base request as the pretrain mode reads its request: model, gpu, parallel (vpp, sp,
// zero, uneven_pipeline, ep, etp, first_stage_layers, last_stage_layers, pipeline_layout) and the whole training block, strictly (unknown keys, wrong types and
// nulls are refused with the field named).
memest::PretrainRequest base_request(memest::json spec) {
  drop_cell_fields(spec);
  const memest::JsonFields top(spec, "");
  top.reject_unknown({"mode", "model", "gpu", "parallel", "training", "cells", "messages"});
  if (auto mode = top.string("mode"); mode && *mode != "pretrain") {
    memest::fail("mode", "the table answers pretrain requests, got \"" + memest::echo(*mode) + "\"");
  }
  memest::PretrainRequest r;
  r.model = memest::resolve_model(memest::require_object_field(top, "model"), "model", false);
  r.gpu = memest::resolve_gpu(memest::require_object_field(top, "gpu"), "gpu");
  const memest::JsonFields parallel(memest::block(top, "parallel"), "parallel");
  parallel.reject_unknown({"vpp", "sp", "zero", "uneven_pipeline", "ep", "etp", "first_stage_layers",
                           "last_stage_layers", "pipeline_layout"});
  constexpr int64_t big = int64_t{1} << 40;  // real limits are checked by the estimator
  r.vpp = parallel.integer_or("vpp", r.vpp, -big, big);
  if (auto sp = parallel.boolean("sp")) r.sequence_parallel = *sp;
  if (auto u = parallel.boolean("uneven_pipeline")) r.uneven_pipeline = *u;
  r.zero = static_cast<int32_t>(parallel.integer_or("zero", r.zero, 0, 3));
  r.ep = parallel.integer_or("ep", r.ep, -big, big);
  r.etp = parallel.integer_or("etp", r.etp, -big, big);
  r.last_stage_layers = parallel.integer_or("last_stage_layers", r.last_stage_layers, -big, big);
  r.first_stage_layers = parallel.integer_or("first_stage_layers", r.first_stage_layers, -big, big);
  if (auto layout = parallel.string("pipeline_layout")) r.pipeline_layout = *layout;
  memest::read_training(top, r, memest::kPretrainTraining);
  return r;
}

}  // namespace

extern "C" {

/** Answers {"model", "gpu", "parallel": {vpp, sp, zero, uneven_pipeline}, "training": {...the
 *  pretrain mode's training block...}, "cells": [[gpus, tp, cp, pp, micro_batch], ...],
 *  "messages"} (a pretrain request whose gpus, tp, cp, pp and micro_batch, if present, are
 *  ignored: the cells give them) with
 *  {"ok": true, "cells": [{"ok": true, "estimate_bytes", "peak_bytes", "capacity_bytes",
 *  "usage_fraction", "oom_probability", "margin_bytes", "verdict", "peak_verdict"} |
 *  {"ok": false, "error": {...}}, ...]}, or {"ok": false, "error"} when the base
 *  is bad. Returns a malloc'd string (free with memest_string_free); NULL when memory runs
 *  out. */
__attribute__((used, visibility("default"))) char* memest_wasm_pretrain_table(const char* spec_text) {
  try {
    memest::json spec;
    memest::PretrainRequest base;
    try {
      if (spec_text == nullptr) throw memest::Error(MEMEST_ERR_NULL_POINTER, "", "spec: NULL pointer");
      spec = memest::parse_document(spec_text, "request");
      if (!spec.is_object()) {
        throw memest::Error(MEMEST_ERR_TYPE, "", "request: expected a JSON object");
      }
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
        memest::PretrainRequest r = base;
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
        try {
          res = memest::compute_pretrain(r, nullptr, 0);
        } catch (const memest::Error& e) {
          cells.push_back(error_json(e.status(), e.field(), e.what()));
          continue;
        }
        cells.push_back({{"ok", true},
                         {"estimate_bytes", res.estimate_bytes},
                         {"peak_bytes", res.peak_bytes},
                         {"capacity_bytes", res.capacity_bytes},
                         {"usage_fraction", res.usage_fraction},
                         {"oom_probability", res.oom_probability},
                         {"margin_bytes", res.margin_bytes},
                         {"verdict", memest_verdict_name(static_cast<memest_verdict>(res.verdict))},
                         {"peak_verdict",
                          memest_verdict_name(static_cast<memest_verdict>(res.peak_verdict))}});
      }
    }
    return to_c_string(ojson{{"ok", true}, {"cells", cells}}.dump());
  } catch (...) {
    return nullptr;
  }
}

}  // extern "C"
