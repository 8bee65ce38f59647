// Reading and writing the caller's versioned structs (docs/api-stability.md): every public
// struct starts with its struct_size, the sizeof the caller was compiled with. A struct of an
// older, smaller layout is read over this version's defaults and written only up to its own
// size; a size below the first released layout or above this version's is refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "memest/memest.h"

namespace memest::capi {

// The size of the first released (1.0) layout of each struct: its struct_size may not be
// smaller. Fields appended later leave these unchanged.
#define MEMEST_FIRST_LAYOUT_END(type, last_field) \
  (offsetof(type, last_field) + sizeof(static_cast<type*>(nullptr)->last_field))

template <typename T>
struct FirstLayout;
#define MEMEST_FIRST_LAYOUT(type, last_field)                                          \
  template <>                                                                          \
  struct FirstLayout<type> {                                                           \
    static constexpr std::size_t size = MEMEST_FIRST_LAYOUT_END(type, last_field);     \
  };
MEMEST_FIRST_LAYOUT(memest_model, logits_fp32)
MEMEST_FIRST_LAYOUT(memest_param_count, lm_head)
MEMEST_FIRST_LAYOUT(memest_gpu, pipeline_stage_seconds)
MEMEST_FIRST_LAYOUT(memest_model_states_request, optimizer_bytes)
MEMEST_FIRST_LAYOUT(memest_model_states_result, verdict)
MEMEST_FIRST_LAYOUT(memest_pretrain_request, uneven_pipeline)
MEMEST_FIRST_LAYOUT(memest_stage, peak_bytes)
MEMEST_FIRST_LAYOUT(memest_pretrain_result, paper_peak_bytes)
MEMEST_FIRST_LAYOUT(memest_layout, zero)
MEMEST_FIRST_LAYOUT(memest_search_request, uneven_pipeline)
MEMEST_FIRST_LAYOUT(memest_search_entry, last_stage_layers)
MEMEST_FIRST_LAYOUT(memest_search_result, ranked)
MEMEST_FIRST_LAYOUT(memest_finetune_request, chunk_bytes)
MEMEST_FIRST_LAYOUT(memest_finetune_result, chunk_waste_bytes)
MEMEST_FIRST_LAYOUT(memest_finetune_option, peak_bytes)
MEMEST_FIRST_LAYOUT(memest_finetune_choice, option_count)
#undef MEMEST_FIRST_LAYOUT

inline void require(const void* p, const std::string& name) {
  if (!p) throw Error(MEMEST_ERR_NULL_POINTER, name, name + ": NULL pointer");
}

// The pointer fields appended after a struct's 1.0 layout, which a struct_size can end inside.
// A size that does would read the pointer's first bytes from the caller and the rest from the
// defaults: an address nobody wrote (fuzz_typed found it with pipeline_layout). Every pointer
// appended to a public struct gets a row here.
struct PointerField {
  std::size_t offset;
  const char* name;
};
template <typename T>
struct AppendedPointers {
  static constexpr PointerField fields[1] = {{0, nullptr}};  // none
};
template <>
struct AppendedPointers<memest_pretrain_request> {
  static constexpr PointerField fields[1] = {
      {offsetof(memest_pretrain_request, pipeline_layout), "pipeline_layout"}};
};
template <>
struct AppendedPointers<memest_search_request> {
  static constexpr PointerField fields[1] = {{offsetof(memest_search_request, layouts), "layouts"}};
};

// Refuses a struct_size this library cannot read or write: below the 1.0 layout, above this
// version's, or ending inside a pointer (a layout ends after a field, never inside one).
template <typename T>
void check_size(uint64_t size, const std::string& field) {
  const std::size_t min = FirstLayout<T>::size;
  if (size < min || size > sizeof(T)) {
    throw Error(MEMEST_ERR_STRUCT_SIZE, field + ".struct_size",
                field + ".struct_size: " + std::to_string(size) + " is not a layout this library (" +
                    MEMEST_VERSION_STRING + ") knows: between " + std::to_string(min) + " and " +
                    std::to_string(sizeof(T)) +
                    " (set it to sizeof, or call the struct's _init function)");
  }
  for (const PointerField& p : AppendedPointers<T>::fields) {
    if (p.name != nullptr && size > p.offset && size < p.offset + sizeof(void*)) {
      throw Error(MEMEST_ERR_STRUCT_SIZE, field + ".struct_size",
                  field + ".struct_size: " + std::to_string(size) + " ends inside the pointer " +
                      p.name + " (bytes " + std::to_string(p.offset) + " to " +
                      std::to_string(p.offset + sizeof(void*)) +
                      "): no layout does (set it to sizeof, or call the struct's _init function)");
    }
  }
}

// The caller's struct read over `defaults` (its missing trailing fields keep them).
template <typename T>
T read_versioned(const T* p, const std::string& field, T defaults) {
  require(p, field);
  check_size<T>(p->struct_size, field);
  std::memcpy(static_cast<void*>(&defaults), p, p->struct_size);
  defaults.struct_size = sizeof(T);
  return defaults;
}

// Checks that *p can receive a T (call before any work, so that failures write nothing).
template <typename T>
void check_output(const T* p, const std::string& field) {
  require(p, field);
  check_size<T>(p->struct_size, field);
}

// Writes `value` up to the caller's struct_size (checked by check_output before).
template <typename T>
void write_versioned(T* p, T value) {
  const uint32_t size = p->struct_size;
  value.struct_size = size;
  std::memcpy(static_cast<void*>(p), &value, size);
}

// Checks a caller's output array of `capacity` elements `element_size` bytes apart.
template <typename T>
void check_array(const void* base, uint32_t element_size, uint32_t capacity,
                 const std::string& field) {
  if (capacity == 0) return;
  require(base, field);
  const std::size_t min = FirstLayout<T>::size;
  if (element_size < min || element_size > sizeof(T)) {
    throw Error(MEMEST_ERR_STRUCT_SIZE, field,
                field + ": element size " + std::to_string(element_size) +
                    " is not a layout this library knows: between " + std::to_string(min) +
                    " and " + std::to_string(sizeof(T)) + " (pass sizeof the element)");
  }
}

// Writes element i of such an array (struct_size = element_size).
template <typename T>
void write_element(void* base, uint32_t element_size, std::size_t i, T value) {
  value.struct_size = element_size;
  std::memcpy(static_cast<char*>(base) + i * element_size, &value, element_size);
}

}  // namespace memest::capi
