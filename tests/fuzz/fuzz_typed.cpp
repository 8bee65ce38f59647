// Fuzz target for the typed C API: the input is read as a mode, a model and a GPU preset, then
// a sequence of (field, value) pairs set on a valid starting request — struct sizes and
// element sizes included — before the typed entry point of that mode is called. Built as a
// libFuzzer target with clang (-DMEMEST_FUZZ=ON, scripts/fuzz.sh), and always as a corpus
// replay test (replay_main.cpp, corpus_typed/) with no libFuzzer needed.
//
// Findings (abort):
//  - MEMEST_ERR_INTERNAL, or a status outside the enumeration, or memest_last_error_code()
//    disagreeing with the status returned;
//  - on failure, any byte of any output (result struct, stage / entry / option array, prune
//    counts, model or GPU) changed: the header promises out-parameters are untouched;
//  - on success, a non-finite number in a written output, a byte written past the caller's
//    struct_size or element size or past the elements reported, or a broken invariant
//    (stage_count = pp, dp * tp * cp * pp = gpus, count = min(ranked, capacity)).
//
// Encoding (tests/fuzz/make_typed_seeds.py writes seeds in it):
//   byte 0: mode (mod kModes), byte 1: model preset index, byte 2: GPU preset index,
//   then repeated: field byte (mod kFieldCount), value (see Reader: 1 selector byte, plus 4
//   or 8 raw bytes when the selector asks for them). Modes 8 and 9 pass the rest of the
//   input as a text (a config.json, a preset id) instead.
// Search spaces are capped (max_tp, max_cp, max_pp <= 4, max_vpp <= 2, max_micro_batch <= 4
// when in range) so that one run stays fast; out-of-range maxima are kept to test checks.
// Likewise the fine-tuning chunk-size search runs on models of up to 256 layers only.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "memest/memest.h"

namespace {

constexpr unsigned char kSentinel = 0xA5;

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "fuzz_typed: %s (last error: %s [%s] %s)\n", what,
               memest_status_name(memest_last_error_code()), memest_last_error_field(),
               memest_last_error());
  std::abort();
}

// ---- reading the input

struct Reader {
  const uint8_t* data;
  size_t size;
  size_t pos = 0;

  bool done() const { return pos >= size; }
  uint8_t byte() { return pos < size ? data[pos++] : 0; }
  uint64_t raw(int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(byte()) << (8 * i);
    return v;
  }

  int64_t integer() {
    static const int64_t table[] = {
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 24, 32, 40, 48, 64, 80, 96, 100, 126, 128,
        256, 512, 1000, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 1 << 20,
        (1 << 20) + 1, 1 << 24, (1 << 24) + 1, 3 << 20, int64_t{1} << 31, int64_t{1} << 40,
        (int64_t{1} << 40) + 1, int64_t{1000000007}, int64_t{1} << 62, -1, -2, -8,
        std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
        std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()};
    const uint8_t s = byte();
    if (s >= 248) return static_cast<int64_t>(raw(8));
    if (s >= 224) return s - 224;  // 0..23
    return table[s % (sizeof table / sizeof table[0])];
  }

  double number() {
    static const double gib = 1073741824.0;
    static const double table[] = {
        0.0, -0.0, 0.125, 0.5, 1, 2, 4, 8, 12, 16, 64, 65, 1e-310, 1e-307, 5e-324,
        std::numeric_limits<double>::min(), 1e-3, 1.0 / 1024, 1e3, 1e6, 1e9, 1e12, 1e13, 1e15,
        gib, 16 * gib, 40 * gib, 80 * gib, 1e6 * gib, 2e6 * gib, 1e300,
        std::numeric_limits<double>::max(), std::numeric_limits<double>::infinity(),
        -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN(), -1,
        -1e-310, 312, 989, 0.84, 0.55, 2097152, 536870912, 0.2, 1e-9};
    const uint8_t s = byte();
    if (s >= 240) {
      const uint64_t bits = raw(8);
      double d;
      std::memcpy(&d, &bits, sizeof d);
      return d;
    }
    if (s >= 208) return static_cast<double>(s - 208);  // 0..31
    return table[s % (sizeof table / sizeof table[0])];
  }

  // A struct_size or element size: mostly the right one, sometimes a wrong one.
  uint32_t size_for(uint32_t good) {
    const uint8_t s = byte();
    switch (s % 16) {
      case 0: return 0;
      case 1: return good + 8;
      case 2: return good - 1;
      case 3: return good + 1;
      case 4: return good - 8;
      case 5: return 4;
      case 6: return static_cast<uint32_t>(raw(4));
      case 7: return 0xFFFFFFFFu;
      default: return good;
    }
  }
};

// ---- outputs: sentinel-filled buffers, checked after the call

// A caller buffer of `count` elements `stride` bytes apart (stride may be any value), filled
// with the sentinel, with struct_size written at the start of each element when it fits.
struct Buffer {
  std::vector<unsigned char> bytes;
  uint32_t stride = 0;
  uint32_t count = 0;

  void make(uint32_t element_size, uint32_t capacity, uint32_t struct_size_value) {
    stride = element_size;
    count = capacity;
    bytes.assign(static_cast<size_t>(element_size) * capacity + 64, kSentinel);
    for (uint32_t i = 0; i < capacity && element_size >= 4; ++i) {
      std::memcpy(&bytes[static_cast<size_t>(i) * element_size], &struct_size_value, 4);
    }
  }
  void* data() { return bytes.data(); }
  const unsigned char* at(uint32_t i) const { return &bytes[static_cast<size_t>(i) * stride]; }
  // Untouched but for the struct_size the test wrote (and the guard after the elements).
  bool untouched_from(uint32_t first) const {
    for (size_t i = static_cast<size_t>(first) * stride; i < bytes.size(); ++i) {
      const size_t in_element = stride ? i % stride : i;
      if (i < static_cast<size_t>(count) * stride && stride >= 4 && in_element < 4) continue;
      if (bytes[i] != kSentinel) return false;
    }
    return true;
  }
};

