// The memory mechanisms of 1.9: the chunk counts of the chunked losses (torchtune, LitGPT,
// torchtitan) and FSDP1's FlatParameters that mix frozen weights and LoRA adapters. Every
// expected value is worked by hand in the comment above it.
#include <doctest/doctest.h>

#include <string>

#include "activations/stack_activations.hpp"
#include "helpers.hpp"
#include "plan/stack.hpp"

using namespace memest;
using test::ok;
using test::refused_field;

namespace {

test::json fsdp1_lora(int global_batch) {
  return {{"mode", "pretrain"},
          {"model", "llama-3.1-8b"},
          {"gpu", "h100-80gb"},
          {"parallel", {{"gpus", 8}, {"zero", 3}}},
          {"training",
           {{"seq_len", 2048},
            {"micro_batch", 1},
            {"global_batch", global_batch},
            {"framework", "fsdp1"},
            {"adapter", {{"type", "lora"}, {"dtype", "bf16"}}}}}};
}

double adapter_grads(const test::json& r) {
  return r["stages"][0]["adapter"]["adapter_gradients_bytes"].get<double>();
}

}  // namespace

TEST_CASE("chunk counts: each chunked loss's own default, and loss_chunks") {
  // torchtune's num_output_chunks and torchtitan's num_chunks default to 8; LitGPT's head
  // chunks are 128 tokens of each sequence: ceil(4096 / 128) = 32, ceil(4097 / 128) = 33.
  CHECK(loss_chunks_in_effect(MEMEST_LOSS_CHUNKED, 0, 4096) == 8);
  CHECK(loss_chunks_in_effect(MEMEST_LOSS_CHUNKED_LINEAR, 0, 4096) == 8);
  CHECK(loss_chunks_in_effect(MEMEST_LOSS_CHUNKED_LM_HEAD, 0, 4096) == 32);
  CHECK(loss_chunks_in_effect(MEMEST_LOSS_CHUNKED_LM_HEAD, 0, 4097) == 33);
  CHECK(loss_chunks_in_effect(MEMEST_LOSS_CHUNKED_LM_HEAD, 0, 100) == 1);
  CHECK(loss_chunks_in_effect(MEMEST_LOSS_CHUNKED, 16, 4096) == 16);
  CHECK(loss_chunks_in_effect(MEMEST_LOSS_UNFUSED, 16, 4096) == 0);
}

TEST_CASE("loss memory: LitGPT's chunked LM head keeps every chunk's logits and log-probs") {
  // N = 8192 tokens, V = 128256: N V = 1050673152 logits, 64 chunks of 128 tokens. Lightning
  // Fabric's convert_output hands the loss fp32 copies of the bf16 chunks.
  LossInputs in;
  in.tokens = 8192;
  in.vocab = 128256;
  in.hidden = 4096;
  in.chunks = 64;
  // Forward: the conversion holds bf16 2 + fp32 4 = 6 B/logit, then the fp32 logits and their
  // fp32 log-probs 4 + 4 = 8 B/logit = 8405385216. Backward: 8 + one chunk's two fp32
  // gradients 8/64 = 8.125 B/logit = 8536719360.
  auto r = loss_memory(LossKind::ChunkedLmHead, in);
  CHECK(r.forward == 8405385216.0);
  CHECK(r.backward == 8536719360.0);
  // a head that already writes fp32 (32-true): no conversion copy, the same 8 and 8.125
  in.logit_bytes = 4;
  CHECK(loss_memory(LossKind::ChunkedLmHead, in).forward == 8405385216.0);
  // the loop always references the chunk list: logits_held adds nothing more
  in.logits_held = true;
  CHECK(loss_memory(LossKind::ChunkedLmHead, in).backward == 8536719360.0);
}

