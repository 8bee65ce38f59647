#include "pretrain/pretrain.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "core/verdict.hpp"
#include "model/model.hpp"
#include "overheads/overheads.hpp"
#include "pretrain/activations.hpp"
#include "states/model_states.hpp"

namespace memest {

namespace {

constexpr int64_t kMaxGpus = int64_t{1} << 24;
constexpr int64_t kMaxSeq = int64_t{1} << 24;
constexpr int64_t kMaxMicroBatch = int64_t{1} << 20;
constexpr int64_t kMaxGlobalBatch = int64_t{1} << 40;

std::string str(int64_t v) { return std::to_string(v); }
std::string json_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// "parallel.tp=3 does not divide num_attention_heads=32"
void check_divides(const std::string& field, int64_t divisor, const char* what, int64_t value) {
  if (value % divisor != 0) {
    throw Error(MEMEST_ERR_INVALID_ARGUMENT, field,
                field + "=" + str(divisor) + " does not divide " + what + "=" + str(value));
  }
}
}  // namespace

bool split_layers(int64_t layers, int64_t pp, int64_t vpp, bool uneven, StageLayers& out) {
  if (layers % (pp * vpp) == 0) {
    out.first = out.middle = out.last = layers / pp;
    return true;
  }
  if (!uneven || vpp != 1 || pp < 2) return false;
  const int64_t middle = (layers + pp - 1) / pp;
  const int64_t fewer = middle * pp - layers;  // layers the end stages give up
  if (fewer > 2 || middle < 2) return false;
  out.middle = middle;
  out.first = middle - 1;
  out.last = fewer == 2 ? middle - 1 : middle;
  return true;
}

LayoutIssue check_layout(const memest_pretrain_request& r, LayoutCheck& out) {
  const memest_model& m = r.model;
  if (m.num_attention_heads % r.tp != 0) return LayoutIssue::TpHeads;
  if (m.num_key_value_heads % r.tp != 0) return LayoutIssue::TpKvHeads;
  if (m.intermediate_size % r.tp != 0) return LayoutIssue::TpFfn;
  // d = gpus / (t * c * p) (DESIGN note 3). tp, cp, pp <= 2^24 each: their product can pass
  // 2^63, so compare in double first.
  out.model_parallel =
      static_cast<double>(r.tp) * static_cast<double>(r.cp) * static_cast<double>(r.pp);
  if (out.model_parallel > static_cast<double>(r.gpus) || r.gpus % (r.tp * r.cp * r.pp) != 0) {
    return LayoutIssue::GpusNotDivisible;
  }
  out.dp = r.gpus / (r.tp * r.cp * r.pp);
  if (r.pp > m.num_hidden_layers) return LayoutIssue::PpExceedsLayers;
  if (r.vpp > 1 && r.pp < 2) return LayoutIssue::VppNeedsPp;
  if (!split_layers(m.num_hidden_layers, r.pp, r.vpp, r.uneven_pipeline == 1, out.layers)) {
    return LayoutIssue::LayersNotDivisible;
  }
  if (r.cp > 1 && r.seq_len % (2 * r.cp) != 0) return LayoutIssue::CpSequence;
  if (m.learned_position_rows > 0 && m.max_position_embeddings > 0 &&
      r.seq_len > m.max_position_embeddings) {
    return LayoutIssue::SequenceTooLong;
  }
  out.num_microbatches = 0;
  if (r.global_batch > 0) {
    const int64_t per_step = r.micro_batch * out.dp;
    if (r.global_batch % per_step != 0) return LayoutIssue::GlobalBatch;
    out.num_microbatches = r.global_batch / per_step;
    if (r.vpp > 1 && out.num_microbatches % r.pp != 0) return LayoutIssue::InterleavedMicrobatches;
  }
  return LayoutIssue::None;
}

const char* layout_issue_name(LayoutIssue issue) {
  switch (issue) {
    case LayoutIssue::None: return "none";
    case LayoutIssue::TpHeads: return "tp_heads";
    case LayoutIssue::TpKvHeads: return "tp_kv_heads";
    case LayoutIssue::TpFfn: return "tp_ffn";
    case LayoutIssue::GpusNotDivisible: return "gpus_not_divisible";
    case LayoutIssue::PpExceedsLayers: return "pp_exceeds_layers";
    case LayoutIssue::VppNeedsPp: return "vpp_needs_pp";
    case LayoutIssue::LayersNotDivisible: return "layers_not_divisible";
    case LayoutIssue::CpSequence: return "cp_sequence";
    case LayoutIssue::SequenceTooLong: return "sequence_too_long";
    case LayoutIssue::GlobalBatch: return "global_batch";
    case LayoutIssue::InterleavedMicrobatches: return "interleaved_microbatches";
  }
  return "unknown";
}

namespace {

[[noreturn]] void throw_layout_issue(LayoutIssue issue, const memest_pretrain_request& r,
                                     const LayoutCheck& check) {
  const memest_model& m = r.model;
  switch (issue) {
    case LayoutIssue::TpHeads:
      check_divides("parallel.tp", r.tp, "num_attention_heads", m.num_attention_heads);
      break;
    case LayoutIssue::TpKvHeads:
      check_divides("parallel.tp", r.tp, "num_key_value_heads", m.num_key_value_heads);
      break;
    case LayoutIssue::TpFfn:
      check_divides("parallel.tp", r.tp, "intermediate_size", m.intermediate_size);
      break;
    case LayoutIssue::GpusNotDivisible:
      throw Error(MEMEST_ERR_INVALID_ARGUMENT, "parallel.gpus",
                  "parallel.gpus=" + str(r.gpus) + " is not divisible by tp*cp*pp=" +
                      json_number(check.model_parallel));
    case LayoutIssue::PpExceedsLayers:
      throw Error(MEMEST_ERR_INVALID_ARGUMENT, "parallel.pp",
                  "parallel.pp=" + str(r.pp) + " is larger than num_hidden_layers=" +
                      str(m.num_hidden_layers));
    case LayoutIssue::VppNeedsPp:
      fail("parallel.vpp", "the interleaved schedule (vpp > 1) needs pp >= 2");
    case LayoutIssue::LayersNotDivisible:
      if (r.uneven_pipeline == 1 && r.vpp == 1) {
        throw Error(MEMEST_ERR_INVALID_ARGUMENT, "parallel.pp",
                    "parallel.pp=" + str(r.pp) + " splits num_hidden_layers=" +
                        str(m.num_hidden_layers) +
                        " unevenly by more than one layer in the first and the last stage");
      }
      check_divides(r.vpp > 1 ? "parallel.pp*vpp" : "parallel.pp", r.pp * r.vpp,
                    "num_hidden_layers", m.num_hidden_layers);
      break;
    case LayoutIssue::CpSequence:
      fail("training.seq_len", "seq_len=" + str(r.seq_len) + " is not divisible by 2*cp=" +
                                   str(2 * r.cp) + " (context parallelism splits it in 2*cp chunks)");
    case LayoutIssue::SequenceTooLong:
      fail("training.seq_len", "seq_len=" + str(r.seq_len) +
                                   " is longer than the model's learned positions "
                                   "(max_position_embeddings=" + str(m.max_position_embeddings) + ")");
    case LayoutIssue::GlobalBatch:
      fail("training.global_batch", "global_batch=" + str(r.global_batch) +
                                        " is not divisible by micro_batch*dp=" +
                                        str(r.micro_batch * check.dp));
    case LayoutIssue::InterleavedMicrobatches:
      fail("training.global_batch", "the interleaved schedule needs the number of micro-batches (" +
                                        str(r.global_batch / (r.micro_batch * check.dp)) +
                                        ") to be a multiple of pp=" + str(r.pp));
    case LayoutIssue::None:
      break;
  }
  fail("", "internal: unexpected layout issue", MEMEST_ERR_INTERNAL);
}

}  // namespace

void validate_fields(const memest_pretrain_request& r) {
  if (r.struct_size < sizeof(memest_pretrain_request)) {
    fail("struct_size", "smaller than this version's request; call memest_pretrain_request_init",
         MEMEST_ERR_STRUCT_SIZE);
  }
  validate_model(r.model, "model", false);
  check_range("parallel.gpus", r.gpus, 1, kMaxGpus);
  check_range("parallel.tp", r.tp, 1, kMaxGpus);
  check_range("parallel.cp", r.cp, 1, kMaxGpus);
  check_range("parallel.pp", r.pp, 1, kMaxGpus);
  check_range("parallel.vpp", r.vpp, 1, kMaxLayers);
  check_range("training.seq_len", r.seq_len, 1, kMaxSeq);
  check_range("training.micro_batch", r.micro_batch, 1, kMaxMicroBatch);
  check_range("training.global_batch", r.global_batch, 0, kMaxGlobalBatch);
  validate_zero(r.zero, "parallel.zero");
  if (r.sequence_parallel != 0 && r.sequence_parallel != 1) fail("parallel.sp", "must be 0 or 1");
  if (r.flash_attention != 0 && r.flash_attention != 1) {
    fail("training.flash_attention", "must be 0 or 1");
  }
  if (r.uneven_pipeline != 0 && r.uneven_pipeline != 1) fail("parallel.uneven_pipeline", "must be 0 or 1");
  if (r.recompute < MEMEST_RECOMPUTE_NONE || r.recompute > MEMEST_RECOMPUTE_FULL) {
    fail("training.recompute", "must be none (0), selective (1) or full (2)");
  }
  if (r.activation_model < MEMEST_ACTIVATIONS_AUTO || r.activation_model > MEMEST_ACTIVATIONS_GPT) {
    fail("training.activation_model", "must be auto (0), llama (1) or gpt (2)");
  }
  const Precision precision{r.param_bytes, r.grad_bytes, r.optimizer_bytes};
  validate_precision(precision, "training");
  validate_capacity(r.gpu, "gpu", true);
}

Plan make_plan(const memest_pretrain_request& r) {
  validate_fields(r);
  LayoutCheck check;
  const LayoutIssue issue = check_layout(r, check);
  if (issue != LayoutIssue::None) throw_layout_issue(issue, r, check);
  return make_plan_unchecked(r, check);
}

Plan make_plan_unchecked(const memest_pretrain_request& r, const LayoutCheck& check) {
  const memest_model& m = r.model;
  const Precision precision{r.param_bytes, r.grad_bytes, r.optimizer_bytes};
  Plan plan;
  plan.model = &m;
  plan.gpu = &r.gpu;
  plan.tp = r.tp;
  plan.cp = r.cp;
  plan.pp = r.pp;
  plan.vpp = r.vpp;
  plan.dp = check.dp;
  plan.layers = check.layers;
  plan.num_microbatches = check.num_microbatches;
  plan.precision = precision;
  plan.zero = r.zero;
  plan.layout.seq_len = static_cast<double>(r.seq_len);
  plan.layout.micro_batch = static_cast<double>(r.micro_batch);
  plan.layout.tp = static_cast<double>(r.tp);
  plan.layout.cp = static_cast<double>(r.cp);
  plan.layout.sequence_parallel = r.sequence_parallel == 1;
  plan.layout.flash_attention = r.flash_attention == 1;
  plan.layout.recompute = static_cast<memest_recompute>(r.recompute);
  plan.activation_model = static_cast<memest_activation_model>(r.activation_model);
  if (plan.activation_model == MEMEST_ACTIVATIONS_AUTO) {
    plan.activation_model =
        m.family == MEMEST_FAMILY_GPT ? MEMEST_ACTIVATIONS_GPT : MEMEST_ACTIVATIONS_LLAMA;
  }
  plan.coefficients = activation_coefficients(m, plan.activation_model);
  return plan;
}

namespace {

// Micro-batches of one stage's activations kept at once by stage i.
// 1F1B (PipeDream-Flush, 4D paper Sec. 3.2.2): stage i keeps p - i micro-batches.
// Interleaved 1F1B (Megatron-LM): device i keeps (p-i-1)*2 + (vpp-1)*p + 1 model chunks of
// L/(p*vpp) layers; for i = 0 that is L(1 + (p-1)/(p*vpp)) layers (Korthikanti Sec. 4.2.3).
// `cap` limits it to the micro-batches an iteration has, when known.
double microbatches_in_flight(const Plan& plan, int64_t i, bool cap) {
  const double p = static_cast<double>(plan.pp);
  const double v = static_cast<double>(plan.vpp);
  const double m = static_cast<double>(plan.num_microbatches);
  double chunks = plan.vpp == 1 ? p - static_cast<double>(i)
                                : (p - static_cast<double>(i) - 1) * 2 + (v - 1) * p + 1;
  if (cap && plan.num_microbatches > 0) chunks = std::min(chunks, m * v);
  return plan.vpp == 1 ? chunks : chunks / v;
}

}  // namespace

memest_stage stage_memory(const Plan& plan, int64_t i, bool cap) {
  const memest_model& m = *plan.model;
  const double t = static_cast<double>(plan.tp);
  const bool first = i == 0;
  const bool last = i == plan.pp - 1;
  const double layers = static_cast<double>(plan.layers.of(i, plan.pp));

  // Parameters on one GPU of this stage (4D paper Eqs. 6-9; Eq. 10 for the sharding group).
  const LayerParams layer = layer_params(m);
  const EdgeParams edge = edge_params(m);
  double params = layers * (layer.sharded / t + layer.replicated);
  if (first) params += edge.word_embedding / t + edge.embedding_extra;
  if (last) {
    params += edge.lm_head / t + edge.final_norm;
    // Tied embeddings under PP: the last stage keeps its own copy of the word embeddings.
    if (m.tie_word_embeddings && plan.pp > 1) params += edge.word_embedding / t;
  }
  const StateBytes states = state_bytes(params, plan.precision, plan.zero,
                                        static_cast<double>(plan.dp * plan.cp));

  // Activations (Eq. 17 for the first stage, generalised per stage).
  const double in_flight = microbatches_in_flight(plan, i, cap);
  double activations =
      in_flight * layers * layer_activation_bytes(m, plan.coefficients, plan.layout);
  double embedded = 0;
  if (first) {
    embedded = static_cast<double>(plan.pp);  // Eq. 13: p micro-batches
    if (cap && plan.num_microbatches > 0) embedded = std::min(embedded, static_cast<double>(plan.num_microbatches));
    activations += embedded * embedding_activation_bytes(m, plan.coefficients, plan.layout);
  }
  if (last) activations += head_activation_bytes(m, plan.layout);  // Eq. 14, one micro-batch

  memest_stage s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  s.index = static_cast<int32_t>(i);
  s.layers = plan.layers.of(i, plan.pp);
  s.microbatches_in_flight = in_flight;
  s.parameters = params;
  s.weights_bytes = states.weights;
  s.gradients_bytes = states.gradients;
  s.optimizer_bytes = states.optimizer;
  s.activations_bytes = activations;
  s.total_bytes = states.total() + activations;
  const OverheadParts o =
      stage_overheads(plan, i, layers, in_flight, embedded, states.total(), activations);
  s.context_bytes = o.context;
  s.comm_buffer_bytes = o.comm_buffers;
  s.logits_bytes = o.logits;
  s.activation_correction_bytes = o.activation_correction;
  s.fragmentation_bytes = o.fragmentation;
  s.overhead_bytes = o.total();
  s.peak_bytes = s.total_bytes + s.overhead_bytes;
  return s;
}

double peak_memory(const Plan& plan, int32_t* peak_stage) {
  // The most loaded stage is the first, the second or the last: middle stages hold the same
  // layers with fewer micro-batches in flight the later they come (both schedules), and no
  // embedding or LM head; the second stands for them (it can pass a first stage that an
  // uneven pipeline made one layer lighter). So three stages suffice.
  int32_t best = 0;
  double peak = stage_memory(plan, 0, true).peak_bytes;
  for (int64_t i : {int64_t{1}, plan.pp - 1}) {
    if (i <= 0 || i >= plan.pp) continue;
    const double p = stage_memory(plan, i, true).peak_bytes;
    if (p > peak) {
      peak = p;
      best = static_cast<int32_t>(i);
    }
  }
  if (peak_stage) *peak_stage = best;
  return peak;
}

memest_pretrain_result compute_pretrain(const memest_pretrain_request& r, memest_stage* stages,
                                        uint32_t stage_capacity) {
  const Plan plan = make_plan(r);
  const double capacity = r.gpu.memory_bytes;

  memest_pretrain_result out;
  std::memset(&out, 0, sizeof out);
  out.struct_size = sizeof out;
  out.num_parameters = count_parameters(r.model).total;
  out.dp = plan.dp;
  out.num_microbatches = plan.num_microbatches;
  // Eq. 18: the first stage with the paper's p micro-batches in flight (pp = 1: whole model,
  // including the LM head and final norm: DESIGN formula note 1).
  out.estimate_bytes = stage_memory(plan, 0, false).total_bytes;
  out.capacity_bytes = capacity;
  out.stage_count = static_cast<int32_t>(plan.pp);
  out.activation_model = plan.activation_model;
  if (!std::isfinite(out.estimate_bytes)) {
    fail("", "the sizes given overflow a finite byte count", MEMEST_ERR_OVERFLOW);
  }
  for (int64_t i = 0; i < plan.pp; ++i) {
    const memest_stage s = stage_memory(plan, i, true);
    if (!std::isfinite(s.peak_bytes)) {
      fail("", "the sizes given overflow a finite byte count", MEMEST_ERR_OVERFLOW);
    }
    if (s.peak_bytes > out.peak_bytes) {
      out.peak_bytes = s.peak_bytes;
      out.peak_stage = static_cast<int32_t>(i);
    }
    out.paper_peak_bytes = std::max(out.paper_peak_bytes, s.total_bytes);
  }
  out.oom_predicted = out.peak_bytes > capacity;
  // Only now, with every check passed, write the caller's stage array.
  const int64_t written = std::min<int64_t>(plan.pp, stages ? stage_capacity : 0);
  for (int64_t i = 0; i < written; ++i) stages[i] = stage_memory(plan, i, true);
  out.usage_fraction = out.estimate_bytes / capacity;
  out.verdict = verdict_for(out.estimate_bytes, capacity);
  return out;
}

}  // namespace memest
