// Chunk-size search, as a chunk-based memory manager (Colossal-AI Gemini, Fang et al.)
// does it: parameters are packed in module order into equal chunks; a tensor never straddles
// two chunks; the size that wastes the least space wins (ties: the smaller size).
#pragma once

#include <cstdint>
#include <vector>

namespace memest {

struct ChunkSearch {
  double min_elements = 32.0 * 1024 * 1024;    // smallest candidate (also >= largest tensor)
  double range_elements = 32.0 * 1024 * 1024;  // candidates span [start, start + range]
  double step_elements = 1024;                 // spacing of candidates
};

struct ChunkPlan {
  double chunk_elements = 0;  // cs
  double chunks = 0;          // chunks the tensors occupy when packed
  double waste_elements = 0;  // chunks * cs - sum of tensor sizes
};

// Tensors in module order as runs: `sizes` packed `repeats` times in a row (a model's identical
// consecutive layers are one run, so packing costs the distinct layers, not all of them).
struct TensorRun {
  std::vector<double> sizes;
  int64_t repeats = 1;
};

// The runs of a tensor list whose entries carry their layer (-1 outside the layers):
// consecutive layers with the same sizes merge into one run.
std::vector<TensorRun> tensor_runs(const std::vector<double>& sizes,
                                   const std::vector<int64_t>& layer_of);

// Packs `sizes` (numels, in order) into chunks of `chunk_elements`.
ChunkPlan pack_chunks(const std::vector<double>& sizes, double chunk_elements);
ChunkPlan pack_chunks(const std::vector<TensorRun>& runs, double chunk_elements);

// Searches the chunk size with the least waste.
ChunkPlan search_chunk_size(const std::vector<double>& sizes, const ChunkSearch& search = {});
ChunkPlan search_chunk_size(const std::vector<TensorRun>& runs, const ChunkSearch& search = {});

}  // namespace memest
