/*
 * C front end of the cross-language test, and the C-level check run under ASan/LSan/UBSan.
 *
 *   runner CASES      reads lines "name<TAB>request-json", answers each with memest_request_json
 *                     and prints "name<TAB>response" on one line. For a refused request it prints
 *                     {"ok": false, "error": {...}} rebuilt from the status code,
 *                     memest_last_error_field() and memest_last_error() (the C way to see an
 *                     error), after checking that the returned error document was produced.
 *   runner --typed    calls the typed entry points (pretrain, model states, fine-tuning, search,
 *                     presets, config parsing, the enum table) with good and bad inputs: NULL
 *                     pointers, missing models and GPUs, struct sizes the library does not know,
 *                     unknown presets, inconsistent layouts, strict JSON; checks they agree with
 *                     the JSON entry point and that out-parameters are untouched on failure.
 * Exit status 0 when every check holds.
 */
#include <memest/memest.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                       \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                         \
    }                                                                     \
  } while (0)

static void print_json_string(const char *s) {
  putchar('"');
  for (; *s; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') printf("\\%c", c);
    else if (c == '\n') printf("\\n");
    else if (c == '\t') printf("\\t");
    else if (c == '\r') printf("\\r");
    else if (c < 0x20) printf("\\u%04x", c);
    else putchar(c);
  }
  putchar('"');
}

/* Prints a response on one line (the pretty-printed JSON holds newlines only between tokens). */
static void print_one_line(const char *s) {
  for (; *s; ++s) putchar(*s == '\n' ? ' ' : *s);
}

static int run_cases(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    perror(path);
    return 2;
  }
  size_t cap = 0;
  char *line = NULL;
  long n;
  while ((n = (long)getline(&line, &cap, f)) > 0) {
    if (line[n - 1] == '\n') line[--n] = '\0';
    char *tab = strchr(line, '\t');
    if (!tab) continue;
    *tab = '\0';
    const char *name = line, *request = tab + 1;
    char *response = NULL;
    memest_status status = memest_request_json(request, &response);
    CHECK(response != NULL);
    printf("%s\t", name);
    if (status == MEMEST_OK) {
      CHECK(memest_last_error_code() == MEMEST_OK || 1); /* last error is only set on failure */
      print_one_line(response);
    } else {
      CHECK(strstr(response, "\"ok\": false") != NULL);
      CHECK(memest_last_error_code() == status);
      printf("{\"ok\": false, \"error\": {\"code\": ");
      print_json_string(memest_status_name(status));
      printf(", \"field\": ");
      print_json_string(memest_last_error_field());
      printf(", \"message\": ");
      print_json_string(memest_last_error());
      printf("}}");
    }
    putchar('\n');
    memest_string_free(response);
  }
  free(line);
  fclose(f);
  return failures ? 1 : 0;
}

/* A number from a pretty-printed response: the first "key": value. */
static double json_number(const char *json, const char *key) {
  char pattern[96];
  snprintf(pattern, sizeof pattern, "\"%s\": ", key);
  const char *p = strstr(json, pattern);
  return p ? strtod(p + strlen(pattern), NULL) : NAN;
}

static char *answer(const char *request) {
  char *response = NULL;
  memest_status status = memest_request_json(request, &response);
  CHECK(status == MEMEST_OK);
  return response;
}

static void typed_pretrain(void) {
  memest_model model;
  memest_gpu gpu;
  memest_pretrain_request r;
  memest_pretrain_result out;
  memest_stage stages[2];
  CHECK(memest_model_init(&model, sizeof model) == MEMEST_OK && model.struct_size == sizeof model);
  CHECK(memest_gpu_init(&gpu, sizeof gpu) == MEMEST_OK && gpu.struct_size == sizeof gpu);
  CHECK(memest_model_from_preset("llama-3.1-8b", &model) == MEMEST_OK);
  CHECK(memest_gpu_from_preset("a100-40gb", &gpu) == MEMEST_OK);
  CHECK(memest_pretrain_request_init(&r, sizeof r) == MEMEST_OK && r.struct_size == sizeof r);
  CHECK(r.model == NULL && r.gpu == NULL); /* no model or GPU until the caller points at them */
  r.model = &model;
  r.gpu = &gpu;
  r.gpus = 8; r.tp = 4; r.pp = 2; r.seq_len = 8192; r.global_batch = 1024;
  out.struct_size = sizeof out;
  CHECK(memest_pretrain(&r, &out, stages, sizeof(memest_stage), 2) == MEMEST_OK);
  CHECK(out.struct_size == sizeof out);
  CHECK(out.stage_count == 2 && out.verdict == MEMEST_VERDICT_FITS);
  CHECK(stages[0].struct_size == sizeof(memest_stage) && stages[1].index == 1);
  CHECK(strcmp(memest_verdict_name((memest_verdict)out.verdict), "fits") == 0);
  CHECK(out.usage_fraction <= memest_verdict_limit(MEMEST_VERDICT_FITS));
  char *json = answer("{\"mode\": \"pretrain\", \"model\": \"llama-3.1-8b\", \"gpu\": \"a100-40gb\","
                      " \"parallel\": {\"gpus\": 8, \"tp\": 4, \"pp\": 2},"
                      " \"training\": {\"seq_len\": 8192, \"global_batch\": 1024}}");
  CHECK(json_number(json, "estimate_bytes") == out.estimate_bytes);
  CHECK(json_number(json, "peak_bytes") == out.peak_bytes);
  CHECK(json_number(json, "activations_bytes") == stages[0].activations_bytes);
  memest_string_free(json);

  /* only the result, no stage array */
  memest_pretrain_result bare;
  memset(&bare, 0, sizeof bare);
  bare.struct_size = sizeof bare;
  CHECK(memest_pretrain(&r, &bare, NULL, sizeof(memest_stage), 0) == MEMEST_OK);
  CHECK(bare.estimate_bytes == out.estimate_bytes && bare.stage_count == 2);

  /* bad inputs: the field is named and out-parameters stay untouched */
  memest_pretrain_result untouched;
  memset(&untouched, 0xAB, sizeof untouched);
  untouched.struct_size = sizeof untouched;
  memest_pretrain_result copy = untouched;
  memest_stage stage_copy[2];
  memcpy(stage_copy, stages, sizeof stages);
  r.tp = 3;
  CHECK(memest_pretrain(&r, &untouched, stages, sizeof(memest_stage), 2) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "parallel.tp") == 0);
  CHECK(strlen(memest_last_error()) > 0);
  CHECK(memcmp(&untouched, &copy, sizeof copy) == 0);
  CHECK(memcmp(stages, stage_copy, sizeof stages) == 0);
  r.tp = 4;
  CHECK(memest_pretrain(NULL, &out, stages, sizeof(memest_stage), 2) == MEMEST_ERR_NULL_POINTER);
  CHECK(memest_pretrain(&r, NULL, stages, sizeof(memest_stage), 2) == MEMEST_ERR_NULL_POINTER);
  CHECK(memest_pretrain(&r, &out, NULL, sizeof(memest_stage), 2) == MEMEST_ERR_NULL_POINTER);
  /* struct sizes the library does not know */
  memest_pretrain_request old = r;
  old.struct_size = 8;
  CHECK(memest_pretrain(&old, &out, stages, sizeof(memest_stage), 2) == MEMEST_ERR_STRUCT_SIZE);
  CHECK(strcmp(memest_last_error_field(), "request.struct_size") == 0);
  old.struct_size = sizeof old + 8;
  CHECK(memest_pretrain(&old, &out, stages, sizeof(memest_stage), 2) == MEMEST_ERR_STRUCT_SIZE);
  /* a stage element larger than this version's, or smaller than the first (1.0) layout, which
   * ends with peak_bytes (sizeof - 8 is a valid older layout since fields were appended in 1.2) */
  CHECK(memest_pretrain(&r, &out, stages, sizeof(memest_stage) + 8, 2) == MEMEST_ERR_STRUCT_SIZE);
  CHECK(memest_pretrain(&r, &out, stages, (uint32_t)offsetof(memest_stage, peak_bytes), 2) ==
        MEMEST_ERR_STRUCT_SIZE);
  copy = untouched;
  untouched.struct_size = 0; /* a result whose size the caller forgot */
  copy.struct_size = 0;
  CHECK(memest_pretrain(&r, &untouched, NULL, sizeof(memest_stage), 0) == MEMEST_ERR_STRUCT_SIZE);
  CHECK(memcmp(&untouched, &copy, sizeof copy) == 0);
  memest_model small_model = model;
  small_model.struct_size = 4;
  r.model = &small_model;
  CHECK(memest_pretrain(&r, &out, NULL, sizeof(memest_stage), 0) == MEMEST_ERR_STRUCT_SIZE);
  CHECK(strcmp(memest_last_error_field(), "model.struct_size") == 0);
  CHECK(memest_pretrain_request_init(&old, 4) == MEMEST_ERR_STRUCT_SIZE);
  CHECK(memest_model_init(&small_model, 4) == MEMEST_ERR_STRUCT_SIZE);
  CHECK(memest_gpu_init(NULL, sizeof gpu) == MEMEST_ERR_NULL_POINTER);
  /* model and GPU by pointer: a missing one is named */
  r.model = NULL;
  CHECK(memest_pretrain(&r, &out, NULL, sizeof(memest_stage), 0) == MEMEST_ERR_MISSING_FIELD);
  CHECK(strcmp(memest_last_error_field(), "model") == 0);
  r.model = &model;
  r.gpu = NULL;
  CHECK(memest_pretrain(&r, &out, NULL, sizeof(memest_stage), 0) == MEMEST_ERR_MISSING_FIELD);
  CHECK(strcmp(memest_last_error_field(), "gpu") == 0);
  memest_gpu no_capacity;
  memest_gpu_init(&no_capacity, sizeof no_capacity);
  r.gpu = &no_capacity;
  CHECK(memest_pretrain(&r, &out, stages, sizeof(memest_stage), 2) != MEMEST_OK);
}

