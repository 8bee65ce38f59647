#include "format.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "memest/memest.h"

#include "options.hpp"

namespace memest_cli {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string on_off(bool v) { return v ? "on" : "off"; }

std::string csv_cell(const ojson& v) {
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string quoted = "\"";
    for (char c : s) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + "\"";
  }
  if (v.is_number_float()) return fmt::format("{}", v.get<double>());
  return v.dump();
}

std::string csv_line(const std::vector<ojson>& cells) {
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i) line += (i ? "," : "") + csv_cell(cells[i]);
  return line + "\n";
}

// "fits (<= 80 % of capacity)": the 4D paper's bands on its estimate, from the library.
std::string verdict_note(const std::string& verdict) {
  const double fits = 100 * memest_verdict_limit(MEMEST_VERDICT_FITS);
  if (verdict == "fits") return fmt::format("fits (<= {:.0f} % of capacity)", fits);
  if (verdict == "tight") {
    return fmt::format("tight ({:.0f}-100 %: may OOM from buffers and fragmentation)", fits);
  }
  if (verdict == "oom") return "oom (above capacity)";
  return verdict;
}

// The headline: the verdict on the overhead model's peak (MEMEST_PEAK_FITS_FRACTION).
std::string peak_verdict_note(const std::string& verdict) {
  const double fits = 100 * MEMEST_PEAK_FITS_FRACTION;
  if (verdict == "fits") return fmt::format("fits (peak <= {:.0f} % of capacity)", fits);
  if (verdict == "tight") return fmt::format("tight (peak {:.0f}-100 % of capacity)", fits);
  if (verdict == "oom") return "out of memory (peak above capacity)";
  return verdict;
}

std::string advice_text(const ojson& r) {
  std::string out = "  largest parts:";
  int shown = 0;
  for (const ojson& p : r["dominant_parts"]) {
    if (shown++ == 4) break;
    out += fmt::format("{} {} {} ({:.0f} %)", shown > 1 ? "," : "", p["part"].get<std::string>(),
                       gib(p["bytes"].get<double>()), 100 * p["share"].get<double>());
  }
  out += "\n";
  if (!r.contains("suggestions")) return out;
  if (r["suggestions"].empty()) return out + "  no single change found that fits: try memest search\n";
  out += "  would fit:\n";
  for (const ojson& s : r["suggestions"]) {
    const std::string host =
        s.contains("host_bytes") ? fmt::format(", host {}", gib(s["host_bytes"].get<double>())) : "";
    // the change as the `memest pretrain` flags that apply it (options.cpp's table)
    out += fmt::format("    {:<44} peak {}{}  ({})\n", s["change"].get<std::string>(),
                       gib(s["peak_bytes"].get<double>()), host,
                       flag_change_text(suggestion_flags(s["set"], r["layout"])));
  }
  return out;
}

// The library's step parts (MEMEST_ENUM_STEP_PART), in value order: CSV columns <part>_seconds.
std::vector<std::string> step_part_names() {
  std::vector<std::string> names;
  for (uint32_t i = 0; i < memest_enum_count(MEMEST_ENUM_STEP_PART); ++i) {
    names.emplace_back(memest_enum_name(MEMEST_ENUM_STEP_PART, static_cast<int32_t>(i)));
  }
  return names;
}

// The throughput columns of a CSV header: step_seconds, ..., mfu, <part>_seconds...
std::string throughput_csv_header() {
  std::string out = "step_seconds,tokens_per_s,tflops_per_gpu,mfu";
  for (const std::string& p : step_part_names()) out += "," + p + "_seconds";
  return out;
}

// The cells of throughput_csv_header for a response's "throughput" (zeros without one).
void put_throughput_cells(const ojson& holder, std::vector<ojson>& cells) {
  const bool has = holder.contains("throughput");
  const ojson none = ojson(0.0);
  for (const char* key : {"step_seconds", "tokens_per_s", "tflops_per_gpu", "mfu"}) {
    cells.push_back(has ? holder["throughput"][key] : none);
  }
  for (const std::string& p : step_part_names()) {
    cells.push_back(has ? holder["throughput"]["step"].value(p, none) : none);
  }
}

// "step time (global batch 1024): ..." and one line per nonzero part of the step.
std::string step_time_text(const ojson& r) {
  const ojson& tp = r["throughput"];
  const double step = tp["step_seconds"].get<double>();
  std::string out = fmt::format(
      "\nstep time: {:.3f} s per global batch | {:.0f} tokens/s | {:.1f} TFLOP/s per GPU | "
      "MFU {:.1f} %\n",
      step, tp["tokens_per_s"].get<double>(), tp["tflops_per_gpu"].get<double>(),
      100 * tp["mfu"].get<double>());
  for (const auto& [part, seconds] : tp["step"].items()) {
    const double v = seconds.get<double>();
    if (v == 0) continue;
    out += fmt::format("  {:<10} {:>12.3f} s {:>6.1f} %\n", part, v, step > 0 ? 100 * v / step : 0.0);
  }
  const ojson& t = r["training"];
  if (t.contains("comm_overlap")) {
    std::string names;
    for (const ojson& n : t["comm_overlap"]) names += (names.empty() ? "" : ", ") + n.get<std::string>();
    out += fmt::format("  communication overlapped with compute: {}\n", names.empty() ? "none" : names);
  }
  return out;
}

}  // namespace