// An output struct: filled with the sentinel, then its struct_size.
template <typename T>
struct Out {
  unsigned char bytes[sizeof(T) + 32];
  explicit Out(uint32_t struct_size) {
    std::memset(bytes, kSentinel, sizeof bytes);
    std::memcpy(bytes, &struct_size, 4);
  }
  T* get() { return reinterpret_cast<T*>(bytes); }
  uint32_t struct_size() const {
    uint32_t s;
    std::memcpy(&s, bytes, 4);
    return s;
  }
  // Every byte after struct_size, from `from` on, still the sentinel.
  bool untouched_from(size_t from) const {
    for (size_t i = from < 4 ? 4 : from; i < sizeof bytes; ++i)
      if (bytes[i] != kSentinel) return false;
    return true;
  }
  bool untouched() const { return untouched_from(4); }
};

// Offsets of the double fields of each output struct (the finiteness check).
#define D(type, field) offsetof(type, field)
const size_t kPretrainResultDoubles[] = {
    D(memest_pretrain_result, num_parameters), D(memest_pretrain_result, estimate_bytes),
    D(memest_pretrain_result, peak_bytes),     D(memest_pretrain_result, capacity_bytes),
    D(memest_pretrain_result, usage_fraction), D(memest_pretrain_result, paper_peak_bytes)};
const size_t kStageDoubles[] = {
    D(memest_stage, microbatches_in_flight), D(memest_stage, parameters),
    D(memest_stage, weights_bytes),          D(memest_stage, gradients_bytes),
    D(memest_stage, optimizer_bytes),        D(memest_stage, activations_bytes),
    D(memest_stage, total_bytes),            D(memest_stage, context_bytes),
    D(memest_stage, comm_buffer_bytes),      D(memest_stage, logits_bytes),
    D(memest_stage, activation_correction_bytes), D(memest_stage, fragmentation_bytes),
    D(memest_stage, overhead_bytes),         D(memest_stage, peak_bytes)};
const size_t kStatesDoubles[] = {
    D(memest_model_states_result, num_parameters), D(memest_model_states_result, weights_bytes),
    D(memest_model_states_result, gradients_bytes), D(memest_model_states_result, optimizer_bytes),
    D(memest_model_states_result, estimate_bytes), D(memest_model_states_result, capacity_bytes)};
const size_t kEntryDoubles[] = {
    D(memest_search_entry, estimate_bytes), D(memest_search_entry, peak_bytes),
    D(memest_search_entry, capacity_bytes), D(memest_search_entry, tflops_per_gpu),
    D(memest_search_entry, tokens_per_s),   D(memest_search_entry, step_seconds),
    D(memest_search_entry, bubble_fraction)};
const size_t kOptionDoubles[] = {D(memest_finetune_option, score),
                                 D(memest_finetune_option, peak_bytes)};
const size_t kParamCountDoubles[] = {D(memest_param_count, total), D(memest_param_count, embedding),
                                     D(memest_param_count, per_layer), D(memest_param_count, lm_head)};
#undef D

std::vector<size_t> finetune_result_doubles() {
  std::vector<size_t> v = {offsetof(memest_finetune_result, num_parameters),
                           offsetof(memest_finetune_result, peak_bytes),
                           offsetof(memest_finetune_result, capacity_bytes),
                           offsetof(memest_finetune_result, usage_fraction),
                           offsetof(memest_finetune_result, chunk_elements),
                           offsetof(memest_finetune_result, chunk_count),
                           offsetof(memest_finetune_result, chunk_waste_bytes)};
  for (size_t part : {offsetof(memest_finetune_result, parts), offsetof(memest_finetune_result, per_gpu)}) {
    for (size_t i = 0; i < sizeof(memest_finetune_parts) / sizeof(double); ++i) {
      v.push_back(part + i * sizeof(double));
    }
  }
  return v;
}

template <size_t N>
void require_finite(const unsigned char* p, uint32_t size, const size_t (&offsets)[N], const char* what) {
  for (size_t off : offsets) {
    if (off + sizeof(double) > size) continue;  // not in the caller's (older) layout
    double d;
    std::memcpy(&d, p + off, sizeof d);
    if (!std::isfinite(d)) finding(what);
  }
}
void require_finite(const unsigned char* p, uint32_t size, const std::vector<size_t>& offsets,
                    const char* what) {
  for (size_t off : offsets) {
    if (off + sizeof(double) > size) continue;
    double d;
    std::memcpy(&d, p + off, sizeof d);
    if (!std::isfinite(d)) finding(what);
  }
}

template <typename V>
V read_at(const unsigned char* p, size_t offset) {
  V v;
  std::memcpy(&v, p + offset, sizeof v);
  return v;
}

// ---- the request state the field ops mutate

