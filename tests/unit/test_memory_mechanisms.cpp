// The memory mechanisms of 1.6: FSDP1, gradient accumulation under no_sync, the
// optimizer's step temporaries, bitsandbytes' paged 32-bit states, a quantised LM head, the
// loss without vocab parallelism and with Gemma 2's soft-capping, pure fp32, ZeRO-Offload's
// gradients, ZeRO-3's whole-module gathers, and the verdict's margin. Every expected value is
// worked by hand in the comment above it.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "core/verdict.hpp"
#include "helpers.hpp"
#include "model/presets.hpp"
#include "plan/plan.hpp"
#include "plan/stack.hpp"
#include "requests.hpp"
#include "states/stack_states.hpp"

using namespace memest;
using test::ok;
using test::refused_field;

namespace {

test::json pretrain(const char* model, const char* framework, int gpus) {
  return {{"mode", "pretrain"},
          {"model", model},
          {"gpu", "h100-80gb"},
          {"parallel", {{"gpus", gpus}}},
          {"training", {{"seq_len", 2048}, {"micro_batch", 1}, {"framework", framework}}}};
}

double stage0(const test::json& r, const char* key) { return r["stages"][0][key].get<double>(); }

}  // namespace

TEST_CASE("fsdp1: the root unit stays unsharded from forward to backward") {
  CHECK(fsdp1_unsharded_root_bytes([] { Stack s; s.framework = MEMEST_FRAMEWORK_FSDP; s.fsdp_version = 1; return s; }(),
                                   3, 1, 1e9, 2) == 2e9);
  Stack v2;
  v2.framework = MEMEST_FRAMEWORK_FSDP;
  CHECK(fsdp1_unsharded_root_bytes(v2, 3, 1, 1e9, 2) == 0);  // FSDP2: not this mechanism
  Stack v1 = v2;
  v1.fsdp_version = 1;
  CHECK(fsdp1_unsharded_root_bytes(v1, 2, 1, 1e9, 2) == 0);  // SHARD_GRAD_OP keeps all anyway
  CHECK(fsdp1_unsharded_root_bytes(v1, 3, 2, 1e9, 2) == 0);

  // Llama-3.1-8B on 8 GPUs: the root holds the embedding and the LM head (128256 x 4096 each)
  // and the final norm (4096): 1050677248 parameters, gathered in bf16: 2101354496 bytes more
  // weights than FSDP2, the rest the same.
  const test::json v2r = ok(pretrain("llama-3.1-8b", "fsdp", 8));
  const test::json v1r = ok(pretrain("llama-3.1-8b", "fsdp1", 8));
  CHECK(v1r["training"]["framework"] == "fsdp1");
  CHECK(stage0(v1r, "weights_bytes") - stage0(v2r, "weights_bytes") == 2101354496.0);
  CHECK(v1r["stages"][0]["stack"]["unsharded_root_bytes"].get<double>() == 2101354496.0);
  CHECK(v2r["stages"][0]["stack"]["unsharded_root_bytes"].get<double>() == 0);
  CHECK(stage0(v1r, "gradients_bytes") == stage0(v2r, "gradients_bytes"));
}

TEST_CASE("no_sync: unsharded gradients across gradient accumulation") {
  Stack st;
  st.framework = MEMEST_FRAMEWORK_FSDP;
  CHECK_FALSE(fsdp_keeps_unsharded_gradients(st, true));  // FSDP2 reduces every micro-batch
  st.fsdp_version = 1;
  CHECK(fsdp_keeps_unsharded_gradients(st, true));        // FSDP1 under accelerate
  CHECK_FALSE(fsdp_keeps_unsharded_gradients(st, false)); // nothing to accumulate
  st.no_sync = 0;
  CHECK_FALSE(fsdp_keeps_unsharded_gradients(st, true));

  // Llama-3.1-8B, 8 GPUs, fsdp1, bf16 weights and fp32 gradients (8030261248 parameters):
  // sharded 4 * 8030261248 / 8 = 4015130624 bytes; with 4 micro-batches per step the
  // unsharded gradients stay: 32121044992 bytes.
  test::json req = pretrain("llama-3.1-8b", "fsdp1", 8);
  req["training"]["grad_dtype"] = "fp32";  // (1.11: left out, fsdp1 keeps the parameters' bf16)
  req["training"]["global_batch"] = 8;
  CHECK(stage0(ok(req), "gradients_bytes") == 4015130624.0);
  req["training"]["global_batch"] = 32;
  CHECK(stage0(ok(req), "gradients_bytes") == 32121044992.0);
  req["training"]["no_sync"] = false;
  CHECK(stage0(ok(req), "gradients_bytes") == 4015130624.0);
  // no_sync is FSDP's
  test::json ddp = pretrain("llama-3.1-8b", "pytorch", 8);
  ddp["training"]["no_sync"] = true;
  CHECK(refused_field(ddp) == "training.no_sync");
}