static void typed_model_states(void) {
  memest_model model;
  memest_model_states_request r;
  memest_model_states_result out;
  CHECK(memest_model_states_request_init(&r, sizeof r) == MEMEST_OK);
  CHECK(r.model == NULL && r.gpu == NULL);
  memest_model_init(&model, sizeof model);
  model.num_parameters = 7.5e9;
  r.model = &model; /* gpu stays NULL: the verdict is unknown */
  r.gpus = 64; r.zero = 1; r.param_bytes = 2; r.grad_bytes = 2;
  out.struct_size = sizeof out;
  CHECK(memest_model_states(&r, &out) == MEMEST_OK);
  CHECK(out.verdict == MEMEST_VERDICT_UNKNOWN && out.capacity_bytes == 0);
  char *json = answer("{\"mode\": \"model_states\", \"model\": {\"num_parameters\": 7.5e9},"
                      " \"parallel\": {\"gpus\": 64, \"zero\": 1},"
                      " \"training\": {\"param_dtype\": \"fp16\", \"grad_dtype\": \"fp16\"}}");
  CHECK(json_number(json, "estimate_bytes") == out.estimate_bytes);
  memest_string_free(json);
  memest_gpu gpu;
  gpu.struct_size = sizeof gpu;
  CHECK(memest_gpu_from_preset("a100-80gb", &gpu) == MEMEST_OK);
  r.gpu = &gpu;
  CHECK(memest_model_states(&r, &out) == MEMEST_OK && out.capacity_bytes == gpu.memory_bytes);
  CHECK(out.verdict != MEMEST_VERDICT_UNKNOWN);
  r.zero = 4;
  CHECK(memest_model_states(&r, &out) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "parallel.zero") == 0);
  CHECK(memest_model_states(&r, NULL) == MEMEST_ERR_NULL_POINTER);
  r.zero = 1;
  r.model = NULL;
  CHECK(memest_model_states(&r, &out) == MEMEST_ERR_MISSING_FIELD);
  CHECK(strcmp(memest_last_error_field(), "model") == 0);
}

static void typed_finetune(void) {
  memest_model model;
  memest_gpu gpu;
  memest_finetune_request r;
  memest_finetune_result out;
  memest_finetune_choice choice;
  memest_finetune_option options[4];
  model.struct_size = sizeof model;
  gpu.struct_size = sizeof gpu;
  CHECK(memest_finetune_request_init(&r, sizeof r) == MEMEST_OK);
  CHECK(memest_model_from_preset("opt-2.7b", &model) == MEMEST_OK);
  CHECK(memest_gpu_from_preset("v100-16gb", &gpu) == MEMEST_OK);
  r.model = &model;
  r.gpu = &gpu;
  r.gpus = 4; r.method = MEMEST_FINETUNE_ZERO3; r.batch = 8; r.seq_len = 512;
  out.struct_size = sizeof out;
  CHECK(memest_finetune(&r, &out) == MEMEST_OK);
  char *json = answer("{\"mode\": \"finetune\", \"model\": \"opt-2.7b\", \"gpu\": \"v100-16gb\","
                      " \"parallel\": {\"gpus\": 4}, \"training\": {\"seq_len\": 512},"
                      " \"finetune\": {\"method\": \"zero3\", \"batch\": 8}}");
  CHECK(json_number(json, "peak_bytes") == out.peak_bytes);
  memest_string_free(json);
  r.method = MEMEST_FINETUNE_AUTO;
  CHECK(memest_finetune(&r, &out) != MEMEST_OK); /* AUTO is for memest_finetune_select */
  choice.struct_size = sizeof choice;
  CHECK(memest_finetune_select(&r, &choice, options, sizeof(memest_finetune_option), 4) == MEMEST_OK);
  CHECK(choice.option_count == 4);
  for (int i = 0; i < 4; ++i) {
    CHECK(options[i].struct_size == sizeof(memest_finetune_option));
    CHECK(options[i].method == i); /* Algorithm 1's order: CDP, ZeRO-3, TP, DP+TP */
  }
  CHECK(strcmp(memest_finetune_method_name((memest_finetune_method)choice.selected), "unknown") != 0);
  json = answer("{\"mode\": \"finetune\", \"model\": \"opt-2.7b\", \"gpu\": \"v100-16gb\","
                " \"parallel\": {\"gpus\": 4}, \"training\": {\"seq_len\": 512},"
                " \"finetune\": {\"method\": \"auto\"}}");
  CHECK(json_number(json, "max_batch") == (double)choice.batch);
  memest_string_free(json);
  /* the choice alone, without the per-method options */
  memest_finetune_choice alone;
  alone.struct_size = sizeof alone;
  CHECK(memest_finetune_select(&r, &alone, NULL, sizeof(memest_finetune_option), 0) == MEMEST_OK);
  CHECK(alone.selected == choice.selected && alone.batch == choice.batch);
  CHECK(memest_finetune_select(&r, &alone, options, 4, 4) == MEMEST_ERR_STRUCT_SIZE);
  r.gpus = 0;
  CHECK(memest_finetune_select(&r, &choice, options, sizeof(memest_finetune_option), 4) != MEMEST_OK);
  CHECK(strlen(memest_last_error_field()) > 0);
}

