// The training stacks beside Megatron-LM: the state side (states/stack_states.hpp), its
// resolution (plan/stack.hpp) and the refusals. Every expected value is worked by hand in the
// comment above it.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "helpers.hpp"
#include "plan/plan.hpp"
#include "plan/stack.hpp"
#include "states/stack_states.hpp"

using namespace memest;
using test::ok;
using test::refused_field;

namespace {

test::json base(const char* framework) {
  return {{"mode", "pretrain"},
          {"model", "llama-3.1-8b"},
          {"gpu", "h100-80gb"},
          {"parallel", {{"gpus", 8}}},
          {"training", {{"seq_len", 8192}, {"micro_batch", 1}, {"framework", framework}}}};
}

StackStateInput input(int32_t framework, int32_t zero, double group, double param_bytes,
                      double grad_bytes) {
  StackStateInput in;
  in.params = 1e9;
  in.largest_tensor = 5e8;
  in.shard_group = group;
  in.zero = zero;
  in.precision.param_bytes = param_bytes;
  in.precision.grad_bytes = grad_bytes;
  in.precision.optimizer_bytes =
      derived_optimizer_bytes(in.precision.optimizer, framework, param_bytes);
  in.stack.framework = framework;
  return in;
}

}  // namespace

TEST_CASE("K: an fp32 master only below fp32 storage and where the framework keeps one") {
  // Megatron, bf16 storage, Adam: 8 (exp_avg + exp_avg_sq) + 4 (master) = 12, the paper's K.
  CHECK(derived_optimizer_bytes(MEMEST_OPTIMIZER_ADAM, MEMEST_FRAMEWORK_MEGATRON, 2) == 12);
  // Megatron with fp32 storage optimises the fp32 parameters: 8.
  CHECK(derived_optimizer_bytes(MEMEST_OPTIMIZER_ADAM, MEMEST_FRAMEWORK_MEGATRON, 4) == 8);
  // FSDP2 never keeps a master; AdamW's states are like the parameter: fp32 storage 4 + 4 = 8,
  // pure bf16 (torchtune dtype=bf16) 2 + 2 = 4.
  CHECK(derived_optimizer_bytes(MEMEST_OPTIMIZER_ADAMW, MEMEST_FRAMEWORK_FSDP, 4) == 8);
  CHECK(derived_optimizer_bytes(MEMEST_OPTIMIZER_ADAMW, MEMEST_FRAMEWORK_FSDP, 2) == 4);
  // DeepSpeed bf16 + bitsandbytes 8-bit AdamW: 2 uint8 states + 2 fp32 absmax per 256
  // elements (8/256 = 0.03125) + master 4 = 6.03125.
  CHECK(derived_optimizer_bytes(MEMEST_OPTIMIZER_ADAMW_8BIT, MEMEST_FRAMEWORK_DEEPSPEED, 2) ==
        6.03125);
  // Plain PyTorch, SGD without momentum, bf16: no state at all.
  CHECK(derived_optimizer_bytes(MEMEST_OPTIMIZER_SGD, MEMEST_FRAMEWORK_PYTORCH, 2) == 0);
  CHECK(derived_optimizer_bytes(MEMEST_OPTIMIZER_SGD_MOMENTUM, MEMEST_FRAMEWORK_PYTORCH, 4) == 4);
  // ... and with bf16 storage a bf16 momentum buffer: 2.
  CHECK(derived_optimizer_bytes(MEMEST_OPTIMIZER_SGD_MOMENTUM, MEMEST_FRAMEWORK_PYTORCH, 2) == 2);
}

TEST_CASE("effective ZeRO stage per framework") {
  CHECK(effective_zero(MEMEST_FRAMEWORK_FSDP, 1) == 3);  // fully_shard's default
  CHECK(effective_zero(MEMEST_FRAMEWORK_FSDP, 2) == 2);
  CHECK(effective_zero(MEMEST_FRAMEWORK_PYTORCH, 1) == 0);  // DDP replicates
  CHECK(effective_zero(MEMEST_FRAMEWORK_MEGATRON, 1) == 1);
  CHECK(effective_zero(MEMEST_FRAMEWORK_DEEPSPEED, 2) == 2);
}

TEST_CASE("FSDP2 states: sharded fp32 storage, no master — zero 2 and pp > 1 keep unsharded copies") {
  // 1e9 parameters over 8 ranks, fp32 params and grads, AdamW (K = 8):
  // weights 4e9/8 = 5e8, gradients 5e8, optimizer 8e9/8 = 1e9, master 0.
  StackStates s = stack_state_bytes(input(MEMEST_FRAMEWORK_FSDP, 3, 8, 4, 4));
  CHECK(s.weights == 5e8);
  CHECK(s.gradients == 5e8);
  CHECK(s.optimizer == 1e9);
  CHECK(s.master == 0);
  // zero 2 (reshard_after_forward=False): + unsharded bf16 parameters 2 * 1e9 = 2.5e9.
  s = stack_state_bytes(input(MEMEST_FRAMEWORK_FSDP, 2, 8, 4, 4));
  CHECK(s.weights == 2.5e9);
  CHECK(s.gradients == 5e8);
  // pp = 2 (torchtitan): + unsharded bf16 params (2e9); the unsharded fp32 gradients (4e9)
  // replace the sharded ones, which only appear as the last micro-batch's reduce-scatter frees
  // them (1.5 counted both: 4.5e9): weights 2.5e9, gradients 4e9.
  StackStateInput pp = input(MEMEST_FRAMEWORK_FSDP, 3, 8, 4, 4);
  pp.pp = 2;
  s = stack_state_bytes(pp);
  CHECK(s.weights == 2.5e9);
  CHECK(s.gradients == 4e9);
  // the unsharded gradients accumulate in the reduce dtype: bf16 reduce_dtype, 2e9
  pp.stack.reduce_bytes = 2;
  CHECK(stack_state_bytes(pp).gradients == 2e9);
  CHECK(s.optimizer == 1e9);
}

