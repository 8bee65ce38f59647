// Activation-side mechanisms of the training stacks (activations/stack_activations.hpp), each
// against a value worked by hand. Shapes: Llama-3.1-8B (h = 4096, a = 32, k = 8, d = 128,
// h_ffn = 14336, v = 128256) at s = 8192, b = 1, so N = s*b = 8192 tokens and
// sbh = 8192 * 4096 = 33554432.
#include <doctest/doctest.h>

#include "activations/activations.hpp"
#include "activations/stack_activations.hpp"
#include "model/model.hpp"
#include "model/presets.hpp"

namespace {

memest_model llama8b() {
  memest_model m = memest::default_model();
  m.family = MEMEST_FAMILY_LLAMA;
  m.hidden_size = 4096;
  m.num_hidden_layers = 32;
  m.num_attention_heads = 32;
  m.num_key_value_heads = 8;
  m.intermediate_size = 14336;
  m.vocab_size = 128256;
  m.gated_mlp = 1;
  return m;
}

memest::ActivationLayout layout(double tp, bool sp) {
  memest::ActivationLayout x;
  x.seq_len = 8192;
  x.micro_batch = 1;
  x.tp = tp;
  x.cp = 1;
  x.sequence_parallel = sp;
  x.flash_attention = true;
  return x;
}

constexpr double kSbh = 8192.0 * 4096.0;  // 33554432

// The small Qwen3-MoE of the MoE cases: h = 1024, 16 heads of 64 (4 KV heads), QK-norms,
// 32 experts of width 512, top-4, every layer MoE; and its layout, s = 2048, b = 4.
memest_model qwen3_moe_small() {
  memest_model m = memest::default_model();
  m.hidden_size = 1024;
  m.num_hidden_layers = 8;
  m.num_attention_heads = 16;
  m.num_key_value_heads = 4;
  m.head_dim = 64;
  m.intermediate_size = 3072;
  m.vocab_size = 32000;
  m.gated_mlp = 1;
  m.qk_norm = 1;
  m.num_experts = 32;
  m.num_experts_per_tok = 4;
  m.moe_intermediate_size = 512;
  m.moe_layer_step = 1;
  return m;
}

memest::ActivationLayout moe_layout(double tp, bool sp) {
  memest::ActivationLayout x = layout(tp, sp);
  x.seq_len = 2048;
  x.micro_batch = 4;
  return x;
}

}  // namespace

using memest::LossKind;

TEST_CASE("loss memory: unfused F.cross_entropy on bf16 logits, 10 then 12 bytes per logit") {
  // N*V = 8192 * 128256 = 1050673152 logits.
  // forward, while log_softmax writes: bf16 logits 2 + fp32 copy 4 + log-probs 4 = 10 B/logit
  //   = 10506731520; backward, inside LogSoftmaxBackward: saved log-probs 4 + nll grad 4 +
  //   new grad 4 = 12 B/logit = 12608077824. Held logits add 2: 14 B/logit = 14709424128.
  memest::LossInputs in;
  in.tokens = 8192;
  in.vocab = 128256;
  in.hidden = 4096;
  in.logit_bytes = 2;
  const auto r = memest::loss_memory(LossKind::Unfused, in);
  CHECK(r.forward == 10506731520.0);
  CHECK(r.backward == 12608077824.0);
  CHECK(r.peak() == 12608077824.0);
  in.logits_held = true;
  CHECK(memest::loss_memory(LossKind::Unfused, in).backward == 14709424128.0);
  // HF releases that shifted the logits: the contiguous fp32 copy of logits[..., :-1, :] is
  // alive beside the upcast while log_softmax writes: 2 + 4 + 4 + 4 = 14 B/logit = 14709424128.
  in.logits_held = false;
  in.shift_copy = true;
  CHECK(memest::loss_memory(LossKind::Unfused, in).forward == 14709424128.0);
  in.shift_copy = false;
  // fp32 logits (d = 4): .float() is a no-op, forward 4 + 4 = 8 B/logit = 8405385216.
  in.logit_bytes = 4;
  CHECK(memest::loss_memory(LossKind::Unfused, in).forward == 8405385216.0);
}