struct State {
  memest_model model;
  memest_gpu gpu;
  memest_model_states_request states;
  memest_pretrain_request pretrain;
  memest_search_request search;
  memest_layout layouts[4];
  memest_finetune_request finetune;
  // pointers the call receives (NULL when an op says so)
  bool null_request = false, null_result = false, null_model = false, null_gpu = false,
       null_base = false, null_array = false, null_pruned = false;
  // outputs
  uint32_t result_size = 0;      // struct_size of the result (0: set from sizeof)
  uint32_t element_size = 0;     // stages / entries / options (0: sizeof)
  uint32_t capacity = 4;         // stages / entries / options
  uint32_t pruned_capacity = MEMEST_PRUNE_REASON_COUNT;
  uint32_t layout_count = 0;
  uint32_t layout_stride = sizeof(memest_layout);
  bool result_size_set = false, element_size_set = false;
  std::string pipeline_layout;  // pretrain.pipeline_layout points here when set (1.7)
};

// Fields 0-63 are the 1.0 layout's (the corpus's seeds use them); 64 on reach the fields
// appended since: the training stack (1.2), MoE, adapters (1.3), the step-time model (1.5),
// the precision policy (1.6), pipeline layouts and DDP (1.7), hybrid layer patterns and mixers
// (1.8: fields 80-82), chunked losses, FSDP1's mixed flat parameters and NVFP4 (1.9: fields
// 83-85), Megatron's recompute modules (1.11: field 86), Liger-Kernel (1.12: field 87), the optimizer's storage
// (1.15: fields 88-89).
constexpr int kFieldCount = 90;

// Layout strings for pretrain.pipeline_layout: valid ones for the presets' depths, Megatron's
// documented DeepSeek-V3 example, and malformed ones (the parser's refusals).
const char* const kLayouts[] = {
    "Et*3|(tt|)*29,m|L", "Et|t|t|tL", "E(t|)*31,tL", "Et*15|t*16L", "Et*40|t*40L", "E|L",
    "", "Et*|L", "E(tt|L", "E((t)*2)*2|L", "tE|L", "Et|xL", "Et*99999999999|L", "Em|t|L",
    "(|)*99999", "Et*0|L", "E,,,|,L", "(E)*1|(t)*2|L", "Et|m|t|L", "EtL|"};

// Hybrid layer patterns (memest_model.mixer_pattern / mlp_pattern), valid and malformed.
const char* const kPatterns[] = {"MAMA", "M-A-", "GGGA", "PPPP", "MMMM", "----", "-D-D", "EEEE",
                                 "DE-D", "AAAA", "DDDD", "M", "MMMMMMMM", "MxMA", "E-E-", "G-G-",
                                 "", "SASA", "KKKA", "SSMS", "KGKA", "S-S-"};

