// Checks memest against measurements of training stacks beside Megatron-LM: the public ones
// (tests/data/measured/measured-other-frameworks.json) and this project's H100 runs
// (h100-stacks.json),
// each expressed as a memest request in tests/data/measured/other-frameworks-requests.json.
// Prints the per-case error, the mean absolute percentage error by framework and the OOM
// confusion (ran / oom against memest's oom_predicted) as Markdown tables, the ones the
// README quotes. Compares like with like: a measured max_memory_allocated or peak active
// with peak_allocated_bytes, a max_memory_reserved with peak_reserved_bytes (both less the
// CUDA context, which the allocator does not count), a run status with oom_predicted (which
// counts it).
//
//   memest_validate_stacks [tests/data/measured]
//
// It also measures the spread of the peak's error on every peak it was not fitted on,
// MEMEST_PEAK_ERROR_SIGMA, from which results state their band and probability of OOM, and
// fails when the library's constant is not that measurement (docs/accuracy.md).
//
// Every constant comes from the GPU presets (fitted on the 4D paper's 147 A100 runs by
// fit_profile) and the frameworks' own defaults, except one it refits here: the share of the
// fragmentation a single-stream plain-PyTorch run shows (overheads/overheads.hpp
// kSingleStreamFragmentationShare), fitted on the H100 plain-PyTorch runs' reserved peaks and
// checked on the held-out LoRA runs. Exits non-zero when a mapped case is refused (every case
// must stay expressible), when the refit moves away from the library's constant, or when the
// bounds at the end fail.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <utility>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "memest/memest.h"
#include "overheads/overheads.hpp"

