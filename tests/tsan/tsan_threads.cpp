// ThreadSanitizer test of the C API (scripts/test.d/15-tsan.sh builds the static library and
// this program with -fsanitize=thread and runs it; TSan reports make it fail).
//
//  1. Cold start: 8 threads released together make the library's very first calls (preset
//     lookups, listings, a JSON request): the presets are parsed lazily from the embedded data
//     (model/presets.cpp, function-local statics), so that initialisation races here if at all.
//  2. The single-threaded answer of every task (typed and JSON entry points, valid and invalid
//     requests) is computed, then 8 threads run every task many times, in different orders,
//     and each answer must equal the single-threaded one exactly (status, error field and
//     message, every output field, the JSON text).
//  3. Thread-local errors: each thread fails with its own field, then waits while the other
//     threads fail and succeed with other requests; its memest_last_error_code(),
//     memest_last_error_field() and memest_last_error() must still be its own.
// Prints "tsan: N calls on 8 threads, 0 mismatches" and exits 0 when all agree.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "memest/memest.h"

namespace {

constexpr int kThreads = 8;

class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  void wait() {
    std::unique_lock<std::mutex> lock(m_);
    const int generation = generation_;
    if (++count_ == n_) {
      count_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation != generation_; });
    }
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  int n_, count_ = 0, generation_ = 0;
};

// ---- answers as text: the status, the error, every output field

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

struct Text {
  std::ostringstream out;
  Text& operator()(const char* name, double v) {
    out << name << '=' << num(v) << ' ';
    return *this;
  }
  std::string str() const { return out.str(); }
};

std::string outcome(memest_status s) {
  std::string t = std::string(memest_status_name(s)) + " [" + memest_last_error_field() + "] " +
                  memest_last_error() + " | ";
  if (memest_last_error_code() != s) t += "LAST_ERROR_CODE_DIFFERS ";
  return t;
}

std::string text(const memest_stage& s) {
  Text t;
  t("index", s.index)("layers", static_cast<double>(s.layers))("inflight", s.microbatches_in_flight)(
      "params", s.parameters)("w", s.weights_bytes)("g", s.gradients_bytes)("o", s.optimizer_bytes)(
      "a", s.activations_bytes)("total", s.total_bytes)("ctx", s.context_bytes)("comm", s.comm_buffer_bytes)(
      "logits", s.logits_bytes)("corr", s.activation_correction_bytes)("frag", s.fragmentation_bytes)(
      "overhead", s.overhead_bytes)("peak", s.peak_bytes);
  return t.str();
}

std::string text(const memest_pretrain_result& r) {
  Text t;
  t("params", r.num_parameters)("dp", static_cast<double>(r.dp))("m", static_cast<double>(r.num_microbatches))(
      "estimate", r.estimate_bytes)("peak", r.peak_bytes)("peak_stage", r.peak_stage)("cap", r.capacity_bytes)(
      "usage", r.usage_fraction)("verdict", r.verdict)("stages", r.stage_count)("act", r.activation_model)(
      "oom", r.oom_predicted)("paper_peak", r.paper_peak_bytes);
  return t.str();
}

std::string text(const memest_search_entry& e) {
  Text t;
  t("tp", static_cast<double>(e.tp))("cp", static_cast<double>(e.cp))("pp", static_cast<double>(e.pp))(
      "vpp", static_cast<double>(e.vpp))("mbs", static_cast<double>(e.micro_batch))("rc", e.recompute)(
      "zero", e.zero)("dp", static_cast<double>(e.dp))("m", static_cast<double>(e.num_microbatches))(
      "estimate", e.estimate_bytes)("peak", e.peak_bytes)("oom", e.oom_predicted)("verdict", e.verdict)(
      "cap", e.capacity_bytes)("tflops", e.tflops_per_gpu)("tok", e.tokens_per_s)("step", e.step_seconds)(
      "bubble", e.bubble_fraction)("first", static_cast<double>(e.first_stage_layers))(
      "last", static_cast<double>(e.last_stage_layers));
  return t.str();
}

