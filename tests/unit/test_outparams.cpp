// The header's promise "out-parameters are left untouched on failure", entry point by entry
// point: every output (result struct, stage / search entry / fine-tune option array, prune
// counts, model and GPU) is filled with a sentinel byte (0xA5) — only struct_size set — and
// each typed entry point is made to fail several ways. Each failure must give exactly the
// expected status, name exactly the expected field in memest_last_error_field(), and leave
// every output byte as it was.
//
// Built into memest_outparams_tests (with test_reproducers.cpp), against the static library.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "memest/memest.h"

namespace {

constexpr unsigned char kSentinel = 0xA5;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// An output struct of type T: every byte the sentinel, struct_size set (and 16 bytes of guard
// after it, so that a write past sizeof shows too).
template <typename T>
struct Sentinel {
  alignas(T) unsigned char bytes[sizeof(T) + 16];
  explicit Sentinel(uint32_t struct_size = sizeof(T)) {
    std::memset(bytes, kSentinel, sizeof bytes);
    std::memcpy(bytes, &struct_size, sizeof struct_size);
  }
  T* get() { return reinterpret_cast<T*>(bytes); }
  bool untouched() const {
    for (std::size_t i = sizeof(uint32_t); i < sizeof bytes; ++i)
      if (bytes[i] != kSentinel) return false;
    return true;
  }
};

// A caller array of `capacity` elements of `element_size` bytes, all sentinel (plus a guard).
struct SentinelArray {
  std::vector<uint64_t> storage;  // 8-byte aligned
  explicit SentinelArray(std::size_t bytes) : storage(bytes / 8 + 4) {
    std::memset(storage.data(), kSentinel, storage.size() * 8);
  }
  void* get() { return storage.data(); }
  bool untouched() const {
    const auto* p = reinterpret_cast<const unsigned char*>(storage.data());
    for (std::size_t i = 0; i < storage.size() * 8; ++i)
      if (p[i] != kSentinel) return false;
    return true;
  }
};

// Everything a typed call reads, valid to start with; each case breaks one thing.
struct Inputs {
  memest_model model{};
  memest_gpu gpu{};
  memest_model_states_request states{};
  memest_pretrain_request pretrain{};
  memest_search_request search{};
  std::vector<memest_layout> layouts;
  memest_finetune_request finetune{};
  // the call's own arguments
  uint32_t result_size = 0;   // 0: sizeof the result
  uint32_t element_size = 0;  // 0: sizeof the element
  uint32_t capacity = 4;
  uint32_t pruned_capacity = MEMEST_PRUNE_REASON_COUNT;
  bool null_request = false, null_result = false, null_array = false, null_pruned = false;
  bool null_model = false, null_gpu = false, null_base = false, use_layouts = false;

  Inputs() {
    REQUIRE(memest_model_init(&model, sizeof model) == MEMEST_OK);
    REQUIRE(memest_model_from_preset("llama-3.1-8b", &model) == MEMEST_OK);
    REQUIRE(memest_gpu_init(&gpu, sizeof gpu) == MEMEST_OK);
    REQUIRE(memest_gpu_from_preset("a100-40gb", &gpu) == MEMEST_OK);
    REQUIRE(memest_model_states_request_init(&states, sizeof states) == MEMEST_OK);
    states.gpus = 8;
    states.zero = 1;
    REQUIRE(memest_pretrain_request_init(&pretrain, sizeof pretrain) == MEMEST_OK);
    pretrain.gpus = 8;
    pretrain.tp = 4;
    pretrain.pp = 2;
    pretrain.seq_len = 8192;
    pretrain.global_batch = 1024;
    REQUIRE(memest_search_request_init(&search, sizeof search) == MEMEST_OK);
    search.max_tp = 4;
    search.max_pp = 2;
    search.max_vpp = 1;
    search.max_micro_batch = 2;
    layouts.resize(2);
    for (memest_layout& l : layouts) REQUIRE(memest_layout_init(&l, sizeof l) == MEMEST_OK);
    layouts[0].tp = 4, layouts[0].pp = 2;
    layouts[1].tp = 2, layouts[1].pp = 2, layouts[1].recompute = MEMEST_RECOMPUTE_FULL;
    REQUIRE(memest_finetune_request_init(&finetune, sizeof finetune) == MEMEST_OK);
    finetune.gpus = 4;
    finetune.method = MEMEST_FINETUNE_ZERO3;
    finetune.batch = 1;
  }