TEST_CASE("adamw_foreach: one moment's worth of temporaries during step()") {
  CHECK(optimizer_step_temporary_bytes(MEMEST_OPTIMIZER_ADAMW_FOREACH, 8e9) == 4e9);
  CHECK(optimizer_step_temporary_bytes(MEMEST_OPTIMIZER_ADAMW, 8e9) == 0);
  CHECK(optimizer_step_temporary_bytes(MEMEST_OPTIMIZER_PAGED_ADAMW_8BIT, 8e9) == 0);

  // Llama-3.2-1B-sized states on one GPU, pure bf16 under pytorch: the moments are bf16
  // (2 * 2 bytes per parameter, no master), the temporary one of them, 2 bytes per parameter;
  // it adds to the peak only beyond what the activations and the loss freed by then.
  test::json req = pretrain("llama-3.1-8b", "pytorch", 1);
  req["training"]["param_dtype"] = "bf16";
  req["training"]["grad_dtype"] = "bf16";
  req["training"]["optimizer"] = "adamw";
  req["training"]["recompute"] = "full";
  const test::json fused = ok(req);
  req["training"]["optimizer"] = "adamw_foreach";
  const test::json foreach = ok(req);
  const double n = 8030261248.0;
  const double freed = stage0(foreach, "activations_bytes") +
                       foreach["stages"][0]["stack"]["loss_bytes"].get<double>() +
                       foreach["stages"][0]["overheads"]["phase_overlap_bytes"].get<double>();
  const double expected = std::max(0.0, 2 * n - freed);
  CHECK(expected > 0);  // 16 GB of temporaries beside a few GB of activations
  CHECK(foreach["stages"][0]["overheads"]["optimizer_step_bytes"].get<double>() ==
        doctest::Approx(expected).epsilon(1e-12));
  CHECK(fused["stages"][0]["overheads"]["optimizer_step_bytes"].get<double>() == 0);
  CHECK(foreach["peak_bytes"].get<double>() - fused["peak_bytes"].get<double>() ==
        doctest::Approx(expected).epsilon(1e-9));
  // Megatron steps with its own fused Adam
  test::json meg = pretrain("llama-3.1-8b", "megatron", 8);
  meg["training"]["optimizer"] = "adamw_foreach";
  CHECK(refused_field(meg) == "training.optimizer");
}