TEST_CASE("loss memory: torchtitan's ChunkedLossWrapper holds one chunk and an fp32 gradient") {
  // 8 chunks: (12 + 2) / 8 = 1.75 B/logit = 1838678016, plus the fp32 GradAccumulator of the
  // hidden states 4 * 8192 * 4096 = 134217728: forward 1972895744. Backward of the decoder:
  // the accumulator and its bf16 cast, 6 * 8192 * 4096 = 201326592.
  LossInputs in;
  in.tokens = 8192;
  in.vocab = 128256;
  in.hidden = 4096;
  in.chunks = 8;
  auto r = loss_memory(LossKind::ChunkedLinear, in);
  CHECK(r.forward == 1972895744.0);
  CHECK(r.backward == 201326592.0);
  CHECK(r.peak() == 1972895744.0);
  // a compiled inner loss: the chunk's saved logits and gradient, 2 * 2 / 8 = 0.5 B/logit =
  // 525336576, + 134217728 = 659554304
  in.compiled = true;
  CHECK(loss_memory(LossKind::ChunkedLinear, in).forward == 659554304.0);
  // 16 chunks halve the chunk's part: 919339008 + 134217728 = 1053556736
  in.compiled = false;
  in.chunks = 16;
  CHECK(loss_memory(LossKind::ChunkedLinear, in).forward == 1053556736.0);
}

TEST_CASE("loss_chunks through a request: echoed, applied, refused by name") {
  test::json req = {{"mode", "pretrain"},
                    {"model", "llama-3.1-8b"},
                    {"gpu", "h100-80gb"},
                    {"parallel", {{"gpus", 1}}},
                    {"training",
                     {{"seq_len", 4096}, {"micro_batch", 1}, {"framework", "pytorch"},
                      {"loss", "chunked_lm_head"}, {"recompute", "full"}}}};
  const test::json lit = ok(req);
  CHECK(lit["training"]["loss"] == "chunked_lm_head");
  CHECK(lit["training"]["loss_chunks"] == 32);
  req["training"]["loss"] = "chunked_linear";
  const test::json titan8 = ok(req);
  CHECK(titan8["training"]["loss_chunks"] == 8);
  req["training"]["loss_chunks"] = 16;
  const test::json titan16 = ok(req);
  CHECK(titan16["training"]["loss_chunks"] == 16);
  // the loss term at the last stage: 4096 tokens x 128256 = 525336576 logits; 8 chunks:
  // 525336576 * 14 / 8 + 4 * 4096 * 4096 = 919339008 + 67108864 = 986447872; 16 chunks:
  // 459669504 + 67108864 = 526778368
  CHECK(titan8["stages"][0]["stack"]["loss_bytes"].get<double>() == 986447872.0);
  CHECK(titan16["stages"][0]["stack"]["loss_bytes"].get<double>() == 526778368.0);
  req["training"]["loss_chunks"] = -1;
  CHECK(refused_field(req) == "training.loss_chunks");
  req["training"]["loss_chunks"] = 4097;  // more chunks than tokens
  CHECK(refused_field(req) == "training.loss_chunks");
  req["training"]["loss_chunks"] = 4;
  req["training"]["loss"] = "unfused";  // not a chunked loss
  CHECK(refused_field(req) == "training.loss_chunks");
  req["training"].erase("loss_chunks");
  req["training"]["loss"] = "chunked_lm_head";
  req["training"]["framework"] = "megatron";
  CHECK(refused_field(req) == "training.loss");
}

TEST_CASE("fsdp1 use_orig_params: a block's flat gradient spans its frozen weights") {
  // Llama-3.1-8B: 8030261248 parameters, of which the root unit (embedding and head 128256 x
  // 4096 each, final norm 4096) holds 1050677248: the blocks hold 6979584000 frozen weights.
  // LoRA q_proj, v_proj at r 8: 8 (4096 + 4096) + 8 (4096 + 1024) = 106496 per layer, x 32 =
  // 3407872 adapters. bf16, sharded over 8 GPUs:
  //   adapters wrapped apart: 3407872 * 2 / 8 = 851968 bytes of gradient;
  //   mixed flat parameters: (6979584000 + 3407872) * 2 / 8 = 1745747968;
  //   under no_sync with accumulation: unsharded, 6982991872 * 2 = 13965983744.
  test::json req = fsdp1_lora(8);
  CHECK(adapter_grads(ok(req)) == 851968.0);
  req["training"]["fsdp_use_orig_params"] = true;
  const test::json mixed = ok(req);
  CHECK(mixed["training"]["fsdp_use_orig_params"] == true);
  CHECK(adapter_grads(mixed) == 1745747968.0);
  CHECK(mixed["stages"][0]["gradients_bytes"].get<double>() == 1745747968.0);
  req["training"]["global_batch"] = 32;
  CHECK(adapter_grads(ok(req)) == 13965983744.0);

  // refusals, by name
  test::json v2 = fsdp1_lora(8);
  v2["training"]["framework"] = "fsdp";
  v2["training"]["fsdp_use_orig_params"] = true;
  CHECK(refused_field(v2) == "training.fsdp_use_orig_params");
  test::json qlora = fsdp1_lora(8);
  qlora["training"]["adapter"]["type"] = "qlora";
  qlora["training"]["fsdp_use_orig_params"] = true;
  CHECK(refused_field(qlora) == "training.fsdp_use_orig_params");
  test::json fp32 = fsdp1_lora(8);
  fp32["training"]["adapter"]["dtype"] = "fp32";
  fp32["training"]["fsdp_use_orig_params"] = true;
  CHECK(refused_field(fp32) == "training.adapter.dtype");
}

