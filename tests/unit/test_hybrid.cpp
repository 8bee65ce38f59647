// Hybrid models (model/hybrid.hpp): Mamba-2 and gated DeltaNet layers beside attention,
// Nemotron-H's one-block layers, Falcon-H1's parallel attention + Mamba-2. Every expected
// value is derived by hand in the comments, from the tensors the cited modules create and
// the tensors the cited kernels save.
#include <doctest/doctest.h>

#include <string>

#include "helpers.hpp"
#include "requests.hpp"
#include "activations/mixer_activations.hpp"
#include "model/adapter.hpp"
#include "model/flops.hpp"
#include "model/hybrid.hpp"
#include "model/tensors.hpp"
#include "plan/plan.hpp"

namespace {

using test::json;
using test::ok;
using test::refused_field;

memest_model from_config(const json& config) {
  memest_model m = memest_test::sized<memest_model>();
  const std::string text = config.dump();
  const memest_status st = memest_model_from_config_json(text.c_str(), &m);
  INFO(memest_last_error());
  REQUIRE(st == MEMEST_OK);
  return m;
}

double total_of(const memest_model& m) {
  memest_param_count c = memest_test::sized<memest_param_count>();
  REQUIRE(memest_model_parameter_count(&m, &c) == MEMEST_OK);
  return c.total;
}

// A tiny Nemotron-H (configuration_nemotron_h.py names): h = 64, blocks "M-*-", attention
// 4 heads of 16 with 2 KV heads, a relu^2 MLP of 128, Mamba-2 with 8 heads of 16, state 16,
// 2 groups, conv 4, no projection biases, a conv bias; vocab 100, untied.
json tiny_nemotron_h(const std::string& pattern = "M-*-") {
  return {{"model_type", "nemotron_h"}, {"hidden_size", 64},
          {"num_hidden_layers", static_cast<int>(pattern.size())},
          {"hybrid_override_pattern", pattern}, {"num_attention_heads", 4},
          {"num_key_value_heads", 2}, {"head_dim", 16}, {"intermediate_size", 128},
          {"vocab_size", 100}, {"mamba_num_heads", 8}, {"mamba_head_dim", 16},
          {"ssm_state_size", 16}, {"n_groups", 2}, {"conv_kernel", 4}, {"use_bias", false},
          {"use_conv_bias", true}, {"mlp_bias", false}, {"attention_bias", false},
          {"tie_word_embeddings", false}, {"time_step_limit", {0.0, 1e300}}};
}

// A tiny Qwen3-Next: h = 64, 4 layers (full_attention_interval 4: layer 3 attention),
// attention 4 heads of 16, 2 KV heads, q_proj twice the query width (the output gate);
// DeltaNet 2 key heads of 16, 4 value heads of 16, conv 4; 4 experts of 32, top 2, a gated
// shared expert of 32.
json tiny_qwen3_next() {
  return {{"model_type", "qwen3_next"}, {"hidden_size", 64}, {"num_hidden_layers", 4},
          {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"head_dim", 16},
          {"intermediate_size", 96}, {"vocab_size", 100}, {"num_experts", 4},
          {"num_experts_per_tok", 2}, {"moe_intermediate_size", 32},
          {"shared_expert_intermediate_size", 32}, {"decoder_sparse_step", 1},
          {"mlp_only_layers", json::array()}, {"full_attention_interval", 4},
          {"linear_num_key_heads", 2}, {"linear_num_value_heads", 4},
          {"linear_key_head_dim", 16}, {"linear_value_head_dim", 16},
          {"linear_conv_kernel_dim", 4}, {"tie_word_embeddings", false}};
}

std::string message(const test::Answer& a) { return a.body["error"]["message"].get<std::string>(); }

json pretrain(const json& model, const json& parallel, const json& training) {
  json t = {{"seq_len", 256}, {"micro_batch", 1}};
  for (const auto& [k, v] : training.items()) t[k] = v;
  return {{"mode", "pretrain"}, {"model", model}, {"gpu", "h100-80gb"}, {"parallel", parallel},
          {"training", t}};
}

}  // namespace

TEST_CASE("Nemotron-H: one block per pattern character, each a norm and one mixer or MLP") {
  const memest_model m = from_config(tiny_nemotron_h());
  CHECK(std::string(m.mixer_pattern) == "M-A-");
  CHECK(std::string(m.mlp_pattern) == "-D-D");
  // 'M' (NemotronHMamba2Mixer): d_inner = 8 * 16 = 128; in_proj 64 x (2*128 + 2*2*16 + 8) =
  // 64 x 328 = 20992; conv1d over 128 + 64 = 192 channels x 4 = 768 + bias 192; dt_bias, A_log,
  // D 3 x 8 = 24; gated norm 128; out_proj 128 x 64 = 8192: 30296, + the block norm 64 = 30360.
  CHECK(memest::mamba_params(m).total() == 30296);
  // '-' (NemotronHMLP): up 64 x 128 + down 128 x 64 = 16384, + norm 64 = 16448.
  // '*': q 64 x 64 + k, v 64 x 32 each + o 64 x 64 = 12288, + norm 64 = 12352.
  // Layers 30360 + 16448 + 12352 + 16448 = 75608; embedding 6400, lm_head 6400, norm_f 64.
  CHECK(total_of(m) == 88472);
  // every block is active (no experts)
  const test::Answer a = test::request(json{{"mode", "model_states"}, {"gpu", "h100-80gb"},
                                            {"model", tiny_nemotron_h()}});
  REQUIRE(a.status == MEMEST_OK);
  CHECK(a.body["model"]["num_parameters"] == 88472);
  CHECK(a.body["model"]["active_parameters"] == 88472);
  CHECK(a.body["model"]["mixer_pattern"] == "M-A-");
}

TEST_CASE("Nemotron-H with experts: 'E' blocks are MoE-only layers") {
  json c = tiny_nemotron_h("ME*E");
  c["n_routed_experts"] = 4;
  c["num_experts_per_tok"] = 2;
  c["moe_intermediate_size"] = 32;
  c["moe_shared_expert_intermediate_size"] = 48;
  c["n_shared_experts"] = 1;
  const memest_model m = from_config(c);
  CHECK(std::string(m.mlp_pattern) == "-E-E");
  // 'E' (NemotronHMOE): 4 experts of up 64x32 + down 32x64 = 4096 each = 16384; a shared
  // expert 64x48 + 48x64 = 6144; router 64 x 4 = 256; norm 64: 22848 (active: 2 experts,
  // 8192 + 6144 + 256 + 64 = 14656). 'M' 30360, '*' 12352.
  // total 30360 + 22848 + 12352 + 22848 + 12864 = 101272; active 30360 + 14656 + 12352 +
  // 14656 + 12864 = 84888.
  memest_param_count cnt = memest_test::sized<memest_param_count>();
  REQUIRE(memest_model_parameter_count(&m, &cnt) == MEMEST_OK);
  CHECK(cnt.total == 101272);
  CHECK(cnt.active == 84888);
  CHECK(cnt.moe_layers == 2);
}