TEST_CASE("DeepSpeed without ZeRO: FP16_Optimizer.step's fp32 gradient copies and their flat") {
  Stack ds;
  ds.framework = MEMEST_FRAMEWORK_DEEPSPEED;
  // 1.5e9 16-bit parameters: the fp32 copies (6 GB) and the flattened fp32 gradient (6 GB)
  CHECK(deepspeed_fp16_step_temporary_bytes(ds, 0, 2, 1.5e9) == 12e9);
  CHECK(deepspeed_fp16_step_temporary_bytes(ds, 1, 2, 1.5e9) == 0);  // ZeRO steps on partitions
  CHECK(deepspeed_fp16_step_temporary_bytes(ds, 0, 4, 1.5e9) == 0);  // fp32: no wrapper
  Stack fsdp;
  fsdp.framework = MEMEST_FRAMEWORK_FSDP;
  CHECK(deepspeed_fp16_step_temporary_bytes(fsdp, 0, 2, 1.5e9) == 0);

  // The DeepSpeed ZeRO tutorial's GPT-2 1.5B (48 layers, hidden 1600, vocab 50304, tied, 1024
  // positions) on 32 GB V100s without ZeRO, which went out of memory: 1,557,686,400 parameters,
  // 8 bytes each during step(), beyond what the backward freed (activations and the loss).
  test::json req = pretrain("llama-3.1-8b", "deepspeed", 8);
  req["model"] = {{"model_type", "gpt2"}, {"n_layer", 48},        {"n_embd", 1600},
                  {"n_head", 16},         {"vocab_size", 50304},  {"n_positions", 1024},
                  {"tie_word_embeddings", true}};
  req["gpu"] = "v100-32gb";
  req["parallel"]["zero"] = 0;
  req["training"]["seq_len"] = 1024;
  req["training"]["micro_batch"] = 1;
  req["training"]["global_batch"] = 8;
  req["training"]["param_dtype"] = "fp16";
  req["training"]["grad_dtype"] = "fp16";
  req["training"]["optimizer"] = "adam";
  const test::json r = ok(req);
  const double n = 48 * (12.0 * 1600 * 1600 + 13 * 1600) + 50304.0 * 1600 + 1024.0 * 1600 + 2 * 1600;
  CHECK(n == 1557686400.0);
  CHECK(stage0(r, "parameters") == n);
  const double freed = stage0(r, "activations_bytes") +
                       r["stages"][0]["stack"]["loss_bytes"].get<double>() +
                       r["stages"][0]["overheads"]["phase_overlap_bytes"].get<double>();
  CHECK(r["stages"][0]["overheads"]["optimizer_step_bytes"].get<double>() ==
        doctest::Approx(8 * n - freed).epsilon(1e-12));
  // LoRA: the wrapper steps the adapters only (rank 8 on the fused c_attn: 48 * 8 * (1600 + 4800) =
  // 2,457,600 parameters, 19.7 MB of temporaries), far below what the backward freed
  test::json lora = req;
  lora["training"]["adapter"] = {{"type", "lora"}, {"rank", 8}, {"targets", {"q_proj"}}};
  const test::json l = ok(lora);
  CHECK(l["stages"][0]["adapter"]["trainable_parameters"].get<double>() == 2457600.0);
  CHECK(l["stages"][0]["overheads"]["optimizer_step_bytes"].get<double>() == 0);
  req["parallel"]["zero"] = 1;
  CHECK(ok(req)["stages"][0]["overheads"]["optimizer_step_bytes"].get<double>() == 0);
}

TEST_CASE("paged_adamw_32bit: fp32 states in managed memory") {
  // bitsandbytes' 32-bit states are fp32 whatever the parameter dtype: 2 * 4 bytes
  CHECK(optimizer_moment_bytes(MEMEST_OPTIMIZER_PAGED_ADAMW_32BIT, 2) == 8);
  // 1e9 bf16 parameters under pytorch: 8e9 bytes paged, none in the allocator's optimizer
  StackStateInput in;
  in.params = 1e9;
  in.largest_tensor = 1e8;
  in.precision.param_bytes = 2;
  in.precision.grad_bytes = 2;
  in.precision.optimizer = MEMEST_OPTIMIZER_PAGED_ADAMW_32BIT;
  in.precision.optimizer_bytes =
      derived_optimizer_bytes(MEMEST_OPTIMIZER_PAGED_ADAMW_32BIT, MEMEST_FRAMEWORK_PYTORCH, 2);
  in.stack.framework = MEMEST_FRAMEWORK_PYTORCH;
  const StackStates s = stack_state_bytes(in);
  CHECK(s.paged == 8e9);
  CHECK(s.optimizer == 0);
}

TEST_CASE("qlora: a quantised LM head (LitGPT)") {
  // Llama-2-7B, QLoRA on one GPU. The head (32000 x 4096 = 131072000 weights) in NF4: half a
  // byte per weight plus an fp32 absmax per 64 (no double quant): 0.5625 bytes instead of 2,
  // 188416000 bytes less; the head is then the largest dequantised weight: 131072000 * 2.
  test::json req = pretrain("llama-2-7b", "pytorch", 1);
  req["training"]["adapter"] = {{"type", "qlora"}};
  const test::json plain = ok(req);
  req["training"]["adapter"]["quantize_lm_head"] = true;
  const test::json head = ok(req);
  CHECK(plain["adapter"]["base_weights_bytes"].get<double>() +
            plain["adapter"]["quant_metadata_bytes"].get<double>() -
            head["adapter"]["base_weights_bytes"].get<double>() -
            head["adapter"]["quant_metadata_bytes"].get<double>() ==
        188416000.0);
  CHECK(head["adapter"]["dequant_bytes"].get<double>() == 262144000.0);
  CHECK(head["training"]["adapter"]["quantize_lm_head"] == true);
  req["training"]["adapter"]["type"] = "lora";
  CHECK(refused_field(req) == "training.adapter.quantize_lm_head");
}