  void wire() {
    const memest_model* m = null_model ? nullptr : &model;
    const memest_gpu* g = null_gpu ? nullptr : &gpu;
    states.model = pretrain.model = finetune.model = m;
    states.gpu = pretrain.gpu = finetune.gpu = g;
    search.base = null_base ? nullptr : &pretrain;
    if (use_layouts) {
      search.layouts = layouts.data();
      search.layout_count = static_cast<uint32_t>(layouts.size());
    }
  }
};

struct Case {
  const char* name;
  std::function<void(Inputs&)> breaks;
  memest_status status;
  const char* field;
};

// Common ways to break the model or the GPU every mode reads.
const std::vector<Case> kModelGpuCases = {
    {"model NULL", [](Inputs& in) { in.null_model = true; }, MEMEST_ERR_MISSING_FIELD, "model"},
    {"GPU NULL", [](Inputs& in) { in.null_gpu = true; }, MEMEST_ERR_MISSING_FIELD, "gpu"},
    {"model struct_size 0", [](Inputs& in) { in.model.struct_size = 0; }, MEMEST_ERR_STRUCT_SIZE,
     "model.struct_size"},
    {"model struct_size sizeof + 8", [](Inputs& in) { in.model.struct_size = sizeof(memest_model) + 8; },
     MEMEST_ERR_STRUCT_SIZE, "model.struct_size"},
    {"GPU struct_size 4", [](Inputs& in) { in.gpu.struct_size = 4; }, MEMEST_ERR_STRUCT_SIZE, "gpu.struct_size"},
    {"hidden_size -1", [](Inputs& in) { in.model.hidden_size = -1; }, MEMEST_ERR_INVALID_ARGUMENT,
     "model.hidden_size"},
    {"kv heads 5 of 32", [](Inputs& in) { in.model.num_key_value_heads = 5; }, MEMEST_ERR_INVALID_ARGUMENT,
     "model.num_key_value_heads"},
    {"capacity 1e-307 bytes", [](Inputs& in) { in.gpu.memory_bytes = 1e-307; }, MEMEST_ERR_INVALID_ARGUMENT,
     "gpu.memory_gib"},
    {"capacity NaN", [](Inputs& in) { in.gpu.memory_bytes = kNaN; }, MEMEST_ERR_INVALID_ARGUMENT, "gpu.memory_gib"},
    {"GPU page_bytes 1e-310", [](Inputs& in) { in.gpu.page_bytes = 1e-310; }, MEMEST_ERR_INVALID_ARGUMENT,
     "gpu.page_mib"},
    {"negative peak", [](Inputs& in) { in.gpu.peak_bf16_tflops = -1; }, MEMEST_ERR_INVALID_ARGUMENT,
     "gpu.peak_bf16_tflops"},
    {"NaN peak", [](Inputs& in) { in.gpu.peak_bf16_tflops = kNaN; }, MEMEST_ERR_INVALID_ARGUMENT,
     "gpu.peak_bf16_tflops"},
    {"subnormal peak", [](Inputs& in) { in.gpu.peak_bf16_tflops = 1e-310; }, MEMEST_ERR_INVALID_ARGUMENT,
     "gpu.peak_bf16_tflops"},
    {"gpus_per_node 0", [](Inputs& in) { in.gpu.gpus_per_node = 0; }, MEMEST_ERR_INVALID_ARGUMENT,
     "gpu.gpus_per_node"},
    {"fragmentation inf", [](Inputs& in) { in.gpu.fragmentation = HUGE_VAL; }, MEMEST_ERR_INVALID_ARGUMENT,
     "gpu.fragmentation"},
};

std::vector<Case> with_model_gpu_cases(std::vector<Case> own) {
  own.insert(own.end(), kModelGpuCases.begin(), kModelGpuCases.end());
  return own;
}

// Runs one case: the call must fail as expected and leave `untouched()` true.
template <typename Call>
void run_cases(const std::vector<Case>& cases, Call call) {
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Inputs in;
    c.breaks(in);
    in.wire();
    const memest_status status = call(in);  // checks the outputs itself, returns the status
    CHECK(memest_status_name(status) == std::string(memest_status_name(c.status)));
    CHECK(memest_last_error_code() == c.status);
    CHECK(std::string(memest_last_error_field()) == c.field);
    CHECK(std::string(memest_last_error()).size() > 0);
  }
}

// ---- the calls, each with its outputs in sentinel state

memest_status call_model_states(Inputs& in, bool expect_untouched = true) {
  Sentinel<memest_model_states_result> out(in.result_size ? in.result_size : sizeof(memest_model_states_result));
  const memest_status s = memest_model_states(in.null_request ? nullptr : &in.states,
                                              in.null_result ? nullptr : out.get());
  if (expect_untouched) CHECK(out.untouched());
  return s;
}