TEST_CASE("loss memory: F.cross_entropy on shifted fp16 logits without upcast, 6 bytes per logit") {
  // GPT2-XL at micro-batch 40, s = 1024 (the ColossalAI-Pytorch-lightning benchmark under
  // DeepSpeed fp16): N = 40 * 1024 = 40960, V = 50257, N*V = 50257 * 40000 + 50257 * 960 =
  // 2010280000 + 48246720 = 2058526720 logits, d = 2 (fp16).
  // forward, while log_softmax writes: logits 2 + shifted contiguous copy 2 + fp16 log-probs 2
  //   = 6 B/logit = 12351160320;
  // backward, inside LogSoftmaxBackward: saved log-probs 2 + nll grad 2 + new grad 2 = 6 B/logit
  //   = 12351160320, half of unfused's 12 B/logit = 24702320640. Held logits add 2: 8 B/logit
  //   = 16468213760.
  memest::LossInputs in;
  in.tokens = 40960;
  in.vocab = 50257;
  in.hidden = 1600;
  in.logit_bytes = 2;
  in.shift_copy = true;
  auto r = memest::loss_memory(LossKind::Unfused16Bit, in);
  CHECK(r.forward == 12351160320.0);
  CHECK(r.backward == 12351160320.0);
  CHECK(r.peak() == 12351160320.0);
  CHECK(memest::loss_memory(LossKind::Unfused, in).backward == 24702320640.0);
  in.logits_held = true;
  CHECK(memest::loss_memory(LossKind::Unfused16Bit, in).backward == 16468213760.0);
  // Without the shift (labels padded instead): logits 2 + log-probs 2 = 4 B/logit = 8234106880.
  in.logits_held = false;
  in.shift_copy = false;
  CHECK(memest::loss_memory(LossKind::Unfused16Bit, in).forward == 8234106880.0);
  // compiled: the input logits saved (2 B/logit = 4117053440) and their fp16 gradient
  // (4 B/logit = 8234106880 at the backward).
  in.shift_copy = true;
  in.compiled = true;
  r = memest::loss_memory(LossKind::Unfused16Bit, in);
  CHECK(r.forward == 4117053440.0);
  CHECK(r.backward == 8234106880.0);
}

TEST_CASE("loss memory: Megatron's fused vocab-parallel CE is today's 6 bytes per logit") {
  // tp = 8: V = 128256 / 8 = 16032, N = 8192 (the output layer's input is gathered):
  // N*V = 131334144; bf16 logits 2 + the fp32 copy made in place into the softmax 4 = 6 B/logit
  // = 788004864, forward and backward alike.
  const memest_model m = llama8b();
  memest::LossInputs in;
  in.tokens = 8192;
  in.vocab = 16032;
  in.hidden = 4096;
  const auto r = memest::loss_memory(LossKind::Fused, in);
  CHECK(r.forward == 788004864.0);
  CHECK(r.backward == 788004864.0);
  // ... which is what memest counts today: Eq. 14's 4sbv/t (head_activation_bytes less its
  // 4sbh/t) plus the overhead model's bf16 logits 2sbv/(tc).
  const auto x = layout(8, true);
  const double eq14_logits = memest::head_activation_bytes(m, x) - 4 * kSbh / 8;
  CHECK(r.peak() == eq14_logits + 2 * 8192.0 * 128256 / 8);
}

TEST_CASE("loss memory: torchtune's chunked CE keeps every chunk's log-probs") {
  // C = 8, N*V = 1050673152: forward at the last chunk: logits 2 + log-probs of all chunks 4 +
  // one chunk's fp32 copy 4/8 = 6.5 B/logit = 6829375488; backward: log-probs 4 + one chunk's
  // two fp32 gradients 8/8 = 5 B/logit = 5253365760 (7 B/logit = 7354712064 if held).
  memest::LossInputs in;
  in.tokens = 8192;
  in.vocab = 128256;
  in.hidden = 4096;
  in.chunks = 8;
  auto r = memest::loss_memory(LossKind::Chunked, in);
  CHECK(r.forward == 6829375488.0);
  CHECK(r.backward == 5253365760.0);
  CHECK(r.peak() == 6829375488.0);
  in.logits_held = true;
  CHECK(memest::loss_memory(LossKind::Chunked, in).backward == 7354712064.0);
  // compiled compute_cross_entropy: every chunk's bf16 logits saved (2) plus one chunk's bf16
  // gradient (2/8): 2.25 B/logit = 2364014592 at the backward, 2 B/logit = 2101346304 forward.
  in.logits_held = false;
  in.compiled = true;
  r = memest::loss_memory(LossKind::Chunked, in);
  CHECK(r.forward == 2101346304.0);
  CHECK(r.backward == 2364014592.0);
}

TEST_CASE("loss memory: a compiled F.cross_entropy saves its input logits, not the log-probs") {
  // bf16 logits: forward 2 B/logit = 2101346304; backward saved logits 2 + bf16 gradient 2 =
  // 4 B/logit = 4202692608. fp32 logits (torchtune's model upcasts before the loss): 4 and 8
  // B/logit = 8405385216.
  memest::LossInputs in;
  in.tokens = 8192;
  in.vocab = 128256;
  in.hidden = 4096;
  in.compiled = true;
  auto r = memest::loss_memory(LossKind::Unfused, in);
  CHECK(r.forward == 2101346304.0);
  CHECK(r.backward == 4202692608.0);
  in.logit_bytes = 4;
  CHECK(memest::loss_memory(LossKind::Unfused, in).backward == 8405385216.0);
}

