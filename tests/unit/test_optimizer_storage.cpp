// How the optimizer stores what it updates (ABI 1.15): training.master_weights (the master copy
// beside the weights: fp32, a 16-bit copy, the fp32 remainders over bf16 weights, none) and
// training.optimizer_state_dtype (the moments' dtype), the parts of a derived K. The stacks
// behind them: Megatron-Core's precision-aware optimizer (optimizer_config.py main_params_dtype,
// exp_avg_dtype, exp_avg_sq_dtype, store_param_remainders) and Apex's DistributedFusedAdam as
// NeMo sets it up (megatron_base_model.py setup_optimization: store_params /
// store_param_remainders from optim.dtype). Every expected value is worked by hand beside it.
#include <doctest/doctest.h>

#include <string>

#include "helpers.hpp"
#include "plan/stack.hpp"
#include "requests.hpp"

using namespace memest;
using test::json;
using test::ok;
using test::refused_field;

namespace {

// Llama-3.1-8B (8,030,261,248 parameters, the model card's 8.03B) on 8 GPUs, data-parallel,
// the distributed optimizer (zero 1) sharding K over 8: 1,003,782,656 parameters' worth each.
constexpr double kShard = 8030261248.0 / 8;

json llama_request(json extra_training) {
  json training = {{"framework", "megatron"}, {"seq_len", 2048}, {"micro_batch", 1},
                   {"global_batch", 8}, {"recompute", "none"}};
  for (auto& [k, v] : extra_training.items()) training[k] = v;
  return {{"mode", "pretrain"}, {"model", "llama-3.1-8b"}, {"gpu", "h100-80gb"},
          {"parallel", {{"gpus", 8}, {"tp", 1}, {"pp", 1}, {"zero", 1}}}, {"training", training}};
}

double stage(const json& r, const char* key) { return r["stages"][0][key].get<double>(); }
double master(const json& r) { return r["stages"][0]["stack"]["master_weights_bytes"].get<double>(); }

}  // namespace

TEST_CASE("optimizer storage: K from the master and the moments") {
  const int32_t adam = MEMEST_OPTIMIZER_ADAM, mg = MEMEST_FRAMEWORK_MEGATRON;
  // the default: an fp32 master beside bf16 weights, fp32 moments: 4 + 2 * 4 = 12
  CHECK(derived_optimizer_bytes(adam, mg, 2, MEMEST_MASTER_AUTO, 0) == 12);
  // NeMo's Llama 3.1 recipes (Apex, fp32 states over bf16 weights): remainders 2 + 8 = 10
  CHECK(derived_optimizer_bytes(adam, mg, 2, MEMEST_MASTER_REMAINDER, 0) == 10);
  // NeMo's Nemotron-4 340B recipe (optim.dtype bf16 = the model's: no master): 2 * 2 = 4
  CHECK(derived_optimizer_bytes(adam, mg, 2, MEMEST_MASTER_NONE, 2) == 4);
  // no master and no dtype given: the moments take the weights' dtype, 2 * 2 = 4
  CHECK(derived_optimizer_bytes(adam, mg, 2, MEMEST_MASTER_NONE, 0) == 4);
  // the same recipe in fp8 (fp8_params: store_params in bf16): 2 + 2 * 2 = 6
  CHECK(derived_optimizer_bytes(adam, mg, 1, MEMEST_MASTER_BF16, 2) == 6);
  // Megatron-Core --main-params-dtype fp16, fp32 moments: 2 + 8 = 10
  CHECK(derived_optimizer_bytes(adam, mg, 2, MEMEST_MASTER_FP16, 0) == 10);
  // fp8 moments over remainders (--exp-avg-dtype fp8 --exp-avg-sq-dtype fp8): 2 + 2 = 4
  CHECK(derived_optimizer_bytes(adam, mg, 2, MEMEST_MASTER_REMAINDER, 1) == 4);
  // SGD with momentum, bf16 momentum beside an fp32 master: 4 + 2 = 6
  CHECK(derived_optimizer_bytes(MEMEST_OPTIMIZER_SGD_MOMENTUM, mg, 2, MEMEST_MASTER_FP32, 2) == 6);
  CHECK(master_weight_bytes(MEMEST_MASTER_AUTO, MEMEST_FRAMEWORK_FSDP, 2) == 0);
  CHECK(master_weight_bytes(MEMEST_MASTER_AUTO, MEMEST_FRAMEWORK_DEEPSPEED, 2) == 4);
}