memest_status call_pretrain(Inputs& in, bool expect_untouched = true) {
  Sentinel<memest_pretrain_result> out(in.result_size ? in.result_size : sizeof(memest_pretrain_result));
  const uint32_t esize = in.element_size ? in.element_size : sizeof(memest_stage);
  SentinelArray stages(static_cast<std::size_t>(esize) * in.capacity);
  const memest_status s =
      memest_pretrain(in.null_request ? nullptr : &in.pretrain, in.null_result ? nullptr : out.get(),
                      in.null_array ? nullptr : static_cast<memest_stage*>(stages.get()), esize, in.capacity);
  if (expect_untouched) {
    CHECK(out.untouched());
    CHECK(stages.untouched());
  }
  return s;
}

memest_status call_search(Inputs& in, bool expect_untouched = true) {
  Sentinel<memest_search_result> out(in.result_size ? in.result_size : sizeof(memest_search_result));
  const uint32_t esize = in.element_size ? in.element_size : sizeof(memest_search_entry);
  SentinelArray entries(static_cast<std::size_t>(esize) * in.capacity);
  SentinelArray pruned(8 * (in.pruned_capacity + 2));
  const memest_status s = memest_search(
      in.null_request ? nullptr : &in.search, in.null_result ? nullptr : out.get(),
      in.null_array ? nullptr : static_cast<memest_search_entry*>(entries.get()), esize, in.capacity,
      in.null_pruned ? nullptr : static_cast<uint64_t*>(pruned.get()), in.pruned_capacity);
  if (expect_untouched) {
    CHECK(out.untouched());
    CHECK(entries.untouched());
    CHECK(pruned.untouched());
  }
  return s;
}

memest_status call_finetune(Inputs& in, bool expect_untouched = true) {
  Sentinel<memest_finetune_result> out(in.result_size ? in.result_size : sizeof(memest_finetune_result));
  const memest_status s = memest_finetune(in.null_request ? nullptr : &in.finetune,
                                          in.null_result ? nullptr : out.get());
  if (expect_untouched) CHECK(out.untouched());
  return s;
}

memest_status call_select(Inputs& in, bool expect_untouched = true) {
  Sentinel<memest_finetune_choice> out(in.result_size ? in.result_size : sizeof(memest_finetune_choice));
  const uint32_t esize = in.element_size ? in.element_size : sizeof(memest_finetune_option);
  SentinelArray options(static_cast<std::size_t>(esize) * in.capacity);
  const memest_status s = memest_finetune_select(
      in.null_request ? nullptr : &in.finetune, in.null_result ? nullptr : out.get(),
      in.null_array ? nullptr : static_cast<memest_finetune_option*>(options.get()), esize, in.capacity);
  if (expect_untouched) {
    CHECK(out.untouched());
    CHECK(options.untouched());
  }
  return s;
}

}  // namespace

TEST_CASE("out-parameters: every baseline request succeeds (the cases below break one thing each)") {
  Inputs in;
  in.use_layouts = false;
  in.wire();
  CHECK(call_model_states(in, false) == MEMEST_OK);
  CHECK(call_pretrain(in, false) == MEMEST_OK);
  CHECK(call_search(in, false) == MEMEST_OK);
  CHECK(call_finetune(in, false) == MEMEST_OK);
  in.finetune.method = MEMEST_FINETUNE_AUTO;
  CHECK(call_select(in, false) == MEMEST_OK);
  Inputs shortlist;
  shortlist.use_layouts = true;
  shortlist.wire();
  CHECK(call_search(shortlist, false) == MEMEST_OK);
}