TEST_CASE("Qwen3-Next: gated DeltaNet layers and gated attention every 4th layer") {
  const json c = tiny_qwen3_next();
  const memest_model m = from_config(c);
  CHECK(std::string(m.mixer_pattern) == "GGGA");
  CHECK(m.attention_output_gate == 1);
  // Qwen3NextGatedDeltaNet: keys 32, values 64; in_proj_qkvz 64 x (64 + 128) = 12288,
  // in_proj_ba 64 x 8 = 512, conv1d (64 + 64) x 4 = 512, dt_bias + A_log 8, norm 16,
  // out_proj 64 x 64 = 4096: 17432.
  CHECK(memest::deltanet_params(m).total() == 17432);
  // Qwen3NextAttention: q_proj 64 x 128 = 8192, k, v 64 x 32 = 2048 each, o 64 x 64 = 4096,
  // q_norm, k_norm 16 each: 16416.
  CHECK(memest::attention_params(m).total() == 16416);
  // MoE MLP: 4 experts x 3 x 64 x 32 = 24576, shared 3 x 64 x 32 = 6144, its gate 64, router
  // 256: 31040; two norms 128. DeltaNet layer 17432 + 31040 + 128 = 48600, attention layer
  // 16416 + 31040 + 128 = 47584. 3 x 48600 + 47584 + embedding 6400 + head 6400 + norm 64.
  CHECK(total_of(m) == 3 * 48600 + 47584 + 12864);
}

TEST_CASE("Falcon-H1, Bamba, GraniteMoeHybrid and Mamba2 read their layer patterns") {
  SUBCASE("falcon_h1: every layer attention beside Mamba-2") {
    const memest_model m = from_config(
        {{"model_type", "falcon_h1"}, {"hidden_size", 64}, {"num_hidden_layers", 3},
         {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"head_dim", 16},
         {"intermediate_size", 96}, {"vocab_size", 100}, {"mamba_d_ssm", 128},
         {"mamba_n_heads", 8}, {"mamba_d_head", 16}, {"mamba_d_state", 16},
         {"mamba_n_groups", 1}, {"mamba_d_conv", 4}, {"mamba_expand", 2},
         {"mamba_conv_bias", true}, {"mamba_proj_bias", false}, {"mamba_rms_norm", false},
         {"tie_word_embeddings", false}});
    CHECK(std::string(m.mixer_pattern) == "PPP");
    CHECK(m.mamba_norm == 0);
    // Mamba-2 mixer without its norm: in_proj 64 x (256 + 32 + 8) = 18944, conv (128 + 32) x 4
    // + 160 = 800, 24, out_proj 8192: 27960. Attention 12288, MLP 3 x 64 x 96 = 18432, norms 128:
    // a layer 58808; 3 layers + 12864.
    CHECK(memest::mamba_params(m).total() == 27960);
    CHECK(total_of(m) == 3 * 58808 + 12864);
  }
  SUBCASE("bamba: attn_layer_indices") {
    const memest_model m = from_config(
        {{"model_type", "bamba"}, {"hidden_size", 64}, {"num_hidden_layers", 4},
         {"attn_layer_indices", {1}}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
         {"intermediate_size", 96}, {"vocab_size", 100}, {"mamba_n_heads", 8},
         {"mamba_d_head", "auto"}, {"mamba_d_state", 16}, {"mamba_n_groups", 1},
         {"mamba_d_conv", 4}, {"mamba_expand", 2}, {"tie_word_embeddings", false}});
    CHECK(std::string(m.mixer_pattern) == "MAMM");
    CHECK(m.mamba_head_dim == 16);  // "auto": 2 x 64 / 8
  }
  SUBCASE("granitemoehybrid without experts: the shared MLP is the dense MLP") {
    const memest_model m = from_config(
        {{"model_type", "granitemoehybrid"}, {"hidden_size", 64}, {"num_hidden_layers", 2},
         {"layer_types", {"mamba", "attention"}}, {"num_attention_heads", 4},
         {"num_key_value_heads", 2}, {"intermediate_size", 512}, {"shared_intermediate_size", 96},
         {"num_local_experts", 0}, {"vocab_size", 100}, {"mamba_n_heads", 8},
         {"mamba_d_head", 16}, {"mamba_d_state", 16}, {"mamba_n_groups", 1},
         {"mamba_d_conv", 4}, {"mamba_expand", 2}, {"tie_word_embeddings", true}});
    CHECK(std::string(m.mixer_pattern) == "MA");
    CHECK(m.intermediate_size == 96);
    CHECK(m.num_experts == 0);
  }
  SUBCASE("mamba2: Mamba-2 alone, no MLP") {
    const memest_model m = from_config(
        {{"model_type", "mamba2"}, {"hidden_size", 64}, {"num_hidden_layers", 2},
         {"num_heads", 8}, {"head_dim", 16}, {"state_size", 16}, {"n_groups", 1},
         {"conv_kernel", 4}, {"expand", 2}, {"use_bias", false}, {"use_conv_bias", true},
         {"vocab_size", 100}, {"tie_word_embeddings", false}});
    CHECK(std::string(m.mixer_pattern) == "MM");
    CHECK(std::string(m.mlp_pattern) == "--");
    // 2 x (mixer 27960 + norm 128 + 64 norm) ... per layer: mixer with its norm 128 = 28088,
    // one block norm 64: 28152. 2 layers + 12864.
    CHECK(total_of(m) == 2 * 28152 + 12864);
  }
}

TEST_CASE("Hybrid patterns and mixer fields are checked by name") {
  json base = tiny_nemotron_h();
  auto refused = [&](json c, const std::string& field, const std::string& words) {
    memest_model m = memest_test::sized<memest_model>();
    CHECK(memest_model_from_config_json(c.dump().c_str(), &m) != MEMEST_OK);
    CHECK(std::string(memest_last_error_field()) == field);
    CHECK(std::string(memest_last_error()).find(words) != std::string::npos);
  };
  json c = base;
  c["hybrid_override_pattern"] = "M-x-";
  refused(c, "model.hybrid_override_pattern", "layer 2 is not one of");
  c = base;
  c["num_hidden_layers"] = 5;
  refused(c, "model.mixer_pattern", "has 4 characters but num_hidden_layers is 5");
  c = base;
  c.erase("ssm_state_size");
  refused(c, "model.ssm_state_size", "missing");
  c = base;
  c["n_groups"] = 3;
  refused(c, "model.mamba_groups", "does not divide mamba_num_heads=8");
  // memest's own names, in a plain model object
  const json plain = {{"hidden_size", 64}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
                      {"intermediate_size", 128}, {"vocab_size", 100}, {"mixer_pattern", "AG"}};
  const json req = {{"mode", "model_states"}, {"gpu", "h100-80gb"}, {"model", plain}};
  CHECK(refused_field(req) == "model.linear_key_heads");
  json mamba_without = plain;
  mamba_without["mixer_pattern"] = "AA";
  mamba_without["mamba_num_heads"] = 8;
  CHECK(refused_field({{"mode", "model_states"}, {"gpu", "h100-80gb"}, {"model", mamba_without}}) ==
        "model.mamba_num_heads");
}

