#include "finetune/chunks.hpp"

#include <algorithm>
#include <cmath>

namespace memest {

ChunkPlan pack_chunks(const std::vector<double>& sizes, double chunk_elements) {
  ChunkPlan plan;
  plan.chunk_elements = chunk_elements;
  double left = 0;  // room in the current chunk
  double used = 0;
  for (double s : sizes) {
    if (s > left) {  // start a new chunk (a tensor larger than a chunk gets its own chunks)
      const double n = std::max(1.0, std::ceil(s / chunk_elements));
      plan.chunks += n;
      left = n * chunk_elements;
    }
    left -= s;
    used += s;
  }
  plan.waste_elements = plan.chunks * chunk_elements - used;
  return plan;
}

ChunkPlan search_chunk_size(const std::vector<double>& sizes, const ChunkSearch& search) {
  const double largest = sizes.empty() ? 0.0 : *std::max_element(sizes.begin(), sizes.end());
  const double step = search.step_elements;
  // Start at the larger of the minimum and the largest tensor, rounded up to the step.
  const double start = std::ceil(std::max(search.min_elements, largest) / step) * step;
  ChunkPlan best = pack_chunks(sizes, start);
  for (double cs = start + step; cs <= start + search.range_elements; cs += step) {
    const ChunkPlan p = pack_chunks(sizes, cs);
    if (p.waste_elements < best.waste_elements) best = p;
  }
  return best;
}

}  // namespace memest