std::string gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / kGiB); }

std::string pretrain_table(const ojson& r) {
  const ojson& m = r["model"];
  const ojson& g = r["gpu"];
  const ojson& l = r["layout"];
  const ojson& t = r["training"];
  std::string out;
  out += fmt::format("{} | {:.2f} B parameters | {} activation model\n",
                     m["name"].get<std::string>(), m["num_parameters"].get<double>() / 1e9,
                     t["activation_model"].get<std::string>());
  out += fmt::format("{} x {} ({}) | dp {} | tp {} | cp {} | pp {} | vpp {} | SP {} | ZeRO {}\n",
                     l["gpus"].get<int64_t>(), g["name"].get<std::string>(),
                     gib(g["memory_bytes"].get<double>()), l["dp"].get<int64_t>(),
                     l["tp"].get<int64_t>(), l["cp"].get<int64_t>(), l["pp"].get<int64_t>(),
                     l["vpp"].get<int64_t>(), on_off(l["sp"].get<bool>()), l["zero"].get<int>());
  const double total_params = m["num_parameters"].get<double>();
  const double active_params = m.value("active_parameters", total_params);
  if (active_params != total_params) {
    // A mixture-of-experts model: the expert-parallel folding and the active share.
    out += fmt::format("experts: ep {} | etp {} | edp {} | {:.2f} B active per token of {:.2f} B\n",
                       l.value("ep", ojson(1)).get<int64_t>(), l.value("etp", ojson(1)).get<int64_t>(),
                       l.value("edp", ojson(1)).get<int64_t>(), active_params / 1e9,
                       total_params / 1e9);
  }
  {
    // An uneven or custom pipeline, as given (the stages' layers are in the table below).
    const int64_t first = l.value("first_stage_layers", ojson(0)).get<int64_t>();
    const int64_t last = l.value("last_stage_layers", ojson(0)).get<int64_t>();
    const std::string layout = l.value("pipeline_layout", ojson("")).get<std::string>();
    std::string pipeline;
    if (first > 0) pipeline += fmt::format(" | first stage {} layers", first);
    if (last > 0) pipeline += fmt::format(" | last stage {} layers", last);
    if (!layout.empty()) pipeline += " | layout " + layout;
    if (!pipeline.empty()) out += "pipeline: " + pipeline.substr(3) + "\n";
  }
  std::string batch = fmt::format("micro-batch {}", t["micro_batch"].get<int64_t>());
  if (t["global_batch"].get<int64_t>() > 0) {
    batch += fmt::format(" | global batch {} ({} micro-batches)", t["global_batch"].get<int64_t>(),
                         t["num_microbatches"].get<int64_t>());
  }
  std::string recompute = t["recompute"].get<std::string>();
  if (t.contains("recompute_modules")) {
    // Megatron's recompute modules, when other than its default (core_attn alone)
    std::string names;
    for (const ojson& n : t["recompute_modules"]) names += (names.empty() ? "" : ", ") + n.get<std::string>();
    if (!names.empty() && names != "core_attn") recompute += " (" + names + ")";
  }
  out += fmt::format("seq {} | {} | recompute {} | FlashAttention {}\n\n",
                     t["seq_len"].get<int64_t>(), batch, recompute,
                     on_off(t["flash_attention"].get<bool>()));
  out += fmt::format("{:>5} {:>6} {:>9} {:>10} {:>10} {:>10} {:>11} {:>10} {:>10} {:>10}\n", "stage",
                     "layers", "in-flight", "weights", "gradients", "optimizer", "activations",
                     "total", "overhead", "peak");
  for (const ojson& s : r["stages"]) {
    out += fmt::format("{:>5} {:>6} {:>9.2f} {:>10} {:>10} {:>10} {:>11} {:>10} {:>10} {:>10}\n",
                       s["stage"].get<int>(), s["layers"].get<int64_t>(),
                       s["microbatches_in_flight"].get<double>(),
                       gib(s["weights_bytes"].get<double>()),
                       gib(s["gradients_bytes"].get<double>()),
                       gib(s["optimizer_bytes"].get<double>()),
                       gib(s["activations_bytes"].get<double>()),
                       gib(s["total_bytes"].get<double>()), gib(s["overhead_bytes"].get<double>()),
                       gib(s["peak_bytes"].get<double>()));
  }
  if (!r["stages"].empty() && r["stages"][0].contains("experts")) {
    // The routed experts' share of every stage (included in the columns above).
    out += fmt::format("\n{:>5} {:>10} {:>15} {:>14} {:>18} {:>16}\n", "stage", "MoE layers",
                       "expert params", "expert states", "expert activations", "dispatch buffers");
    for (const ojson& s : r["stages"]) {
      const ojson& e = s["experts"];
      out += fmt::format("{:>5} {:>10} {:>13.3f} B {:>14} {:>18} {:>16}\n", s["stage"].get<int>(),
                         e["moe_layers"].get<int64_t>(), e["parameters"].get<double>() / 1e9,
                         gib(e["weights_bytes"].get<double>() + e["gradients_bytes"].get<double>() +
                             e["optimizer_bytes"].get<double>()),
                         gib(e["activations_bytes"].get<double>()),
                         gib(e["dispatch_buffer_bytes"].get<double>()));
    }
  }
  const ojson& o = r["overheads"];
  out += fmt::format("\nestimate (4D paper Eq. 18, first stage): {} of {} = {:.1f} %\n",
                     gib(r["estimate_bytes"].get<double>()), gib(r["capacity_bytes"].get<double>()),
                     100.0 * r["usage_fraction"].get<double>());
  out += fmt::format("paper's verdict: {}\n", verdict_note(r["verdict"].get<std::string>()));
  out += fmt::format(
      "\npeak with the overhead model: stage {}, {} of {} = {:.1f} %\n"
      "  overheads: context {}, comm buffers {}, bf16 logits {}, paper corrections {}, "
      "fragmentation {}\n",
      r["peak_stage"].get<int>(), gib(r["peak_bytes"].get<double>()),
      gib(r["capacity_bytes"].get<double>()),
      100.0 * r["peak_bytes"].get<double>() / r["capacity_bytes"].get<double>(),
      gib(o["context_bytes"].get<double>()), gib(o["comm_buffer_bytes"].get<double>()),
      gib(o["logits_bytes"].get<double>()), gib(o["activation_correction_bytes"].get<double>()),
      gib(o["fragmentation_bytes"].get<double>()));
  if (o["optimizer_step_bytes"].get<double>() > 0) {
    out += fmt::format("  optimizer.step() temporaries beyond what the backward freed: {}\n",
                       gib(o["optimizer_step_bytes"].get<double>()));
  }
  if (const ojson& ps0 = r["stages"][r["peak_stage"].get<int>()];
      ps0["stack"]["unsharded_root_bytes"].get<double>() > 0) {
    out += fmt::format("  FSDP1 root unit kept unsharded (in weights): {}\n",
                       gib(ps0["stack"]["unsharded_root_bytes"].get<double>()));
  }
  if (t.contains("framework") && t["framework"].get<std::string>() != "megatron") {
    // the training stack's parts (a default Megatron answer prints as before)
    const ojson& ps = r["stages"][static_cast<std::size_t>(r["peak_stage"].get<int>())];
    const ojson& st = ps["stack"];
    out += fmt::format(
        "  training stack: {} | loss {} | optimizer {} ({} bytes/param)\n"
        "  allocated {} | reserved {} | host {} | paged (outside reserved) {}\n"
        "  parts: framework buffers {}, fp32 master {}, loss {}, recompute {}, offload staging {}, "
        "phases not alive together {}\n",
        t["framework"].get<std::string>(), t["loss"].get<std::string>(),
        t["optimizer"].get<std::string>(), t["optimizer_bytes"].get<double>(),
        gib(r["peak_allocated_bytes"].get<double>()), gib(r["peak_reserved_bytes"].get<double>()),
        gib(r["host_bytes"].get<double>()), gib(st["paged_bytes"].get<double>()),
        gib(st["framework_buffer_bytes"].get<double>()), gib(st["master_weights_bytes"].get<double>()),
        gib(st["loss_bytes"].get<double>()), gib(st["recompute_bytes"].get<double>()),
        gib(st["offload_staging_bytes"].get<double>()),
        gib(ps["overheads"]["phase_overlap_bytes"].get<double>()));
  }
  if (t.contains("adapter")) {
    // LoRA / QLoRA: a different training method, its parts named apart
    const ojson& ad = t["adapter"];
    const ojson& p = r["adapter"];
    std::string targets;
    for (const ojson& x : ad["targets"]) targets += (targets.empty() ? "" : ",") + x.get<std::string>();
    out += fmt::format(
        "  adapter: {} r {} alpha {} dropout {} on {} ({} adapters){}\n"
        "  trainable {:.0f} of {:.0f} parameters\n"
        "  parts: frozen base {}, quantisation metadata {}, adapter weights {}, adapter "
        "gradients {}, adapter optimizer {}, dequantised weight {}\n",
        ad["type"].get<std::string>(), ad["rank"].get<int64_t>(), ad["alpha"].get<double>(),
        ad["dropout"].get<double>(), targets, ad["dtype"].get<std::string>(),
        ad.contains("double_quant") && ad["double_quant"].get<bool>() ? ", double quant" : "",
        r["trainable_parameters"].get<double>(), r["model"]["num_parameters"].get<double>(),
        gib(p["base_weights_bytes"].get<double>()), gib(p["quant_metadata_bytes"].get<double>()),
        gib(p["adapter_weights_bytes"].get<double>()),
        gib(p["adapter_gradients_bytes"].get<double>()),
        gib(p["adapter_optimizer_bytes"].get<double>()), gib(p["dequant_bytes"].get<double>()));
    if (ad.contains("all_linear")) out += "  targets given as all-linear: every linear but the output layer\n";
  }
  if (r.contains("recipe")) {
    // the library's recipe: which fields it set, which the request's own values kept
    const ojson& rc = r["recipe"];
    std::string set, kept;
    for (auto it = rc["set"].begin(); it != rc["set"].end(); ++it) {
      set += (set.empty() ? "" : ", ") + it.key() + "=" + it.value().dump();
    }
    for (const ojson& k : rc["kept"]) kept += (kept.empty() ? "" : ", ") + k.get<std::string>();
    out += fmt::format("  recipe {} ({}): set {}{}\n", rc["name"].get<std::string>(),
                       rc["source"].get<std::string>(), set.empty() ? "nothing" : set,
                       kept.empty() ? "" : "; yours kept: " + kept);
  }
  out += advice_text(r);
  out += fmt::format("verdict: {}\n", peak_verdict_note(r["peak_verdict"].get<std::string>()));
  // the margin the verdict stands on, from memest's measured error (MEMEST_PEAK_ERROR_SIGMA)
  const double margin = r["margin_bytes"].get<double>();
  out += fmt::format(
      "  margin {} {} | 90 % band of the peak {}-{} | probability of OOM {:.1f} %\n",
      gib(std::fabs(margin)), margin >= 0 ? "free" : "over", gib(r["peak_band_bytes"][0].get<double>()),
      gib(r["peak_band_bytes"][1].get<double>()), 100 * r["oom_probability"].get<double>());
  out += fmt::format(
      "  as PyTorch reports it: max_memory_allocated {}, max_memory_reserved {}; nvidia-smi {}\n",
      gib(r["torch_max_memory_allocated_bytes"].get<double>()),
      gib(r["torch_max_memory_reserved_bytes"].get<double>()), gib(r["nvidia_smi_bytes"].get<double>()));
  if (r.contains("throughput")) out += step_time_text(r);
  return out;
}