TEST_CASE("NVFP4: quantised copies at 0.5625 bytes per element") {
  // E2M1 (0.5 byte) with one E4M3 scale per 16 elements (1/16 byte)
  CHECK(quantised_element_bytes(Fp8Impl::TransformerEngineNvfp4) == 0.5625);
  CHECK(quantised_element_bytes(Fp8Impl::TransformerEngine) == 1.0);
  // row-wise and column-wise copies of every linear weight: 2 x 0.5625 = 1.125 B/param
  CHECK(fp8_weight_copies_bytes(Fp8Impl::TransformerEngineNvfp4, 1e9) == 1.125e9);
  // the saved-activation change: test_stack_activations.cpp, beside fp8's
}

TEST_CASE("NVFP4 through a request: Megatron on a B200, refused elsewhere by name") {
  test::json req = {{"mode", "pretrain"},
                    {"model", "llama-3.1-8b"},
                    {"gpu", "b200-180gb"},
                    {"parallel", {{"gpus", 8}, {"tp", 1}, {"pp", 1}}},
                    {"training",
                     {{"seq_len", 8192}, {"micro_batch", 1}, {"global_batch", 8},
                      {"recompute", "full"}, {"fp8", true}}}};
  const test::json fp8 = ok(req);
  req["training"]["fp8"] = false;
  req["training"]["fp4"] = true;
  const test::json fp4 = ok(req);
  CHECK(fp4["training"]["fp4"] == true);
  // the weight copies of the linears: Llama-3.1-8B's blocks hold 6979584000 parameters less
  // the 32 x 2 x 4096 norm weights = 6979321856 linear parameters, and the untied head
  // 525336576: 7504658432 x (2 - 1.125) = 6566576128 bytes less than fp8's (full recompute:
  // no saved-activation change)
  CHECK(fp8["stages"][0]["weights_bytes"].get<double>() - fp4["stages"][0]["weights_bytes"].get<double>() ==
        6566576128.0);
  // NVFP4 GEMMs run faster than fp8's on the same GPU (twice the peak)
  CHECK(fp4["throughput"]["tokens_per_s"].get<double>() >
        fp8["throughput"]["tokens_per_s"].get<double>());
  test::json both = req;
  both["training"]["fp8"] = true;
  CHECK(refused_field(both) == "training.fp4");
  test::json hopper = req;
  hopper["gpu"] = "h100-80gb";
  CHECK(refused_field(hopper) == "training.fp4");
  test::json fsdp = req;
  fsdp["training"]["framework"] = "fsdp";
  CHECK(refused_field(fsdp) == "training.fp4");
  test::json custom = req;
  custom["gpu"] = {{"preset", "b200-180gb"}, {"fp4", 2}};
  CHECK(refused_field(custom) == "gpu.fp4");
}

TEST_CASE("the response's layout.zero is the stage the framework runs") {
  // fsdp at zero 1 shards parameters, gradients and optimizer like zero 3 (fully_shard's
  // default): the response says 3, and its figures equal zero 3's.
  test::json req = {{"mode", "pretrain"},
                    {"model", "llama-3.1-8b"},
                    {"gpu", "h100-80gb"},
                    {"parallel", {{"gpus", 8}, {"zero", 1}}},
                    {"training", {{"seq_len", 2048}, {"micro_batch", 1}, {"framework", "fsdp"}}}};
  const test::json one = ok(req);
  CHECK(one["layout"]["zero"] == 3);
  req["parallel"]["zero"] = 3;
  CHECK(ok(req)["peak_bytes"] == one["peak_bytes"]);
  req["training"]["framework"] = "megatron";
  req["parallel"]["zero"] = 1;
  CHECK(ok(req)["layout"]["zero"] == 1);  // Megatron's distributed optimizer: as asked
}