TEST_CASE("A hybrid model given back as memest's own model object counts the same") {
  const json first = ok({{"mode", "model_states"}, {"gpu", "h100-80gb"}, {"model", tiny_nemotron_h()}});
  json echoed = first["model"];
  const json again = ok({{"mode", "model_states"}, {"gpu", "h100-80gb"}, {"model", echoed}});
  CHECK(again["model"]["num_parameters"] == 88472);
  CHECK(again["model"]["mlp_pattern"] == "-D-D");
  // and the typed C API from the config
  const memest_model m = from_config(tiny_nemotron_h());
  CHECK(m.mamba_num_heads == 8);
  CHECK(m.mamba_conv_bias == 1);
  CHECK(m.mamba_proj_bias == 0);
}

TEST_CASE("Mamba-2 and DeltaNet activations: what their kernels save, per token") {
  const memest_model m = from_config(tiny_nemotron_h());
  memest::ActivationLayout x;
  x.seq_len = 256;
  x.micro_batch = 2;
  x.tp = 2;
  // Hugging Face (norm and out_proj inside the fused function): zxbcdt 2 x 328 = 656, scan
  // output 2 x 128 = 256, rstd 4 x 2 = 8: 920 bytes per token, 512 tokens, / tp 2 = 235520.
  CHECK(memest::mamba_saved_bytes(m, x, false) == 235520);
  // Megatron (separate gated norm and out_proj: their inputs, 2 x 2 x 128 more): 1432 per
  // token, 366592.
  CHECK(memest::mamba_saved_bytes(m, x, true) == 366592);
  // full recomputation: every block keeps its input, whatever its kind
  x.recompute = MEMEST_RECOMPUTE_FULL;
  memest::LayerMix mix;
  mix.mamba = 1;
  CHECK(memest::hybrid_activation_delta(m, x, mix, {}, true) == 0);
  // gated DeltaNet (the tiny Qwen3-Next of the test above: keys 32, 4 value heads of 16 =
  // values 64, key_head_dim 16): 4 x 32 + 4 x 64 + 10 x 64 + 26 x 4 + 128 x 4 = 128 + 256 +
  // 640 + 104 + 512 = 1640 bytes per token
  memest_model g = m;
  g.linear_key_heads = 2, g.linear_value_heads = 4, g.linear_key_head_dim = 16;
  g.linear_value_head_dim = 16, g.linear_conv_kernel = 4;
  x.recompute = MEMEST_RECOMPUTE_NONE;
  x.tp = 1;
  CHECK(memest::deltanet_saved_bytes(g, x) == 1640.0 * 512);
}

TEST_CASE("Pretraining a hybrid under Megatron: the stage's Mamba layers instead of attention") {
  // The same tiny Nemotron-H against an all-attention twin: the activations differ by the
  // Mamba-2 block's saved bytes less the attention core, per Mamba layer.
  const json hybrid = tiny_nemotron_h("MMMM");
  json twin = tiny_nemotron_h("****");
  const json parallel = {{"gpus", 1}, {"tp", 1}, {"pp", 1}};
  const json training = {{"recompute", "none"}, {"global_batch", 1}};
  const json a = ok(pretrain(hybrid, parallel, training));
  const json b = ok(pretrain(twin, parallel, training));
  const memest_model mh = from_config(hybrid);
  memest::ActivationLayout x;
  x.seq_len = 256;
  x.micro_batch = 1;
  x.sequence_parallel = false;
  // the 4D paper's Llama coefficients, attention terms: 2q + 4kv + 2q in sbh units with
  // q = 64/64 = 1 and kv = 32/64 = 0.5: 6 sbh = 6 x 256 x 64 = 98304 bytes per layer.
  const double attention = 6.0 * 256 * 64;
  const double mamba = memest::mamba_saved_bytes(mh, x, true);  // 1432 x 256 = 366592
  CHECK(mamba == 366592);
  // Both blocks have no MLP ('M' and '*' blocks): 4 layers each differ by mamba - attention.
  CHECK(a["stages"][0]["activations_bytes"].get<double>() -
            b["stages"][0]["activations_bytes"].get<double>() ==
        doctest::Approx(4 * (mamba - attention)));
  // parameters: 4 x (30360 - 12352) more
  CHECK(a["model"]["num_parameters"].get<double>() - b["model"]["num_parameters"].get<double>() ==
        4 * (30360 - 12352));
  // the step time has the mixers' parts and adds up
  const json& t = a["throughput"];
  REQUIRE(t.is_object());
  CHECK(t["step_seconds"].get<double>() > 0);
}

TEST_CASE("Hybrid layouts: pipeline stages count their own layer kinds — tp and cp checked") {
  // "MMMM****" over pp 2: stage 0 all Mamba, stage 1 all attention; stage 0 holds more
  // parameters by 4 x (30360 - 12352) (embedding on stage 0, head on stage 1 aside).
  const json c = tiny_nemotron_h("MMMM****");
  const json r = ok(pretrain(c, {{"gpus", 2}, {"tp", 1}, {"pp", 2}},
                             {{"global_batch", 4}, {"recompute", "none"}}));
  const double p0 = r["stages"][0]["parameters"].get<double>();
  const double p1 = r["stages"][1]["parameters"].get<double>();
  // stage 0: 4 x 30360 + embedding 6400 = 127840; stage 1: 4 x 12352 + head 6400 + norm 64
  CHECK(p0 == 4 * 30360 + 6400);
  CHECK(p1 == 4 * 12352 + 6400 + 64);
  // tp must divide the Mamba heads (8) and groups (2)
  CHECK(refused_field(pretrain(c, {{"gpus", 4}, {"tp", 4}}, {})) == "parallel.tp");
  // context parallelism over a scan: Megatron-Core's all-to-all head split only (below)
  CHECK(refused_field(pretrain(c, {{"gpus", 2}, {"cp", 2}}, {{"framework", "fsdp"}})) ==
        "parallel.cp");
}

TEST_CASE("Hybrid model FLOPs: the scans instead of the attention scores") {
  const memest_model m = from_config(tiny_nemotron_h("MM**"));
  const memest::ModelFlops f = memest::model_flops(m);
  // two of four layers attention: score width 64 x 2/4 = 32
  CHECK(f.score_width == 32);
  // Mamba-2 scan per token and layer: C B^T 2 x 256 x 16 x 2 groups = 16384, times X
  // 2 x 256 x 128 = 65536, states 4 x 16 x 128 = 8192: 90112; over 2 of 4 layers: 45056 per
  // layer on average
  CHECK(memest::mamba_scan_flops(m) == 90112);
  CHECK(f.scan_flops == 45056);
}

