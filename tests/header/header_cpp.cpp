// The public header compiled alone as C++ (-pedantic -Werror) and used from C++.
#include <memest/memest.h>

#include <cstdio>
#include <cstring>

int main() {
  memest_model model;
  model.struct_size = sizeof model;
  if (memest_model_from_preset("gpt3-175b", &model) != MEMEST_OK) return 1;
  memest_param_count count;
  count.struct_size = sizeof count;
  if (memest_model_parameter_count(&model, &count) != MEMEST_OK) return 1;
  std::printf("C++: GPT-3 has %.0f parameters\n", count.total);
  if (memest_model_from_preset("no-such-model", &model) != MEMEST_ERR_UNKNOWN_PRESET) return 1;
  if (std::strcmp(memest_last_error_field(), "model") != 0) return 1;
  return count.total > 174e9 && count.total < 176e9 ? 0 : 1;
}