TEST_CASE("out-parameters: memest_pretrain writes nothing when it fails") {
  run_cases(
      with_model_gpu_cases({
          {"NULL request", [](Inputs& in) { in.null_request = true; }, MEMEST_ERR_NULL_POINTER, "request"},
          {"request struct_size 0", [](Inputs& in) { in.pretrain.struct_size = 0; }, MEMEST_ERR_STRUCT_SIZE,
           "request.struct_size"},
          {"request struct_size sizeof + 8",
           [](Inputs& in) { in.pretrain.struct_size = sizeof(memest_pretrain_request) + 8; },
           MEMEST_ERR_STRUCT_SIZE, "request.struct_size"},
          {"NULL result", [](Inputs& in) { in.null_result = true; }, MEMEST_ERR_NULL_POINTER, "result"},
          {"result struct_size sizeof + 8",
           [](Inputs& in) { in.result_size = sizeof(memest_pretrain_result) + 8; }, MEMEST_ERR_STRUCT_SIZE,
           "result.struct_size"},
          {"result struct_size 8", [](Inputs& in) { in.result_size = 8; }, MEMEST_ERR_STRUCT_SIZE,
           "result.struct_size"},
          {"stage element size sizeof + 8", [](Inputs& in) { in.element_size = sizeof(memest_stage) + 8; },
           MEMEST_ERR_STRUCT_SIZE, "stages"},
          {"stage element size 4", [](Inputs& in) { in.element_size = 4; }, MEMEST_ERR_STRUCT_SIZE, "stages"},
          {"NULL stages with a capacity", [](Inputs& in) { in.null_array = true; }, MEMEST_ERR_NULL_POINTER,
           "stages"},
          {"tp 3 for 32 heads", [](Inputs& in) { in.pretrain.tp = 3; }, MEMEST_ERR_INVALID_ARGUMENT,
           "parallel.tp"},
          {"tp 0", [](Inputs& in) { in.pretrain.tp = 0; }, MEMEST_ERR_INVALID_ARGUMENT, "parallel.tp"},
          {"gpus not divisible", [](Inputs& in) { in.pretrain.gpus = 12; }, MEMEST_ERR_INVALID_ARGUMENT,
           "parallel.gpus"},
          {"pp 64 > 32 layers", [](Inputs& in) { in.pretrain.pp = 64, in.pretrain.gpus = 256; },
           MEMEST_ERR_INVALID_ARGUMENT, "parallel.pp"},
          {"vpp without pp", [](Inputs& in) { in.pretrain.pp = 1, in.pretrain.vpp = 2; },
           MEMEST_ERR_INVALID_ARGUMENT, "parallel.vpp"},
          {"cp 3 for seq 8192", [](Inputs& in) { in.pretrain.cp = 3, in.pretrain.gpus = 24; },
           MEMEST_ERR_INVALID_ARGUMENT, "training.seq_len"},
          {"global batch 1024 % micro-batch 3", [](Inputs& in) { in.pretrain.micro_batch = 3; },
           MEMEST_ERR_INVALID_ARGUMENT, "training.global_batch"},
          {"NaN param_bytes", [](Inputs& in) { in.pretrain.param_bytes = kNaN; }, MEMEST_ERR_INVALID_ARGUMENT,
           "training.param_dtype"},
          {"grad_bytes 65", [](Inputs& in) { in.pretrain.grad_bytes = 65; }, MEMEST_ERR_INVALID_ARGUMENT,
           "training.grad_dtype"},
          {"optimizer_bytes -inf", [](Inputs& in) { in.pretrain.optimizer_bytes = -HUGE_VAL; },
           MEMEST_ERR_INVALID_ARGUMENT, "training.optimizer"},
          {"zero 4", [](Inputs& in) { in.pretrain.zero = 4; }, MEMEST_ERR_INVALID_ARGUMENT, "parallel.zero"},
          {"recompute 7", [](Inputs& in) { in.pretrain.recompute = 7; }, MEMEST_ERR_INVALID_ARGUMENT,
           "training.recompute"},
          {"activation model 9", [](Inputs& in) { in.pretrain.activation_model = 9; },
           MEMEST_ERR_INVALID_ARGUMENT, "training.activation_model"},
          {"sequence_parallel 2", [](Inputs& in) { in.pretrain.sequence_parallel = 2; },
           MEMEST_ERR_INVALID_ARGUMENT, "parallel.sp"},
          {"seq_len 0", [](Inputs& in) { in.pretrain.seq_len = 0; }, MEMEST_ERR_INVALID_ARGUMENT,
           "training.seq_len"},
          {"global batch 2^40 + 1", [](Inputs& in) { in.pretrain.global_batch = (int64_t{1} << 40) + 1; },
           MEMEST_ERR_INVALID_ARGUMENT, "training.global_batch"},
          {"no capacity", [](Inputs& in) { in.gpu.memory_bytes = 0; }, MEMEST_ERR_MISSING_FIELD, "gpu"},
      }),
      [](Inputs& in) { return call_pretrain(in); });
}

TEST_CASE("out-parameters: memest_model_states writes nothing when it fails") {
  run_cases(
      {
          {"NULL request", [](Inputs& in) { in.null_request = true; }, MEMEST_ERR_NULL_POINTER, "request"},
          {"request struct_size 1", [](Inputs& in) { in.states.struct_size = 1; }, MEMEST_ERR_STRUCT_SIZE,
           "request.struct_size"},
          {"NULL result", [](Inputs& in) { in.null_result = true; }, MEMEST_ERR_NULL_POINTER, "result"},
          {"result struct_size sizeof + 8",
           [](Inputs& in) { in.result_size = sizeof(memest_model_states_result) + 8; },
           MEMEST_ERR_STRUCT_SIZE, "result.struct_size"},
          {"model NULL", [](Inputs& in) { in.null_model = true; }, MEMEST_ERR_MISSING_FIELD, "model"},
          {"gpus 0", [](Inputs& in) { in.states.gpus = 0; }, MEMEST_ERR_INVALID_ARGUMENT, "parallel.gpus"},
          {"zero 5", [](Inputs& in) { in.states.zero = 5; }, MEMEST_ERR_INVALID_ARGUMENT, "parallel.zero"},
          {"NaN param_bytes", [](Inputs& in) { in.states.param_bytes = kNaN; }, MEMEST_ERR_INVALID_ARGUMENT,
           "training.param_dtype"},
          {"bare count 1e17", [](Inputs& in) { in.model.hidden_size = 0, in.model.num_parameters = 1e17; },
           MEMEST_ERR_OVERFLOW, "model.num_parameters"},
          {"capacity 1e-307 bytes", [](Inputs& in) { in.gpu.memory_bytes = 1e-307; },
           MEMEST_ERR_INVALID_ARGUMENT, "gpu.memory_gib"},
          {"negative peak", [](Inputs& in) { in.gpu.peak_bf16_tflops = -1; }, MEMEST_ERR_INVALID_ARGUMENT,
           "gpu.peak_bf16_tflops"},
          {"GPU page_bytes 1e-310", [](Inputs& in) { in.gpu.page_bytes = 1e-310; }, MEMEST_ERR_INVALID_ARGUMENT,
           "gpu.page_mib"},
          {"GPU struct_size sizeof + 8", [](Inputs& in) { in.gpu.struct_size = sizeof(memest_gpu) + 8; },
           MEMEST_ERR_STRUCT_SIZE, "gpu.struct_size"},
      },
      [](Inputs& in) { return call_model_states(in); });
}