TEST_CASE("loss memory: Liger fused linear + CE never materialises the logits") {
  // ceil(128256 / 4096) = 32; chunk = next_pow2(ceil(8192 / 32)) = 256 rows.
  // forward: 256 * 128256 * 2 = 65667072 (logits chunk) + 8192 * 4096 * 2 = 67108864
  // (grad_input) + 4 * 8192 = 32768 (fp32 loss_1d) = 132808704; backward: grad_input 67108864.
  memest::LossInputs in;
  in.tokens = 8192;
  in.vocab = 128256;
  in.hidden = 4096;
  const auto r = memest::loss_memory(LossKind::LinearFused, in);
  CHECK(r.forward == 132808704.0);
  CHECK(r.backward == 67108864.0);
  // A batch smaller than one chunk: N = 16 -> ceil(16/32) = 1 row, next_pow2 = 1, min(16, 1):
  // 1 * 128256 * 2 + 16 * 4096 * 2 + 64 = 256512 + 131072 + 64 = 387648.
  in.tokens = 16;
  CHECK(memest::loss_memory(LossKind::LinearFused, in).forward == 387648.0);
}

TEST_CASE("op_selective: torchtitan's per-op SAC on a Llama-3.1-8B block") {
  // mms in order: wq 4096, wk 1024, wv 1024, wo 4096, w1 14336, w3 14336, w2 4096 elements per
  // token; saved are the 1st, 3rd, 5th, 7th: 4096 + 1024 + 14336 + 4096 = 23552 -> 47104 B.
  // block input 2*4096 = 8192 B; SDPA output 2*32*128 = 8192 B; logsumexp 4*32 = 128 B.
  // Per token 63616 B; * 8192 tokens = 521142272 (15.53 sbh, against Megatron's 41 sbh).
  const memest_model m = llama8b();
  const auto r = memest::op_selective_layer(m, layout(1, false));
  CHECK(r.mm_outputs == 47104.0 * 8192);
  CHECK(r.block_input == 8192.0 * 8192);
  CHECK(r.attention_out == 8192.0 * 8192);
  CHECK(r.logsumexp == 128.0 * 8192);
  CHECK(r.reduce_scatter == 0.0);
  CHECK(r.total() == 521142272.0);
  // Reused by the block's recomputation: input 8192 + wv 2048 + w1 28672 + SDPA output 8192 +
  // logsumexp 128 = 47232 B per token (not wq's 8192, saved pre-rotary, nor w2's 8192).
  CHECK(r.reused_by_recompute == 47232.0 * 8192);
  // With repeat_kv (torchtitan 2025) SDPA saves a copy of V, not wv's output: 45184 B.
  CHECK(memest::op_selective_layer(m, layout(1, false), 2, false).reused_by_recompute ==
        45184.0 * 8192);
}

TEST_CASE("op_selective: the recomputed block adds the eager set less what SAC kept") {
  // torchtitan 2026 block (enable_gqa) eager: 168072 B per token; reused 47232 B: the rebuild
  // adds 120840 B per token = 989921280. Gradients: output 2*4096 + 2 * 2*14336 = 65536 B per
  // token = 536870912.
  const memest_model m = llama8b();
  memest::EagerBlockOptions o;
  o.block = memest::EagerBlock::Torchtitan;
  const auto x = layout(1, false);
  const auto w = memest::recompute_working_set(m, x, memest::eager_block_bytes(m, x, o).total(),
                                               memest::op_selective_layer(m, x).reused_by_recompute);
  CHECK(w.rebuilt == 989921280.0);
  CHECK(w.gradients == 536870912.0);
}

TEST_CASE("op_selective: TP 2 with SP saves full-size row-parallel outputs and reduce-scatters") {
  // wq 2048, wk 512, wv 512, wo 4096 (partial sum, full), w1 7168, w3 7168, w2 4096 (full);
  // saved 2048 + 512 + 7168 + 4096 = 13824 -> 27648 B; input 2*4096/2 = 4096 B; SDPA output
  // 2*16*128 = 4096 B; logsumexp 4*16 = 64 B; two reduce-scatter outputs 2 * 2*4096/2 = 8192 B.
  // Per token 44096 B; * 8192 = 361234432.
  const memest_model m = llama8b();
  const auto r = memest::op_selective_layer(m, layout(2, true));
  CHECK(r.reduce_scatter == 8192.0 * 8192);
  CHECK(r.total() == 361234432.0);
  // Without SP the all-reduce outputs are not saved and the input is not sharded:
  // 27648 + 8192 + 4096 + 64 = 40000 B per token = 327680000.
  CHECK(memest::op_selective_layer(m, layout(2, false)).total() == 327680000.0);
}

