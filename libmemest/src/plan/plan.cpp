#include "plan/plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "core/enums.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"
#include "model/gpu_profile.hpp"
#include "model/model.hpp"
#include "activations/stack_activations.hpp"
#include "plan/stack.hpp"

namespace memest {

void validate_precision(const Precision& p, const char* prefix, bool allow_derive) {
  const std::string base(prefix);
  auto check = [&](double v, const char* name, double min) {
    if (!std::isfinite(v) || v < min || v > 64) {
      fail(base + "." + name, "must be between " + std::to_string(static_cast<int>(min)) +
                                  " and 64 bytes per parameter");
    }
  };
  check(p.param_bytes, "param_dtype", 0.125);  // down to 1-bit weights
  check(p.grad_bytes, "grad_dtype", 0.125);
  // MEMEST_OPTIMIZER_BYTES_DERIVE: K follows the optimizer, the framework and the stored dtype
  if (!allow_derive || p.optimizer_bytes != MEMEST_OPTIMIZER_BYTES_DERIVE) check(p.optimizer_bytes, "optimizer", 0);
}

void validate_zero(int zero, const char* field) {
  if (zero < 0 || zero > 3) fail(field, "must be 0, 1, 2 or 3, got " + std::to_string(zero));
}

namespace {

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
  out.middle = middle;
  out.first = middle - (fewer + 1) / 2;
  out.last = middle - fewer / 2;
  return out.first >= 1 && out.last >= 1;
}

namespace {

// Expands Megatron's repetitions in a layout string: "(ab|)*2" and "x*2" (parentheses do not
// nest, as parse_str_to_list's regular expressions read them); commas are dropped. False when
// the text is malformed or would expand past `limit` characters.
bool expand_layout(const std::string& in, size_t limit, std::string& out, std::string& why) {
  out.clear();
  auto count_after = [&](size_t& i, int64_t& n) {  // "*<digits>" at i
    if (i >= in.size() || in[i] != '*') return false;
    ++i;
    n = 0;
    const size_t start = i;
    while (i < in.size() && in[i] >= '0' && in[i] <= '9') {
      if (n > 100000000) return false;
      n = n * 10 + (in[i] - '0');
      ++i;
    }
    return i > start;
  };
  for (size_t i = 0; i < in.size();) {
    const char c = in[i];
    std::string unit;
    if (c == ',') {
      ++i;
      continue;
    }
    if (c == '(') {
      const size_t close = in.find(')', i);
      if (close == std::string::npos) {
        why = "has a '(' without its ')'";
        return false;
      }
      for (size_t j = i + 1; j < close; ++j) {
        if (in[j] == '(') {
          why = "nests parentheses, which Megatron's parser does not read";
          return false;
        }
        if (in[j] != ',') unit += in[j];
      }
      i = close + 1;
      int64_t n = 0;
      if (!count_after(i, n)) {
        why = "needs '*<count>' after a parenthesised group";
        return false;
      }
      if (unit.empty() || static_cast<double>(unit.size()) * static_cast<double>(n) >
                              static_cast<double>(limit)) {
        why = unit.empty() ? "repeats an empty group" : "expands past " + std::to_string(limit) +
                                                            " characters";
        return false;
      }
      for (int64_t k = 0; k < n; ++k) out += unit;
    } else {
      ++i;
      int64_t n = 1;
      if (i < in.size() && in[i] == '*' && !count_after(i, n)) {
        why = "needs digits after '*'";
        return false;
      }
      if (static_cast<double>(out.size()) + static_cast<double>(n) > static_cast<double>(limit)) {
        why = "expands past " + std::to_string(limit) + " characters";
        return false;
      }
      out.append(static_cast<size_t>(n), c);
    }
    if (out.size() > limit) {
      why = "expands past " + std::to_string(limit) + " characters";
      return false;
    }
  }
  return true;
}

// A byte as a message quotes it: printable ASCII as itself, any other as \xHH (a message
// stays valid UTF-8 whatever the caller's bytes).
std::string printable(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string(1, c);
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02X", u);
  return buf;
}

}  // namespace

namespace {
bool parse_layout_once(const std::string& layout, int64_t pp, int64_t layers, int64_t mtp_layers,
                       StageLayers& out, int64_t& vpp, std::string& why);
}  // namespace

bool parse_pipeline_layout(const std::string& layout, int64_t pp, int64_t layers,
                           int64_t mtp_layers, StageLayers& out, int64_t& vpp, std::string& why) {
  // The search checks every candidate layout against the request's one layout string, whose
  // "(...)*n" may expand to 400,000 characters: the last answer is kept per thread, keyed by
  // everything it depends on.
  struct Memo {
    std::string layout;
    int64_t pp = -1, layers = -1, mtp_layers = -1, vpp = 0;
    bool ok = false;
    StageLayers out;
    std::string why;
  };
  thread_local Memo memo;
  if (memo.pp != pp || memo.layers != layers || memo.mtp_layers != mtp_layers ||
      memo.layout != layout) {
    memo.layout = layout;
    memo.pp = pp, memo.layers = layers, memo.mtp_layers = mtp_layers;
    memo.out = StageLayers{};
    memo.why.clear();
    memo.vpp = 0;
    memo.ok = parse_layout_once(layout, pp, layers, mtp_layers, memo.out, memo.vpp, memo.why);
  }
  if (memo.ok) {
    out = memo.out;
    vpp = memo.vpp;
  } else {
    why = memo.why;
  }
  return memo.ok;
}

namespace {

bool parse_layout_once(const std::string& layout, int64_t pp, int64_t layers, int64_t mtp_layers,
                       StageLayers& out, int64_t& vpp, std::string& why) {
  std::string flat;
  const size_t limit = static_cast<size_t>(4 * kMaxLayers);  // t, m and '|' per stage, E, L
  if (!expand_layout(layout, limit, flat, why)) return false;
  // one entry per virtual stage, in the string's order (chunk v*pp + r)
  std::vector<int64_t> decoders(1, 0), mtps(1, 0);
  int64_t embeddings = 0, losses = 0;
  bool first_is_embedding = false, seen_any = false, last_is_loss = false;
  bool decoder_after_mtp = false, mtp_seen = false;
  for (const char c : flat) {
    if (c == '|') {
      decoders.push_back(0);
      mtps.push_back(0);
      continue;
    }
    if (!seen_any) first_is_embedding = c == 'E';
    seen_any = true;
    last_is_loss = c == 'L';
    switch (c) {
      case 'E': ++embeddings; break;
      case 'L': ++losses; break;
      case 't':
        ++decoders.back();
        decoder_after_mtp |= mtp_seen;
        break;
      case 'm':
        ++mtps.back();
        mtp_seen = true;
        break;
      default:
        why = "has '" + printable(c) +
              "': a layout is made of E (embedding), t (decoder layer), m (MTP layer), L "
              "(loss), '|' between stages, '(...)*n', 'x*n' and commas";
        return false;
    }
  }
  const int64_t stages = static_cast<int64_t>(decoders.size());
  if (stages % pp != 0) {
    why = "has " + std::to_string(stages) + " virtual stages, not a multiple of pp=" +
          std::to_string(pp);
    return false;
  }
  vpp = stages / pp;
  if (embeddings != 1 || !first_is_embedding) {
    why = "must start with E (the embedding) and hold it once";
    return false;
  }
  if (losses != 1 || !last_is_loss) {
    why = "must end with L (the loss) and hold it once";
    return false;
  }
  int64_t total = 0, total_mtp = 0;
  for (size_t c = 0; c < decoders.size(); ++c) total += decoders[c], total_mtp += mtps[c];
  if (total != layers) {
    why = "holds " + std::to_string(total) + " decoder layers (t), the model has " +
          std::to_string(layers);
    return false;
  }
  if (total_mtp != mtp_layers) {
    why = "holds " + std::to_string(total_mtp) + " MTP layers (m), the model has " +
          std::to_string(mtp_layers);
    return false;
  }
  if (decoder_after_mtp) {
    why = "places a decoder layer after an MTP layer (Megatron requires them before)";
    return false;
  }
  // All MTP layers in one virtual stage, the last of its rank, not on the first rank
  // (PipelineParallelLayerLayout.validate_layer_layout).
  out.mtp_rank = -1;
  for (int64_t c = 0; c < stages && total_mtp > 0; ++c) {
    if (mtps[static_cast<size_t>(c)] == 0) continue;
    if (mtps[static_cast<size_t>(c)] != total_mtp || c < stages - pp || c % pp == 0) {
      why = "must place every MTP layer (m) in one virtual stage: the last of a rank other than "
            "the first";
      return false;
    }
    out.mtp_rank = c % pp;
  }
  out.chunks = decoders;
  out.chunk_begin.assign(decoders.size(), 0);
  for (size_t c = 1; c < decoders.size(); ++c) {
    out.chunk_begin[c] = out.chunk_begin[c - 1] + decoders[c - 1];
  }
  out.rank.assign(static_cast<size_t>(pp), 0);
  for (int64_t c = 0; c < stages; ++c) out.rank[static_cast<size_t>(c % pp)] += decoders[c];
  out.first = out.rank.front();
  out.last = out.rank.back();
  out.middle = pp > 2 ? out.rank[1] : out.last;
  return true;
}

// Fills `out` with the stages of Megatron-LM's --decoder-first/last-pipeline-num-layers
// (megatron/core/transformer/transformer_block.py get_num_layers_to_build): `first` and
// `last` layers on the end stages (0: an even share of what the others leave), the middle
// stages an even share of the rest; with vpp each stage's layers split into vpp equal chunks,
// so every count must divide by vpp. False when that cannot be done.
bool split_with_end_stages(int64_t layers, int64_t pp, int64_t vpp, int64_t first, int64_t last,
                           StageLayers& out) {
  if (pp < 2) {
    // one stage: it holds every layer, as the search reports a pp = 1 layout's end stages
    if ((first != 0 && first != layers) || (last != 0 && last != layers)) return false;
    out.first = out.middle = out.last = layers;
    return true;
  }
  const int64_t given = first + last;
  const int64_t free_stages = pp - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
  const int64_t rest = layers - given;
  if (rest < 0) return false;
  int64_t share = 0;
  if (free_stages > 0) {
    if (rest % free_stages != 0 || rest / free_stages < 1) return false;
    share = rest / free_stages;
  } else if (rest != 0) {
    return false;
  }
  out.first = first > 0 ? first : share;
  out.last = last > 0 ? last : share;
  out.middle = pp > 2 ? share : out.last;
  if (out.first % vpp != 0 || out.last % vpp != 0 || (pp > 2 && share % vpp != 0)) return false;
  if (vpp > 1) {
    // explicit chunks: round v holds first/vpp, middle/vpp, ..., last/vpp layers
    out.chunks.assign(static_cast<size_t>(pp * vpp), 0);
    out.chunk_begin.assign(out.chunks.size(), 0);
    out.rank.assign(static_cast<size_t>(pp), 0);
    int64_t begin = 0;
    for (int64_t v = 0; v < vpp; ++v) {
      for (int64_t r = 0; r < pp; ++r) {
        const int64_t n = (r == 0 ? out.first : r == pp - 1 ? out.last : out.middle) / vpp;
        const size_t c = static_cast<size_t>(v * pp + r);
        out.chunks[c] = n;
        out.chunk_begin[c] = begin;
        out.rank[static_cast<size_t>(r)] += n;
        begin += n;
      }
    }
  }
  return true;
}

}  // namespace

StackLayerTerms stack_layer_terms(const Plan& plan) {
  const memest_model& m = *plan.model;
  const ActivationLayout& x = plan.layout;
  StackLayerTerms k;
  // The loss of the last stage by the stack's loss (loss_memory; megatron's fused loss stays
  // Eq. 14 + the overhead model's 2sbv/(tc), which equal loss_memory's Fused).
  LossInputs in;
  in.tokens = x.seq_len * x.micro_batch / x.cp;
  in.vocab = static_cast<double>(m.vocab_size) / x.tp;
  in.hidden = static_cast<double>(m.hidden_size);
  // memest_compile: the loss is compiled under ALL and LOSS (torchtitan compile.components
  // "loss"), the blocks under ALL and MODEL ("model", or torch.compile(block) per layer).
  const int32_t compile = plan.stack.compile;
  in.compiled = compile == MEMEST_COMPILE_ALL || compile == MEMEST_COMPILE_LOSS;
  // training.logits_held: the loop keeps the model's output (`output = model(...)`,
  // `output.loss.backward()`: the logits stay referenced through the backward)
  in.logits_held = plan.stack.logits_held == 1;
  in.held_fp32 = m.logits_fp32 == 1;
  in.chunks = static_cast<double>(
      loss_chunks_in_effect(plan.loss, plan.stack.loss_chunks,
                            static_cast<int64_t>(x.seq_len / std::max(1.0, x.cp))));
  const bool fsdp = plan.framework == MEMEST_FRAMEWORK_FSDP;
  // training.autocast: -1 the stack's default (autocast for fp32 parameters outside FSDP's
  // policy), 0 none, 1 autocast (only fp32 parameters are cast).
  const bool autocast = plan.framework != MEMEST_FRAMEWORK_MEGATRON &&
                        plan.precision.param_bytes >= 4 &&
                        (plan.stack.autocast == 1 || (plan.stack.autocast < 0 && !fsdp));
  LossKind kind = LossKind::Fused;
  switch (plan.loss) {
    case MEMEST_LOSS_UNFUSED: kind = LossKind::Unfused; break;
    case MEMEST_LOSS_CHUNKED: kind = LossKind::Chunked; break;
    case MEMEST_LOSS_LINEAR_FUSED: kind = LossKind::LinearFused; break;
    case MEMEST_LOSS_CHUNKED_LM_HEAD: kind = LossKind::ChunkedLmHead; break;
    case MEMEST_LOSS_CHUNKED_LINEAR: kind = LossKind::ChunkedLinear; break;
    case MEMEST_LOSS_FLASH_ATTN: kind = LossKind::FlashAttn; break;
    case MEMEST_LOSS_UNFUSED_16BIT:
      // the code that skips the upcast (HF models before 4.46 and the scripts that copied
      // them) also shifts the logits rather than padding the labels: one more 16-bit copy
      kind = LossKind::Unfused16Bit;
      in.shift_copy = true;
      break;
    default: break;
  }
  // Pure fp32 (training.autocast false with fp32 parameters): the logits are fp32 and
  // F.cross_entropy works on them as they are, without an upcast copy: the no-upcast loss at
  // 4 bytes per logit.
  const bool pure_fp32 = plan.stack.autocast == 0 && plan.precision.param_bytes >= 4;
  if (pure_fp32 && kind == LossKind::Unfused) {
    kind = LossKind::Unfused16Bit;
    in.logit_bytes = 4;
  }
  // Without a vocab-parallel loss under tp > 1 (torchtitan without loss_parallel) the loss sees
  // the logits gathered to the whole vocabulary (DTensor redistributes Shard(-1) to
  // Replicate for aten cross_entropy), while the local shard is still referenced at the loss's
  // forward peak.
  const bool gathered = plan.stack.loss_parallel == 0 && x.tp > 1;
  if (gathered) in.vocab = static_cast<double>(m.vocab_size);
  k.loss = loss_memory(kind, in).peak();
  if (gathered) k.loss += in.tokens * static_cast<double>(m.vocab_size) / x.tp * in.logit_bytes;
  // Gemma 2's soft-capping (logits / cap, tanh, * cap before the loss;
  // models/gemma2/modeling_gemma2.py): tanh saves its output for backward, one more
  // logits-sized tensor in the output layer's dtype.
  if (m.final_logit_softcapping > 0) k.loss += in.tokens * in.vocab * in.logit_bytes;
  if (plan.framework == MEMEST_FRAMEWORK_MEGATRON) return k;

  // The blocks of the other stacks (eager_block_bytes): torchtitan's under fsdp, Hugging
  // Face's (and torchtune's) elsewhere; fp32 parameters outside FSDP's MixedPrecisionPolicy run
  // under torch.autocast (AMP).
  k.autocast = autocast;
  const double residual = k.autocast ? 4.0 : 2.0;
  EagerBlockOptions eo;
  eo.block = fsdp ? EagerBlock::Torchtitan : EagerBlock::HuggingFace;
  eo.autocast = k.autocast;
  // SDPA's enable_gqa (torchtitan 2026; HF transformers with torch >= 2.5 and no mask): K and
  // V at their own heads. torchtune's and older torchtitan's repeat_kv copies are not modelled.
  eo.gqa_native = true;
  eo.compiled = compile == MEMEST_COMPILE_ALL || compile == MEMEST_COMPILE_MODEL;
  eo.liger = plan.stack.use_liger_kernel == 1;
  if (plan.adapter.enabled()) {
    // LoRA's saved tensors (activations/stack_activations.hpp eager_block_bytes): the LoraTarget
    // bits are memest_lora_target's first seven.
    eo.lora = true;
    eo.lora_targets = plan.adapter.targets & (kLoraAll | kLoraRouter);
    eo.lora_rank = static_cast<double>(plan.adapter.rank);
    eo.lora_dropout = plan.adapter.dropout > 0;
    eo.frozen_linears_save_input = plan.adapter.type == MEMEST_ADAPTER_QLORA;
    eo.adapter_bytes = plan.adapter.bytes;
  }
  k.plain_layer = eager_block_bytes(m, x, eo).total();
  k.plain_dense_layer = k.plain_layer;
  const bool moe = is_moe(m);
  {
    // a hybrid layer's differences (activations/mixer_activations.hpp) from the dense block
    EagerBlockOptions dense = eo;
    dense.dense_mlp = true;
    const EagerBlockBytes parts = eager_block_bytes(m, x, dense);
    k.shares.attention = parts.attention;
    k.shares.mlp = parts.mlp;
    k.shares.norm = parts.norms / 2;
  }
  if (moe) {
    EagerBlockOptions dense = eo;
    dense.dense_mlp = true;
    k.plain_dense_layer = eager_block_bytes(m, x, dense).total();
    memest_model routed = m;  // the MLP part without the shared experts
    routed.num_shared_experts = 0;
    routed.shared_expert_gate = 0;
    k.moe_routed = eager_block_bytes(routed, x, eo).mlp;
  }
  k.kept_layer = k.plain_layer;
  double reused = k.plain_layer;  // what the block's recomputation reuses of the kept set
  switch (x.recompute) {
    case MEMEST_RECOMPUTE_FULL:
      k.kept_layer = layer_activation_bytes(m, plan.coefficients, x) * residual / 2;  // input
      reused = k.kept_layer;
      break;
    case MEMEST_RECOMPUTE_OP_SELECTIVE: {
      const OpSelectiveLayer ol = op_selective_layer(m, x, residual, eo.gqa_native);
      k.kept_layer = ol.total();
      reused = ol.reused_by_recompute;
      break;
    }
    default: break;  // none; Megatron's "selective" keeps everything under FlashAttention
  }
  k.checkpointing = x.recompute == MEMEST_RECOMPUTE_FULL ||
                    x.recompute == MEMEST_RECOMPUTE_OP_SELECTIVE;
  k.recompute = recompute_working_set(m, x, k.plain_layer, reused, residual, moe).total();
  if (moe && moe_layer_count(m) < m.num_hidden_layers) {
    // one block is rebuilt at a time: the larger of an MoE and a dense block's working set
    const double dense_reused = x.recompute == MEMEST_RECOMPUTE_NONE ||
                                        x.recompute == MEMEST_RECOMPUTE_SELECTIVE
                                    ? k.plain_dense_layer
                                    : reused;
    k.recompute = std::max(k.recompute, recompute_working_set(m, x, k.plain_dense_layer,
                                                              dense_reused, residual, false)
                                            .total());
  }
  if (pure_fp32) {
    // every saved tensor in the stored fp32 (the blocks above are sized for 16-bit compute
    // without autocast): twice the bytes, the 1-byte dropout masks included
    const double scale = plan.precision.param_bytes / 2;
    k.plain_layer *= scale;
    k.plain_dense_layer *= scale;
    k.moe_routed *= scale;
    k.kept_layer *= scale;
    k.recompute *= scale;
  }
  return k;
}

bool split_chunks_unevenly(int64_t layers, int64_t pp, int64_t vpp, StageLayers& out) {
  if (pp < 2 || layers < pp * vpp) return false;
  const int64_t chunk = (layers + pp * vpp - 1) / (pp * vpp);  // layers of a full chunk
  const int64_t middle = chunk * vpp;
  const int64_t fewer = middle * pp - layers;  // taken from the first and the last rank
  out.middle = middle;
  out.first = middle - (fewer + 1) / 2;
  out.last = middle - fewer / 2;
  return out.first >= 1 && out.last >= 1 && fewer / 2 < middle;
}

namespace {
// Calls visit(begin, end) for each run of consecutive layers stage `stage` holds: its model
// chunks (a layout's, or vpp > 1's even split: chunk j*pp + stage), else its one run.
template <class Visit>
void for_each_stage_run(const StageLayers& layers, int64_t pp, int64_t vpp, int64_t stage,
                        Visit visit) {
  if (!layers.chunks.empty()) {  // explicit virtual stages: chunk v*pp + stage
    for (size_t c = static_cast<size_t>(stage); c < layers.chunks.size();
         c += static_cast<size_t>(pp)) {
      visit(layers.chunk_begin[c], layers.chunk_begin[c] + layers.chunks[c]);
    }
    return;
  }
  if (vpp > 1) {  // vpp > 1 splits the layers evenly (split_layers)
    const int64_t chunk = layers.middle / vpp;
    for (int64_t j = 0; j < vpp; ++j) {
      const int64_t begin = (j * pp + stage) * chunk;
      visit(begin, begin + chunk);
    }
    return;
  }
  const int64_t begin = stage == 0 ? 0 : layers.first + (stage - 1) * layers.middle;
  visit(begin, begin + layers.of(stage, pp));
}
}  // namespace

int64_t stage_moe_layers(const memest_model& m, const StageLayers& layers, int64_t pp,
                         int64_t vpp, int64_t stage) {
  if (!is_moe(m)) return 0;
  int64_t n = 0;
  for_each_stage_run(layers, pp, vpp, stage,
                     [&](int64_t begin, int64_t end) { n += moe_layers_in(m, begin, end); });
  return n;
}

LayerMix stage_layer_mix(const memest_model& m, const StageLayers& layers, int64_t pp,
                         int64_t vpp, int64_t stage) {
  LayerMix mix;
  if (!has_mixer_pattern(m) && !has_mlp_pattern(m)) return mix;
  for_each_stage_run(layers, pp, vpp, stage, [&](int64_t begin, int64_t end) {
    const LayerMix run = layer_mix(m, begin, end);
    mix.mamba += run.mamba;
    mix.deltanet += run.deltanet;
    mix.parallel += run.parallel;
    mix.no_mixer += run.no_mixer;
    mix.no_mlp += run.no_mlp;
  });
  return mix;
}

LayoutIssue check_layout(const PretrainRequest& r, LayoutCheck& out) {
  const memest_model& m = r.model;
  if (m.num_attention_heads % r.tp != 0) return LayoutIssue::TpHeads;
  if (m.num_key_value_heads % r.tp != 0) return LayoutIssue::TpKvHeads;
  if (m.intermediate_size % r.tp != 0) return LayoutIssue::TpFfn;
  // d = gpus / (t * c * p) (4D paper Sec. 3). tp, cp, pp <= 2^24 each: their product can pass
  // 2^63, so compare in double first.
  out.model_parallel =
      static_cast<double>(r.tp) * static_cast<double>(r.cp) * static_cast<double>(r.pp);
  if (out.model_parallel > static_cast<double>(r.gpus) || r.gpus % (r.tp * r.cp * r.pp) != 0) {
    return LayoutIssue::GpusNotDivisible;
  }
  out.dp = r.gpus / (r.tp * r.cp * r.pp);
  if (r.pp > m.num_hidden_layers) return LayoutIssue::PpExceedsLayers;
  if (r.vpp > 1 && r.pp < 2) return LayoutIssue::VppNeedsPp;
  if (!r.pipeline_layout.empty()) {
    int64_t vpp = 0;
    std::string why;
    if (!parse_pipeline_layout(r.pipeline_layout, r.pp, m.num_hidden_layers, m.mtp_layers,
                               out.layers, vpp, why) ||
        vpp != r.vpp) {
      return LayoutIssue::PipelineLayout;
    }
  } else if (r.last_stage_layers > 0 || r.first_stage_layers > 0) {
    if (!split_with_end_stages(m.num_hidden_layers, r.pp, r.vpp, r.first_stage_layers,
                               r.last_stage_layers, out.layers)) {
      return LayoutIssue::LastStageLayers;
    }
  } else if (!split_layers(m.num_hidden_layers, r.pp, r.vpp, r.uneven_pipeline == 1, out.layers) &&
             !(r.stack.framework == MEMEST_FRAMEWORK_FSDP &&
               split_chunks_unevenly(m.num_hidden_layers, r.pp, r.vpp, out.layers))) {
    return LayoutIssue::LayersNotDivisible;
  }
  if (r.cp > 1 && r.seq_len % (2 * r.cp) != 0) return LayoutIssue::CpSequence;
  if (is_hybrid(m)) {
    // Megatron-Core's MambaMixer splits the heads and the B/C groups over tp
    // (megatron/core/ssm/mamba_mixer.py asserts both divide); the DeltaNet's heads likewise.
    const LayerMix all = layer_mix(m, 0, m.num_hidden_layers);
    // Mamba-1 has one B and C for every channel (x_proj's output, whole on every rank).
    if (all.mamba + all.parallel > 0 &&
        (m.mamba_num_heads % r.tp != 0 || (!uses_mamba1(m) && m.mamba_groups % r.tp != 0))) {
      return LayoutIssue::TpMixer;
    }
    if (all.deltanet > 0 && (m.linear_key_heads % r.tp != 0 || m.linear_value_heads % r.tp != 0)) {
      return LayoutIssue::TpMixer;
    }
    if (r.cp > 1 && all.mamba + all.parallel + all.deltanet > 0) {
      // Only Megatron-Core splits a scan over context parallelism, and only for its own Mamba-2
      // and gated DeltaNet: an all-to-all trades the sequence split for a head split around the
      // conv and scan (megatron/core/ssm/mamba_context_parallel.py, gated_delta_net/common.py
      // a2a_cp_to_hp). Mamba-1 and KDA have no Megatron-Core module.
      if (r.stack.framework != MEMEST_FRAMEWORK_MEGATRON || uses_mamba1(m) || uses_kda(m)) {
        return LayoutIssue::CpMixer;
      }
      if (cp_mixer_split(m, r.tp, r.cp) != CpMixerSplit::Ok) return LayoutIssue::CpMixerHeads;
    }
  }
  if (m.learned_position_rows > 0 && m.max_position_embeddings > 0 &&
      r.seq_len > m.max_position_embeddings) {
    return LayoutIssue::SequenceTooLong;
  }
  out.etp = 1;
  out.edp = out.dp * r.cp;
  if (is_moe(m)) {
    // Megatron-Core's MoE parallel folding (megatron/core/parallel_state.py,
    // initialize_model_parallel): the expert layers run on etp x ep x edp x pp ranks of the
    // same GPUs, edp = world / (etp * ep * pp), which must be an integer; ep must divide the
    // experts (megatron/training/arguments.py); the grouped expert MLP splits its width by
    // etp (megatron/core/transformer/moe/experts.py); MoE with tp > 1 needs sequence
    // parallelism (megatron/core/transformer/moe/moe_layer.py raises otherwise in training).
    out.etp = r.expert_tp();
    if (m.num_experts % r.ep != 0) return LayoutIssue::EpExperts;
    const double expert_grid =
        static_cast<double>(out.etp) * static_cast<double>(r.ep) * static_cast<double>(r.pp);
    if (expert_grid > static_cast<double>(r.gpus) || r.gpus % (out.etp * r.ep * r.pp) != 0) {
      return LayoutIssue::ExpertGpus;
    }
    out.edp = r.gpus / (out.etp * r.ep * r.pp);
    if (expert_width(m) % out.etp != 0) return LayoutIssue::EtpFfn;
    if (r.tp > 1 && r.sequence_parallel != 1) return LayoutIssue::MoeNeedsSp;
  }
  out.num_microbatches = 0;
  if (r.global_batch > 0) {
    int64_t per_step = 0;
    if (!checked_mul(r.micro_batch, out.dp, per_step) || per_step <= 0 ||
        r.global_batch % per_step != 0) {
      return LayoutIssue::GlobalBatch;
    }
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
    case LayoutIssue::EpExperts: return "ep_experts";
    case LayoutIssue::ExpertGpus: return "expert_gpus";
    case LayoutIssue::EtpFfn: return "etp_ffn";
    case LayoutIssue::MoeNeedsSp: return "moe_needs_sp";
    case LayoutIssue::LastStageLayers: return "last_stage_layers";
    case LayoutIssue::PipelineLayout: return "pipeline_layout";
    case LayoutIssue::TpMixer: return "tp_mixer";
    case LayoutIssue::CpMixer: return "cp_mixer";
    case LayoutIssue::CpMixerHeads: return "cp_mixer_heads";
  }
  return "unknown";
}

namespace {

[[noreturn]] void throw_layout_issue(LayoutIssue issue, const PretrainRequest& r,
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
                        " so unevenly that the first or the last stage would hold no layer "
                        "(stages of ceil(layers/pp) layers, the end stages giving up the rest)");
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
    case LayoutIssue::EpExperts:
      check_divides("parallel.ep", r.ep, "num_experts", m.num_experts);
      break;
    case LayoutIssue::ExpertGpus: {
      // blame the field that breaks it: ep when ep x pp alone does not divide the GPUs, else
      // etp (given, or tp's value when 0)
      const bool ep_alone = static_cast<double>(r.ep) * static_cast<double>(r.pp) <=
                                static_cast<double>(r.gpus) &&
                            r.gpus % (r.ep * r.pp) == 0;
      const char* field = !ep_alone ? "parallel.ep" : r.etp > 0 ? "parallel.etp" : "parallel.tp";
      throw Error(MEMEST_ERR_INVALID_ARGUMENT, field,
                  "parallel.gpus=" + str(r.gpus) + " is not divisible by etp*ep*pp=" +
                      json_number(static_cast<double>(r.expert_tp()) * static_cast<double>(r.ep) *
                                  static_cast<double>(r.pp)) +
                      " (the expert layers fold the same GPUs into etp x ep x edp x pp)");
    }
    case LayoutIssue::EtpFfn:
      // etp 0 means tp: the field given is parallel.tp
      check_divides(r.etp > 0 ? "parallel.etp" : "parallel.tp", r.expert_tp(),
                    "moe_intermediate_size", expert_width(m));
      break;
    case LayoutIssue::TpMixer:
      if (m.mamba_num_heads > 0 && m.mamba_num_heads % r.tp != 0) {
        check_divides("parallel.tp", r.tp, "mamba_num_heads", m.mamba_num_heads);
      } else if (!uses_mamba1(m) && m.mamba_groups > 0 && m.mamba_groups % r.tp != 0) {
        check_divides("parallel.tp", r.tp, "mamba_groups", m.mamba_groups);
      } else if (m.linear_key_heads > 0 && m.linear_key_heads % r.tp != 0) {
        check_divides("parallel.tp", r.tp, "linear_key_heads", m.linear_key_heads);
      } else {
        check_divides("parallel.tp", r.tp, "linear_value_heads", m.linear_value_heads);
      }
      break;
    case LayoutIssue::CpMixer:
      throw Error(MEMEST_ERR_UNSUPPORTED, "parallel.cp",
                  "parallel.cp=" + str(r.cp) +
                      (uses_mamba1(m) || uses_kda(m)
                           ? ": no stack splits a Mamba-1 or Kimi Delta Attention scan over "
                             "context parallelism (it carries a state along the whole "
                             "sequence; Megatron-Core's all-to-all split is for its own Mamba-2 "
                             "and gated DeltaNet); use cp 1"
                           : ": context parallelism over Mamba-2 or gated DeltaNet layers is "
                             "Megatron-Core's all-to-all head split "
                             "(megatron/core/ssm/mamba_context_parallel.py); framework " +
                                 std::string(enum_name(MEMEST_ENUM_FRAMEWORK, r.stack.framework)) +
                                 " has none: use framework megatron or cp 1"));
    case LayoutIssue::CpMixerHeads: {
      const int64_t ranks = r.tp * r.cp;
      std::string what;
      switch (cp_mixer_split(m, r.tp, r.cp)) {
        case CpMixerSplit::MambaHeads:
          what = "tp*cp=" + str(ranks) + " must divide mamba_num_heads=" + str(m.mamba_num_heads);
          break;
        case CpMixerSplit::MambaGroups:
          what = "each tp rank's mamba_groups/tp=" + str(m.mamba_groups / r.tp) +
                 " must divide cp or be divisible by it";
          break;
        case CpMixerSplit::DeltaHeads:
        case CpMixerSplit::Ok:  // not reached: check_layout found a conflict
          what = "tp*cp=" + str(ranks) + " must divide linear_key_heads=" +
                 str(m.linear_key_heads) + " and linear_value_heads=" + str(m.linear_value_heads);
          break;
      }
      fail("parallel.cp", "parallel.cp=" + str(r.cp) +
                              ": Megatron-Core's context parallelism hands each cp rank whole "
                              "mixer heads (an all-to-all around the scan, "
                              "megatron/core/ssm/mamba_context_parallel.py, "
                              "gated_delta_net/common.py): " + what);
    }
    case LayoutIssue::MoeNeedsSp:
      fail("parallel.sp", "a mixture-of-experts model with tp > 1 needs sequence parallelism "
                          "(Megatron-Core refuses MoE training with TP and no SP)");
    case LayoutIssue::LastStageLayers: {
      const bool first = r.first_stage_layers > 0, last = r.last_stage_layers > 0;
      const int64_t others = r.pp - (first ? 1 : 0) - (last ? 1 : 0);
      const std::string given =
          first && last ? "first_stage_layers + last_stage_layers = " +
                              str(r.first_stage_layers + r.last_stage_layers)
          : first       ? "first_stage_layers = " + str(r.first_stage_layers)
                        : "last_stage_layers = " + str(r.last_stage_layers);
      fail(last ? "parallel.last_stage_layers" : "parallel.first_stage_layers",
           given + " needs pp >= 2 and leaves " +
               str(m.num_hidden_layers - r.first_stage_layers - r.last_stage_layers) + " of " +
               str(m.num_hidden_layers) + " layers that the other " + str(others) +
               " stages must split evenly, at least one layer each" +
               (r.vpp > 1 ? "; with vpp=" + str(r.vpp) + " every stage's layers must divide by vpp"
                          : std::string()));
    }
    case LayoutIssue::PipelineLayout: {
      int64_t vpp = 0;
      std::string why;
      StageLayers unused;
      if (!parse_pipeline_layout(r.pipeline_layout, r.pp, m.num_hidden_layers, m.mtp_layers,
                                 unused, vpp, why)) {
        fail("parallel.pipeline_layout", why);
      }
      fail("parallel.vpp", "pipeline_layout has " + str(vpp * r.pp) + " virtual stages = pp x vpp: "
                           "set vpp to " + str(vpp) + ", got " + str(r.vpp));
    }
    case LayoutIssue::None:
      break;
  }
  fail("", "internal: unexpected layout issue", MEMEST_ERR_INTERNAL);
}

}  // namespace

