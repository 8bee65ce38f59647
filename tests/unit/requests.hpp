// Test helpers over the C API's versioned structs: a request together with the model and GPU
// it points to (copies re-point to their own), and zeroed results with struct_size set.
#pragma once

#include <cstring>

#include <doctest/doctest.h>

#include "memest/memest.h"

namespace memest_test {

// A zeroed struct whose struct_size is its sizeof (how a caller prepares a result).
template <typename T>
T sized() {
  T value;
  std::memset(static_cast<void*>(&value), 0, sizeof value);
  value.struct_size = sizeof value;
  return value;
}

inline memest_model model_preset(const char* id) {
  memest_model m = sized<memest_model>();
  REQUIRE(memest_model_from_preset(id, &m) == MEMEST_OK);
  return m;
}

inline memest_gpu gpu_preset(const char* id) {
  memest_gpu g = sized<memest_gpu>();
  REQUIRE(memest_gpu_from_preset(id, &g) == MEMEST_OK);
  return g;
}

// A pretraining request with its own model and GPU.
struct Pretrain {
  memest_model model;
  memest_gpu gpu;
  memest_pretrain_request r;

  Pretrain(const char* model_id, const char* gpu_id)
      : model(model_preset(model_id)), gpu(gpu_preset(gpu_id)) {
    REQUIRE(memest_pretrain_request_init(&r, sizeof r) == MEMEST_OK);
    link();
  }
  Pretrain(const Pretrain& o) : model(o.model), gpu(o.gpu), r(o.r) { link(); }
  Pretrain& operator=(const Pretrain& o) {
    model = o.model, gpu = o.gpu, r = o.r;
    link();
    return *this;
  }
  void link() {
    r.model = &model;
    r.gpu = &gpu;
  }
  memest_status run(memest_pretrain_result& out, memest_stage* stages = nullptr,
                    uint32_t capacity = 0) const {
    out = sized<memest_pretrain_result>();
    return memest_pretrain(&r, &out, stages, sizeof(memest_stage), capacity);
  }
};

// A fine-tuning request with its own model and GPU.
struct Finetune {
  memest_model model;
  memest_gpu gpu;
  memest_finetune_request r;

  Finetune(const char* model_id, const char* gpu_id)
      : model(model_preset(model_id)), gpu(gpu_preset(gpu_id)) {
    REQUIRE(memest_finetune_request_init(&r, sizeof r) == MEMEST_OK);
    link();
  }
  Finetune(const Finetune& o) : model(o.model), gpu(o.gpu), r(o.r) { link(); }
  void link() {
    r.model = &model;
    r.gpu = &gpu;
  }
};

// Algorithm 1's choice with its four options.
struct Choice {
  memest_finetune_choice choice = sized<memest_finetune_choice>();
  memest_finetune_option options[4];
  memest_status run(const memest_finetune_request& r) {
    for (auto& o : options) o = sized<memest_finetune_option>();
    return memest_finetune_select(&r, &choice, options, sizeof options[0], 4);
  }
};

// A model-states request with its own model and GPU (the GPU is used only when set).
struct ModelStates {
  memest_model model;
  memest_gpu gpu;
  memest_model_states_request r;

  ModelStates() : model(sized<memest_model>()), gpu(sized<memest_gpu>()) {
    REQUIRE(memest_model_init(&model, sizeof model) == MEMEST_OK);
    REQUIRE(memest_gpu_init(&gpu, sizeof gpu) == MEMEST_OK);
    REQUIRE(memest_model_states_request_init(&r, sizeof r) == MEMEST_OK);
    r.model = &model;
    r.gpu = nullptr;
  }
  ModelStates(const ModelStates&) = delete;
  void use_gpu(const char* id) {
    gpu = gpu_preset(id);
    r.gpu = &gpu;
  }
};

}  // namespace memest_test
