// Real config.json files of 32+ families (tests/data/configs, sources in SOURCES.md): each is
// read by memest_model_from_config_json and, as is, as the model of a JSON request, and counts
// to the checkpoint's published total (and active, and multi-token-prediction) parameters.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "helpers.hpp"
#include "requests.hpp"
#include "model/tensors.hpp"

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool within(double count, double published, double tolerance, const std::string& rounding) {
  if (rounding == "down") return count >= published && count < published + 2 * tolerance;
  return std::fabs(count - published) <= tolerance;
}

}  // namespace

TEST_CASE("Real config.json files: accepted by both entry points, counted to the published figures") {
  const std::string dir = std::string(MEMEST_TEST_DATA) + "/configs/";
  const test::json expected = test::load_json("configs/expected.json");
  std::set<std::string> families;
  for (const auto& e : expected["configs"]) {
    const std::string file = e["file"];
    CAPTURE(file);
    const std::string text = read_text(dir + file);
    REQUIRE(!text.empty());
    // (Python's bare Infinity, which Nemotron-H's files hold, read as null by the test's own
    // parser; the library reads the text itself)
    const test::json config = test::json::parse(test::without_non_finite(text));
    const std::string family = e["family"];
    families.insert(family);
    // The manifest's family is the file's model_type (Falcon's first upload says RefinedWebModel).
    const std::string type = config.value("model_type", std::string());
    CHECK((type == family || (family == "falcon" && type == "RefinedWebModel")));

    // 1. The C API.
    memest_model m = memest_test::sized<memest_model>();
    const memest_status st = memest_model_from_config_json(text.c_str(), &m);
    INFO(memest_last_error());
    REQUIRE(st == MEMEST_OK);
    memest_param_count c = memest_test::sized<memest_param_count>();
    REQUIRE(memest_model_parameter_count(&m, &c) == MEMEST_OK);
    // the tensors one by one (LLMem's and the adapters' list) add up to the same total
    double listed = 0;
    for (const auto& t : memest::parameter_tensors(m)) listed += t.numel;
    CHECK(listed == doctest::Approx(c.total).epsilon(1e-12));

    // 2. The same file, as written, as the model of a JSON request.
    const test::Answer a =
        test::request(R"({"mode": "model_states", "gpu": "h100-80gb", "model": )" + text + "}");
    INFO(a.body.dump());
    REQUIRE(a.status == MEMEST_OK);
    CHECK(a.body["model"]["num_parameters"] == c.total);
    CHECK(a.body["model"]["active_parameters"] == c.active);
    // Model states hold every parameter (all experts; bf16 + fp32 gradients + Adam: 18 bytes).
    CHECK(a.body["estimate_bytes"] == c.total * 18);

    // 3. The published figures.
    const double excluded = e.value("excluded_params", 0.0);
    // the publisher's total without the embedding table and the LM head (Kimi Linear's 48B)
    const double unlisted =
        e.value("total_excludes", std::string()) == "embedding_and_head" ? c.embedding + c.lm_head : 0.0;
    if (e.contains("published_params")) {
      CHECK(within(c.total + excluded - unlisted, e["published_params"], e["tolerance"],
                   e.value("rounding", std::string("nearest"))));
    } else {
      REQUIRE(e.contains("published_checkpoint_params"));
    }
    // A checkpoint's stored tensors: the main model, the MTP modules and the copies of the
    // embedding and head the MTP layers store (DeepSeek's 685B, the Hub's size labels).
    const bool checkpoint = e.contains("published_checkpoint_params");
    if (checkpoint) {
      const double vh = static_cast<double>(m.vocab_size) * static_cast<double>(m.hidden_size);
      const double copies = c.mtp > 0 ? (m.tie_word_embeddings ? 1 : 2) * vh : 0.0;
      CHECK(within(c.total + c.mtp + copies, e["published_checkpoint_params"],
                   e["checkpoint_tolerance"], "nearest"));
    }
    CHECK(m.vision_excluded == (excluded > 0 ? 1 : 0));
    if (e.contains("published_active_params")) {
      double active = c.active;
      if (e.value("active_excludes", std::string()) == "input_embedding") {
        active -= static_cast<double>(m.vocab_size) * static_cast<double>(m.hidden_size);
      }
      CHECK(within(active, e["published_active_params"], e["active_tolerance"],
                   e.value("active_rounding", std::string("nearest"))));
      CHECK(m.num_experts > 0);
    } else {
      CHECK(c.active == c.total);
    }
    if (e.contains("published_mtp_params")) {
      CHECK(within(c.mtp, e["published_mtp_params"], e["mtp_tolerance"], "nearest"));
      CHECK(a.body["model"]["mtp_parameters"] == c.mtp);
    } else if (!checkpoint) {
      CHECK(c.mtp == 0);
    }
  }
  CHECK(families.size() >= 37);
}