void validate_expert_fields(const memest_model& m, int64_t ep, int64_t etp, const std::string& at) {
  check_range(at + ".ep", ep, 1, kMaxExperts);
  check_range(at + ".etp", etp, 0, kMaxGpus);
  if (!is_moe(m) && (ep > 1 || etp > 1)) {
    fail(at + (ep > 1 ? ".ep" : ".etp"),
         "expert parallelism needs a mixture-of-experts model (num_experts > 0); this model is "
         "dense");
  }
}

void validate_fields(const PretrainRequest& r) {
  validate_model(r.model, "model", false);
  check_range("parallel.gpus", r.gpus, 1, kMaxGpus);
  check_range("parallel.tp", r.tp, 1, kMaxGpus);
  check_range("parallel.cp", r.cp, 1, kMaxGpus);
  check_range("parallel.pp", r.pp, 1, kMaxGpus);
  check_range("parallel.vpp", r.vpp, 1, kMaxVpp);
  check_range("training.seq_len", r.seq_len, 1, kMaxSeq);
  check_range("training.micro_batch", r.micro_batch, 1, kMaxMicroBatch);
  check_range("training.global_batch", r.global_batch, 0, kMaxGlobalBatch);
  validate_zero(r.zero, "parallel.zero");
  validate_expert_fields(r.model, r.ep, r.etp, "parallel");
  check_range("parallel.last_stage_layers", r.last_stage_layers, 0, r.model.num_hidden_layers);
  check_range("parallel.first_stage_layers", r.first_stage_layers, 0, r.model.num_hidden_layers);
  if (!r.pipeline_layout.empty()) {
    if (r.first_stage_layers > 0 || r.last_stage_layers > 0 || r.uneven_pipeline == 1) {
      fail("parallel.pipeline_layout",
           "sets every stage's layers: leave first_stage_layers, last_stage_layers and "
           "uneven_pipeline out");
    }
    if (r.pipeline_layout.size() > 65536) {
      fail("parallel.pipeline_layout", "is longer than 65536 characters");
    }
  }
  // (a subnormal factor made the experts' rows vanish: a NaN step time in the search)
  if (!std::isfinite(r.moe_capacity_factor) || r.moe_capacity_factor < 0 ||
      r.moe_capacity_factor > kMaxCapacityFactor ||
      (r.moe_capacity_factor > 0 && r.moe_capacity_factor < kMinCapacityFactor)) {
    fail("training.moe_capacity_factor", "must be 0 (drop-less) or a capacity factor from " +
                                             json_number(kMinCapacityFactor) + " up to " +
                                             json_number(kMaxCapacityFactor));
  }
  if (r.moe_capacity_factor > 0 && !is_moe(r.model)) {
    fail("training.moe_capacity_factor", "is set but the model has no experts (a dense model)");
  }
  if (r.sequence_parallel != 0 && r.sequence_parallel != 1) fail("parallel.sp", "must be 0 or 1");
  if (r.flash_attention != 0 && r.flash_attention != 1) {
    fail("training.flash_attention", "must be 0 or 1");
  }
  if (r.uneven_pipeline != 0 && r.uneven_pipeline != 1) fail("parallel.uneven_pipeline", "must be 0 or 1");
  if (!enum_name(MEMEST_ENUM_RECOMPUTE, r.recompute)) {
    fail("training.recompute", "must be one of " + enum_choices(MEMEST_ENUM_RECOMPUTE) +
                                   " (0.." + str(MEMEST_RECOMPUTE_COUNT - 1) + "), got " +
                                   str(r.recompute));
  }
  if (!enum_name(MEMEST_ENUM_ACTIVATION_MODEL, r.activation_model)) {
    fail("training.activation_model", "must be one of " +
                                          enum_choices(MEMEST_ENUM_ACTIVATION_MODEL) + " (0.." +
                                          str(MEMEST_ACTIVATIONS_COUNT - 1) + "), got " +
                                          str(r.activation_model));
  }
  validate_precision(r.precision, "training", true);
  validate_gpu(r.gpu, "gpu", true);
  validate_stack(r);
  validate_adapter(r);
}