static void typed_search(void) {
  memest_model model;
  memest_gpu gpu;
  memest_pretrain_request base;
  memest_search_request s;
  memest_search_result res;
  memest_search_entry entries[3];
  uint64_t pruned[MEMEST_PRUNE_REASON_COUNT];
  model.struct_size = sizeof model;
  gpu.struct_size = sizeof gpu;
  CHECK(memest_model_from_preset("llama-3.1-8b", &model) == MEMEST_OK);
  CHECK(memest_gpu_from_preset("a100-40gb", &gpu) == MEMEST_OK);
  CHECK(memest_pretrain_request_init(&base, sizeof base) == MEMEST_OK);
  base.model = &model;
  base.gpu = &gpu;
  base.gpus = 64; base.seq_len = 8192; base.global_batch = 1024;
  CHECK(memest_search_request_init(&s, sizeof s) == MEMEST_OK && s.base == NULL);
  s.base = &base;
  res.struct_size = sizeof res;
  CHECK(memest_search(&s, &res, entries, sizeof(memest_search_entry), 3, pruned,
                      MEMEST_PRUNE_REASON_COUNT) == MEMEST_OK);
  CHECK(res.count == 3 && res.ranked >= 3);
  uint64_t sum = 0;
  for (int i = 0; i < MEMEST_PRUNE_REASON_COUNT; ++i) sum += pruned[i];
  CHECK(sum == res.pruned_total);
  CHECK(entries[0].tflops_per_gpu >= entries[1].tflops_per_gpu);
  CHECK(entries[0].struct_size == sizeof(memest_search_entry));
  CHECK(entries[0].tp * entries[0].cp * entries[0].pp * entries[0].dp == 64);
  char *json = answer("{\"mode\": \"search\", \"model\": \"llama-3.1-8b\", \"gpu\": \"a100-40gb\","
                      " \"parallel\": {\"gpus\": 64}, \"training\": {\"seq_len\": 8192,"
                      " \"global_batch\": 1024}, \"search\": {\"top\": 3}}");
  CHECK(json_number(json, "tflops_per_gpu") == entries[0].tflops_per_gpu);
  CHECK(json_number(json, "peak_bytes") == entries[0].peak_bytes);
  CHECK(json_number(json, "pruned_total") == (double)res.pruned_total);
  CHECK(json_number(json, "oom") == (double)pruned[MEMEST_PRUNE_OOM]);
  memest_string_free(json);

  /* the best layout through memest_pretrain: the same peak */
  memest_pretrain_request one = base;
  memest_pretrain_result p;
  one.tp = entries[0].tp; one.cp = entries[0].cp; one.pp = entries[0].pp; one.vpp = entries[0].vpp;
  one.micro_batch = entries[0].micro_batch; one.recompute = entries[0].recompute;
  one.zero = entries[0].zero; one.uneven_pipeline = 1;
  p.struct_size = sizeof p;
  CHECK(memest_pretrain(&one, &p, NULL, sizeof(memest_stage), 0) == MEMEST_OK);
  CHECK(p.peak_bytes == entries[0].peak_bytes);

  /* an explicit shortlist: a bad layout is counted, not raised */
  memest_layout layouts[2];
  CHECK(memest_layout_init(&layouts[0], sizeof layouts[0]) == MEMEST_OK);
  CHECK(memest_layout_init(&layouts[1], sizeof layouts[1]) == MEMEST_OK);
  CHECK(layouts[0].tp == 1 && layouts[0].micro_batch == 1 && layouts[0].zero == 1);
  layouts[0].tp = 4; layouts[0].pp = 2;
  layouts[1].tp = 3;
  s.layouts = layouts;
  s.layout_count = 2;
  CHECK(memest_search(&s, &res, entries, sizeof(memest_search_entry), 3, pruned,
                      MEMEST_PRUNE_REASON_COUNT) == MEMEST_OK);
  CHECK(res.count == 1 && entries[0].tp == 4 && entries[0].pp == 2);
  CHECK(pruned[MEMEST_PRUNE_TP_HEADS] == 1);
  /* fewer prune counts than reasons, or none at all */
  CHECK(memest_search(&s, &res, entries, sizeof(memest_search_entry), 3, pruned, 1) == MEMEST_OK);
  CHECK(memest_search(&s, &res, NULL, sizeof(memest_search_entry), 0, NULL, 0) == MEMEST_OK);
  CHECK(res.count == 0 && res.ranked == 1);
  CHECK(memest_search(&s, &res, entries, sizeof(memest_search_entry), 3, NULL, 2) ==
        MEMEST_ERR_NULL_POINTER);
  layouts[1].struct_size = 4;
  CHECK(memest_search(&s, &res, entries, sizeof(memest_search_entry), 3, pruned, 2) ==
        MEMEST_ERR_STRUCT_SIZE);
  CHECK(strcmp(memest_last_error_field(), "search.layouts[1].struct_size") == 0);
  s.layouts = NULL;
  s.layout_count = 0;
  s.base = NULL;
  CHECK(memest_search(&s, &res, entries, sizeof(memest_search_entry), 3, pruned, 2) ==
        MEMEST_ERR_MISSING_FIELD);
  CHECK(strcmp(memest_last_error_field(), "base") == 0);
}

/* The number at `index` of a JSON array value: "key": [a, b] (pretty-printed, one a line). */
static double json_array_number(const char *json, const char *key, int index) {
  char pattern[96];
  snprintf(pattern, sizeof pattern, "\"%s\": [", key);
  const char *p = strstr(json, pattern);
  if (!p) return NAN;
  p += strlen(pattern);
  for (int i = 0;; ++i) {
    while (*p == ' ' || *p == '\n' || *p == ',') ++p;
    char *end;
    const double v = strtod(p, &end);
    if (end == p) return NAN;
    if (i == index) return v;
    p = end;
  }
}

/* 1.6: the request fields' defaults, what a result states (torch.cuda and nvidia-smi figures,
   the peak's 90 % band, P(OOM), the margin) against the JSON entry point, fsdp1's root unit, and
   search.max_oom_probability with a refused value leaving the out-parameters untouched. */
