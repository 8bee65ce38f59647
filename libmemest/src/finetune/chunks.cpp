#include "finetune/chunks.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <utility>

namespace memest {

namespace {

// Packing state between tensors: the room left in the current chunk, the chunks opened and
// the elements placed.
struct Packing {
  double left = 0, chunks = 0, used = 0;
};

void pack_one(Packing& p, double s, double chunk_elements) {
  if (s > p.left) {  // start a new chunk (a tensor larger than a chunk gets its own chunks)
    const double n = std::max(1.0, std::ceil(s / chunk_elements));
    p.chunks += n;
    p.left = n * chunk_elements;
  }
  p.left -= s;
  p.used += s;
}

// `count` tensors of `s` elements in a row (a mixture-of-experts layer's experts: gate, up
// and down of every expert have one size), packed as pack_one would one by one, in O(1) when
// a tensor fits a chunk: the current chunk takes floor(left / s), each new chunk floor(cs / s).
void pack_many(Packing& p, double s, int64_t count, double chunk_elements) {
  if (count == 1 || s > chunk_elements || !(s > 0)) {
    for (int64_t i = 0; i < count; ++i) pack_one(p, s, chunk_elements);
    return;
  }
  const double n = static_cast<double>(count);
  const double fit = std::min(n, std::floor(p.left / s));
  p.left -= fit * s;
  const double rest = n - fit;
  if (rest > 0) {
    const double per_chunk = std::floor(chunk_elements / s);
    const double opened = std::ceil(rest / per_chunk);
    p.chunks += opened;
    p.left = chunk_elements - (rest - (opened - 1) * per_chunk) * s;
  }
  p.used += n * s;
}

// A run with its consecutive equal sizes grouped: (size, count) in order.
struct GroupedRun {
  std::vector<std::pair<double, int64_t>> groups;
  int64_t repeats = 1;
};

std::vector<GroupedRun> grouped(const std::vector<TensorRun>& runs) {
  std::vector<GroupedRun> out;
  out.reserve(runs.size());
  for (const TensorRun& r : runs) {
    GroupedRun g;
    g.repeats = r.repeats;
    for (const double s : r.sizes) {
      if (!g.groups.empty() && g.groups.back().first == s) {
        ++g.groups.back().second;
      } else {
        g.groups.emplace_back(s, 1);
      }
    }
    out.push_back(std::move(g));
  }
  return out;
}

ChunkPlan finish(const Packing& p, double chunk_elements);

// The room left at the start of a repetition, where it was first seen.
struct Seen {
  int64_t rep;
  double chunks, used;
};
using SeenRooms = std::unordered_map<double, Seen>;

// Packs one run. A repetition's effect depends only on the room left when it starts, so once
// a room repeats the repetitions between cycle; whole cycles are added at once (the sizes are
// whole numbers, exact in double, so rooms compare exactly). `seen` is scratch space the
// caller reuses across runs and candidate sizes.
void pack_run(Packing& p, const GroupedRun& run, double chunk_elements, SeenRooms& seen) {
  constexpr size_t kWatched = size_t{1} << 16;  // past this many rooms: one by one
  seen.clear();
  bool watching = run.repeats > 2;
  for (int64_t rep = 0; rep < run.repeats; ++rep) {
    if (watching) {
      const auto it = seen.find(p.left);
      if (it != seen.end()) {
        const int64_t cycle = rep - it->second.rep;
        const int64_t cycles = (run.repeats - rep) / cycle;
        p.chunks += static_cast<double>(cycles) * (p.chunks - it->second.chunks);
        p.used += static_cast<double>(cycles) * (p.used - it->second.used);
        rep += cycles * cycle;
        watching = false;  // the rest (fewer than a cycle) is packed one by one
        if (rep >= run.repeats) break;
      } else if (seen.size() < kWatched) {
        seen.emplace(p.left, Seen{rep, p.chunks, p.used});
      } else {
        watching = false;
      }
    }
    for (const auto& [s, count] : run.groups) pack_many(p, s, count, chunk_elements);
  }
}

ChunkPlan pack_runs(const std::vector<GroupedRun>& runs, double chunk_elements,
                    SeenRooms& seen) {
  Packing p;
  for (const GroupedRun& r : runs) pack_run(p, r, chunk_elements, seen);
  return finish(p, chunk_elements);
}

ChunkPlan finish(const Packing& p, double chunk_elements) {
  ChunkPlan plan;
  plan.chunk_elements = chunk_elements;
  plan.chunks = p.chunks;
  plan.waste_elements = p.chunks * chunk_elements - p.used;
  return plan;
}

double largest_of(const std::vector<TensorRun>& runs) {
  double largest = 0;
  for (const TensorRun& r : runs) {
    for (const double s : r.sizes) largest = std::max(largest, s);
  }
  return largest;
}

}  // namespace

std::vector<TensorRun> tensor_runs(const std::vector<double>& sizes,
                                   const std::vector<int64_t>& layer_of) {
  std::vector<TensorRun> runs;
  int64_t open_layer = -2;  // the layer the last run's last repetition holds (-2: none)
  std::vector<double> current;  // that repetition's sizes while it is being read
  auto close = [&] {
    if (current.empty()) return;
    if (!runs.empty() && runs.back().sizes == current && open_layer >= 0) {
      ++runs.back().repeats;
    } else {
      runs.push_back({current, 1});
    }
    current.clear();
  };
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int64_t layer = layer_of[i];
    if (layer != open_layer || layer < 0) {
      close();
      open_layer = layer;
    }
    current.push_back(sizes[i]);
  }
  close();
  return runs;
}

ChunkPlan pack_chunks(const std::vector<double>& sizes, double chunk_elements) {
  return pack_chunks(std::vector<TensorRun>{{sizes, 1}}, chunk_elements);
}

ChunkPlan pack_chunks(const std::vector<TensorRun>& runs, double chunk_elements) {
  SeenRooms seen;
  return pack_runs(grouped(runs), chunk_elements, seen);
}

ChunkPlan search_chunk_size(const std::vector<double>& sizes, const ChunkSearch& search) {
  return search_chunk_size(std::vector<TensorRun>{{sizes, 1}}, search);
}

ChunkPlan search_chunk_size(const std::vector<TensorRun>& runs, const ChunkSearch& search) {
  const double step = search.step_elements;
  // Start at the larger of the minimum and the largest tensor, rounded up to the step.
  const double start = std::ceil(std::max(search.min_elements, largest_of(runs)) / step) * step;
  const std::vector<GroupedRun> groups = grouped(runs);
  SeenRooms seen;
  ChunkPlan best = pack_runs(groups, start, seen);
  for (double cs = start + step; cs <= start + search.range_elements; cs += step) {
    const ChunkPlan p = pack_runs(groups, cs, seen);
    if (p.waste_elements < best.waste_elements) best = p;
  }
  return best;
}

}  // namespace memest