std::string pretrain_csv(const ojson& r) {
  std::string out =
      "stage,layers,microbatches_in_flight,parameters,weights_bytes,gradients_bytes,"
      "optimizer_bytes,activations_bytes,total_bytes,overhead_bytes,peak_bytes,estimate_bytes,"
      "capacity_bytes,verdict,oom_predicted," + throughput_csv_header() +
      ",torch_max_memory_allocated_bytes,torch_max_memory_reserved_bytes,nvidia_smi_bytes,"
      "oom_probability,margin_bytes\n";
  for (const ojson& s : r["stages"]) {
    std::vector<ojson> cells = {s["stage"], s["layers"], s["microbatches_in_flight"], s["parameters"],
                                s["weights_bytes"], s["gradients_bytes"], s["optimizer_bytes"],
                                s["activations_bytes"], s["total_bytes"], s["overhead_bytes"],
                                s["peak_bytes"], r["estimate_bytes"], r["capacity_bytes"],
                                r["verdict"], r["oom_predicted"]};
    put_throughput_cells(r, cells);  // the step of the whole run, repeated on every stage
    cells.push_back(s["torch_max_memory_allocated_bytes"]);
    cells.push_back(s["torch_max_memory_reserved_bytes"]);
    cells.push_back(s["nvidia_smi_bytes"]);
    cells.push_back(r["oom_probability"]);  // of the run, repeated on every stage
    cells.push_back(r["margin_bytes"]);
    out += csv_line(cells);
  }
  return out;
}