static void typed_1_6(void) {
  memest_model model;
  memest_gpu gpu;
  memest_pretrain_request r;
  memest_pretrain_result out, synced, fsdp2;
  memest_stage stage, synced_stage, fsdp2_stage;
  model.struct_size = sizeof model;
  gpu.struct_size = sizeof gpu;
  CHECK(memest_model_from_preset("gemma-2-9b", &model) == MEMEST_OK);
  CHECK(model.final_logit_softcapping == 30.0);
  CHECK(memest_model_from_preset("llama-3.1-8b", &model) == MEMEST_OK);
  CHECK(model.final_logit_softcapping == 0);
  CHECK(memest_gpu_from_preset("h100-80gb", &gpu) == MEMEST_OK);
  CHECK(memest_pretrain_request_init(&r, sizeof r) == MEMEST_OK);
  CHECK(r.reduce_bytes == 0 && r.loss_parallel == 1 && r.autocast == -1 && r.fp8_all_gather == 0);
  CHECK(r.no_sync == -1 && r.quantize_lm_head == 0 && r.logits_held == 0);
  CHECK(r.ddp == -1); /* 1.7 */
  r.model = &model;
  r.gpu = &gpu;
  r.gpus = 8; r.zero = 3; r.seq_len = 4096; r.micro_batch = 1; r.global_batch = 32;
  r.framework = MEMEST_FRAMEWORK_FSDP1;
  r.optimizer_bytes = MEMEST_OPTIMIZER_BYTES_DERIVE;
  r.grad_bytes = MEMEST_GRAD_BYTES_DERIVE; /* 1.11: as a JSON request without grad_dtype */
  out.struct_size = sizeof out;
  CHECK(memest_pretrain(&r, &out, &stage, sizeof stage, 1) == MEMEST_OK);
  char *json = answer("{\"mode\": \"pretrain\", \"model\": \"llama-3.1-8b\", \"gpu\": \"h100-80gb\","
                      " \"parallel\": {\"gpus\": 8, \"zero\": 3}, \"training\": {\"seq_len\": 4096,"
                      " \"micro_batch\": 1, \"global_batch\": 32, \"framework\": \"fsdp1\"}}");
  CHECK(json_number(json, "peak_bytes") == out.peak_bytes);
  CHECK(json_number(json, "oom_probability") == out.oom_probability);
  CHECK(json_number(json, "margin_bytes") == out.margin_bytes);
  CHECK(json_number(json, "torch_max_memory_allocated_bytes") == out.torch_max_memory_allocated_bytes);
  CHECK(json_number(json, "torch_max_memory_reserved_bytes") == out.torch_max_memory_reserved_bytes);
  CHECK(json_number(json, "nvidia_smi_bytes") == out.nvidia_smi_bytes);
  CHECK(json_array_number(json, "peak_band_bytes", 0) == out.peak_low_bytes);
  CHECK(json_array_number(json, "peak_band_bytes", 1) == out.peak_high_bytes);
  CHECK(json_number(json, "unsharded_root_bytes") == stage.unsharded_root_bytes);
  CHECK(json_number(json, "optimizer_step_bytes") == stage.optimizer_step_bytes);
  memest_string_free(json);
  CHECK(out.oom_probability > 0 && out.oom_probability < 1);
  CHECK(out.margin_bytes == out.capacity_bytes - out.peak_bytes);
  CHECK((out.oom_probability < 0.5) == (out.margin_bytes > 0));
  /* the band is symmetric around the peak in log space (peak * exp(-/+1.645 sigma)); no libm
     here: the shared-library runner links without -lm */
  CHECK(out.peak_low_bytes < out.peak_bytes && out.peak_bytes < out.peak_high_bytes);
  CHECK(fabs(out.peak_low_bytes * out.peak_high_bytes / (out.peak_bytes * out.peak_bytes) - 1) < 1e-12);
  CHECK(out.torch_max_memory_reserved_bytes == out.peak_reserved_bytes - stage.context_bytes);
  CHECK(out.torch_max_memory_allocated_bytes == out.peak_allocated_bytes - stage.context_bytes);
  CHECK(out.nvidia_smi_bytes == out.peak_reserved_bytes + stage.paged_bytes);
  CHECK(stage.nvidia_smi_bytes == out.nvidia_smi_bytes);
  /* fsdp1's root unit: the weights' difference to FSDP2; no_sync keeps unsharded gradients */
  r.no_sync = 0;
  synced.struct_size = sizeof synced;
  CHECK(memest_pretrain(&r, &synced, &synced_stage, sizeof synced_stage, 1) == MEMEST_OK);
  CHECK(stage.gradients_bytes > synced_stage.gradients_bytes);
  r.framework = MEMEST_FRAMEWORK_FSDP;
  fsdp2.struct_size = sizeof fsdp2;
  CHECK(memest_pretrain(&r, &fsdp2, &fsdp2_stage, sizeof fsdp2_stage, 1) == MEMEST_OK);
  CHECK(synced_stage.unsharded_root_bytes > 0 && fsdp2_stage.unsharded_root_bytes == 0);
  CHECK(synced_stage.weights_bytes - fsdp2_stage.weights_bytes == synced_stage.unsharded_root_bytes);
  /* refused values name their field and leave the result untouched */
  memest_pretrain_result copy;
  memcpy(&copy, &fsdp2, sizeof copy);
  r.no_sync = 2;
  CHECK(memest_pretrain(&r, &fsdp2, NULL, sizeof(memest_stage), 0) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "training.no_sync") == 0);
  r.no_sync = -1;
  /* 1.7: ddp 0 with eight data-parallel ranks (DDP wraps them) and ddp 2 are refused by name */
  r.framework = MEMEST_FRAMEWORK_PYTORCH; r.zero = 0; r.ddp = 0;
  CHECK(memest_pretrain(&r, &fsdp2, NULL, sizeof(memest_stage), 0) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "training.ddp") == 0);
  r.ddp = 2;
  CHECK(memest_pretrain(&r, &fsdp2, NULL, sizeof(memest_stage), 0) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "training.ddp") == 0);
  r.ddp = -1; r.framework = MEMEST_FRAMEWORK_FSDP; r.zero = 3;
  r.reduce_bytes = 3;
  CHECK(memest_pretrain(&r, &fsdp2, NULL, sizeof(memest_stage), 0) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "training.reduce_dtype") == 0);
  r.reduce_bytes = 0;
  r.adapter = MEMEST_ADAPTER_LORA;
  r.quantize_lm_head = 1; /* needs a qlora adapter */
  CHECK(memest_pretrain(&r, &fsdp2, NULL, sizeof(memest_stage), 0) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "training.adapter.quantize_lm_head") == 0);
  CHECK(memcmp(&copy, &fsdp2, sizeof copy) == 0);
  r.adapter = MEMEST_ADAPTER_NONE;
  r.quantize_lm_head = 0;

  /* the search: the default limit, a stricter one ranks fewer; entries against the JSON */
  memest_search_request s;
  memest_search_result res;
  memest_search_entry entries[64];
  memest_gpu a100;
  a100.struct_size = sizeof a100;
  CHECK(memest_gpu_from_preset("a100-40gb", &a100) == MEMEST_OK);
  CHECK(memest_pretrain_request_init(&r, sizeof r) == MEMEST_OK);
  r.model = &model;
  r.gpu = &a100;
  r.gpus = 8; r.seq_len = 8192; r.global_batch = 64;
  CHECK(memest_search_request_init(&s, sizeof s) == MEMEST_OK);
  CHECK(s.max_oom_probability == MEMEST_SEARCH_MAX_OOM_PROBABILITY);
  s.base = &r;
  res.struct_size = sizeof res;
  CHECK(memest_search(&s, &res, entries, sizeof entries[0], 64, NULL, 0) == MEMEST_OK);
  const uint64_t by_default = res.ranked;
  s.max_oom_probability = 0.01;
  CHECK(memest_search(&s, &res, entries, sizeof entries[0], 64, NULL, 0) == MEMEST_OK);
  CHECK(res.ranked > 0 && res.ranked < by_default);
  for (uint32_t i = 0; i < res.count; ++i) {
    CHECK(entries[i].oom_probability >= 0 && entries[i].oom_probability <= 0.01);
    CHECK(entries[i].margin_bytes == entries[i].capacity_bytes - entries[i].peak_bytes);
    CHECK(entries[i].peak_high_bytes / entries[i].peak_bytes == out.peak_high_bytes / out.peak_bytes ||
          fabs(entries[i].peak_high_bytes / entries[i].peak_bytes / (out.peak_high_bytes / out.peak_bytes) - 1) < 1e-12);
  }
  json = answer("{\"mode\": \"search\", \"model\": \"llama-3.1-8b\", \"gpu\": \"a100-40gb\","
                " \"parallel\": {\"gpus\": 8}, \"training\": {\"seq_len\": 8192, \"global_batch\": 64},"
                " \"search\": {\"top\": 64, \"max_oom_probability\": 0.01}}");
  CHECK(json_number(json, "max_oom_probability") == 0.01);
  CHECK(json_number(json, "ranked") == (double)res.ranked);
  CHECK(json_number(json, "oom_probability") == entries[0].oom_probability);
  CHECK(json_number(json, "margin_bytes") == entries[0].margin_bytes);
  CHECK(json_number(json, "peak_high_bytes") == entries[0].peak_high_bytes);
  memest_string_free(json);
  memest_search_result before;
  memcpy(&before, &res, sizeof before);
  s.max_oom_probability = 2.0;
  CHECK(memest_search(&s, &res, entries, sizeof entries[0], 64, NULL, 0) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "search.max_oom_probability") == 0);
  s.max_oom_probability = 0;
  CHECK(memest_search(&s, &res, entries, sizeof entries[0], 64, NULL, 0) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "search.max_oom_probability") == 0);
  CHECK(memcmp(&before, &res, sizeof res) == 0);
}

static void typed_models(void) {
  memest_model m;
  memest_param_count c;
  memest_model_init(&m, sizeof m);
  c.struct_size = sizeof c;
  uint32_t n = memest_model_preset_count();
  CHECK(n > 0);
  for (uint32_t i = 0; i < n; ++i) {
    const char *id = memest_model_preset_id(i);
    CHECK(id != NULL);
    CHECK(memest_model_from_preset(id, &m) == MEMEST_OK);
    CHECK(memest_model_validate(&m) == MEMEST_OK);
    CHECK(memest_model_parameter_count(&m, &c) == MEMEST_OK && c.total > 0);
    CHECK(memest_enum_name(MEMEST_ENUM_FAMILY, m.family) != NULL);
  }
  CHECK(memest_model_preset_id(n) == NULL);
  for (uint32_t i = 0; i < memest_gpu_preset_count(); ++i) {
    memest_gpu g;
    g.struct_size = sizeof g;
    CHECK(memest_gpu_from_preset(memest_gpu_preset_id(i), &g) == MEMEST_OK && g.memory_bytes > 0);
  }
  CHECK(memest_gpu_preset_id(memest_gpu_preset_count()) == NULL);
  CHECK(memest_model_from_preset("no-such-model", &m) == MEMEST_ERR_UNKNOWN_PRESET);
  CHECK(memest_model_from_preset(NULL, &m) == MEMEST_ERR_NULL_POINTER);
  CHECK(memest_model_from_config_json("{\"model_type\": \"llama\", \"hidden_size\": 4096,"
                                      " \"num_hidden_layers\": 32, \"num_attention_heads\": 32,"
                                      " \"intermediate_size\": 11008, \"vocab_size\": 32000}",
                                      &m) == MEMEST_OK);
  CHECK(memest_model_from_config_json("{not json", &m) == MEMEST_ERR_PARSE);
  CHECK(memest_model_from_config_json("[1, 2]", &m) != MEMEST_OK);
  CHECK(memest_model_from_config_json(NULL, &m) == MEMEST_ERR_NULL_POINTER);
  memest_model unsized;
  memset(&unsized, 0, sizeof unsized); /* struct_size 0: refused, left as it was */
  CHECK(memest_model_from_preset("gpt2", &unsized) == MEMEST_ERR_STRUCT_SIZE);
  CHECK(unsized.hidden_size == 0 && unsized.struct_size == 0);
  c.struct_size = 0;
  CHECK(memest_model_parameter_count(&m, &c) == MEMEST_ERR_STRUCT_SIZE);
  CHECK(strcmp(memest_status_name((memest_status)999), "unknown") == 0);
  CHECK(memest_version_number() == MEMEST_VERSION_NUMBER);
  CHECK(strcmp(memest_version_string(), MEMEST_VERSION_STRING) == 0);
}

