// Presets: parameter counts from the dimensions of each real config.json must match the
// real checkpoints' published counts.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "helpers.hpp"
#include "requests.hpp"

namespace {

double preset_params(const char* id) {
  memest_model m = memest_test::sized<memest_model>();
  REQUIRE(memest_model_from_preset(id, &m) == MEMEST_OK);
  memest_param_count c = memest_test::sized<memest_param_count>();
  REQUIRE(memest_model_parameter_count(&m, &c) == MEMEST_OK);
  return c.total;
}

}  // namespace

TEST_CASE("Published parameter counts, within 0.5 % (exact where the checkpoint index gives it)") {
  struct Published {
    const char* id;
    double params;
    bool exact;  // an exact count is published (safetensors index)
  };
  const Published kPublished[] = {
      {"llama-3.1-8b", 8030261248.0, true},     // model.safetensors.index.json / 2 bytes
      {"llama-3.1-70b", 70553706496.0, true},
      {"llama-3.1-405b", 405853388800.0, true},
      {"llama-2-7b", 6738415616.0, true},
      {"gpt3-175b", 175e9, false},              // GPT-3 paper Table 2.1: "175.0B"
  };
  for (const auto& p : kPublished) {
    CAPTURE(p.id);
    const double n = preset_params(p.id);
    CHECK(std::fabs(n / p.params - 1) < 0.005);
    if (p.exact) CHECK(n == p.params);
  }
}

namespace {

memest_param_count preset_count(const char* id) {
  memest_model m = memest_test::sized<memest_model>();
  REQUIRE(memest_model_from_preset(id, &m) == MEMEST_OK);
  memest_param_count c = memest_test::sized<memest_param_count>();
  REQUIRE(memest_model_parameter_count(&m, &c) == MEMEST_OK);
  return c;
}

// A published figure holds the count within its rounding: |count - published| <= tolerance, or,
// with rounding "down" (the figure is the count cut to its last digit, tolerance half a unit of
// it), published <= count < published + 2 * tolerance.
bool within(double count, double published, double tolerance, const std::string& rounding) {
  if (rounding == "down") return count >= published && count < published + 2 * tolerance;
  return std::fabs(count - published) <= tolerance;
}

}  // namespace

TEST_CASE("Every preset in data/models.json counts to its recorded published_params") {
  std::ifstream in(std::string(MEMEST_PRESET_DATA) + "/models.json");
  std::stringstream ss;
  ss << in.rdbuf();
  const auto doc = test::json::parse(ss.str());
  std::set<std::string> ids;
  for (const auto& entry : doc["models"]) {
    const std::string id = entry["id"];
    CAPTURE(id);
    ids.insert(id);
    const double published = entry["published_params"];
    CHECK(!entry["source"].get<std::string>().empty());
    CHECK(!entry["published_params_source"].get<std::string>().empty());
    const memest_param_count c = preset_count(id.c_str());
    if (!entry.contains("published_params_tolerance")) {
      CHECK(std::fabs(c.total / published - 1) < 0.005);
      continue;
    }
    // Newer entries: the published figure's own rounding; parts of a multimodal checkpoint
    // memest leaves out (the vision tower) are added back to compare with a published total.
    const double excluded = entry.value("excluded_params", 0.0);
    // a publisher's total without the embedding table and the LM head (Kimi Linear's 48B)
    const double unlisted = entry.value("published_total_excludes", std::string()) == "embedding_and_head"
                                ? c.embedding + c.lm_head
                                : 0.0;
    CHECK(within(c.total + excluded - unlisted, published, entry["published_params_tolerance"],
                 entry.value("published_rounding", std::string("nearest"))));
    if (entry.contains("published_active_params")) {
      memest_model m = memest_test::sized<memest_model>();
      REQUIRE(memest_model_from_preset(id.c_str(), &m) == MEMEST_OK);
      double active = c.active;
      // DeepSeek, OpenAI and Moonshot count active parameters without the input embedding.
      if (entry.value("published_active_excludes", std::string()) == "input_embedding") {
        active -= static_cast<double>(m.vocab_size) * static_cast<double>(m.hidden_size);
      }
      CHECK(within(active, entry["published_active_params"], entry["published_active_tolerance"],
                   entry.value("published_active_rounding", std::string("nearest"))));
      CHECK(m.num_experts > 0);
      CHECK(c.active < c.total);
    } else {
      CHECK(c.active == c.total);
    }
    if (entry.contains("published_mtp_params")) {
      CHECK(within(c.mtp, entry["published_mtp_params"], entry["published_mtp_tolerance"], "nearest"));
    }
  }
  // The required set.
  for (const char* id : {"llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3.1-8b", "llama-3.1-70b",
                         "llama-3.1-405b", "mistral-7b", "qwen2.5-7b", "qwen2.5-72b", "gpt3-175b",
                         "opt-1.3b", "opt-2.7b", "bloom-1b1", "bloom-3b", "biogpt-large",
                         "codegen-2b-nl", "gpt-bigcode-santacoder", "gpt-neo-1.3b", "llama-7b"}) {
    CAPTURE(id);
    CHECK(ids.count(id) == 1);
  }
  // A flagship of every family added for 2024-26 (dense, MoE, MLA).
  for (const char* id : {"qwen3-8b", "qwen3-32b", "gemma-2-27b", "gemma-3-27b", "phi-4", "olmo-2-7b",
                         "starcoder2-7b", "falcon-7b", "command-r", "internlm2.5-7b", "glm-4-9b",
                         "mixtral-8x7b", "mixtral-8x22b", "qwen1.5-moe-a2.7b", "qwen3-30b-a3b",
                         "qwen3-235b-a22b", "deepseek-v2", "deepseek-v3", "kimi-k2", "gpt-oss-20b",
                         "gpt-oss-120b", "llama-4-scout", "llama-4-maverick", "olmoe-1b-7b", "dbrx",
                         "jamba-1.5-mini", "kimi-linear-48b-a3b"}) {
    CAPTURE(id);
    CHECK(ids.count(id) == 1);
  }
  CHECK(memest_model_preset_count() == ids.size());
}

