// Liger-Kernel in the Hugging Face blocks (training.use_liger_kernel, ABI 1.12): its fused
// RMSNorm saves the input and the fp32 rstd (ops/rms_norm.py), its gated-MLP kernel the gate and
// up outputs (ops/swiglu.py), through the block model, the request and the typed API. Every
// expected value is worked by hand in the comment above it.
#include <doctest/doctest.h>

#include "activations/stack_activations.hpp"
#include "helpers.hpp"
#include "model/model.hpp"
#include "model/presets.hpp"
#include "requests.hpp"

using namespace memest;
using test::json;
using test::ok;
using test::refused_field;

namespace {

// Llama-3.1-8B: h 4096, 32 heads of 128, 8 KV heads, f 14336, 32 layers.
memest_model llama8b() { return find_model_preset("llama-3.1-8b", "model").model; }

// 8192 tokens on one GPU (s 8192, b 1, no TP).
ActivationLayout one_gpu() {
  ActivationLayout x;
  x.seq_len = 8192, x.micro_batch = 1, x.tp = 1, x.cp = 1;
  return x;
}

json llama_request(const char* framework, bool liger) {
  json training = {{"framework", framework}, {"seq_len", 2048}, {"micro_batch", 1},
                   {"global_batch", 8}, {"recompute", "none"}};
  if (liger) training["use_liger_kernel"] = true;
  return {{"mode", "pretrain"}, {"model", "llama-3.1-8b"}, {"gpu", "h100-80gb"},
          {"parallel", {{"gpus", 1}, {"tp", 1}, {"pp", 1}, {"zero", 0}}}, {"training", training}};
}

double stage_activations(const json& r) { return r["stages"][0]["activations_bytes"].get<double>(); }

}  // namespace

TEST_CASE("liger: Hugging Face's LlamaDecoderLayer with Liger's RMSNorm and SwiGLU") {
  // Per token. LigerRMSNorm saves X 2h and rstd 4 B (fp32, per row); its output 2h is saved by
  // the linears after it: 4h + 4 = 16388 B per norm, 32776 B for two (HF: 65544).
  // Attention as HF's: 20608 B. LigerSiLUMulFunction saves gate and up (2 * 2f), down_proj the
  // product (2f): 3 * 2 * 14336 = 86016 B (HF: 114688, the SiLU output too).
  // Total 139400 B per token (HF 200840) * 8192 = 1141964800.
  const memest_model m = llama8b();
  EagerBlockOptions o;
  o.liger = true;
  const auto r = eager_block_bytes(m, one_gpu(), o);
  CHECK(r.norms == 32776.0 * 8192);
  CHECK(r.attention == 20608.0 * 8192);
  CHECK(r.mlp == 86016.0 * 8192);
  CHECK(r.total() == 1141964800.0);
  // The final norm before the head: X 2h + rstd 4, and the head's saved input 2h, the int64
  // ids 8: 8196 + 8192 + 8 = 16396 B per token (HF: the fp32 upcast 4h and the normalised 2h
  // besides rstd, 24580, + 8192 + 8 = 32780).
  CHECK(eager_head_bytes(m, one_gpu(), o) == 16396.0 * 8192);
  o.liger = false;
  CHECK(eager_head_bytes(m, one_gpu(), o) == 32780.0 * 8192);
}

TEST_CASE("liger: LoRA on a Liger block keeps the gate and up outputs the kernel saves") {
  // bf16 adapters on all seven linears, r 16, no dropout. Norms: Liger's X 2h + rstd 4 and the
  // output 2h shared by the adapters' lora_A: 16388 B each, 32776 B. Attention 20608 B + the
  // four attention adapters' r-wide lora_A outputs 4 * 2 * 16 = 128 B. MLP: gate and up (the
  // kernel saves both whatever requires grad) 2 * 2 * 14336 = 57344 B, the product saved for
  // down's adapter 28672 B, three MLP adapters' lora_A outputs 96 B: 86112 B.
  // Total 32776 + 20736 + 86112 = 139624 B per token * 8192 = 1143799808.
  const memest_model m = llama8b();
  EagerBlockOptions o;
  o.liger = true;
  o.lora = true;
  o.lora_targets = kLoraAll;
  o.lora_rank = 16;
  o.adapter_bytes = 2;
  const auto r = eager_block_bytes(m, one_gpu(), o);
  CHECK(r.norms == 32776.0 * 8192);
  CHECK(r.attention == 20736.0 * 8192);
  CHECK(r.mlp == 86112.0 * 8192);
  CHECK(r.total() == 1143799808.0);
}

TEST_CASE("liger: through the request, under pytorch and fsdp") {
  // pytorch (Hugging Face blocks): 32 layers save 61440 B per token less each (200840 ->
  // 139400): 32 * 61440 * 2048 tokens = 4026531840 B (the stage counts the blocks and the
  // loss; eager_head_bytes' final norm is not part of it).
  const json hf = ok(llama_request("pytorch", false));
  const json liger = ok(llama_request("pytorch", true));
  CHECK(stage_activations(hf) - stage_activations(liger) == 4026531840.0);
  CHECK(liger["training"]["use_liger_kernel"] == true);
  CHECK(hf["training"]["use_liger_kernel"] == false);
  // fsdp counts torchtitan's block, whose norms are already fused: only the SiLU output goes,
  // 32 * 2 * 14336 * 2048 = 1879048192 B.
  const json fsdp = ok(llama_request("fsdp", false));
  const json fsdp_liger = ok(llama_request("fsdp", true));
  CHECK(stage_activations(fsdp) - stage_activations(fsdp_liger) == 1879048192.0);
}

TEST_CASE("liger: the typed API equals the request") {
  memest_test::Pretrain p("llama-3.1-8b", "h100-80gb");
  p.r.gpus = 1, p.r.tp = 1, p.r.pp = 1, p.r.zero = 0;
  p.r.seq_len = 2048, p.r.micro_batch = 1, p.r.global_batch = 8;
  p.r.recompute = MEMEST_RECOMPUTE_NONE;
  p.r.framework = MEMEST_FRAMEWORK_PYTORCH;
  p.r.grad_bytes = MEMEST_GRAD_BYTES_DERIVE;  // what the request leaves out: derived
  p.r.optimizer_bytes = MEMEST_OPTIMIZER_BYTES_DERIVE;
  p.r.use_liger_kernel = 1;
  memest_pretrain_result typed;
  REQUIRE(p.run(typed) == MEMEST_OK);
  const json r = ok(llama_request("pytorch", true));
  CHECK(typed.peak_bytes == r["peak_bytes"].get<double>());
  memest_test::Pretrain plain = p;
  plain.r.use_liger_kernel = 0;
  memest_pretrain_result before;
  REQUIRE(plain.run(before) == MEMEST_OK);
  CHECK(typed.peak_bytes < before.peak_bytes);
  p.r.use_liger_kernel = 2;
  CHECK(p.run(typed) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(std::string(memest_last_error_field()) == "training.use_liger_kernel");
}

TEST_CASE("liger: refused by field where it means nothing") {
  json megatron = llama_request("megatron", true);
  CHECK(refused_field(megatron) == "training.use_liger_kernel");
  json gpt2 = llama_request("pytorch", true);
  gpt2["model"] = "gpt2";
  CHECK(refused_field(gpt2) == "training.use_liger_kernel");
  json not_bool = llama_request("pytorch", false);
  not_bool["training"]["use_liger_kernel"] = 1;
  CHECK(refused_field(not_bool) == "training.use_liger_kernel");
}