TEST_CASE("the loss: gathered vocabulary without loss_parallel, Gemma 2's soft-capping") {
  // Llama-3.1-8B under fsdp with tp 2, 2048 tokens: the unfused loss sees all 128256 columns
  // instead of 64128, plus the local shard the gather leaves referenced (2 bytes per logit).
  // Unfused (activations/stack_activations.hpp loss_memory: the bf16 logits, their fp32 copy,
  // log_softmax's fp32 output and the fp32 gradient at the backward's start): 12 bytes per
  // logit, 12 N V/2 with loss_parallel; gathered, 12 N V + 2 N V/2: 13 bytes per local logit
  // pair, in the 14-16 bytes per logit torchtitan runs show without loss_parallel.
  test::json req = pretrain("llama-3.1-8b", "fsdp", 8);
  req["parallel"]["tp"] = 2;
  const double n = 2048, v = 128256;
  const double vp = ok(req)["stages"][0]["stack"]["loss_bytes"].get<double>();
  req["training"]["loss_parallel"] = false;
  const double gathered = ok(req)["stages"][0]["stack"]["loss_bytes"].get<double>();
  CHECK(vp == 12 * n * v / 2);
  CHECK(gathered == 12 * n * v + 2 * n * v / 2);
  test::json meg = pretrain("llama-3.1-8b", "megatron", 8);
  meg["training"]["loss_parallel"] = false;
  CHECK(refused_field(meg) == "training.loss_parallel");

  // Gemma 2 9B (final_logit_softcapping 30 in its config.json), one GPU: tanh keeps one more
  // bf16 logits tensor, 2 * 2048 * 256000 = 1048576000 bytes. The same config.json without
  // the cap is the control.
  test::json config;
  {
    std::ifstream in(std::string(MEMEST_PRESET_DATA) + "/models.json");
    std::stringstream ss;
    ss << in.rdbuf();
    const test::json doc = test::json::parse(ss.str());
    for (const test::json& m : doc["models"]) {
      if (m["id"] == "gemma-2-9b") config = m["hf_config"];
    }
  }
  REQUIRE(config["final_logit_softcapping"] == 30.0);
  test::json g = pretrain("gemma-2-9b", "pytorch", 1);
  g["model"] = config;
  const test::json capped = ok(g);
  CHECK(capped["model"]["final_logit_softcapping"] == 30.0);
  config.erase("final_logit_softcapping");
  g["model"] = config;
  const test::json uncapped = ok(g);
  CHECK(capped["stages"][0]["stack"]["loss_bytes"].get<double>() -
            uncapped["stages"][0]["stack"]["loss_bytes"].get<double>() ==
        1048576000.0);
}

TEST_CASE("autocast false: pure fp32 keeps every saved tensor in fp32") {
  // A block's saved tensors (plan.stack_terms) at 4 bytes instead of 2: twice pure bf16's
  PretrainRequest r;
  r.model = find_model_preset("llama-3.1-8b", "model").model;
  r.gpu = find_gpu_preset("h100-80gb", "gpu").gpu;
  r.stack.framework = MEMEST_FRAMEWORK_PYTORCH;
  r.seq_len = 2048;
  r.precision.param_bytes = 2;
  r.precision.optimizer_bytes = MEMEST_OPTIMIZER_BYTES_DERIVE;
  const StackLayerTerms bf16 = make_plan(r).stack_terms;
  r.precision.param_bytes = 4;
  r.stack.autocast = 0;
  const StackLayerTerms fp32 = make_plan(r).stack_terms;
  CHECK(fp32.plain_layer == 2 * bf16.plain_layer);
  CHECK(fp32.recompute == 2 * bf16.recompute);
  CHECK_FALSE(fp32.autocast);
  // the loss: fp32 logits, no upcast copy: the no-upcast kind at 4 bytes per logit
  r.stack.autocast = -1;  // the default for fp32 outside FSDP: autocast
  CHECK(make_plan(r).stack_terms.autocast);
  test::json meg = pretrain("llama-3.1-8b", "megatron", 8);
  meg["training"]["autocast"] = false;
  CHECK(refused_field(meg) == "training.autocast");
}

