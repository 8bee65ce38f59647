// C API conventions: versions, init defaults, NULL handling, last-error semantics,
// thread-local errors, stage buffers. Built twice: against the static and the shared library.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "memest/memest.h"
#include "requests.hpp"

using memest_test::sized;

TEST_CASE("Version macros agree with the runtime version") {
  CHECK(memest_version_number() == MEMEST_VERSION_NUMBER);
  CHECK(std::string(memest_version_string()) == MEMEST_VERSION_STRING);
}

TEST_CASE("Init functions fill the documented defaults") {
  memest_pretrain_request r;
  REQUIRE(memest_pretrain_request_init(&r, sizeof r) == MEMEST_OK);
  CHECK(r.struct_size == sizeof r);
  CHECK(r.model == nullptr);
  CHECK(r.gpu == nullptr);
  CHECK(r.tp == 1);
  CHECK(r.sequence_parallel == 1);
  CHECK(r.zero == 1);
  CHECK(r.flash_attention == 1);
  CHECK(r.param_bytes == 2);
  CHECK(r.grad_bytes == 4);
  CHECK(r.optimizer_bytes == 12);
  memest_model_states_request m;
  REQUIRE(memest_model_states_request_init(&m, sizeof m) == MEMEST_OK);
  CHECK(m.zero == 0);
  CHECK(m.param_bytes + m.grad_bytes + m.optimizer_bytes == 18);
}

TEST_CASE("NULL pointers are refused with MEMEST_ERR_NULL_POINTER, never a crash") {
  CHECK(memest_model_init(nullptr, sizeof(memest_model)) == MEMEST_ERR_NULL_POINTER);
  CHECK(memest_model_from_preset(nullptr, nullptr) == MEMEST_ERR_NULL_POINTER);
  CHECK(memest_pretrain(nullptr, nullptr, nullptr, 0, 0) == MEMEST_ERR_NULL_POINTER);
  CHECK(std::string(memest_last_error_field()) == "request");
  memest_test::Pretrain p("llama-3.1-8b", "a100-40gb");
  memest_pretrain_result out = sized<memest_pretrain_result>();
  CHECK(memest_pretrain(&p.r, &out, nullptr, sizeof(memest_stage), 4) ==
        MEMEST_ERR_NULL_POINTER);  // capacity, no buffer
  CHECK(std::string(memest_last_error_field()) == "stages");
  p.r.model = nullptr;  // requests point to their model
  CHECK(memest_pretrain(&p.r, &out, nullptr, 0, 0) == MEMEST_ERR_MISSING_FIELD);
  CHECK(std::string(memest_last_error_field()) == "model");
  CHECK(memest_request_json(nullptr, nullptr) == MEMEST_ERR_NULL_POINTER);
  char* response = nullptr;
  CHECK(memest_request_json(nullptr, &response) == MEMEST_ERR_NULL_POINTER);
  REQUIRE(response != nullptr);  // the error document is the answer
  CHECK(std::strstr(response, "\"null_pointer\"") != nullptr);
  memest_string_free(response);
  memest_string_free(nullptr);
}

TEST_CASE("The last error is set on failure and cleared by the next success") {
  memest_model m = sized<memest_model>();
  CHECK(memest_model_from_preset("nope", &m) == MEMEST_ERR_UNKNOWN_PRESET);
  CHECK(memest_last_error_code() == MEMEST_ERR_UNKNOWN_PRESET);
  CHECK(std::string(memest_last_error()).find("nope") != std::string::npos);
  CHECK(memest_model_from_preset("llama-3.1-8b", &m) == MEMEST_OK);
  CHECK(memest_last_error_code() == MEMEST_OK);
  CHECK(std::string(memest_last_error()).empty());
  CHECK(std::string(memest_last_error_field()).empty());
}

TEST_CASE("Errors are per thread") {
  memest_model m = sized<memest_model>();
  CHECK(memest_model_from_preset("nope", &m) == MEMEST_ERR_UNKNOWN_PRESET);
  std::thread other([] {
    memest_gpu g = sized<memest_gpu>();
    CHECK(memest_gpu_from_preset("h100-80gb", &g) == MEMEST_OK);
    CHECK(memest_last_error_code() == MEMEST_OK);
  });
  other.join();
  CHECK(memest_last_error_code() == MEMEST_ERR_UNKNOWN_PRESET);
}