TEST_CASE("op_selective: a linear with a bias is an addmm, always saved, not counted") {
  // Qwen2-style q/k/v biases: q, k, v all saved (4096 + 1024 + 1024), then the mm count starts
  // at wo: wo 1st (saved 4096), w1 2nd, w3 3rd (saved 14336), w2 4th.
  // 6144 + 4096 + 14336 = 24576 el -> 49152 B; + 8192 + 8192 + 128 = 65664 B per token.
  memest_model m = llama8b();
  m.attention_qkv_bias = 1;
  CHECK(memest::op_selective_layer(m, layout(1, false)).total() == 65664.0 * 8192);
}

TEST_CASE("recompute_every N: every N-th block fully checkpointed") {
  // 7 layers, N = 3: blocks 3 and 6 checkpointed (1 unit each), 5 plain (10 units): 52.
  CHECK(memest::every_nth_checkpointed_bytes(7, 3, 1, 10) == 52.0);
  // 32 layers, N = 2, checkpointed 2sbh = 67108864, plain 41 sbh = 1375731712:
  // 16 * 67108864 + 16 * 1375731712 = 23085449216.
  CHECK(memest::every_nth_checkpointed_bytes(32, 2, 2 * kSbh, 41 * kSbh) == 23085449216.0);
  CHECK(memest::every_nth_checkpointed_bytes(4, 1, 1, 10) == 4.0);
  CHECK(memest::every_nth_checkpointed_bytes(4, 5, 1, 10) == 40.0);
}

TEST_CASE("full recomputation: the block being rebuilt and its backward gradients") {
  const memest_model m = llama8b();
  const auto k = memest::activation_coefficients(m, MEMEST_ACTIVATIONS_LLAMA);
  // t = 1: full layer 41 sbh less the fused-SwiGLU correction 2sbf = 7 sbh -> 34 sbh; kept
  // 2 sbh; rebuilt 32 sbh = 1073741824. Gradients: the output's 2 sbh + two h_ffn-wide
  // gradients 4sbf = 14 sbh -> 16 sbh = 536870912.
  auto r = memest::megatron_full_recompute_working_set(m, k, MEMEST_ACTIVATIONS_LLAMA,
                                                       layout(1, false));
  CHECK(r.rebuilt == 1073741824.0);
  CHECK(r.gradients == 536870912.0);
  // t = 8 with SP: layer sbh(8/8 + 33/8) = 5.125 sbh, less 7/8 sbh, less the kept 2/8 sbh:
  // 4 sbh = 134217728. Gradients: 2sbh/8 + the all-gathered 2sbh + 14/8 sbh = 4 sbh.
  r = memest::megatron_full_recompute_working_set(m, k, MEMEST_ACTIVATIONS_LLAMA,
                                                  layout(8, true));
  CHECK(r.rebuilt == 134217728.0);
  CHECK(r.gradients == 134217728.0);
  CHECK(r.total() == 268435456.0);
}

TEST_CASE("eager blocks: Hugging Face LlamaDecoderLayer in bf16") {
  // Per token: each LlamaRMSNorm saves its fp32 upcast 4h + the bf16 normalised 2h + rsqrt's
  // 4 B, and its output 2h is saved by the linears: 8h + 4 = 32772 B, two norms 65544 B.
  // Attention: Q 2*4096 + K,V 2*2*1024 + output 2*4096 + logsumexp 4*32 = 20608 B.
  // MLP: gate, SiLU out, up, product: 4 * 2 * 14336 = 114688 B.
  // Total 200840 B per token (49.03 sbh; Megatron's Llama: 41) * 8192 = 1645281280.
  const memest_model m = llama8b();
  memest::EagerBlockOptions o;
  const auto r = memest::eager_block_bytes(m, layout(1, false), o);
  CHECK(r.norms == 65544.0 * 8192);
  CHECK(r.attention == 20608.0 * 8192);
  CHECK(r.mlp == 114688.0 * 8192);
  CHECK(r.total() == 1645281280.0);
}