TEST_CASE("deepspeed: ZeRO-Offload streams gradients to the host — ZeRO-3 gathers whole modules") {
  // ZeRO-2 with the optimizer offloaded, 1e9 fp16 parameters on one GPU: the gradient partition
  // (2e9) goes to the host with the optimizer (12e9 with the fp32 master): 14e9 on the host.
  StackStateInput in;
  in.params = 1e9;
  in.largest_tensor = 1e8;
  in.zero = 2;
  in.precision.param_bytes = 2;
  in.precision.grad_bytes = 2;
  in.precision.optimizer_bytes = 12;
  in.stack.framework = MEMEST_FRAMEWORK_DEEPSPEED;
  in.stack.offload_optimizer = 1;
  const StackStates s = stack_state_bytes(in);
  CHECK(s.gradients == 0);
  CHECK(s.host == 14e9);

  // ZeRO-3 on 8 GPUs, a 2-layer Llama-style model (h 1024, ffn 4096, 16 heads) with BLOOM's
  // 250880-token tied vocabulary: the embedding, 256901120 parameters, is one module, gathered
  // whole. Stage parameters 256901120 + 2 * 16779264 + 1024 = 290460672: the ipg buffer,
  // allocated whole, 5e8 * 2 = 1e9 bytes; the reduce-scatter's flat copy of one bucket,
  // min(5e8, 290460672) * 2 = 580921344; gathered, the module and the prefetch bucket
  // together, min(1e9, 256901120 + min(5e7, 256901120)) = 306901120 elements in bf16:
  // 613802240; the persistent norms 2 * 2048 * 2 = 8192. 2194731776 in all (a block of
  // 16779264 would have given 67117056 for the gathered part).
  test::json ds = pretrain("llama-3.1-8b", "deepspeed", 8);
  ds["parallel"]["zero"] = 3;
  ds["model"] = {{"hidden_size", 1024}, {"num_hidden_layers", 2}, {"num_attention_heads", 16},
                 {"intermediate_size", 4096}, {"vocab_size", 250880}, {"tie_word_embeddings", true}};
  const test::json r = ok(ds);
  CHECK(r["stages"][0]["stack"]["framework_buffer_bytes"].get<double>() == 2194731776.0);
}

TEST_CASE("deepspeed: LoRA under ZeRO-3 with offload_param — the whole ipg buffer and the partition's copy") {
  // The 2-layer model above with fp32 weights on one GPU, LoRA r 8 on q_proj and v_proj in
  // fp32: 2 * 8 * (1024 + 1024) = 32768 adapter parameters a layer, 65536 trainable. The ipg
  // buffer is torch.empty(5e8) in the adapters' dtype: 2e9 bytes; the reduce-scatter copies
  // what it reduces, 65536 * 4 = 262144; the gathered block 16779264 * 4 = 67117056 and the
  // embedding, the largest module, 256901120 * 4 = 1027604480, which offload_param's gather
  // first copies to the GPU whole (one rank): 1027604480 more. 4122588160 in all.
  test::json ds = pretrain("llama-3.1-8b", "deepspeed", 1);
  ds["parallel"]["zero"] = 3;
  ds["model"] = {{"hidden_size", 1024}, {"num_hidden_layers", 2}, {"num_attention_heads", 16},
                 {"intermediate_size", 4096}, {"vocab_size", 250880}, {"tie_word_embeddings", true}};
  ds["training"]["param_dtype"] = "fp32";
  ds["training"]["adapter"] = {{"type", "lora"}, {"rank", 8}, {"targets", {"q_proj", "v_proj"}},
                               {"dtype", "fp32"}};
  ds["training"]["offload"] = {{"params", true}, {"optimizer", true}};
  const test::json r = ok(ds);
  CHECK(r["trainable_parameters"].get<double>() == 65536.0);
  CHECK(r["stages"][0]["stack"]["framework_buffer_bytes"].get<double>() == 4122588160.0);
  // without offload_param the partition is on the GPU already: no copy
  ds["training"]["offload"]["params"] = false;
  CHECK(ok(ds)["stages"][0]["stack"]["framework_buffer_bytes"].get<double>() == 3094983680.0);
}