TEST_CASE("Stage buffers: stage_count tells how many exist — only `capacity` are written") {
  memest_test::Pretrain p("llama-3.1-70b", "h100-80gb");
  p.r.gpus = 64;
  p.r.tp = 8;
  p.r.pp = 8;
  p.r.seq_len = 8192;
  memest_pretrain_result out = memest_test::sized<memest_pretrain_result>();
  REQUIRE(p.run(out) == MEMEST_OK);
  CHECK(out.stage_count == 8);
  memest_stage stages[3];
  std::memset(stages, 0, sizeof stages);
  memest_stage sentinel;
  std::memset(&sentinel, 0x5A, sizeof sentinel);
  memest_stage buffer[4] = {stages[0], stages[1], stages[2], sentinel};
  REQUIRE(p.run(out, buffer, 3) == MEMEST_OK);
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
    memest_model m = sized<memest_model>();
    CHECK(memest_model_from_preset(memest_model_preset_id(i), &m) == MEMEST_OK);
  }
  CHECK(memest_model_preset_id(n) == nullptr);
  CHECK(std::string(memest_status_name(MEMEST_ERR_TYPE)) == "wrong_type");
  CHECK(std::string(memest_status_name(static_cast<memest_status>(99))) == "unknown");
  CHECK(std::string(memest_verdict_name(MEMEST_VERDICT_TIGHT)) == "tight");
}

TEST_CASE("Enumeration names come from one table, with their counts") {
  CHECK(memest_enum_count(MEMEST_ENUM_STATUS) == MEMEST_STATUS_COUNT);
  CHECK(memest_enum_count(MEMEST_ENUM_RECOMPUTE) == MEMEST_RECOMPUTE_COUNT);
  CHECK(memest_enum_count(MEMEST_ENUM_PRUNE_REASON) == MEMEST_PRUNE_REASON_COUNT);
  CHECK(memest_enum_count(MEMEST_ENUM_FINETUNE_METHOD) == MEMEST_FINETUNE_METHOD_COUNT);
  CHECK(memest_enum_count(MEMEST_ENUM_COUNT) == 0);
  CHECK(std::string(memest_enum_name(MEMEST_ENUM_STATUS, MEMEST_ERR_INTERNAL)) == "internal");
  CHECK(std::string(memest_enum_name(MEMEST_ENUM_RECOMPUTE, MEMEST_RECOMPUTE_FULL)) == "full");
  CHECK(std::string(memest_enum_name(MEMEST_ENUM_FINETUNE_METHOD, MEMEST_FINETUNE_DP_TP)) == "dp+tp");
  CHECK(memest_enum_name(MEMEST_ENUM_VERDICT, MEMEST_VERDICT_COUNT) == nullptr);
  CHECK(memest_enum_name(MEMEST_ENUM_VERDICT, -1) == nullptr);
  CHECK(memest_enum_value(MEMEST_ENUM_PRUNE_REASON, "equivalent") == MEMEST_PRUNE_EQUIVALENT);
  CHECK(memest_enum_value(MEMEST_ENUM_PRUNE_REASON, "nope") == -1);
  CHECK(memest_enum_value(MEMEST_ENUM_PRUNE_REASON, nullptr) == -1);
  CHECK(std::string(memest_prune_reason_name(MEMEST_PRUNE_TP_KV_HEADS)) == "tp_kv_heads");
  // Every name, in the order of the header's values (the names the JSON contract documents).
  const char* prune[] = {"oom", "tp_across_nodes", "tp_heads", "tp_kv_heads", "tp_ffn",
                         "gpus_not_divisible", "pp_exceeds_layers", "vpp_needs_pp",
                         "layers_not_divisible", "cp_sequence", "global_batch",
                         "interleaved_microbatches", "equivalent", "framework",
                         "ep_experts", "expert_gpus", "etp_ffn", "moe_needs_sp"};
  static_assert(sizeof prune / sizeof *prune == MEMEST_PRUNE_REASON_COUNT, "every prune reason");
  for (int32_t i = 0; i < MEMEST_PRUNE_REASON_COUNT; ++i) {
    CHECK(std::string(memest_enum_name(MEMEST_ENUM_PRUNE_REASON, i)) == prune[i]);
  }
  const char* status[] = {"ok", "invalid_argument", "missing_field", "wrong_type", "parse_error",
                          "unknown_preset", "unknown_field", "unsupported", "overflow",
                          "struct_size", "null_pointer", "out_of_range", "no_memory", "internal"};
  for (int32_t i = 0; i < MEMEST_STATUS_COUNT; ++i) {
    CHECK(std::string(memest_enum_name(MEMEST_ENUM_STATUS, i)) == status[i]);
  }
  CHECK(memest_verdict_limit(MEMEST_VERDICT_FITS) == 0.8);
  CHECK(memest_verdict_limit(MEMEST_VERDICT_TIGHT) == 1.0);
  CHECK(memest_verdict_limit(MEMEST_VERDICT_OOM) == 0);
}