std::string text(const memest_finetune_parts& p) {
  Text t;
  t("base", p.base)("p", p.params)("p16", p.params_fp16)("p32", p.params_fp32)("os", p.optimizer)(
      "out", p.outputs)("lm", p.lm_head)("back", p.backward_buffer);
  return t.str();
}

std::string text(const memest_finetune_result& r) {
  Text t;
  t("method", r.method)("tp", static_cast<double>(r.tp))("dp", static_cast<double>(r.dp))(
      "batch", static_cast<double>(r.batch))("params", r.num_parameters)("peak", r.peak_bytes)(
      "cap", r.capacity_bytes)("usage", r.usage_fraction)("verdict", r.verdict)("cs", r.chunk_elements)(
      "chunks", r.chunk_count)("waste", r.chunk_waste_bytes);
  return t.str() + "parts{" + text(r.parts) + "} per_gpu{" + text(r.per_gpu) + "}";
}

std::string text(const memest_finetune_option& o) {
  Text t;
  t("method", o.method)("applicable", o.applicable)("tp", static_cast<double>(o.tp))(
      "dp", static_cast<double>(o.dp))("max_batch", static_cast<double>(o.max_batch))("score", o.score)(
      "peak", o.peak_bytes);
  return t.str();
}

std::string text(const memest_model& m) {
  Text t;
  t("h", static_cast<double>(m.hidden_size))("L", static_cast<double>(m.num_hidden_layers))(
      "a", static_cast<double>(m.num_attention_heads))("k", static_cast<double>(m.num_key_value_heads))(
      "ffn", static_cast<double>(m.intermediate_size))("v", static_cast<double>(m.vocab_size))(
      "family", m.family)("tie", m.tie_word_embeddings)("gated", m.gated_mlp)("norm", m.norm_type)(
      "params", m.num_parameters);
  return std::string(m.name) + " " + t.str();
}

std::string text(const memest_gpu& g) {
  Text t;
  t("mem", g.memory_bytes)("per_node", g.gpus_per_node)("peak", g.peak_bf16_tflops)("ctx", g.context_bytes)(
      "page", g.page_bytes)("frag", g.fragmentation)("gemm", g.gemm_efficiency);
  return std::string(g.name) + " " + t.str();
}

// ---- the tasks: each makes one or a few calls and returns everything it saw as text

memest_model preset_model(const char* id) {
  memest_model m;
  memest_model_init(&m, sizeof m);
  memest_model_from_preset(id, &m);
  return m;
}
memest_gpu preset_gpu(const char* id) {
  memest_gpu g;
  memest_gpu_init(&g, sizeof g);
  memest_gpu_from_preset(id, &g);
  return g;
}

std::string json_task(const char* request) {
  char* out = nullptr;
  const memest_status s = memest_request_json(request, &out);
  std::string t = outcome(s) + (out ? out : "(no response)");
  memest_string_free(out);
  return t;
}

std::string pretrain_task(const char* model_id, const char* gpu_id, int64_t gpus, int64_t tp, int64_t pp,
                          int64_t seq, int32_t recompute) {
  const memest_model m = preset_model(model_id);
  const memest_gpu g = preset_gpu(gpu_id);
  memest_pretrain_request r;
  memest_pretrain_request_init(&r, sizeof r);
  r.model = &m;
  r.gpu = &g;
  r.gpus = gpus, r.tp = tp, r.pp = pp, r.seq_len = seq, r.global_batch = 1024, r.recompute = recompute;
  memest_pretrain_result out;
  std::memset(&out, 0, sizeof out);
  out.struct_size = sizeof out;
  memest_stage stages[16];
  std::memset(stages, 0, sizeof stages);
  const memest_status s = memest_pretrain(&r, &out, stages, sizeof stages[0], 16);
  std::string t = outcome(s) + text(out);
  for (int i = 0; i < 16 && i < out.stage_count; ++i) t += " | " + text(stages[i]);
  return t;
}