TEST_CASE("OPT-1.3b by hand: learned positions with OPT's offset of 2, LayerNorm, biases") {
  // embeddings 50272*2048 = 102957056; positions (2048 + 2)*2048 = 4198400;
  // per layer: attention 4*(2048^2 + 2048) = 16785408, MLP 2*2048*8192 + 8192 + 2048 = 33564672,
  // two LayerNorms 8192: 50358272 * 24 = 1208598528; final LayerNorm 4096; tied head.
  memest_model m = memest_test::sized<memest_model>();
  REQUIRE(memest_model_from_preset("opt-1.3b", &m) == MEMEST_OK);
  memest_param_count c = memest_test::sized<memest_param_count>();
  REQUIRE(memest_model_parameter_count(&m, &c) == MEMEST_OK);
  CHECK(c.embedding == 102957056.0 + 4198400.0);
  CHECK(c.per_layer == 50358272.0);
  CHECK(c.lm_head == 4096.0);
  CHECK(c.total == 1315758080.0);
}

TEST_CASE("GPU presets: usable capacities as PyTorch reports them (1.6)") {
  // measured totals (torch.cuda.mem_get_info, public OOM traces: gpus.json memory_source) ...
  const std::pair<const char*, double> kGpus[] = {
      {"v100-32gb", 31.72}, {"a100-40gb", 39.39}, {"a100-80gb", 79.15}, {"h100-80gb", 79.10},
      {"rtx4090-24gb", 23.65}, {"rtx3090-24gb", 23.69}, {"rtx-a6000-48gb", 47.54},
      {"b200-180gb", 178.35}, {"gb200-186gb", 184.31}, {"rtx5090-32gb", 31.37},
      {"l40s-48gb", 44.43}, {"a10g-24gb", 22.20},
      // ... and the estimates: nominal x 0.989, the median usable share of those measured
      {"v100-16gb", 15.82}, {"h100-94gb", 92.97}, {"h200-141gb", 139.45}, {"mi300x-192gb", 189.89},
      {"mi325x-256gb", 253.18}, {"h20-96gb", 94.94}, {"l4-24gb", 23.74}};
  for (const auto& [id, gib] : kGpus) {
    CAPTURE(id);
    memest_gpu g = memest_test::sized<memest_gpu>();
    REQUIRE(memest_gpu_from_preset(id, &g) == MEMEST_OK);
    CHECK(g.memory_bytes == gib * test::kGiB);
    CHECK(g.gpus_per_node >= 1);
  }
  memest_gpu g = memest_test::sized<memest_gpu>();
  REQUIRE(memest_gpu_from_preset("h100-94gb", &g) == MEMEST_OK);
  CHECK(g.gpus_per_node == 4);  // the 4D paper's H100 94GB x 4 nodes
  CHECK(memest_gpu_preset_count() >= 10);
  CHECK(memest_gpu_preset_id(memest_gpu_preset_count()) == nullptr);
}