TEST_CASE("Searching a hybrid: each ranked layout's step and peak are its single estimate's") {
  // The search caches block times per shape and skips layouts by a bound on their TFLOP/s;
  // both must count the hybrid layers as the single estimate does.
  const json model = tiny_nemotron_h("MMM-***-");
  const json search = ok({{"mode", "search"}, {"model", model}, {"gpu", "h100-80gb"},
                          {"parallel", {{"gpus", 8}}},
                          {"training", {{"seq_len", 256}, {"global_batch", 16}}},
                          {"search", {{"top", 5}}}});
  REQUIRE(search["results"].size() == 5);
  for (const json& e : search["results"]) {
    const json& l = e["layout"];
    CAPTURE(l.dump());
    json parallel = {{"gpus", 8}, {"tp", l["tp"]}, {"cp", l["cp"]}, {"pp", l["pp"]},
                     {"vpp", l["vpp"]}, {"zero", l["zero"]}};
    if (l["pp"].get<int>() > 1) {
      parallel["first_stage_layers"] = l["first_stage_layers"];
      parallel["last_stage_layers"] = l["last_stage_layers"];
    }
    const json single = ok(pretrain(model, parallel,
                                    {{"global_batch", 16}, {"micro_batch", l["micro_batch"]},
                                     {"recompute", l["recompute"]}}));
    CHECK(single["peak_bytes"].get<double>() == doctest::Approx(e["peak_bytes"].get<double>()));
    CHECK(single["throughput"]["step_seconds"].get<double>() ==
          doctest::Approx(e["step_seconds"].get<double>()));
  }
}

TEST_CASE("Hybrids outside Megatron: what the eager blocks model, and what they refuse") {
  const json c = tiny_nemotron_h("M-*-");
  const json parallel = {{"gpus", 2}, {"zero", 3}};
  // FSDP with full recomputation: every block keeps its input, whatever its kind, so the
  // hybrid and its all-attention twin keep the same activations.
  const json a = ok(pretrain(c, parallel, {{"framework", "fsdp"}, {"recompute", "full"}, {"global_batch", 4}}));
  const json b = ok(pretrain(tiny_nemotron_h("*-*-"), parallel,
                             {{"framework", "fsdp"}, {"recompute", "full"}, {"global_batch", 4}}));
  CHECK(a["stages"][0]["activations_bytes"] == b["stages"][0]["activations_bytes"]);
  // without recomputation the Mamba block saves what its kernel keeps instead of the attention's
  const json a2 = ok(pretrain(c, parallel, {{"framework", "fsdp"}, {"recompute", "none"}, {"global_batch", 4}}));
  const json b2 = ok(pretrain(tiny_nemotron_h("*-*-"), parallel,
                              {{"framework", "fsdp"}, {"recompute", "none"}, {"global_batch", 4}}));
  CHECK(a2["stages"][0]["activations_bytes"] != b2["stages"][0]["activations_bytes"]);
  CHECK(refused_field(pretrain(c, parallel, {{"framework", "fsdp"}, {"recompute", "op_selective"}})) ==
        "training.recompute");
  CHECK(refused_field(pretrain(c, parallel, {{"framework", "fsdp"}, {"recompute", "full"},
                                             {"recompute_every", 2}})) == "training.recompute_every");
}

TEST_CASE("Fine-tuning a hybrid (LLMem): the Mamba layer's saved tensors instead of the attention's") {
  // cdp on one GPU, batch 2 x 256 tokens, no checkpointing, FlashAttention, pages of 1 byte.
  auto finetune = [](const json& model, const json& method) {
    return json{{"mode", "finetune"}, {"model", model}, {"gpu", "h100-80gb"},
                {"parallel", {{"gpus", 2}}}, {"training", {{"seq_len", 256}}},
                {"finetune", {{"method", method}, {"batch", 2}, {"tp", 0},
                              {"gradient_checkpointing", false}, {"flash_attention", true},
                              {"page_bytes", 1}}}};
  };
  const json hybrid = ok(finetune(tiny_nemotron_h("M-*-"), "cdp"));
  const json twin = ok(finetune(tiny_nemotron_h("*-*-"), "cdp"));
  // Layer 0's Mamba-2 (transformers with mamba_ssm's fused kernel) saves 920 bytes per token
  // (the activations test above); the attention it replaces: Q (2 x 64), K and V (2 x 2 x 32)
  // and its output (2 x 64) = 384 bytes per token, without scores under FlashAttention. The
  // same MLP-only and attention-only layers otherwise: (920 - 384) x 512 tokens = 274432.
  CHECK(hybrid["parts"]["m_out"].get<double>() - twin["parts"]["m_out"].get<double>() == 274432);
  // the Mamba tensors are chunked and their Linear states rounded as LLMem does the others:
  // in_proj 64 x 328 and out_proj 128 x 64 (Linear, 2 x 4 bytes each) replace q, k, v and o
  // (64 x 64, 64 x 32 twice, 64 x 64): (20992 + 8192 - 12288) x 8 = 135168 more bytes of m_os
  // (conv1d's weight over x, B and C, (128 + 2 x 2 x 16) x 4 = 768, is a Linear in memest's
  // list too: 768 x 8 = 6144)
  CHECK(hybrid["parts"]["m_os"].get<double>() - twin["parts"]["m_os"].get<double>() ==
        135168 + 6144);
  // 1D TP and DP+TP split heads and MLP columns, not a scan's heads: refused by method, and
  // auto picks among cdp and zero3
  CHECK(refused_field(finetune(tiny_nemotron_h("M-*-"), "tp")) == "finetune.method");
  json dptp = finetune(tiny_nemotron_h("M-*-"), "dp+tp");
  dptp["parallel"]["gpus"] = 4;
  dptp["finetune"]["tp"] = 2;
  CHECK(refused_field(dptp) == "finetune.method");
  CHECK(ok(finetune(tiny_nemotron_h("*-*-"), "tp"))["ok"] == true);
  const json choice = ok(finetune(tiny_nemotron_h("M-*-"), "auto"));
  const std::string picked = choice["selected"].get<std::string>();
  CHECK((picked == "cdp" || picked == "zero3"));
}

namespace {

// A tiny Jamba (configuration_jamba.py names): h = 64, 4 layers, attention at i % 2 == 1,
// experts at i % 2 == 1 (4 experts of 96, top 2), a dense MLP of 96 elsewhere; Mamba-1 with
// d_inner 2 x 64 = 128, state 8, conv 4 with a bias, dt_rank "auto" = ceil(64 / 16) = 4;
// attention 4 heads of 16 with 2 KV heads; vocab 100, untied.
json tiny_jamba() {
  return {{"model_type", "jamba"}, {"hidden_size", 64}, {"num_hidden_layers", 4},
          {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"intermediate_size", 96},
          {"vocab_size", 100}, {"attn_layer_period", 2}, {"attn_layer_offset", 1},
          {"expert_layer_period", 2}, {"expert_layer_offset", 1}, {"num_experts", 4},
          {"num_experts_per_tok", 2}, {"mamba_expand", 2}, {"mamba_d_state", 8},
          {"mamba_d_conv", 4}, {"mamba_dt_rank", "auto"}, {"mamba_conv_bias", true},
          {"mamba_proj_bias", false}, {"tie_word_embeddings", false}};
}

// A tiny Kimi Linear (configuration_kimi.py names): h = 64, 4 layers, KDA at layers 1, 2 and 4
// (counted from 1), MLA at layer 3 (4 heads, kv_lora_rank 16, no q_lora_rank, nope 8, rope 8,
// v 16); KDA 2 heads of 16, conv 4; DeepSeek-V3 experts (4 of 32, top 2, one shared) after one
// dense layer of 96; vocab 100, untied.
json tiny_kimi_linear(const json& kda_layers = {1, 2, 4}) {
  return {{"model_type", "kimi_linear"}, {"hidden_size", 64}, {"num_hidden_layers", 4},
          {"num_attention_heads", 4}, {"num_key_value_heads", 4}, {"head_dim", 16},
          {"intermediate_size", 96}, {"vocab_size", 100}, {"kv_lora_rank", 16},
          {"q_lora_rank", nullptr}, {"qk_nope_head_dim", 8}, {"qk_rope_head_dim", 8},
          {"v_head_dim", 16}, {"num_experts", 4}, {"num_experts_per_token", 2},
          {"num_shared_experts", 1}, {"moe_intermediate_size", 32},
          {"first_k_dense_replace", 1}, {"moe_layer_freq", 1}, {"tie_word_embeddings", false},
          {"linear_attn_config",
           {{"kda_layers", kda_layers}, {"full_attn_layers", {3}}, {"num_heads", 2},
            {"head_dim", 16}, {"short_conv_kernel_size", 4}}}};
}

}  // namespace