TEST_CASE("eager blocks: fp32 parameters under autocast") {
  // Residual stream fp32. Attention norm: the residual 4h + normed fp32 4h + rsqrt 4 B +
  // three bf16 casts of its output (q, k, v) 3*2h = 14h + 4 = 57348 B; MLP norm: 8h + 4 +
  // two casts (gate, up) 4h = 49156 B. Attention and MLP as in bf16: 20608 + 114688.
  // Total 241800 B per token * 8192 = 1980825600.
  const memest_model m = llama8b();
  memest::EagerBlockOptions o;
  o.autocast = true;
  const auto r = memest::eager_block_bytes(m, layout(1, false), o);
  CHECK(r.norms == (57348.0 + 49156.0) * 8192);
  CHECK(r.total() == 1980825600.0);
  // Autocast's bf16 weight copies: 2 bytes per linear parameter (8B: 7504658432 -> 15009316864).
  CHECK(memest::autocast_weight_copies_bytes(7504658432.0) == 15009316864.0);
}

TEST_CASE("eager blocks: torchtitan's block, 2025 (repeat_kv) and 2026 (enable_gqa)") {
  // nn.RMSNorm (fused kernel): input 2h + rstd 4 B + output 2h saved by the linears:
  // 16388 B per norm, 32776 B for two.
  // enable_gqa: attention 20608 B, MLP 114688 B: total 168072 B per token (41.03 sbh: the
  // 4D paper's 41 sbh plus the logsumexp) * 8192 = 1376845824.
  // repeat_kv: K and V at 32 heads: 8192 + 2*8192 + 8192 + 128 = 32896 B -> 180360 B per token
  // * 8192 = 1477509120.
  const memest_model m = llama8b();
  memest::EagerBlockOptions o;
  o.block = memest::EagerBlock::Torchtitan;
  auto r = memest::eager_block_bytes(m, layout(1, false), o);
  CHECK(r.norms == 32776.0 * 8192);
  CHECK(r.total() == 1376845824.0);
  o.gqa_native = false;
  r = memest::eager_block_bytes(m, layout(1, false), o);
  CHECK(r.attention == 32896.0 * 8192);
  CHECK(r.total() == 1477509120.0);
}

TEST_CASE("eager blocks: torch.compile recomputes the pointwise norm and the SiLU output") {
  // Norms as the fused kernel: 32776 B; attention 20608 B; MLP gate, up and the product
  // (read by w2's weight-gradient mm) 3*2*14336 = 86016 B. Total 139400 B per token * 8192 =
  // 1141964800. Under autocast the casts are CSE'd into one, the residual is fp32: each norm
  // 4h + 4 + 2h = 24580 B -> 49160 + 20608 + 86016 = 155784 B per token * 8192 = 1276182528.
  const memest_model m = llama8b();
  memest::EagerBlockOptions o;
  o.compiled = true;
  CHECK(memest::eager_block_bytes(m, layout(1, false), o).total() == 1141964800.0);
  o.autocast = true;
  CHECK(memest::eager_block_bytes(m, layout(1, false), o).total() == 1276182528.0);
}

TEST_CASE("eager blocks: LoRA saves only what the adapters and the gradient flow need") {
  // All seven linears adapted, r = 16, no dropout, bf16. Frozen norm scales: each norm keeps
  // its fp32 upcast 4h + rsqrt 4 B = 16388 B, plus its output shared by the adapters' lora_A
  // 2h: 24580 B, two norms 49160 B. Attention 20608 + four lora_A outputs 4 * 2*16 = 20736 B.
  // MLP: gate, SiLU out, up, and the product for down's lora_A: 114688 + three lora_A outputs
  // 96 = 114784 B. Total 184680 B per token * 8192 = 1512898560.
  const memest_model m = llama8b();
  memest::EagerBlockOptions o;
  o.lora = true;
  o.lora_targets = memest::kLoraAll;
  o.lora_rank = 16;
  auto r = memest::eager_block_bytes(m, layout(1, false), o);
  CHECK(r.norms == 49160.0 * 8192);
  CHECK(r.attention == 20736.0 * 8192);
  CHECK(r.mlp == 114784.0 * 8192);
  CHECK(r.total() == 1512898560.0);
  // peft's common q_proj + v_proj, r = 8, with dropout: the attention norm's output is saved
  // as two dropout outputs + masks 2 * 3 * 4096 = 24576 B -> 40964 B; the MLP norm keeps only
  // 16388 B (no adapter reads its output). Attention 20608 + 2 * 2*8 = 20640 B. MLP without the
  // product (frozen down_proj saves no input): 86016 B. Total 164008 B per token * 8192 =
  // 1343553536.
  o.lora_targets = memest::kLoraQ | memest::kLoraV;
  o.lora_rank = 8;
  o.lora_dropout = true;
  r = memest::eager_block_bytes(m, layout(1, false), o);
  CHECK(r.norms == (40964.0 + 16388.0) * 8192);
  CHECK(r.total() == 1343553536.0);
}