std::string search_task(int64_t gpus, bool shortlist, bool bad) {
  const memest_model m = preset_model("llama-3.1-8b");
  const memest_gpu g = preset_gpu(bad ? "v100-16gb" : "a100-40gb");
  memest_pretrain_request base;
  memest_pretrain_request_init(&base, sizeof base);
  base.model = &m;
  base.gpu = &g;
  base.gpus = gpus;
  base.seq_len = 4096;
  base.global_batch = bad ? 0 : 512;  // no global batch: missing_field
  memest_search_request r;
  memest_search_request_init(&r, sizeof r);
  r.base = &base;
  r.max_tp = 8;
  r.max_pp = 4;
  r.max_vpp = 2;
  r.max_micro_batch = 2;
  memest_layout layouts[2];
  memest_layout_init(&layouts[0], sizeof layouts[0]);
  memest_layout_init(&layouts[1], sizeof layouts[1]);
  layouts[0].tp = 4, layouts[0].pp = 2;
  layouts[1].tp = 2, layouts[1].pp = 4, layouts[1].recompute = MEMEST_RECOMPUTE_FULL;
  if (shortlist) r.layouts = layouts, r.layout_count = 2;
  memest_search_result out;
  std::memset(&out, 0, sizeof out);
  out.struct_size = sizeof out;
  memest_search_entry entries[6];
  std::memset(entries, 0, sizeof entries);
  uint64_t pruned[MEMEST_PRUNE_REASON_COUNT] = {};
  const memest_status s =
      memest_search(&r, &out, entries, sizeof entries[0], 6, pruned, MEMEST_PRUNE_REASON_COUNT);
  std::ostringstream t;
  t << outcome(s) << out.candidates << ' ' << out.evaluated << ' ' << out.pruned_total << ' ' << out.count
    << ' ' << out.ranked << " pruned";
  for (uint64_t p : pruned) t << ' ' << p;
  for (uint32_t i = 0; i < out.count && i < 6; ++i) t << " | " << text(entries[i]);
  return t.str();
}

std::string finetune_task(const char* model_id, int32_t method, int64_t gpus, int64_t batch, double chunk_bytes,
                          double page_bytes) {
  const memest_model m = preset_model(model_id);
  const memest_gpu g = preset_gpu("v100-16gb");
  memest_finetune_request r;
  memest_finetune_request_init(&r, sizeof r);
  r.model = &m;
  r.gpu = &g;
  r.gpus = gpus, r.method = method, r.batch = batch, r.chunk_bytes = chunk_bytes, r.page_bytes = page_bytes;
  if (method == MEMEST_FINETUNE_AUTO) {
    memest_finetune_choice choice;
    std::memset(&choice, 0, sizeof choice);
    choice.struct_size = sizeof choice;
    memest_finetune_option options[4];
    std::memset(options, 0, sizeof options);
    const memest_status s = memest_finetune_select(&r, &choice, options, sizeof options[0], 4);
    std::string t = outcome(s) + std::to_string(choice.selected) + ' ' + std::to_string(choice.batch) + ' ' +
                    std::to_string(choice.option_count);
    for (const auto& o : options) t += " | " + text(o);
    return t;
  }
  memest_finetune_result out;
  std::memset(&out, 0, sizeof out);
  out.struct_size = sizeof out;
  const memest_status s = memest_finetune(&r, &out);
  return outcome(s) + text(out);
}

std::string states_task(double params, int64_t gpus, int32_t zero) {
  memest_model m;
  memest_model_init(&m, sizeof m);
  m.num_parameters = params;
  const memest_gpu g = preset_gpu("a100-80gb");
  memest_model_states_request r;
  memest_model_states_request_init(&r, sizeof r);
  r.model = &m;
  r.gpu = &g;
  r.gpus = gpus;
  r.zero = zero;
  memest_model_states_result out;
  std::memset(&out, 0, sizeof out);
  out.struct_size = sizeof out;
  const memest_status s = memest_model_states(&r, &out);
  Text t;
  t("params", out.num_parameters)("w", out.weights_bytes)("g", out.gradients_bytes)("o", out.optimizer_bytes)(
      "estimate", out.estimate_bytes)("cap", out.capacity_bytes)("verdict", out.verdict);
  return outcome(s) + t.str();
}

