// Chunk-size search, as a chunk-based memory manager (Colossal-AI Gemini, Fang et al.)
// does it: parameters are packed in module order into equal chunks; a tensor never straddles
// two chunks; the size that wastes the least space wins (ties: the smaller size).
#pragma once

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

// Packs `sizes` (numels, in order) into chunks of `chunk_elements`.
ChunkPlan pack_chunks(const std::vector<double>& sizes, double chunk_elements);

// Searches the chunk size with the least waste.
ChunkPlan search_chunk_size(const std::vector<double>& sizes, const ChunkSearch& search = {});

}  // namespace memest
