// Checks the step-time model (throughput/) against public throughput measurements
// (tests/data/measured/throughput-given.json: NeMo DGXC recipe tables, llm-foundry, BLOOM's
// layout tables, Megatron-Core MoE, NeMo AutoModel, Korthikanti, GPT-3/OPT/MT-NLG), each
// expressed as a memest pretrain request. Prints, as the Markdown tables docs/throughput.md
// quotes:
//   - the error of tokens/s per GPU by class (bf16, fp8, MoE) and by source, fitted on all
//     sources and leaving one source out at a time (the constants refitted without it);
//   - per table of layouts (a `groups` name): Spearman's rank correlation of predicted against
//     measured tokens/s and whether the predicted best is the measured best or tied with it;
//   - how many layouts that ran are predicted out of memory.
// Fitted constants (jointly, on these rows; every other constant is a datasheet or published
// figure of data/gpus.json): gemm_efficiency of the A100 and of the H100 presets, the H100's
// attention_efficiency and fp8_gemm_efficiency (the only fp8 GPU in the rows), one gemm_half_dim
// for every GPU (the dimension at which tile and wave quantisation halve a GEMM's efficiency
// along it), and the share of FlashAttention-2's speed a Triton FlashAttention kernel reaches
// (throughput.hpp kTritonShareOfFlash2; llm-foundry's rows). The A100's attention_efficiency is
// FlashAttention-2's published one (data/gpus.json), not fitted: no A100 row runs it. Exits
// non-zero when a case is refused, when the refit moves away from the shipped presets or the
// library's tie margin, or when the leave-one-source-out bounds fail.
//
//   memest_validate_throughput [tests/data/measured/throughput-given.json]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "json/modes.hpp"
#include "model/presets.hpp"
#include "plan/plan.hpp"
#include "pretrain/pretrain.hpp"
#include "throughput/throughput.hpp"

