// The activation-side mechanisms of activations/stack_activations.hpp against the H100 runs of
// tests/data/measured/h100-stacks.json (calibrate/measure_stacks.py; PyTorch 2.11,
// transformers 5.17, peft 0.21). For each run, what the allocator held above the weights and
// optimizer states at its peak (peak_allocated - allocated_after_first_step: the peak is the
// loss's backward, where gradients are None after zero_grad(set_to_none=True)) is compared
// with the sum of the mechanisms: the blocks' saved tensors (eager, full, op_selective,
// every-N), Hugging Face's cache copies kept by the checkpoint wrapper, the eager head, the
// loss, autocast's weight copies; plus two state-side terms computed here from parameter
// counts (FSDP2's unsharded bf16 parameters, DDP's unexplained extra copy), which are not this
// file's. docs/stack-activations.md has the table and the one run that is off (compile).
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "activations/stack_activations.hpp"
#include "helpers.hpp"
#include "model/model.hpp"

namespace {

struct Prediction {
  double mechanisms = 0;  // this file's functions
  double state_side = 0;  // FSDP2 unsharded parameters, DDP's extra gradient copy
};

Prediction predict(const test::json& c) {
  using namespace memest;
  const auto& s = c["settings"];
  const auto& cf = c["config"];
  memest_model m = default_model();
  m.hidden_size = cf["hidden_size"];
  m.num_hidden_layers = cf["num_hidden_layers"];
  m.num_attention_heads = cf["num_attention_heads"];
  m.num_key_value_heads = cf["num_key_value_heads"];
  m.head_dim = cf.value("head_dim", 0);
  m.intermediate_size = cf["intermediate_size"];
  m.vocab_size = cf["vocab_size"];
  m.gated_mlp = 1;
  if (cf.contains("num_experts")) {  // qwen3_moe: QK-norms per head, every layer sparse
    m.num_experts = cf["num_experts"];
    m.num_experts_per_tok = cf["num_experts_per_tok"];
    m.moe_intermediate_size = cf["moe_intermediate_size"];
    m.moe_layer_step = 1;
    m.qk_norm = 1;
  }
  if (cf.contains("num_local_experts")) {  // mixtral: experts of intermediate_size, no QK-norm
    m.num_experts = cf["num_local_experts"];
    m.num_experts_per_tok = cf["num_experts_per_tok"];
    m.moe_layer_step = 1;
  }
  ActivationLayout x;
  x.seq_len = s["seq_len"];
  x.micro_batch = s["micro_batch"];
  x.sequence_parallel = false;
  const double n = x.seq_len * x.micro_batch;
  const double layers = static_cast<double>(m.num_hidden_layers);
  const double h = static_cast<double>(m.hidden_size);
  const double v = static_cast<double>(m.vocab_size);
  const std::string stack = s["stack"];
  const std::string rc = s["recompute"];

  EagerBlockOptions o;
  o.autocast = s.value("dtype", "") == "fp32amp";
  o.compiled = s.value("compile", false);
  if (stack == "lora") {  // peft with its fp32 adapters (autocast_adapter_dtype)
    const auto& l = c["lora"];
    o.lora = true;
    o.lora_rank = l["rank"];
    o.lora_dropout = l["dropout"].get<double>() > 0;
    o.adapter_bytes = 4;
    const char* names[] = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                           "down_proj"};
    for (unsigned i = 0; i < 7; ++i) {
      for (const auto& name : l["targets"]) {
        if (name == names[i]) o.lora_targets |= 1u << i;
      }
    }
  }
  const double block = eager_block_bytes(m, x, o).total();
  const double input = (o.autocast ? 4 : 2) * n * h;  // what a fully checkpointed block keeps
  double blocks = 0, checkpointed = 0, uncheckpointed = 0;
  if (rc == "none") {
    blocks = layers * block + eager_first_block_delta(m, x, o);
    uncheckpointed = layers;
  } else if (rc == "full") {
    blocks = layers * input;
    checkpointed = layers;
  } else if (rc == "op_selective") {
    blocks = layers * op_selective_layer(m, x).total();
    checkpointed = layers;
  } else if (rc == "every2") {
    blocks = every_nth_checkpointed_bytes(m.num_hidden_layers, 2, input, block);
    checkpointed = std::floor(layers / 2);
    uncheckpointed = layers - checkpointed;
  }
  EagerBlockOptions head = o;
  head.compiled = false;  // the script compiles the decoder layers only
  LossInputs loss;
  loss.tokens = n;
  loss.vocab = v;
  loss.hidden = h;
  const LossKind kind = s["loss"] == "chunked" ? LossKind::Chunked : LossKind::Unfused;

  Prediction p;
  p.mechanisms = blocks + hf_cache_copies_bytes(m, x, checkpointed, o.autocast) +
                 eager_head_bytes(m, x, head) + loss_memory(kind, loss).peak();
  const double kvd = static_cast<double>(m.num_key_value_heads * head_dim(m));
  const double qd = static_cast<double>(m.num_attention_heads * head_dim(m));
  const double linear_per_layer = h * (2 * qd + 2 * kvd) + 3 * h * m.intermediate_size;
  if (o.autocast) {
    p.mechanisms += autocast_weight_copies_bytes(uncheckpointed * linear_per_layer + v * h);
  }
  if (stack == "fsdp") {  // root (tied embedding/head + final norm) and the last block stay
    const double block_params = linear_per_layer + 2 * h;
    const double root_params = v * h + h;
    p.state_side = 2 * (root_params + (s.value("reshard", false) ? 1.0 : layers) * block_params);
  }
  if (stack == "ddp" && !s.value("bucket_view", false)) {
    // Not the buckets: those are in allocated_after_first_step already (and in the library's
    // framework buffers). Without bucket views the runs after the first hold one more fp32
    // gradient-sized tensor at the loss than with them (the first step's peaks are equal). It
    // is measured, not explained by a mechanism found in reducer.cpp, and the library does
    // not count it: its no-view DDP peak is 10 % low (docs/accuracy.md).
    p.state_side = 4 * static_cast<double>(c["num_parameters"]);
  }
  return p;
}

}  // namespace

TEST_CASE("stack activations against the H100 runs (tests/data/measured/h100-stacks.json)") {
  const auto d = test::load_json("measured/h100-stacks.json");
  int compared = 0;
  for (const auto& c : d["cases"]) {
    if (c["status"] != "ran") continue;
    const std::string id = c["id"];
    const double measured = static_cast<double>(c["peak_allocated_bytes"]) -
                            static_cast<double>(c["allocated_after_first_step_bytes"]);
    const Prediction p = predict(c);
    const double predicted = p.mechanisms + p.state_side;
    INFO(id << ": measured " << measured / test::kGiB << " GiB, predicted "
            << predicted / test::kGiB << " GiB");
    if (c["settings"].value("compile", false)) {
      // Open: the partitioner's rules give -4.0 GiB (norms and SwiGLU), the run -2.0 GiB.
      WARN(std::fabs(measured - predicted) <= 0.01 * measured);
      continue;
    }
    CHECK(std::fabs(measured - predicted) <= 0.01 * measured);
    ++compared;
  }
  CHECK(compared == 30);
}