/* The enum table: every name the bindings and the page show comes from here. */
static void typed_enums(void) {
  /* This header's counts are the library's (a program built against an older header may see
     more values at run time; this runner is built against the library's own header). */
  CHECK(memest_enum_count(MEMEST_ENUM_STATUS) == MEMEST_STATUS_COUNT);
  CHECK(memest_enum_count(MEMEST_ENUM_FAMILY) == MEMEST_FAMILY_GPT + 1);
  CHECK(memest_enum_count(MEMEST_ENUM_VERDICT) == MEMEST_VERDICT_COUNT);
  CHECK(memest_enum_count(MEMEST_ENUM_RECOMPUTE) == MEMEST_RECOMPUTE_COUNT);
  CHECK(memest_enum_count(MEMEST_ENUM_ACTIVATION_MODEL) == MEMEST_ACTIVATIONS_COUNT);
  CHECK(memest_enum_count(MEMEST_ENUM_PRUNE_REASON) == MEMEST_PRUNE_REASON_COUNT);
  CHECK(memest_enum_count(MEMEST_ENUM_FINETUNE_METHOD) == MEMEST_FINETUNE_METHOD_COUNT);
  CHECK(memest_enum_count(MEMEST_ENUM_COUNT) == 0);
  CHECK(memest_enum_count((memest_enum)-1) == 0);
  for (int e = 0; e < MEMEST_ENUM_COUNT; ++e) {
    const uint32_t n = memest_enum_count((memest_enum)e);
    CHECK(n > 0);
    for (uint32_t v = 0; v < n; ++v) {
      const char *name = memest_enum_name((memest_enum)e, (int32_t)v);
      CHECK(name != NULL && strlen(name) > 0);
      if (name) CHECK(memest_enum_value((memest_enum)e, name) == (int32_t)v);
    }
    CHECK(memest_enum_name((memest_enum)e, (int32_t)n) == NULL);
    CHECK(memest_enum_name((memest_enum)e, -1) == NULL);
    CHECK(memest_enum_value((memest_enum)e, "no-such-name") == -1);
    CHECK(memest_enum_value((memest_enum)e, NULL) == -1);
  }
  /* the older per-enum name functions agree with the table */
  for (int32_t v = 0; v < MEMEST_STATUS_COUNT; ++v) {
    CHECK(strcmp(memest_status_name((memest_status)v), memest_enum_name(MEMEST_ENUM_STATUS, v)) == 0);
  }
  for (int32_t v = 0; v < MEMEST_VERDICT_COUNT; ++v) {
    CHECK(strcmp(memest_verdict_name((memest_verdict)v), memest_enum_name(MEMEST_ENUM_VERDICT, v)) == 0);
  }
  for (int32_t v = 0; v < MEMEST_PRUNE_REASON_COUNT; ++v) {
    CHECK(strcmp(memest_prune_reason_name((memest_prune_reason)v),
                 memest_enum_name(MEMEST_ENUM_PRUNE_REASON, v)) == 0);
  }
  for (int32_t v = 0; v < MEMEST_FINETUNE_METHOD_COUNT; ++v) {
    CHECK(strcmp(memest_finetune_method_name((memest_finetune_method)v),
                 memest_enum_name(MEMEST_ENUM_FINETUNE_METHOD, v)) == 0);
  }
  CHECK(strcmp(memest_verdict_name(MEMEST_VERDICT_COUNT), "unknown") == 0);
  CHECK(strcmp(memest_prune_reason_name(MEMEST_PRUNE_REASON_COUNT), "unknown") == 0);
  /* the verdict bands */
  CHECK(memest_verdict_limit(MEMEST_VERDICT_FITS) == 0.8);
  CHECK(memest_verdict_limit(MEMEST_VERDICT_TIGHT) == 1.0);
  CHECK(memest_verdict_limit(MEMEST_VERDICT_OOM) == 0);
  CHECK(memest_verdict_limit(MEMEST_VERDICT_UNKNOWN) == 0);
  /* the JSON "enums" mode lists the same names in the same order, and the same bands */
  char *json = answer("{\"mode\": \"enums\"}");
  CHECK(json_number(json, "fits") == memest_verdict_limit(MEMEST_VERDICT_FITS));
  CHECK(json_number(json, "tight") == memest_verdict_limit(MEMEST_VERDICT_TIGHT));
  const char *keys[MEMEST_ENUM_COUNT] = {"status", "family", "verdict", "recompute",
                                         "activation_model", "prune_reason", "finetune_method",
                                         "framework", "loss", "optimizer", "adapter",
                                         "lora_target", "compile", "overlap", "step_part",
                                         "moe_dispatcher", "attention_kernel",
                                         "recompute_module", "master_weights"};
  for (int e = 0; e < MEMEST_ENUM_COUNT; ++e) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\": [", keys[e]);
    const char *p = json ? strstr(json, pattern) : NULL;
    CHECK(p != NULL);
    if (!p) continue;
    p += strlen(pattern);
    for (uint32_t v = 0; v < memest_enum_count((memest_enum)e); ++v) {
      char quoted[64];
      snprintf(quoted, sizeof quoted, "\"%s\"", memest_enum_name((memest_enum)e, (int32_t)v));
      const char *q = strstr(p, quoted);
      const char *end = strchr(p, ']');
      CHECK(q != NULL && end != NULL && q < end);
      if (q) p = q + strlen(quoted);
    }
  }
  memest_string_free(json);
}

static void json_bad_inputs(void) {
  char *response = NULL;
  CHECK(memest_request_json(NULL, &response) == MEMEST_ERR_NULL_POINTER);
  memest_string_free(response);
  CHECK(memest_request_json("{}", NULL) == MEMEST_ERR_NULL_POINTER);
  const char *bad[] = {"", "null", "[]", "{\"mode\": 7}", "{\"mode\": \"pretrain\", \"model\": {}}",
                       "{\"mode\": \"pretrain\", \"model\": \"gpt2\", \"gpu\": \"a100-40gb\","
                       " \"parallel\": {\"gpus\": 1e300}}",
                       "{\"mode\": \"model_states\", \"model\": {\"num_parameters\": 1e308},"
                       " \"parallel\": {\"gpus\": 1}}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    response = NULL;
    memest_status s = memest_request_json(bad[i], &response);
    CHECK(response != NULL);
    if (s != MEMEST_OK) CHECK(response && strstr(response, memest_status_name(s)) != NULL);
    memest_string_free(response);
  }
  /* strict JSON: null for a field, duplicate keys, numbers past a double */
  struct {
    const char *request;
    memest_status status;
    const char *field;
  } strict[] = {
      {"{\"mode\": \"pretrain\", \"model\": \"gpt2\", \"gpu\": \"a100-40gb\","
       " \"training\": {\"recompute\": null}}", MEMEST_ERR_TYPE, "training.recompute"},
      {"{\"mode\": \"pretrain\", \"model\": \"gpt2\", \"gpu\": null}", MEMEST_ERR_TYPE, "gpu"},
      {"{\"mode\": \"pretrain\", \"model\": \"gpt2\", \"model\": \"gpt2\", \"gpu\": \"a100-40gb\"}",
       MEMEST_ERR_PARSE, ""},
      {"{\"mode\": \"model_states\", \"model\": {\"num_parameters\": 1e999}}", MEMEST_ERR_PARSE, ""},
  };
  for (size_t i = 0; i < sizeof strict / sizeof strict[0]; ++i) {
    response = NULL;
    CHECK(memest_request_json(strict[i].request, &response) == strict[i].status);
    CHECK(strcmp(memest_last_error_field(), strict[i].field) == 0);
    CHECK(response && strstr(response, memest_status_name(strict[i].status)) != NULL);
    memest_string_free(response);
  }
  /* a GPU object may carry measured values (ignored); the search pins training.recompute */
  response = answer("{\"mode\": \"pretrain\", \"model\": \"llama-3.1-8b\","
                    " \"gpu\": {\"preset\": \"a100-40gb\", \"measured\": {\"peak_gib\": 30}},"
                    " \"parallel\": {\"gpus\": 8, \"tp\": 4, \"pp\": 2}}");
  memest_string_free(response);
  response = answer("{\"mode\": \"search\", \"model\": \"llama-3.1-8b\", \"gpu\": \"a100-40gb\","
                    " \"parallel\": {\"gpus\": 8}, \"training\": {\"seq_len\": 8192,"
                    " \"global_batch\": 1024, \"recompute\": \"full\", \"micro_batch\": 2}}");
  CHECK(response && strstr(response, "\"recompute\": \"none\"") == NULL);
  CHECK(response && strstr(response, "\"recompute\": \"full\"") != NULL);
  CHECK(response && strstr(response, "\"micro_batch\": 1,") == NULL);
  memest_string_free(response);
  memest_string_free(NULL);
}

/* 1.7: first_stage_layers and pipeline_layout through the typed struct. Llama-3.1-8B's 32
   layers over pp 4: first 6, last 6, the two between 10 each; the layout string's 8 virtual
   stages (vpp 2) hold the same; a 16-layer layout is refused. */