TEST_CASE("eager blocks: peft's fp32 adapters cast their inputs, dropout keeps a mask") {
  // All seven targets, r = 16, dropout, adapters fp32 (peft's autocast_adapter_dtype): each
  // adapter saves its own fp32 dropout output (4 B) and bool mask (1 B) per input element.
  // Norms: 2 * (4h + 4) = 32776 + attention norm 3 * 5h = 61440 + MLP norm 2 * 5h = 40960 =
  // 135176 B. Attention 20608 + o_proj's 5 * 4096 = 20480 + four fp32 lora_A outputs 4 * 4*16 =
  // 256: 41344 B. MLP 114688 - 28672 (product unsaved) + down's 5 * 14336 = 71680 + three
  // lora_A outputs 192 = 157888 B. Total 334408 B per token * 8192 = 2739470336.
  const memest_model m = llama8b();
  memest::EagerBlockOptions o;
  o.lora = true;
  o.lora_targets = memest::kLoraAll;
  o.lora_rank = 16;
  o.lora_dropout = true;
  o.adapter_bytes = 4;
  const auto r = memest::eager_block_bytes(m, layout(1, false), o);
  CHECK(r.norms == 135176.0 * 8192);
  CHECK(r.attention == 41344.0 * 8192);
  CHECK(r.mlp == 157888.0 * 8192);
  CHECK(r.total() == 2739470336.0);
}

TEST_CASE("eager blocks: a Qwen3-MoE layer (QK-norms, router, routed experts)") {
  // h = 1024, a = 16, k = 4, d = 64, 32 experts, top-4, expert width 512, s = 2048, b = 4:
  // N = 8192. Norms 2 * (8h + 4) = 16392 B. Attention: Q 2048 + K, V 2*2*256 = 1024 + output
  // 2048 + logsumexp 64 = 5184, q_norm per head (4 + 2)*1024 + 4*16 = 6208, k_norm 6*256 + 4*4 =
  // 1552: 12944 B. MoE (transformers 5 grouped_mm path): router softmax fp32 4*32 + topk
  // indices 8*4 = 160; per slot the three int64 indices (token, perm, inverse perm) 24, the
  // routing weight 2, the sorted input 2*1024 = 2048, gate_up 2*1024 = 2048, SiLU output and
  // product 2*512 each = 2048, down output 2048: 8218; four slots 32872: 33032 B.
  // Total 62368 B per token * 8192 = 510918656.
  const memest_model m = qwen3_moe_small();
  const memest::ActivationLayout x = moe_layout(1, false);
  memest::EagerBlockOptions o;
  auto r = memest::eager_block_bytes(m, x, o);
  CHECK(r.norms == 16392.0 * 8192);
  CHECK(r.attention == 12944.0 * 8192);
  CHECK(r.mlp == 33032.0 * 8192);
  CHECK(r.total() == 510918656.0);
  // Its dense layer (dense_mlp): 4 * 2 * 3072 = 24576 B of MLP.
  o.dense_mlp = true;
  CHECK(memest::eager_block_bytes(m, x, o).mlp == 24576.0 * 8192);
  // fp32 parameters under autocast: _grouped_mm casts its input to the fp32 weight, so the
  // expert path is fp32: per slot 24 + 2 + 4 * (2048 + 2048) = 16410, four 65640, + 160 =
  // 65800 B. The post-attention norm's output is cast once, for the router (the gather saves
  // no copy): that norm 4*1024 (fp32 upcast; its input is fp32) + 4*1024 (normed, fp32) + 4 +
  // 2*1024 (the router's bf16 cast) = 10244 B; the attention norm's output is cast by q, k
  // and v: 8196 + 3 * 2048 = 14340 B. Norms 24584 B.
  o.dense_mlp = false;
  o.autocast = true;
  r = memest::eager_block_bytes(m, x, o);
  CHECK(r.mlp == 65800.0 * 8192);
  CHECK(r.norms == 24584.0 * 8192);
  // tp 2 with SP (fsdp, etp = tp): the expert width splits, fe/t = 256, over all n*k rows: per
  // slot 24 + 2 + 2 * (2 * 1024 + 4 * 256) = 6170, four 24680, + router 160 = 24840 B.
  o.autocast = false;
  CHECK(memest::eager_block_bytes(m, moe_layout(2, true), o).mlp == 24840.0 * 8192);
}

