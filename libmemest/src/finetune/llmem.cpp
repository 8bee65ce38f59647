#include "finetune/llmem.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "activations/activations.hpp"
#include "activations/mixer_activations.hpp"
#include "activations/stack_activations.hpp"
#include "core/error.hpp"
#include "core/limits.hpp"
#include "core/verdict.hpp"
#include "model/gpu_profile.hpp"
#include "model/hybrid.hpp"
#include "model/model.hpp"
#include "model/tensors.hpp"

namespace memest {

namespace {


std::string str(int64_t v) { return std::to_string(v); }

// ceil(bytes / cu_p) * cu_p: the allocator hands out whole pages (LLMem Sec. 4.2).
double pages(double bytes, double page) { return std::ceil(bytes / page) * page; }

double sum(const memest_finetune_parts& p) {
  return p.base + p.params + p.optimizer + p.outputs + p.lm_head + p.backward_buffer;
}

// Per-GPU contributions of each term under a method (LLMem Sec. 5 and Figure 4).
memest_finetune_parts contributions(const memest_finetune_parts& s, memest_finetune_method method,
                                    double gpus, double tp) {
  memest_finetune_parts c = s;
  c.backward_buffer = 0;
  switch (method) {
    case MEMEST_FINETUNE_CDP:  // m_peak^s = m_base + m_p + m_os + m_out + m_lm
      break;
    case MEMEST_FINETUNE_ZERO3:  // m_base + m_p,16 + (m_p,32 + m_os)/gpu_n + m_out + m_lm
      c.params_fp32 = s.params_fp32 / gpus;
      c.params = s.params_fp16 + c.params_fp32;
      c.optimizer = s.optimizer / gpus;
      break;
    case MEMEST_FINETUNE_TP:  // m_base + (m_p + m_os)/gpu_n + m_out + m_lm + m_back^tp
      c.params = s.params / gpus;
      c.params_fp16 = s.params_fp16 / gpus;
      c.params_fp32 = s.params_fp32 / gpus;
      c.optimizer = s.optimizer / gpus;
      c.backward_buffer = s.backward_buffer;
      break;
    case MEMEST_FINETUNE_DP_TP:  // m_peak^dp - m_p,16 * tp_n / gpu_n + m_back^tp
      c.params_fp16 = s.params_fp16 - s.params_fp16 * tp / gpus;
      c.params_fp32 = s.params_fp32 / gpus;
      c.params = c.params_fp16 + c.params_fp32;
      c.optimizer = s.optimizer / gpus;
      c.backward_buffer = s.backward_buffer;
      break;
    default:
      fail("finetune.method", "has no peak of its own");
  }
  return c;
}

// 1D TP splits every expert's MLP as it splits the dense one (column-parallel gate/up,
// row-parallel down): the routed and shared experts' widths must divide too.
std::string experts_indivisible(const memest_model& m, int64_t t) {
  if (!is_moe(m)) return "";
  if (expert_width(m) % t != 0) {
    return " does not divide moe_intermediate_size=" + str(expert_width(m)) +
           " (1D TP splits every expert's MLP)";
  }
  if (m.num_shared_experts > 0 && shared_expert_width(m) % t != 0) {
    return " does not divide the shared experts' intermediate size " +
           str(shared_expert_width(m));
  }
  return "";
}

// Bytes the decoder layers save without checkpointing. LLMem's dense block (the family's
// coefficients) for every layer; each MoE layer swaps its dense MLP share for the sparse block
// Hugging Face's modeling code runs (router, routed and shared experts: eager_block_bytes).
double layers_bytes_without_checkpointing(const memest_model& m, const ActivationLayout& x) {
  const auto k = activation_coefficients(m, MEMEST_ACTIVATIONS_AUTO);
  const double dense = layer_activation_bytes(m, k, x);
  const double layers = static_cast<double>(m.num_hidden_layers);
  // Hybrid layers (model/hybrid.hpp) swap the attention share for what their mixer's kernel
  // saves as transformers runs it (mamba_ssm's fused split-conv1d-scan, fla's chunked delta
  // rule: mixer_activations.hpp) and drop the share of a block they lack.
  const double hybrid =
      hybrid_activation_delta(m, x, layer_mix(m, 0, m.num_hidden_layers),
                              megatron_block_shares(m, k, x), false);
  if (!is_moe(m)) return layers * dense + hybrid;
  EagerBlockOptions hf;
  hf.block = EagerBlock::HuggingFace;
  const double sparse = dense - mlp_activation_bytes(m, k, x) + eager_block_bytes(m, x, hf).mlp;
  const double moe_layers = static_cast<double>(moe_layer_count(m));
  return (layers - moe_layers) * dense + moe_layers * sparse + hybrid;
}

// LLMem's 1D TP (and DP+TP) splits attention heads and MLP columns; a state-space or
// delta-rule mixer's scan over split heads is not part of its model.
std::string mixers_unsplit(const memest_model& m) {
  const LayerMix mix = layer_mix(m, 0, m.num_hidden_layers);
  if (mix.mamba + mix.deltanet + mix.parallel == 0) return "";
  return " on a model with Mamba / gated DeltaNet / Kimi Delta Attention layers: LLMem's tensor "
         "parallelism splits attention heads and MLP columns, not a scan's heads (cdp and zero3 "
         "estimate it)";
}

}  // namespace

MethodUnavailable method_unavailable_reason(const memest_model& m, memest_finetune_method method,
                                            int64_t gpus, int64_t tp) {
  const auto gpus_field = [](std::string why) { return MethodUnavailable{"parallel.gpus", std::move(why)}; };
  const auto tp_field = [](std::string why) { return MethodUnavailable{"finetune.tp", std::move(why)}; };
  const auto method_field = [](std::string why) { return MethodUnavailable{"finetune.method", std::move(why)}; };
  if (method == MEMEST_FINETUNE_TP) {
    if (gpus < 2) return gpus_field("1D tensor parallelism needs at least 2 GPUs");
    if (m.num_attention_heads % gpus != 0) {
      return gpus_field("parallel.gpus=" + str(gpus) + " does not divide num_attention_heads=" +
                        str(m.num_attention_heads) + " (1D TP splits every layer over all GPUs)");
    }
    if (m.intermediate_size % gpus != 0) {
      return gpus_field("parallel.gpus=" + str(gpus) + " does not divide intermediate_size=" +
                        str(m.intermediate_size));
    }
    const std::string experts = experts_indivisible(m, gpus);
    if (!experts.empty()) return gpus_field("parallel.gpus=" + str(gpus) + experts);
    const std::string mixers = mixers_unsplit(m);
    if (!mixers.empty()) return method_field("finetune.method=tp" + mixers);
  }
  if (method == MEMEST_FINETUNE_DP_TP) {
    if (tp < 2 || tp >= gpus) {
      return tp_field("finetune.tp=" + str(tp) + " must be between 2 and gpus-1 (DP+TP needs both)");
    }
    if (gpus % tp != 0) {
      return tp_field("finetune.tp=" + str(tp) + " does not divide parallel.gpus=" + str(gpus));
    }
    if (m.num_attention_heads % tp != 0) {
      return tp_field("finetune.tp=" + str(tp) + " does not divide num_attention_heads=" +
                      str(m.num_attention_heads));
    }
    if (m.intermediate_size % tp != 0) {
      return tp_field("finetune.tp=" + str(tp) + " does not divide intermediate_size=" +
                      str(m.intermediate_size));
    }
    const std::string experts = experts_indivisible(m, tp);
    if (!experts.empty()) return tp_field("finetune.tp=" + str(tp) + experts);
    const std::string mixers = mixers_unsplit(m);
    if (!mixers.empty()) return method_field("finetune.method=dp+tp" + mixers);
  }
  return {};
}

FinetuneInputs finetune_inputs(const FinetuneRequest& r) {
  validate_model(r.model, "model", false);
  // LLMem (Kim et al.) derives its terms for dense decoders. Mixture-of-experts and latent
  // attention models are estimated with the same terms over their real tensors (every expert
  // is a Linear of its own in Hugging Face's modeling code) and, without checkpointing, the
  // sparse block's saved tensors as transformers runs it (llmem_parts); hybrid layers (Mamba,
  // gated DeltaNet, KDA) likewise by what their kernels save, under cdp and zero3.
  if (r.model.num_experts + r.model.num_shared_experts > kMaxFinetuneExperts) {
    fail("model.num_experts",
         "fine-tuning estimates at most " + str(kMaxFinetuneExperts) +
             " experts per MoE layer (routed + shared; LLMem's chunk search packs each expert's "
             "tensors), got " + str(r.model.num_experts + r.model.num_shared_experts) +
             "; the pretrain and search modes estimate it",
         MEMEST_ERR_UNSUPPORTED);
  }
  const int64_t moe_layers = is_moe(r.model) ? moe_layer_count(r.model) : 0;
  const int64_t experts_total = moe_layers * (r.model.num_experts + r.model.num_shared_experts);
  if (experts_total > kMaxFinetuneExpertsTotal) {
    fail("model.num_hidden_layers",
         str(moe_layers) + " MoE layers of " +
             str(r.model.num_experts + r.model.num_shared_experts) + " experts are " +
             str(experts_total) + " experts in all: fine-tuning estimates at most " +
             str(kMaxFinetuneExpertsTotal) +
             " (it lists every expert's tensors); the pretrain and search modes estimate it",
         MEMEST_ERR_UNSUPPORTED);
  }
  FinetuneInputs in;
  in.model = r.model;
  in.model.mtp_layers = 0;
  const memest_model& m = in.model;
  check_range("parallel.gpus", r.gpus, 1, kMaxFinetuneGpus);
  check_range("training.seq_len", r.seq_len, 2, kMaxSeq);
  if (r.method < MEMEST_FINETUNE_CDP || r.method > MEMEST_FINETUNE_AUTO ||
      r.method == MEMEST_FINETUNE_CPU_OFFLOAD) {
    fail("finetune.method", "must be cdp, zero3, tp, dp+tp or auto");
  }
  if (r.method != MEMEST_FINETUNE_AUTO) check_range("finetune.batch", r.batch, 1, kMaxFinetuneBatch);
  check_range("finetune.tp", r.tp, 0, kMaxFinetuneGpus);
  if (r.gradient_checkpointing != 0 && r.gradient_checkpointing != 1) {
    fail("finetune.gradient_checkpointing", "must be 0 or 1");
  }
  if (r.flash_attention != 0 && r.flash_attention != 1) fail("finetune.flash_attention", "must be 0 or 1");
  if (!(r.param_bytes >= 1 && r.param_bytes <= 4)) {
    fail("finetune.dtype", "LLMem's mixed precision keeps 16-bit parameters (2 bytes)");
  }
  if (m.learned_position_rows > 0 && m.max_position_embeddings > 0 &&
      r.seq_len > m.max_position_embeddings) {
    fail("training.seq_len", "seq_len=" + str(r.seq_len) +
                                 " is longer than the model's learned positions "
                                 "(max_position_embeddings=" + str(m.max_position_embeddings) + ")");
  }
  if (r.method == MEMEST_FINETUNE_DP_TP && r.tp == 0) {
    throw Error(MEMEST_ERR_MISSING_FIELD, "finetune.tp", "finetune.tp: missing (dp+tp needs a tp size)");
  }
  if (r.method == MEMEST_FINETUNE_TP || r.method == MEMEST_FINETUNE_DP_TP ||
      (r.method == MEMEST_FINETUNE_AUTO && r.tp != 0)) {
    const auto method = r.method == MEMEST_FINETUNE_TP ? MEMEST_FINETUNE_TP : MEMEST_FINETUNE_DP_TP;
    const MethodUnavailable why = method_unavailable_reason(m, method, r.gpus, r.tp);
    if (!why.empty()) throw Error(MEMEST_ERR_INVALID_ARGUMENT, why.field, why.reason);
  }

  in.capacity = validate_gpu(r.gpu, "gpu", true);
  in.seq_len = static_cast<double>(r.seq_len);
  in.checkpointing = r.gradient_checkpointing == 1;
  in.flash_attention = r.flash_attention == 1;
  in.b16 = r.param_bytes;
  if (!std::isfinite(r.base_bytes) || r.base_bytes > 1e13) fail("finetune.base_bytes", "must be finite and at most 1e13");
  in.base = r.base_bytes < 0 ? r.gpu.context_bytes : r.base_bytes;
  if (!std::isfinite(r.page_bytes) || (r.page_bytes != 0 && r.page_bytes < 1) || r.page_bytes > 1e12) {
    fail("finetune.page_bytes", "must be between 1 and 1e12 (0: the GPU's page)");
  }
  in.page = r.page_bytes > 0 ? r.page_bytes : r.gpu.page_bytes;

  // Split the tensors as LLMem does: the word embedding apart, the LM head apart, the rest
  // chunked; momentum + variance rounded per Embedding/Linear tensor (m_os).
  std::vector<double> chunked;
  std::vector<int64_t> chunked_layer;  // each chunked tensor's layer (identical layers pack once)
  for (const Tensor& t : parameter_tensors(m)) {
    switch (t.kind) {
      case TensorKind::WordEmbedding: in.embed_p += t.numel; break;
      case TensorKind::LmHead: in.lm_head_p += t.numel; break;
      default:
        in.other_p += t.numel;
        chunked.push_back(t.numel);
        chunked_layer.push_back(t.layer);
    }
    if (t.kind == TensorKind::WordEmbedding || t.kind == TensorKind::PositionEmbedding ||
        t.kind == TensorKind::Linear) {
      in.os_bytes += pages(t.numel * (in.b32 + in.b32), in.page);  // LLMem m_os
    }
  }
  if (!std::isfinite(r.chunk_bytes) || r.chunk_bytes < 0 || r.chunk_bytes > 1e13) fail("finetune.chunk_bytes", "must be between 0 (search) and 1e13");
  if (r.chunk_bytes > 0) {
    const double cs = std::floor(r.chunk_bytes / in.b16);
    const double largest = chunked.empty() ? 0 : *std::max_element(chunked.begin(), chunked.end());
    if (cs < largest) {
      fail("finetune.chunk_bytes", "a chunk of " + str(static_cast<int64_t>(cs)) +
                                       " elements is smaller than the largest parameter tensor (" +
                                       str(static_cast<int64_t>(largest)) + " elements)");
    }
    in.chunk = pack_chunks(tensor_runs(chunked, chunked_layer), cs);
  } else {
    in.chunk = search_chunk_size(tensor_runs(chunked, chunked_layer));
  }
  return in;
}

memest_finetune_parts llmem_parts(const FinetuneInputs& in, double batch, double tp) {
  const memest_model& m = in.model;
  const double cs = in.chunk.chunk_elements;
  const double bs = batch;
  const double sl = in.seq_len;
  const double o = static_cast<double>(m.hidden_size);        // o_n: output features
  const double l = static_cast<double>(m.num_hidden_layers);  // l_n
  const double e = m.learned_position_rows > 0 ? 2.0 : 1.0;   // e_n: Embedding operators
  const double v = static_cast<double>(m.vocab_size);         // dict_n
  const double b_logits = m.logits_fp32 ? in.b32 : in.b16;    // B, by model type

  memest_finetune_parts p;
  std::memset(&p, 0, sizeof p);
  p.base = in.base;
  // m_p = ceil((embed_p + ceil(other_p/cs) * cs) * (B16 + B32) / cu_p) * cu_p
  const double chunked = in.embed_p + std::ceil(in.other_p / cs) * cs;
  p.params = pages(chunked * (in.b16 + in.b32), in.page);
  p.params_fp16 = pages(chunked * in.b16, in.page);
  p.params_fp32 = pages(chunked * in.b32, in.page);
  p.optimizer = in.os_bytes;
  if (in.checkpointing) {
    // m_out = ceil((e_n + l_n) * (bs * sl * o_n) * B16 / cu_p) * cu_p
    p.outputs = pages((e + l) * bs * sl * o * in.b16, in.page);
  } else {
    // Without checkpointing every layer keeps its saved activations (the family's model,
    // TP without sequence parallelism), plus the embedding outputs.
    ActivationLayout x;
    x.seq_len = sl;
    x.micro_batch = bs;
    x.tp = tp;
    x.sequence_parallel = false;
    x.flash_attention = in.flash_attention;
    p.outputs = pages(layers_bytes_without_checkpointing(m, x) + e * bs * sl * o * in.b16, in.page);
  }
  // m_lm: logits, the shifted copy and its gradient for the loss, and the LM head weights.
  p.lm_head = pages(bs * sl * v * b_logits, in.page) +
              2 * pages(bs * (sl - 1) * v * b_logits, in.page) + in.lm_head_p * in.b16;
  // m_back^tp = ceil(l_n * (bs * sl * o_n) * (tp_n - 1)/tp_n * B16 / cu_p) * cu_p
  p.backward_buffer = tp > 1 ? pages(l * bs * sl * o * (tp - 1) / tp * in.b16, in.page) : 0.0;
  return p;
}

double peak_cdp(const memest_finetune_parts& p) {
  return sum(contributions(p, MEMEST_FINETUNE_CDP, 1, 1));
}
double peak_zero3(const memest_finetune_parts& p, double gpus) {
  return sum(contributions(p, MEMEST_FINETUNE_ZERO3, gpus, 1));
}
double peak_tp(const memest_finetune_parts& p, double gpus) {
  return sum(contributions(p, MEMEST_FINETUNE_TP, gpus, gpus));
}
double peak_dp_tp(const memest_finetune_parts& p, double gpus, double tp) {
  return sum(contributions(p, MEMEST_FINETUNE_DP_TP, gpus, tp));
}

namespace {
// Tensor-parallel size a method runs with.
double method_tp(memest_finetune_method method, double gpus, double tp) {
  if (method == MEMEST_FINETUNE_TP) return gpus;
  if (method == MEMEST_FINETUNE_DP_TP) return tp;
  return 1;
}
}  // namespace

double method_peak(const FinetuneInputs& in, memest_finetune_method method, double batch,
                   double gpus, double tp) {
  const double t = method_tp(method, gpus, tp);
  return sum(contributions(llmem_parts(in, batch, t), method, gpus, t));
}

memest_finetune_result compute_finetune(const FinetuneRequest& r) {
  if (r.method == MEMEST_FINETUNE_AUTO) {
    fail("finetune.method", "auto is answered by memest_finetune_select");
  }
  const FinetuneInputs in = finetune_inputs(r);
  const auto method = static_cast<memest_finetune_method>(r.method);
  const double gpus = static_cast<double>(r.gpus);
  const double t = method_tp(method, gpus, static_cast<double>(r.tp));

  memest_finetune_result out;
  std::memset(&out, 0, sizeof out);
  out.struct_size = sizeof out;
  out.method = r.method;
  out.tp = static_cast<int64_t>(t);
  out.dp = method == MEMEST_FINETUNE_CDP || method == MEMEST_FINETUNE_ZERO3 ? r.gpus
           : method == MEMEST_FINETUNE_TP                                  ? 1
                                                                           : r.gpus / r.tp;
  out.batch = r.batch;
  out.num_parameters = count_parameters(in.model).total;
  out.parts = llmem_parts(in, static_cast<double>(r.batch), t);
  out.per_gpu = contributions(out.parts, method, gpus, t);
  out.peak_bytes = sum(out.per_gpu);
  if (!std::isfinite(out.peak_bytes)) fail("", "the sizes given overflow a finite byte count", MEMEST_ERR_OVERFLOW);
  out.capacity_bytes = in.capacity;
  out.usage_fraction = out.peak_bytes / in.capacity;
  out.verdict = out.peak_bytes <= in.capacity ? MEMEST_VERDICT_FITS : MEMEST_VERDICT_OOM;
  // 1.11: the product's margin (core/verdict.hpp peak_verdict_for), what front ends headline:
  // fits up to MEMEST_PEAK_FITS_FRACTION of capacity, tight up to all of it. LLMem's own test
  // (verdict) still decides Algorithm 1's batches (finetune/select.cpp).
  out.peak_verdict = peak_verdict_for(out.peak_bytes, in.capacity);
  out.chunk_elements = in.chunk.chunk_elements;
  out.chunk_count = in.chunk.chunks;
  out.chunk_waste_bytes = in.chunk.waste_elements * (in.b16 + in.b32);
  return out;
}

}  // namespace memest
