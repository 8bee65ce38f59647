// Every invalid request of tests/data/invalid_requests.json fails with its error code and
// field through the JSON entry point, with a one-document answer and no partial result.
#include <doctest/doctest.h>

#include <cstring>
#include <set>
#include <string>

#include "helpers.hpp"
#include "requests.hpp"

TEST_CASE("Invalid requests: specific code and field, never a partial result") {
  const test::json data = test::load_json("invalid_requests.json");
  std::set<std::string> names;
  for (const auto& c : data["cases"]) {
    const std::string name = c["name"];
    CAPTURE(name);
    names.insert(name);
    const std::string text = c["request"].is_string() ? c["request"].get<std::string>()
                                                      : c["request"].dump();
    const test::Answer a = test::request(text);
    CHECK(a.status != MEMEST_OK);
    CHECK(std::string(memest_status_name(a.status)) == c["code"].get<std::string>());
    REQUIRE(a.body.is_object());
    CHECK(a.body["ok"] == false);
    CHECK(a.body.size() == 2);  // "ok" and "error" only: nothing partial
    CHECK(a.body["error"]["code"] == c["code"]);
    CHECK(a.body["error"]["field"] == c["field"]);
    CHECK(std::string(memest_last_error_field()) == c["field"].get<std::string>());
    const std::string message = a.body["error"]["message"];
    CHECK(message == memest_last_error());
    CHECK(message.size() > 10);
    if (!c["field"].get<std::string>().empty()) {
      CHECK(message.find(c["field"].get<std::string>()) != std::string::npos);
    }
  }
  CHECK(names.size() >= 30);
}

TEST_CASE("Typed API: an invalid request leaves the result and stages untouched") {
  memest_test::Pretrain p("llama-3.1-8b", "a100-40gb");
  p.r.gpus = 12;
  p.r.tp = 3;
  memest_pretrain_result result = memest_test::sized<memest_pretrain_result>();
  std::memset(&result, 0xAB, sizeof result);
  result.struct_size = sizeof result;
  memest_stage stages[2];
  std::memset(stages, 0xCD, sizeof stages);
  memest_pretrain_result result_before = result;
  CHECK(memest_pretrain(&p.r, &result, stages, sizeof stages[0], 2) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(std::string(memest_last_error()) == "parallel.tp=3 does not divide num_attention_heads=32");
  CHECK(std::memcmp(&result, &result_before, sizeof result) == 0);
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(stages);
  for (std::size_t i = 0; i < sizeof stages; ++i) CHECK(bytes[i] == 0xCD);

  // A model-states request with no model dimensions and no count.
  memest_test::ModelStates ms;
  memest_model_states_result out = memest_test::sized<memest_model_states_result>();
  CHECK(memest_model_states(&ms.r, &out) == MEMEST_ERR_MISSING_FIELD);
  CHECK(std::string(memest_last_error_field()) == "model.hidden_size");
}

TEST_CASE("Typed API: values no JSON request can carry are still checked") {
  const memest_test::Pretrain r("llama-3.1-8b", "a100-40gb");
  memest_pretrain_result out = memest_test::sized<memest_pretrain_result>();
  memest_test::Pretrain bad = r;
  bad.r.recompute = 7;
  CHECK(bad.run(out) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(std::string(memest_last_error_field()) == "training.recompute");
  bad = r;
  bad.r.param_bytes = -2;
  CHECK(bad.run(out) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(std::string(memest_last_error_field()) == "training.param_dtype");
  bad = r;
  bad.gpu.memory_bytes = 1.0 / 0.0;
  CHECK(bad.run(out) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(std::string(memest_last_error_field()) == "gpu.memory_gib");
  bad = r;
  bad.gpu.memory_bytes = 1e-307;  // usage would be infinite
  CHECK(bad.run(out) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(std::string(memest_last_error_field()) == "gpu.memory_gib");
  bad = r;
  bad.gpu.page_bytes = 1e-310;
  CHECK(bad.run(out) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(std::string(memest_last_error_field()) == "gpu.page_mib");
  bad = r;
  bad.gpu.peak_bf16_tflops = 0.0 / 0.0;
  CHECK(bad.run(out) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(std::string(memest_last_error_field()) == "gpu.peak_bf16_tflops");
  bad = r;
  bad.gpu.peak_bf16_tflops = -1;
  CHECK(bad.run(out) == MEMEST_ERR_INVALID_ARGUMENT);
  bad = r;
  bad.model.family = 9;
  CHECK(bad.run(out) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(std::string(memest_last_error_field()) == "model.family");
  bad = r;
  bad.r.struct_size = 8;
  CHECK(bad.run(out) == MEMEST_ERR_STRUCT_SIZE);
  CHECK(std::string(memest_last_error_field()) == "request.struct_size");
  bad = r;
  bad.gpu.struct_size = 8;
  CHECK(bad.run(out) == MEMEST_ERR_STRUCT_SIZE);
  CHECK(std::string(memest_last_error_field()) == "gpu.struct_size");
  bad = r;
  bad.model.hidden_size = -4096;
  CHECK(bad.run(out) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(std::string(memest_last_error_field()) == "model.hidden_size");
}