TEST_CASE("the peak's band and the probability of OOM") {
  const double s = MEMEST_PEAK_ERROR_SIGMA;
  CHECK(oom_probability(80, 80) == doctest::Approx(0.5));
  // a peak at capacity * exp(-1.645 sigma) has a 5 % chance of passing it
  CHECK(oom_probability(80 * std::exp(-kPeakBandZ * s), 80) == doctest::Approx(0.05).epsilon(1e-9));
  CHECK(peak_limit_for_oom_probability(80, 0.05) == doctest::Approx(80 * std::exp(-kPeakBandZ * s)));
  CHECK(peak_limit_for_oom_probability(80, 0.5) == doctest::Approx(80));
  CHECK(peak_band_high(10) == doctest::Approx(10 * std::exp(kPeakBandZ * s)));
  // the headline's fits band is that 5 % point, rounded down to a percent
  CHECK(MEMEST_PEAK_FITS_FRACTION == std::floor(100 * std::exp(-kPeakBandZ * s)) / 100);

  const test::json r = ok(pretrain("llama-3.1-8b", "fsdp", 8));
  const double peak = r["peak_bytes"].get<double>(), cap = r["capacity_bytes"].get<double>();
  CHECK(r["margin_bytes"].get<double>() == cap - peak);
  CHECK(r["oom_probability"].get<double>() == oom_probability(peak, cap));
  CHECK(r["peak_band_bytes"][1].get<double>() == peak_band_high(peak));
  // what PyTorch and nvidia-smi report
  const double context = r["overheads"]["context_bytes"].get<double>();
  CHECK(r["torch_max_memory_allocated_bytes"].get<double>() ==
        r["peak_allocated_bytes"].get<double>() - context);
  CHECK(r["torch_max_memory_reserved_bytes"].get<double>() ==
        r["peak_reserved_bytes"].get<double>() - context);
  CHECK(r["nvidia_smi_bytes"].get<double>() == r["peak_reserved_bytes"].get<double>());

  // the search ranks only layouts within its probability of OOM
  test::json search = {{"mode", "search"}, {"model", "llama-3.1-8b"}, {"gpu", "a100-40gb"},
                       {"parallel", {{"gpus", 8}}}, {"training", {{"seq_len", 8192}, {"global_batch", 64}}},
                       {"search", {{"top", 50}, {"max_oom_probability", 0.05}}}};
  const test::json strict = ok(search);
  for (const test::json& e : strict["results"]) CHECK(e["oom_probability"].get<double>() <= 0.05);
  search["search"]["max_oom_probability"] = 0.5;
  const test::json loose = ok(search);
  CHECK(loose["ranked"].get<uint64_t>() > strict["ranked"].get<uint64_t>());
  search["search"]["max_oom_probability"] = 2;
  const test::Answer bad = test::request(search);
  CHECK(bad.status == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(bad.body["error"]["field"] == "search.max_oom_probability");
}

TEST_CASE("1.6 fields: field-named refusals") {
  test::json req = pretrain("llama-3.1-8b", "megatron", 8);
  req["training"]["reduce_dtype"] = "fp32";
  CHECK(refused_field(req) == "training.reduce_dtype");
  req = pretrain("llama-3.1-8b", "fsdp", 8);
  req["training"]["fp8_all_gather"] = true;  // without fp8
  CHECK(refused_field(req) == "training.fp8_all_gather");
  req = pretrain("llama-3.1-8b", "megatron", 8);
  req["training"]["logits_held"] = true;
  CHECK(refused_field(req) == "training.logits_held");
  req = pretrain("llama-3.1-8b", "fsdp", 8);
  req["training"]["reduce_dtype"] = "fp8";
  CHECK(refused_field(req) == "training.reduce_dtype");
}

// Adversarial inputs on the 1.6 surfaces: each of these checks failed before its fix.
TEST_CASE("hardening: gpu.fp8 is 0 or 1 — MLA fields need kv_lora_rank — recompute_every past a stage") {
  test::json req = pretrain("llama-3.1-8b", "fsdp", 8);
  req["gpu"] = {{"preset", "h100-80gb"}, {"fp8", 0.5}};
  CHECK(refused_field(req) == "gpu.fp8");

  test::json mla = pretrain("llama-3.1-8b", "pytorch", 1);
  mla["model"] = {{"hidden_size", 4096}, {"num_hidden_layers", 4}, {"num_attention_heads", 32},
                  {"intermediate_size", 11008}, {"vocab_size", 32000}, {"q_lora_rank", 512}};
  CHECK(refused_field(mla) == "model.q_lora_rank");

  // One block in 64 of a 32-layer stage checkpoints none: the same activations as no
  // recomputation and no rebuild working set (before: the working set on top, 0.46 GB more).
  test::json none = pretrain("llama-3.1-8b", "fsdp", 8);
  const test::json plain = ok(none);
  test::json every = none;
  every["training"]["recompute"] = "full";
  every["training"]["recompute_every"] = 64;
  const test::json r = ok(every);
  CHECK(r["stages"][0]["stack"]["recompute_bytes"].get<double>() == 0);
  // no recomputation has its own backward working set (recompute_bytes of the plain run)
  CHECK(stage0(r, "activations_bytes") ==
        stage0(plain, "activations_bytes") - plain["stages"][0]["stack"]["recompute_bytes"].get<double>());
}

TEST_CASE("hardening: a shortlist stride off the layout's alignment — expert-grid errors name the field at fault") {
  // a stride that is not a multiple of alignof(memest_layout) read misaligned int64s
  memest_test::Pretrain base("llama-3.1-8b", "a100-40gb");
  base.r.gpus = 8;
  base.r.global_batch = 64;
  memest_layout l;
  REQUIRE(memest_layout_init(&l, sizeof l) == MEMEST_OK);
  const uint32_t stride = sizeof(memest_layout) - 4;  // a size the library knows, misaligned
  l.struct_size = stride;
  alignas(memest_layout) unsigned char buf[2 * sizeof(memest_layout)] = {};
  std::memcpy(buf, &l, stride);
  std::memcpy(buf + stride, &l, stride);
  memest_search_request r;
  REQUIRE(memest_search_request_init(&r, sizeof r) == MEMEST_OK);
  r.base = &base.r;
  r.layouts = reinterpret_cast<const memest_layout*>(buf);
  r.layout_count = 2;
  memest_search_result res = memest_test::sized<memest_search_result>();
  memest_search_entry top[2];
  CHECK(memest_search(&r, &res, top, sizeof top[0], 2, nullptr, 0) == MEMEST_ERR_STRUCT_SIZE);
  CHECK(std::string(memest_last_error_field()) == "search.layouts[0].struct_size");

  // Mixtral on 8 GPUs, ep 2 and etp 3: ep x pp divides the GPUs, etp is what does not
  test::json moe = {{"mode", "pretrain"}, {"model", "mixtral-8x7b"}, {"gpu", "h100-80gb"},
                    {"parallel", {{"gpus", 8}, {"tp", 1}, {"ep", 2}, {"etp", 3}}},
                    {"training", {{"seq_len", 4096}}}};
  CHECK(refused_field(moe) == "parallel.etp");
  moe["parallel"]["ep"] = 8;
  moe["parallel"]["pp"] = 2;
  moe["parallel"]["etp"] = 1;
  CHECK(refused_field(moe) == "parallel.ep");
}

TEST_CASE("hardening: a struct_size that cuts a field in two is refused (fuzz_typed finding)") {
  // fuzz_typed found it (tests/fuzz/corpus_typed/finding_struct_size_cuts_pointer.bin): the
  // search's base request with struct_size ending 3 bytes into pipeline_layout. The library
  // read those 3 bytes of the caller's pointer over the default's zeros and strlen'd the
  // resulting address (SIGSEGV). A layout ends after a field, never inside one.
  memest_test::Pretrain base("llama-3.1-8b", "a100-40gb");
  base.r.gpus = 8;
  base.r.global_batch = 64;
  base.r.pp = 2;
  const char* layout = "Et*16|t*16L";
  base.r.pipeline_layout = layout;
  base.r.struct_size = static_cast<uint32_t>(offsetof(memest_pretrain_request, pipeline_layout) + 3);
  memest_pretrain_result pr = memest_test::sized<memest_pretrain_result>();
  CHECK(memest_pretrain(&base.r, &pr, nullptr, sizeof(memest_stage), 0) == MEMEST_ERR_STRUCT_SIZE);
  CHECK(std::string(memest_last_error_field()) == "request.struct_size");
  CHECK(std::string(memest_last_error()).find("ends inside the pointer pipeline_layout") !=
        std::string::npos);
  memest_search_request r;
  REQUIRE(memest_search_request_init(&r, sizeof r) == MEMEST_OK);
  r.base = &base.r;
  memest_search_result res = memest_test::sized<memest_search_result>();
  memest_search_entry top[2];
  CHECK(memest_search(&r, &res, top, sizeof top[0], 2, nullptr, 0) == MEMEST_ERR_STRUCT_SIZE);
  CHECK(std::string(memest_last_error_field()) == "base.struct_size");
  // a layout ending just before the pointer (no pipeline_layout: the default) or just after it
  // (the caller's pointer, whole) is read as the caller wrote it
  base.r.struct_size = static_cast<uint32_t>(offsetof(memest_pretrain_request, pipeline_layout));
  CHECK(memest_pretrain(&base.r, &pr, nullptr, sizeof(memest_stage), 0) == MEMEST_OK);
  base.r.struct_size =
      static_cast<uint32_t>(offsetof(memest_pretrain_request, pipeline_layout) + sizeof(void*));
  CHECK(memest_pretrain(&base.r, &pr, nullptr, sizeof(memest_stage), 0) == MEMEST_OK);
  // the search's own appended pointer, the shortlist, the same way
  base.r.struct_size = sizeof base.r;
  r.struct_size = static_cast<uint32_t>(offsetof(memest_search_request, layouts) + 1);
  CHECK(memest_search(&r, &res, top, sizeof top[0], 2, nullptr, 0) == MEMEST_ERR_STRUCT_SIZE);
  CHECK(std::string(memest_last_error_field()) == "request.struct_size");
  // and an _init function asked for such a size writes nothing
  memest_pretrain_request fresh;
  std::memset(&fresh, 0xA5, sizeof fresh);
  CHECK(memest_pretrain_request_init(
            &fresh, static_cast<uint32_t>(offsetof(memest_pretrain_request, pipeline_layout) + 4)) ==
        MEMEST_ERR_STRUCT_SIZE);
  CHECK(fresh.struct_size == 0xA5A5A5A5u);
}

TEST_CASE("activation offloading: the copy stream stages what one layer saved") {
  // Llama-3.1-8B under pytorch on one GPU, s 2048, b 1, every block checkpointed, activations
  // offloaded (torchtune's OffloadActivations). The offload hooks see only what
  // torch/utils/checkpoint.py saves, each block's bf16 input: 2048 * 4096 * 2 = 16777216 bytes
  // a layer, 32 * 16777216 = 536870912 on the host, and one layer's input staged on the GPU
  // (before, the staging was a whole block keeping everything, 411320320 bytes, 24 times more;
  // torchtune's README measures 1.3 GiB saved by offloading on Llama-3.2-3B, 28 layer inputs).
  test::json req = pretrain("llama-3.1-8b", "pytorch", 1);
  req["training"]["recompute"] = "full";
  req["training"]["offload"] = {{"activations", true}};
  const test::json full = ok(req);
  CHECK(full["stages"][0]["stack"]["offload_staging_bytes"].get<double>() == 16777216.0);
  CHECK(stage0(full, "host_bytes") == 536870912.0);
  // Without checkpointing a layer saves its whole block, which is then what is staged.
  req["training"]["recompute"] = "none";
  const test::json none = ok(req);
  CHECK(none["stages"][0]["stack"]["offload_staging_bytes"].get<double>() * 32 ==
        stage0(none, "host_bytes"));
  CHECK(none["stages"][0]["stack"]["offload_staging_bytes"].get<double>() > 16777216.0 * 20);
}
