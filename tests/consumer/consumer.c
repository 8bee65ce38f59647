/* A scheduler-style consumer: reject a layout that would not fit. Prints the estimate. */
#include <memest/memest.h>
#include <stdio.h>

int main(void) {
  memest_model model;
  memest_gpu gpu;
  memest_pretrain_request r;
  memest_pretrain_result out;
  model.struct_size = sizeof model;
  gpu.struct_size = sizeof gpu;
  out.struct_size = sizeof out;
  memest_pretrain_request_init(&r, sizeof r);
  if (memest_model_from_preset("llama-3.1-8b", &model) != MEMEST_OK ||
      memest_gpu_from_preset("a100-40gb", &gpu) != MEMEST_OK) {
    fprintf(stderr, "%s\n", memest_last_error());
    return 1;
  }
  r.model = &model;
  r.gpu = &gpu;
  r.gpus = 8;
  r.tp = 4;
  r.pp = 2;
  r.seq_len = 8192;
  if (memest_pretrain(&r, &out, NULL, sizeof(memest_stage), 0) != MEMEST_OK) {
    fprintf(stderr, "%s\n", memest_last_error());
    return 1;
  }
  printf("%.2f GiB %s\n", out.estimate_bytes / 1073741824.0,
         memest_verdict_name((memest_verdict)out.verdict));
  return out.verdict == MEMEST_VERDICT_FITS ? 0 : 1;
}