TEST_CASE("Jamba: Mamba-1 layers counted tensor by tensor") {
  const memest_model m = from_config(tiny_jamba());
  CHECK(std::string(m.mixer_pattern) == "SASA");
  CHECK(std::string(m.mlp_pattern) == "DEDE");
  CHECK(m.mamba_dt_rank == 4);
  CHECK(memest::uses_mamba1(m));
  // JambaMambaMixer: in_proj 64 x 256 = 16384; conv1d 128 x 4 + bias 128 = 640; x_proj
  // 128 x (4 + 2 x 8) = 2560; dt_proj 4 x 128 + bias 128 = 640; A_log 128 x 8 = 1024; D 128;
  // dt/B/C norms 4 + 8 + 8 = 20; out_proj 128 x 64 = 8192: 29588
  CHECK(memest::mamba_params(m).total() == 29588);
  // layers: S + dense MLP 29588 + 3 x 64 x 96 + 2 norms = 29588 + 18432 + 128 = 48148;
  // A + MoE: attention 4096 + 2048 + 2048 + 4096 = 12288, 4 experts 73728 + router 256, norms
  // 128 = 86400. Two of each, embedding and head 6400 each, final norm 64: 281960
  memest_param_count c = memest_test::sized<memest_param_count>();
  REQUIRE(memest_model_parameter_count(&m, &c) == MEMEST_OK);
  CHECK(c.total == 281960);
  // active: two experts of four, 2 x 18432 + 256 in the MoE layers: 281960 - 2 x 2 x 18432
  CHECK(c.active == 281960 - 2 * 2 * 18432);
  // the tensors one by one (LLMem's and the adapters' list) add up to the same total
  double listed = 0;
  for (const auto& t : memest::parameter_tensors(m)) listed += t.numel;
  CHECK(listed == 281960);
  const json r = ok({{"mode", "model_states"}, {"model", tiny_jamba()}, {"gpu", "h100-80gb"}});
  CHECK(r["model"]["num_parameters"] == 281960);
  CHECK(r["model"]["mamba_dt_rank"] == 4);
  CHECK(r["model"]["mixer_pattern"] == "SASA");
}

TEST_CASE("Mamba-1 activations: what the selective scan and its neighbours save") {
  const memest_model m = from_config(tiny_jamba());
  memest::ActivationLayout x;
  x.seq_len = 256;
  x.micro_batch = 2;
  // per token: in_proj's x and z 4 x 128, u, delta, out, out_z 2 x 128 each: 12 x 128 = 1536;
  // the dt/B/C norms 8 x (4 + 16) + 3 x 4 = 172; B and C made contiguous 4 x 8 = 32: 1740 x 512
  // tokens = 890880; chunk states: 2 sequences x 1 chunk x 2 x 8 fp32 x 128 channels = 16384
  CHECK(memest::mamba_saved_bytes(m, x, true) == 890880 + 16384);
  CHECK(memest::mamba_saved_bytes(m, x, false) == 890880 + 16384);  // one mixer in every stack
  x.tp = 2;  // channels split over tp
  CHECK(memest::mamba_saved_bytes(m, x, false) == (890880 + 16384) / 2);
  x.tp = 1;
  x.seq_len = 4096;  // two chunks of 2048 per sequence
  CHECK(memest::mamba_saved_bytes(m, x, false) == 1740.0 * 8192 + 2 * 2 * 8 * 8 * 128);
  // scan FLOPs: 9 x 128 channels x 8 states
  CHECK(memest::mamba_scan_flops(m) == 9 * 128 * 8);
}

TEST_CASE("Kimi Linear: Kimi Delta Attention layers beside latent attention") {
  const memest_model m = from_config(tiny_kimi_linear());
  CHECK(std::string(m.mixer_pattern) == "KKAK");
  CHECK(memest::uses_kda(m));
  // KDA: q/k/v 64 x 96 = 6144; short convs 96 x 4 = 384; f_a and g_a 2 x 64 x 16 = 2048; f_b
  // 16 x 32 = 512; g_b 16 x 32 = 512; b_proj 64 x 2 = 128; A_log 2; dt_bias 32; o_norm 16;
  // o_proj 32 x 64 = 2048: 11826
  CHECK(memest::deltanet_params(m).total() == 11826);
  // against the same model with MLA everywhere: MLA q_proj 64 x 4 x 16 = 4096, kv_a 64 x 24 =
  // 1536, its norm 16, kv_b 16 x 4 x 24 = 1536, o_proj 4096: 11280 per layer; three layers
  // differ by 11826 - 11280 = 546
  const memest_model twin = from_config(tiny_kimi_linear(json::array()));
  CHECK(std::string(twin.mixer_pattern) == "AAAA");
  CHECK(total_of(m) - total_of(twin) == 3 * 546);
  double listed = 0;  // the tensors one by one, the same total
  for (const auto& t : memest::parameter_tensors(m)) listed += t.numel;
  CHECK(listed == total_of(m));
  // saved per token: convs' inputs 4 x 32 + 2 x 32 = 192; q, k after the l2 norm, rstds, v
  // 4 x 32 + 2 x 32 + 8 x 2 = 208; raw gate, low-rank outputs, beta 2 x 32 + 4 x 16 + 4 x 2 =
  // 136; Aqk and Akk 4 x 64 x 2 = 512; norm's x, z, rstd and o_proj's input 6 x 32 + 4 x 2 =
  // 200: 1248
  memest::ActivationLayout x;
  x.seq_len = 256;
  x.micro_batch = 1;
  CHECK(memest::deltanet_saved_bytes(m, x) == 1248.0 * 256);
  // the response names the layers and the mixer
  const json r = ok({{"mode", "model_states"}, {"model", tiny_kimi_linear()}, {"gpu", "h100-80gb"}});
  CHECK(r["model"]["mixer_pattern"] == "KKAK");
  CHECK(r["model"]["linear_key_heads"] == 2);
}