TEST_CASE("out-parameters: memest_search writes no result, entry or prune count when it fails") {
  run_cases(
      with_model_gpu_cases({
          {"NULL request", [](Inputs& in) { in.null_request = true; }, MEMEST_ERR_NULL_POINTER, "request"},
          {"request struct_size sizeof + 8",
           [](Inputs& in) { in.search.struct_size = sizeof(memest_search_request) + 8; },
           MEMEST_ERR_STRUCT_SIZE, "request.struct_size"},
          {"NULL base", [](Inputs& in) { in.null_base = true; }, MEMEST_ERR_MISSING_FIELD, "base"},
          {"base struct_size 0", [](Inputs& in) { in.pretrain.struct_size = 0; }, MEMEST_ERR_STRUCT_SIZE,
           "base.struct_size"},
          {"NULL result", [](Inputs& in) { in.null_result = true; }, MEMEST_ERR_NULL_POINTER, "result"},
          {"result struct_size 12", [](Inputs& in) { in.result_size = 12; }, MEMEST_ERR_STRUCT_SIZE,
           "result.struct_size"},
          {"entry element size sizeof + 8", [](Inputs& in) { in.element_size = sizeof(memest_search_entry) + 8; },
           MEMEST_ERR_STRUCT_SIZE, "entries"},
          {"NULL entries with a capacity", [](Inputs& in) { in.null_array = true; }, MEMEST_ERR_NULL_POINTER,
           "entries"},
          {"NULL prune counts with a capacity", [](Inputs& in) { in.null_pruned = true; },
           MEMEST_ERR_NULL_POINTER, "pruned"},
          {"shortlist [valid, tp 0]",
           [](Inputs& in) { in.use_layouts = true, in.layouts[1].tp = 0; }, MEMEST_ERR_INVALID_ARGUMENT,
           "search.layouts[1].tp"},
          {"shortlist [valid, recompute out of range]",
           [](Inputs& in) { in.use_layouts = true, in.layouts[1].recompute = MEMEST_RECOMPUTE_COUNT; }, MEMEST_ERR_INVALID_ARGUMENT,
           "search.layouts[1].recompute"},
          {"shortlist [valid, zero -1]",
           [](Inputs& in) { in.use_layouts = true, in.layouts[1].zero = -1; }, MEMEST_ERR_INVALID_ARGUMENT,
           "search.layouts[1].zero"},
          {"shortlist [valid, other struct_size]",
           [](Inputs& in) { in.use_layouts = true, in.layouts[1].struct_size = 8; }, MEMEST_ERR_STRUCT_SIZE,
           "search.layouts[1].struct_size"},
          {"shortlist NULL with a count",
           [](Inputs& in) {
             in.search.layouts = nullptr;
             in.search.layout_count = 2;
           },
           MEMEST_ERR_NULL_POINTER, "search.layouts"},
          {"missing global batch", [](Inputs& in) { in.pretrain.global_batch = 0; }, MEMEST_ERR_MISSING_FIELD,
           "training.global_batch"},
          {"GPU without peak_bf16_tflops", [](Inputs& in) { in.gpu.peak_bf16_tflops = 0; },
           MEMEST_ERR_MISSING_FIELD, "gpu.peak_bf16_tflops"},
          {"max_vpp 0", [](Inputs& in) { in.search.max_vpp = 0; }, MEMEST_ERR_INVALID_ARGUMENT, "search.max_vpp"},
          {"max_tp -1", [](Inputs& in) { in.search.max_tp = -1; }, MEMEST_ERR_INVALID_ARGUMENT, "search.max_tp"},
          {"recompute mask 0", [](Inputs& in) { in.search.recompute_mask = 0; }, MEMEST_ERR_INVALID_ARGUMENT,
           "search.recompute"},
          {"zero mask 1 << 4", [](Inputs& in) { in.search.zero_mask = 1u << 4; }, MEMEST_ERR_INVALID_ARGUMENT,
           "search.zero"},
          {"include_oom 2", [](Inputs& in) { in.search.include_oom = 2; }, MEMEST_ERR_INVALID_ARGUMENT,
           "search.include_oom"},
          {"NaN param_bytes in the base", [](Inputs& in) { in.pretrain.param_bytes = kNaN; },
           MEMEST_ERR_INVALID_ARGUMENT, "training.param_dtype"},
          {"gpus 0 in the base", [](Inputs& in) { in.pretrain.gpus = 0; }, MEMEST_ERR_INVALID_ARGUMENT,
           "parallel.gpus"},
      }),
      [](Inputs& in) { return call_search(in); });
}

