// 1.11: the gradient dtype a request leaves out follows the framework (MEMEST_GRAD_BYTES_DERIVE):
// fp32 main gradients under Megatron and DeepSpeed, the parameters' dtype where torch keeps .grad
// (fsdp, fsdp1, pytorch). Every expected value is worked by hand in the comment above it.
#include <doctest/doctest.h>

#include "helpers.hpp"
#include "requests.hpp"

using test::json;
using test::ok;

namespace {

json one_gpu(const char* framework, const char* param_dtype) {
  return {{"mode", "pretrain"},
          {"model", "llama-3.1-8b"},
          {"gpu", "h100-80gb"},
          {"parallel", {{"gpus", 1}, {"tp", 1}, {"pp", 1}, {"zero", 0}}},
          {"training",
           {{"framework", framework}, {"param_dtype", param_dtype}, {"seq_len", 1024},
            {"recompute", "full"}, {"optimizer", "adamw"}}}};
}

double gradients(const json& r) { return r["stages"][0]["gradients_bytes"].get<double>(); }

}  // namespace

TEST_CASE("grad_dtype left out: the framework's gradient dtype") {
  // Llama-3.1-8B, 8030261248 parameters on one GPU. Plain PyTorch in bf16 (pure bf16, as torchtune
  // trains): .grad in bf16, 2 x 8030261248 = 16060522496 bytes (4 bytes each until 1.10).
  const json bf16 = ok(one_gpu("pytorch", "bf16"));
  CHECK(bf16["training"]["grad_bytes"] == 2.0);
  CHECK(gradients(bf16) == 16060522496.0);
  // fp32 parameters under autocast: fp32 .grad, 4 x 8030261248
  const json fp32 = ok(one_gpu("pytorch", "fp32"));
  CHECK(fp32["training"]["grad_bytes"] == 4.0);
  CHECK(gradients(fp32) == 32121044992.0);
  // Megatron (fp32 main_grad buffers) and DeepSpeed keep fp32 gradients beside bf16 weights
  json megatron = one_gpu("megatron", "bf16");
  megatron["parallel"]["zero"] = 1;
  CHECK(ok(megatron)["training"]["grad_bytes"] == 4.0);
  CHECK(ok(one_gpu("deepspeed", "bf16"))["training"]["grad_bytes"] == 4.0);
  // FSDP2 / FSDP1 on one GPU: the sharded gradient is the sharded parameter's dtype
  CHECK(ok(one_gpu("fsdp", "bf16"))["training"]["grad_bytes"] == 2.0);
  CHECK(ok(one_gpu("fsdp1", "bf16"))["training"]["grad_bytes"] == 2.0);
  // a given grad_dtype wins
  json given = one_gpu("pytorch", "bf16");
  given["training"]["grad_dtype"] = "fp32";
  CHECK(gradients(ok(given)) == 32121044992.0);
  // the model-states mode keeps the ZeRO paper's fp32 gradients
  const json states = ok({{"mode", "model_states"}, {"model", "llama-3.1-8b"}, {"parallel", {{"gpus", 1}}},
                          {"training", {{"param_dtype", "bf16"}}}});
  CHECK(states["gradients_bytes"].get<double>() == 32121044992.0);
}

TEST_CASE("MEMEST_GRAD_BYTES_DERIVE through the typed API: as the request's default, _init keeps 4") {
  memest_test::Pretrain p("llama-3.1-8b", "h100-80gb");
  CHECK(p.r.grad_bytes == 4.0);  // a 1.0 caller's default
  p.r.framework = MEMEST_FRAMEWORK_PYTORCH;
  p.r.gpus = 1, p.r.tp = 1, p.r.pp = 1, p.r.zero = 0, p.r.seq_len = 1024;
  p.r.recompute = MEMEST_RECOMPUTE_FULL;
  p.r.optimizer = MEMEST_OPTIMIZER_ADAMW;
  p.r.optimizer_bytes = MEMEST_OPTIMIZER_BYTES_DERIVE;
  p.r.grad_bytes = MEMEST_GRAD_BYTES_DERIVE;
  memest_pretrain_result typed;
  memest_stage stage = memest_test::sized<memest_stage>();
  REQUIRE(p.run(typed, &stage, 1) == MEMEST_OK);
  CHECK(stage.gradients_bytes == 16060522496.0);
  CHECK(typed.peak_bytes == ok(one_gpu("pytorch", "bf16"))["peak_bytes"].get<double>());
}