TEST_CASE("Megatron and DeepSpeed states keep the ZeRO partitioning with a master") {
  // DeepSpeed ZeRO-1, bf16 params, fp32 grads, Adam (K = 12), 4 ranks: weights 2e9,
  // gradients 4e9, optimizer 12e9/4 = 3e9 of which the master 4e9/4 = 1e9.
  const StackStates s = stack_state_bytes(input(MEMEST_FRAMEWORK_DEEPSPEED, 1, 4, 2, 4));
  CHECK(s.weights == 2e9);
  CHECK(s.gradients == 4e9);
  CHECK(s.optimizer == 3e9);
  CHECK(s.master == 1e9);
}

TEST_CASE("optimizer in backward: at most the largest tensor's gradient is alive") {
  // plain PyTorch, one GPU, bf16 gradients: the largest tensor 5e8 * 2 = 1e9 instead of 2e9.
  StackStateInput in = input(MEMEST_FRAMEWORK_PYTORCH, 0, 1, 2, 2);
  in.stack.optimizer_in_backward = 1;
  CHECK(stack_state_bytes(in).gradients == 1e9);
}

TEST_CASE("paged 8-bit states leave the allocator — offloading moves states to the host") {
  // FSDP, bf16 storage, paged AdamW 8-bit, one rank: K = 2.03125, no master:
  // paged 2.03125e9, optimizer on the allocator 0.
  StackStateInput in = input(MEMEST_FRAMEWORK_FSDP, 3, 1, 2, 2);
  in.precision.optimizer = MEMEST_OPTIMIZER_PAGED_ADAMW_8BIT;
  in.precision.optimizer_bytes = derived_optimizer_bytes(in.precision.optimizer, MEMEST_FRAMEWORK_FSDP, 2);
  StackStates s = stack_state_bytes(in);
  CHECK(s.paged == 2.03125e9);
  CHECK(s.optimizer == 0);
  // DeepSpeed ZeRO-3 with offload_optimizer, bf16, Adam, 4 ranks: 12e9/4 = 3e9 on the host,
  // and (1.6) the fp32 gradient partition streamed there too, 4e9/4: 4e9.
  in = input(MEMEST_FRAMEWORK_DEEPSPEED, 3, 4, 2, 4);
  in.stack.offload_optimizer = 1;
  s = stack_state_bytes(in);
  CHECK(s.optimizer == 0);
  CHECK(s.gradients == 0);
  CHECK(s.host == 4e9);
  // ... and offload_params too: + weights 2e9/4: 4e9 + 0.5e9.
  in.stack.offload_params = 1;
  s = stack_state_bytes(in);
  CHECK(s.host == 4.5e9);
  CHECK(s.weights == 0);
  CHECK(s.gradients == 0);
}

TEST_CASE("framework buffers: FSDP2, DDP, DeepSpeed") {
  // FSDP2 zero 3, block of 1e8 parameters, fp32 reduce: reduce-scatter 4e8 + two bf16
  // all-gather outputs 2 * 2e8 = 8e8.
  CHECK(fsdp_buffer_bytes(1e8, 3, 1, 4, 2) == 8e8);
  // zero 2 or pp > 1: the unsharded parameters are weights already: reduce-scatter only.
  CHECK(fsdp_buffer_bytes(1e8, 2, 1, 4, 2) == 4e8);
  CHECK(fsdp_buffer_bytes(1e8, 3, 4, 4, 2) == 4e8);
  // torchao's fp8 all-gather: 1 byte per gathered element, 4e8 + 2 * 1e8 = 6e8; a bf16
  // reduce_dtype halves the reduce-scatter input: 2e8 + 4e8.
  CHECK(fsdp_buffer_bytes(1e8, 3, 1, 4, 1) == 6e8);
  CHECK(fsdp_buffer_bytes(1e8, 3, 1, 2, 2) == 6e8);
  // DDP, 1e9 fp32 gradients: buckets copy every gradient, 4e9; a view: 0; no DDP: 0.
  CHECK(ddp_bucket_bytes(1e9, 4, true, false) == 4e9);
  CHECK(ddp_bucket_bytes(1e9, 4, true, true) == 0);
  CHECK(ddp_bucket_bytes(1e9, 4, false, false) == 0);
  // DeepSpeed ZeRO-2, 1e9 parameters, bf16: one ipg bucket of 5e8 elements * 2 = 1e9.
  Precision p;
  Stack st;
  st.framework = MEMEST_FRAMEWORK_DEEPSPEED;
  CHECK(deepspeed_buffer_bytes(1e9, 2e8, 0, 2, p, st) == 1e9);
  // ZeRO-3: two ipg buckets 2e9 + gathered min(1e9, 2e8 + min(5e7, 2e8)) = 2.5e8 params * 2
  // = 5e8 + persistent 1e6 * 2 = 2e6: 2.502e9.
  CHECK(deepspeed_buffer_bytes(1e9, 2e8, 1e6, 3, p, st) == 2.502e9);
  // a smaller reduce_bucket_size (1e8): ZeRO-2 bucket 2e8.
  st.ds_reduce_bucket_size = 1e8;
  CHECK(deepspeed_buffer_bytes(1e9, 2e8, 0, 2, p, st) == 2e8);
  st.ds_reduce_bucket_size = 0;
  // The ipg buffer is torch.empty(reduce_bucket_size) whatever the stage holds: a 4e6-parameter
  // stage (LoRA adapters) under ZeRO-2 still gets 5e8 * 2 = 1e9 bytes. Under ZeRO-3 in fp32
  // the reduce-scatter copies only what it reduces: 5e8 * 4 + 4e6 * 4 + (gathered 2e8 + 5e7
  // prefetched) * 4 = 2e9 + 1.6e7 + 1e9 = 3.016e9.
  CHECK(deepspeed_buffer_bytes(4e6, 2e8, 0, 2, p, st) == 1e9);
  Precision fp32;
  fp32.param_bytes = 4;
  CHECK(deepspeed_buffer_bytes(4e6, 2e8, 0, 3, fp32, st) == 3.016e9);
  // offload_param: the gather copies the partition to the GPU first, 4.1e9 bytes of the
  // embedding on one rank (BLOOM-7b1's 1.03e9 fp32), 1.025e9 over 4 ranks; nothing without
  // offload_param or below stage 3.
  CHECK(deepspeed_offload_gather_copy_bytes(st, 3, 4.1e9, 1) == 0);
  st.offload_params = 1;
  CHECK(deepspeed_offload_gather_copy_bytes(st, 3, 4.1e9, 1) == 4.1e9);
  CHECK(deepspeed_offload_gather_copy_bytes(st, 3, 4.1e9, 4) == 1.025e9);
  CHECK(deepspeed_offload_gather_copy_bytes(st, 2, 4.1e9, 1) == 0);
  st.framework = MEMEST_FRAMEWORK_FSDP;
  CHECK(deepspeed_offload_gather_copy_bytes(st, 3, 4.1e9, 1) == 0);
}