static void typed_1_7(void) {
  memest_model model;
  memest_gpu gpu;
  memest_pretrain_request r;
  memest_pretrain_result out;
  memest_stage stages[4];
  int i;
  const int64_t want[4] = {6, 10, 10, 6};
  model.struct_size = sizeof model;
  gpu.struct_size = sizeof gpu;
  CHECK(memest_model_from_preset("llama-3.1-8b", &model) == MEMEST_OK);
  CHECK(memest_gpu_from_preset("h100-80gb", &gpu) == MEMEST_OK);
  CHECK(memest_pretrain_request_init(&r, sizeof r) == MEMEST_OK);
  CHECK(r.first_stage_layers == 0 && r.pipeline_layout == NULL);
  r.model = &model;
  r.gpu = &gpu;
  r.gpus = 4; r.tp = 1; r.pp = 4; r.first_stage_layers = 6; r.last_stage_layers = 6;
  out.struct_size = sizeof out;
  CHECK(memest_pretrain(&r, &out, stages, sizeof stages[0], 4) == MEMEST_OK);
  CHECK(out.stage_count == 4);
  for (i = 0; i < 4; i++) CHECK(stages[i].layers == want[i]);
  r.first_stage_layers = 0; r.last_stage_layers = 0; r.vpp = 2;
  r.pipeline_layout = "Et*3|t*5|t*5|t*3|t*3|t*5|t*5|t*3L";
  CHECK(memest_pretrain(&r, &out, stages, sizeof stages[0], 4) == MEMEST_OK);
  for (i = 0; i < 4; i++) CHECK(stages[i].layers == want[i]);
  r.pipeline_layout = "Et*3|t*5|t*5|t*3L";
  CHECK(memest_pretrain(&r, &out, stages, sizeof stages[0], 4) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "parallel.pipeline_layout") == 0);
  CHECK(strcmp(memest_enum_name(MEMEST_ENUM_LORA_TARGET, MEMEST_LORA_ROUTER), "router") == 0);
}

/* 1.9: loss_chunks, fsdp_use_orig_params and fp4 through the typed struct, on the values of
   tests/unit/test_memory_mechanisms_1_9.cpp. Llama-3.1-8B on one GPU under plain PyTorch,
   4096 tokens, full recompute, torchtitan's ChunkedLossWrapper: 525336576 logits x 14 / 8 +
   the fp32 accumulator 4 x 4096 x 4096 = 986447872 bytes at 8 chunks, 526778368 at 16.
   fsdp1 + LoRA (q_proj, v_proj, r 8, bf16) on 8 GPUs at zero 3: the adapters' gradient
   3407872 x 2 / 8 = 851968 wrapped apart, (6979584000 + 3407872) x 2 / 8 = 1745747968 with the
   blocks' frozen weights in the flat parameter. NVFP4 needs gpu.fp4 (B200), refused on H100. */
static void typed_1_9(void) {
  memest_model model;
  memest_gpu gpu, b200;
  memest_pretrain_request r;
  memest_pretrain_result out;
  memest_stage stage;
  char *json;
  model.struct_size = sizeof model;
  gpu.struct_size = sizeof gpu;
  b200.struct_size = sizeof b200;
  CHECK(memest_model_from_preset("llama-3.1-8b", &model) == MEMEST_OK);
  CHECK(memest_gpu_from_preset("h100-80gb", &gpu) == MEMEST_OK);
  CHECK(memest_gpu_from_preset("b200-180gb", &b200) == MEMEST_OK);
  CHECK(gpu.fp4 == 0 && b200.fp4 == 1 && b200.peak_fp4_tflops == 2 * b200.peak_fp8_tflops);
  CHECK(memest_gpu_from_preset("h100-pcie-80gb", &gpu) == MEMEST_OK && gpu.fp4 == 0);
  CHECK(memest_gpu_from_preset("h100-80gb", &gpu) == MEMEST_OK);
  CHECK(strcmp(memest_enum_name(MEMEST_ENUM_LOSS, MEMEST_LOSS_CHUNKED_LM_HEAD), "chunked_lm_head") == 0);
  CHECK(strcmp(memest_enum_name(MEMEST_ENUM_LOSS, MEMEST_LOSS_CHUNKED_LINEAR), "chunked_linear") == 0);
  CHECK(memest_pretrain_request_init(&r, sizeof r) == MEMEST_OK);
  CHECK(r.loss_chunks == 0 && r.fsdp_use_orig_params == 0 && r.fp4 == 0);
  r.model = &model;
  r.gpu = &gpu;
  out.struct_size = sizeof out;

  /* the chunked losses */
  r.gpus = 1; r.tp = 1; r.pp = 1; r.seq_len = 4096; r.micro_batch = 1;
  r.recompute = MEMEST_RECOMPUTE_FULL; r.framework = MEMEST_FRAMEWORK_PYTORCH;
  r.optimizer_bytes = MEMEST_OPTIMIZER_BYTES_DERIVE;
  r.grad_bytes = MEMEST_GRAD_BYTES_DERIVE; /* 1.11: as a JSON request without grad_dtype */
  r.loss = MEMEST_LOSS_CHUNKED_LINEAR;
  CHECK(memest_pretrain(&r, &out, &stage, sizeof stage, 1) == MEMEST_OK);
  CHECK(stage.loss_bytes == 986447872.0);
  r.loss_chunks = 16;
  CHECK(memest_pretrain(&r, &out, &stage, sizeof stage, 1) == MEMEST_OK);
  CHECK(stage.loss_bytes == 526778368.0);
  json = answer("{\"mode\": \"pretrain\", \"model\": \"llama-3.1-8b\", \"gpu\": \"h100-80gb\","
                " \"parallel\": {\"gpus\": 1}, \"training\": {\"seq_len\": 4096, \"micro_batch\": 1,"
                " \"framework\": \"pytorch\", \"recompute\": \"full\", \"loss\": \"chunked_linear\","
                " \"loss_chunks\": 16}}");
  CHECK(json_number(json, "loss_bytes") == stage.loss_bytes);
  CHECK(json_number(json, "peak_bytes") == out.peak_bytes);
  CHECK(json_number(json, "loss_chunks") == 16);
  memest_string_free(json);
  r.loss = MEMEST_LOSS_CHUNKED_LM_HEAD; r.loss_chunks = 0;
  CHECK(memest_pretrain(&r, &out, &stage, sizeof stage, 1) == MEMEST_OK);
  r.loss = MEMEST_LOSS_UNFUSED; r.loss_chunks = 4; /* not a chunked loss */
  CHECK(memest_pretrain(&r, &out, NULL, sizeof stage, 0) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "training.loss_chunks") == 0);
  r.loss = MEMEST_LOSS_CHUNKED_LINEAR; r.loss_chunks = -1;
  CHECK(memest_pretrain(&r, &out, NULL, sizeof stage, 0) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "training.loss_chunks") == 0);
  r.loss = MEMEST_LOSS_AUTO; r.loss_chunks = 0;

  /* fsdp1 + LoRA: FlatParameters that mix frozen weights and adapters */
  r.gpus = 8; r.zero = 3; r.seq_len = 2048; r.global_batch = 8;
  r.recompute = MEMEST_RECOMPUTE_NONE; r.framework = MEMEST_FRAMEWORK_FSDP1;
  r.adapter = MEMEST_ADAPTER_LORA; r.adapter_bytes = 2;
  CHECK(memest_pretrain(&r, &out, &stage, sizeof stage, 1) == MEMEST_OK);
  CHECK(stage.adapter_gradients_bytes == 851968.0);
  r.fsdp_use_orig_params = 1;
  CHECK(memest_pretrain(&r, &out, &stage, sizeof stage, 1) == MEMEST_OK);
  CHECK(stage.adapter_gradients_bytes == 1745747968.0);
  CHECK(stage.gradients_bytes == 1745747968.0);
  r.framework = MEMEST_FRAMEWORK_FSDP; /* FSDP2 has no FlatParameter */
  CHECK(memest_pretrain(&r, &out, NULL, sizeof stage, 0) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "training.fsdp_use_orig_params") == 0);
  r.framework = MEMEST_FRAMEWORK_MEGATRON; r.adapter = MEMEST_ADAPTER_NONE; r.adapter_bytes = 4;
  r.fsdp_use_orig_params = 0; r.zero = 0;

  /* NVFP4 under Megatron: 7504658432 linear parameters in two 0.5625-byte copies instead of
     fp8's two 1-byte copies, 6566576128 bytes less */
  memest_stage fp8_stage;
  r.gpu = &b200;
  r.gpus = 8; r.tp = 1; r.pp = 1; r.seq_len = 8192; r.micro_batch = 1; r.global_batch = 8;
  r.recompute = MEMEST_RECOMPUTE_FULL;
  r.fp8 = 1;
  CHECK(memest_pretrain(&r, &out, &fp8_stage, sizeof fp8_stage, 1) == MEMEST_OK);
  r.fp8 = 0; r.fp4 = 1;
  CHECK(memest_pretrain(&r, &out, &stage, sizeof stage, 1) == MEMEST_OK);
  CHECK(fp8_stage.weights_bytes - stage.weights_bytes == 6566576128.0);
  r.gpu = &gpu;
  CHECK(memest_pretrain(&r, &out, NULL, sizeof stage, 0) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "training.fp4") == 0);
  r.gpu = &b200; r.fp8 = 1;
  CHECK(memest_pretrain(&r, &out, NULL, sizeof stage, 0) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "training.fp4") == 0);
}