std::string model_states_table(const ojson& r) {
  const ojson& t = r["training"];
  const double per_param = t["param_bytes"].get<double>() + t["grad_bytes"].get<double>() +
                           t["optimizer_bytes"].get<double>();
  std::string out;
  const ojson& m = r["model"];
  const double total = m["num_parameters"].get<double>();
  const double active = m.value("active_parameters", total);
  // A mixture-of-experts model: every expert is in the model states; say how many a token uses.
  const std::string active_note =
      active != total ? fmt::format(" ({:.4g} B active per token)", active / 1e9) : std::string();
  out += fmt::format("{} | {:.4g} B parameters{} | {} GPUs data parallel | ZeRO stage {}\n",
                     m["name"].get<std::string>(), total / 1e9, active_note,
                     r["layout"]["gpus"].get<int64_t>(), r["layout"]["zero"].get<int>());
  out += fmt::format("{:g} bytes/param before sharding (weights {:g}, gradients {:g}, optimizer {:g})\n\n",
                     per_param, t["param_bytes"].get<double>(), t["grad_bytes"].get<double>(),
                     t["optimizer_bytes"].get<double>());
  out += fmt::format("{:>12} {:>12} {:>12} {:>12} {:>14}\n", "weights", "gradients", "optimizer",
                     "total", "total (GB)");
  out += fmt::format("{:>12} {:>12} {:>12} {:>12} {:>14.2f}\n", gib(r["weights_bytes"].get<double>()),
                     gib(r["gradients_bytes"].get<double>()), gib(r["optimizer_bytes"].get<double>()),
                     gib(r["estimate_bytes"].get<double>()), r["estimate_gb"].get<double>());
  if (r.contains("capacity_bytes")) {
    out += fmt::format("\n{} of {} ({}) = {:.1f} %\nverdict: {}\n",
                       gib(r["estimate_bytes"].get<double>()), gib(r["capacity_bytes"].get<double>()),
                       r["gpu"]["name"].get<std::string>(), 100.0 * r["usage_fraction"].get<double>(),
                       verdict_note(r["verdict"].get<std::string>()));
  }
  return out;
}

