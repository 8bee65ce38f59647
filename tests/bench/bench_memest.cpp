// Benchmarks (Google Benchmark): single-estimate latency and the full layout search.
//   memest_bench                              full figures (scripts/bench.sh)
//   memest_bench --benchmark_min_time=0.01    the short run CI does
// Targets: >= 5 million estimates per second per core; the full search for
// Llama-3.1-405B on 16,384 H100-80GB GPUs at sequence 8192 in under 100 ms.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "memest/memest.h"
#include "model/presets.hpp"
#include "plan/requests.hpp"
#include "pretrain/pretrain.hpp"
#include "throughput/throughput.hpp"

namespace {

// The C API's form of a request, with the model and GPU it points to.
struct CRequest {
  memest_model model;
  memest_gpu gpu;
  memest_pretrain_request r;
  CRequest(const char* model_id, const char* gpu_id) {
    memest_model_init(&model, sizeof model);
    memest_gpu_init(&gpu, sizeof gpu);
    memest_pretrain_request_init(&r, sizeof r);
    if (memest_model_from_preset(model_id, &model) != MEMEST_OK) std::abort();
    if (memest_gpu_from_preset(gpu_id, &gpu) != MEMEST_OK) std::abort();
    r.model = &model;
    r.gpu = &gpu;
  }
  CRequest(const CRequest&) = delete;
};

memest::PretrainRequest llama8b_request() {
  memest::PretrainRequest r;
  r.model = memest::find_model_preset("llama-3.1-8b", "model").model;
  r.gpu = memest::find_gpu_preset("a100-40gb", "gpu").gpu;
  r.gpus = 64;
  r.tp = 2;
  r.pp = 2;
  r.seq_len = 8192;
  r.global_batch = 1024;
  return r;
}

// One estimate as the search makes it: layout check, peak memory (overhead model) and throughput
// (the model's parameter counts and activation coefficients, the same for every candidate, are
// computed once per search, as run_search does).
void run_search_estimates(benchmark::State& state, const memest::PretrainRequest& r) {
  const memest::ModelTerms model = memest::model_terms(r);
  double sink = 0;
  for (auto _ : state) {
    memest::LayoutCheck check;
    if (memest::check_layout(r, check) != memest::LayoutIssue::None) std::abort();
    const memest::Plan plan = memest::make_plan_unchecked(r, check, model);
    sink += memest::peak_memory(plan, nullptr) + memest::estimate_throughput(plan).tflops_per_gpu;
    benchmark::DoNotOptimize(sink);
  }
  state.SetItemsProcessed(state.iterations());
}

// An unknown preset id of 100 MB (a reproducer once quadratic): how long the typed lookups
// take to refuse it with a short message, against one copy of the id.
void BM_UnknownPresetId100MB(benchmark::State& state) {
  const std::string id(100u << 20, 'x');
  for (auto _ : state) {
    memest_model m;
    m.struct_size = sizeof m;
    memest_gpu g;
    g.struct_size = sizeof g;
    benchmark::DoNotOptimize(memest_model_from_preset(id.c_str(), &m));
    benchmark::DoNotOptimize(memest_gpu_from_preset(id.c_str(), &g));
  }
}
BENCHMARK(BM_UnknownPresetId100MB)->Unit(benchmark::kMillisecond);

void BM_SearchEstimate(benchmark::State& state) { run_search_estimates(state, llama8b_request()); }
BENCHMARK(BM_SearchEstimate);

// The same estimate with the training stack's dimensions: FSDP2 (fp32 storage, zero 3),
// torchtitan's op_selective, the unfused loss, compile: the eager block, the loss and the
// recomputation working set are all computed.
void BM_SearchEstimateFsdp(benchmark::State& state) {
  memest::PretrainRequest r = llama8b_request();
  r.stack.framework = MEMEST_FRAMEWORK_FSDP;
  r.zero = 3;
  r.recompute = MEMEST_RECOMPUTE_OP_SELECTIVE;
  r.stack.compile = 1;
  r.precision.param_bytes = 4;
  r.precision.optimizer_bytes = MEMEST_OPTIMIZER_BYTES_DERIVE;
  run_search_estimates(state, r);
}
BENCHMARK(BM_SearchEstimateFsdp);

// The typed C API, validation and every stage included.
void BM_PretrainCApi(benchmark::State& state) {
  CRequest c("llama-3.1-8b", "a100-40gb");
  c.r.gpus = 64;
  c.r.tp = 2;
  c.r.pp = 2;
  c.r.seq_len = 8192;
  c.r.global_batch = 1024;
  memest_pretrain_result out;
  out.struct_size = sizeof out;
  for (auto _ : state) {
    if (memest_pretrain(&c.r, &out, nullptr, 0, 0) != MEMEST_OK) std::abort();
    benchmark::DoNotOptimize(out.peak_bytes);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PretrainCApi);

// The JSON entry point, parse and response included.
void BM_RequestJson(benchmark::State& state) {
  const std::string request =
      R"({"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "a100-40gb",
          "parallel": {"gpus": 64, "tp": 2, "pp": 2},
          "training": {"seq_len": 8192, "global_batch": 1024}})";
  for (auto _ : state) {
    char* out = nullptr;
    if (memest_request_json(request.c_str(), &out) != MEMEST_OK) std::abort();
    memest_string_free(out);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RequestJson);

// LLMem's chunk-size search at the largest accepted depth: 100,000 identical layers pack as one
// run whose repetitions cycle (finetune/chunks.cpp), 32768 candidate sizes.
void BM_FinetuneChunkSearch100kLayers(benchmark::State& state) {
  const std::string request =
      R"({"mode": "finetune", "gpu": "a100-80gb",
          "model": {"hidden_size": 256, "num_hidden_layers": 100000, "num_attention_heads": 4,
                    "num_key_value_heads": 4, "intermediate_size": 1024, "vocab_size": 1000}})";
  for (auto _ : state) {
    char* out = nullptr;
    if (memest_request_json(request.c_str(), &out) != MEMEST_OK) std::abort();
    memest_string_free(out);
  }
}
BENCHMARK(BM_FinetuneChunkSearch100kLayers)->Unit(benchmark::kMillisecond);