namespace {

using json = nlohmann::json;

struct Case {
  std::string id, source, cls, family;  // family: the fitted GPU ("a100", "h100", "" none)
  std::vector<std::string> groups;
  double measured = 0;  // tokens/s per GPU
  memest::PretrainRequest request;
  bool oom = false;     // predicted out of memory (memory model; constants do not move it)
  double peak_share = 0;  // the predicted peak over the GPU's capacity
};

// The fitted constants: gemm efficiency per GPU family, the H100's attention efficiency (the
// A100's, attention[0], is the preset's and stays), the Triton kernel's share of
// FlashAttention-2's speed.
struct Constants {
  double gemm[2] = {0, 0}, attention[2] = {0, 0};  // [a100, h100]
  double fp8 = 0;                                  // the H100's FP8 GEMM efficiency
  double half_dim = 0;                             // gemm_half_dim, one for every GPU
  double triton = 0;                               // kTritonShareOfFlash2
};

// FlashAttention-2 against the fused kernels on Hopper: the FlashAttention-3 paper's
// utilizations (Shah et al. 2024, abstract: FlashAttention-2 35 %, FlashAttention-3 up to 75 %).
// Not fitted: the H100's fa2_attention_efficiency follows its fitted attention_efficiency.
constexpr double kHopperFa2Ratio = 0.35 / 0.75;

int family_index(const std::string& f) { return f == "a100" ? 0 : f == "h100" ? 1 : -1; }

std::string family_of(const std::string& gpu_name) {
  if (gpu_name.find("A100") != std::string::npos) return "a100";
  if (gpu_name.find("H100") != std::string::npos) return "h100";
  return "";
}

Constants shipped() {
  Constants c;
  const memest_gpu a = memest::find_gpu_preset("a100-80gb", "gpu").gpu;
  const memest_gpu h = memest::find_gpu_preset("h100-80gb", "gpu").gpu;
  c.gemm[0] = a.gemm_efficiency, c.attention[0] = a.attention_efficiency;
  c.gemm[1] = h.gemm_efficiency, c.attention[1] = h.attention_efficiency;
  c.fp8 = h.fp8_gemm_efficiency;
  c.half_dim = h.gemm_half_dim;
  c.triton = memest::kTritonShareOfFlash2;
  return c;
}

double predict(const Case& k, const Constants& c) {
  memest::PretrainRequest r = k.request;
  const int f = family_index(k.family);
  r.gpu.gemm_half_dim = c.half_dim;
  if (f >= 0) {
    r.gpu.gemm_efficiency = c.gemm[f];
    r.gpu.attention_efficiency = c.attention[f];
    if (f == 1) {
      r.gpu.fp8_gemm_efficiency = c.fp8;
      r.gpu.fa2_attention_efficiency = kHopperFa2Ratio * c.attention[1];
    }
  }
  r.gpu.triton_attention_efficiency = c.triton * memest::attention_efficiency_of(r.gpu, MEMEST_ATTENTION_FLASH2);
  const memest::Plan plan = memest::make_plan(r);
  const memest::Throughput t = memest::estimate_throughput(plan);
  return t.tokens_per_s / static_cast<double>(r.gpus);
}

double ape(double predicted, double measured) { return std::fabs(predicted - measured) / measured; }

// Mean absolute percentage error (as a fraction) of `cases` under `c`.
double mape(const std::vector<const Case*>& cases, const Constants& c) {
  double sum = 0;
  for (const Case* k : cases) sum += ape(predict(*k, c), k->measured);
  return cases.empty() ? 0 : sum / static_cast<double>(cases.size());
}

// The fit's objective: mean squared log error (ratios, so a source's big and small runs weigh
// alike), with every source weighted equally so the largest table does not decide alone.
double objective(const std::vector<const Case*>& cases, const Constants& c) {
  std::map<std::string, std::pair<double, int>> by_source;
  for (const Case* k : cases) {
    const double e = std::log(predict(*k, c) / k->measured);
    auto& s = by_source[k->source];
    s.first += e * e;
    s.second += 1;
  }
  double sum = 0;
  for (const auto& [_, s] : by_source) sum += s.first / s.second;
  return sum / static_cast<double>(by_source.size());
}

// The fitted values as a vector; the A100's attention efficiency rides along unfitted.
std::vector<double> pack(const Constants& c) {
  return {c.gemm[0], c.gemm[1], c.triton, c.attention[1], c.fp8, c.half_dim / 1000};
}
Constants unpack(const std::vector<double>& x, double a100_attention) {
  Constants c;
  c.gemm[0] = x[0], c.gemm[1] = x[1], c.triton = x[2], c.attention[1] = x[3], c.fp8 = x[4];
  c.attention[0] = a100_attention;
  c.half_dim = 1000 * x[5];  // fitted in thousands, within the same (0.05, 1] bounds
  return c;
}

// Nelder-Mead (deterministic) within the physical range (0, 1] of each efficiency.
std::vector<double> nelder_mead(const std::function<double(const std::vector<double>&)>& f,
                                std::vector<double> x0, double step, int iters) {
  const std::size_t n = x0.size();
  auto bounded = [&](const std::vector<double>& x) {
    for (double v : x)
      if (!(v > 0.05 && v <= 1)) return 1e9;
    return f(x);
  };
  std::vector<std::vector<double>> pts{x0};
  for (std::size_t i = 0; i < n; ++i) {
    auto x = x0;
    x[i] += step;
    pts.push_back(x);
  }
  std::vector<double> vals;
  for (auto& p : pts) vals.push_back(bounded(p));
  for (int it = 0; it < iters; ++it) {
    std::vector<std::size_t> order(n + 1);
    for (std::size_t i = 0; i <= n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return vals[a] < vals[b]; });
    std::vector<std::vector<double>> p2;
    std::vector<double> v2;
    for (auto i : order) p2.push_back(pts[i]), v2.push_back(vals[i]);
    pts = p2, vals = v2;
    std::vector<double> cen(n, 0);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) cen[j] += pts[i][j] / static_cast<double>(n);
    auto along = [&](double a) {
      std::vector<double> x(n);
      for (std::size_t j = 0; j < n; ++j) x[j] = cen[j] + a * (pts[n][j] - cen[j]);
      return x;
    };
    const auto xr = along(-1);
    const double fr = bounded(xr);
    if (fr < vals[0]) {
      const auto xe = along(-2);
      const double fe = bounded(xe);
      if (fe < fr) pts[n] = xe, vals[n] = fe;
      else pts[n] = xr, vals[n] = fr;
    } else if (fr < vals[n - 1]) {
      pts[n] = xr, vals[n] = fr;
    } else {
      const auto xc = along(0.5);
      const double fc = bounded(xc);
      if (fc < vals[n]) {
        pts[n] = xc, vals[n] = fc;
      } else {
        for (std::size_t i = 1; i <= n; ++i) {
          for (std::size_t j = 0; j < n; ++j) pts[i][j] = pts[0][j] + 0.5 * (pts[i][j] - pts[0][j]);
          vals[i] = bounded(pts[i]);
        }
      }
    }
  }
  return pts[static_cast<std::size_t>(std::min_element(vals.begin(), vals.end()) - vals.begin())];
}