std::string model_states_csv(const ojson& r) {
  std::string out =
      "num_parameters,gpus,zero,weights_bytes,gradients_bytes,optimizer_bytes,estimate_bytes,"
      "capacity_bytes,verdict\n";
  out += csv_line({r["model"]["num_parameters"], r["layout"]["gpus"], r["layout"]["zero"],
                   r["weights_bytes"], r["gradients_bytes"], r["optimizer_bytes"],
                   r["estimate_bytes"], r.value("capacity_bytes", ojson(0.0)), r["verdict"]});
  return out;
}

namespace {

std::string search_header(const ojson& r) {
  return fmt::format(
      "{} on {} x {} | seq {} | global batch {}\n{} candidates, {} evaluated, {} ranked, {} predicted OOM\n\n",
      r["model"]["name"].get<std::string>(), r["gpus"].get<int64_t>(), r["gpu"]["name"].get<std::string>(),
      r["training"]["seq_len"].get<int64_t>(), r["training"]["global_batch"].get<int64_t>(),
      r["candidates"].get<uint64_t>(), r["evaluated"].get<uint64_t>(), r["ranked"].get<uint64_t>(),
      r["pruned"]["oom"].get<uint64_t>());
}

// "1=": the rank, with "=" when the entry is within the search's tie margin of the best.
std::string rank_cell(const ojson& e) {
  return fmt::format("{}{}", e["rank"].get<int>(), e.value("tie", false) ? "=" : " ");
}

// The step parts that are nonzero in some entry (the wide table's breakdown columns).
std::vector<std::string> nonzero_parts(const ojson& results) {
  std::vector<std::string> parts;
  for (const ojson& e : results) {
    if (!e.contains("throughput")) continue;
    for (const auto& [part, seconds] : e["throughput"]["step"].items()) {
      if (seconds.get<double>() != 0 && std::find(parts.begin(), parts.end(), part) == parts.end()) {
        parts.push_back(part);
      }
    }
  }
  // in the library's order
  std::vector<std::string> ordered;
  for (const std::string& p : step_part_names()) {
    if (std::find(parts.begin(), parts.end(), p) != parts.end()) ordered.push_back(p);
  }
  return ordered;
}

// Whether any entry trains with fp8 or torch.compile (then both get a column).
bool any_fp8_or_compile(const ojson& results) {
  for (const ojson& e : results) {
    if (e.value("fp8", false) || e.value("compile", std::string("none")) != "none") return true;
  }
  return false;
}

// Every column, the step breakdown (seconds of each nonzero part) and the reason last.
std::string search_rows_wide(const ojson& results) {
  const std::vector<std::string> parts = nonzero_parts(results);
  const bool stack = any_fp8_or_compile(results);
  std::string out = fmt::format(
      "{:>5} {:>3} {:>3} {:>3} {:>3} {:>5} {:>3} {:>4} {:>9} {:>4} {:>10} {:>10} {:>6} {:>9} {:>10} {:>7} {:>6}",
      "rank", "tp", "cp", "pp", "vpp", "dp", "ep", "mbs", "recompute", "zero", "estimate", "peak",
      "P(OOM)", "TFLOP/s", "tokens/s", "bubble", "MFU");
  if (stack) out += fmt::format(" {:>3} {:>7}", "fp8", "compile");
  for (const std::string& p : parts) out += fmt::format(" {:>9}", p);
  out += "  why\n";
  for (const ojson& e : results) {
    const ojson& l = e["layout"];
    out += fmt::format(
        "{:>5} {:>3} {:>3} {:>3} {:>3} {:>5} {:>3} {:>4} {:>9} {:>4} {:>10} {:>10} {:>5.1f}% {:>9.1f} {:>10.0f} {:>6.1f}% {:>5.1f}%",
        rank_cell(e), l["tp"].get<int64_t>(), l["cp"].get<int64_t>(), l["pp"].get<int64_t>(),
        l["vpp"].get<int64_t>(), l["dp"].get<int64_t>(), l.value("ep", ojson(1)).get<int64_t>(),
        l["micro_batch"].get<int64_t>(), l["recompute"].get<std::string>(), l["zero"].get<int>(),
        gib(e["estimate_bytes"].get<double>()), gib(e["peak_bytes"].get<double>()),
        100 * e["oom_probability"].get<double>(),
        e["tflops_per_gpu"].get<double>(), e["tokens_per_s"].get<double>(),
        100 * e["bubble_fraction"].get<double>(),
        100 * (e.contains("throughput") ? e["throughput"]["mfu"].get<double>() : 0.0));
    if (stack) {
      out += fmt::format(" {:>3} {:>7}", on_off(e.value("fp8", false)),
                         e.value("compile", std::string("none")));
    }
    for (const std::string& p : parts) {
      out += fmt::format(" {:>9.3f}", e["throughput"]["step"].value(p, 0.0));
    }
    out += "  " + e["reason"].get<std::string>() + "\n";
  }
  return out + "(rank n= : within the tie margin of the best; step parts in seconds)\n";
}

// The columns that matter to choose a layout, 78 characters a line (ep and etp for
// mixture-of-experts models, fp8 and compile when an entry uses them).
std::string search_rows_compact(const ojson& results, bool moe) {
  const bool stack = any_fp8_or_compile(results);
  std::string out = fmt::format("{:>5} {:>3} {:>3} {:>3} {:>3} {:>4} {:>9} {:>4} {:>9} {:>5} {:>11} {:>8}",
                                "rank", "tp", "cp", "pp", "vpp", "mbs", "recompute", "zero",
                                "peak GiB", "fit", "TFLOP/s/GPU", "step s");
  if (moe) out += fmt::format(" {:>4} {:>4}", "ep", "etp");
  if (stack) out += fmt::format(" {:>3} {:>7}", "fp8", "compile");
  out += "\n";
  for (const ojson& e : results) {
    const ojson& l = e["layout"];
    out += fmt::format("{:>5} {:>3} {:>3} {:>3} {:>3} {:>4} {:>9} {:>4} {:>9.2f} {:>5} {:>11.1f} {:>8.2f}",
                       rank_cell(e), l["tp"].get<int64_t>(), l["cp"].get<int64_t>(),
                       l["pp"].get<int64_t>(), l["vpp"].get<int64_t>(), l["micro_batch"].get<int64_t>(),
                       l["recompute"].get<std::string>(), l["zero"].get<int>(),
                       e["peak_bytes"].get<double>() / kGiB, e["peak_verdict"].get<std::string>(),
                       e["tflops_per_gpu"].get<double>(), e["step_seconds"].get<double>());
    if (moe) {
      out += fmt::format(" {:>4} {:>4}", l.value("ep", ojson(1)).get<int64_t>(),
                         l.value("etp", ojson(1)).get<int64_t>());
    }
    if (stack) {
      out += fmt::format(" {:>3} {:>7}", on_off(e.value("fp8", false)),
                         e.value("compile", std::string("none")));
    }
    out += "\n";
  }
  return out + "(rank n= : within the tie margin of the best)\n"
               "(--wide adds dp, ep, the estimate, tokens/s, MFU and the step breakdown)\n";
}

}  // namespace