// The same search on a mixture-of-experts model at the accepted maximum of 1024 experts per
// layer, each expert with biases (gate, up and down weights and biases: a block of six tensors
// repeated 1024 times in a layer, which finetune/chunks.cpp packs cycle by cycle).
void BM_FinetuneChunkSearchBiasedExperts(benchmark::State& state) {
  const std::string request =
      R"({"mode": "finetune", "gpu": "a100-80gb", "parallel": {"gpus": 8},
          "finetune": {"method": "zero3"},
          "model": {"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 48,
                    "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
                    "intermediate_size": 6144, "moe_intermediate_size": 768,
                    "num_experts": 1024, "num_experts_per_tok": 8, "vocab_size": 151936,
                    "mlp_bias": true}})";
  for (auto _ : state) {
    char* out = nullptr;
    if (memest_request_json(request.c_str(), &out) != MEMEST_OK) std::abort();
    memest_string_free(out);
  }
}
BENCHMARK(BM_FinetuneChunkSearchBiasedExperts)->Unit(benchmark::kMillisecond);

// Runs a full search per iteration and reports its counts; returns its best layout (count 0
// when none fits).
struct SearchRun {
  memest_search_result res;
  memest_search_entry top[10];
};
void run_searches(benchmark::State& state, const memest_search_request& r, SearchRun& run) {
  run.res.struct_size = sizeof run.res;
  for (auto _ : state) {
    if (memest_search(&r, &run.res, run.top, sizeof run.top[0], 10, nullptr, 0) != MEMEST_OK) {
      std::abort();
    }
    benchmark::DoNotOptimize(run.top[0].tflops_per_gpu);
  }
  state.counters["candidates"] = static_cast<double>(run.res.candidates);
  state.counters["evaluated"] = static_cast<double>(run.res.evaluated);
  state.counters["fit"] = static_cast<double>(run.res.ranked);
}