TEST_CASE("torchtitan's uneven interleaved split: 126 layers over pp 8 x vpp 2") {
  // chunks of ceil(126/16) = 8 layers; a rank holds 2 chunks = 16; 16*8 - 126 = 2 fewer,
  // one from the first rank and one from the last: 15, 16, 15.
  StageLayers l;
  REQUIRE(split_chunks_unevenly(126, 8, 2, l));
  CHECK(l.first == 15);
  CHECK(l.middle == 16);
  CHECK(l.last == 15);
  test::json req = base("fsdp");
  req["model"] = "llama-3.1-405b";
  req["parallel"] = {{"gpus", 512}, {"tp", 8}, {"pp", 8}, {"vpp", 2}};
  req["training"]["global_batch"] = 64;
  const test::json r = ok(req);
  CHECK(r["stages"][0]["layers"] == 15);
  CHECK(r["stages"][1]["layers"] == 16);
  req["training"]["framework"] = "megatron";
  CHECK(refused_field(req) == "parallel.pp*vpp");
}

TEST_CASE("the default request is Megatron's, with allocated = reserved - fragmentation") {
  test::json req = base("megatron");
  req["training"].erase("framework");
  const test::json r = ok(req);
  CHECK(r["training"]["framework"] == "megatron");
  CHECK(r["training"]["loss"] == "fused");
  CHECK(r["training"]["optimizer_bytes"] == 12);
  CHECK(r["peak_reserved_bytes"].get<double>() == r["peak_bytes"].get<double>());
  const test::json& s = r["stages"][0];
  CHECK(s["peak_allocated_bytes"].get<double>() ==
        s["peak_bytes"].get<double>() - s["overheads"]["fragmentation_bytes"].get<double>());
  CHECK(s["host_bytes"] == 0);
  CHECK(s["stack"]["framework_buffer_bytes"] == 0);
}

TEST_CASE("FSDP end to end: fp32 storage sharded over 8 GPUs, no master, loss unfused") {
  test::json req = base("fsdp");
  req["training"]["param_dtype"] = "fp32";
  req["training"]["optimizer"] = "adamw";
  const test::json r = ok(req);
  const double n = r["model"]["num_parameters"].get<double>();
  const test::json& s = r["stages"][0];
  // zero 1 reads as fully_shard's default (3): weights 4n/8, gradients 4n/8, AdamW 8n/8.
  CHECK(s["weights_bytes"].get<double>() == 4 * n / 8);
  CHECK(s["gradients_bytes"].get<double>() == 4 * n / 8);
  CHECK(s["optimizer_bytes"].get<double>() == 8 * n / 8);
  CHECK(s["stack"]["master_weights_bytes"] == 0);
  CHECK(r["training"]["loss"] == "unfused");
  CHECK(r["training"]["optimizer_bytes"] == 8);
  // one block of Llama-3.1-8B: 218112000 parameters; reduce-scatter fp32 + 2 bf16 all-gathers:
  // 218112000 * (4 + 4) = 1744896000.
  CHECK(s["stack"]["framework_buffer_bytes"].get<double>() == 1744896000.0);
}

TEST_CASE("bad combinations are refused with the field and the reason") {
  test::json req = base("megatron");
  req["training"]["recompute"] = "op_selective";
  CHECK(refused_field(req) == "training.recompute");

  req = base("fsdp");
  req["parallel"]["zero"] = 0;
  req["training"]["offload"] = {{"params", true}};
  CHECK(refused_field(req) == "training.offload.params");

  req = base("fsdp");
  req["gpu"] = "a100-80gb";
  req["training"]["fp8"] = true;
  CHECK(refused_field(req) == "training.fp8");

  req = base("megatron");
  req["training"]["optimizer"] = "paged_adamw_8bit";
  CHECK(refused_field(req) == "training.optimizer");

  req = base("pytorch");
  req["parallel"]["tp"] = 2;
  CHECK(refused_field(req) == "parallel.tp");

  req = base("deepspeed");
  req["parallel"] = {{"gpus", 8}, {"pp", 2}, {"zero", 3}};
  CHECK(refused_field(req) == "parallel.zero");

  req = base("megatron");
  req["training"]["compile"] = true;
  CHECK(refused_field(req) == "training.compile");

  req = base("fsdp");
  req["training"]["recompute_every"] = 2;
  CHECK(refused_field(req) == "training.recompute_every");  // with recompute none

  req = base("megatron");
  req["training"]["recompute"] = "full";
  req["training"]["recompute_every"] = 2;
  CHECK(refused_field(req) == "training.recompute_every");

  req = base("fsdp");
  req["training"]["offload"] = {{"gpu", true}};
  CHECK(refused_field(req) == "training.offload.gpu");
}

namespace {
// GPT2-XL as the ColossalAI-Pytorch-lightning benchmark builds it (HF GPT2Config; model_type
// gpt2 leaves logits_fp32 off: GPT-2's code never upcasts its logits).
test::json gpt2xl_fp16(const char* framework) {
  test::json req = base(framework);
  req["model"] = {{"model_type", "gpt2"}, {"n_embd", 1600}, {"n_layer", 48}, {"n_head", 25},
                  {"vocab_size", 50257}, {"n_positions", 1024}};
  req["gpu"] = "a100-40gb";
  req["parallel"] = {{"gpus", 4}, {"zero", 3}};
  req["training"] = {{"seq_len", 1024},       {"micro_batch", 40},     {"global_batch", 160},
                     {"framework", framework}, {"param_dtype", "fp16"}, {"grad_dtype", "fp16"},
                     {"recompute", "full"},    {"flash_attention", false},
                     {"loss", "unfused_16bit"}};
  return req;
}
std::string refusal_message(const test::json& req) {
  const test::Answer a = test::request(req);
  return a.status == MEMEST_OK ? std::string() : a.body["error"]["message"].get<std::string>();
}
}  // namespace

