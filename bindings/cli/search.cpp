// memest search: the request's "search" section (which layouts to try) from the flags.
// The library enumerates, prunes, estimates and ranks; the CLI only prints its answer.
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"

namespace memest_cli {

namespace {

struct SearchOptions {
  ModelChoice model{"llama-3.1-8b"};
  GpuChoice gpu{"a100-40gb"};
  RunShape run{64};
  int64_t top = 10, max_tp = 0, max_cp = 0, max_pp = 0, max_vpp = 4, max_micro_batch = 0;
  int64_t max_ep = 0;
  std::vector<std::string> recompute{"none", "selective", "full"};
  std::vector<int> zero{1};
  bool tp_across_nodes = false, include_oom = false, even_pipeline = false;
  std::vector<std::string> fp8_options;      // off, on; empty: the base's (--fp8)
  std::vector<std::string> compile_options;  // memest_compile names; empty: the base's
  double max_oom_probability = 0;            // 0: the library's default
  std::string emit;                          // the best layout as a stack's settings
  StackOptions stack;
  Output output;
};

constexpr const char* kGlobalBatchHelp =
    "Global batch size (default 1024; the search counts the micro-batches of a step from it)";

// The bounds of the enumeration: --top and the --max-* flags.
void add_bound_options(CLI::App& cmd, SearchOptions& o) {
  add_integer(cmd, "--top", o.top, "Layouts to show")->check(CLI::Range(1, 10000))->capture_default_str();
  add_integer(cmd, "--max-tp", o.max_tp, "Largest tp (0: the node size)")->capture_default_str();
  add_integer(cmd, "--max-cp", o.max_cp, "Largest cp (0: no limit)")->capture_default_str();
  add_integer(cmd, "--max-pp", o.max_pp, "Largest pp (0: no limit)")->capture_default_str();
  add_integer(cmd, "--max-vpp", o.max_vpp, "Largest interleaving factor")->capture_default_str();
  add_integer(cmd, "--max-mbs", o.max_micro_batch, "Largest micro-batch (0: no limit)")
      ->capture_default_str();
  add_integer(cmd, "--max-ep", o.max_ep,
              "Largest expert-parallel size (mixture-of-experts models; 0: no limit)")
      ->capture_default_str();
}

// What to try at each layout (recomputation, ZeRO) and which layouts are allowed at all.
void add_choice_options(CLI::App& cmd, SearchOptions& o) {
  std::vector<std::string> recompute_names;
  for (uint32_t i = 0; i < memest_enum_count(MEMEST_ENUM_RECOMPUTE); ++i) {
    recompute_names.emplace_back(memest_enum_name(MEMEST_ENUM_RECOMPUTE, static_cast<int32_t>(i)));
  }
  cmd.add_option("--recompute", o.recompute,
                 "Recomputation options to try (op_selective: not under megatron)")
      ->check(CLI::IsMember(recompute_names))
      ->capture_default_str();
  add_integer(cmd, "--zero", o.zero, "ZeRO stages to try")->check(CLI::Range(0, 3))->capture_default_str();
  cmd.add_flag("--tp-across-nodes", o.tp_across_nodes, "Allow tp larger than a node");
  cmd.add_flag("--include-oom", o.include_oom, "Rank layouts predicted to OOM too (after those that fit)");
  cmd.add_flag("--even-pipeline", o.even_pipeline, "Only pipelines whose stages hold equal layers");
  add_real(cmd, "--max-oom-probability", o.max_oom_probability,
           "Rank only layouts whose probability of running out of memory (from memest's "
           "measured error) is at most this, in (0, 1] (default: the library's, 0.25; 0.5: "
           "the peak alone decides)", Sign::positive);
  cmd.add_option("--fp8-options", o.fp8_options,
                 "fp8 settings to try, comma-separated: off, on (default: --fp8's)")
      ->delimiter(',')
      ->check(CLI::IsMember({"off", "on"}));
  cmd.add_option("--compile-options", o.compile_options,
                 "torch.compile settings to try, comma-separated (none, all, model, loss; "
                 "default: --compile-components')")
      ->delimiter(',')
      ->check(CLI::IsMember(enum_names(MEMEST_ENUM_COMPILE)));
}

ojson search_section(const SearchOptions& o) {
  ojson section = {{"top", o.top},
          {"max_tp", o.max_tp},
          {"max_cp", o.max_cp},
          {"max_pp", o.max_pp},
          {"max_vpp", o.max_vpp},
          {"max_micro_batch", o.max_micro_batch},
          {"recompute", o.recompute},
          {"zero", o.zero},
          {"tp_within_node", !o.tp_across_nodes},
          {"include_oom", o.include_oom},
          {"uneven_pipeline", !o.even_pipeline},
          {"max_ep", o.max_ep}};
  if (!o.fp8_options.empty()) {
    ojson fp8 = ojson::array();
    for (const std::string& v : o.fp8_options) fp8.push_back(v == "on");
    section["fp8"] = fp8;
  }
  if (!o.compile_options.empty()) section["compile"] = o.compile_options;
  if (o.max_oom_probability > 0) section["max_oom_probability"] = o.max_oom_probability;
  if (!o.emit.empty()) section["emit"] = o.emit;
  return section;
}

ojson search_request(const SearchOptions& o) {
  ojson training = {{"seq_len", o.run.seq_len},
                    {"global_batch", o.run.global_batch},
                    {"flash_attention", !o.run.no_flash}};
  put_stack(o.stack, training);
  return {{"mode", "search"},
          {"model", model_value(o.model)},
          {"gpu", gpu_value(o.gpu)},
          {"parallel", {{"gpus", o.run.gpus}, {"sp", !o.run.no_sp}}},
          {"training", training},
          {"search", search_section(o)}};
}

}  // namespace

Command add_search(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "search", "Rank parallel layouts by predicted throughput among those predicted to fit");
  auto o = std::make_shared<SearchOptions>();
  add_model_options(*cmd, o->model, false);
  add_gpu_options(*cmd, o->gpu);
  add_run_options(*cmd, o->run, "Number of GPUs", kGlobalBatchHelp);
  add_bound_options(*cmd, *o);
  add_choice_options(*cmd, *o);
  add_stack_options(*cmd, o->stack);
  cmd->add_option("--emit", o->emit,
             "Also print the best layout in a stack's own terms: Megatron flags, torchtitan TOML "
             "keys, a DeepSpeed JSON or an accelerate config")
      ->check(CLI::IsMember(library_names("emit_formats")));
  add_format_option(*cmd, o->output, "table");
  add_wide_flag(*cmd, o->output);
  return {cmd, [o] { return answer(search_request(*o).dump(), o->output); }};
}

}  // namespace memest_cli