// The full search: Llama-3.1-405B on 16,384 H100-80GB GPUs, sequence 8192, 2048 sequences per
// step (Llama 3's 16M-token batches); tp within a node, ZeRO 1 and 3, every recompute option.
void BM_Search405B(benchmark::State& state) {
  CRequest base("llama-3.1-405b", "h100-80gb");
  base.r.gpus = 16384;
  base.r.seq_len = 8192;
  base.r.global_batch = 2048;
  memest_search_request r;
  memest_search_request_init(&r, sizeof r);
  r.base = &base.r;
  r.zero_mask = (1u << 1) | (1u << 3);
  SearchRun run;
  run_searches(state, r, run);
  const memest_search_result& res = run.res;
  const memest_search_entry* top = run.top;
  state.counters["estimates/s"] =
      benchmark::Counter(static_cast<double>(res.evaluated), benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(res.count ? "best: tp " + std::to_string(top[0].tp) + " cp " +
                                 std::to_string(top[0].cp) + " pp " +
                                 std::to_string(top[0].pp) + " vpp " +
                                 std::to_string(top[0].vpp) + " mbs " +
                                 std::to_string(top[0].micro_batch) + " zero " +
                                 std::to_string(top[0].zero)
                           : "no layout fits");
}
BENCHMARK(BM_Search405B)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same search under FSDP2: zero 2 and 3, every recompute option including op_selective.
void BM_Search405BFsdp(benchmark::State& state) {
  CRequest base("llama-3.1-405b", "h100-80gb");
  base.r.gpus = 16384;
  base.r.seq_len = 8192;
  base.r.global_batch = 2048;
  base.r.framework = MEMEST_FRAMEWORK_FSDP;
  base.r.param_bytes = 4;
  base.r.grad_bytes = 4;
  base.r.optimizer_bytes = MEMEST_OPTIMIZER_BYTES_DERIVE;
  memest_search_request r;
  memest_search_request_init(&r, sizeof r);
  r.base = &base.r;
  r.zero_mask = (1u << 2) | (1u << 3);
  r.recompute_mask = (1u << MEMEST_RECOMPUTE_COUNT) - 1;
  SearchRun run;
  run_searches(state, r, run);
}
BENCHMARK(BM_Search405BFsdp)->Unit(benchmark::kMillisecond)->UseRealTime();

// The full search of a mixture-of-experts model: DeepSeek-V3 on 2048 H100-80GB GPUs, sequence
// 4096, 15360 sequences per step (the report's batch), ZeRO 1; expert parallelism enumerated
// (ep over the divisors of 2048 that divide 256 experts, etp = tp or 1).
void BM_SearchDeepSeekV3(benchmark::State& state) {
  CRequest base("deepseek-v3", "h100-80gb");
  base.r.gpus = 2048;
  base.r.seq_len = 4096;
  base.r.global_batch = 15360;
  memest_search_request r;
  memest_search_request_init(&r, sizeof r);
  r.base = &base.r;
  SearchRun run;
  run_searches(state, r, run);
  const memest_search_result& res = run.res;
  const memest_search_entry* top = run.top;
  state.SetLabel(res.count ? "best: tp " + std::to_string(top[0].tp) + " pp " +
                                 std::to_string(top[0].pp) + " ep " + std::to_string(top[0].ep) +
                                 " etp " + std::to_string(top[0].etp) + " mbs " +
                                 std::to_string(top[0].micro_batch)
                           : "no layout fits");
}
BENCHMARK(BM_SearchDeepSeekV3)->Unit(benchmark::kMillisecond)->UseRealTime();

// A search whose request holds a long pipeline layout string (parsed once per thread, not once
// per candidate: plan/plan.cpp parse_pipeline_layout): DeepSeek-V3's 61 layers and its MTP
// layer over pp 16 with vpp 2, as Megatron's recipe writes it, on 1024 GPUs.
void BM_SearchPipelineLayout(benchmark::State& state) {
  CRequest base("deepseek-v3", "h100-80gb");
  base.r.gpus = 1024;
  base.r.seq_len = 4096;
  base.r.global_batch = 8192;
  base.r.pp = 16;
  base.r.vpp = 2;
  base.r.pipeline_layout = "Et*3|(tt|)*29,m|L";
  memest_search_request r;
  memest_search_request_init(&r, sizeof r);
  r.base = &base.r;
  SearchRun run;
  run_searches(state, r, run);
}
BENCHMARK(BM_SearchPipelineLayout)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
