// Every accepted range of a request, in one place: the typed API, the JSON reader, the
// search's enumeration and the error messages all read these. Far beyond any real run, and
// small enough that every product formed from them stays exact in a double and in int64.
#pragma once

#include <cstdint>

namespace memest {

// Parallel layout (pretraining, model states, search)
constexpr int64_t kMaxGpus = int64_t{1} << 24;        // GPUs, and each of tp, cp, pp
constexpr int64_t kMaxVpp = 100000;                   // virtual stages: at most one per layer
// Training
constexpr int64_t kMaxSeq = int64_t{1} << 24;         // tokens per sequence
constexpr int64_t kMaxMicroBatch = int64_t{1} << 20;  // sequences per micro-batch
constexpr int64_t kMaxGlobalBatch = int64_t{1} << 40; // sequences per iteration
// Fine-tuning (LLMem)
constexpr int64_t kMaxFinetuneGpus = int64_t{1} << 20;
constexpr int64_t kMaxFinetuneBatch = int64_t{1} << 20;
// Search
constexpr double kMaxSearchCandidates = 5e7;  // refused above, with how to narrow the space
constexpr uint32_t kMaxShortlist = 1u << 20;  // explicit layouts in one search

}  // namespace memest