std::string presets_task() {
  std::string t;
  for (uint32_t i = 0; i < memest_model_preset_count(); ++i) {
    memest_model m;
    m.struct_size = sizeof m;
    const memest_status s = memest_model_from_preset(memest_model_preset_id(i), &m);
    memest_param_count c;
    c.struct_size = sizeof c;
    const memest_status sc = memest_model_parameter_count(&m, &c);
    t += std::string(memest_model_preset_id(i)) + ": " + outcome(s) + text(m) + outcome(sc) + num(c.total) + "\n";
  }
  for (uint32_t i = 0; i < memest_gpu_preset_count(); ++i) {
    memest_gpu g;
    g.struct_size = sizeof g;
    const memest_status s = memest_gpu_from_preset(memest_gpu_preset_id(i), &g);
    t += std::string(memest_gpu_preset_id(i)) + ": " + outcome(s) + text(g) + "\n";
  }
  memest_model m;
  m.struct_size = sizeof m;
  t += outcome(memest_model_from_preset("no-such-model", &m));
  memest_gpu g;
  g.struct_size = sizeof g;
  t += outcome(memest_gpu_from_preset("no-such-gpu", &g));
  return t;
}

std::string enums_task() {
  std::string t = std::string(memest_version_string()) + " " + std::to_string(memest_version_number());
  for (int e = 0; e < MEMEST_ENUM_COUNT; ++e) {
    const auto which = static_cast<memest_enum>(e);
    for (uint32_t v = 0; v < memest_enum_count(which); ++v) {
      const char* name = memest_enum_name(which, static_cast<int32_t>(v));
      t += std::string(" ") + name + "=" + std::to_string(memest_enum_value(which, name));
    }
  }
  t += std::string(" ") + memest_status_name(MEMEST_ERR_PARSE) + memest_verdict_name(MEMEST_VERDICT_OOM) +
       memest_prune_reason_name(MEMEST_PRUNE_LAYERS) + memest_finetune_method_name(MEMEST_FINETUNE_TP) +
       num(memest_verdict_limit(MEMEST_VERDICT_FITS));
  return t;
}

std::string config_task(const char* config) {
  memest_model m;
  std::memset(&m, 0, sizeof m);
  m.struct_size = sizeof m;
  const memest_status s = memest_model_from_config_json(config, &m);
  const memest_status v = memest_model_validate(&m);
  return outcome(s) + text(m) + " validate " + outcome(v);
}