void apply(State& s, uint8_t field, Reader& in) {
  memest_pretrain_request& p = s.pretrain;
  memest_finetune_request& f = s.finetune;
  switch (field % kFieldCount) {
    // model
    case 0: s.model.hidden_size = in.integer(); break;
    case 1: s.model.num_hidden_layers = in.integer(); break;
    case 2: s.model.num_attention_heads = in.integer(); break;
    case 3: s.model.num_key_value_heads = in.integer(); break;
    case 4: s.model.head_dim = in.integer(); break;
    case 5: s.model.intermediate_size = in.integer(); break;
    case 6: s.model.vocab_size = in.integer(); break;
    case 7: s.model.max_position_embeddings = in.integer(); break;
    case 8: s.model.learned_position_rows = in.integer(); break;
    case 9: s.model.family = static_cast<int32_t>(in.integer()); break;
    case 10: {  // one of the int32 flags of the model
      const uint8_t which = in.byte();
      const int32_t v = static_cast<int32_t>(in.integer());
      int32_t* flags[] = {&s.model.tie_word_embeddings, &s.model.gated_mlp, &s.model.norm_type,
                          &s.model.norms_per_layer, &s.model.attention_qkv_bias,
                          &s.model.attention_out_bias, &s.model.mlp_bias, &s.model.embedding_norm,
                          &s.model.final_norm, &s.model.lm_head_bias, &s.model.fused_qkv,
                          &s.model.logits_fp32};
      *flags[which % (sizeof flags / sizeof flags[0])] = v;
      break;
    }
    case 11: s.model.num_parameters = in.number(); break;
    case 12: s.model.struct_size = in.size_for(sizeof(memest_model)); break;
    // GPU
    case 13: s.gpu.memory_bytes = in.number(); break;
    case 14: s.gpu.gpus_per_node = static_cast<int32_t>(in.integer()); break;
    case 15: s.gpu.peak_bf16_tflops = in.number(); break;
    case 16: {  // one of the double fields of the device profile
      const uint8_t which = in.byte();
      double* fields[] = {&s.gpu.context_bytes, &s.gpu.page_bytes, &s.gpu.cp_buffer_bytes,
                          &s.gpu.fragmentation, &s.gpu.gemm_efficiency, &s.gpu.gemm_half_tokens,
                          &s.gpu.attention_efficiency, &s.gpu.cp_attention_penalty,
                          &s.gpu.tp_bandwidth_gbps, &s.gpu.intra_node_gbps, &s.gpu.inter_node_gbps,
                          &s.gpu.pipeline_stage_seconds,
                          // appended in 1.2 .. 1.17 (the step-time model's profile)
                          &s.gpu.pcie_gbps, &s.gpu.fp8, &s.gpu.peak_fp8_tflops, &s.gpu.hbm_gbps,
                          &s.gpu.gemm_half_dim, &s.gpu.attention_half_seq,
                          &s.gpu.kernel_overhead_us, &s.gpu.intra_node_latency_us,
                          &s.gpu.inter_node_latency_us, &s.gpu.fp8_gemm_efficiency,
                          &s.gpu.fa2_attention_efficiency, &s.gpu.triton_attention_efficiency};
      *fields[which % (sizeof fields / sizeof fields[0])] = in.number();
      break;
    }
    case 17: s.gpu.struct_size = in.size_for(sizeof(memest_gpu)); break;
    // pretraining (and the search's base)
    case 18: p.gpus = in.integer(); break;
    case 19: p.tp = in.integer(); break;
    case 20: p.cp = in.integer(); break;
    case 21: p.pp = in.integer(); break;
    case 22: p.vpp = in.integer(); break;
    case 23: p.sequence_parallel = static_cast<int32_t>(in.integer()); break;
    case 24: p.zero = static_cast<int32_t>(in.integer()); break;
    case 25: p.seq_len = in.integer(); break;
    case 26: p.micro_batch = in.integer(); break;
    case 27: p.global_batch = in.integer(); break;
    case 28: p.recompute = static_cast<int32_t>(in.integer()); break;
    case 29: p.flash_attention = static_cast<int32_t>(in.integer()); break;
    case 30: p.activation_model = static_cast<int32_t>(in.integer()); break;
    case 31: p.param_bytes = in.number(); break;
    case 32: p.grad_bytes = in.number(); break;
    case 33: p.optimizer_bytes = in.number(); break;
    case 34: p.uneven_pipeline = static_cast<int32_t>(in.integer()); break;
    case 35: p.struct_size = in.size_for(sizeof p); break;
    // search
    case 36: s.search.max_tp = in.integer(); break;
    case 37: s.search.max_cp = in.integer(); break;
    case 38: s.search.max_pp = in.integer(); break;
    case 39: s.search.max_vpp = in.integer(); break;
    case 40: s.search.max_micro_batch = in.integer(); break;
    case 41: s.search.recompute_mask = static_cast<uint32_t>(in.integer()); break;
    case 42: s.search.zero_mask = static_cast<uint32_t>(in.integer()); break;
    case 43: s.search.tp_within_node = static_cast<int32_t>(in.integer()); break;
    case 44: s.search.include_oom = static_cast<int32_t>(in.integer()); break;
    case 45: s.search.uneven_pipeline = static_cast<int32_t>(in.integer()); break;
    case 46: s.search.struct_size = in.size_for(sizeof s.search); break;
    case 47: {  // one field of one shortlist layout
      memest_layout& l = s.layouts[in.byte() % 4];
      switch (in.byte() % 8) {
        case 0: l.tp = in.integer(); break;
        case 1: l.cp = in.integer(); break;
        case 2: l.pp = in.integer(); break;
        case 3: l.vpp = in.integer(); break;
        case 4: l.micro_batch = in.integer(); break;
        case 5: l.recompute = static_cast<int32_t>(in.integer()); break;
        case 6: l.zero = static_cast<int32_t>(in.integer()); break;
        default: l.struct_size = in.size_for(sizeof l); break;
      }
      break;
    }
    case 48: s.layout_count = in.byte() % 5; break;
    // fine-tuning
    case 49: f.gpus = in.integer(); break;
    case 50: f.method = static_cast<int32_t>(in.integer()); break;
    case 51: f.tp = in.integer(); break;
    case 52: f.batch = in.integer(); break;
    case 53: f.seq_len = in.integer(); break;
    case 54: f.gradient_checkpointing = static_cast<int32_t>(in.integer()); break;
    case 55: f.flash_attention = static_cast<int32_t>(in.integer()); break;
    case 56: f.param_bytes = in.number(); break;
    case 57: f.base_bytes = in.number(); break;
    case 58: f.page_bytes = in.number(); break;
    case 59: f.chunk_bytes = in.number(); break;
    case 60: f.struct_size = in.size_for(sizeof f); break;
    // model states
    case 61: {
      memest_model_states_request& m = s.states;
      switch (in.byte() % 6) {
        case 0: m.gpus = in.integer(); break;
        case 1: m.zero = static_cast<int32_t>(in.integer()); break;
        case 2: m.param_bytes = in.number(); break;
        case 3: m.grad_bytes = in.number(); break;
        case 4: m.optimizer_bytes = in.number(); break;
        default: m.struct_size = in.size_for(sizeof m); break;
      }
      break;
    }
    // outputs and pointers
    case 62: {
      switch (in.byte() % 12) {
        case 0: s.result_size = static_cast<uint32_t>(in.integer()); s.result_size_set = true; break;
        case 1: s.element_size = static_cast<uint32_t>(in.integer()); s.element_size_set = true; break;
        case 2: s.capacity = in.byte() % 17; break;
        case 3: s.pruned_capacity = in.byte() % 17; break;
        case 4: s.null_request = true; break;
        case 5: s.null_result = true; break;
        case 6: s.null_model = true; break;
        case 7: s.null_gpu = true; break;
        case 8: s.null_base = true; break;
        case 9: s.null_array = true; break;
        case 10: s.null_pruned = true; break;
        default: s.layout_stride = in.size_for(sizeof(memest_layout)); break;
      }
      break;
    }
    // ---- appended fields (1.2 - 1.7)
    case 64: p.framework = static_cast<int32_t>(in.integer()); break;
    case 65: {  // the stack's int32 switches
      const uint8_t which = in.byte();
      const int32_t v = static_cast<int32_t>(in.integer());
      int32_t* flags[] = {&p.optimizer, &p.optimizer_in_backward, &p.loss, &p.fp8, &p.compile,
                          &p.offload_optimizer, &p.offload_params, &p.offload_activations,
                          &p.ddp_gradient_as_bucket_view, &p.adapter, &p.double_quant,
                          &p.comm_overlap, &p.moe_dispatcher, &p.attention_kernel,
                          &p.loss_parallel, &p.autocast, &p.fp8_all_gather, &p.no_sync,
                          &p.quantize_lm_head, &p.logits_held, &p.ddp};
      *flags[which % (sizeof flags / sizeof flags[0])] = v;
      break;
    }
    case 66: {  // the stack's sizes and the adapter's numbers
      const uint8_t which = in.byte();
      double* fields[] = {&p.ddp_bucket_mib, &p.ds_reduce_bucket_size, &p.ds_allgather_bucket_size,
                          &p.ds_prefetch_bucket_size, &p.ds_max_live_parameters,
                          &p.ds_param_persistence_threshold, &p.moe_capacity_factor,
                          &p.lora_alpha, &p.lora_dropout, &p.adapter_bytes, &p.reduce_bytes};
      *fields[which % (sizeof fields / sizeof fields[0])] = in.number();
      break;
    }
    case 67: p.recompute_every = in.integer(); break;
    case 68: p.ep = in.integer(); break;
    case 69: p.etp = in.integer(); break;
    case 70: p.last_stage_layers = in.integer(); break;
    case 71: p.first_stage_layers = in.integer(); break;
    case 72: p.lora_rank = in.integer(); break;
    case 73: p.lora_targets = static_cast<uint32_t>(in.integer()); break;
    case 74: {  // a layout string: one of the table's, or the input's next bytes as text
      const uint8_t which = in.byte();
      if (which < 200) {
        s.pipeline_layout = kLayouts[which % (sizeof kLayouts / sizeof kLayouts[0])];
      } else {
        const size_t n = in.byte();
        s.pipeline_layout.clear();
        for (size_t i = 0; i < n && !in.done(); ++i) {
          const char c = static_cast<char>(in.byte());
          if (c != '\0') s.pipeline_layout += c;
        }
      }
      p.pipeline_layout = s.pipeline_layout.c_str();
      break;
    }
    case 75: p.pipeline_layout = nullptr; break;
    case 76: {  // the model's mixture-of-experts and latent-attention fields
      const uint8_t which = in.byte();
      const int64_t v = in.integer();
      int64_t* fields[] = {&s.model.num_experts, &s.model.num_experts_per_tok,
                           &s.model.moe_intermediate_size, &s.model.num_shared_experts,
                           &s.model.shared_expert_intermediate_size,
                           &s.model.moe_first_dense_layers, &s.model.moe_layer_step,
                           &s.model.q_lora_rank, &s.model.kv_lora_rank,
                           &s.model.qk_nope_head_dim, &s.model.qk_rope_head_dim,
                           &s.model.v_head_dim, &s.model.mtp_layers, &s.model.index_n_heads,
                           &s.model.index_head_dim};
      *fields[which % (sizeof fields / sizeof fields[0])] = v;
      break;
    }
    case 77: {  // the model's int32 switches appended since 1.0
      const uint8_t which = in.byte();
      const int32_t v = static_cast<int32_t>(in.integer());
      int32_t* flags[] = {&s.model.router_bias, &s.model.shared_expert_gate, &s.model.qk_norm,
                          &s.model.attention_sinks, &s.model.fused_gate_up,
                          &s.model.vision_excluded};
      *flags[which % (sizeof flags / sizeof flags[0])] = v;
      break;
    }
    case 78: {  // the search's appended fields, and a shortlist layout's ep / etp
      switch (in.byte() % 6) {
        case 0: s.search.max_ep = in.integer(); break;
        case 1: s.search.fp8_options = static_cast<uint32_t>(in.integer()); break;
        case 2: s.search.compile_options = static_cast<uint32_t>(in.integer()); break;
        case 3: s.search.max_oom_probability = in.number(); break;
        case 4: s.layouts[in.byte() % 4].ep = in.integer(); break;
        default: s.layouts[in.byte() % 4].etp = in.integer(); break;
      }
      break;
    }
    case 79: s.model.final_logit_softcapping = in.number(); break;
    case 80: {  // a hybrid pattern: the table's, the input's bytes, or unterminated
      char* dst = in.byte() % 2 ? s.model.mixer_pattern : s.model.mlp_pattern;
      const size_t size = sizeof s.model.mixer_pattern;
      const uint8_t which = in.byte();
      if (which < 200) {
        const char* src = kPatterns[which % (sizeof kPatterns / sizeof kPatterns[0])];
        std::memcpy(dst, src, std::strlen(src) + 1);
      } else if (which < 250) {
        size_t n = in.byte();
        n = std::min(n * 5, size - 1);  // up to 1020 characters
        size_t i = 0;
        for (; i < n && !in.done(); ++i) dst[i] = static_cast<char>(in.byte());
        dst[i] = '\0';
      } else {
        std::memset(dst, 'M', size);  // no NUL within the array
      }
      break;
    }
    case 81: {  // the hybrid mixers' dimensions
      const uint8_t which = in.byte();
      const int64_t v = in.integer();
      int64_t* fields[] = {&s.model.mamba_num_heads, &s.model.mamba_head_dim,
                           &s.model.mamba_state_size, &s.model.mamba_groups,
                           &s.model.mamba_conv_kernel, &s.model.linear_key_heads,
                           &s.model.linear_value_heads, &s.model.linear_key_head_dim,
                           &s.model.linear_value_head_dim, &s.model.linear_conv_kernel,
                           &s.model.mamba_dt_rank};
      *fields[which % (sizeof fields / sizeof fields[0])] = v;
      break;
    }
    case 82: {  // the hybrid mixers' switches
      const uint8_t which = in.byte();
      const int32_t v = static_cast<int32_t>(in.integer());
      int32_t* flags[] = {&s.model.mamba_proj_bias, &s.model.mamba_conv_bias, &s.model.mamba_norm,
                          &s.model.attention_output_gate};
      *flags[which % (sizeof flags / sizeof flags[0])] = v;
      break;
    }
    // ---- appended in 1.9
    case 83: p.loss_chunks = static_cast<int32_t>(in.integer()); break;
    case 84: {  // the request's 1.9 switches
      const int32_t v = static_cast<int32_t>(in.integer());
      (in.byte() % 2 ? p.fsdp_use_orig_params : p.fp4) = v;
      break;
    }
    case 85: {  // the GPU's NVFP4 fields
      const double v = in.number();
      (in.byte() % 2 ? s.gpu.fp4 : s.gpu.peak_fp4_tflops) = v;
      break;
    }
    // ---- appended in 1.11
    case 86: p.recompute_modules = static_cast<uint32_t>(in.integer()); break;
    // ---- appended in 1.12
    case 87: p.use_liger_kernel = static_cast<int32_t>(in.integer()); break;
    // ---- appended in 1.15
    case 88: p.master_weights = static_cast<int32_t>(in.integer()); break;
    case 89: p.optimizer_state_bytes = in.number(); break;
    default: {  // a wrong struct size for the output (relative to sizeof)
      s.result_size_set = true;
      s.result_size = 0;  // resolved per mode: marker for "size_for(sizeof result)"
      s.element_size_set = true;
      s.element_size = 1;  // resolved per mode: "sizeof - 1"
      break;
    }
  }
}