TEST_CASE("eager blocks: LoRA on a Qwen3-MoE layer (frozen experts, per-expert adapters, router)") {
  // The layer of the case above (h = 1024, 32 experts, top-4, width 512, N = 8192 tokens),
  // bf16 adapters, no dropout. Frozen experts: the first grouped GEMM keeps the routed rows
  // and the second the product only for an adapter on them: per token 4 slots * 2 * (1024 +
  // 512) = 12288 B fewer than 33032: 20744 B.
  const memest_model m = qwen3_moe_small();
  const memest::ActivationLayout x = moe_layout(1, false);
  memest::EagerBlockOptions o;
  o.lora = true;
  // Attention only, q_proj + v_proj, r = 8. Norms with frozen scales keep the fp32 upcast and
  // rsqrt, 4h + 4 = 4100 B each; the attention norm's output, read by the adapters, 2h more:
  // 6148 + 4100 = 10248 B (the frozen router keeps nothing). Attention: Q, K, V, output,
  // logsumexp 5184; the QK-norms keep upcast and rsqrt only: q 4 * 1024 + 4 * 16 = 4160, k
  // 4 * 256 + 4 * 4 = 1040; two lora_A outputs 2 * 2 * 8 = 32: 10416 B. MLP 20744 B.
  // Total 41408 B per token * 8192 = 339214336.
  o.lora_targets = memest::kLoraQ | memest::kLoraV;
  o.lora_rank = 8;
  auto r = memest::eager_block_bytes(m, x, o);
  CHECK(r.norms == 10248.0 * 8192);
  CHECK(r.attention == 10416.0 * 8192);
  CHECK(r.mlp == 20744.0 * 8192);
  CHECK(r.total() == 339214336.0);
  // Every linear and the router, r = 16. The MLP norm's output is read by the router's
  // adapter: 6148 B, norms 12296 B. Attention 10384 + four lora_A outputs 4 * 2 * 16 = 10512 B.
  // MLP: 20744 + the routed rows once for the gate and up adapters 4 * 2 * 1024 = 8192 + the
  // product for the down adapters 4 * 2 * 512 = 4096 + three lora_A outputs per slot 3 * 4 *
  // 2 * 16 = 384 + the router's lora_A output 2 * 16 = 32: 33448 B.
  // Total 56256 B per token * 8192 = 460849152.
  o.lora_targets = memest::kLoraAll | memest::kLoraRouter;
  o.lora_rank = 16;
  r = memest::eager_block_bytes(m, x, o);
  CHECK(r.norms == 12296.0 * 8192);
  CHECK(r.attention == 10512.0 * 8192);
  CHECK(r.mlp == 33448.0 * 8192);
  CHECK(r.total() == 460849152.0);
}

TEST_CASE("eager blocks: multi-head latent attention (DeepSeek-V2-Lite's shapes, torchtitan)") {
  // h = 2048, 16 heads, q_lora_rank 0 (a full wq), kv_lora_rank 512, qk_nope 128, qk_rope 64,
  // v_head 128; tp 1, flash, torchtitan's fused norms. Per token: Q and K at 16 * 192 heads,
  // 2 * 3072 each = 12288; wkv_b's output (V's storage) 2 * 16 * 256 = 8192; the output
  // 2 * 16 * 128 = 4096; logsumexp 4 * 16 = 64; kv_norm's input 2 * 512 + rstd 4 = 1028 and its
  // output 2 * 512 = 1024: 26692 B. The attention norm's output is read by wq and wkv_a: one
  // bf16 tensor, 2h = 4096 B beside the norm's own 2h + 4 = 4100 B.
  const memest_model m = memest::find_model_preset("deepseek-v2-lite", "model").model;
  memest::EagerBlockOptions o;
  o.block = memest::EagerBlock::Torchtitan;
  const memest::ActivationLayout x = layout(1, false);
  const auto r = memest::eager_block_bytes(m, x, o);
  CHECK(r.attention == 26692.0 * 8192);
  // with q_lora_rank 1536 (DeepSeek-V3's): q_norm's input 2 * 1536 + 4 and output 2 * 1536
  memest_model q = m;
  q.q_lora_rank = 1536;
  CHECK(memest::eager_block_bytes(q, x, o).attention == (26692.0 + 3076 + 3072) * 8192);
}

TEST_CASE("recompute working set: an MoE block's MLP backward over its routed rows") {
  // The Qwen3-MoE layer above, nothing kept or rebuilt (full = kept): the output gradient
  // 2 * 1024 = 2048 B per token plus the SwiGLU backward's two gradients over k * fe =
  // 4 * 512 = 2048 elements: 2 * 2 * 2048 = 8192 B: 10240 B per token * 8192 = 83886080.
  // The dense block (intermediate 3072): 2048 + 2 * 2 * 3072 = 14336 B * 8192 = 117440512.
  memest_model m = memest::default_model();
  m.hidden_size = 1024;
  m.num_attention_heads = 16;
  m.num_key_value_heads = 4;
  m.head_dim = 64;
  m.intermediate_size = 3072;
  m.gated_mlp = 1;
  m.num_experts = 32;
  m.num_experts_per_tok = 4;
  m.moe_intermediate_size = 512;
  memest::ActivationLayout x = layout(1, false);
  x.seq_len = 2048;
  x.micro_batch = 4;
  CHECK(memest::recompute_working_set(m, x, 1e9, 1e9, 2, true).total() == 83886080.0);
  CHECK(memest::recompute_working_set(m, x, 1e9, 1e9, 2, false).total() == 117440512.0);
}