TEST_CASE("Mamba-1 and KDA hybrids: pretraining, layouts and refusals") {
  // Jamba under Megatron with tp 2: Mamba-1's channels split (128 / 2); one B and C group is
  // no obstacle; tp 3 does not divide the attention heads or the channels
  const json jamba = tiny_jamba();
  const json a = ok(pretrain(jamba, {{"gpus", 2}, {"tp", 2}}, {{"global_batch", 2}}));
  CHECK(a["stages"][0]["activations_bytes"].get<double>() > 0);
  CHECK(a["throughput"]["step_seconds"].get<double>() > 0);
  // the stage's parameters: the sharded ones halved; the all-attention twin differs per layer
  // by the Mamba-1 mixer less the attention
  const json b = ok(pretrain(jamba, {{"gpus", 1}}, {{"global_batch", 1}}));
  CHECK(b["stages"][0]["parameters"] == 281960);
  CHECK(refused_field(pretrain(jamba, {{"gpus", 2}, {"cp", 2}}, {})) == "parallel.cp");
  // Kimi Linear pretrains too, KDA heads (2) must be split by tp
  const json k = ok(pretrain(tiny_kimi_linear(), {{"gpus", 2}, {"tp", 2}}, {{"global_batch", 2}}));
  CHECK(k["stages"][0]["activations_bytes"].get<double>() > 0);
  CHECK(refused_field(pretrain(tiny_kimi_linear(), {{"gpus", 4}, {"tp", 4}}, {})) == "parallel.tp");
  // refusals on the model: one kind of state-space mixer, one kind of delta rule
  json req = {{"mode", "model_states"}, {"gpu", "h100-80gb"}};
  json model = ok({{"mode", "model_states"}, {"model", tiny_jamba()}, {"gpu", "h100-80gb"}})["model"];
  model["mixer_pattern"] = "SAMA";
  req["model"] = model;
  CHECK(refused_field(req) == "model.mixer_pattern");
  model["mixer_pattern"] = "SASA";
  model["mamba_groups"] = 2;
  req["model"] = model;
  CHECK(refused_field(req) == "model.mamba_groups");
  model["mamba_groups"] = 1;
  model["mamba_dt_rank"] = 0;
  req["model"] = model;
  CHECK(refused_field(req) == "model.mamba_dt_rank");
  json attention_only = tiny_nemotron_h();
  json echoed = ok({{"mode", "model_states"}, {"model", attention_only}, {"gpu", "h100-80gb"}})["model"];
  echoed["mamba_dt_rank"] = 8;  // without 'S' layers
  req["model"] = echoed;
  CHECK(refused_field(req) == "model.mamba_dt_rank");
  json kimi = tiny_kimi_linear();
  kimi["linear_attn_config"]["kda_layers"] = {0, 1};  // counted from 1
  req["model"] = kimi;
  CHECK(refused_field(req) == "model.linear_attn_config.kda_layers[0]");
  kimi = tiny_jamba();
  kimi["mamba_dt_rank"] = "half";
  req["model"] = kimi;
  CHECK(refused_field(req) == "model.mamba_dt_rank");
}

TEST_CASE("Context parallelism over Mamba-2 and gated DeltaNet: Megatron-Core's all-to-all") {
  // megatron/core/ssm/mamba_context_parallel.py: an all-to-all before the conv and scan trades
  // the sequence split for a head split, one after it trades back.
  const json c = tiny_nemotron_h("MMMM");  // 8 heads of 16, 2 groups, state 16, no MLP
  SUBCASE("which layouts split") {
    // tp 1 x cp 2: 4 heads and 1 group per rank
    CHECK(ok(pretrain(c, {{"gpus", 2}, {"cp", 2}}, {{"global_batch", 2}}))["layout"]["cp"] == 2);
    // cp 16 leaves half a head per rank
    const test::Answer heads = test::request(pretrain(c, {{"gpus", 16}, {"cp", 16}}, {}));
    REQUIRE(heads.status != MEMEST_OK);
    CHECK(heads.body["error"]["field"] == "parallel.cp");
    CHECK(message(heads).find("tp*cp=16 must divide mamba_num_heads=8") != std::string::npos);
    // 24 heads in 6 groups at tp 2: 3 groups per rank, neither dividing cp 2 nor divided by it
    json six = c;
    six["mamba_num_heads"] = 24;
    six["n_groups"] = 6;
    const test::Answer groups = test::request(pretrain(six, {{"gpus", 4}, {"tp", 2}, {"cp", 2}}, {}));
    REQUIRE(groups.status != MEMEST_OK);
    CHECK(groups.body["error"]["field"] == "parallel.cp");
    CHECK(message(groups).find("mamba_groups/tp=3") != std::string::npos);
    // only Megatron-Core splits a scan: the others are refused by name
    const test::Answer fsdp = test::request(pretrain(c, {{"gpus", 2}, {"cp", 2}}, {{"framework", "fsdp"}}));
    REQUIRE(fsdp.status != MEMEST_OK);
    CHECK(fsdp.body["error"]["field"] == "parallel.cp");
    CHECK(message(fsdp).find("framework fsdp has none") != std::string::npos);
  }
  SUBCASE("what a rank saves: its share, B and C whole per group") {
    const memest_model m = from_config(c);
    memest::ActivationLayout x;
    x.seq_len = 256;
    x.micro_batch = 2;
    x.tp = 2;
    x.cp = 2;
    // tp 2 leaves 1 group per rank, cp 2 repeats it to both cp ranks: B and C 2 x 16 per
    // token where an even split would hold 2 x 2 x 16 / 4. Per token of the micro-batch on
    // this rank (512 / cp = 256 tokens, / tp 2): zxbcdt 2 x (2 x 128 + 2 x 2 x 16 x 2 + 8) =
    // 784, scan output 256, rstd 8, the separate norm's and out_proj's inputs 512: 1560 bytes;
    // 1560 x 256 / 2 = 199680 (an even split, 1432 per token, would be 183296).
    CHECK(memest::mamba_saved_bytes(m, x, true) == 199680);
    // 4 groups at tp 1, cp 2: 2 groups per rank, no repeat: zxbcdt 2 x (256 + 2 x 4 x 16 + 8)
    // = 784, scan output 256, rstd 4 x 4 = 16, 512: 1568 bytes x 256 tokens = 401408
    memest_model four = m;
    four.mamba_groups = 4;
    x.tp = 1;
    CHECK(memest::mamba_saved_bytes(four, x, true) == 401408);
  }
  SUBCASE("the all-to-alls in the step") {
    // h100-80gb: NVLink 450 GB/s, 10 us per step; 2 ranks in one node: 1 step, (n-1)/n = 1/2
    // of each buffer crosses. seq 256, micro-batch 1, cp 2: 128 tokens per rank. Forward:
    // z 128, x 128, B 32, C 32, dt 8 channels before the scan, y 128 after: 6 calls, 456
    // channels x 128 tokens x 2 bytes = 116736 bytes; backward the same. Per layer
    // 2 x (6 x 10 us + 116736 / 2 / 450e9 s); 4 layers, 2 micro-batches (global batch 2, dp 1).
    const json r = ok(pretrain(c, {{"gpus", 2}, {"cp", 2}}, {{"global_batch", 2}}));
    const double per_layer = 2 * (6 * 10e-6 + 116736.0 / 2 / 450e9);
    CHECK(r["throughput"]["step"]["cp_comm"].get<double>() == doctest::Approx(2 * 4 * per_layer));
  }
  SUBCASE("gated DeltaNet") {
    // 2 key heads and 4 value heads of 16: keys 32, values 64
    const json g = {{"hidden_size", 64}, {"num_hidden_layers", 4}, {"num_attention_heads", 4},
                    {"intermediate_size", 128}, {"vocab_size", 100}, {"mixer_pattern", "GGGG"},
                    {"linear_key_heads", 2}, {"linear_value_heads", 4},
                    {"linear_key_head_dim", 16}, {"linear_value_head_dim", 16},
                    {"linear_conv_kernel", 4}};
    // cp 4 leaves half a key head per rank
    const test::Answer keys = test::request(pretrain(g, {{"gpus", 4}, {"cp", 4}}, {}));
    REQUIRE(keys.status != MEMEST_OK);
    CHECK(keys.body["error"]["field"] == "parallel.cp");
    CHECK(message(keys).find("linear_key_heads=2") != std::string::npos);
    // cp 2: one call of q, k, v, z, beta, alpha (2 x 32 + 2 x 64 + 2 x 4 = 200 channels), one
    // of the norm's output (64): 264 x 128 tokens x 2 bytes = 67584 bytes, 2 calls each way
    const json r = ok(pretrain(g, {{"gpus", 2}, {"cp", 2}}, {{"global_batch", 2}}));
    const double per_layer = 2 * (2 * 10e-6 + 67584.0 / 2 / 450e9);
    CHECK(r["throughput"]["step"]["cp_comm"].get<double>() == doctest::Approx(2 * 4 * per_layer));
  }
}