TEST_CASE("unfused_16bit: the loss of fp16 GPT-2 under DeepSpeed holds 6 bytes per logit") {
  // N = 40 * 1024 = 40960 tokens, V = 50257: N*V = 2058526720 logits; forward: logits 2 +
  // shifted copy 2 + fp16 log-probs 2 = 6 B/logit = 12351160320 (backward 2 + 2 + 2, the same).
  const test::json r = ok(gpt2xl_fp16("deepspeed"));
  CHECK(r["training"]["loss"] == "unfused_16bit");
  CHECK(r["stages"][0]["stack"]["loss_bytes"].get<double>() == 12351160320.0);
  // today's unfused (upcast): 12 B/logit = 24702320640
  test::json req = gpt2xl_fp16("deepspeed");
  req["training"]["loss"] = "unfused";
  CHECK(ok(req)["stages"][0]["stack"]["loss_bytes"].get<double>() == 24702320640.0);
  // fsdp computes in its MixedPrecisionPolicy's bf16 whatever the stored dtype: accepted with
  // fp32 storage, the same loss bytes
  req = gpt2xl_fp16("fsdp");
  req["training"]["param_dtype"] = "fp32";
  req["training"]["grad_dtype"] = "fp32";
  CHECK(ok(req)["stages"][0]["stack"]["loss_bytes"].get<double>() == 12351160320.0);
}

TEST_CASE("unfused_16bit: refused where the logits are not 16-bit or the loss upcasts anyway") {
  // Megatron's cross-entropy always works on fp32 logits
  test::json req = gpt2xl_fp16("megatron");
  req["parallel"]["zero"] = 1;
  CHECK(refused_field(req) == "training.loss");
  CHECK(refusal_message(req).find("cross_entropy.py") != std::string::npos);
  // fp32 parameters under deepspeed / pytorch run under torch.autocast: log_softmax and
  // nll_loss are on autocast's fp32 list
  req = gpt2xl_fp16("deepspeed");
  req["training"]["param_dtype"] = "fp32";
  CHECK(refused_field(req) == "training.loss");
  CHECK(refusal_message(req).find("autocast") != std::string::npos);
  req = gpt2xl_fp16("pytorch");
  req["parallel"]["zero"] = 0;
  req["training"]["param_dtype"] = "fp32";
  CHECK(refused_field(req) == "training.loss");
  CHECK(refusal_message(req).find("autocast") != std::string::npos);
  // ... which with fp16 parameters (no autocast) is accepted
  req["training"]["param_dtype"] = "fp16";
  CHECK(ok(req)["training"]["loss"] == "unfused_16bit");
  // a model whose code casts its logits to fp32 (Llama-family presets: logits_fp32)
  req = gpt2xl_fp16("deepspeed");
  req["model"] = "llama-3.1-8b";
  req["training"]["param_dtype"] = "bf16";
  CHECK(refused_field(req) == "training.loss");
  CHECK(refusal_message(req).find("logits_fp32") != std::string::npos);
  // ... unless the config says the run's own model code returns 16-bit logits (memest's key
  // model.logits_fp32, read in any config): the same 6 bytes per logit as GPT-2's,
  // N * V = 40960 * 50257 logits
  req["model"] = {{"model_type", "llama"},         {"hidden_size", 1600},
                  {"num_hidden_layers", 48},        {"num_attention_heads", 25},
                  {"intermediate_size", 6400},      {"vocab_size", 50257}};
  CHECK(refused_field(req) == "training.loss");  // the Llama class upcasts
  req["model"]["logits_fp32"] = false;
  CHECK(ok(req)["stages"][0]["stack"]["loss_bytes"].get<double>() == 12351160320.0);
  req["model"]["logits_fp32"] = "no";
  CHECK(refused_field(req) == "model.logits_fp32");
}

TEST_CASE("fsdp/pytorch without accumulation: gradients and the forward-end set do not coexist") {
  // One GPU, plain PyTorch, pure bf16, one micro-batch: the peak holds the weights, the
  // optimizer and the larger of (activations + loss) and (gradients + recompute working set).
  test::json req = base("pytorch");
  req["parallel"] = {{"gpus", 1}};
  req["training"]["param_dtype"] = "bf16";
  req["training"]["grad_dtype"] = "bf16";
  req["training"]["global_batch"] = 1;
  req["training"]["recompute"] = "full";
  const test::json r = ok(req);
  const test::json& s = r["stages"][0];
  const double a = s["activations_bytes"].get<double>() - s["stack"]["recompute_bytes"].get<double>() +
                   s["stack"]["loss_bytes"].get<double>();
  const double g = s["gradients_bytes"].get<double>() + s["stack"]["recompute_bytes"].get<double>();
  CHECK(s["overheads"]["phase_overlap_bytes"].get<double>() == -std::min(a, g));
  // with gradient accumulation (2 micro-batches) the gradients live through the forward; only
  // the loss and the rebuilt block still do not coexist: the smaller of the two comes off
  req["training"]["global_batch"] = 2;
  const test::json r2 = ok(req);
  const test::json& s2 = r2["stages"][0];
  const double loss = s2["stack"]["loss_bytes"].get<double>();
  const double rebuilt = s2["stack"]["recompute_bytes"].get<double>();
  CHECK(loss > 0);
  CHECK(rebuilt > 0);
  CHECK(s2["overheads"]["phase_overlap_bytes"].get<double>() == -std::min(loss, rebuilt));
}