TEST_CASE("out-parameters: memest_finetune writes nothing when it fails") {
  run_cases(
      with_model_gpu_cases({
          {"NULL request", [](Inputs& in) { in.null_request = true; }, MEMEST_ERR_NULL_POINTER, "request"},
          {"request struct_size 3", [](Inputs& in) { in.finetune.struct_size = 3; }, MEMEST_ERR_STRUCT_SIZE,
           "request.struct_size"},
          {"NULL result", [](Inputs& in) { in.null_result = true; }, MEMEST_ERR_NULL_POINTER, "result"},
          {"result struct_size sizeof + 8",
           [](Inputs& in) { in.result_size = sizeof(memest_finetune_result) + 8; }, MEMEST_ERR_STRUCT_SIZE,
           "result.struct_size"},
          {"method AUTO", [](Inputs& in) { in.finetune.method = MEMEST_FINETUNE_AUTO; },
           MEMEST_ERR_INVALID_ARGUMENT, "finetune.method"},
          {"method 99", [](Inputs& in) { in.finetune.method = 99; }, MEMEST_ERR_INVALID_ARGUMENT,
           "finetune.method"},
          {"dp+tp with tp 3 for 32 heads",
           [](Inputs& in) { in.finetune.method = MEMEST_FINETUNE_DP_TP, in.finetune.tp = 3, in.finetune.gpus = 6; },
           MEMEST_ERR_INVALID_ARGUMENT, "finetune.tp"},
          {"dp+tp without tp", [](Inputs& in) { in.finetune.method = MEMEST_FINETUNE_DP_TP; },
           MEMEST_ERR_MISSING_FIELD, "finetune.tp"},
          {"NaN param_bytes", [](Inputs& in) { in.finetune.param_bytes = kNaN; }, MEMEST_ERR_INVALID_ARGUMENT,
           "finetune.dtype"},
          {"page_bytes 1e-310", [](Inputs& in) { in.finetune.page_bytes = 1e-310; }, MEMEST_ERR_INVALID_ARGUMENT,
           "finetune.page_bytes"},
          {"page_bytes 0.5", [](Inputs& in) { in.finetune.page_bytes = 0.5; }, MEMEST_ERR_INVALID_ARGUMENT,
           "finetune.page_bytes"},
          {"base_bytes NaN", [](Inputs& in) { in.finetune.base_bytes = kNaN; }, MEMEST_ERR_INVALID_ARGUMENT,
           "finetune.base_bytes"},
          {"chunk_bytes -1", [](Inputs& in) { in.finetune.chunk_bytes = -1; }, MEMEST_ERR_INVALID_ARGUMENT,
           "finetune.chunk_bytes"},
          {"chunk_bytes 1e-310", [](Inputs& in) { in.finetune.chunk_bytes = 1e-310; },
           MEMEST_ERR_INVALID_ARGUMENT, "finetune.chunk_bytes"},
          {"chunk_bytes DBL_MAX", [](Inputs& in) { in.finetune.chunk_bytes = std::numeric_limits<double>::max(); },
           MEMEST_ERR_INVALID_ARGUMENT, "finetune.chunk_bytes"},
          {"batch 0", [](Inputs& in) { in.finetune.batch = 0; }, MEMEST_ERR_INVALID_ARGUMENT, "finetune.batch"},
          {"gpus 0", [](Inputs& in) { in.finetune.gpus = 0; }, MEMEST_ERR_INVALID_ARGUMENT, "parallel.gpus"},
          {"seq_len 1", [](Inputs& in) { in.finetune.seq_len = 1; }, MEMEST_ERR_INVALID_ARGUMENT,
           "training.seq_len"},
          {"gradient_checkpointing 2", [](Inputs& in) { in.finetune.gradient_checkpointing = 2; },
           MEMEST_ERR_INVALID_ARGUMENT, "finetune.gradient_checkpointing"},
          {"no capacity", [](Inputs& in) { in.gpu.memory_bytes = 0; }, MEMEST_ERR_MISSING_FIELD, "gpu"},
      }),
      [](Inputs& in) { return call_finetune(in); });
}