Plan make_plan(const PretrainRequest& r) {
  validate_fields(r);
  LayoutCheck check;
  const LayoutIssue issue = check_layout(r, check);
  if (issue != LayoutIssue::None) throw_layout_issue(issue, r, check);
  return make_plan_unchecked(r, check);
}

ModelTerms model_terms(const PretrainRequest& r) {
  const memest_model& m = r.model;
  ModelTerms k;
  k.dense_layer = dense_layer_params(m);
  k.edge = edge_params(m);
  k.param_count = count_parameters(m, k.edge, k.dense_layer);
  k.activation_model = static_cast<memest_activation_model>(r.activation_model);
  if (k.activation_model == MEMEST_ACTIVATIONS_AUTO) {
    k.activation_model =
        m.family == MEMEST_FAMILY_GPT ? MEMEST_ACTIVATIONS_GPT : MEMEST_ACTIVATIONS_LLAMA;
  }
  k.coefficients = activation_coefficients(m, k.activation_model);
  k.flops = model_flops(m);
  if (is_moe(m)) k.moe_parts = moe_layer_parts(m);
  return k;
}

Plan make_plan_unchecked(const PretrainRequest& r, const LayoutCheck& check) {
  return make_plan_unchecked(r, check, model_terms(r));
}

Plan make_plan_unchecked(const PretrainRequest& r, const LayoutCheck& check,
                         const ModelTerms& terms) {
  const memest_model& m = r.model;
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
  plan.precision = r.precision;
  if (plan.precision.optimizer_bytes == MEMEST_OPTIMIZER_BYTES_DERIVE) {
    plan.precision.optimizer_bytes =
        derived_optimizer_bytes(r.precision.optimizer, r.stack.framework, r.precision.param_bytes,
                                r.stack.master_weights, r.stack.optimizer_state_bytes);
  }
  plan.stack = r.stack;
  plan.adapter = r.adapter;
  plan.framework = r.stack.framework;
  plan.loss = resolved_loss(r.stack.framework, r.stack.loss);
  plan.zero = effective_zero(r.stack.framework, r.zero);
  plan.layout.seq_len = static_cast<double>(r.seq_len);
  plan.layout.micro_batch = static_cast<double>(r.micro_batch);
  plan.layout.tp = static_cast<double>(r.tp);
  plan.layout.cp = static_cast<double>(r.cp);
  plan.layout.sequence_parallel = r.sequence_parallel == 1;
  plan.layout.flash_attention = r.flash_attention == 1;
  plan.layout.recompute = static_cast<memest_recompute>(r.recompute);
  plan.layout.recompute_modules = recompute_modules_in_effect(r);
  plan.activation_model = terms.activation_model;
  plan.coefficients = terms.coefficients;
  plan.dense_layer = terms.dense_layer;
  plan.edge = terms.edge;
  plan.param_count = terms.param_count;
  plan.flops = terms.flops;
  plan.moe_parts = terms.moe_parts;
  if (plan.framework != MEMEST_FRAMEWORK_MEGATRON || plan.loss != MEMEST_LOSS_FUSED) {
    plan.stack_terms = stack_layer_terms(plan);
  }
  plan.ep = is_moe(m) ? r.ep : 1;
  plan.etp = check.etp;
  plan.edp = check.edp;
  plan.moe_capacity_factor = r.moe_capacity_factor;
  return plan;
}

}  // namespace memest