std::string search_table(const ojson& r, bool wide) {
  const std::string out = search_header(r);
  if (r["results"].empty()) return out + r["message"].get<std::string>() + "\n";
  const ojson& m = r["model"];
  const bool moe = m.value("active_parameters", m["num_parameters"]) != m["num_parameters"];
  return out + (wide ? search_rows_wide(r["results"]) : search_rows_compact(r["results"], moe));
}

std::string search_csv(const ojson& r) {
  std::string out =
      "rank,tp,cp,pp,vpp,dp,micro_batch,recompute,zero,estimate_bytes,peak_bytes,oom_predicted,"
      "tflops_per_gpu,tokens_per_s,step_seconds,bubble_fraction,ep,etp,fp8,compile,tie,"
      "gap_to_best,mfu";
  for (const std::string& p : step_part_names()) out += "," + p + "_seconds";
  out += ",oom_probability,margin_bytes\n";
  for (const ojson& e : r["results"]) {
    const ojson& l = e["layout"];
    std::vector<ojson> cells = {e["rank"], l["tp"], l["cp"], l["pp"], l["vpp"], l["dp"],
                                l["micro_batch"], l["recompute"], l["zero"], e["estimate_bytes"],
                                e["peak_bytes"], e["oom_predicted"], e["tflops_per_gpu"],
                                e["tokens_per_s"], e["step_seconds"], e["bubble_fraction"],
                                l.value("ep", ojson(1)), l.value("etp", ojson(1)),
                                e.value("fp8", ojson(false)), e.value("compile", ojson("none")),
                                e.value("tie", ojson(false)), e.value("gap_to_best", ojson(0.0))};
    const bool has = e.contains("throughput");
    cells.push_back(has ? e["throughput"]["mfu"] : ojson(0.0));
    for (const std::string& p : step_part_names()) {
      cells.push_back(has ? e["throughput"]["step"].value(p, ojson(0.0)) : ojson(0.0));
    }
    cells.push_back(e["oom_probability"]);
    cells.push_back(e["margin_bytes"]);
    out += csv_line(cells);
  }
  return out;
}