const std::vector<std::function<std::string()>>& tasks() {
  static const std::vector<std::function<std::string()>> all = {
      // JSON entry point: every mode, valid and invalid
      [] { return json_task(R"({"mode":"pretrain","model":"llama-3.1-8b","gpu":"a100-40gb","parallel":{"gpus":8,"tp":4,"pp":2},"training":{"seq_len":8192,"global_batch":1024}})"); },
      [] { return json_task(R"({"mode":"pretrain","model":"gpt3-175b","gpu":"h100-80gb","parallel":{"gpus":1024,"tp":8,"pp":8,"vpp":2,"cp":2},"training":{"seq_len":4096,"global_batch":512,"recompute":"selective"}})"); },
      [] { return json_task(R"({"mode":"pretrain","model":"llama-3.1-8b","gpu":"a100-40gb","parallel":{"gpus":8,"tp":3}})"); },
      [] { return json_task(R"({"mode":"pretrain","model":"llama-3.1-8b","gpu":"a100-40gb","parallel":{"tp":null}})"); },
      [] { return json_task(R"({"mode":"pretrain", "mode":"x"})"); },
      [] { return json_task("{\"mode\": \"pretrain\", 1e999}"); },
      [] { return json_task(R"({"mode":"search","model":"llama-3.1-8b","gpu":"a100-40gb","parallel":{"gpus":32},"training":{"seq_len":8192,"global_batch":256},"search":{"top":5,"max_pp":4,"max_vpp":2}})"); },
      [] { return json_task(R"({"mode":"search","model":"llama-3.1-8b","gpu":{"memory_gib":80},"parallel":{"gpus":8},"training":{"global_batch":64}})"); },
      [] { return json_task(R"({"mode":"model_states","model":{"num_parameters":7.5e9},"parallel":{"gpus":64,"zero":3}})"); },
      [] { return json_task(R"({"mode":"finetune","model":"opt-1.3b","gpu":"v100-16gb","parallel":{"gpus":4},"finetune":{"method":"auto","chunk_bytes":1e9}})"); },
      [] { return json_task(R"({"mode":"finetune","model":"opt-1.3b","gpu":"v100-16gb","parallel":{"gpus":4},"finetune":{"method":"dp+tp"}})"); },
      [] { return json_task(R"({"mode":"presets"})"); },
      [] { return json_task(R"({"mode":"enums"})"); },
      [] { return json_task(R"({"mode":"nope"})"); },
      [] { return json_task("not json"); },
      // typed entry points
      [] { return pretrain_task("llama-3.1-8b", "a100-40gb", 8, 4, 2, 8192, MEMEST_RECOMPUTE_NONE); },
      [] { return pretrain_task("llama-3.1-70b", "h100-80gb", 512, 8, 8, 8192, MEMEST_RECOMPUTE_FULL); },
      [] { return pretrain_task("gpt2", "v100-16gb", 4, 2, 2, 1024, MEMEST_RECOMPUTE_SELECTIVE); },
      [] { return pretrain_task("llama-3.1-8b", "a100-40gb", 8, 3, 1, 8192, MEMEST_RECOMPUTE_NONE); },     // tp 3
      [] { return pretrain_task("gpt2", "v100-16gb", 4, 1, 1, 4096, MEMEST_RECOMPUTE_NONE); },             // seq > positions
      [] { return pretrain_task("llama-3.1-8b", "a100-40gb", 8, 1, 1, 8192, 7); },                         // recompute 7
      [] { return search_task(64, false, false); },
      [] { return search_task(512, false, false); },  // 128 GPUs or more: the search's own threads
      [] { return search_task(8, true, false); },
      [] { return search_task(8, false, true); },  // missing global batch
      [] { return finetune_task("opt-1.3b", MEMEST_FINETUNE_ZERO3, 4, 8, 1e9, 0); },
      [] { return finetune_task("bloom-1b1", MEMEST_FINETUNE_TP, 4, 2, 0, 0); },      // chunk size searched
      [] { return finetune_task("opt-1.3b", MEMEST_FINETUNE_AUTO, 4, 1, 1e9, 0); },
      [] { return finetune_task("opt-1.3b", MEMEST_FINETUNE_ZERO3, 4, 8, 1e9, 1e-310); },  // page refused
      [] { return finetune_task("opt-1.3b", MEMEST_FINETUNE_AUTO, 0, 1, 1e9, 0); },        // gpus 0
      [] { return states_task(7.5e9, 64, 1); },
      [] { return states_task(-1, 64, 1); },
      [] { return states_task(7.5e9, 64, 9); },
      [] { return presets_task(); },
      [] { return enums_task(); },
      [] { return config_task(R"({"model_type":"gpt2","n_embd":768,"n_layer":12,"n_head":12,"vocab_size":50257,"n_positions":1024})"); },
      [] { return config_task(R"({"model_type":"llama","hidden_size":4096})"); },  // incomplete
      [] { return config_task("{"); },
  };
  return all;
}

}  // namespace