TEST_CASE("DDP's gradient_as_bucket_view: the gradients are the buckets and outlive zero_grad") {
  // torchrun with DDP around one GPU, fp32, full recomputation, one micro-batch. Plain PyTorch
  // frees the gradients before the forward (set_to_none), so its peak sheds the smaller of the
  // forward-end and backward-end sets -- here the gradients + rebuilt block. DDP's reducer owns
  // flat buckets for its lifetime (reducer.cpp initialize_buckets): without bucket views they
  // are a second copy beside the freed gradients; with them they are the gradients, which stay
  // through the forward. Either way the peak holds 4 bytes per parameter more than plain
  // PyTorch's. Measured on the H100 (tests/data/measured/h100-stacks.json), for 4.60 GiB of
  // fp32 gradients: +4.61 GiB with views; +9.21 GiB without, one copy more than this accounts
  // for, unexplained and not counted (docs/stack-activations.md).
  test::json req = base("pytorch");
  req["model"] = "gemma-3-1b";  // 262,144 logits per token: the loss outweighs the gradients
  req["parallel"] = {{"gpus", 1}};
  req["training"]["param_dtype"] = "fp32";
  req["training"]["grad_dtype"] = "fp32";
  req["training"]["global_batch"] = req["training"]["micro_batch"];
  req["training"]["recompute"] = "full";
  req["training"]["loss"] = "unfused";
  const test::json plain = ok(req);
  const test::json& p = plain["stages"][0];
  const double grads = 4 * plain["model"]["num_parameters"].get<double>();
  const double rebuilt = p["stack"]["recompute_bytes"].get<double>();
  REQUIRE(p["gradients_bytes"].get<double>() == grads);
  // the premise: the gradients' side is the smaller one, so it is the one plain PyTorch sheds
  REQUIRE(p["overheads"]["phase_overlap_bytes"].get<double>() == -(grads + rebuilt));
  req["training"]["ddp"] = true;
  const test::json copies = ok(req);
  req["training"]["buckets"] = {{"gradient_as_bucket_view", true}};
  const test::json views = ok(req);
  const test::json& v = views["stages"][0];
  CHECK(v["stack"]["framework_buffer_bytes"] == 0);
  CHECK(v["overheads"]["phase_overlap_bytes"].get<double>() == -rebuilt);
  const auto allocated = [](const test::json& r) {
    return r["torch_max_memory_allocated_bytes"].get<double>();
  };
  CHECK(allocated(views) - allocated(plain) == doctest::Approx(grads));
  CHECK(allocated(copies) - allocated(plain) == doctest::Approx(grads));
}

TEST_CASE("the loss and the rebuilt block do not coexist (DeepSpeed, no phase overlap)") {
  // GPT2-XL under DeepSpeed ZeRO-3 fp16, micro-batch 40, full recomputation, the 16-bit loss:
  // 40*1024 tokens x 50257 logits x 6 B = 12,351,160,320 B of loss temporaries; they die before
  // the last block is rebuilt, so the stage holds the larger of the loss and the rebuilt block.
  test::json req;
  req["mode"] = "pretrain";
  req["model"] = {{"model_type", "gpt2"}, {"n_embd", 1600}, {"n_layer", 48}, {"n_head", 25},
                  {"vocab_size", 50257}, {"n_positions", 1024}};
  req["gpu"] = "a100-40gb";
  req["parallel"] = {{"gpus", 4}, {"zero", 3}};
  req["training"] = {{"seq_len", 1024}, {"recompute", "full"}, {"flash_attention", false},
                     {"framework", "deepspeed"}, {"micro_batch", 40}, {"global_batch", 160},
                     {"param_dtype", "fp16"}, {"grad_dtype", "fp16"}, {"loss", "unfused_16bit"}};
  const test::json r = ok(req);
  const test::json& s = r["stages"][0];
  CHECK(s["stack"]["loss_bytes"].get<double>() == doctest::Approx(12351160320.0));
  const double rebuilt = s["stack"]["recompute_bytes"].get<double>();
  CHECK(rebuilt < 12351160320.0);
  CHECK(s["overheads"]["phase_overlap_bytes"].get<double>() == doctest::Approx(-rebuilt));
}

TEST_CASE("DDP wraps more than one data-parallel rank only, whatever the bucket size") {
  // One GPU: no DDP, no buckets, also with bucket_cap_mb 25 (DDP's documented default, which
  // once meant "DDP-wrapped" and turned a fitting run into an OOM). Two GPUs: Llama-3.1-8B's
  // fp32 gradients, n * 4 bytes of buckets.
  test::json req = base("pytorch");
  req["parallel"] = {{"gpus", 1}};
  req["training"]["param_dtype"] = "fp32";
  req["training"]["grad_dtype"] = "fp32";
  const test::json plain = ok(req);
  CHECK(plain["stages"][0]["stack"]["framework_buffer_bytes"] == 0);
  req["training"]["buckets"] = {{"bucket_cap_mb", 25}};
  const test::json sized = ok(req);
  CHECK(sized["stages"][0]["stack"]["framework_buffer_bytes"] == 0);
  // nothing else moves either: the allocator's single-stream fragmentation share stays
  CHECK(sized["peak_bytes"] == plain["peak_bytes"]);
  // torchrun with DDP around one GPU, said as such (training.ddp): the buckets are counted
  req["training"]["ddp"] = true;
  const test::json one = ok(req);
  CHECK(one["training"]["ddp"] == true);
  CHECK(one["stages"][0]["stack"]["framework_buffer_bytes"].get<double>() ==
        4 * one["model"]["num_parameters"].get<double>());
  req["training"].erase("ddp");
  req["parallel"] = {{"gpus", 2}};
  const test::json r = ok(req);
  CHECK(r["training"]["ddp"] == "default");
  CHECK(r["stages"][0]["stack"]["framework_buffer_bytes"].get<double>() ==
        4 * r["model"]["num_parameters"].get<double>());
  // refused by name: ddp false with two data-parallel ranks, ddp under megatron
  req["training"]["ddp"] = false;
  CHECK(refused_field(req) == "training.ddp");
  test::json meg = base("megatron");
  meg["training"]["ddp"] = true;
  CHECK(refused_field(meg) == "training.ddp");
}

TEST_CASE("the search keeps to what the framework can run") {
  // plain PyTorch on 8 GPUs: only tp = cp = pp = 1 layouts are ranked, zero 1 is zero 0's run.
  test::json req = base("pytorch");
  req["mode"] = "search";
  req["model"] = "opt-1.3b";
  req["parallel"] = {{"gpus", 8}};
  req["training"] = {{"seq_len", 2048}, {"global_batch", 64}, {"framework", "pytorch"}};
  req["search"] = {{"zero", {0, 1}}, {"top", 50}};
  const test::json r = ok(req);
  REQUIRE(!r["results"].empty());
  for (const test::json& e : r["results"]) {
    CHECK(e["layout"]["tp"] == 1);
    CHECK(e["layout"]["pp"] == 1);
    CHECK(e["layout"]["zero"] == 0);
  }
  CHECK(r["pruned"]["framework"].get<int>() > 0);
  // op_selective in a Megatron search is refused
  req["training"]["framework"] = "megatron";
  req["search"]["recompute"] = {"none", "op_selective"};
  CHECK(refused_field(req) == "search.recompute");
}