TEST_CASE("struct_size: a smaller caller's layout is read and written up to its size") {
  // A caller built when memest_model_states_result ended before `verdict` would pass a
  // smaller size; this library refuses sizes below the first released layout...
  memest_test::ModelStates m;
  m.model.num_parameters = 7.5e9;
  memest_model_states_result res = sized<memest_model_states_result>();
  res.struct_size = 8;
  CHECK(memest_model_states(&m.r, &res) == MEMEST_ERR_STRUCT_SIZE);
  CHECK(std::string(memest_last_error_field()) == "result.struct_size");
  // ...and above its own (a caller built against a newer header).
  res.struct_size = sizeof res + 8;
  CHECK(memest_model_states(&m.r, &res) == MEMEST_ERR_STRUCT_SIZE);
  // An _init call writes only the size it is given: a 1.0 caller's memest_model ends at
  // logits_fp32, before the fields 1.1 appended.
  const std::size_t v1 = offsetof(memest_model, logits_fp32) + sizeof(int32_t);
  REQUIRE(v1 < sizeof(memest_model));
  alignas(memest_model) unsigned char bytes[sizeof(memest_model)];
  std::memset(bytes, 0x77, sizeof bytes);
  REQUIRE(memest_model_init(reinterpret_cast<memest_model*>(bytes), static_cast<uint32_t>(v1)) ==
          MEMEST_OK);
  for (std::size_t i = v1; i < sizeof bytes; ++i) CHECK(bytes[i] == 0x77);
  CHECK(reinterpret_cast<memest_model*>(bytes)->struct_size == v1);
  CHECK(reinterpret_cast<memest_model*>(bytes)->norms_per_layer == 2);
}

TEST_CASE("LoRA through the typed API: defaults, the appended fields and the stage's parts") {
  memest_pretrain_request d;
  REQUIRE(memest_pretrain_request_init(&d, sizeof d) == MEMEST_OK);
  // peft's LoraConfig defaults, fp32 adapters, no adapter until one is asked for
  CHECK(d.adapter == MEMEST_ADAPTER_NONE);
  CHECK(d.lora_rank == 8);
  CHECK(d.lora_alpha == 8);
  CHECK(d.lora_dropout == 0);
  CHECK(d.lora_targets == ((1u << MEMEST_LORA_Q_PROJ) | (1u << MEMEST_LORA_V_PROJ)));
  CHECK(d.adapter_bytes == 4);
  CHECK(d.double_quant == 0);
  CHECK(std::string(memest_enum_name(MEMEST_ENUM_ADAPTER, MEMEST_ADAPTER_QLORA)) == "qlora");
  CHECK(std::string(memest_enum_name(MEMEST_ENUM_LORA_TARGET, MEMEST_LORA_EMBED_TOKENS)) ==
        "embed_tokens");
  CHECK(memest_enum_count(MEMEST_ENUM_LORA_TARGET) == MEMEST_LORA_TARGET_COUNT);

  // Llama-3.1-8B, q_proj + v_proj at r 8: q 8(4096 + 4096) = 65536, v 8(4096 + 1024) = 40960,
  // 106496 per layer * 32 = 3407872 trainable; fp32 AdamW moments 8 bytes each = 27262976.
  memest_test::Pretrain p("llama-3.1-8b", "h100-80gb");
  p.r.framework = MEMEST_FRAMEWORK_PYTORCH;
  p.r.optimizer = MEMEST_OPTIMIZER_ADAMW;
  p.r.optimizer_bytes = MEMEST_OPTIMIZER_BYTES_DERIVE;
  p.r.adapter = MEMEST_ADAPTER_LORA;
  memest_pretrain_result out = memest_test::sized<memest_pretrain_result>();
  memest_stage stage;
  std::memset(&stage, 0, sizeof stage);
  REQUIRE(p.run(out, &stage, 1) == MEMEST_OK);
  CHECK(out.trainable_parameters == 3407872.0);
  CHECK(stage.trainable_parameters == 3407872.0);
  CHECK(stage.adapter_weights_bytes == 3407872.0 * 4);
  CHECK(stage.adapter_optimizer_bytes == 27262976.0);
  CHECK(stage.optimizer_bytes == 27262976.0);
  CHECK(stage.quant_metadata_bytes == 0.0);
  // an fp32 base cannot be QLoRA's: refused, naming the field
  p.r.adapter = MEMEST_ADAPTER_QLORA;
  p.r.param_bytes = 4;
  CHECK(p.run(out) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(std::string(memest_last_error_field()) == "training.param_dtype");
}