TEST_CASE("eager head and Hugging Face's cache copies under an outside checkpoint wrapper") {
  // Final LlamaRMSNorm (4 + 2)*4096 + 4 = 24580, its output saved by the LM head 8192, token
  // ids 8: 32780 B per token * 8192 = 268533760. LoRA (frozen norm, head, embedding): 4h + 4 =
  // 16388 B * 8192 = 134250496.
  const memest_model m = llama8b();
  memest::EagerBlockOptions o;
  CHECK(memest::eager_head_bytes(m, layout(1, false), o) == 268533760.0);
  o.lora = true;
  CHECK(memest::eager_head_bytes(m, layout(1, false), o) == 134250496.0);
  // K and V copies, k*d = 1024 each per token: bf16 4096 B per token per layer; 32 layers *
  // 8192 tokens = 1073741824; autocast (both fp32) 2147483648.
  CHECK(memest::hf_cache_copies_bytes(m, layout(1, false), 32, false) == 1073741824.0);
  CHECK(memest::hf_cache_copies_bytes(m, layout(1, false), 32, true) == 2147483648.0);
}

TEST_CASE("eager blocks: a frozen embedding spares the first block's norm and masks") {
  // LoRA on all seven linears with dropout: the first attention norm's 4h + 4 = 16388 B and
  // the q, k, v dropout masks 3 * 4096 = 12288 B go: -28676 B per token * 8192 = -234913792.
  // Without dropout only the norm: -16388 * 8192 = -134250496. Full fine-tuning: 0.
  const memest_model m = llama8b();
  memest::EagerBlockOptions o;
  CHECK(memest::eager_first_block_delta(m, layout(1, false), o) == 0.0);
  o.lora = true;
  o.lora_targets = memest::kLoraAll;
  o.lora_rank = 16;
  o.lora_dropout = true;
  o.adapter_bytes = 4;
  CHECK(memest::eager_first_block_delta(m, layout(1, false), o) == -234913792.0);
  o.lora_dropout = false;
  CHECK(memest::eager_first_block_delta(m, layout(1, false), o) == -134250496.0);
}

TEST_CASE("fp8: torchao saves high-precision inputs, Transformer Engine fp8 copies") {
  const memest_model m = llama8b();
  CHECK(memest::fp8_activation_delta(memest::Fp8Impl::Torchao, m, layout(1, false)) == 0.0);
  CHECK(memest::fp8_weight_copies_bytes(memest::Fp8Impl::Torchao, 1e9) == 0.0);
  CHECK(memest::fp8_weight_copies_bytes(memest::Fp8Impl::TransformerEngine, 1e9) == 2e9);
  // TE, t = 1: two norm outputs -1 B * 4096 each, fc2 input -1 B * 14336, proj input fp8 copy
  // +1 B * 4096: -18432 B per token * 8192 = -150994944.
  CHECK(memest::fp8_activation_delta(memest::Fp8Impl::TransformerEngine, m, layout(1, false)) ==
        -150994944.0);
  // t = 8 with SP: the norm outputs keep row-wise data for the all-gather (no change);
  // -14336/8 + 4096/8 = -1280 B per token * 8192 = -10485760.
  CHECK(memest::fp8_activation_delta(memest::Fp8Impl::TransformerEngine, m, layout(8, true)) ==
        -10485760.0);
}

TEST_CASE("NVFP4: Transformer Engine's quantised saved inputs at 0.5625 bytes per element") {
  const memest_model m = llama8b();
  // t = 1: two norm outputs 2 * 4096 * (0.5625 - 2) = -11776, fc2 input 14336 * -1.4375 =
  // -20608, proj input copy 4096 * 0.5625 = +2304: -30080 B per token * 8192 = -246415360.
  CHECK(memest::fp8_activation_delta(memest::Fp8Impl::TransformerEngineNvfp4, m, layout(1, false)) ==
        -246415360.0);
  // t = 8 with SP: the local norm outputs keep both copies, 2 * 512 * (1.125 - 2) = -896; fc2
  // 1792 * -1.4375 = -2576; proj 512 * 0.5625 = +288: -3184 B per token * 8192 = -26083328.
  CHECK(memest::fp8_activation_delta(memest::Fp8Impl::TransformerEngineNvfp4, m, layout(8, true)) ==
        -26083328.0);
}
