// The memory mechanisms of 1.10: flash-attn's cross-entropy (llm-foundry's default loss) and
// fp8 parameters under Transformer Engine (Megatron-LM --fp8-param-gather). Every expected value
// is worked by hand in the comment above it.
#include <doctest/doctest.h>

#include "activations/stack_activations.hpp"
#include "helpers.hpp"

using namespace memest;
using test::ok;
using test::refused_field;

TEST_CASE("loss memory: flash-attn's CrossEntropyLoss saves the 16-bit logits, writes their gradient") {
  // N = 8192 tokens, V = 128256: N V = 1050673152 bf16 logits. Forward: the logits (2 bytes) and
  // the fp32 per-row loss and logsumexp (4 N = 32768): 2101379072. Backward: the saved logits
  // and their new gradient (4 bytes) + 32768 = 4202725376.
  LossInputs in;
  in.tokens = 8192;
  in.vocab = 128256;
  in.hidden = 4096;
  const LossMemory r = loss_memory(LossKind::FlashAttn, in);
  CHECK(r.forward == 2101379072.0);
  CHECK(r.backward == 4202725376.0);
  // against F.cross_entropy on the upcast logits: 12 bytes per logit in backward
  CHECK(loss_memory(LossKind::Unfused, in).backward == 12 * 1050673152.0);
}

TEST_CASE("flash_attn loss: an llm-foundry MPT-7B run keeps 4 bytes per logit") {
  // llm-foundry's MPT-7B table row: FSDP, fp32 sharded parameters under bf16 autocast, 16 x 4096
  // tokens per micro-batch, vocab 50368: N V = 65536 x 50368 = 3300917248 bf16 logits;
  // backward 4 N V + 4 N = 13203668992 + 262144 = 13203931136.
  test::json req = {
      {"mode", "pretrain"},
      {"model",
       {{"model_type", "gpt_neox"}, {"hidden_size", 4096}, {"num_hidden_layers", 32},
        {"num_attention_heads", 32}, {"intermediate_size", 16384}, {"vocab_size", 50368},
        {"max_position_embeddings", 65536}, {"hidden_act", "gelu"}, {"attention_bias", false},
        {"mlp_bias", false}, {"tie_word_embeddings", true}, {"use_parallel_residual", false}}},
      {"gpu", "a100-80gb"},
      {"parallel", {{"gpus", 8}, {"tp", 1}, {"pp", 1}, {"zero", 3}, {"sp", false}}},
      {"training",
       {{"framework", "fsdp"}, {"seq_len", 4096}, {"micro_batch", 16}, {"global_batch", 256},
        {"recompute", "full"}, {"param_dtype", "fp32"}, {"grad_dtype", "fp32"},
        {"optimizer", "adamw"}, {"loss", "flash_attn"}}}};
  const test::json r = ok(req);
  CHECK(r["training"]["loss"] == "flash_attn");
  CHECK(r["stages"][0]["stack"]["loss_bytes"].get<double>() == 13203931136.0);
  // Megatron has its own vocab-parallel loss
  req["training"]["framework"] = "megatron";
  req["training"]["param_dtype"] = "bf16";
  req["parallel"]["zero"] = 1;
  CHECK(refused_field(req) == "training.loss");
}

TEST_CASE("fp8 parameters: the Float8Tensor is the row-wise copy, the rest stays bf16") {
  // Llama-3.1-8B under Megatron, fp8, tp = pp = 1: 8030261248 parameters; the fp8 copies cover
  // the blocks' linears, 32 x 218103808 = 6979321856, and (as for every fp8 run here) the output
  // layer, 525336576: 7504658432.
  // bf16 parameters: 2 x 8030261248 + two fp8 copies 2 x 7504658432 = 31069839360.
  // fp8 parameters (--fp8-param-gather): 1 x 8030261248 + the column-wise copy 7504658432 + one
  // byte more for what stays bf16: 32 x 8192 norm weights + the embedding and the output layer
  // 2 x 525336576 + the final norm 4096 = 1050939392: 16585859072.
  test::json req = {{"mode", "pretrain"},
                    {"model", "llama-3.1-8b"},
                    {"gpu", "h100-80gb"},
                    {"parallel", {{"gpus", 8}, {"tp", 1}, {"pp", 1}, {"zero", 1}}},
                    {"training",
                     {{"framework", "megatron"}, {"seq_len", 4096}, {"micro_batch", 1},
                      {"global_batch", 64}, {"fp8", true}, {"param_dtype", "bf16"}}}};
  CHECK(ok(req)["stages"][0]["weights_bytes"].get<double>() == 31069839360.0);
  req["training"]["param_dtype"] = "fp8";
  CHECK(ok(req)["stages"][0]["weights_bytes"].get<double>() == 16585859072.0);
}