namespace {

using json = nlohmann::json;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

json load(const std::string& path, bool required) {
  std::ifstream in(path);
  if (!in) {
    if (required) std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return json();
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

struct Group {
  double abs_pct = 0;
  int n = 0;
};

// A reserved peak as memest splits it: allocated (less the context) plus fragmentation, the
// latter proportional to the single-stream share it was computed with.
struct ReservedCase {
  double measured_gib, allocated_gib, fragmentation_gib;
};

// Mean absolute percentage error of the reserved peaks if the single-stream share were `share`.
double reserved_mape(const std::vector<ReservedCase>& cases, double share) {
  double sum = 0;
  for (const ReservedCase& c : cases) {
    const double predicted =
        c.allocated_gib + c.fragmentation_gib * share / memest::kSingleStreamFragmentationShare;
    sum += std::fabs(predicted - c.measured_gib) / c.measured_gib;
  }
  return 100 * sum / static_cast<double>(cases.size());
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : MEMEST_TEST_DATA "/measured";
  const json measured = load(dir + "/measured-other-frameworks.json", true);
  const json mapping = load(dir + "/other-frameworks-requests.json", true);
  if (measured.is_null() || mapping.is_null()) return 2;
  std::map<std::string, json> by_id;
  for (const json& c : measured["cases"]) by_id[c["id"].get<std::string>()] = c;
  // This project's H100 runs (calibrate/measure_stacks.py): exact allocator figures.
  const json h100 = load(dir + "/h100-stacks.json", true);
  if (h100.is_null()) return 2;
  for (const json& c : h100["cases"]) {
    json m = {{"status", c.value("status", "ran")},
              {"allocated_gib", c["peak_allocated_bytes"].get<double>() / kGiB},
              {"reserved_gib", c["peak_reserved_bytes"].get<double>() / kGiB}};
    by_id[c["id"].get<std::string>()] = {{"measured", m}};
  }
  std::vector<json> cases(mapping["cases"].begin(), mapping["cases"].end());
  // The fine-tuning measurements of finetune-given.json (fsdp_qlora, peft, DeepSpeed tutorials):
  // each is its own source, none was fitted on.
  const json given = load(dir + "/finetune-given.json", true);
  const json given_mapping = load(dir + "/finetune-given-requests.json", true);
  if (given.is_null() || given_mapping.is_null()) return 2;
  for (const json& c : given) {
    json m = {{"status", c["measured"]["status"]}};
    if (!c["measured"]["value_gib"].is_null()) m["value_gib"] = c["measured"]["value_gib"];
    by_id[c["id"].get<std::string>()] = {{"measured", m}};
  }
  for (const json& c : given_mapping["cases"]) cases.push_back(c);
  // Every measured case must have its mapping (a request, or why it is not expressible).
  int unmapped = 0;
  for (const auto& [id, c] : by_id) {
    bool found = false;
    for (const json& m : cases) found = found || m["id"] == id;
    if (!found) {
      std::fprintf(stderr, "no mapping for measured case %s\n", id.c_str());
      ++unmapped;
    }
  }
  if (unmapped > 0) return 1;

  int refused = 0, expressible = 0, not_expressible = 0;
  int confusion[2][2] = {{0, 0}, {0, 0}};  // [measured oom][predicted oom]
  std::map<std::string, Group> groups;
  std::map<std::string, std::vector<ReservedCase>> reserved_cases;  // by group
  // ln(measured / predicted) of every peak compared, by group; the group fitted on (the
  // single-stream share, "h100 pytorch" reserved) is kept apart.
  std::map<std::string, std::vector<double>> log_errors;
  // the three-way verdict against what happened: [measured oom][fits, tight, oom]
  int verdicts[2][3] = {{0, 0, 0}, {0, 0, 0}};
  std::printf("| case | framework | compared | measured GiB | memest GiB | error |\n");
  std::printf("|---|---|---|---:|---:|---:|\n");
  for (const json& c : cases) {
    const std::string id = c["id"].get<std::string>();
    const std::string group = c["group"].get<std::string>();
    if (c.contains("not_expressible")) {
      ++not_expressible;
      std::printf("| %s | %s | not expressible | | | |\n", id.c_str(), group.c_str());
      continue;
    }
    const json& m = by_id[id]["measured"];
    char* out = nullptr;
    const memest_status st = memest_request_json(c["request"].dump().c_str(), &out);
    const json r = out ? json::parse(out) : json();
    memest_string_free(out);
    if (st != MEMEST_OK) {
      ++refused;
      std::printf("| %s | %s | REFUSED: %s | | | |\n", id.c_str(), group.c_str(),
                  r["error"]["message"].get<std::string>().c_str());
      continue;
    }
    ++expressible;
    const std::string compare = c["compare"].get<std::string>();
    const bool predicted_oom = r["oom_predicted"].get<bool>();
    const std::string status = m.value("status", "ran");
    const bool measured_oom = status == "oom";
    confusion[measured_oom][predicted_oom]++;
    const std::string pv = r["peak_verdict"].get<std::string>();
    verdicts[measured_oom][pv == "fits" ? 0 : pv == "tight" ? 1 : 2]++;
    if (compare == "status") {
      std::printf("| %s | %s | ran/oom | %s | %.1f (reserved) | predicted %s |\n", id.c_str(),
                  group.c_str(), status.c_str(), r["peak_reserved_bytes"].get<double>() / kGiB,
                  predicted_oom ? "oom" : "fits");
      continue;
    }
    // The allocator's figures never include the CUDA context: compare them with the fields
    // named for them (torch_max_memory_*_bytes, the peaks less context_bytes); nvidia-smi
    // shows the whole process (nvidia_smi_bytes).
    const double context = r["overheads"]["context_bytes"].get<double>();
    auto row = [&](const char* kind, double value, const char* key) {
      const double predicted = r[key].get<double>() / kGiB;
      const double err = (predicted - value) / value;
      const bool fitted_on = group == "h100 pytorch" && std::string(kind) == "reserved";
      log_errors[fitted_on ? "(fitted) " + group : group].push_back(std::log(value / predicted));
      Group& gr = groups[group + ", " + kind];
      gr.abs_pct += std::fabs(err) * 100;
      gr.n++;
      std::printf("| %s | %s | %s | %.2f | %.2f | %+.1f %% |\n", id.c_str(), group.c_str(), kind,
                  value, predicted, err * 100);
    };
    if (compare == "both") {
      row("allocated", m["allocated_gib"].get<double>(), "torch_max_memory_allocated_bytes");
      row("reserved", m["reserved_gib"].get<double>(), "torch_max_memory_reserved_bytes");
      const json& st = r["stages"][r["peak_stage"].get<int>()];
      reserved_cases[group].push_back(
          {m["reserved_gib"].get<double>(),
           (r["peak_allocated_bytes"].get<double>() - context) / kGiB,
           st["overheads"]["fragmentation_bytes"].get<double>() / kGiB});
    } else {
      row(compare.c_str(), m["value_gib"].get<double>(),
          compare == "reserved"     ? "torch_max_memory_reserved_bytes"
          : compare == "nvidia-smi" ? "nvidia_smi_bytes"
                                    : "torch_max_memory_allocated_bytes");
    }
  }
  std::printf("\n| framework, compared | cases | MAPE |\n|---|---:|---:|\n");
  for (const auto& [name, g] : groups) {
    std::printf("| %s | %d | %.1f %% |\n", name.c_str(), g.n, g.abs_pct / g.n);
  }
  std::printf("\nOOM confusion (%d expressible cases; %d not expressible):\n\n", expressible,
              not_expressible);
  std::printf("| | memest: fits | memest: oom |\n|---|---:|---:|\n");
  std::printf("| ran | %d | %d |\n| oom | %d | %d |\n", confusion[0][0], confusion[0][1],
              confusion[1][0], confusion[1][1]);
  std::printf("\nThe three-way verdict on the peak (%d cases with a status):\n\n", expressible);
  std::printf("| | fits | tight | oom |\n|---|---:|---:|---:|\n");
  std::printf("| ran | %d | %d | %d |\n| oom | %d | %d | %d |\n", verdicts[0][0], verdicts[0][1],
              verdicts[0][2], verdicts[1][0], verdicts[1][1], verdicts[1][2]);
  if (refused > 0) {
    std::fprintf(stderr, "FAIL: %d mapped cases were refused\n", refused);
    return 1;
  }
  int failures = 0;
  // The peak's error, on what was not fitted: sigma = RMS of ln(measured / predicted) over
  // every peak compared, and leaving each group (one source or one set of runs) out in turn.
  {
    std::vector<double> all;
    for (const auto& [name, errors] : log_errors) {
      if (name.rfind("(fitted)", 0) == 0) continue;
      all.insert(all.end(), errors.begin(), errors.end());
    }
    auto rms = [](const std::vector<double>& v) {
      double sum = 0;
      for (double e : v) sum += e * e;
      return std::sqrt(sum / static_cast<double>(v.size()));
    };
    const double sigma = rms(all);
    std::printf("\nPeak error sigma, RMS of ln(measured / predicted) over %zu peaks not fitted on: "
                "%.4f (library MEMEST_PEAK_ERROR_SIGMA %.4f)\n\n",
                all.size(), sigma, MEMEST_PEAK_ERROR_SIGMA);
    std::printf("| left out | peaks | sigma of the rest | RMS of the left-out group |\n|---|---:|---:|---:|\n");
    for (const auto& [name, errors] : log_errors) {
      if (name.rfind("(fitted)", 0) == 0) continue;
      std::vector<double> rest;
      for (const auto& [other, e] : log_errors) {
        if (other != name && other.rfind("(fitted)", 0) != 0) rest.insert(rest.end(), e.begin(), e.end());
      }
      std::printf("| %s | %zu | %.4f | %.4f |\n", name.c_str(), errors.size(), rms(rest), rms(errors));
    }
    if (std::fabs(sigma - MEMEST_PEAK_ERROR_SIGMA) > 0.0025) {
      std::fprintf(stderr, "FAIL: the measured peak error sigma %.4f is not the library's %.4f\n",
                   sigma, MEMEST_PEAK_ERROR_SIGMA);
      ++failures;
    }
  }
  // The one fitted constant: the single-stream share of the fragmentation, on the plain-PyTorch
  // runs (a scan in steps of 0.01 over [0, 1]), checked on the held-out LoRA runs.
  const std::vector<ReservedCase>& fit_on = reserved_cases["h100 pytorch"];
  const std::vector<ReservedCase>& held_out = reserved_cases["h100 lora"];
  if (fit_on.empty() || held_out.empty()) {
    std::fprintf(stderr, "FAIL: no H100 plain-PyTorch or LoRA reserved peaks to fit on\n");
    return 1;
  }
  double best = 0;
  for (int k = 0; k <= 100; ++k) {
    const double share = k / 100.0;
    if (reserved_mape(fit_on, share) < reserved_mape(fit_on, best)) best = share;
  }
  std::printf("\nSingle-stream fragmentation share, fitted on %zu H100 plain-PyTorch reserved "
              "peaks: %.2f (library: %.2f; 1.00 = the Megatron-fitted fraction)\n\n",
              fit_on.size(), best, memest::kSingleStreamFragmentationShare);
  std::printf("| reserved MAPE | share 1.00 | share %.2f |\n|---|---:|---:|\n",
              memest::kSingleStreamFragmentationShare);
  std::printf("| h100 pytorch (fitted on) | %.1f %% | %.1f %% |\n", reserved_mape(fit_on, 1.0),
              reserved_mape(fit_on, memest::kSingleStreamFragmentationShare));
  std::printf("| h100 lora (held out) | %.1f %% | %.1f %% |\n", reserved_mape(held_out, 1.0),
              reserved_mape(held_out, memest::kSingleStreamFragmentationShare));
  if (const std::vector<ReservedCase>& moe = reserved_cases["h100 moe"]; !moe.empty()) {
    std::printf("| h100 moe (held out) | %.1f %% | %.1f %% |\n", reserved_mape(moe, 1.0),
                reserved_mape(moe, memest::kSingleStreamFragmentationShare));
  }
  if (std::fabs(best - memest::kSingleStreamFragmentationShare) > 0.015) {
    std::fprintf(stderr, "FAIL: the refitted single-stream share %.2f is not the library's %.2f\n",
                 best, memest::kSingleStreamFragmentationShare);
    ++failures;
  }
  // A guard against regressions of the mechanisms, not a fit: the README's figures (2026-11-22:
  // 3.0, 2.0, 0.5, 7.9, 4.2 and, h100 moe, 1.3 %; the 2022 GPT2-XL runs under DeepSpeed and
  // ColossalAI with the 16-bit loss, 18.0 and 24.6 %, were 64 and 74 % with the fp32 one; the
  // plain-PyTorch and torchtune groups were 4.2 and 6.1 % while their compile runs counted the
  // loss as compiled) with a margin, and no run that ran out of memory predicted to fit.
  // lora/qlora: 8.4 % until 1.8; 10.4 % from 1.9, which expresses LitGPT's runs with their own
  // loss (chunked_lm_head: 4 bytes per bf16 logit, where torchtune's chunked loss counted 6.5).
  // That leaves LitGPT's runs 3-12 % under, by about 0.3 MB per token, a gap the wrong loss
  // had hidden and no mechanism explains yet (docs/accuracy.md "What is left").
  const std::pair<const char*, double> bounds[] = {
      {"h100 fsdp, allocated", 5},         {"h100 pytorch, allocated", 4},
      {"h100 lora, allocated", 2},         {"lora/qlora, allocated", 11},
      {"pytorch (torchtune), allocated", 5}, {"h100 moe, allocated", 2},
      {"deepspeed, allocated", 20},        {"colossalai (as deepspeed zero 3), allocated", 27},
      // finetune-given.json's fsdp_qlora runs (2026-11-26: 5.6 and 6.0 %; 6.7 and 16.2 % before
      // FSDP1's root unit, logits_held and the usable capacities)
      {"lora (fsdp1), reserved", 8},       {"qlora (fsdp1), reserved", 9}};
  for (const auto& [name, bound] : bounds) {
    const auto g = groups.find(name);
    const double mape = g == groups.end() ? INFINITY : g->second.abs_pct / g->second.n;
    if (!(mape <= bound)) {
      std::fprintf(stderr, "FAIL: %s MAPE %.1f %% above %.0f %%\n", name, mape, bound);
      ++failures;
    }
  }
  if (verdicts[1][0] > 0) {
    std::fprintf(stderr, "FAIL: %d runs that ran out of memory have the verdict fits\n", verdicts[1][0]);
    ++failures;
  }
  if (confusion[1][0] > 0) {
    std::fprintf(stderr, "FAIL: %d runs that ran out of memory are predicted to fit\n",
                 confusion[1][0]);
    ++failures;
  }
  return failures > 0 ? 1 : 0;
}