TEST_CASE("out-parameters: memest_finetune_select writes no choice and no option when it fails") {
  auto automatic = [](std::function<void(Inputs&)> f) {
    return [f](Inputs& in) {
      in.finetune.method = MEMEST_FINETUNE_AUTO;
      f(in);
    };
  };
  std::vector<Case> cases = {
      {"NULL request", [](Inputs& in) { in.null_request = true; }, MEMEST_ERR_NULL_POINTER, "request"},
      {"NULL choice", [](Inputs& in) { in.null_result = true; }, MEMEST_ERR_NULL_POINTER, "choice"},
      {"choice struct_size 8", [](Inputs& in) { in.result_size = 8; }, MEMEST_ERR_STRUCT_SIZE,
       "choice.struct_size"},
      {"option element size sizeof + 8", [](Inputs& in) { in.element_size = sizeof(memest_finetune_option) + 8; },
       MEMEST_ERR_STRUCT_SIZE, "options"},
      {"option element size 16", [](Inputs& in) { in.element_size = 16; }, MEMEST_ERR_STRUCT_SIZE, "options"},
      {"NULL options with a capacity", [](Inputs& in) { in.null_array = true; }, MEMEST_ERR_NULL_POINTER,
       "options"},
      {"NaN param_bytes", [](Inputs& in) { in.finetune.param_bytes = kNaN; }, MEMEST_ERR_INVALID_ARGUMENT,
       "finetune.dtype"},
      {"page_bytes 1e-310", [](Inputs& in) { in.finetune.page_bytes = 1e-310; }, MEMEST_ERR_INVALID_ARGUMENT,
       "finetune.page_bytes"},
      {"chunk_bytes 1e300 (fuzz_typed finding)", [](Inputs& in) { in.finetune.chunk_bytes = 1e300; },
       MEMEST_ERR_INVALID_ARGUMENT, "finetune.chunk_bytes"},
      {"tp 3 for 32 heads", [](Inputs& in) { in.finetune.tp = 3, in.finetune.gpus = 6; },
       MEMEST_ERR_INVALID_ARGUMENT, "finetune.tp"},
      {"gpus 2^20 + 1", [](Inputs& in) { in.finetune.gpus = (1 << 20) + 1; }, MEMEST_ERR_INVALID_ARGUMENT,
       "parallel.gpus"},
  };
  for (Case& c : cases) c.breaks = automatic(c.breaks);
  for (const Case& c : kModelGpuCases) cases.push_back({c.name, automatic(c.breaks), c.status, c.field});
  run_cases(cases, [](Inputs& in) { return call_select(in); });
}