TEST_CASE("Kimi-Linear's real config.json: KDA layers where linear_attn_config lists them") {
  // tests/data/configs/kimi-linear-48b-a3b-instruct.json: kda_layers and full_attn_layers count
  // from 1 (modeling_kimi.py: layer_idx + 1 in kda_layers); layers 4, 8, ..., 24 and 27 are MLA.
  const std::string text =
      read_text(std::string(MEMEST_TEST_DATA) + "/configs/kimi-linear-48b-a3b-instruct.json");
  REQUIRE(!text.empty());
  memest_model m = memest_test::sized<memest_model>();
  REQUIRE(memest_model_from_config_json(text.c_str(), &m) == MEMEST_OK);
  CHECK(std::string(m.mixer_pattern) == "KKKAKKKAKKKAKKKAKKKAKKKAKKA");
  CHECK(std::string(m.mlp_pattern).empty());  // first_k_dense_replace decides the MLPs
  CHECK(m.linear_key_heads == 32);
  CHECK(m.linear_value_heads == 32);
  CHECK(m.linear_key_head_dim == 128);
  CHECK(m.linear_value_head_dim == 128);
  CHECK(m.linear_conv_kernel == 4);
  CHECK(m.kv_lora_rank == 512);
  CHECK(m.q_lora_rank == 0);
  CHECK(m.num_experts == 256);
  CHECK(m.num_experts_per_tok == 8);  // "num_experts_per_token"
  CHECK(m.moe_first_dense_layers == 1);
}

TEST_CASE("FalconMamba's real config.json: 64 Mamba-1 layers, the saved intermediate_size") {
  const std::string text = read_text(std::string(MEMEST_TEST_DATA) + "/configs/falcon-mamba-7b.json");
  REQUIRE(!text.empty());
  memest_model m = memest_test::sized<memest_model>();
  REQUIRE(memest_model_from_config_json(text.c_str(), &m) == MEMEST_OK);
  CHECK(std::string(m.mixer_pattern) == std::string(64, 'S'));
  CHECK(std::string(m.mlp_pattern) == std::string(64, '-'));
  CHECK(m.mamba_num_heads == 8192);  // intermediate_size, not expand (16) x hidden
  CHECK(m.mamba_head_dim == 1);
  CHECK(m.mamba_state_size == 16);
  CHECK(m.mamba_dt_rank == 256);  // time_step_rank
  CHECK(m.mamba_norm == 0);       // its B/C/dt RMSNorms hold no weight
  CHECK(m.tie_word_embeddings == 0);
  // its _name_or_path "./" names nothing: the model is called by its type
  CHECK(std::string(m.name) == "custom-falcon_mamba");
  // a Mamba config without the keys: expand x hidden, dt rank "auto" = ceil(h / 16), tied head
  // (the tiny model of tests/unit/test_hybrid.cpp's Mamba-1 derivation)
  memest_model tiny = memest_test::sized<memest_model>();
  REQUIRE(memest_model_from_config_json(R"({"model_type": "mamba", "hidden_size": 64,
      "num_hidden_layers": 2, "state_size": 8, "vocab_size": 100})", &tiny) == MEMEST_OK);
  CHECK(tiny.mamba_num_heads == 128);
  CHECK(tiny.mamba_dt_rank == 4);
  CHECK(tiny.tie_word_embeddings == 1);
  // per layer: in_proj 64 x 256 = 16384, conv1d 128 x 4 + 128 = 640, x_proj 128 x (4 + 16) =
  // 2560, dt_proj 4 x 128 + 128 = 640, A_log 128 x 8 = 1024, D 128, out_proj 128 x 64 = 8192,
  // the norm 64: 29632; two layers, the tied embedding 6400 and the final norm 64: 65728
  memest_param_count c = memest_test::sized<memest_param_count>();
  REQUIRE(memest_model_parameter_count(&tiny, &c) == MEMEST_OK);
  CHECK(c.total == 65728);
  // LoRA's default q_proj / v_proj have no module there: the refusal names what does
  const std::string request = R"({"mode": "pretrain", "gpu": "h100-80gb", "parallel": {"gpus": 1},
      "training": {"framework": "pytorch", "seq_len": 256, "adapter": {"type": "lora"}},
      "model": {"model_type": "mamba", "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 100}})";
  char* answer = nullptr;
  CHECK(memest_request_json(request.c_str(), &answer) == MEMEST_ERR_UNSUPPORTED);
  const std::string refusal(answer);
  memest_string_free(answer);
  CHECK(refusal.find("target in_proj / out_proj") != std::string::npos);
}

TEST_CASE("Jamba's real config.json: Mamba-1 layers, attention every 8th, experts every 2nd") {
  const std::string text = read_text(std::string(MEMEST_TEST_DATA) + "/configs/ai21-jamba-1.5-mini.json");
  REQUIRE(!text.empty());
  memest_model m = memest_test::sized<memest_model>();
  REQUIRE(memest_model_from_config_json(text.c_str(), &m) == MEMEST_OK);
  // i % 8 == 4: attention; i % 2 == 1: experts
  CHECK(std::string(m.mixer_pattern) == "SSSSASSSSSSSASSSSSSSASSSSSSSASSS");
  CHECK(std::string(m.mlp_pattern) == "DEDEDEDEDEDEDEDEDEDEDEDEDEDEDEDE");
  CHECK(m.mamba_num_heads == 8192);  // d_inner = mamba_expand x hidden, heads of dimension 1
  CHECK(m.mamba_head_dim == 1);
  CHECK(m.mamba_groups == 1);
  CHECK(m.mamba_state_size == 16);
  CHECK(m.mamba_dt_rank == 256);
  CHECK(m.mamba_conv_kernel == 4);
  CHECK(m.mamba_conv_bias == 1);
  CHECK(m.mamba_proj_bias == 0);
  CHECK(m.mamba_norm == 1);
  CHECK(m.num_experts == 16);
  CHECK(m.moe_intermediate_size == 14336);
}