TEST_CASE("typed C API: the training stack's fields give the JSON answer") {
  // FSDP2, fp32 storage, K derived (MEMEST_OPTIMIZER_BYTES_DERIVE), op_selective, unfused:
  // the same request through memest_pretrain and memest_request_json.
  memest_model m;
  memest_gpu g;
  memest_pretrain_request r;
  REQUIRE(memest_model_init(&m, sizeof m) == MEMEST_OK);
  REQUIRE(memest_gpu_init(&g, sizeof g) == MEMEST_OK);
  REQUIRE(memest_model_from_preset("llama-3.1-8b", &m) == MEMEST_OK);
  REQUIRE(memest_gpu_from_preset("h100-80gb", &g) == MEMEST_OK);
  REQUIRE(memest_pretrain_request_init(&r, sizeof r) == MEMEST_OK);
  CHECK(r.framework == MEMEST_FRAMEWORK_MEGATRON);  // defaults of 1.2's fields
  CHECK(r.recompute_every == 1);
  CHECK(r.loss == MEMEST_LOSS_AUTO);
  CHECK(r.optimizer_bytes == 12);
  r.model = &m;
  r.gpu = &g;
  r.gpus = 8;
  r.seq_len = 8192;
  r.framework = MEMEST_FRAMEWORK_FSDP;
  r.param_bytes = 4;
  r.optimizer_bytes = MEMEST_OPTIMIZER_BYTES_DERIVE;
  r.optimizer = MEMEST_OPTIMIZER_ADAMW;
  r.recompute = MEMEST_RECOMPUTE_OP_SELECTIVE;
  memest_pretrain_result out;
  out.struct_size = sizeof out;
  REQUIRE(memest_pretrain(&r, &out, nullptr, 0, 0) == MEMEST_OK);
  test::json req = base("fsdp");
  req["training"]["param_dtype"] = "fp32";
  req["training"]["optimizer"] = "adamw";
  req["training"]["recompute"] = "op_selective";
  const test::json j = ok(req);
  CHECK(out.peak_bytes == j["peak_bytes"].get<double>());
  CHECK(out.peak_allocated_bytes == j["peak_allocated_bytes"].get<double>());
  CHECK(out.optimizer_bytes_per_parameter == 8);  // AdamW fp32 states, no master
  CHECK(out.framework == MEMEST_FRAMEWORK_FSDP);
  CHECK(out.loss == MEMEST_LOSS_UNFUSED);
  // a negative K other than the derive marker is refused
  r.optimizer_bytes = -2;
  CHECK(memest_pretrain(&r, &out, nullptr, 0, 0) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(std::string(memest_last_error_field()) == "training.optimizer");
  // 1.4's loss: refused on the Llama preset (its code upcasts: logits_fp32), accepted once a
  // typed caller says its logits stay 16-bit; the loss shrinks from unfused's 12 B/logit to 6
  // (N*V = 8192 * 128256 = 1050673152 logits: 12608077824 and 6304038912 bytes)
  r.optimizer_bytes = MEMEST_OPTIMIZER_BYTES_DERIVE;
  memest_stage stage;
  stage.struct_size = sizeof stage;
  REQUIRE(memest_pretrain(&r, &out, &stage, sizeof stage, 1) == MEMEST_OK);
  CHECK(stage.loss_bytes == 12608077824.0);
  r.loss = MEMEST_LOSS_UNFUSED_16BIT;
  CHECK(memest_pretrain(&r, &out, nullptr, 0, 0) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(std::string(memest_last_error_field()) == "training.loss");
  m.logits_fp32 = 0;
  REQUIRE(memest_pretrain(&r, &out, &stage, sizeof stage, 1) == MEMEST_OK);
  CHECK(out.loss == MEMEST_LOSS_UNFUSED_16BIT);
  CHECK(stage.loss_bytes == 6304038912.0);
}

namespace {

// The small Qwen3-MoE of tests/data/measured/h100-stacks.json (calibrate/measure_stacks.py).
test::json qwen3_moe_small() {
  return {{"model_type", "qwen3_moe"}, {"hidden_size", 1024}, {"intermediate_size", 3072},
          {"moe_intermediate_size", 512}, {"num_hidden_layers", 8}, {"num_attention_heads", 16},
          {"num_key_value_heads", 4}, {"head_dim", 64}, {"num_experts", 32},
          {"num_experts_per_tok", 4}, {"decoder_sparse_step", 1}, {"vocab_size", 32000},
          {"tie_word_embeddings", false}};
}

test::json moe_request(const char* framework, int gpus) {
  test::json req = base(framework);
  req["model"] = qwen3_moe_small();
  req["parallel"] = {{"gpus", gpus}};
  req["training"]["seq_len"] = 2048;
  req["training"]["micro_batch"] = 4;
  req["training"]["param_dtype"] = "bf16";
  req["training"]["grad_dtype"] = "bf16";
  req["training"]["optimizer"] = "adamw";
  return req;
}

}  // namespace

TEST_CASE("MoE outside megatron: ep only under FSDP2 (torchtitan), DeepSpeed-MoE refused") {
  // DDP and FSDP1 have no expert parallelism: refused with the reason
  for (const char* fw : {"pytorch", "fsdp1"}) {
    CAPTURE(fw);
    test::json req = moe_request(fw, 8);
    req["parallel"]["ep"] = 2;
    CHECK(refused_field(req) == "parallel.ep");
    const test::Answer a = test::request(req);
    CHECK(a.body["error"]["message"].get<std::string>().find("torchtitan") != std::string::npos);
  }
  // DeepSpeed-MoE's own expert parallelism is not modelled; plain ZeRO (ep 1) is
  test::json req = moe_request("deepspeed", 8);
  req["parallel"]["ep"] = 2;
  CHECK(refused_field(req) == "parallel.ep");
  CHECK(test::request(req).body["error"]["message"].get<std::string>().find("DeepSpeed-MoE") !=
        std::string::npos);
  ok(moe_request("deepspeed", 8));

  // a capacity factor is Megatron's: the other stacks' MoE blocks route drop-less
  req = moe_request("fsdp", 8);
  req["training"]["moe_capacity_factor"] = 1.25;
  CHECK(refused_field(req) == "training.moe_capacity_factor");

  // torchtitan's experts run over tp or without tensor parallelism: etp 0 (= tp) or 1
  req = moe_request("fsdp", 8);
  req["parallel"]["tp"] = 2;
  req["parallel"]["sp"] = true;
  req["parallel"]["etp"] = 1;
  ok(req);
  req["parallel"]["tp"] = 4;
  req["parallel"]["etp"] = 2;
  CHECK(refused_field(req) == "parallel.etp");

  req = moe_request("fsdp", 8);
  req["training"]["recompute"] = "op_selective";
  CHECK(refused_field(req) == "training.recompute");

  // a dense leading layer and one block in two checkpointed: which blocks are is not modelled
  req = moe_request("pytorch", 1);
  req["model"]["first_k_dense_replace"] = 1;
  req["training"]["recompute"] = "full";
  req["training"]["recompute_every"] = 2;
  CHECK(refused_field(req) == "training.recompute_every");
  req["training"]["recompute_every"] = 1;
  ok(req);

  // latent attention outside Megatron is the eager MLA block; the MTP layer is Megatron's only
  // (transformers does not build it): under fsdp DeepSeek-V2-Lite's MLA is answered, and
  // DeepSeek-V3's stage holds no MTP parameters, while Megatron's last stage does
  req = moe_request("fsdp", 8);
  req["model"] = "deepseek-v2-lite";
  ok(req);
  req["model"] = "deepseek-v3";
  req["parallel"] = {{"gpus", 64}, {"ep", 8}};
  CHECK_FALSE(ok(req)["stages"][0].contains("mtp_parameters"));
  req["training"]["framework"] = "megatron";
  req["training"].erase("optimizer");
  CHECK(ok(req)["stages"][0]["mtp_parameters"].get<double>() > 0);
  req = moe_request("fsdp", 8);
  req["model"] = "deepseek-v2-lite";
  req["training"]["recompute"] = "op_selective";
  CHECK(refused_field(req) == "training.recompute");

  // the same MoE request under pytorch and fsdp (ep = 1) is answered
  ok(moe_request("pytorch", 1));
  ok(moe_request("fsdp", 8));
}

TEST_CASE("MoE under pytorch: every expert held, counted once, bucketed by DDP") {
  // Qwen3-MoE small: per layer attention 1024*1024*2 + 1024*256*2 = 2621440, q/k norms 128,
  // norms 2048, router 32*1024 = 32768, experts 32*3*1024*512 = 50331648: 52988032; 8 layers
  // 423904256 + embeddings and head 2*32000*1024 = 65536000 + final norm 1024 = 489441280,
  // the run's num_parameters. Experts alone: 8 * 50331648 = 402653184.
  test::json req = moe_request("pytorch", 1);
  const test::json r = ok(req);
  CHECK(r["model"]["num_parameters"] == 489441280.0);
  const test::json& s = r["stages"][0];
  CHECK(s["parameters"] == 489441280.0);
  // bf16 storage, bf16 AdamW states (no master outside megatron/deepspeed: 2 * 2 B):
  // weights 2 * 489441280 = 978882560, gradients the same, optimizer 4 * 489441280.
  CHECK(s["weights_bytes"] == 978882560.0);
  CHECK(s["gradients_bytes"] == 978882560.0);
  CHECK(s["optimizer_bytes"] == 1957765120.0);
  CHECK(s["experts"]["parameters"] == 402653184.0);
  CHECK(s["experts"]["weights_bytes"] == 805306368.0);
  // The experts' activations: router and routed experts of the eager block
  // (test_stack_activations.cpp: 33032 B per token) in 8 blocks of 8192 tokens:
  // 8 * 33032 * 8192 = 2164785152; none under full recomputation.
  CHECK(s["experts"]["activations_bytes"] == 2164785152.0);
  test::json full = req;
  full["training"]["recompute"] = "full";
  CHECK(ok(full)["stages"][0]["experts"]["activations_bytes"] == 0);
  // DDP (two data-parallel ranks) buckets every gradient, the experts' too: 2 * 489441280.
  req["parallel"] = {{"gpus", 2}};
  CHECK(ok(req)["stages"][0]["stack"]["framework_buffer_bytes"] == 978882560.0);
}

TEST_CASE("MoE under fsdp: the experts shard with their block, which is gathered whole") {
  // fp32 storage on 8 GPUs (zero 3): weights 4 * 489441280 / 8 = 244720640; the largest
  // gathered block is an MoE layer, 52988032 parameters: an fp32 reduce-scatter input and two
  // bf16 all-gathers, 52988032 * (4 + 2 * 2) = 423904256.
  test::json req = moe_request("fsdp", 8);
  req["training"]["param_dtype"] = "fp32";
  req["training"]["grad_dtype"] = "fp32";
  const test::json r = ok(req);
  const test::json& s = r["stages"][0];
  CHECK(s["weights_bytes"] == 244720640.0);
  CHECK(s["stack"]["framework_buffer_bytes"] == 423904256.0);
}

TEST_CASE("the search of an MoE model outside megatron and fsdp enumerates ep = 1, etp = tp only") {
  for (const char* fw : {"deepspeed", "pytorch"}) {
    CAPTURE(fw);
    test::json req = moe_request(fw, 8);
    req["mode"] = "search";
    req["training"] = {{"seq_len", 2048}, {"global_batch", 64}, {"framework", fw}};
    req["search"] = {{"top", 200}, {"include_oom", true}};
    const test::json r = ok(req);
    REQUIRE(!r["results"].empty());
    for (const test::json& e : r["results"]) {
      CHECK(e["layout"]["ep"] == 1);
      CHECK(e["layout"]["etp"] == e["layout"]["tp"]);
      CHECK(e["layout"]["recompute"] != "op_selective");
    }
    // under megatron and fsdp (torchtitan) the same model's space holds ep > 1
    for (const char* ep_fw : {"megatron", "fsdp"}) {
      CAPTURE(ep_fw);
      req["training"]["framework"] = ep_fw;
      bool expert_parallel = false;
      const test::json meg = ok(req);
      for (const test::json& e : meg["results"]) expert_parallel |= e["layout"]["ep"] > 1;
      CHECK(expert_parallel);
    }
  }
  // a shortlist with ep 2 under pytorch is refused at the layout
  test::json req = moe_request("pytorch", 8);
  req["mode"] = "search";
  req["training"] = {{"seq_len", 2048}, {"global_batch", 64}, {"framework", "pytorch"}};
  req["search"] = {{"layouts", {{{"tp", 1}, {"ep", 2}}}}};
  CHECK(refused_field(req) == "search.layouts[0].ep");
}

TEST_CASE("MoE under FSDP2 with expert parallelism (torchtitan): experts over ep, sharded over edp") {
  // 8 GPUs, ep 2: each rank holds 32 / 2 = 16 experts of every MoE layer, 402653184 / 2 =
  // 201326592 expert parameters, sharded over edp = 8 / 2 = 4 (torchtitan's dp_shard_mod_ep):
  // bf16 weights 2 * 201326592 / 4 = 100663296.
  test::json req = moe_request("fsdp", 8);
  req["parallel"]["ep"] = 2;
  const test::json r = ok(req);
  const test::json& s = r["stages"][0];
  CHECK(r["layout"]["edp"] == 4);
  CHECK(s["experts"]["parameters"] == 201326592.0);
  CHECK(s["experts"]["weights_bytes"] == 100663296.0);
  // the all-to-all dispatch and combine buffers of one layer (torchtitan's _token_dispatch and
  // _token_combine, as Megatron's): 8192 tokens * top-4 = 32768 rows of h = 1024, 2 B, each way
  CHECK(s["experts"]["dispatch_buffer_bytes"] == 2.0 * 32768 * 1024 * 2);
  // without ep every GPU holds every expert, sharded over all 8
  const test::json plain = ok(moe_request("fsdp", 8));
  CHECK(plain["stages"][0]["experts"]["parameters"] == 402653184.0);
  CHECK(plain["stages"][0]["experts"]["weights_bytes"] == 2.0 * 402653184 / 8);
  CHECK(plain["stages"][0]["experts"]["dispatch_buffer_bytes"] == 0);
}

TEST_CASE("LoRA on a Hugging Face MoE: frozen experts in the base, adapters on attention and router") {
  // q_proj + v_proj + router at r = 8 on the small Qwen3-MoE: per layer q 8 * (1024 + 1024) =
  // 16384, v 8 * (1024 + 256) = 10240, router 8 * (1024 + 32) = 8448: 35072; 8 layers 280576.
  test::json req = moe_request("pytorch", 1);
  req["training"]["adapter"] = {{"type", "lora"}, {"rank", 8},
                                {"targets", {"q_proj", "v_proj", "router"}}};
  const test::json r = ok(req);
  CHECK(r["trainable_parameters"] == 280576.0);
  const test::json& s = r["stages"][0];
  // the base, experts included, frozen in bf16: 2 * 489441280; no gradient but the adapters'
  // (fp32: 4 * 280576)
  CHECK(s["adapter"]["base_weights_bytes"] == 978882560.0);
  CHECK(s["gradients_bytes"] == 4.0 * 280576);
  CHECK(s["experts"]["gradients_bytes"] == 0);
  // every expert's gate/up/down adapted: 32 experts * 8 * 3 * (1024 + 512) = 1179648 per layer
  req["training"]["adapter"]["targets"] = {"gate_proj", "up_proj", "down_proj"};
  CHECK(ok(req)["trainable_parameters"] == 8.0 * 1179648);
  // the router of a dense model, expert parallelism with an adapter: refused by name
  req["training"]["adapter"]["targets"] = {"router"};
  test::json dense = req;
  dense["model"] = "llama-3.1-8b";
  CHECK(refused_field(dense) == "training.adapter.targets");
  test::json ep = moe_request("fsdp", 8);
  ep["parallel"]["ep"] = 2;
  ep["training"]["adapter"] = {{"type", "lora"}};
  CHECK(refused_field(ep) == "parallel.ep");
}

TEST_CASE("A Hugging Face MoE under DeepSpeed ZeRO: every expert sharded like any weight") {
  // ZeRO-3 over 8 GPUs, no expert parallelism: the experts' 402653184 parameters in bf16,
  // 2 * 402653184 / 8 = 100663296 per GPU; their fp32 master, momentum and variance
  // 12 * 402653184 / 8 = 603979776.
  test::json req = moe_request("deepspeed", 8);
  req["parallel"]["zero"] = 3;
  const test::json r = ok(req);
  const test::json& s = r["stages"][0];
  CHECK(s["experts"]["parameters"] == 402653184.0);
  CHECK(s["experts"]["weights_bytes"] == 100663296.0);
  CHECK(s["experts"]["optimizer_bytes"] == 603979776.0);
}

TEST_CASE("MoE under pytorch: a dense leading block keeps a dense block's activations") {
  // Qwen3-MoE small with layer 0 dense (intermediate 3072), no recomputation, 8192 tokens:
  // that block's MLP part 4 * 2 * 3072 = 24576 B per token instead of the MoE part's 33032
  // (test_stack_activations.cpp; the norms are the same without autocast): -8456 * 8192 =
  // -69271552. The recomputation working set is the larger of the two blocks', the dense one:
  // 117440512 instead of 83886080 (test_stack_activations.cpp): +33554432. Activations change
  // by -35717120.
  test::json req = moe_request("pytorch", 1);
  const double all_moe = ok(req)["stages"][0]["activations_bytes"].get<double>();
  req["model"]["first_k_dense_replace"] = 1;
  const test::json r = ok(req);
  CHECK(r["stages"][0]["activations_bytes"].get<double>() - all_moe == -35717120.0);
  CHECK(r["stages"][0]["experts"]["moe_layers"] == 7);
}