Constants fit(const std::vector<const Case*>& cases, const Constants& start) {
  auto f = [&](const std::vector<double>& x) { return objective(cases, unpack(x, start.attention[0])); };
  std::vector<double> x = nelder_mead(f, pack(start), 0.05, 120);
  x = nelder_mead(f, x, 0.01, 80);
  return unpack(x, start.attention[0]);
}

// Spearman's rank correlation (average ranks for ties).
std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<std::size_t> idx(v.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < idx.size();) {
    std::size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    for (std::size_t k = i; k <= j; ++k) r[idx[k]] = (static_cast<double>(i + j) / 2) + 1;
    i = j + 1;
  }
  return r;
}
double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size());
  double ma = 0, mb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) ma += ra[i] / n, mb += rb[i] / n;
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 1;
}

json load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return json();
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path =
      argc > 1 ? argv[1] : std::string(MEMEST_TEST_DATA) + "/measured/throughput-given.json";
  const json doc = load(path);
  if (doc.is_null()) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return 2;
  }
  bool ok = true;
  std::vector<Case> cases;
  int skipped = 0;
  for (const json& row : doc["rows"]) {
    if (!row["skip"].is_null()) {
      ++skipped;
      continue;
    }
    Case k;
    k.id = row["id"];
    k.source = row["source"];
    k.cls = row["class"];
    k.measured = row["measured_tokens_per_s_per_gpu"];
    for (const json& g : row["groups"]) k.groups.push_back(g);
    try {
      memest::JsonFields top(row["request"], "");
      k.request = memest::parse_pretrain_request(top);
      int32_t overlap = 0;
      for (const json& o : row["overlap"]) {
        const int32_t v = memest::enum_value(MEMEST_ENUM_OVERLAP, o.get<std::string>());
        if (v < 0) throw memest::Error(MEMEST_ERR_INVALID_ARGUMENT, "overlap", "unknown overlap " + o.dump());
        overlap |= 1 << v;
      }
      k.request.stack.comm_overlap = overlap;
      const memest::Plan plan = memest::make_plan(k.request);
      k.peak_share = memest::peak_memory(plan, nullptr) / k.request.gpu.memory_bytes;
      k.oom = k.peak_share > 1;
    } catch (const memest::Error& e) {
      std::printf("REFUSED %s: %s\n", k.id.c_str(), e.what());
      ok = false;
      continue;
    }
    k.family = family_of(k.request.gpu.name);
    cases.push_back(k);
  }
  std::vector<const Case*> all;
  std::set<std::string> sources;
  for (const Case& k : cases) all.push_back(&k), sources.insert(k.source);

  const Constants ship = shipped();
  const Constants fitted = fit(all, ship);
  std::printf("## Throughput model: %zu measured layouts from %zu sources (%d rows not expressible)\n\n",
              cases.size(), sources.size(), skipped);
  std::printf("fitted on all: gemm_efficiency A100 %.3f H100 %.3f, attention_efficiency H100 %.3f, "
              "fp8_gemm_efficiency H100 %.3f, gemm_half_dim %.0f, Triton share of FlashAttention-2 %.3f\n",
              fitted.gemm[0], fitted.gemm[1], fitted.attention[1], fitted.fp8, fitted.half_dim,
              fitted.triton);
  std::printf("shipped:       gemm_efficiency A100 %.3f H100 %.3f, attention_efficiency H100 %.3f, "
              "fp8_gemm_efficiency H100 %.3f, gemm_half_dim %.0f, Triton share of FlashAttention-2 %.3f "
              "(A100 attention_efficiency %.3f: published, not fitted)\n\n",
              ship.gemm[0], ship.gemm[1], ship.attention[1], ship.fp8, ship.half_dim, ship.triton,
              ship.attention[0]);
  {
    const memest_gpu h = memest::find_gpu_preset("h100-80gb", "gpu").gpu;
    if (std::fabs(h.fa2_attention_efficiency - kHopperFa2Ratio * h.attention_efficiency) > 0.002) {
      std::printf("the H100's fa2_attention_efficiency is not %.3f x its attention_efficiency\n",
                  kHopperFa2Ratio);
      ok = false;
    }
  }
  if (std::fabs(fitted.half_dim - ship.half_dim) > 0.05 * ship.half_dim) {
    std::printf("the refit moved away from the shipped gemm_half_dim\n");
    ok = false;
  }
  if (std::fabs(fitted.triton - ship.triton) > 0.03) {
    std::printf("the refit moved away from the library's kTritonShareOfFlash2\n");
    ok = false;
  }
  if (std::fabs(fitted.fp8 - ship.fp8) > 0.02) {
    std::printf("the refit moved away from the shipped H100 fp8_gemm_efficiency\n");
    ok = false;
  }
  for (int f = 0; f < 2; ++f) {
    if (std::fabs(fitted.gemm[f] - ship.gemm[f]) > 0.02 || std::fabs(fitted.attention[f] - ship.attention[f]) > 0.03) {
      std::printf("the refit moved away from the shipped presets (GPU family %d)\n", f);
      ok = false;
    }
  }

  // Leave one source out: refit without it, predict it.
  std::map<const Case*, double> loso;
  std::printf("| source | rows | MAPE fitted on all | MAPE left out |\n|---|---:|---:|---:|\n");
  for (const std::string& s : sources) {
    std::vector<const Case*> train, test;
    for (const Case* k : all) (k->source == s ? test : train).push_back(k);
    const Constants c = fit(train, fitted);
    for (const Case* k : test) loso[k] = predict(*k, c);
    double sum = 0;
    for (const Case* k : test) sum += ape(loso[k], k->measured);
    std::printf("| %s | %zu | %.1f %% | %.1f %% |\n", s.c_str(), test.size(), 100 * mape(test, ship),
                100 * sum / static_cast<double>(test.size()));
  }
  std::printf("\n| class | rows | MAPE (shipped) | MAPE left out |\n|---|---:|---:|---:|\n");
  std::map<std::string, double> class_loso;
  for (const char* cls : {"bf16", "fp8", "moe"}) {
    std::vector<const Case*> in;
    double sum = 0;
    for (const Case* k : all)
      if (k->cls == cls) in.push_back(k), sum += ape(loso[k], k->measured);
    if (in.empty()) continue;
    class_loso[cls] = sum / static_cast<double>(in.size());
    std::printf("| %s | %zu | %.1f %% | %.1f %% |\n", cls, in.size(), 100 * mape(in, ship),
                100 * class_loso[cls]);
  }

  // Tables of layouts: rank correlation and the top pick, on the left-out predictions.
  std::map<std::string, std::vector<const Case*>> groups;
  for (const Case* k : all)
    for (const std::string& g : k->groups) groups[g].push_back(k);
  std::vector<double> pair_errors;
  for (const auto& [name, rows] : groups) {
    for (std::size_t i = 0; i < rows.size(); ++i)
      for (std::size_t j = i + 1; j < rows.size(); ++j) {
        pair_errors.push_back(std::fabs(std::log(loso[rows[i]] / loso[rows[j]]) -
                                        std::log(rows[i]->measured / rows[j]->measured)));
      }
  }
  std::sort(pair_errors.begin(), pair_errors.end());
  const double margin = pair_errors.empty() ? 0 : std::exp(pair_errors[pair_errors.size() / 2]) - 1;
  std::printf("\nmedian error of the ratio between two layouts of one table (left out): %.1f %% "
              "(library tie margin %.1f %%)\n\n",
              100 * margin, 100 * memest::kThroughputTieMargin);
  if (std::fabs(margin - memest::kThroughputTieMargin) > 0.01) {
    std::printf("the tie margin moved away from the library's kThroughputTieMargin\n");
    ok = false;
  }
  std::printf("| table | layouts | Spearman | predicted best | measured best | pick |\n|---|---:|---:|---|---|---|\n");
  int tables = 0, picks = 0;
  double rho_sum = 0;
  for (const auto& [name, rows] : groups) {
    if (rows.size() < 2) continue;
    std::vector<double> p, m;
    for (const Case* k : rows) p.push_back(loso[k]), m.push_back(k->measured);
    const double rho = spearman(p, m);
    const Case* best_pred = nullptr;
    const Case* best_meas = nullptr;
    for (const Case* k : rows) {
      if (!k->oom && (!best_pred || loso[k] > loso[best_pred])) best_pred = k;
      if (!best_meas || k->measured > best_meas->measured) best_meas = k;
    }
    const bool pick = best_pred && loso[best_meas] >= (1 - memest::kThroughputTieMargin) * loso[best_pred];
    ++tables;
    picks += pick;
    rho_sum += rho;
    std::printf("| %s | %zu | %.2f | %s | %s | %s |\n", name.c_str(), rows.size(), rho,
                best_pred ? best_pred->id.c_str() : "-", best_meas->id.c_str(),
                pick ? (best_pred == best_meas ? "best" : "tie") : "MISS");
  }
  int predicted_oom = 0;
  for (const Case* k : all) predicted_oom += k->oom;
  std::printf("\ntables: %d, mean Spearman %.2f, top pick right or tied in %d (%.0f %%); "
              "layouts that ran predicted OOM: %d of %zu\n",
              tables, tables ? rho_sum / tables : 0, picks, tables ? 100.0 * picks / tables : 0,
              predicted_oom, all.size());
  // Which ones, so that the memory work knows where to look (peak / capacity).
  if (predicted_oom > 0) {
    std::printf("\n| ran, predicted OOM | peak / capacity |\n|---|---:|\n");
    for (const Case* k : all) {
      if (k->oom) std::printf("| %s | %.2f |\n", k->id.c_str(), k->peak_share);
    }
  }
  if (std::getenv("MEMEST_THROUGHPUT_ROWS")) {
    std::printf("\n| id | class | measured | shipped | left out |\n|---|---|---:|---:|---:|\n");
    for (const Case* k : all) {
      std::printf("| %s | %s | %.1f | %.1f | %.1f |\n", k->id.c_str(), k->cls.c_str(), k->measured,
                  predict(*k, ship), loso[k]);
    }
  }
  // Bounds on the left-out error (the targets on held-out tables are 15 / 20 / 25 %).
  const std::map<std::string, double> bounds = {{"bf16", 0.20}, {"fp8", 0.25}, {"moe", 0.35}};
  for (const auto& [cls, bound] : bounds) {
    if (class_loso.count(cls) && class_loso[cls] > bound) {
      std::printf("left-out MAPE of %s %.1f %% above its bound %.0f %%\n", cls.c_str(),
                  100 * class_loso[cls], 100 * bound);
      ok = false;
    }
  }
  std::printf("%s\n", ok ? "throughput validation: ok" : "throughput validation: FAILED");
  return ok ? 0 : 1;
}