// Caps a search maximum that is in range to a small value (fast runs); out of range stays.
void cap(int64_t& v, int64_t in_range_max, int64_t small) {
  if (v >= 0 && v <= in_range_max) v = 1 + v % small;
}

void check_status(memest_status status) {
  if (status == MEMEST_ERR_INTERNAL) finding("MEMEST_ERR_INTERNAL");
  if (status < 0 || status >= MEMEST_STATUS_COUNT) finding("status out of range");
  if (memest_last_error_code() != status) finding("memest_last_error_code() disagrees");
  if (status != MEMEST_OK && memest_last_error()[0] == '\0') finding("failure without a message");
}

uint32_t resolve(bool set, uint32_t value, uint32_t good) {
  if (!set) return good;
  if (value == 1) return good - 1;
  if (value == 0) return good + 8;
  return value;
}

// Checks the result struct: untouched on failure; on success finite and written only up to
// its struct_size.
template <typename T, typename Offsets>
void check_result(memest_status status, const Out<T>& out, const Offsets& doubles, const char* what) {
  if (status != MEMEST_OK) {
    if (!out.untouched()) finding("a failed call wrote its result");
    return;
  }
  const uint32_t size = out.struct_size();
  if (size > sizeof(T)) finding("success with a struct_size above sizeof");
  if (!out.untouched_from(size)) finding("a result was written past its struct_size");
  require_finite(out.bytes, size, doubles, what);
}