int main() {
  const auto& all = tasks();
  std::atomic<long> calls{0};
  std::atomic<int> mismatches{0};
  std::mutex print;
  auto report = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(print);
    if (mismatches.fetch_add(1) < 20) std::fprintf(stderr, "tsan: MISMATCH %s\n", what.c_str());
  };

  // 1. Cold start: the first calls of the process, from 8 threads at once.
  std::vector<std::string> cold(kThreads);
  {
    Barrier start(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        start.wait();
        cold[t] = t % 2 ? presets_task() : json_task(R"({"mode":"presets"})");
        ++calls;
      });
    }
    for (auto& th : threads) th.join();
  }

  // 2. Single-threaded answers, then every task on 8 threads in different orders.
  std::vector<std::string> expected;
  for (const auto& task : all) expected.push_back(task());
  const std::string presets_typed = presets_task();
  const std::string presets_json = json_task(R"({"mode":"presets"})");
  for (int t = 0; t < kThreads; ++t) {
    if (cold[t] != (t % 2 ? presets_typed : presets_json)) report("cold start answer of thread " + std::to_string(t));
  }
  const int rounds = 6;
  {
    Barrier start(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        start.wait();
        const std::size_t n = all.size();
        for (int round = 0; round < rounds; ++round) {
          for (std::size_t i = 0; i < n; ++i) {
            const std::size_t k = (i * (2 * t + 1) + static_cast<std::size_t>(round * 7 + t)) % n;
            const std::string got = all[k]();
            ++calls;
            if (got != expected[k]) report("task " + std::to_string(k) + " on thread " + std::to_string(t) +
                                           ":\n  got      " + got.substr(0, 300) + "\n  expected " +
                                           expected[k].substr(0, 300));
          }
        }
      });
    }
    for (auto& th : threads) th.join();
  }

  // 3. Thread-local last errors: each thread's own failure survives the others' calls.
  {
    Barrier step(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int phase = 0; phase < 2; ++phase) {
          const bool keeper = (t % 2) == phase;  // half keep their error, half make calls
          // each thread fails with a field of its own
          const std::string own_field = "parallel.gpus";
          memest_model m = preset_model("llama-3.1-8b");
          memest_gpu g = preset_gpu("a100-40gb");
          memest_pretrain_request r;
          memest_pretrain_request_init(&r, sizeof r);
          r.model = &m;
          r.gpu = &g;
          r.gpus = 1001 + 2 * t;  // odd: not divisible by tp*cp*pp = 8 ("parallel.gpus=1001 ...")
          r.tp = 8;
          memest_pretrain_result out;
          out.struct_size = sizeof out;
          const memest_status s = memest_pretrain(&r, &out, nullptr, sizeof(memest_stage), 0);
          const std::string own_message = memest_last_error();
          if (s != MEMEST_ERR_INVALID_ARGUMENT || memest_last_error_field() != own_field ||
              own_message.find(std::to_string(1001 + 2 * t)) == std::string::npos) {
            report("thread " + std::to_string(t) + ": unexpected own failure: " + own_message);
          }
          step.wait();
          if (!keeper) {
            for (int i = 0; i < 20; ++i) {
              all[static_cast<std::size_t>(i * 3 + t) % all.size()]();
              ++calls;
            }
          }
          step.wait();
          if (keeper) {
            if (memest_last_error_code() != MEMEST_ERR_INVALID_ARGUMENT ||
                std::string(memest_last_error_field()) != own_field || memest_last_error() != own_message) {
              report("thread " + std::to_string(t) + ": last error changed by another thread: [" +
                     memest_last_error_field() + "] " + memest_last_error());
            }
          }
          step.wait();
        }
        // and a success clears this thread's error only
        memest_model m;
        m.struct_size = sizeof m;
        if (memest_model_from_preset("gpt2", &m) != MEMEST_OK || memest_last_error_code() != MEMEST_OK ||
            memest_last_error_field()[0] != '\0' || memest_last_error()[0] != '\0') {
          report("thread " + std::to_string(t) + ": a success did not clear the last error");
        }
      });
    }
    for (auto& th : threads) th.join();
  }

  std::printf("tsan: %ld calls on %d threads (%zu tasks, typed and JSON, valid and invalid), %d mismatches\n",
              calls.load(), kThreads, all.size(), mismatches.load());
  return mismatches.load() == 0 ? 0 : 1;
}
