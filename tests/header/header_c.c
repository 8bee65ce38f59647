/* The public header compiled alone as strict C99 (-pedantic -Werror), then used: the
 * version macros must agree with the library it links against. */
#include <memest/memest.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  memest_pretrain_request request;
  memest_pretrain_result result;
  memest_stage stages[2];
  memest_model model;
  memest_gpu gpu;
  if (memest_version_number() != MEMEST_VERSION_NUMBER) return 1;
  if (strcmp(memest_version_string(), MEMEST_VERSION_STRING) != 0) return 1;
  if (memest_pretrain_request_init(&request, sizeof request) != MEMEST_OK) return 1;
  if (memest_model_init(&model, sizeof model) != MEMEST_OK) return 1;
  if (memest_gpu_init(&gpu, sizeof gpu) != MEMEST_OK) return 1;
  if (memest_model_from_preset("llama-3.1-8b", &model) != MEMEST_OK) return 1;
  if (memest_gpu_from_preset("a100-40gb", &gpu) != MEMEST_OK) return 1;
  request.model = &model;
  request.gpu = &gpu;
  result.struct_size = sizeof result;
  request.gpus = 8;
  request.tp = 4;
  request.pp = 2;
  request.seq_len = 8192;
  if (memest_pretrain(&request, &result, stages, sizeof stages[0], 2) != MEMEST_OK) return 1;
  printf("C99: %.2f GiB (%s)\n", result.estimate_bytes / 1073741824.0,
         memest_verdict_name((memest_verdict)result.verdict));
  /* Table 2, (4,1,2,1) on 8 GPUs: 27.2 */
  return (result.estimate_bytes / 1073741824.0 > 27.195 && result.estimate_bytes / 1073741824.0 < 27.205) ? 0 : 1;
}
