#include "finetune/chunks.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
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

// Consecutive equal sizes grouped: (size, count) in order.
using Groups = std::vector<std::pair<double, int64_t>>;

void add_size(Groups& g, double s, int64_t count) {
  if (!g.empty() && g.back().first == s) {
    g.back().second += count;
  } else {
    g.emplace_back(s, count);
  }
}

// A stretch of one repetition of a run: `body` packed `repeats` times in a row. A
// mixture-of-experts layer's experts with biases are (weight, bias, weight, bias, ...) per
// expert: one body of a few tensors repeated once per expert.
struct Segment {
  Groups body;
  int64_t repeats = 1;
  double elements = 0;  // the body's total
};

struct GroupedRun {
  std::vector<Segment> segments;
  int64_t repeats = 1;
  double elements = 0;  // one repetition's total
};

double elements_of(const Groups& g) {
  double total = 0;
  for (const auto& [s, count] : g) total += s * static_cast<double>(count);
  return total;
}

// How many times sizes[i, i + period) repeats from i on.
int64_t repeats_at(const std::vector<double>& sizes, size_t i, size_t period) {
  if (i + period > sizes.size()) return 0;
  int64_t k = 1;
  for (size_t j = i + period; j + period <= sizes.size(); j += period, ++k) {
    if (!std::equal(sizes.begin() + static_cast<std::ptrdiff_t>(i),
                    sizes.begin() + static_cast<std::ptrdiff_t>(i + period),
                    sizes.begin() + static_cast<std::ptrdiff_t>(j))) {
      break;
    }
  }
  return k;
}

// One repetition's sizes as segments: wherever a short block of 2 to kMaxPeriod tensors repeats
// three or more times, that block (the one covering most tensors, the shortest on a tie) is
// one segment; equal neighbours elsewhere are grouped. O(n * kMaxPeriod^2) at worst.
std::vector<Segment> segments_of(const std::vector<double>& sizes) {
  constexpr size_t kMaxPeriod = 8;
  std::vector<Segment> out;
  auto plain = [&]() -> Groups& {
    if (out.empty() || out.back().repeats != 1) out.push_back(Segment{});
    return out.back().body;
  };
  size_t i = 0;
  while (i < sizes.size()) {
    size_t best_period = 1;
    int64_t best_repeats = repeats_at(sizes, i, 1);
    for (size_t period = 2; period <= kMaxPeriod; ++period) {
      const int64_t k = repeats_at(sizes, i, period);
      if (k >= 3 && static_cast<size_t>(k) * period > static_cast<size_t>(best_repeats) * best_period) {
        best_period = period;
        best_repeats = k;
      }
    }
    if (best_period == 1) {
      add_size(plain(), sizes[i], best_repeats);
    } else {
      Segment block;
      block.repeats = best_repeats;
      for (size_t j = i; j < i + best_period; ++j) add_size(block.body, sizes[j], 1);
      out.push_back(std::move(block));
    }
    i += best_period * static_cast<size_t>(best_repeats);
  }
  return out;
}

std::vector<GroupedRun> grouped(const std::vector<TensorRun>& runs) {
  std::vector<GroupedRun> out;
  out.reserve(runs.size());
  for (const TensorRun& r : runs) {
    GroupedRun g{segments_of(r.sizes), r.repeats, 0};
    for (Segment& seg : g.segments) {
      seg.elements = elements_of(seg.body);
      g.elements += seg.elements * static_cast<double>(seg.repeats);
    }
    out.push_back(std::move(g));
  }
  return out;
}

ChunkPlan finish(const Packing& p, double chunk_elements);

// Packs `repeats` repetitions of `once`, each of `body` elements. Repetitions that all fit the
// room left go in at once (every tensor of them fits: no chunk opens), so a chunk costs O(1)
// however many repetitions it holds. Then one repetition is packed tensor by tensor: a step.
// A step's effect depends only on the room left when it starts, so once a room repeats the
// steps between cycle; whole cycles are added at once (the sizes are whole numbers, exact in
// double, so rooms compare exactly). The repeat is found by Brent's cycle detection: the room
// is compared with one marked room, re-marked at distances 1, 2, 4, ... steps, so each step
// costs one comparison and no memory.
template <typename Once>
void pack_repeated(Packing& p, int64_t repeats, double body, const Once& once) {
  int64_t mark_rep = 0, mark_step = 0, power = 1, steps = 0;
  Packing mark = p;
  bool watching = repeats > 2;
  int64_t rep = 0;
  while (rep < repeats) {
    if (watching && steps > 0) {
      if (p.left == mark.left) {
        const int64_t cycle = rep - mark_rep;
        const int64_t cycles = (repeats - rep) / cycle;
        p.chunks += static_cast<double>(cycles) * (p.chunks - mark.chunks);
        p.used += static_cast<double>(cycles) * (p.used - mark.used);
        rep += cycles * cycle;
        watching = false;  // the rest (less than a cycle) is packed step by step
        if (rep >= repeats) break;
      } else if (steps - mark_step == power) {
        mark = p;
        mark_rep = rep;
        mark_step = steps;
        power *= 2;
      }
    }
    if (body > 0 && p.left >= body) {
      const int64_t fit = static_cast<int64_t>(
          std::min(static_cast<double>(repeats - rep), std::floor(p.left / body)));
      p.left -= static_cast<double>(fit) * body;
      p.used += static_cast<double>(fit) * body;
      rep += fit;
      if (rep >= repeats) break;
    }
    once(p);
    ++rep;
    ++steps;
  }
}

void pack_groups(Packing& p, const Groups& body, double chunk_elements) {
  for (const auto& [s, count] : body) pack_many(p, s, count, chunk_elements);
}

// Packs one run: its repetitions, and inside each its segments, cycle by cycle.
void pack_run(Packing& p, const GroupedRun& run, double chunk_elements) {
  pack_repeated(p, run.repeats, run.elements, [&](Packing& q) {
    for (const Segment& seg : run.segments) {
      pack_repeated(q, seg.repeats, seg.elements,
                    [&](Packing& r) { pack_groups(r, seg.body, chunk_elements); });
    }
  });
}

ChunkPlan pack_runs(const std::vector<GroupedRun>& runs, double chunk_elements) {
  Packing p;
  for (const GroupedRun& r : runs) pack_run(p, r, chunk_elements);
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
  return pack_runs(grouped(runs), chunk_elements);
}

ChunkPlan search_chunk_size(const std::vector<double>& sizes, const ChunkSearch& search) {
  return search_chunk_size(std::vector<TensorRun>{{sizes, 1}}, search);
}

ChunkPlan search_chunk_size(const std::vector<TensorRun>& runs, const ChunkSearch& search) {
  const double step = search.step_elements;
  // Start at the larger of the minimum and the largest tensor, rounded up to the step.
  const double start = std::ceil(std::max(search.min_elements, largest_of(runs)) / step) * step;
  const std::vector<GroupedRun> groups = grouped(runs);
  ChunkPlan best = pack_runs(groups, start);
  for (double cs = start + step; cs <= start + search.range_elements; cs += step) {
    const ChunkPlan p = pack_runs(groups, cs);
    if (p.waste_elements < best.waste_elements) best = p;
  }
  return best;
}

}  // namespace memest
