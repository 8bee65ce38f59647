// Which parts torch.compile compiles (memest_compile: none, all, model, loss): the loss under
// all and loss, the blocks under all and model (plan/plan.cpp stack_layer_terms), and the
// refusals. Every expected value is worked by hand in the comment above it.
#include <doctest/doctest.h>

#include <string>

#include "helpers.hpp"
#include "plan/plan.hpp"
#include "plan/requests.hpp"

using namespace memest;

namespace {

// A small Llama-style model: h = 256, a = k = 4 heads of d = 64, h_ffn = 512 (SwiGLU),
// v = 1000, 2 layers; plain PyTorch (Hugging Face block), bf16 parameters (no autocast), one
// GPU, s = 128, b = 1: N = 128 tokens, N*V = 128000 logits. The loss resolves to unfused.
PretrainRequest small_request(int32_t compile) {
  PretrainRequest r;
  memest_model& m = r.model;
  m.family = MEMEST_FAMILY_LLAMA;
  m.hidden_size = 256;
  m.num_hidden_layers = 2;
  m.num_attention_heads = 4;
  m.num_key_value_heads = 4;
  m.intermediate_size = 512;
  m.vocab_size = 1000;
  m.gated_mlp = 1;
  r.gpus = 1;
  r.seq_len = 128;
  r.micro_batch = 1;
  r.stack.framework = MEMEST_FRAMEWORK_PYTORCH;
  r.stack.compile = compile;
  r.gpu.struct_size = sizeof r.gpu;
  REQUIRE(memest_gpu_from_preset("h100-80gb", &r.gpu) == MEMEST_OK);
  return r;
}

test::json small_json(const test::json& compile, int seq_len = 128) {
  return {{"mode", "pretrain"},
          {"model",
           {{"hidden_size", 256},
            {"num_hidden_layers", 2},
            {"num_attention_heads", 4},
            {"num_key_value_heads", 4},
            {"intermediate_size", 512},
            {"vocab_size", 1000}}},
          {"gpu", "h100-80gb"},
          {"parallel", {{"gpus", 1}}},
          {"training",
           {{"seq_len", seq_len}, {"micro_batch", 1}, {"framework", "pytorch"}, {"compile", compile}}}};
}

test::Answer answer(const test::json& req) {
  test::Answer a = test::request(req);
  INFO(a.body.dump());
  return a;
}

}  // namespace

TEST_CASE("compile parts: the loss is compiled under all and loss, the blocks under all and model") {
  // Loss (activations/stack_activations.cpp loss_memory, Unfused, bf16 logits): eager peak at
  // the backward, saved log-probs 4 + nll grad 4 + new grad 4 = 12 B/logit * 128000 = 1536000;
  // compiled, the saved bf16 logits 2 + their bf16 gradient 2 = 4 B/logit = 512000.
  // Block (eager_block_bytes, Hugging Face, bf16, SDPA with K and V at their own 4 heads), per
  // token: eager norms 2 * ((4 + 2)h + 4 + 2h) = 16h + 8 = 4104 (fp32 upcast, normed, rsqrt,
  // the output the linears save); attention Q 2*256 + K, V 2*2*256 + output 2*256 + fp32
  // logsumexp 4*4 = 2064; MLP gate, SiLU out, up, product 4 * 2 * 512 = 4096: 10264 B * 128 =
  // 1313792. Compiled: each norm keeps its bf16 input 2h, the fp32 mean of squares 4 and the
  // output 2h: 2 * (4h + 4) = 2056; the SiLU output is recomputed: 3 * 2 * 512 = 3072;
  // 2056 + 2064 + 3072 = 7192 B * 128 = 920576.
  struct Case {
    int32_t compile;
    double loss, block;
  };
  const Case cases[] = {{MEMEST_COMPILE_NONE, 1536000.0, 1313792.0},
                        {MEMEST_COMPILE_ALL, 512000.0, 920576.0},
                        {MEMEST_COMPILE_MODEL, 1536000.0, 920576.0},
                        {MEMEST_COMPILE_LOSS, 512000.0, 1313792.0}};
  for (const Case& c : cases) {
    INFO("compile ", c.compile);
    const PretrainRequest r = small_request(c.compile);
    const Plan plan = make_plan(r);
    REQUIRE(plan.loss == MEMEST_LOSS_UNFUSED);
    CHECK(plan.stack_terms.loss == c.loss);
    CHECK(plan.stack_terms.plain_layer == c.block);
  }
}