// Checks an element array: untouched on failure; on success the first `written` elements
// finite and nothing after them (or past the element size) written.
template <typename Offsets>
void check_array(memest_status status, const Buffer& b, uint32_t written, const Offsets& doubles,
                 size_t full_size, const char* what) {
  if (status != MEMEST_OK) {
    if (!b.untouched_from(0)) finding("a failed call wrote into a caller array");
    return;
  }
  if (written > b.count) finding("more elements written than the capacity");
  for (uint32_t i = 0; i < written; ++i) {
    if (read_at<uint32_t>(b.at(i), 0) != b.stride) finding("element struct_size is not the element size");
    require_finite(b.at(i), b.stride, doubles, what);
    (void)full_size;
  }
  if (!b.untouched_from(written)) finding("an element past those reported was written");
}

void run_typed(Reader& in) {
  const uint8_t mode = in.byte();
  State s;
  memest_model_init(&s.model, sizeof s.model);
  memest_gpu_init(&s.gpu, sizeof s.gpu);
  const uint32_t models = memest_model_preset_count();
  const uint32_t gpus = memest_gpu_preset_count();
  if (models == 0 || gpus == 0) finding("no presets");
  const uint8_t model_index = in.byte();
  const uint8_t gpu_index = in.byte();
  if (memest_model_from_preset(memest_model_preset_id(model_index % models), &s.model) != MEMEST_OK ||
      memest_gpu_from_preset(memest_gpu_preset_id(gpu_index % gpus), &s.gpu) != MEMEST_OK) {
    finding("a listed preset does not load");
  }

  memest_model_states_request_init(&s.states, sizeof s.states);
  memest_pretrain_request_init(&s.pretrain, sizeof s.pretrain);
  memest_search_request_init(&s.search, sizeof s.search);
  memest_finetune_request_init(&s.finetune, sizeof s.finetune);
  for (memest_layout& l : s.layouts) memest_layout_init(&l, sizeof l);
  // A starting point that runs for most presets: 8 GPUs, tp 2, pp 2, 64 sequences.
  s.states.gpus = 8;
  s.states.zero = 1;
  s.pretrain.gpus = 8;
  s.pretrain.tp = 2;
  s.pretrain.pp = 2;
  s.pretrain.global_batch = 64;
  s.search.max_tp = 2;
  s.search.max_cp = 1;
  s.search.max_pp = 2;
  s.search.max_vpp = 1;
  s.search.max_micro_batch = 2;
  s.finetune.gpus = 4;
  // A given chunk size (4e9 bytes: above every preset's largest chunked tensor) spares the
  // chunk-size search (32768 candidate sizes x every tensor, ~10 ms a call) unless an op
  // asks for it with chunk_bytes = 0.
  s.finetune.chunk_bytes = 4e9;
  s.layouts[1].tp = 2;
  s.layouts[2].pp = 2;
  s.layouts[3].tp = 2, s.layouts[3].pp = 2, s.layouts[3].recompute = MEMEST_RECOMPUTE_FULL;

  // Modes 8 and 9: the rest of the input as text.
  if (mode % 10 >= 8) {
    const std::string text(reinterpret_cast<const char*>(in.data + in.pos), in.size - in.pos);
    Out<memest_model> out(sizeof(memest_model));
    const memest_status status = mode % 10 == 8
                                     ? memest_model_from_config_json(text.c_str(), out.get())
                                     : memest_model_from_preset(text.c_str(), out.get());
    check_status(status);
    if (status != MEMEST_OK) {
      if (!out.untouched()) finding("a failed model call wrote its model");
      return;
    }
    if (memest_model_validate(out.get()) != MEMEST_OK) finding("a model the library wrote does not validate");
    Out<memest_param_count> count(sizeof(memest_param_count));
    check_status(memest_model_parameter_count(out.get(), count.get()));
    require_finite(count.bytes, sizeof(memest_param_count), kParamCountDoubles, "parameter count");
    return;
  }

  if (mode % 10 == 6) s.finetune.method = MEMEST_FINETUNE_AUTO;
  for (int ops = 0; !in.done() && ops < 64; ++ops) apply(s, in.byte(), in);

  const memest_model* model = s.null_model ? nullptr : &s.model;
  const memest_gpu* gpu = s.null_gpu ? nullptr : &s.gpu;
  s.states.model = model;
  s.states.gpu = gpu;
  s.pretrain.model = model;
  s.pretrain.gpu = gpu;
  s.finetune.model = model;
  s.finetune.gpu = gpu;
  s.search.base = s.null_base ? nullptr : &s.pretrain;

  // The chunk-size search packs 32768 candidate sizes; identical consecutive layers pack as one
  // run (60 ms at 100,000 layers, Release), but layers that alternate (an MoE step of 2) pack
  // one by one: keep the searched case to models of up to 256 layers so that one run stays fast.
  if ((mode % 10 == 5 || mode % 10 == 6) && s.finetune.chunk_bytes == 0 &&
      s.model.num_hidden_layers > 256 && s.model.num_hidden_layers <= 100000) {
    s.model.num_hidden_layers = 256;
  }

  switch (mode % 10) {
    case 0: {  // model states
      Out<memest_model_states_result> out(
          resolve(s.result_size_set, s.result_size, sizeof(memest_model_states_result)));
      const memest_status status = memest_model_states(s.null_request ? nullptr : &s.states,
                                                       s.null_result ? nullptr : out.get());
      check_status(status);
      check_result(status, out, kStatesDoubles, "model states");
      break;
    }
    case 1:
    case 2: {  // pretraining
      const uint32_t esize = resolve(s.element_size_set, s.element_size, sizeof(memest_stage));
      Out<memest_pretrain_result> out(
          resolve(s.result_size_set, s.result_size, sizeof(memest_pretrain_result)));
      Buffer stages;
      stages.make(esize > 4096 ? 4096 : esize, s.capacity, esize);
      const memest_status status =
          memest_pretrain(s.null_request ? nullptr : &s.pretrain, s.null_result ? nullptr : out.get(),
                          s.null_array ? nullptr : static_cast<memest_stage*>(stages.data()),
                          stages.stride, s.capacity);
      check_status(status);
      check_result(status, out, kPretrainResultDoubles, "pretrain result");
      uint32_t written = 0;
      if (status == MEMEST_OK) {
        const auto* r = out.get();
        if (out.struct_size() == sizeof *r) {
          if (r->stage_count != s.pretrain.pp) finding("stage_count != pp");
          if (static_cast<double>(r->dp) * static_cast<double>(s.pretrain.tp) *
                  static_cast<double>(s.pretrain.cp) * static_cast<double>(s.pretrain.pp) !=
              static_cast<double>(s.pretrain.gpus)) {
            finding("dp * tp * cp * pp != gpus");
          }
        }
        // pp is in range on success: one stage per pipeline rank, up to the capacity
        written = static_cast<uint32_t>(std::min<int64_t>(s.capacity, s.pretrain.pp));
      }
      check_array(status, stages, written, kStageDoubles, sizeof(memest_stage), "stage");
      break;
    }
    case 3:
    case 4: {  // search: the space (3) or a shortlist (4)
      cap(s.search.max_tp, int64_t{1} << 24, 4);
      cap(s.search.max_cp, int64_t{1} << 24, 4);
      cap(s.search.max_pp, int64_t{1} << 24, 4);
      if (s.search.max_vpp >= 1 && s.search.max_vpp <= 64) s.search.max_vpp = 1 + (s.search.max_vpp - 1) % 2;
      cap(s.search.max_micro_batch, int64_t{1} << 20, 4);
      // The shortlist: elements layout_stride bytes apart (the struct_size of layouts[0]).
      std::vector<unsigned char> shortlist;
      if (mode % 10 == 4) {
        const uint32_t count = s.layout_count ? s.layout_count : 2;
        const uint32_t stride = s.layout_stride <= sizeof(memest_layout) && s.layout_stride >= 4
                                    ? s.layout_stride
                                    : sizeof(memest_layout);
        shortlist.assign(static_cast<size_t>(stride) * count + sizeof(memest_layout), 0);
        for (uint32_t i = 0; i < count; ++i) {
          memest_layout l = s.layouts[i];
          if (l.struct_size == sizeof l) l.struct_size = s.layout_stride;
          std::memcpy(&shortlist[static_cast<size_t>(i) * stride], &l, stride);
        }
        s.search.layouts = reinterpret_cast<const memest_layout*>(shortlist.data());
        s.search.layout_count = count;
      }
      const uint32_t esize = resolve(s.element_size_set, s.element_size, sizeof(memest_search_entry));
      Out<memest_search_result> out(
          resolve(s.result_size_set, s.result_size, sizeof(memest_search_result)));
      Buffer entries;
      entries.make(esize > 4096 ? 4096 : esize, s.capacity, esize);
      std::vector<uint64_t> pruned(s.pruned_capacity + 4, 0xA5A5A5A5A5A5A5A5ull);
      const memest_status status = memest_search(
          s.null_request ? nullptr : &s.search, s.null_result ? nullptr : out.get(),
          s.null_array ? nullptr : static_cast<memest_search_entry*>(entries.data()), entries.stride,
          s.capacity, s.null_pruned ? nullptr : pruned.data(), s.pruned_capacity);
      check_status(status);
      check_result(status, out, std::vector<size_t>{}, "search result");
      uint32_t written = 0;
      if (status == MEMEST_OK) {
        const auto* r = out.get();
        if (out.struct_size() < offsetof(memest_search_result, ranked) + sizeof r->ranked) {
          finding("search result smaller than its first layout");
        }
        const uint64_t expected = std::min<uint64_t>(r->ranked, s.capacity);
        if (r->count != expected) finding("count != min(ranked, capacity)");
        written = r->count;
        uint64_t total = 0;
        for (uint32_t i = 0; i < s.pruned_capacity && i < MEMEST_PRUNE_REASON_COUNT; ++i) total += pruned[i];
        if (s.pruned_capacity >= MEMEST_PRUNE_REASON_COUNT && total != r->pruned_total) {
          finding("pruned counts do not add up to pruned_total");
        }
        for (uint32_t i = 0; i < written && entries.stride >= offsetof(memest_search_entry, dp) + 8; ++i) {
          memest_search_entry e;
          std::memcpy(&e, entries.at(i), offsetof(memest_search_entry, dp) + 8);
          if (static_cast<double>(e.dp) * static_cast<double>(e.tp) * static_cast<double>(e.cp) *
                  static_cast<double>(e.pp) != static_cast<double>(s.pretrain.gpus)) {
            finding("entry: dp * tp * cp * pp != gpus");
          }
          if (e.micro_batch > (int64_t{1} << 20)) finding("entry: micro-batch above the limit");
        }
      }
      for (uint32_t i = (status == MEMEST_OK ? std::min<uint32_t>(s.pruned_capacity, MEMEST_PRUNE_REASON_COUNT) : 0);
           i < pruned.size(); ++i) {
        if (pruned[i] != 0xA5A5A5A5A5A5A5A5ull) finding("prune counts written past the capacity or on failure");
      }
      check_array(status, entries, written, kEntryDoubles, sizeof(memest_search_entry), "search entry");
      break;
    }
    case 5: {  // fine-tuning, one method
      Out<memest_finetune_result> out(
          resolve(s.result_size_set, s.result_size, sizeof(memest_finetune_result)));
      const memest_status status = memest_finetune(s.null_request ? nullptr : &s.finetune,
                                                   s.null_result ? nullptr : out.get());
      check_status(status);
      check_result(status, out, finetune_result_doubles(), "finetune result");
      break;
    }
    case 6: {  // fine-tuning, Algorithm 1
      const uint32_t esize = resolve(s.element_size_set, s.element_size, sizeof(memest_finetune_option));
      Out<memest_finetune_choice> out(
          resolve(s.result_size_set, s.result_size, sizeof(memest_finetune_choice)));
      Buffer options;
      options.make(esize > 4096 ? 4096 : esize, s.capacity, esize);
      const memest_status status = memest_finetune_select(
          s.null_request ? nullptr : &s.finetune, s.null_result ? nullptr : out.get(),
          s.null_array ? nullptr : static_cast<memest_finetune_option*>(options.data()),
          options.stride, s.capacity);
      check_status(status);
      check_result(status, out, std::vector<size_t>{}, "finetune choice");
      uint32_t written = 0;
      if (status == MEMEST_OK) {
        if (out.struct_size() < offsetof(memest_finetune_choice, option_count) + sizeof(uint32_t)) {
          finding("choice smaller than its first layout");
        }
        written = std::min<uint32_t>(s.capacity, out.get()->option_count);
      }
      check_array(status, options, written, kOptionDoubles, sizeof(memest_finetune_option), "option");
      break;
    }
    default: {  // 7: parameter count and validation of the mutated model
      Out<memest_param_count> out(resolve(s.result_size_set, s.result_size, sizeof(memest_param_count)));
      const memest_status status = memest_model_parameter_count(model, s.null_result ? nullptr : out.get());
      check_status(status);
      check_result(status, out, kParamCountDoubles, "parameter count");
      const memest_status valid = memest_model_validate(model);
      check_status(valid);
      if (status == MEMEST_OK && valid != MEMEST_OK) finding("counted a model that does not validate");
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in{data, size};
  run_typed(in);
  return 0;
}