TEST_CASE("Hugging Face ids and checkpoint names of built-in presets name them") {
  auto resolved = [](const std::string& id) {
    memest_model by_name = memest_test::sized<memest_model>();
    INFO(id);
    REQUIRE(memest_model_from_preset(id.c_str(), &by_name) == MEMEST_OK);
    return std::string(by_name.name);
  };
  CHECK(resolved("Qwen/Qwen3-30B-A3B") == "Qwen3-30B-A3B");
  CHECK(resolved("meta-llama/Llama-3.1-8B-Instruct") == "Llama-3.1-8B");  // -instruct: same shapes
  CHECK(resolved("Llama-3.1-8B") == "Llama-3.1-8B");                      // case folded
  CHECK(resolved("unsloth/Llama-3.3-70B-Instruct-bnb-4bit") == "Llama-3.1-70B");  // alias
  CHECK(resolved("deepseek-ai/DeepSeek-V3") == "DeepSeek-V3");
  // the JSON entry point answers the preset's own numbers
  const test::json a = test::ok({{"mode", "model_states"}, {"model", "mistralai/Mixtral-8x7B-v0.1"},
                           {"gpu", "h100-80gb"}});
  const test::json b = test::ok({{"mode", "model_states"}, {"model", "mixtral-8x7b"}, {"gpu", "h100-80gb"}});
  CHECK(a["model"] == b["model"]);
  CHECK(a["estimate_bytes"] == b["estimate_bytes"]);
  // an id of a checkpoint memest does not carry says what to give instead
  memest_model m = memest_test::sized<memest_model>();
  CHECK(memest_model_from_preset("Qwen/Qwen9-1B", &m) == MEMEST_ERR_UNKNOWN_PRESET);
  CHECK(std::string(memest_last_error()) ==
        "model: \"Qwen/Qwen9-1B\" is not a built-in checkpoint (the presets are listed by "
        "{\"mode\": \"presets\"}): give its config.json as the model instead");
  CHECK(std::string(memest_last_error_field()) == "model");
}

TEST_CASE("An unknown preset id gets the closest ids, or the list when none is close") {
  auto message = [](const std::string& id) {
    memest_model m = memest_test::sized<memest_model>();
    CHECK(memest_model_from_preset(id.c_str(), &m) == MEMEST_ERR_UNKNOWN_PRESET);
    return std::string(memest_last_error());
  };
  CHECK(message("llama3-8b") ==
        "model: unknown model preset \"llama3-8b\"; did you mean \"llama-3.1-8b\"?");
  CHECK(message("qwen-2.5-7b").find("did you mean \"qwen2.5-7b\"?") != std::string::npos);
  const std::string far = message("zzzzzz");
  CHECK(far.find("did you mean") == std::string::npos);
  CHECK(far.find("(known: llama-2-7b, ") != std::string::npos);
  memest_gpu g = memest_test::sized<memest_gpu>();
  CHECK(memest_gpu_from_preset("h100", &g) == MEMEST_ERR_UNKNOWN_PRESET);
  CHECK(std::string(memest_last_error()) ==
        "gpu: unknown GPU preset \"h100\"; did you mean \"h100-80gb\" or \"h100-pcie-80gb\" or \"h100-94gb\"?");
  // A 100 MB id is quoted cut, and answered at once.
  const std::string huge(100u << 20, 'x');
  const std::string long_message = message(huge);
  CHECK(long_message.size() < 1000);
  CHECK(long_message.find("...(104857600 bytes)") != std::string::npos);
}