namespace {

const char* kFinetuneTerms[][2] = {
    {"m_base", "CUDA context, framework"}, {"m_p", "fp16 + fp32 parameters"},
    {"m_os", "momentum + variance"},       {"m_out", "kept outputs"},
    {"m_lm", "logits, loss, LM head"},     {"m_back", "TP backward buffer"}};

std::string finetune_methods_table(const ojson& r) {
  std::string out = fmt::format("{:<12} {:>4} {:>4} {:>10} {:>8} {:>16}\n", "method", "tp", "dp",
                                "max batch", "score", "peak at max");
  for (const ojson& m : r["methods"]) {
    if (!m["applicable"].get<bool>()) {
      out += fmt::format("{:<12} not applicable: {}\n", m["method"].get<std::string>(),
                         m["reason"].get<std::string>());
      continue;
    }
    out += fmt::format("{:<12} {:>4} {:>4} {:>10} {:>8g} {:>16}\n", m["method"].get<std::string>(),
                       m["tp"].get<int64_t>(), m["dp"].get<int64_t>(), m["max_batch"].get<int64_t>(),
                       m["score"].get<double>(), gib(m["peak_bytes"].get<double>()));
  }
  return out;
}

}  // namespace

std::string finetune_table(const ojson& r, int64_t requested_gpus) {
  const ojson& m = r["model"];
  const ojson& g = r["gpu"];
  // the answer's layout says the count; LLMem's CPU offloading answer has none: the request's
  const int64_t gpus = r.contains("layout") ? r["layout"]["gpus"].get<int64_t>() : requested_gpus;
  std::string out = fmt::format("{} | {:.2f} B parameters | fine-tuning (LLMem) on {}{} ({})\n",
                                m["name"].get<std::string>(), m["num_parameters"].get<double>() / 1e9,
                                gpus > 0 ? fmt::format("{} x ", gpus) : std::string(),
                                g["name"].get<std::string>(), gib(g["memory_bytes"].get<double>()));
  const bool automatic = r["method"] == "auto";
  if (automatic) {
    out += "\nAlgorithm 1: the largest batch per method that avoids OOM, and its score\n";
    out += finetune_methods_table(r);
    out += fmt::format("\nselected: {}", r["selected"].get<std::string>());
    if (r["selected"] == "cpu_offload") {
      out += fmt::format(" (no method fits batch 1; the smallest GPU-only peak is {})\n",
                         gib(r["estimate_bytes"].get<double>()));
      if (r.contains("alternatives")) {
        out += "\nalternatives with a DIFFERENT training method (frozen base, adapters only; not "
               "full fine-tuning):\n";
        for (const ojson& a : r["alternatives"]) {
          const ojson& ad = a["adapter"];
          std::string targets;
          for (const ojson& x : ad["targets"]) {
            targets += (targets.empty() ? "" : ",") + x.get<std::string>();
          }
          out += fmt::format("  {} r {} on {} ({} adapters{}), {} with recompute {}: ",
                             a["method"].get<std::string>(), ad["rank"].get<int64_t>(), targets,
                             ad["dtype"].get<std::string>(),
                             ad.contains("double_quant") && ad["double_quant"].get<bool>()
                                 ? ", double quant" : "",
                             a["framework"].get<std::string>(), a["recompute"].get<std::string>());
          if (a.contains("reason")) {
            out += "not estimated: " + a["reason"].get<std::string>() + "\n";
          } else if (a["max_batch"].get<int64_t>() > 0) {
            out += fmt::format("{:.0f} trainable, largest batch {} per GPU, peak {}\n",
                               a["trainable_parameters"].get<double>(),
                               a["max_batch"].get<int64_t>(), gib(a["peak_bytes"].get<double>()));
          } else {
            out += fmt::format("does not fit batch 1 either (peak {})\n",
                               gib(a["peak_bytes"].get<double>()));
          }
        }
      }
      return out;
    }
    out += fmt::format(" with batch {} per GPU\n\n", r["max_batch"].get<int64_t>());
  }
  const ojson& t = r["training"];
  const ojson& e = r["environment"];
  const ojson& l = r["layout"];
  out += fmt::format("{}: tp {} | dp {} | seq {} | batch {} per GPU | gradient checkpointing {}\n",
                     automatic ? r["selected"].get<std::string>() : r["method"].get<std::string>(),
                     l["tp"].get<int64_t>(), l["dp"].get<int64_t>(), t["seq_len"].get<int64_t>(),
                     t["batch"].get<int64_t>(), on_off(t["gradient_checkpointing"].get<bool>()));
  out += fmt::format("chunks: {:.0f} elements x {:.0f} ({:.2f} MiB of chunk space unused)\n\n",
                     e["chunk_elements"].get<double>(), e["chunk_count"].get<double>(),
                     e["chunk_waste_bytes"].get<double>() / (1024.0 * 1024.0));
  out += fmt::format("{:<8} {:<24} {:>14} {:>14}\n", "term", "", "single GPU", "per GPU");
  for (const auto& term : kFinetuneTerms) {
    out += fmt::format("{:<8} {:<24} {:>14} {:>14}\n", term[0], term[1],
                       gib(r["parts"][term[0]].get<double>()), gib(r["per_gpu"][term[0]].get<double>()));
  }
  // the headline keeps the margin of every mode; LLMem's own test (peak <= capacity) beside it
  out += fmt::format("\npeak (LLMem): {} of {} = {:.1f} %\nverdict: {}; LLMem's test: {}\n",
                     gib(r["peak_bytes"].get<double>()), gib(r["capacity_bytes"].get<double>()),
                     100.0 * r["usage_fraction"].get<double>(),
                     peak_verdict_note(r["peak_verdict"].get<std::string>()),
                     r["verdict"] == "fits" ? "fits (peak <= capacity)" : "oom (peak above capacity)");
  return out;
}

