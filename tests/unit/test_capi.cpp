// C API conventions: versions, init defaults, NULL handling, last-error semantics,
// thread-local errors, stage buffers. Built twice: against the static and the shared library.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "memest/memest.h"

TEST_CASE("Version macros agree with the runtime version") {
  CHECK(memest_version_number() == MEMEST_VERSION_NUMBER);
  CHECK(std::string(memest_version_string()) == MEMEST_VERSION_STRING);
}

TEST_CASE("Init functions fill the documented defaults") {
  memest_pretrain_request r;
  REQUIRE(memest_pretrain_request_init(&r) == MEMEST_OK);
  CHECK(r.struct_size == sizeof r);
  CHECK(r.tp == 1);
  CHECK(r.sequence_parallel == 1);
  CHECK(r.zero == 1);
  CHECK(r.flash_attention == 1);
  CHECK(r.param_bytes == 2);
  CHECK(r.grad_bytes == 4);
  CHECK(r.optimizer_bytes == 12);
  memest_model_states_request m;
  REQUIRE(memest_model_states_request_init(&m) == MEMEST_OK);
  CHECK(m.zero == 0);
  CHECK(m.param_bytes + m.grad_bytes + m.optimizer_bytes == 18);
}

TEST_CASE("NULL pointers are refused with MEMEST_ERR_NULL_POINTER, never a crash") {
  CHECK(memest_model_init(nullptr) == MEMEST_ERR_NULL_POINTER);
  CHECK(memest_model_from_preset(nullptr, nullptr) == MEMEST_ERR_NULL_POINTER);
  CHECK(memest_pretrain(nullptr, nullptr, nullptr, 0) == MEMEST_ERR_NULL_POINTER);
  CHECK(std::string(memest_last_error_field()) == "request");
  memest_pretrain_request r;
  memest_pretrain_request_init(&r);
  memest_pretrain_result out;
  CHECK(memest_pretrain(&r, &out, nullptr, 4) == MEMEST_ERR_NULL_POINTER);  // capacity, no buffer
  CHECK(memest_request_json(nullptr, nullptr) == MEMEST_ERR_NULL_POINTER);
  char* response = nullptr;
  CHECK(memest_request_json(nullptr, &response) == MEMEST_ERR_NULL_POINTER);
  REQUIRE(response != nullptr);  // the error document is the answer
  CHECK(std::strstr(response, "\"null_pointer\"") != nullptr);
  memest_string_free(response);
  memest_string_free(nullptr);
}

TEST_CASE("The last error is set on failure and cleared by the next success") {
  memest_model m;
  CHECK(memest_model_from_preset("nope", &m) == MEMEST_ERR_UNKNOWN_PRESET);
  CHECK(memest_last_error_code() == MEMEST_ERR_UNKNOWN_PRESET);
  CHECK(std::string(memest_last_error()).find("nope") != std::string::npos);
  CHECK(memest_model_from_preset("llama-3.1-8b", &m) == MEMEST_OK);
  CHECK(memest_last_error_code() == MEMEST_OK);
  CHECK(std::string(memest_last_error()).empty());
  CHECK(std::string(memest_last_error_field()).empty());
}

TEST_CASE("Errors are per thread") {
  memest_model m;
  CHECK(memest_model_from_preset("nope", &m) == MEMEST_ERR_UNKNOWN_PRESET);
  std::thread other([] {
    memest_gpu g;
    CHECK(memest_gpu_from_preset("h100-80gb", &g) == MEMEST_OK);
    CHECK(memest_last_error_code() == MEMEST_OK);
  });
  other.join();
  CHECK(memest_last_error_code() == MEMEST_ERR_UNKNOWN_PRESET);
}

TEST_CASE("Stage buffers: stage_count tells how many exist; only `capacity` are written") {
  memest_pretrain_request r;
  memest_pretrain_request_init(&r);
  REQUIRE(memest_model_from_preset("llama-3.1-70b", &r.model) == MEMEST_OK);
  REQUIRE(memest_gpu_from_preset("h100-80gb", &r.gpu) == MEMEST_OK);
  r.gpus = 64;
  r.tp = 8;
  r.pp = 8;
  r.seq_len = 8192;
  memest_pretrain_result out;
  REQUIRE(memest_pretrain(&r, &out, nullptr, 0) == MEMEST_OK);
  CHECK(out.stage_count == 8);
  memest_stage stages[3];
  std::memset(stages, 0, sizeof stages);
  memest_stage sentinel;
  std::memset(&sentinel, 0x5A, sizeof sentinel);
  memest_stage buffer[4] = {stages[0], stages[1], stages[2], sentinel};
  REQUIRE(memest_pretrain(&r, &out, buffer, 3) == MEMEST_OK);
  CHECK(buffer[0].index == 0);
  CHECK(buffer[2].index == 2);
  CHECK(buffer[0].total_bytes == out.estimate_bytes);  // 8 micro-batches fill the pipeline
  CHECK(std::memcmp(&buffer[3], &sentinel, sizeof sentinel) == 0);
  CHECK(out.peak_bytes >= out.estimate_bytes);
}

TEST_CASE("Preset listing ends with NULL") {
  const uint32_t n = memest_model_preset_count();
  CHECK(n >= 19);
  for (uint32_t i = 0; i < n; ++i) {
    memest_model m;
    CHECK(memest_model_from_preset(memest_model_preset_id(i), &m) == MEMEST_OK);
  }
  CHECK(memest_model_preset_id(n) == nullptr);
  CHECK(std::string(memest_status_name(MEMEST_ERR_TYPE)) == "wrong_type");
  CHECK(std::string(memest_status_name(static_cast<memest_status>(99))) == "unknown");
  CHECK(std::string(memest_verdict_name(MEMEST_VERDICT_TIGHT)) == "tight");
}