TEST_CASE("compile parts: JSON takes a bool or a name and echoes both forms") {
  // true is "all" (the 1.2 meaning), false "none"; the stage's loss_bytes follow the loss's
  // part: 12 B/logit eager, 4 compiled (128000 logits, as above).
  struct Case {
    test::json given;
    bool echoed;
    const char* name;
    double loss_bytes;
  };
  const Case cases[] = {{false, false, "none", 1536000.0},
                        {true, true, "all", 512000.0},
                        {"none", false, "none", 1536000.0},
                        {"all", true, "all", 512000.0},
                        {"model", true, "model", 1536000.0},
                        {"loss", true, "loss", 512000.0}};
  for (const Case& c : cases) {
    INFO(c.given.dump());
    const test::Answer a = answer(small_json(c.given));
    REQUIRE(a.status == MEMEST_OK);
    CHECK(a.body["training"]["compile"] == c.echoed);
    CHECK(a.body["training"]["compile_components"] == c.name);
    CHECK(a.body["stages"][0]["stack"]["loss_bytes"].get<double>() == c.loss_bytes);
  }
  // At s = 4096 the loss's backward peak (on top of the saved blocks: 2 * 7192 B * 4096 =
  // 59 MB compiled) is the stage's peak, above the optimizer step's (1824000 parameters' bf16
  // weights, fp32 gradients and states, 10 B each: 18 MB), so "model" and "all" differ there
  // by the loss alone: (12 - 4) B/logit * 4096 * 1000 = 32768000.
  const test::Answer model = answer(small_json("model", 4096));
  const test::Answer all = answer(small_json("all", 4096));
  REQUIRE(model.status == MEMEST_OK);
  REQUIRE(all.status == MEMEST_OK);
  CHECK(model.body["peak_allocated_bytes"].get<double>() -
            all.body["peak_allocated_bytes"].get<double>() ==
        32768000.0);
}

TEST_CASE("compile parts: refusals name training.compile") {
  // an unknown name lists the accepted ones
  test::Answer a = answer(small_json("blocks"));
  CHECK(a.status == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(a.body["error"]["field"] == "training.compile");
  CHECK(a.body["error"]["message"].get<std::string>().find(
            "must be one of none, all, model or loss") != std::string::npos);
  // a number is neither a bool nor a name
  a = answer(small_json(2));
  CHECK(a.status == MEMEST_ERR_TYPE);
  CHECK(a.body["error"]["field"] == "training.compile");
  CHECK(a.body["error"]["message"].get<std::string>().find("expected true, false or one of") !=
        std::string::npos);
  // Megatron-LM runs eagerly: every part but none is refused, with its reason
  for (const char* part : {"all", "model", "loss"}) {
    test::json req = small_json(part);
    req["training"]["framework"] = "megatron";
    a = answer(req);
    CHECK(a.status == MEMEST_ERR_INVALID_ARGUMENT);
    CHECK(a.body["error"]["field"] == "training.compile");
    CHECK(a.body["error"]["message"].get<std::string>().find("torch.compile") !=
          std::string::npos);
  }
  test::json req = small_json("none");
  req["training"]["framework"] = "megatron";
  CHECK(answer(req).status == MEMEST_OK);
}

TEST_CASE("compile parts: the typed API refuses a value outside memest_compile") {
  memest_model model;
  model.struct_size = sizeof model;
  REQUIRE(memest_model_from_preset("llama-3.1-8b", &model) == MEMEST_OK);
  memest_gpu gpu;
  gpu.struct_size = sizeof gpu;
  REQUIRE(memest_gpu_from_preset("h100-80gb", &gpu) == MEMEST_OK);
  memest_pretrain_request req;
  memest_pretrain_request_init(&req, sizeof req);
  req.model = &model;
  req.gpu = &gpu;
  req.gpus = 1;
  req.tp = req.pp = req.cp = 1;
  req.framework = MEMEST_FRAMEWORK_PYTORCH;
  for (int32_t bad : {-1, 4}) {
    INFO("compile ", bad);
    req.compile = bad;
    memest_pretrain_result res;
    res.struct_size = sizeof res;
    CHECK(memest_pretrain(&req, &res, nullptr, sizeof(memest_stage), 0) ==
          MEMEST_ERR_INVALID_ARGUMENT);
    CHECK(std::string(memest_last_error_field()) == "training.compile");
  }
  req.compile = MEMEST_COMPILE_MODEL;
  memest_pretrain_result res;
  res.struct_size = sizeof res;
  CHECK(memest_pretrain(&req, &res, nullptr, sizeof(memest_stage), 0) == MEMEST_OK);
}