TEST_CASE("A hybrid's attention layers each cost a whole attention layer's kernels") {
  // Replacing one attention layer by a Mamba-2 mixer changes the step's compute by the same
  // amount whichever layer it is: "*-*-" -> "M-*-" -> "M-M-". (The model-FLOPs count averages
  // the score width over every layer; the kernels of one attention layer run at its full width.)
  auto compute = [](const std::string& pattern) {
    const json r = ok(pretrain(tiny_nemotron_h(pattern), {{"gpus", 1}},
                               {{"seq_len", 4096}, {"global_batch", 1}, {"recompute", "none"}}));
    return r["throughput"]["step"]["compute"].get<double>();
  };
  const double two = compute("*-*-"), one = compute("M-*-"), none = compute("M-M-");
  CHECK(two - one == doctest::Approx(one - none).epsilon(1e-9));
}

TEST_CASE("LoRA on a hybrid (peft): attention targets on attention layers, MLP targets on MLPs") {
  const json lora = {{"type", "lora"}, {"rank", 8},
                     {"targets", {"q_proj", "v_proj", "up_proj", "down_proj"}}};
  auto trainable = [&](const json& model, const json& adapter) {
    return ok(pretrain(model, {{"gpus", 1}},
                       {{"framework", "pytorch"}, {"global_batch", 1}, {"adapter", adapter}}))
        ["trainable_parameters"]
            .get<double>();
  };
  // "M-*-": one attention layer, two MLP layers, one Mamba-2 mixer (no target). Rank 8:
  // q_proj 64 -> 64: 8 x 128 = 1024; v_proj 64 -> 32: 8 x 96 = 768; per attention layer 1792.
  // up_proj 64 -> 128 and down_proj 128 -> 64: 8 x 192 each = 3072 per MLP layer.
  // 1792 + 2 x 3072 = 7936 (counting every layer as attention + MLP would give 4 x 4864).
  CHECK(trainable(tiny_nemotron_h("M-*-"), lora) == 7936);
  // "MM**": two attention layers, no MLP layer: the MLP targets have no module
  const test::Answer no_mlp = test::request(pretrain(
      tiny_nemotron_h("MM**"), {{"gpus", 1}}, {{"framework", "pytorch"}, {"adapter", lora}}));
  REQUIRE(no_mlp.status != MEMEST_OK);
  CHECK(no_mlp.body["error"]["field"] == "training.adapter.targets");
  CHECK(message(no_mlp).find("no MLP layers") != std::string::npos);
  json attention_only = lora;
  attention_only["targets"] = {"q_proj", "v_proj"};
  CHECK(trainable(tiny_nemotron_h("MM**"), attention_only) == 2 * 1792);
  // "M-M-": no attention layer: q_proj and v_proj have no module
  const test::Answer no_attention = test::request(pretrain(
      tiny_nemotron_h("M-M-"), {{"gpus", 1}}, {{"framework", "pytorch"}, {"adapter", attention_only}}));
  REQUIRE(no_attention.status != MEMEST_OK);
  CHECK(no_attention.body["error"]["field"] == "training.adapter.targets");
  // the frozen base keeps no gradient: the run with adapters needs less than full training
  const json full = ok(pretrain(tiny_nemotron_h("M-*-"), {{"gpus", 1}},
                                {{"framework", "pytorch"}, {"global_batch", 1}}));
  const json adapted = ok(pretrain(tiny_nemotron_h("M-*-"), {{"gpus", 1}},
                                   {{"framework", "pytorch"}, {"global_batch", 1}, {"adapter", lora}}));
  CHECK(adapted["trainable_parameters"].get<double>() < full["model"]["num_parameters"].get<double>());
}

TEST_CASE("LoRA on Qwen3-Next's gated attention: q_proj is twice the query width") {
  // One gated-attention layer after three gated DeltaNet layers (full_attention_interval 4);
  // h 64, 4 query heads of 16 (q_proj 64 -> 2 x 64 with the output gate), 2 KV heads;
  // experts as in the test above. q_proj rank 4: 4 x (64 + 128) = 768, on 1 of 4 layers.
  const json r = ok(pretrain(tiny_qwen3_next(), {{"gpus", 1}},
                             {{"framework", "fsdp"}, {"global_batch", 1},
                              {"adapter", {{"type", "lora"}, {"rank", 4}, {"targets", {"q_proj"}}}}}));
  CHECK(r["trainable_parameters"] == 768);
}

