/*
 * C front end of the cross-language test, and the C-level check run under ASan/LSan/UBSan.
 *
 *   runner CASES      reads lines "name<TAB>request-json", answers each with memest_request_json
 *                     and prints "name<TAB>response" on one line. For a refused request it prints
 *                     {"ok": false, "error": {...}} rebuilt from the status code,
 *                     memest_last_error_field() and memest_last_error() (the C way to see an
 *                     error), after checking that the returned error document was produced.
 *   runner --typed    calls the typed entry points (pretrain, model states, fine-tuning, presets,
 *                     config parsing) with good and bad inputs: NULL pointers, short structs,
 *                     unknown presets, inconsistent layouts; checks they agree with the JSON
 *                     entry point and that out-parameters are untouched on failure.
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
  memest_pretrain_request r;
  memest_pretrain_result out;
  memest_stage stages[2];
  CHECK(memest_pretrain_request_init(&r) == MEMEST_OK);
  CHECK(memest_model_from_preset("llama-3.1-8b", &r.model) == MEMEST_OK);
  CHECK(memest_gpu_from_preset("a100-40gb", &r.gpu) == MEMEST_OK);
  r.gpus = 8; r.tp = 4; r.pp = 2; r.seq_len = 8192; r.global_batch = 1024;
  CHECK(memest_pretrain(&r, &out, stages, 2) == MEMEST_OK);
  CHECK(out.stage_count == 2 && out.verdict == MEMEST_VERDICT_FITS);
  CHECK(strcmp(memest_verdict_name((memest_verdict)out.verdict), "fits") == 0);
  char *json = answer("{\"mode\": \"pretrain\", \"model\": \"llama-3.1-8b\", \"gpu\": \"a100-40gb\","
                      " \"parallel\": {\"gpus\": 8, \"tp\": 4, \"pp\": 2},"
                      " \"training\": {\"seq_len\": 8192, \"global_batch\": 1024}}");
  CHECK(json_number(json, "estimate_bytes") == out.estimate_bytes);
  CHECK(json_number(json, "peak_bytes") == out.peak_bytes);
  CHECK(json_number(json, "activations_bytes") == stages[0].activations_bytes);
  memest_string_free(json);

  /* only the result, no stage array */
  memest_pretrain_result bare;
  CHECK(memest_pretrain(&r, &bare, NULL, 0) == MEMEST_OK);
  CHECK(bare.estimate_bytes == out.estimate_bytes);

  /* bad inputs: the field is named and out-parameters stay untouched */
  memest_pretrain_result untouched;
  memset(&untouched, 0xAB, sizeof untouched);
  memest_pretrain_result copy = untouched;
  r.tp = 3;
  CHECK(memest_pretrain(&r, &untouched, stages, 2) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "parallel.tp") == 0);
  CHECK(strlen(memest_last_error()) > 0);
  CHECK(memcmp(&untouched, &copy, sizeof copy) == 0);
  r.tp = 4;
  CHECK(memest_pretrain(NULL, &out, stages, 2) == MEMEST_ERR_NULL_POINTER);
  CHECK(memest_pretrain(&r, NULL, stages, 2) == MEMEST_ERR_NULL_POINTER);
  memest_pretrain_request old = r;
  old.struct_size = 8;
  CHECK(memest_pretrain(&old, &out, stages, 2) == MEMEST_ERR_STRUCT_SIZE);
  memest_gpu gpu;
  memest_gpu_init(&gpu);
  r.gpu = gpu; /* no capacity */
  CHECK(memest_pretrain(&r, &out, stages, 2) != MEMEST_OK);
}