std::string finetune_csv(const ojson& r) {
  if (r["method"] == "auto") {
    std::string out = "method,applicable,tp,dp,max_batch,score,peak_bytes,selected\n";
    for (const ojson& m : r["methods"]) {
      const bool ok = m["applicable"].get<bool>();
      out += csv_line({m["method"], m["applicable"], ok ? m["tp"] : ojson(""), ok ? m["dp"] : ojson(""),
                       ok ? m["max_batch"] : ojson(""), ok ? m["score"] : ojson(""),
                       ok ? m["peak_bytes"] : ojson(""), m["method"] == r["selected"]});
    }
    return out;
  }
  std::string out = "method,tp,dp,batch,seq_len";
  std::vector<ojson> cells = {r["method"], r["layout"]["tp"], r["layout"]["dp"],
                              r["training"]["batch"], r["training"]["seq_len"]};
  for (const auto& term : kFinetuneTerms) {
    out += fmt::format(",{}", term[0]);
    cells.push_back(r["per_gpu"][term[0]]);
  }
  out += ",peak_bytes,capacity_bytes,verdict,peak_verdict\n";
  cells.push_back(r["peak_bytes"]);
  cells.push_back(r["capacity_bytes"]);
  cells.push_back(r["verdict"]);
  cells.push_back(r["peak_verdict"]);
  return out + csv_line(cells);
}

std::string list_table(const ojson& rows) {
  if (rows.empty()) return "";
  std::vector<std::string> keys;
  for (const auto& [k, v] : rows[0].items()) keys.push_back(k);
  auto cell = [](const ojson& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_float()) {
      const double d = v.get<double>();
      return d == std::floor(d) && std::fabs(d) < 1e15 ? fmt::format("{:.0f}", d) : fmt::format("{:g}", d);
    }
    return v.dump();
  };
  std::vector<std::size_t> width(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    width[i] = keys[i].size();
    for (const ojson& row : rows) width[i] = std::max(width[i], cell(row[keys[i]]).size());
  }
  std::string out;
  for (std::size_t i = 0; i < keys.size(); ++i) out += fmt::format("{:<{}}  ", keys[i], width[i]);
  out.erase(out.find_last_not_of(' ') + 1);
  out += "\n";
  for (const ojson& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < keys.size(); ++i) line += fmt::format("{:<{}}  ", cell(row[keys[i]]), width[i]);
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  }
  return out;
}

std::string list_csv(const ojson& rows) {
  if (rows.empty()) return "";
  std::vector<ojson> header;
  for (const auto& [k, v] : rows[0].items()) header.emplace_back(k);
  std::string out = csv_line(header);
  for (const ojson& row : rows) {
    std::vector<ojson> cells;
    for (const auto& [k, v] : row.items()) cells.push_back(v);
    out += csv_line(cells);
  }
  return out;
}

}  // namespace memest_cli
