// Every accepted range of a request, in one place: the typed API, the JSON reader, the
// search's enumeration and the error messages all read these. Far beyond any real run, and
// small enough that every product formed from them stays exact in a double and in int64.
#pragma once

#include <cstddef>
#include <cstdint>

namespace memest {

// Model dimensions: far beyond any real model, small enough that every product of them stays
// exact in a double.
constexpr int64_t kMaxHidden = int64_t{1} << 20;
constexpr int64_t kMaxLayers = 100000;
constexpr int64_t kMaxHeads = int64_t{1} << 16;
constexpr int64_t kMaxFfn = int64_t{1} << 24;
constexpr int64_t kMaxExperts = int64_t{1} << 16;  // routed or shared experts per MoE layer
constexpr int64_t kMaxVocab = int64_t{1} << 27;
constexpr int64_t kMaxPositions = int64_t{1} << 31;
constexpr double kMaxBareParameters = 1e16;

// Parallel layout (pretraining, model states, search)
constexpr int64_t kMaxGpus = int64_t{1} << 24;        // GPUs, and each of tp, cp, pp
constexpr int64_t kMaxVpp = kMaxLayers;               // virtual stages: at most one per layer
// Training
constexpr int64_t kMaxSeq = int64_t{1} << 24;         // tokens per sequence
constexpr int64_t kMaxMicroBatch = int64_t{1} << 20;  // sequences per micro-batch
constexpr double kMaxCapacityFactor = 1024;         // MoE expert capacity factor
constexpr double kMinCapacityFactor = 0.01;         // below it an expert keeps (almost) no token
constexpr int64_t kMaxGlobalBatch = int64_t{1} << 40; // sequences per iteration
// Fine-tuning (LLMem)
constexpr int64_t kMaxFinetuneGpus = int64_t{1} << 20;
constexpr int64_t kMaxFinetuneBatch = int64_t{1} << 20;
// Experts (routed + shared) per MoE layer the fine-tuning mode estimates: LLMem's chunk search
// packs every expert's tensors at each candidate chunk size (the largest published models have
// 384 routed experts; Kimi K2).
constexpr int64_t kMaxFinetuneExperts = 1024;
// Experts of all MoE layers together (routed + shared, times the MoE layers): the mode lists
// every expert's tensors (about 40 bytes each); DeepSeek-V3 holds 58 x 257 = 14,906, Kimi K2
// 60 x 385 = 23,100. Found by fuzzing: 66,047 DeepSeek-V3 layers listed 51 million tensors
// (2 GB, 7.5 s).
constexpr int64_t kMaxFinetuneExpertsTotal = int64_t{1} << 20;
// Search
constexpr double kMaxSearchCandidates = 5e7;  // refused above, with how to narrow the space
constexpr uint32_t kMaxShortlist = 1u << 20;  // explicit layouts in one search

}  // namespace memest

namespace memest {

// a * b, or false when it would pass INT64_MAX (both non-negative). For products of
// caller-given sizes, so that no layout check ever divides by a wrapped-around value.
inline bool checked_mul(int64_t a, int64_t b, int64_t& out) {
  return !__builtin_mul_overflow(a, b, &out);
}

}  // namespace memest
