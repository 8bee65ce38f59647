/*
 * ABI freeze test: a C99 caller compiled against the FROZEN 1.0 header (tests/abi/memest_1_0.h;
 * the include path holds tests/abi only, never libmemest/include) and linked against the
 * current shared library. It runs every typed entry point and the JSON entry point and checks
 * real values (the 4D paper's Table 2 cell, the ZeRO paper's 7.5B example, LLMem's Algorithm 1
 * on OPT-1.3B), then the struct-size rules: a caller of the first layout works, a caller whose
 * structs are larger than this library's is refused with MEMEST_ERR_STRUCT_SIZE and the field
 * named.
 *
 * When later versions append fields to the structs (or values to the enums, or functions),
 * this file and memest_1_0.h stay UNCHANGED and this test must keep passing: that is the proof
 * of compatibility for callers built against 1.0. Do not "update" it to a newer header; add a
 * new frozen copy and caller for the next ABI instead.
 *
 * Output: one line per failed check, then "frozen 1.0 caller: N checks, M failed".
 */
#include "memest_1_0.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef MEMEST_STATIC
#error "the frozen caller links the shared library"
#endif

static int checks = 0;
static int failures = 0;

static void check(int ok, const char* what, int line) {
  ++checks;
  if (!ok) {
    ++failures;
    fprintf(stderr, "frozen_caller.c:%d: FAILED %s (last error: %s [%s] %s)\n", line, what,
            memest_status_name(memest_last_error_code()), memest_last_error_field(),
            memest_last_error());
  }
}
#define CHECK(cond) check((cond) ? 1 : 0, #cond, __LINE__)
#define CHECK_OK(call) CHECK((call) == MEMEST_OK)
/* A call that must fail with `status`, naming `field`. */
#define CHECK_FAILS(call, status, field)                                        \
  do {                                                                          \
    const memest_status s_ = (call);                                            \
    check(s_ == (status), #call " == " #status, __LINE__);                      \
    check(strcmp(memest_last_error_field(), (field)) == 0,                      \
          #call " names the field " field, __LINE__);                           \
  } while (0)

static int near(double a, double b, double tolerance) { return fabs(a - b) <= tolerance; }
static int same(double a, double b) { return a == b || fabs(a - b) <= 1e-9 * fabs(b); }

/* The size of each struct's first released (1.0) layout: up to the end of its last field.
 * It may be below sizeof (trailing padding); the library must accept it. */
#define FIRST_LAYOUT(type, last) ((uint32_t)(offsetof(type, last) + sizeof(((type*)0)->last)))

static const double kGiB = 1073741824.0;

/* ---- a minimal reader for the numbers of a JSON response: the first number after `key`
 * (searched after `anchor` when it is not NULL). Enough for memest's own responses. */
static double json_number(const char* doc, const char* anchor, const char* key) {
  char pattern[128];
  const char* p = doc;
  if (anchor) {
    p = strstr(doc, anchor);
    if (!p) return NAN;
  }
  snprintf(pattern, sizeof pattern, "\"%s\":", key);
  p = strstr(p, pattern);
  if (!p) return NAN;
  return strtod(p + strlen(pattern), NULL);
}
static int json_has(const char* doc, const char* text) { return strstr(doc, text) != NULL; }

/* memest_request_json, the status checked; the caller frees the answer. */
static char* request(const char* json, memest_status expected, int line) {
  char* out = NULL;
  const memest_status status = memest_request_json(json, &out);
  check(status == expected, "memest_request_json status", line);
  check(out != NULL, "memest_request_json answered", line);
  if (!out) {
    out = (char*)malloc(1);
    if (!out) exit(2);
    out[0] = '\0';
    return out;
  }
  {
    char* copy = (char*)malloc(strlen(out) + 1);
    if (!copy) exit(2);
    strcpy(copy, out);
    memest_string_free(out);
    return copy;
  }
}

static const char kLlamaConfig[] =
    "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", \"hidden_size\": 4096,"
    " \"intermediate_size\": 14336, \"num_attention_heads\": 32, \"num_hidden_layers\": 32,"
    " \"num_key_value_heads\": 8, \"vocab_size\": 128256, \"max_position_embeddings\": 131072,"
    " \"tie_word_embeddings\": false, \"rope_theta\": 500000.0, \"rms_norm_eps\": 1e-05,"
    " \"hidden_act\": \"silu\", \"torch_dtype\": \"bfloat16\"}";

static memest_model llama8b;
static memest_gpu a100_40;

static void test_versions_and_enums(void) {
  uint32_t i;
  CHECK(memest_version_number() / 10000 == MEMEST_VERSION_MAJOR);
  CHECK(memest_version_number() >= MEMEST_VERSION_NUMBER);
  CHECK(memest_version_string() != NULL && memest_version_string()[0] == '1');

  /* Values never change meaning; later versions may only add some. */
  CHECK(memest_enum_count(MEMEST_ENUM_STATUS) >= MEMEST_STATUS_COUNT);
  CHECK(memest_enum_count(MEMEST_ENUM_FAMILY) >= 2);
  CHECK(memest_enum_count(MEMEST_ENUM_VERDICT) >= MEMEST_VERDICT_COUNT);
  CHECK(memest_enum_count(MEMEST_ENUM_RECOMPUTE) >= MEMEST_RECOMPUTE_COUNT);
  CHECK(memest_enum_count(MEMEST_ENUM_ACTIVATION_MODEL) >= MEMEST_ACTIVATIONS_COUNT);
  CHECK(memest_enum_count(MEMEST_ENUM_PRUNE_REASON) >= MEMEST_PRUNE_REASON_COUNT);
  CHECK(memest_enum_count(MEMEST_ENUM_FINETUNE_METHOD) >= MEMEST_FINETUNE_METHOD_COUNT);
  CHECK(memest_enum_count((memest_enum)1000) == 0);
  CHECK(strcmp(memest_enum_name(MEMEST_ENUM_STATUS, MEMEST_ERR_STRUCT_SIZE), "struct_size") == 0);
  CHECK(strcmp(memest_enum_name(MEMEST_ENUM_FAMILY, MEMEST_FAMILY_GPT), "gpt") == 0);
  CHECK(strcmp(memest_enum_name(MEMEST_ENUM_RECOMPUTE, MEMEST_RECOMPUTE_SELECTIVE), "selective") == 0);
  CHECK(strcmp(memest_enum_name(MEMEST_ENUM_PRUNE_REASON, MEMEST_PRUNE_EQUIVALENT), "equivalent") == 0);
  CHECK(strcmp(memest_enum_name(MEMEST_ENUM_FINETUNE_METHOD, MEMEST_FINETUNE_DP_TP), "dp+tp") == 0);
  CHECK(memest_enum_name(MEMEST_ENUM_VERDICT, -1) == NULL);
  CHECK(memest_enum_value(MEMEST_ENUM_RECOMPUTE, "full") == MEMEST_RECOMPUTE_FULL);
  CHECK(memest_enum_value(MEMEST_ENUM_ACTIVATION_MODEL, "gpt") == MEMEST_ACTIVATIONS_GPT);
  CHECK(memest_enum_value(MEMEST_ENUM_VERDICT, "maybe") == -1);
  CHECK(memest_enum_value(MEMEST_ENUM_VERDICT, NULL) == -1);
  CHECK(strcmp(memest_status_name(MEMEST_ERR_INTERNAL), "internal") == 0);
  CHECK(strcmp(memest_status_name((memest_status)-1), "unknown") == 0);
  CHECK(strcmp(memest_verdict_name(MEMEST_VERDICT_TIGHT), "tight") == 0);
  CHECK(strcmp(memest_prune_reason_name(MEMEST_PRUNE_GLOBAL_BATCH), "global_batch") == 0);
  CHECK(strcmp(memest_finetune_method_name(MEMEST_FINETUNE_CPU_OFFLOAD), "cpu_offload") == 0);
  CHECK(memest_verdict_limit(MEMEST_VERDICT_FITS) == 0.8);
  CHECK(memest_verdict_limit(MEMEST_VERDICT_TIGHT) == 1.0);
  CHECK(memest_verdict_limit(MEMEST_VERDICT_OOM) == 0.0);
  /* every name the library lists maps back to its value */
  for (i = 0; i < memest_enum_count(MEMEST_ENUM_PRUNE_REASON); ++i) {
    CHECK(memest_enum_value(MEMEST_ENUM_PRUNE_REASON,
                            memest_enum_name(MEMEST_ENUM_PRUNE_REASON, (int32_t)i)) == (int32_t)i);
  }
}

static void test_models_and_gpus(void) {
  memest_model from_config;
  memest_param_count count;
  uint32_t i;
  int found = 0;

  CHECK(memest_model_preset_count() >= 22);
  CHECK(memest_gpu_preset_count() >= 12);
  CHECK(memest_model_preset_id(memest_model_preset_count()) == NULL);
  CHECK(memest_gpu_preset_id(memest_gpu_preset_count()) == NULL);
  for (i = 0; i < memest_model_preset_count(); ++i) {
    found += strcmp(memest_model_preset_id(i), "llama-3.1-8b") == 0;
  }
  CHECK(found == 1);

  CHECK_OK(memest_model_init(&llama8b, sizeof llama8b));
  CHECK(llama8b.struct_size == sizeof llama8b);
  CHECK(llama8b.family == MEMEST_FAMILY_LLAMA && llama8b.hidden_size == 0);
  CHECK_OK(memest_model_from_preset("llama-3.1-8b", &llama8b));
  CHECK(strcmp(llama8b.name, "Llama-3.1-8B") == 0);
  CHECK(llama8b.hidden_size == 4096 && llama8b.num_hidden_layers == 32);
  CHECK(llama8b.num_attention_heads == 32 && llama8b.num_key_value_heads == 8);
  CHECK(llama8b.intermediate_size == 14336 && llama8b.vocab_size == 128256);
  CHECK(llama8b.gated_mlp == 1 && llama8b.tie_word_embeddings == 0);
  CHECK_OK(memest_model_validate(&llama8b));

  count.struct_size = sizeof count;
  CHECK_OK(memest_model_parameter_count(&llama8b, &count));
  CHECK(count.total == 8030261248.0);
  CHECK(count.embedding == 525336576.0);
  CHECK(count.per_layer == 218112000.0);
  CHECK(count.lm_head == 525340672.0);

  /* The same model from its Hugging Face config.json. */
  from_config.struct_size = sizeof from_config;
  CHECK_OK(memest_model_from_config_json(kLlamaConfig, &from_config));
  CHECK(from_config.hidden_size == 4096 && from_config.num_key_value_heads == 8);
  memset(&count, 0, sizeof count);
  count.struct_size = sizeof count;
  CHECK_OK(memest_model_parameter_count(&from_config, &count));
  CHECK(count.total == 8030261248.0);

  CHECK_OK(memest_gpu_init(&a100_40, sizeof a100_40));
  CHECK(a100_40.gpus_per_node == 8 && a100_40.page_bytes == 2097152.0);
  CHECK_OK(memest_gpu_from_preset("a100-40gb", &a100_40));
  /* 1.6 changed the preset's data, not the layout: the usable 39.39 GiB PyTorch reports */
  CHECK(a100_40.memory_bytes == 39.39 * kGiB);
  CHECK(a100_40.peak_bf16_tflops == 312.0);
  CHECK(a100_40.gpus_per_node == 8);

  CHECK_FAILS(memest_model_from_preset("llama-9", &from_config), MEMEST_ERR_UNKNOWN_PRESET, "model");
  CHECK_FAILS(memest_gpu_from_preset("a100", &a100_40), MEMEST_ERR_UNKNOWN_PRESET, "gpu");
  CHECK(a100_40.memory_bytes == 39.39 * kGiB); /* untouched by the failure */
}

static void test_model_states(void) {
  memest_model bare;
  memest_gpu a100_80;
  memest_model_states_request r;
  memest_model_states_result out;
  char* json;

  /* The ZeRO paper's example: 7.5B parameters, 64 GPUs, P_os: 31.4 GB per device. */
  CHECK_OK(memest_model_init(&bare, sizeof bare));
  bare.num_parameters = 7.5e9;
  a100_80.struct_size = sizeof a100_80;
  CHECK_OK(memest_gpu_from_preset("a100-80gb", &a100_80));
  CHECK_OK(memest_model_states_request_init(&r, sizeof r));
  CHECK(r.gpus == 1 && r.zero == 0 && r.param_bytes + r.grad_bytes + r.optimizer_bytes == 18);
  r.model = &bare;
  r.gpu = &a100_80;
  r.gpus = 64;
  r.zero = 1;
  r.grad_bytes = 2;
  out.struct_size = sizeof out;
  CHECK_OK(memest_model_states(&r, &out));
  CHECK(out.num_parameters == 7.5e9);
  CHECK(out.weights_bytes == 15e9 && out.gradients_bytes == 15e9);
  CHECK(out.optimizer_bytes == 1406250000.0);
  CHECK(out.estimate_bytes == 31406250000.0);
  CHECK(out.capacity_bytes == 79.15 * kGiB); /* usable capacity since 1.6 */
  CHECK(out.verdict == MEMEST_VERDICT_FITS);

  json = request("{\"mode\": \"model_states\", \"model\": {\"num_parameters\": 7.5e9}, \"gpu\": "
                 "\"a100-80gb\", \"parallel\": {\"gpus\": 64, \"zero\": 1}, \"training\": "
                 "{\"grad_dtype\": \"fp16\"}}",
                 MEMEST_OK, __LINE__);
  CHECK(same(json_number(json, NULL, "estimate_bytes"), out.estimate_bytes));
  CHECK(same(json_number(json, "\"weights_bytes\"", "optimizer_bytes"), out.optimizer_bytes));
  CHECK(json_has(json, "\"verdict\": \"fits\""));
  free(json);
}

/* The 4D paper's Table 2 cell: Llama-3.1-8B on 8 x A100-40GB, (tp, cp, pp, dp) = (4, 1, 2, 1),
 * seq 8192, micro-batch 1, global batch 1024: 27.20 GiB (the README's default example). */
static void table2_request(memest_pretrain_request* r) {
  CHECK_OK(memest_pretrain_request_init(r, sizeof *r));
  r->model = &llama8b;
  r->gpu = &a100_40;
  r->gpus = 8;
  r->tp = 4;
  r->pp = 2;
  r->seq_len = 8192;
  r->micro_batch = 1;
  r->global_batch = 1024;
}
static const char kTable2Json[] =
    "{\"mode\": \"pretrain\", \"model\": \"llama-3.1-8b\", \"gpu\": \"a100-40gb\", \"parallel\": "
    "{\"gpus\": 8, \"tp\": 4, \"pp\": 2}, \"training\": {\"seq_len\": 8192, \"micro_batch\": 1, "
    "\"global_batch\": 1024}}";

static double table2_estimate = 0;

static void test_pretrain(void) {
  memest_pretrain_request r;
  memest_pretrain_result out;
  memest_stage stages[4];
  char* json;

  CHECK_OK(memest_pretrain_request_init(&r, sizeof r));
  CHECK(r.gpus == 1 && r.tp == 1 && r.cp == 1 && r.pp == 1 && r.vpp == 1);
  CHECK(r.sequence_parallel == 1 && r.zero == 1 && r.seq_len == 2048 && r.micro_batch == 1);
  CHECK(r.flash_attention == 1 && r.recompute == MEMEST_RECOMPUTE_NONE);
  CHECK(r.param_bytes == 2 && r.grad_bytes == 4 && r.optimizer_bytes == 12);
  CHECK(r.uneven_pipeline == 0 && r.model == NULL && r.gpu == NULL);

  table2_request(&r);
  out.struct_size = sizeof out;
  memset(stages, 0xA5, sizeof stages);
  CHECK_OK(memest_pretrain(&r, &out, stages, sizeof stages[0], 4));
  table2_estimate = out.estimate_bytes;
  CHECK(near(out.estimate_bytes / kGiB, 27.20, 0.005));
  CHECK(out.num_parameters == 8030261248.0);
  CHECK(out.dp == 1 && out.num_microbatches == 1024);
  CHECK(out.stage_count == 2);
  CHECK(out.capacity_bytes == 39.39 * kGiB);
  CHECK(near(out.usage_fraction, out.estimate_bytes / (39.39 * kGiB), 1e-12));
  CHECK(out.verdict == MEMEST_VERDICT_FITS);
  CHECK(out.activation_model == MEMEST_ACTIVATIONS_LLAMA);
  CHECK(out.peak_bytes > out.estimate_bytes && out.peak_bytes < 40 * kGiB);
  CHECK(out.oom_predicted == 0 && out.peak_stage == 0);
  CHECK(out.paper_peak_bytes == out.estimate_bytes);
  CHECK(stages[0].struct_size == sizeof stages[0] && stages[1].struct_size == sizeof stages[1]);
  CHECK(stages[0].index == 0 && stages[1].index == 1);
  CHECK(stages[0].layers == 16 && stages[1].layers == 16);
  CHECK(stages[0].microbatches_in_flight == 2 && stages[1].microbatches_in_flight == 1);
  CHECK(stages[0].total_bytes == out.estimate_bytes);
  CHECK(near(stages[1].total_bytes / kGiB, 22.96, 0.005));
  CHECK(same(stages[0].weights_bytes + stages[0].gradients_bytes + stages[0].optimizer_bytes +
                 stages[0].activations_bytes,
             stages[0].total_bytes));
  CHECK(same(stages[0].total_bytes + stages[0].overhead_bytes, stages[0].peak_bytes));
  CHECK(stages[0].peak_bytes == out.peak_bytes);
  /* stages 2 and 3 are not written (pp = 2) */
  CHECK(((unsigned char*)&stages[2])[0] == 0xA5 && ((unsigned char*)&stages[3])[sizeof stages[3] - 1] == 0xA5);

  /* The JSON entry point answers the same request with the same numbers. */
  json = request(kTable2Json, MEMEST_OK, __LINE__);
  CHECK(same(json_number(json, NULL, "estimate_bytes"), out.estimate_bytes));
  CHECK(same(json_number(json, NULL, "peak_bytes"), out.peak_bytes));
  CHECK(same(json_number(json, NULL, "usage_fraction"), out.usage_fraction));
  CHECK(same(json_number(json, "\"stages\"", "total_bytes"), stages[0].total_bytes));
  CHECK(same(json_number(json, "\"stage\": 1", "activations_bytes"), stages[1].activations_bytes));
  CHECK(json_number(json, NULL, "num_microbatches") == 1024);
  free(json);

  /* An invalid layout: the field named, the result untouched. */
  table2_request(&r);
  r.tp = 3;
  memset(&out, 0xA5, sizeof out);
  out.struct_size = sizeof out;
  CHECK_FAILS(memest_pretrain(&r, &out, stages, sizeof stages[0], 4), MEMEST_ERR_INVALID_ARGUMENT,
              "parallel.tp");
  CHECK(((unsigned char*)&out)[sizeof out - 1] == 0xA5 && ((unsigned char*)&out.estimate_bytes)[0] == 0xA5);
  json = request("{\"mode\": \"pretrain\", \"model\": \"llama-3.1-8b\", \"gpu\": \"a100-40gb\", "
                 "\"parallel\": {\"gpus\": 8, \"tp\": 3}}",
                 MEMEST_ERR_INVALID_ARGUMENT, __LINE__);
  CHECK(json_has(json, "\"ok\": false") && json_has(json, "\"field\": \"parallel.tp\"") &&
        json_has(json, "\"code\": \"invalid_argument\""));
  free(json);
}

static const char kSearchJson[] =
    "{\"mode\": \"search\", \"model\": \"llama-3.1-8b\", \"gpu\": \"a100-40gb\", \"parallel\": "
    "{\"gpus\": 64}, \"training\": {\"seq_len\": 8192, \"global_batch\": 1024}, \"search\": "
    "{\"top\": 5}}";

static void test_search(void) {
  memest_pretrain_request base;
  memest_search_request s;
  memest_search_result out;
  memest_search_entry entries[5];
  memest_layout shortlist[2];
  uint64_t pruned[MEMEST_PRUNE_REASON_COUNT + 1];
  uint64_t sum = 0;
  uint32_t i;
  char* json;

  CHECK_OK(memest_search_request_init(&s, sizeof s));
  CHECK(s.base == NULL && s.max_vpp == 4 && s.tp_within_node == 1 && s.uneven_pipeline == 1);
  CHECK(s.recompute_mask == 7u && s.zero_mask == 2u && s.layouts == NULL && s.layout_count == 0);

  /* The whole space for Llama-3.1-8B on 64 A100-40GB, top 5, every prune count. */
  CHECK_OK(memest_pretrain_request_init(&base, sizeof base));
  base.model = &llama8b;
  base.gpu = &a100_40;
  base.gpus = 64;
  base.seq_len = 8192;
  base.global_batch = 1024;
  s.base = &base;
  out.struct_size = sizeof out;
  pruned[MEMEST_PRUNE_REASON_COUNT] = 12345;
  CHECK_OK(memest_search(&s, &out, entries, sizeof entries[0], 5, pruned, MEMEST_PRUNE_REASON_COUNT));
  CHECK(out.count == 5 && out.ranked >= 5);
  CHECK(out.candidates == out.evaluated + out.pruned_total - pruned[MEMEST_PRUNE_OOM]);
  for (i = 0; i < MEMEST_PRUNE_REASON_COUNT; ++i) sum += pruned[i];
  CHECK(sum == out.pruned_total);
  CHECK(pruned[MEMEST_PRUNE_REASON_COUNT] == 12345); /* past the capacity: untouched */
  CHECK(pruned[MEMEST_PRUNE_TP_ACROSS_NODES] > 0 && pruned[MEMEST_PRUNE_EQUIVALENT] > 0);
  for (i = 0; i < 5; ++i) {
    CHECK(entries[i].struct_size == sizeof entries[i]);
    CHECK(entries[i].dp * entries[i].tp * entries[i].cp * entries[i].pp == 64);
    CHECK(entries[i].oom_predicted == 0 && entries[i].peak_bytes <= 40 * kGiB);
    CHECK(entries[i].tp <= 8);
    CHECK(entries[i].num_microbatches * entries[i].micro_batch * entries[i].dp == 1024);
    if (i > 0) CHECK(entries[i].tflops_per_gpu <= entries[i - 1].tflops_per_gpu);
  }
  CHECK(entries[0].tflops_per_gpu > 0 && entries[0].tokens_per_s > 0 && entries[0].step_seconds > 0);
  CHECK(same(entries[0].tokens_per_s * entries[0].step_seconds, 1024.0 * 8192));

  json = request(kSearchJson, MEMEST_OK, __LINE__);
  CHECK(json_number(json, NULL, "candidates") == (double)out.candidates);
  CHECK(json_number(json, NULL, "evaluated") == (double)out.evaluated);
  CHECK(json_number(json, NULL, "ranked") == (double)out.ranked);
  for (i = 0; i < MEMEST_PRUNE_REASON_COUNT; ++i) {
    CHECK(json_number(json, "\"pruned\"", memest_prune_reason_name((memest_prune_reason)i)) ==
          (double)pruned[i]);
  }
  CHECK(json_number(json, "\"rank\": 1,", "tp") == (double)entries[0].tp);
  CHECK(json_number(json, "\"rank\": 1,", "pp") == (double)entries[0].pp);
  CHECK(json_number(json, "\"rank\": 1,", "micro_batch") == (double)entries[0].micro_batch);
  CHECK(same(json_number(json, "\"rank\": 1,", "estimate_bytes"), entries[0].estimate_bytes));
  CHECK(same(json_number(json, "\"rank\": 1,", "tflops_per_gpu"), entries[0].tflops_per_gpu));
  CHECK(same(json_number(json, "\"rank\": 5,", "peak_bytes"), entries[4].peak_bytes));
  free(json);

  /* An explicit shortlist of 2 layouts on 8 GPUs: the Table 2 cell, and tp 2 x pp 2 with full
   * recomputation. The Table 2 layout's estimate is the pretraining mode's, exactly. */
  CHECK_OK(memest_layout_init(&shortlist[0], sizeof shortlist[0]));
  CHECK(shortlist[0].tp == 1 && shortlist[0].micro_batch == 1 && shortlist[0].zero == 1 &&
        shortlist[0].recompute == MEMEST_RECOMPUTE_NONE);
  CHECK_OK(memest_layout_init(&shortlist[1], sizeof shortlist[1]));
  shortlist[0].tp = 4;
  shortlist[0].pp = 2;
  shortlist[1].tp = 2;
  shortlist[1].pp = 2;
  shortlist[1].recompute = MEMEST_RECOMPUTE_FULL;
  base.gpus = 8;
  s.layouts = shortlist;
  s.layout_count = 2;
  memset(entries, 0xA5, sizeof entries);
  CHECK_OK(memest_search(&s, &out, entries, sizeof entries[0], 5, NULL, 0));
  CHECK(out.candidates == 2 && out.evaluated == 2 && out.ranked == 2 && out.count == 2);
  CHECK(out.pruned_total == 0);
  for (i = 0; i < 2; ++i) {
    if (entries[i].tp == 4) {
      CHECK(entries[i].pp == 2 && entries[i].dp == 1 && entries[i].num_microbatches == 1024);
      CHECK(entries[i].estimate_bytes == table2_estimate);
      CHECK(entries[i].verdict == MEMEST_VERDICT_FITS);
    } else {
      CHECK(entries[i].tp == 2 && entries[i].pp == 2 && entries[i].dp == 2);
      CHECK(entries[i].recompute == MEMEST_RECOMPUTE_FULL && entries[i].num_microbatches == 512);
      CHECK(entries[i].estimate_bytes < table2_estimate);
    }
  }
  CHECK(entries[0].tp != entries[1].tp);
  CHECK(((unsigned char*)&entries[2])[0] == 0xA5);
  json = request("{\"mode\": \"search\", \"model\": \"llama-3.1-8b\", \"gpu\": \"a100-40gb\", "
                 "\"parallel\": {\"gpus\": 8}, \"training\": {\"seq_len\": 8192, \"global_batch\": "
                 "1024}, \"search\": {\"layouts\": [{\"tp\": 4, \"pp\": 2}, {\"tp\": 2, \"pp\": 2, "
                 "\"recompute\": \"full\"}]}}",
                 MEMEST_OK, __LINE__);
  CHECK(json_number(json, NULL, "ranked") == 2);
  CHECK(json_number(json, "\"rank\": 1,", "tp") == (double)entries[0].tp);
  CHECK(same(json_number(json, "\"rank\": 1,", "tflops_per_gpu"), entries[0].tflops_per_gpu));
  CHECK(same(json_number(json, "\"rank\": 2,", "estimate_bytes"), entries[1].estimate_bytes));
  free(json);

  /* The second layout invalid: refused whole, its index named. */
  shortlist[1].tp = 0;
  CHECK_FAILS(memest_search(&s, &out, entries, sizeof entries[0], 5, NULL, 0),
              MEMEST_ERR_INVALID_ARGUMENT, "search.layouts[1].tp");
}

static const char kFinetuneJson[] =
    "{\"mode\": \"finetune\", \"model\": \"opt-1.3b\", \"gpu\": \"v100-16gb\", \"parallel\": "
    "{\"gpus\": 4}, \"finetune\": {\"method\": \"zero3\", \"batch\": 45}}";

static void test_finetune(void) {
  memest_model opt;
  memest_gpu v100;
  memest_finetune_request r;
  memest_finetune_result out;
  memest_finetune_choice choice;
  memest_finetune_option options[5];
  char* json;

  opt.struct_size = sizeof opt;
  v100.struct_size = sizeof v100;
  CHECK_OK(memest_model_from_preset("opt-1.3b", &opt));
  CHECK_OK(memest_gpu_from_preset("v100-16gb", &v100));
  /* 1.6: presets hold the usable capacity (an estimate for the V100 16GB); the example below
     is worked at the 16 GiB LLMem's paper gives its V100s */
  CHECK(v100.memory_bytes == 15.82 * kGiB);
  v100.memory_bytes = 16 * kGiB;
  CHECK_OK(memest_finetune_request_init(&r, sizeof r));
  CHECK(r.gpus == 1 && r.method == MEMEST_FINETUNE_CDP && r.batch == 1 && r.seq_len == 512);
  CHECK(r.gradient_checkpointing == 1 && r.flash_attention == 0 && r.param_bytes == 2);
  CHECK(r.base_bytes < 0 && r.page_bytes == 0 && r.chunk_bytes == 0);
  r.model = &opt;
  r.gpu = &v100;
  r.gpus = 4;
  r.method = MEMEST_FINETUNE_ZERO3;
  r.batch = 45;
  out.struct_size = sizeof out;
  CHECK_OK(memest_finetune(&r, &out));
  CHECK(out.method == MEMEST_FINETUNE_ZERO3 && out.tp == 1 && out.dp == 4 && out.batch == 45);
  CHECK(out.peak_bytes <= out.capacity_bytes && out.verdict == MEMEST_VERDICT_FITS);
  CHECK(out.capacity_bytes == 16 * kGiB);
  CHECK(out.parts.base == 1073741824.0 && out.per_gpu.base == out.parts.base);
  CHECK(same(out.per_gpu.base + out.per_gpu.params + out.per_gpu.optimizer + out.per_gpu.outputs +
                 out.per_gpu.lm_head + out.per_gpu.backward_buffer,
             out.peak_bytes));
  CHECK(same(out.per_gpu.params_fp16 + out.per_gpu.params_fp32, out.per_gpu.params));
  CHECK(same(out.usage_fraction, out.peak_bytes / out.capacity_bytes));
  CHECK(out.chunk_elements > 0 && out.chunk_count > 0);

  json = request(kFinetuneJson, MEMEST_OK, __LINE__);
  CHECK(same(json_number(json, NULL, "estimate_bytes"), out.peak_bytes));
  CHECK(same(json_number(json, "\"parts\"", "m_os"), out.parts.optimizer));
  CHECK(same(json_number(json, "\"per_gpu\"", "m_p32"), out.per_gpu.params_fp32));
  CHECK(same(json_number(json, NULL, "chunk_elements"), out.chunk_elements));
  free(json);

  /* LLMem Algorithm 1 with options: ZeRO-3 at batch 45 (score 180) on 4 V100-16GB. */
  r.method = MEMEST_FINETUNE_AUTO;
  choice.struct_size = sizeof choice;
  memset(options, 0xA5, sizeof options);
  CHECK_OK(memest_finetune_select(&r, &choice, options, sizeof options[0], 5));
  CHECK(choice.selected == MEMEST_FINETUNE_ZERO3 && choice.batch == 45 && choice.option_count == 4);
  CHECK(options[0].method == MEMEST_FINETUNE_CDP && options[0].max_batch == 0 && options[0].score == 0);
  CHECK(options[1].method == MEMEST_FINETUNE_ZERO3 && options[1].max_batch == 45 && options[1].score == 180);
  CHECK(same(options[1].peak_bytes, out.peak_bytes));
  CHECK(options[2].method == MEMEST_FINETUNE_TP && options[2].tp == 4 && options[2].max_batch == 46);
  CHECK(options[3].method == MEMEST_FINETUNE_DP_TP && options[3].tp == 2 && options[3].dp == 2 &&
        options[3].score == 92);
  CHECK(options[0].applicable == 1 && options[3].applicable == 1);
  CHECK(options[3].struct_size == sizeof options[3]);
  CHECK(((unsigned char*)&options[4])[0] == 0xA5);
  json = request("{\"mode\": \"finetune\", \"model\": \"opt-1.3b\", \"gpu\": {\"preset\": \"v100-16gb\", \"memory_gib\": 16}, "
                 "\"parallel\": {\"gpus\": 4}, \"finetune\": {\"method\": \"auto\"}}",
                 MEMEST_OK, __LINE__);
  CHECK(json_has(json, "\"selected\": \"zero3\""));
  CHECK(json_number(json, NULL, "max_batch") == (double)choice.batch);
  CHECK(same(json_number(json, "\"method\": \"dp+tp\"", "peak_bytes"), options[3].peak_bytes));
  free(json);

  /* AUTO is refused by the one-method entry point, naming the field. */
  CHECK_FAILS(memest_finetune(&r, &out), MEMEST_ERR_INVALID_ARGUMENT, "finetune.method");
}

/* A caller of the first layout: every struct_size is the size of its 1.0 layout (up to the end
 * of its last field, below sizeof when the struct has trailing padding). The library reads and
 * writes only that many bytes. */
static void test_first_layout_caller(void) {
  memest_model model;
  memest_gpu gpu;
  memest_param_count count;
  memest_pretrain_request r;
  memest_pretrain_result out;
  memest_stage stages[2];
  memest_model_states_request ms;
  memest_model_states_result ms_out;
  memest_search_request s;
  memest_search_result s_out;
  memest_search_entry entries[2];
  memest_layout shortlist[1];
  memest_finetune_request f;
  memest_finetune_result f_out;
  memest_finetune_choice choice;
  memest_finetune_option options[4];
  const uint32_t model_size = FIRST_LAYOUT(memest_model, logits_fp32);
  const uint32_t gpu_size = FIRST_LAYOUT(memest_gpu, pipeline_stage_seconds);
  const uint32_t result_size = FIRST_LAYOUT(memest_pretrain_result, paper_peak_bytes);

  memset(&model, 0xA5, sizeof model);
  CHECK_OK(memest_model_init(&model, model_size));
  CHECK(model.struct_size == model_size);
  CHECK_OK(memest_model_from_preset("llama-3.1-8b", &model));
  CHECK(model.hidden_size == 4096);
  if (model_size < sizeof model) CHECK(((unsigned char*)&model)[sizeof model - 1] == 0xA5);
  memset(&gpu, 0xA5, sizeof gpu);
  gpu.struct_size = gpu_size;
  CHECK_OK(memest_gpu_from_preset("a100-40gb", &gpu));
  CHECK(gpu.memory_bytes == 39.39 * kGiB);
  count.struct_size = FIRST_LAYOUT(memest_param_count, lm_head);
  CHECK_OK(memest_model_parameter_count(&model, &count));
  CHECK(count.total == 8030261248.0);

  CHECK_OK(memest_pretrain_request_init(&r, FIRST_LAYOUT(memest_pretrain_request, uneven_pipeline)));
  r.model = &model;
  r.gpu = &gpu;
  r.gpus = 8, r.tp = 4, r.pp = 2, r.seq_len = 8192, r.global_batch = 1024;
  memset(&out, 0xA5, sizeof out);
  out.struct_size = result_size;
  memset(stages, 0xA5, sizeof stages);
  CHECK_OK(memest_pretrain(&r, &out, stages, FIRST_LAYOUT(memest_stage, peak_bytes), 2));
  CHECK(out.estimate_bytes == table2_estimate && out.stage_count == 2);
  CHECK(out.struct_size == result_size);
  if (result_size < sizeof out) CHECK(((unsigned char*)&out)[sizeof out - 1] == 0xA5);
  /* elements FIRST_LAYOUT(memest_stage) bytes apart */
  {
    const memest_stage* second =
        (const memest_stage*)((const char*)stages + FIRST_LAYOUT(memest_stage, peak_bytes));
    CHECK(stages[0].layers == 16 && stages[0].total_bytes == table2_estimate);
    CHECK(second->index == 1 && second->layers == 16);
  }

  CHECK_OK(memest_model_states_request_init(&ms, FIRST_LAYOUT(memest_model_states_request, optimizer_bytes)));
  ms.model = &model;
  ms.gpus = 8;
  ms_out.struct_size = FIRST_LAYOUT(memest_model_states_result, verdict);
  CHECK_OK(memest_model_states(&ms, &ms_out));
  CHECK(ms_out.estimate_bytes == 18 * 8030261248.0 && ms_out.verdict == MEMEST_VERDICT_UNKNOWN);

  CHECK_OK(memest_search_request_init(&s, FIRST_LAYOUT(memest_search_request, uneven_pipeline)));
  CHECK_OK(memest_layout_init(&shortlist[0], FIRST_LAYOUT(memest_layout, zero)));
  shortlist[0].tp = 4;
  shortlist[0].pp = 2;
  s.base = &r;
  s.layouts = shortlist;
  s.layout_count = 1;
  s_out.struct_size = FIRST_LAYOUT(memest_search_result, ranked);
  CHECK_OK(memest_search(&s, &s_out, entries, FIRST_LAYOUT(memest_search_entry, last_stage_layers), 2,
                         NULL, 0));
  CHECK(s_out.count == 1 && entries[0].estimate_bytes == table2_estimate);

  CHECK_OK(memest_finetune_request_init(&f, FIRST_LAYOUT(memest_finetune_request, chunk_bytes)));
  CHECK_OK(memest_model_from_preset("opt-1.3b", &model));
  gpu.struct_size = gpu_size;
  CHECK_OK(memest_gpu_from_preset("v100-16gb", &gpu));
  gpu.memory_bytes = 16 * kGiB; /* as above */
  f.model = &model;
  f.gpu = &gpu;
  f.gpus = 4;
  f.method = MEMEST_FINETUNE_ZERO3;
  f.batch = 45;
  f_out.struct_size = FIRST_LAYOUT(memest_finetune_result, chunk_waste_bytes);
  CHECK_OK(memest_finetune(&f, &f_out));
  CHECK(f_out.verdict == MEMEST_VERDICT_FITS && f_out.batch == 45);
  f.method = MEMEST_FINETUNE_AUTO;
  choice.struct_size = FIRST_LAYOUT(memest_finetune_choice, option_count);
  CHECK_OK(memest_finetune_select(&f, &choice, options, FIRST_LAYOUT(memest_finetune_option, peak_bytes), 4));
  CHECK(choice.selected == MEMEST_FINETUNE_ZERO3 && choice.batch == 45);
}

/* A caller built against a NEWER header (structs larger than any layout this library knows;
 * NEWER is far beyond what later 1.x versions append, so this keeps holding as they grow):
 * every entry point refuses it with MEMEST_ERR_STRUCT_SIZE and names the field. */
#define NEWER 65536
static void test_newer_caller_refused(void) {
  /* room for the extra bytes the "newer" caller claims */
  union {
    memest_model model;
    unsigned char room[sizeof(memest_model) + NEWER];
  } m;
  union {
    memest_gpu gpu;
    unsigned char room[sizeof(memest_gpu) + NEWER];
  } g;
  union {
    memest_pretrain_request r;
    unsigned char room[sizeof(memest_pretrain_request) + NEWER];
  } pr;
  union {
    memest_pretrain_result r;
    unsigned char room[sizeof(memest_pretrain_result) + NEWER];
  } pout;
  union {
    memest_param_count c;
    unsigned char room[sizeof(memest_param_count) + NEWER];
  } pc;
  memest_pretrain_request r;
  memest_pretrain_result out;
  memest_stage stages[2];
  memest_model_states_request ms;
  memest_model_states_result ms_out;
  memest_search_request s;
  memest_search_result s_out;
  memest_search_entry entries[2];
  memest_layout shortlist[2];
  memest_finetune_request f;
  memest_finetune_result f_out;
  memest_finetune_choice choice;
  memest_finetune_option options[4];
  memest_model model;
  memest_gpu gpu;

  model.struct_size = sizeof model;
  gpu.struct_size = sizeof gpu;
  CHECK_OK(memest_model_from_preset("llama-3.1-8b", &model));
  CHECK_OK(memest_gpu_from_preset("a100-40gb", &gpu));

  /* _init functions */
  CHECK_FAILS(memest_model_init(&m.model, sizeof(memest_model) + NEWER), MEMEST_ERR_STRUCT_SIZE, "model.struct_size");
  CHECK_FAILS(memest_gpu_init(&g.gpu, sizeof(memest_gpu) + NEWER), MEMEST_ERR_STRUCT_SIZE, "gpu.struct_size");
  CHECK_FAILS(memest_pretrain_request_init(&pr.r, sizeof(memest_pretrain_request) + NEWER),
              MEMEST_ERR_STRUCT_SIZE, "request.struct_size");
  {
    union {
      memest_layout l;
      unsigned char room[sizeof(memest_layout) + NEWER];
    } lay;
    union {
      memest_search_request s;
      unsigned char room[sizeof(memest_search_request) + NEWER];
    } sr;
    union {
      memest_finetune_request f;
      unsigned char room[sizeof(memest_finetune_request) + NEWER];
    } fr;
    union {
      memest_model_states_request r;
      unsigned char room[sizeof(memest_model_states_request) + NEWER];
    } msr;
    CHECK_FAILS(memest_layout_init(&lay.l, sizeof(memest_layout) + NEWER), MEMEST_ERR_STRUCT_SIZE, "layout.struct_size");
    CHECK_FAILS(memest_search_request_init(&sr.s, sizeof(memest_search_request) + NEWER), MEMEST_ERR_STRUCT_SIZE,
                "request.struct_size");
    CHECK_FAILS(memest_finetune_request_init(&fr.f, sizeof(memest_finetune_request) + NEWER),
                MEMEST_ERR_STRUCT_SIZE, "request.struct_size");
    CHECK_FAILS(memest_model_states_request_init(&msr.r, sizeof(memest_model_states_request) + NEWER),
                MEMEST_ERR_STRUCT_SIZE, "request.struct_size");
  }

  /* models and GPUs the library fills or reads */
  m.model.struct_size = sizeof(memest_model) + NEWER;
  CHECK_FAILS(memest_model_from_preset("llama-3.1-8b", &m.model), MEMEST_ERR_STRUCT_SIZE, "model.struct_size");
  CHECK_FAILS(memest_model_from_config_json(kLlamaConfig, &m.model), MEMEST_ERR_STRUCT_SIZE, "model.struct_size");
  memcpy(&m.model, &model, sizeof model);
  m.model.struct_size = sizeof(memest_model) + NEWER;
  CHECK_FAILS(memest_model_validate(&m.model), MEMEST_ERR_STRUCT_SIZE, "model.struct_size");
  pc.c.struct_size = sizeof(memest_param_count);
  CHECK_FAILS(memest_model_parameter_count(&m.model, &pc.c), MEMEST_ERR_STRUCT_SIZE, "model.struct_size");
  pc.c.struct_size = sizeof(memest_param_count) + NEWER;
  CHECK_FAILS(memest_model_parameter_count(&model, &pc.c), MEMEST_ERR_STRUCT_SIZE, "count.struct_size");
  g.gpu.struct_size = sizeof(memest_gpu) + NEWER;
  CHECK_FAILS(memest_gpu_from_preset("a100-40gb", &g.gpu), MEMEST_ERR_STRUCT_SIZE, "gpu.struct_size");

  /* pretraining: request, model, GPU, result, stage elements */
  table2_request(&r);
  out.struct_size = sizeof out;
  memcpy(&pr.r, &r, sizeof r);
  pr.r.struct_size = sizeof r + NEWER;
  CHECK_FAILS(memest_pretrain(&pr.r, &out, stages, sizeof stages[0], 2), MEMEST_ERR_STRUCT_SIZE,
              "request.struct_size");
  r.model = &m.model;
  CHECK_FAILS(memest_pretrain(&r, &out, stages, sizeof stages[0], 2), MEMEST_ERR_STRUCT_SIZE, "model.struct_size");
  r.model = &model;
  memcpy(&g.gpu, &gpu, sizeof gpu);
  g.gpu.struct_size = sizeof gpu + NEWER;
  r.gpu = &g.gpu;
  CHECK_FAILS(memest_pretrain(&r, &out, stages, sizeof stages[0], 2), MEMEST_ERR_STRUCT_SIZE, "gpu.struct_size");
  r.gpu = &gpu;
  pout.r.struct_size = sizeof out + NEWER;
  CHECK_FAILS(memest_pretrain(&r, &pout.r, stages, sizeof stages[0], 2), MEMEST_ERR_STRUCT_SIZE,
              "result.struct_size");
  {
    unsigned char room[2 * (sizeof(memest_stage) + NEWER)];
    CHECK_FAILS(memest_pretrain(&r, &out, (memest_stage*)(void*)room, sizeof(memest_stage) + NEWER, 2),
                MEMEST_ERR_STRUCT_SIZE, "stages");
  }

  /* model states */
  CHECK_OK(memest_model_states_request_init(&ms, sizeof ms));
  ms.model = &model;
  ms_out.struct_size = sizeof ms_out + NEWER;
  {
    union {
      memest_model_states_result r;
      unsigned char room[sizeof(memest_model_states_result) + NEWER];
    } big;
    big.r.struct_size = sizeof ms_out + NEWER;
    CHECK_FAILS(memest_model_states(&ms, &big.r), MEMEST_ERR_STRUCT_SIZE, "result.struct_size");
  }
  ms.model = &m.model;
  ms_out.struct_size = sizeof ms_out;
  CHECK_FAILS(memest_model_states(&ms, &ms_out), MEMEST_ERR_STRUCT_SIZE, "model.struct_size");

  /* search: request, base, layouts, result, entry elements */
  CHECK_OK(memest_search_request_init(&s, sizeof s));
  table2_request(&r);
  s.base = &pr.r; /* struct_size sizeof + NEWER */
  s_out.struct_size = sizeof s_out;
  CHECK_FAILS(memest_search(&s, &s_out, entries, sizeof entries[0], 2, NULL, 0), MEMEST_ERR_STRUCT_SIZE,
              "base.struct_size");
  s.base = &r;
  {
    union {
      memest_search_request s;
      unsigned char room[sizeof(memest_search_request) + NEWER];
    } big;
    memcpy(&big.s, &s, sizeof s);
    big.s.struct_size = sizeof s + NEWER;
    CHECK_FAILS(memest_search(&big.s, &s_out, entries, sizeof entries[0], 2, NULL, 0),
                MEMEST_ERR_STRUCT_SIZE, "request.struct_size");
  }
  {
    union {
      memest_search_result r;
      unsigned char room[sizeof(memest_search_result) + NEWER];
    } big;
    big.r.struct_size = sizeof s_out + NEWER;
    CHECK_FAILS(memest_search(&s, &big.r, entries, sizeof entries[0], 2, NULL, 0), MEMEST_ERR_STRUCT_SIZE,
                "result.struct_size");
  }
  {
    unsigned char room[2 * (sizeof(memest_search_entry) + NEWER)];
    CHECK_FAILS(memest_search(&s, &s_out, (memest_search_entry*)(void*)room, sizeof(memest_search_entry) + NEWER,
                              2, NULL, 0),
                MEMEST_ERR_STRUCT_SIZE, "entries");
  }
  {
    unsigned char room[2 * (sizeof(memest_layout) + NEWER)];
    memest_layout l;
    memest_layout_init(&l, sizeof l);
    l.struct_size = sizeof l + NEWER;
    memcpy(room, &l, sizeof l);
    memcpy(room + sizeof l + NEWER, &l, sizeof l);
    s.layouts = (const memest_layout*)(const void*)room;
    s.layout_count = 2;
    CHECK_FAILS(memest_search(&s, &s_out, entries, sizeof entries[0], 2, NULL, 0), MEMEST_ERR_STRUCT_SIZE,
                "search.layouts[0].struct_size");
  }
  CHECK_OK(memest_layout_init(&shortlist[0], sizeof shortlist[0]));
  CHECK_OK(memest_layout_init(&shortlist[1], sizeof shortlist[1]));
  shortlist[1].struct_size = sizeof shortlist[1] + NEWER; /* differs from layouts[0] */
  s.layouts = shortlist;
  s.layout_count = 2;
  CHECK_FAILS(memest_search(&s, &s_out, entries, sizeof entries[0], 2, NULL, 0), MEMEST_ERR_STRUCT_SIZE,
              "search.layouts[1].struct_size");

  /* fine-tuning: request, result, choice, option elements */
  CHECK_OK(memest_finetune_request_init(&f, sizeof f));
  f.model = &model;
  f.gpu = &gpu;
  {
    union {
      memest_finetune_request f;
      unsigned char room[sizeof(memest_finetune_request) + NEWER];
    } big;
    memcpy(&big.f, &f, sizeof f);
    big.f.struct_size = sizeof f + NEWER;
    f_out.struct_size = sizeof f_out;
    CHECK_FAILS(memest_finetune(&big.f, &f_out), MEMEST_ERR_STRUCT_SIZE, "request.struct_size");
    choice.struct_size = sizeof choice;
    CHECK_FAILS(memest_finetune_select(&big.f, &choice, options, sizeof options[0], 4), MEMEST_ERR_STRUCT_SIZE,
                "request.struct_size");
  }
  {
    union {
      memest_finetune_result r;
      unsigned char room[sizeof(memest_finetune_result) + NEWER];
    } big;
    big.r.struct_size = sizeof f_out + NEWER;
    CHECK_FAILS(memest_finetune(&f, &big.r), MEMEST_ERR_STRUCT_SIZE, "result.struct_size");
  }
  {
    union {
      memest_finetune_choice c;
      unsigned char room[sizeof(memest_finetune_choice) + NEWER];
    } big;
    big.c.struct_size = sizeof choice + NEWER;
    CHECK_FAILS(memest_finetune_select(&f, &big.c, options, sizeof options[0], 4), MEMEST_ERR_STRUCT_SIZE,
                "choice.struct_size");
  }
  {
    unsigned char room[4 * (sizeof(memest_finetune_option) + NEWER)];
    choice.struct_size = sizeof choice;
    CHECK_FAILS(memest_finetune_select(&f, &choice, (memest_finetune_option*)(void*)room,
                                       sizeof(memest_finetune_option) + NEWER, 4),
                MEMEST_ERR_STRUCT_SIZE, "options");
  }
  f.gpu = &g.gpu; /* struct_size sizeof + NEWER */
  CHECK_FAILS(memest_finetune(&f, &f_out), MEMEST_ERR_STRUCT_SIZE, "gpu.struct_size");
}

int main(void) {
  test_versions_and_enums();
  test_models_and_gpus();
  test_model_states();
  test_pretrain();
  test_search();
  test_finetune();
  test_first_layout_caller();
  test_newer_caller_refused();
  printf("frozen 1.0 caller against libmemest %s: %d checks, %d failed\n", memest_version_string(),
         checks, failures);
  return failures == 0 ? 0 : 1;
}