TEST_CASE("out-parameters: models, GPUs and parameter counts are untouched on failure") {
  SUBCASE("memest_model_from_preset") {
    Sentinel<memest_model> m;
    CHECK(memest_model_from_preset("llama-3.1-9b", m.get()) == MEMEST_ERR_UNKNOWN_PRESET);
    CHECK(std::string(memest_last_error_field()) == "model");
    CHECK(m.untouched());
    CHECK(memest_model_from_preset(nullptr, m.get()) == MEMEST_ERR_NULL_POINTER);
    CHECK(std::string(memest_last_error_field()) == "id");
    CHECK(m.untouched());
    CHECK(memest_model_from_preset("llama-3.1-8b", nullptr) == MEMEST_ERR_NULL_POINTER);
    CHECK(std::string(memest_last_error_field()) == "model");
    Sentinel<memest_model> small(16);
    CHECK(memest_model_from_preset("llama-3.1-8b", small.get()) == MEMEST_ERR_STRUCT_SIZE);
    CHECK(std::string(memest_last_error_field()) == "model.struct_size");
    CHECK(small.untouched());
  }
  SUBCASE("memest_model_from_config_json") {
    Sentinel<memest_model> m;
    const std::pair<const char*, std::pair<memest_status, const char*>> bad[] = {
        {"{\"hidden_size\": 4096", {MEMEST_ERR_PARSE, ""}},
        {"{\"hidden_size\": 1e999}", {MEMEST_ERR_PARSE, ""}},
        {"{\"hidden_size\": 64, \"hidden_size\": 64}", {MEMEST_ERR_PARSE, ""}},
        {"[1, 2]", {MEMEST_ERR_TYPE, "model"}},
        {"{\"model_type\": \"llama\", \"hidden_size\": 4096, \"num_hidden_layers\": 32, "
         "\"num_attention_heads\": 32, \"num_key_value_heads\": 5, \"intermediate_size\": 11008, "
         "\"vocab_size\": 32000}",
         {MEMEST_ERR_INVALID_ARGUMENT, "model.num_key_value_heads"}},
    };
    for (const auto& b : bad) {
      CAPTURE(b.first);
      CHECK(memest_status_name(memest_model_from_config_json(b.first, m.get())) ==
            std::string(memest_status_name(b.second.first)));
      CHECK(std::string(memest_last_error_field()) == b.second.second);
      CHECK(m.untouched());
    }
    CHECK(memest_model_from_config_json(nullptr, m.get()) == MEMEST_ERR_NULL_POINTER);
    CHECK(std::string(memest_last_error_field()) == "config_json");
    CHECK(m.untouched());
  }
  SUBCASE("memest_gpu_from_preset") {
    Sentinel<memest_gpu> g;
    CHECK(memest_gpu_from_preset("a100-41gb", g.get()) == MEMEST_ERR_UNKNOWN_PRESET);
    CHECK(std::string(memest_last_error_field()) == "gpu");
    CHECK(g.untouched());
    Sentinel<memest_gpu> big(sizeof(memest_gpu) + 8);
    CHECK(memest_gpu_from_preset("a100-40gb", big.get()) == MEMEST_ERR_STRUCT_SIZE);
    CHECK(std::string(memest_last_error_field()) == "gpu.struct_size");
    CHECK(big.untouched());
  }
  SUBCASE("memest_model_parameter_count") {
    Inputs in;
    Sentinel<memest_param_count> count;
    in.model.num_attention_heads = 0;
    CHECK(memest_model_parameter_count(&in.model, count.get()) == MEMEST_ERR_INVALID_ARGUMENT);
    CHECK(std::string(memest_last_error_field()) == "model.num_attention_heads");
    CHECK(count.untouched());
    CHECK(memest_model_parameter_count(nullptr, count.get()) == MEMEST_ERR_MISSING_FIELD);
    CHECK(std::string(memest_last_error_field()) == "model");
    CHECK(count.untouched());
    Inputs ok;
    Sentinel<memest_param_count> small(8);
    CHECK(memest_model_parameter_count(&ok.model, small.get()) == MEMEST_ERR_STRUCT_SIZE);
    CHECK(std::string(memest_last_error_field()) == "count.struct_size");
    CHECK(small.untouched());
  }
  SUBCASE("_init functions with a bad size write nothing") {
    Sentinel<memest_model> m;
    CHECK(memest_model_init(m.get(), 0) == MEMEST_ERR_STRUCT_SIZE);
    CHECK(std::string(memest_last_error_field()) == "model.struct_size");
    CHECK(m.untouched());
    Sentinel<memest_gpu> g;
    CHECK(memest_gpu_init(g.get(), sizeof(memest_gpu) + 8) == MEMEST_ERR_STRUCT_SIZE);
    CHECK(std::string(memest_last_error_field()) == "gpu.struct_size");
    CHECK(g.untouched());
    Sentinel<memest_pretrain_request> p;
    CHECK(memest_pretrain_request_init(p.get(), 7) == MEMEST_ERR_STRUCT_SIZE);
    CHECK(std::string(memest_last_error_field()) == "request.struct_size");
    CHECK(p.untouched());
    Sentinel<memest_search_request> s;
    CHECK(memest_search_request_init(s.get(), sizeof(memest_search_request) + 8) == MEMEST_ERR_STRUCT_SIZE);
    CHECK(s.untouched());
    Sentinel<memest_layout> l;
    CHECK(memest_layout_init(l.get(), 4) == MEMEST_ERR_STRUCT_SIZE);
    CHECK(std::string(memest_last_error_field()) == "layout.struct_size");
    CHECK(l.untouched());
    Sentinel<memest_finetune_request> f;
    CHECK(memest_finetune_request_init(f.get(), 0) == MEMEST_ERR_STRUCT_SIZE);
    CHECK(f.untouched());
    Sentinel<memest_model_states_request> ms;
    CHECK(memest_model_states_request_init(ms.get(), sizeof(memest_model_states_request) + 8) ==
          MEMEST_ERR_STRUCT_SIZE);
    CHECK(ms.untouched());
    CHECK(memest_model_init(nullptr, sizeof(memest_model)) == MEMEST_ERR_NULL_POINTER);
    CHECK(std::string(memest_last_error_field()) == "model");
  }
  SUBCASE("memest_request_json: a NULL response pointer is refused, nothing allocated") {
    CHECK(memest_request_json("{\"mode\": \"presets\"}", nullptr) == MEMEST_ERR_NULL_POINTER);
    CHECK(std::string(memest_last_error_field()) == "response_json");
  }
}