/* 1.11: recompute_modules through the typed struct, on the values of
   tests/unit/test_recompute_modules.cpp: a small qwen3_moe (h 64, 4 MoE layers, 8 experts of 32,
   top-2) at s 16, tp 2 with SP, selective recomputation under Megatron. Per layer the routed
   parts 320 + 4096 + 3072 + 2112 = 9600 bytes and the pre-MLP norm's output 1024. The
   fine-tuning result's peak_verdict: LLMem's Algorithm 1 on Llama-3.1-8B, 8 x A100 80GB, 2048
   tokens selects a method at 98.8 % of capacity: verdict FITS (LLMem's test), peak_verdict
   TIGHT. */
#define SMALL_QWEN3_MOE                                                                          \
  "{\"model_type\": \"qwen3_moe\", \"hidden_size\": 64, \"num_hidden_layers\": 4,"                \
  " \"num_attention_heads\": 4, \"num_key_value_heads\": 4, \"head_dim\": 16,"                     \
  " \"intermediate_size\": 256, \"moe_intermediate_size\": 32, \"num_experts\": 8,"                \
  " \"num_experts_per_tok\": 2, \"vocab_size\": 100, \"max_position_embeddings\": 64,"             \
  " \"decoder_sparse_step\": 1, \"mlp_only_layers\": [], \"tie_word_embeddings\": false}"
static void typed_1_11(void) {
  memest_model model, llama;
  memest_gpu gpu, a100;
  memest_pretrain_request r;
  memest_pretrain_result out;
  memest_stage plain, stage;
  char *json;
  model.struct_size = sizeof model;
  llama.struct_size = sizeof llama;
  gpu.struct_size = sizeof gpu;
  a100.struct_size = sizeof a100;
  CHECK(memest_model_from_config_json(SMALL_QWEN3_MOE, &model) == MEMEST_OK);
  CHECK(memest_gpu_from_preset("h100-80gb", &gpu) == MEMEST_OK);
  CHECK(memest_enum_count(MEMEST_ENUM_RECOMPUTE_MODULE) == MEMEST_RECOMPUTE_MODULE_COUNT);
  CHECK(strcmp(memest_enum_name(MEMEST_ENUM_RECOMPUTE_MODULE, MEMEST_RECOMPUTE_MODULE_MOE), "moe") == 0);
  CHECK(memest_pretrain_request_init(&r, sizeof r) == MEMEST_OK);
  CHECK(r.recompute_modules == 0);
  r.model = &model;
  r.gpu = &gpu;
  r.gpus = 2; r.tp = 2; r.pp = 1; r.zero = 1; r.sequence_parallel = 1;
  r.seq_len = 16; r.micro_batch = 1; r.global_batch = 4;
  r.framework = MEMEST_FRAMEWORK_MEGATRON; r.recompute = MEMEST_RECOMPUTE_SELECTIVE;
  r.optimizer_bytes = MEMEST_OPTIMIZER_BYTES_DERIVE;
  out.struct_size = sizeof out;
  CHECK(memest_pretrain(&r, &out, &plain, sizeof plain, 1) == MEMEST_OK);
  r.recompute_modules = 1u << MEMEST_RECOMPUTE_MODULE_MOE;
  CHECK(memest_pretrain(&r, &out, &stage, sizeof stage, 1) == MEMEST_OK);
  CHECK(plain.activations_bytes - stage.activations_bytes == 4 * 9600.0);
  r.recompute_modules = 1u << MEMEST_RECOMPUTE_MODULE_LAYERNORM | 1u << MEMEST_RECOMPUTE_MODULE_MOE;
  CHECK(memest_pretrain(&r, &out, &stage, sizeof stage, 1) == MEMEST_OK);
  CHECK(plain.activations_bytes - stage.activations_bytes == 4 * (9600.0 + 1024.0));
  json = answer("{\"mode\": \"pretrain\", \"model\": " SMALL_QWEN3_MOE ", \"gpu\": \"h100-80gb\","
                " \"parallel\": {\"gpus\": 2, \"tp\": 2, \"pp\": 1, \"zero\": 1, \"sp\": true},"
                " \"training\": {\"framework\": \"megatron\", \"seq_len\": 16, \"micro_batch\": 1,"
                " \"global_batch\": 4, \"recompute\": \"selective\","
                " \"recompute_modules\": [\"layernorm\", \"moe\"]}}");
  CHECK(json_number(json, "peak_bytes") == out.peak_bytes);
  CHECK(json_number(json, "activations_bytes") == stage.activations_bytes);
  memest_string_free(json);
  r.recompute_modules = 1u << MEMEST_RECOMPUTE_MODULE_MLA_UP_PROJ; /* no latent attention */
  CHECK(memest_pretrain(&r, &out, NULL, sizeof stage, 0) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "training.recompute_modules") == 0);
  r.recompute_modules = 1u << MEMEST_RECOMPUTE_MODULE_COUNT; /* past the last module */
  CHECK(memest_pretrain(&r, &out, NULL, sizeof stage, 0) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "training.recompute_modules") == 0);

  memest_finetune_request f;
  memest_finetune_choice choice;
  memest_finetune_option options[8];
  memest_finetune_result ft;
  CHECK(memest_model_from_preset("llama-3.1-8b", &llama) == MEMEST_OK);
  CHECK(memest_gpu_from_preset("a100-80gb", &a100) == MEMEST_OK);
  CHECK(memest_finetune_request_init(&f, sizeof f) == MEMEST_OK);
  f.model = &llama;
  f.gpu = &a100;
  f.gpus = 8; f.seq_len = 2048;
  choice.struct_size = sizeof choice;
  CHECK(memest_finetune_select(&f, &choice, options, sizeof options[0], 8) == MEMEST_OK);
  f.method = choice.selected; f.batch = choice.batch;
  ft.struct_size = sizeof ft;
  CHECK(memest_finetune(&f, &ft) == MEMEST_OK);
  CHECK(ft.verdict == MEMEST_VERDICT_FITS);
  CHECK(ft.peak_verdict == MEMEST_VERDICT_TIGHT);
  json = answer("{\"mode\": \"finetune\", \"model\": \"llama-3.1-8b\", \"gpu\": \"a100-80gb\","
                " \"parallel\": {\"gpus\": 8}, \"training\": {\"seq_len\": 2048},"
                " \"finetune\": {\"method\": \"auto\"}}");
  CHECK(json != NULL && strstr(json, "\"peak_verdict\": \"tight\"") != NULL);
  CHECK(json_number(json, "usage_fraction") == ft.usage_fraction);
  memest_string_free(json);
}

/* 1.12: use_liger_kernel through the typed struct, on the values of tests/unit/test_liger.cpp:
   Llama-3.1-8B on one H100, seq 2048, micro batch 1, global batch 8, no recomputation, ZeRO 0.
   Under pytorch 32 layers save 61440 B per token less: 32 * 61440 * 2048 = 4026531840 B. */
