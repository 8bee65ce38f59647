// The measured block (raw figures) and the device profile built from it.
#include <cmath>
#include <stdexcept>

#include "calibrate.hpp"

namespace memest_calibrate {

namespace {

// The presets scale tp_bandwidth_gbps with intra_node_gbps (libmemest/data/gpus.json: 92.9 GB/s
// fitted on A100 NVLink at 250 GB/s; H100's 167.2 = 450 x 92.9 / 250).
constexpr double kTpBandwidthPerIntraNode = 92.9 / 250.0;

double round_to(double x, double step) { return std::round(x / step) * step; }

std::string version_text(int v) {  // 12080 -> "12.8"
  if (v <= 0) return "";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

ojson copy_json(const CopyTiming& t, double gbps) {
  return {{"src", t.src}, {"dst", t.dst}, {"bytes", t.bytes}, {"seconds", t.seconds},
          {"gbps", gbps}};
}

// Typed reads of the measured block; a wrong type names the field.
const nlohmann::json* at(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

[[noreturn]] void bad(const std::string& path, const char* what) {
  throw std::runtime_error("measured." + path + ": " + what);
}

template <typename T>
std::optional<T> num(const nlohmann::json& j, const char* key, const std::string& path) {
  const nlohmann::json* v = at(j, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) bad(path + key, "expected a number");
  return v->get<T>();
}

std::string str(const nlohmann::json& j, const char* key, const std::string& path) {
  const nlohmann::json* v = at(j, key);
  if (!v) return "";
  if (!v->is_string()) bad(path + key, "expected a string");
  return v->get<std::string>();
}

const nlohmann::json& obj(const nlohmann::json& j, const char* key, const std::string& path) {
  static const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json* v = at(j, key);
  if (!v) return empty;
  if (!v->is_object()) bad(path + key, "expected an object");
  return *v;
}

const nlohmann::json& arr(const nlohmann::json& j, const char* key, const std::string& path) {
  static const nlohmann::json empty = nlohmann::json::array();
  const nlohmann::json* v = at(j, key);
  if (!v) return empty;
  if (!v->is_array()) bad(path + key, "expected an array");
  return *v;
}

CopyTiming copy_from(const nlohmann::json& j, const std::string& path) {
  if (!j.is_object()) bad(path, "expected an object");
  CopyTiming t;
  t.src = num<int>(j, "src", path + ".").value_or(0);
  t.dst = num<int>(j, "dst", path + ".").value_or(0);
  t.bytes = num<int64_t>(j, "bytes", path + ".").value_or(0);
  t.seconds = num<double>(j, "seconds", path + ".").value_or(0);
  if (t.bytes <= 0 || !(t.seconds > 0)) bad(path, "needs positive bytes and seconds");
  return t;
}

}  // namespace

ojson measurement_to_json(const Measurement& m) {
  ojson j;
  if (!m.note.empty()) j["note"] = m.note;
  j["tool"] = "memest-calibrate " + (m.tool_version.empty() ? tool_version() : m.tool_version);
  j["date"] = m.date;
  j["device"] = {{"index", m.device_index},
                 {"count", m.device_count},
                 {"name", m.device_name},
                 {"pci_bus_id", m.pci_bus_id},
                 {"compute_capability", std::to_string(m.cc_major) + "." + std::to_string(m.cc_minor)},
                 {"multiprocessors", m.multiprocessors}};
  j["versions"] = {{"cuda_driver", version_text(m.driver_version)},
                   {"cuda_runtime", version_text(m.runtime_version)},
                   {"cuda_driver_version", m.driver_version},
                   {"cuda_runtime_version", m.runtime_version},
                   {"nvidia_driver", m.nvml_driver_version}};
  ojson mem = {{"total_bytes", m.total_bytes},
               {"free_bytes", m.free_bytes},
               {"context_bytes", m.context_bytes},
               {"context_method", m.context_method}};
  if (m.cublas_handle_bytes) mem["cublas_handle_bytes"] = *m.cublas_handle_bytes;
  if (m.cublas_workspace_bytes) mem["cublas_workspace_bytes"] = *m.cublas_workspace_bytes;
  if (m.nccl_bytes) mem["nccl_bytes"] = *m.nccl_bytes;
  j["memory"] = mem;
  ojson nccl = ojson::object();
  if (m.nccl_bytes) nccl = {{"version", m.nccl_version}, {"ranks", m.nccl_ranks}};
  if (!m.nccl_note.empty()) nccl["note"] = m.nccl_note;
  j["nccl"] = nccl;
  ojson allocs = ojson::array();
  for (const AllocationProbe& a : m.allocations) {
    allocs.push_back({{"requested_bytes", a.requested_bytes}, {"free_drop_bytes", a.free_drop_bytes}});
  }
  j["allocations"] = allocs;
  ojson points = ojson::array();
  for (const GemmPoint& g : m.gemm) {
    points.push_back({{"m", g.m}, {"n", g.n}, {"k", g.k}, {"seconds", g.seconds}, {"tflops", g.tflops()}});
  }
  j["gemm"] = {{"dtype", "bf16"}, {"accumulate", "fp32"}, {"points", points}};
  if (m.hbm_copy) j["hbm"] = copy_json(*m.hbm_copy, hbm_gbps(*m.hbm_copy));
  ojson peers = ojson::array();
  for (const CopyTiming& t : m.peer_copies) peers.push_back(copy_json(t, peer_gbps(t)));
  j["peer"] = peers;
  j["notes"] = m.notes;
  return j;
}

Measurement measurement_from_json(const nlohmann::json& doc) {
  if (!doc.is_object()) throw std::runtime_error("expected a JSON object (a profile or its measured block)");
  const nlohmann::json& j = doc.contains("measured") ? doc.at("measured") : doc;
  if (!j.is_object()) bad("", "expected an object");
  Measurement m;
  m.note = str(j, "note", "");
  const std::string tool = str(j, "tool", "");
  const std::string prefix = "memest-calibrate ";
  m.tool_version = tool.rfind(prefix, 0) == 0 ? tool.substr(prefix.size()) : tool;
  m.date = str(j, "date", "");

  const nlohmann::json& d = obj(j, "device", "");
  m.device_index = num<int>(d, "index", "device.").value_or(0);
  m.device_count = num<int>(d, "count", "device.").value_or(1);
  m.device_name = str(d, "name", "device.");
  if (m.device_name.empty()) bad("device.name", "missing");
  m.pci_bus_id = str(d, "pci_bus_id", "device.");
  const std::string cc = str(d, "compute_capability", "device.");
  if (const auto dot = cc.find('.'); dot != std::string::npos) {
    try {
      m.cc_major = std::stoi(cc.substr(0, dot));
      m.cc_minor = std::stoi(cc.substr(dot + 1));
    } catch (const std::exception&) {
      bad("device.compute_capability", "expected MAJOR.MINOR");
    }
  }
  m.multiprocessors = num<int>(d, "multiprocessors", "device.").value_or(0);

  const nlohmann::json& v = obj(j, "versions", "");
  m.driver_version = num<int>(v, "cuda_driver_version", "versions.").value_or(0);
  m.runtime_version = num<int>(v, "cuda_runtime_version", "versions.").value_or(0);
  m.nvml_driver_version = str(v, "nvidia_driver", "versions.");

  const nlohmann::json& mem = obj(j, "memory", "");
  m.total_bytes = num<int64_t>(mem, "total_bytes", "memory.").value_or(0);
  if (m.total_bytes <= 0) bad("memory.total_bytes", "missing or not positive");
  m.free_bytes = num<int64_t>(mem, "free_bytes", "memory.").value_or(0);
  m.context_bytes = num<int64_t>(mem, "context_bytes", "memory.").value_or(0);
  m.context_method = str(mem, "context_method", "memory.");
  m.cublas_handle_bytes = num<int64_t>(mem, "cublas_handle_bytes", "memory.");
  m.cublas_workspace_bytes = num<int64_t>(mem, "cublas_workspace_bytes", "memory.");
  m.nccl_bytes = num<int64_t>(mem, "nccl_bytes", "memory.");
  const nlohmann::json& nccl = obj(j, "nccl", "");
  m.nccl_version = num<int>(nccl, "version", "nccl.").value_or(0);
  m.nccl_ranks = num<int>(nccl, "ranks", "nccl.").value_or(0);
  m.nccl_note = str(nccl, "note", "nccl.");

  for (const auto& a : arr(j, "allocations", "")) {
    if (!a.is_object()) bad("allocations", "expected objects");
    m.allocations.push_back({num<int64_t>(a, "requested_bytes", "allocations[].").value_or(0),
                             num<int64_t>(a, "free_drop_bytes", "allocations[].").value_or(0)});
  }
  for (const auto& p : arr(obj(j, "gemm", ""), "points", "gemm.")) {
    if (!p.is_object()) bad("gemm.points", "expected objects");
    GemmPoint g;
    g.m = num<int64_t>(p, "m", "gemm.points[].").value_or(0);
    g.n = num<int64_t>(p, "n", "gemm.points[].").value_or(0);
    g.k = num<int64_t>(p, "k", "gemm.points[].").value_or(0);
    g.seconds = num<double>(p, "seconds", "gemm.points[].").value_or(0);
    if (g.m <= 0 || g.n <= 0 || g.k <= 0 || !(g.seconds > 0)) {
      bad("gemm.points", "every point needs positive m, n, k and seconds");
    }
    m.gemm.push_back(g);
  }
  if (const nlohmann::json* h = at(j, "hbm")) m.hbm_copy = copy_from(*h, "hbm");
  for (const auto& p : arr(j, "peer", "")) m.peer_copies.push_back(copy_from(p, "peer[]"));
  for (const auto& n : arr(j, "notes", "")) {
    if (!n.is_string()) bad("notes", "expected strings");
    m.notes.push_back(n.get<std::string>());
  }
  return m;
}

ojson make_profile(const Measurement& m, const Options& opt) {
  std::vector<std::string> notes;
  const double gib = static_cast<double>(m.total_bytes) / kGiB;
  const PeakEntry* entry = find_peak(m.device_name, gib);

  ojson p;
  p["name"] = opt.name.empty() ? m.device_name : opt.name;
  if (entry && entry->preset) p["preset"] = entry->preset;
  p["memory_gib"] = gib;
  p["gpus_per_node"] = opt.gpus_per_node.value_or(m.device_count > 0 ? m.device_count : 1);

  std::optional<double> peak;
  ojson peak_json;
  if (opt.peak_tflops) {
    peak = *opt.peak_tflops;
    peak_json = {{"tflops", *peak}, {"source", "--peak-tflops"}};
  } else if (entry) {
    peak = entry->tflops;
    peak_json = {{"tflops", *peak}, {"source", std::string("built-in table: ") + entry->label}};
  } else {
    peak_json = {{"tflops", nullptr}, {"source", "unknown"}};
    notes.push_back("peak_bf16_tflops left out: \"" + m.device_name +
                    "\" is not in the built-in table; give --peak-tflops (then gemm_efficiency "
                    "is written too)");
  }
  if (peak) p["peak_bf16_tflops"] = *peak;

  // context_mib: what a process holds before the model is loaded.
  int64_t context = m.context_bytes;
  std::string context_parts = "CUDA context";
  if (m.cublas_workspace_bytes || m.cublas_handle_bytes) {
    context += m.cublas_workspace_bytes ? *m.cublas_workspace_bytes : *m.cublas_handle_bytes;
    context_parts += " + cuBLAS handle and workspace";
  }
  if (m.nccl_bytes) {
    context += *m.nccl_bytes;
    context_parts += " + NCCL communicator";
  }
  p["context_mib"] = static_cast<double>(context) / kMiB;

  const std::optional<int64_t> page = allocation_granularity(m.allocations);
  if (page) p["page_mib"] = static_cast<double>(*page) / kMiB;

  ojson fit_json = nullptr;
  if (!m.gemm.empty()) {
    std::vector<RowsValue> pts;
    for (const GemmPoint& g : m.gemm) {
      pts.push_back({static_cast<double>(g.m), peak ? g.tflops() / *peak : g.tflops()});
    }
    try {
      const SaturatingFit f = fit_saturating(pts);
      fit_json = {{"form", "eff(rows) = gemm_efficiency * rows / (rows + gemm_half_tokens)"},
                  {"points", f.points},
                  {"half_tokens", f.half_tokens}};
      if (peak) {
        double e = round_to(f.efficiency, 1e-4);
        fit_json["efficiency"] = f.efficiency;
        fit_json["rms_residual"] = f.rms;
        if (e > 1) {
          notes.push_back("the GEMMs ran above the given peak (fitted ceiling " +
                          std::to_string(f.efficiency) + "): check --peak-tflops; "
                          "gemm_efficiency written as 1");
          e = 1;
        }
        p["gemm_efficiency"] = std::max(e, 1e-3);
      } else {
        fit_json["ceiling_tflops"] = f.efficiency;
        fit_json["rms_residual_tflops"] = f.rms;
      }
      p["gemm_half_tokens"] = round_to(f.half_tokens, 0.1);
      // 1.5's step-time model takes the rows at which the efficiency halves as gemm_half_dim
      // (the same form along each dimension; N and K of the measured shapes are >= 4096).
      p["gemm_half_dim"] = round_to(f.half_tokens, 0.1);

    } catch (const std::invalid_argument& e) {
      notes.push_back(std::string("no GEMM fit: ") + e.what());
    }
  }

  // Device-memory bandwidth of the memory-bound kernels (1.5): the measured copy's.
  if (m.hbm_copy) p["hbm_gbps"] = round_to(hbm_gbps(*m.hbm_copy), 0.1);

  if (!m.peer_copies.empty()) {
    double sum = 0;
    for (const CopyTiming& t : m.peer_copies) sum += peer_gbps(t);
    const double intra = sum / static_cast<double>(m.peer_copies.size());
    p["intra_node_gbps"] = round_to(intra, 0.1);
    p["tp_bandwidth_gbps"] = round_to(intra * kTpBandwidthPerIntraNode, 0.1);
  } else {
    notes.push_back("intra_node_gbps not measured (one GPU visible)" +
                    std::string(entry && entry->preset ? "; the preset's value applies"
                                                       : "; the library's default applies"));
  }

  ojson measured = measurement_to_json(m);
  measured["page_bytes"] = page ? ojson(*page) : ojson(nullptr);
  measured["gemm"]["fit"] = fit_json;
  measured["peak"] = peak_json;
  ojson derived = {{"memory_gib", "memory.total_bytes / 2^30 (what cudaMemGetInfo reports as total)"},
                   {"context_mib", context_parts + ", bytes / 2^20"}};
  if (page) derived["page_mib"] = "greatest common divisor of the allocations' free-memory drops";
  if (p.contains("gemm_half_tokens")) derived["gemm"] = "least squares of the saturating form on gemm.points";
  if (p.contains("gemm_efficiency")) {
    derived["gemm_efficiency"] =
        "the ceiling of isolated GEMMs; the presets' are effective, fitted on whole training steps "
        "(README \"Throughput model\"), so tokens/s predicted with this one run higher";
  }
  if (p.contains("gemm_half_dim")) derived["gemm_half_dim"] = "= gemm_half_tokens (the rows at which the efficiency halves)";
  if (p.contains("hbm_gbps")) derived["hbm_gbps"] = "hbm.gbps (cudaMemcpy device to device, read + write)";
  if (p.contains("intra_node_gbps")) {
    derived["intra_node_gbps"] = "mean of peer[].gbps (cudaMemcpyPeer, one direction)";
    derived["tp_bandwidth_gbps"] = "intra_node_gbps x 92.9 / 250, the presets' scaling (not measured)";
  }
  measured["derived"] = derived;
  measured["profile_notes"] = notes;
  p["measured"] = measured;
  return p;
}

ojson without_measured(const ojson& profile) {
  ojson p = profile;
  p.erase("measured");
  return p;
}

}  // namespace memest_calibrate