TEST_CASE("optimizer storage: through the request, stage by stage") {
  const json base = ok(llama_request(json::object()));
  CHECK(stage(base, "optimizer_bytes") == 12 * kShard);  // 12,045,391,872
  CHECK(master(base) == 4 * kShard);
  CHECK(base["training"]["master_weights"] == "fp32");
  CHECK(base["training"]["optimizer_state_dtype"] == "fp32");

  const json rem = ok(llama_request({{"master_weights", "remainder"}}));
  CHECK(stage(rem, "optimizer_bytes") == 10 * kShard);  // 10,037,826,560
  CHECK(master(rem) == 2 * kShard);
  CHECK(rem["training"]["master_weights"] == "remainder");
  // the weights, gradients and activations do not move; the peak falls by at least the 2 bytes
  CHECK(stage(rem, "weights_bytes") == stage(base, "weights_bytes"));
  CHECK(stage(rem, "activations_bytes") == stage(base, "activations_bytes"));
  CHECK(base["peak_bytes"].get<double>() - rem["peak_bytes"].get<double>() >= 2 * kShard);

  const json bf16 = ok(llama_request({{"master_weights", "none"}, {"optimizer_state_dtype", "bf16"}}));
  CHECK(stage(bf16, "optimizer_bytes") == 4 * kShard);  // 4,015,130,624
  CHECK(master(bf16) == 0);
  CHECK(bf16["training"]["optimizer_state_dtype"] == "bf16");

  // fp8 weights (--fp8-param-gather) with Apex's bf16 store: a bf16 master and bf16 moments
  const json fp8 = ok(llama_request({{"fp8", true}, {"param_dtype", "fp8"},
                                     {"master_weights", "bf16"},
                                     {"optimizer_state_dtype", "bf16"}}));
  CHECK(stage(fp8, "optimizer_bytes") == 6 * kShard);  // 6,022,695,936
  CHECK(master(fp8) == 2 * kShard);

  // deepspeed keeps masters too: remainders there are 10 bytes as well
  json ds = llama_request({{"master_weights", "remainder"}});
  ds["training"]["framework"] = "deepspeed";
  CHECK(stage(ok(ds), "optimizer_bytes") == 10 * kShard);
}

TEST_CASE("optimizer storage: the typed API equals the request") {
  memest_test::Pretrain p("llama-3.1-8b", "h100-80gb");
  p.r.gpus = 8, p.r.tp = 1, p.r.pp = 1, p.r.zero = 1;
  p.r.seq_len = 2048, p.r.micro_batch = 1, p.r.global_batch = 8;
  p.r.recompute = MEMEST_RECOMPUTE_NONE;
  p.r.grad_bytes = MEMEST_GRAD_BYTES_DERIVE;
  p.r.optimizer_bytes = MEMEST_OPTIMIZER_BYTES_DERIVE;
  p.r.master_weights = MEMEST_MASTER_NONE;
  p.r.optimizer_state_bytes = 2;
  memest_pretrain_result typed;
  REQUIRE(p.run(typed) == MEMEST_OK);
  const json r = ok(llama_request({{"master_weights", "none"}, {"optimizer_state_dtype", "bf16"}}));
  CHECK(typed.peak_bytes == r["peak_bytes"].get<double>());
  // a K given whole beside them is refused by field
  p.r.optimizer_bytes = 12;
  CHECK(p.run(typed) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(std::string(memest_last_error_field()) == "training.master_weights");
  p.r.optimizer_bytes = MEMEST_OPTIMIZER_BYTES_DERIVE;
  p.r.master_weights = MEMEST_MASTER_COUNT;
  CHECK(p.run(typed) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(std::string(memest_last_error_field()) == "training.master_weights");
  p.r.master_weights = MEMEST_MASTER_AUTO;
  p.r.optimizer_state_bytes = 3;
  CHECK(p.run(typed) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(std::string(memest_last_error_field()) == "training.optimizer_state_dtype");
}

TEST_CASE("optimizer storage: refused by field where it means nothing") {
  json whole = llama_request({{"master_weights", "remainder"}, {"optimizer_bytes", 12}});
  CHECK(refused_field(whole) == "training.master_weights");
  json state_whole = llama_request({{"optimizer_state_dtype", "bf16"}, {"optimizer_bytes", 12}});
  CHECK(refused_field(state_whole) == "training.optimizer_state_dtype");
  json fsdp = llama_request({{"master_weights", "fp32"}});
  fsdp["training"]["framework"] = "fsdp";
  CHECK(refused_field(fsdp) == "training.master_weights");
  CHECK(refused_field(llama_request({{"master_weights", "fp32"}, {"param_dtype", "fp32"}})) ==
        "training.master_weights");
  CHECK(refused_field(llama_request({{"master_weights", "remainder"}, {"fp8", true},
                                     {"param_dtype", "fp8"}})) == "training.master_weights");
  CHECK(refused_field(llama_request({{"master_weights", "none"}, {"fp8", true},
                                     {"param_dtype", "fp8"}})) == "training.master_weights");
  CHECK(refused_field(llama_request({{"optimizer_state_dtype", "bf16"},
                                     {"optimizer", "adamw_8bit"}})) ==
        "training.optimizer_state_dtype");
  CHECK(refused_field(llama_request({{"optimizer_state_dtype", "bf16"}, {"optimizer", "sgd"}})) ==
        "training.optimizer_state_dtype");
  CHECK(refused_field(llama_request({{"master_weights", "fp64"}})) == "training.master_weights");
  CHECK(refused_field(llama_request({{"optimizer_state_dtype", "int4"}})) ==
        "training.optimizer_state_dtype");
  CHECK(refused_field(llama_request({{"master_weights", 1}})) == "training.master_weights");
  json lora = llama_request({{"master_weights", "remainder"},
                             {"adapter", {{"type", "lora"}}}});
  lora["training"]["framework"] = "fsdp";
  lora["parallel"]["zero"] = 3;
  CHECK(refused_field(lora) == "training.master_weights");
}