static void typed_1_12(void) {
  memest_model model;
  memest_gpu gpu;
  memest_pretrain_request r;
  memest_pretrain_result out;
  memest_stage plain, stage;
  char *json;
  model.struct_size = sizeof model;
  gpu.struct_size = sizeof gpu;
  CHECK(memest_model_from_preset("llama-3.1-8b", &model) == MEMEST_OK);
  CHECK(memest_gpu_from_preset("h100-80gb", &gpu) == MEMEST_OK);
  CHECK(memest_pretrain_request_init(&r, sizeof r) == MEMEST_OK);
  CHECK(r.use_liger_kernel == 0);
  r.model = &model;
  r.gpu = &gpu;
  r.gpus = 1; r.tp = 1; r.pp = 1; r.zero = 0;
  r.seq_len = 2048; r.micro_batch = 1; r.global_batch = 8;
  r.framework = MEMEST_FRAMEWORK_PYTORCH; r.recompute = MEMEST_RECOMPUTE_NONE;
  r.grad_bytes = MEMEST_GRAD_BYTES_DERIVE;
  r.optimizer_bytes = MEMEST_OPTIMIZER_BYTES_DERIVE;
  out.struct_size = sizeof out;
  CHECK(memest_pretrain(&r, &out, &plain, sizeof plain, 1) == MEMEST_OK);
  r.use_liger_kernel = 1;
  CHECK(memest_pretrain(&r, &out, &stage, sizeof stage, 1) == MEMEST_OK);
  CHECK(plain.activations_bytes - stage.activations_bytes == 4026531840.0);
  json = answer("{\"mode\": \"pretrain\", \"model\": \"llama-3.1-8b\", \"gpu\": \"h100-80gb\","
                " \"parallel\": {\"gpus\": 1, \"tp\": 1, \"pp\": 1, \"zero\": 0},"
                " \"training\": {\"framework\": \"pytorch\", \"seq_len\": 2048, \"micro_batch\": 1,"
                " \"global_batch\": 8, \"recompute\": \"none\", \"use_liger_kernel\": true}}");
  CHECK(json_number(json, "peak_bytes") == out.peak_bytes);
  CHECK(json_number(json, "activations_bytes") == stage.activations_bytes);
  CHECK(json != NULL && strstr(json, "\"use_liger_kernel\": true") != NULL);
  memest_string_free(json);
  r.use_liger_kernel = 2;
  CHECK(memest_pretrain(&r, &out, NULL, sizeof stage, 0) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "training.use_liger_kernel") == 0);
  r.use_liger_kernel = 1;
  r.framework = MEMEST_FRAMEWORK_MEGATRON;
  CHECK(memest_pretrain(&r, &out, NULL, sizeof stage, 0) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "training.use_liger_kernel") == 0);
}

/* 1.15: master_weights and optimizer_state_bytes (the parts of a derived K) through the typed
   struct, on the values of tests/unit/test_optimizer_storage.cpp: Llama-3.1-8B (8,030,261,248
   parameters) on 8 H100s, megatron, zero 1 sharding K over 8, seq 2048, micro batch 1, global
   batch 8, no recomputation. Stage optimizer bytes K * 8030261248 / 8: K 12 by default
   (12045391872), K 10 with remainders (10037826560, a 2007565312-byte master), K 4 without a
   master and bf16 moments (4015130624). */
static void typed_1_15(void) {
  memest_model model;
  memest_gpu gpu;
  memest_pretrain_request r;
  memest_pretrain_result out;
  memest_stage stage;
  char *json;
  model.struct_size = sizeof model;
  gpu.struct_size = sizeof gpu;
  CHECK(memest_model_from_preset("llama-3.1-8b", &model) == MEMEST_OK);
  CHECK(memest_gpu_from_preset("h100-80gb", &gpu) == MEMEST_OK);
  CHECK(memest_pretrain_request_init(&r, sizeof r) == MEMEST_OK);
  CHECK(r.master_weights == MEMEST_MASTER_AUTO);
  CHECK(r.optimizer_state_bytes == 0);
  CHECK(memest_enum_count(MEMEST_ENUM_MASTER_WEIGHTS) == MEMEST_MASTER_COUNT);
  CHECK(memest_enum_value(MEMEST_ENUM_MASTER_WEIGHTS, "remainder") == MEMEST_MASTER_REMAINDER);
  CHECK(strcmp(memest_enum_name(MEMEST_ENUM_MASTER_WEIGHTS, MEMEST_MASTER_NONE), "none") == 0);
  r.model = &model;
  r.gpu = &gpu;
  r.gpus = 8; r.tp = 1; r.pp = 1; r.zero = 1;
  r.seq_len = 2048; r.micro_batch = 1; r.global_batch = 8;
  r.framework = MEMEST_FRAMEWORK_MEGATRON; r.recompute = MEMEST_RECOMPUTE_NONE;
  r.grad_bytes = MEMEST_GRAD_BYTES_DERIVE;
  r.optimizer_bytes = MEMEST_OPTIMIZER_BYTES_DERIVE;
  out.struct_size = sizeof out;
  CHECK(memest_pretrain(&r, &out, &stage, sizeof stage, 1) == MEMEST_OK);
  CHECK(stage.optimizer_bytes == 12045391872.0);
  CHECK(stage.master_weights_bytes == 4015130624.0);
  r.master_weights = MEMEST_MASTER_REMAINDER;
  CHECK(memest_pretrain(&r, &out, &stage, sizeof stage, 1) == MEMEST_OK);
  CHECK(stage.optimizer_bytes == 10037826560.0);
  CHECK(stage.master_weights_bytes == 2007565312.0);
  json = answer("{\"mode\": \"pretrain\", \"model\": \"llama-3.1-8b\", \"gpu\": \"h100-80gb\","
                " \"parallel\": {\"gpus\": 8, \"tp\": 1, \"pp\": 1, \"zero\": 1},"
                " \"training\": {\"framework\": \"megatron\", \"seq_len\": 2048, \"micro_batch\": 1,"
                " \"global_batch\": 8, \"recompute\": \"none\", \"master_weights\": \"remainder\"}}");
  CHECK(json_number(json, "peak_bytes") == out.peak_bytes);
  CHECK(json_number(json, "master_weights_bytes") == stage.master_weights_bytes);
  CHECK(json != NULL && strstr(json, "\"master_weights\": \"remainder\"") != NULL);
  memest_string_free(json);
  r.master_weights = MEMEST_MASTER_NONE;
  r.optimizer_state_bytes = 2;
  CHECK(memest_pretrain(&r, &out, &stage, sizeof stage, 1) == MEMEST_OK);
  CHECK(stage.optimizer_bytes == 4015130624.0);
  CHECK(stage.master_weights_bytes == 0);
  json = answer("{\"mode\": \"pretrain\", \"model\": \"llama-3.1-8b\", \"gpu\": \"h100-80gb\","
                " \"parallel\": {\"gpus\": 8, \"tp\": 1, \"pp\": 1, \"zero\": 1},"
                " \"training\": {\"framework\": \"megatron\", \"seq_len\": 2048, \"micro_batch\": 1,"
                " \"global_batch\": 8, \"recompute\": \"none\", \"master_weights\": \"none\","
                " \"optimizer_state_dtype\": \"bf16\"}}");
  CHECK(json_number(json, "peak_bytes") == out.peak_bytes);
  CHECK(json != NULL && strstr(json, "\"optimizer_state_dtype\": \"bf16\"") != NULL);
  memest_string_free(json);
  /* K given whole beside them, past the last value, 3-byte moments, fsdp: refused by field */
  r.optimizer_bytes = 12;
  CHECK(memest_pretrain(&r, &out, NULL, sizeof stage, 0) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "training.master_weights") == 0);
  r.master_weights = MEMEST_MASTER_AUTO;
  CHECK(memest_pretrain(&r, &out, NULL, sizeof stage, 0) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "training.optimizer_state_dtype") == 0);
  r.optimizer_bytes = MEMEST_OPTIMIZER_BYTES_DERIVE;
  r.optimizer_state_bytes = 3;
  CHECK(memest_pretrain(&r, &out, NULL, sizeof stage, 0) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "training.optimizer_state_dtype") == 0);
  r.optimizer_state_bytes = 0;
  r.master_weights = MEMEST_MASTER_COUNT;
  CHECK(memest_pretrain(&r, &out, NULL, sizeof stage, 0) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "training.master_weights") == 0);
  r.master_weights = MEMEST_MASTER_FP32;
  r.framework = MEMEST_FRAMEWORK_FSDP;
  CHECK(memest_pretrain(&r, &out, NULL, sizeof stage, 0) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "training.master_weights") == 0);
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--typed") == 0) {
    typed_pretrain();
    typed_model_states();
    typed_finetune();
    typed_search();
    typed_1_6();
    typed_1_7();
    typed_1_9();
    typed_1_11();
    typed_1_12();
    typed_1_15();
    typed_models();
    typed_enums();
    json_bad_inputs();
    printf("typed C API checks: %s (%d failures)\n", failures ? "FAILED" : "ok", failures);
    return failures ? 1 : 0;
  }
  if (argc == 2) return run_cases(argv[1]);
  fprintf(stderr, "usage: runner CASES | runner --typed\n");
  return 2;
}