TEST_CASE("LoRA on the mixers: in_proj and out_proj on Mamba-2 and gated DeltaNet (peft)") {
  auto trainable = [&](const json& model, const json& adapter, const std::string& framework) {
    return ok(pretrain(model, {{"gpus", 1}},
                       {{"framework", framework}, {"global_batch", 1}, {"adapter", adapter}}))
        ["trainable_parameters"]
            .get<double>();
  };
  // "M-*-": one Mamba-2 mixer, d_inner 8 x 16 = 128, in_proj 64 -> 2 x 128 + 2 x 2 x 16 + 8
  // = 328: rank 8 x (64 + 328) = 3136; out_proj 128 -> 64: 8 x (128 + 64) = 1536. 4672.
  const json mixers = {{"type", "lora"}, {"rank", 8}, {"targets", {"in_proj", "out_proj"}}};
  CHECK(trainable(tiny_nemotron_h("M-*-"), mixers, "pytorch") == 4672);
  // all-linear: q 8 x 128 = 1024, k and v 8 x 96 = 768 each, o 1024 (3584 on the attention
  // layer); up and down 8 x 192 = 1536 each on both MLP layers (6144); the mixer's 4672: 14400
  const json all_linear = {{"type", "lora"}, {"rank", 8}, {"targets", {"all-linear"}}};
  CHECK(trainable(tiny_nemotron_h("M-*-"), all_linear, "pytorch") == 14400);
  // Qwen3-Next: three gated DeltaNet layers, keys 2 x 16 = 32, values 4 x 16 = 64, 4 value
  // heads. Rank 4: in_proj_qkvz 64 -> 2 x 32 + 2 x 64 = 192: 4 x 256 = 1024; in_proj_ba
  // 64 -> 8: 4 x 72 = 288; out_proj 64 -> 64: 512. 1824 a layer, 3 x 1824 = 5472.
  json gdn = mixers;
  gdn["rank"] = 4;
  CHECK(trainable(tiny_qwen3_next(), gdn, "fsdp") == 5472);
  // the adapters' saved tensors: in_proj's lora_A keeps the layer's normed input (2 B x 256
  // tokens x 64 = 32768) and each lora_A output 2 B x 256 x 8 = 4096; out_proj's lora_A shares
  // the input the mixer keeps, plus its 4096: 40960 more than the same run with out_proj only
  // (4096): 36864 between them
  auto activations = [&](const json& adapter) {
    return ok(pretrain(tiny_nemotron_h("M-*-"), {{"gpus", 1}},
                       {{"framework", "pytorch"}, {"global_batch", 1}, {"adapter", adapter}}))
        ["stages"][0]["activations_bytes"]
            .get<double>();
  };
  json out_only = mixers;
  out_only["targets"] = {"out_proj"};
  json none = mixers;
  none["targets"] = {"q_proj"};
  json q_and_mixers = mixers;
  q_and_mixers["targets"] = {"q_proj", "in_proj", "out_proj"};
  json q_and_out = mixers;
  q_and_out["targets"] = {"q_proj", "out_proj"};
  CHECK(activations(q_and_mixers) - activations(q_and_out) == 36864);
}

TEST_CASE("LoRA on the mixers: refused where no mixer has in_proj / out_proj") {
  const json mixers = {{"type", "lora"}, {"rank", 8}, {"targets", {"in_proj"}}};
  auto refused = [&](const json& model, const json& adapter) {
    const test::Answer a = test::request(
        pretrain(model, {{"gpus", 1}}, {{"framework", "pytorch"}, {"adapter", adapter}}));
    REQUIRE(a.status != MEMEST_OK);
    // (all-linear is refused at its own entry, training.adapter.targets[0])
    CHECK(a.body["error"]["field"].get<std::string>().rfind("training.adapter.targets", 0) == 0);
    return message(a);
  };
  // a dense transformer has no mixer
  CHECK(refused({{"model_type", "llama"}, {"hidden_size", 64}, {"num_hidden_layers", 2},
                 {"num_attention_heads", 4}, {"intermediate_size", 128}, {"vocab_size", 100}},
                mixers)
            .find("has none") != std::string::npos);
  // Kimi Delta Attention names its projections q/k/v/f/g/b/o_proj
  CHECK(refused(tiny_kimi_linear(), mixers).find("Kimi Delta Attention") != std::string::npos);
  // all-linear on Mamba-1 would need x_proj and dt_proj
  CHECK(refused(tiny_jamba(), {{"type", "lora"}, {"rank", 8}, {"targets", {"all-linear"}}})
            .find("x_proj and dt_proj") != std::string::npos);
}

TEST_CASE("LoRA on a hybrid under Megatron: Megatron-Bridge's Nemotron-H targets, stage by stage") {
  // Megatron-Bridge's Nemotron-H PEFT recipes target linear_qkv, linear_proj, linear_fc1,
  // linear_fc2, in_proj and out_proj (recipes/nemotronh). Rank 8 on "M-*-", t = 1:
  // linear_qkv 8 x (64 + 128) = 1536, linear_proj 8 x 128 = 1024: 2560 on the attention
  // layer; fc1 and fc2 8 x 192 = 1536 each: 3072 on each MLP layer; the mixer 4672 (in_proj
  // 3136 + out_proj 1536, as under peft). 2560 + 2 x 3072 + 4672 = 13376.
  const json bridge = {{"type", "lora"}, {"rank", 8}, {"dtype", "bf16"},
                       {"targets", {"q_proj", "o_proj", "up_proj", "down_proj", "in_proj", "out_proj"}}};
  auto run = [&](const json& parallel) {
    return ok(pretrain(tiny_nemotron_h("M-*-"), parallel,
                       {{"framework", "megatron"}, {"global_batch", 2}, {"adapter", bridge}}));
  };
  CHECK(run({{"gpus", 1}})["trainable_parameters"] == 13376);
  // pp 2: stage 0 holds "M-" (4672 + 3072 = 7744), stage 1 "*-" (2560 + 3072 = 5632)
  const json pp = run({{"gpus", 2}, {"pp", 2}});
  CHECK(pp["stages"][0]["adapter"]["trainable_parameters"] == 7744);
  CHECK(pp["stages"][1]["adapter"]["trainable_parameters"] == 5632);
  // tp 2, per rank: linear_qkv A whole 8 x 64 + B 8 x 128 / 2 = 1024, linear_proj A 8 x 64 / 2
  // + B 8 x 64 = 768; fc1 512 + 512 = 1024, fc2 512 + 512 = 1024; in_proj 8 x 64 + 8 x 328 / 2
  // = 1824, out_proj 8 x 128 / 2 + 8 x 64 = 1024. 1792 + 2 x 2048 + 2848 = 8736.
  const json tp = run({{"gpus", 2}, {"tp", 2}});
  CHECK(tp["stages"][0]["adapter"]["trainable_parameters"] == 8736);
  const memest_model m = from_config(tiny_nemotron_h("M-*-"));
  const uint32_t mixer_bits = memest::lora_bit(MEMEST_LORA_IN_PROJ) | memest::lora_bit(MEMEST_LORA_OUT_PROJ);
  CHECK(memest::megatron_adapter_parameters(m, mixer_bits, 8, 2, 1, 1).blocks.mamba == 2848);
  // Megatron-Core's gated DeltaNet has one in_proj of 2 qk + 2 v + 2 value heads
  // (gated_delta_net/gdn.py): Qwen3-Next rank 4, 4 x (64 + 200) = 1056, out_proj 512: 1568
  const memest_model q = from_config(tiny_qwen3_next());
  CHECK(memest::megatron_adapter_parameters(q, mixer_bits, 4, 1, 1, 1).blocks.deltanet == 1568);
  // the in_proj adapter's saved tensors under Megatron: lora_A's input gathered whole (2 B x
  // 256 x 64 = 32768) and its output (2 B x 256 x 8 = 4096) on the one mixer
  json out_only = bridge;
  out_only["targets"] = {"q_proj", "o_proj", "up_proj", "down_proj", "out_proj"};
  const double with_in = run({{"gpus", 1}})["stages"][0]["activations_bytes"].get<double>();
  const double without = ok(pretrain(tiny_nemotron_h("M-*-"), {{"gpus", 1}},
                                     {{"framework", "megatron"}, {"global_batch", 2},
                                      {"adapter", out_only}}))["stages"][0]["activations_bytes"]
                             .get<double>();
  CHECK(with_in - without == 36864);
}