static void typed_model_states(void) {
  memest_model_states_request r;
  memest_model_states_result out;
  CHECK(memest_model_states_request_init(&r) == MEMEST_OK);
  memest_model_init(&r.model);
  r.model.num_parameters = 7.5e9;
  r.gpus = 64; r.zero = 1; r.param_bytes = 2; r.grad_bytes = 2;
  CHECK(memest_model_states(&r, &out) == MEMEST_OK);
  CHECK(out.verdict == MEMEST_VERDICT_UNKNOWN);
  char *json = answer("{\"mode\": \"model_states\", \"model\": {\"num_parameters\": 7.5e9},"
                      " \"parallel\": {\"gpus\": 64, \"zero\": 1},"
                      " \"training\": {\"param_dtype\": \"fp16\", \"grad_dtype\": \"fp16\"}}");
  CHECK(json_number(json, "estimate_bytes") == out.estimate_bytes);
  memest_string_free(json);
  r.zero = 4;
  CHECK(memest_model_states(&r, &out) == MEMEST_ERR_INVALID_ARGUMENT);
  CHECK(strcmp(memest_last_error_field(), "parallel.zero") == 0);
  CHECK(memest_model_states(&r, NULL) == MEMEST_ERR_NULL_POINTER);
}

static void typed_finetune(void) {
  memest_finetune_request r;
  memest_finetune_result out;
  memest_finetune_choice choice;
  CHECK(memest_finetune_request_init(&r) == MEMEST_OK);
  CHECK(memest_model_from_preset("opt-2.7b", &r.model) == MEMEST_OK);
  CHECK(memest_gpu_from_preset("v100-16gb", &r.gpu) == MEMEST_OK);
  r.gpus = 4; r.method = MEMEST_FINETUNE_ZERO3; r.batch = 8; r.seq_len = 512;
  CHECK(memest_finetune(&r, &out) == MEMEST_OK);
  char *json = answer("{\"mode\": \"finetune\", \"model\": \"opt-2.7b\", \"gpu\": \"v100-16gb\","
                      " \"parallel\": {\"gpus\": 4}, \"training\": {\"seq_len\": 512},"
                      " \"finetune\": {\"method\": \"zero3\", \"batch\": 8}}");
  CHECK(json_number(json, "peak_bytes") == out.peak_bytes);
  memest_string_free(json);
  r.method = MEMEST_FINETUNE_AUTO;
  CHECK(memest_finetune(&r, &out) != MEMEST_OK); /* AUTO is for memest_finetune_select */
  CHECK(memest_finetune_select(&r, &choice) == MEMEST_OK);
  CHECK(strcmp(memest_finetune_method_name((memest_finetune_method)choice.selected), "unknown") != 0);
  json = answer("{\"mode\": \"finetune\", \"model\": \"opt-2.7b\", \"gpu\": \"v100-16gb\","
                " \"parallel\": {\"gpus\": 4}, \"training\": {\"seq_len\": 512},"
                " \"finetune\": {\"method\": \"auto\"}}");
  CHECK(json_number(json, "max_batch") == (double)choice.batch);
  memest_string_free(json);
  r.gpus = 0;
  CHECK(memest_finetune_select(&r, &choice) != MEMEST_OK);
  CHECK(strlen(memest_last_error_field()) > 0);
}

static void typed_models(void) {
  memest_model m;
  memest_param_count c;
  uint32_t n = memest_model_preset_count();
  CHECK(n > 0);
  for (uint32_t i = 0; i < n; ++i) {
    const char *id = memest_model_preset_id(i);
    CHECK(id != NULL);
    CHECK(memest_model_from_preset(id, &m) == MEMEST_OK);
    CHECK(memest_model_validate(&m) == MEMEST_OK);
    CHECK(memest_model_parameter_count(&m, &c) == MEMEST_OK && c.total > 0);
  }
  CHECK(memest_model_preset_id(n) == NULL);
  for (uint32_t i = 0; i < memest_gpu_preset_count(); ++i) {
    memest_gpu g;
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
  CHECK(strcmp(memest_status_name((memest_status)999), "unknown") == 0);
  CHECK(memest_version_number() == MEMEST_VERSION_NUMBER);
  CHECK(strcmp(memest_version_string(), MEMEST_VERSION_STRING) == 0);
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
  memest_string_free(NULL);
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--typed") == 0) {
    typed_pretrain();
    typed_model_states();
    typed_finetune();
    typed_models();
    json_bad_inputs();
    printf("typed C API checks: %s (%d failures)\n", failures ? "FAILED" : "ok", failures);
    return failures ? 1 : 0;
  }
  if (argc == 2) return run_cases(argv[1]);
  fprintf(stderr, "usage: runner CASES | runner --typed\n");
  return 2;
}
