// Layout search: enumerate parallel layouts, estimate each with the same code as a single
// estimate (make_plan_unchecked, peak_memory, estimate_throughput), drop those predicted to
// go out of memory, rank the rest by predicted throughput.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "memest/memest.h"
#include "plan/requests.hpp"

namespace memest {

struct SearchOutcome {
  uint64_t candidates = 0;  // layouts considered
  uint64_t evaluated = 0;   // layouts whose memory and throughput were estimated
  std::array<uint64_t, MEMEST_PRUNE_REASON_COUNT> pruned{};  // by memest_prune_reason
  uint64_t ranked = 0;      // layouts that could be ranked
  std::vector<memest_search_entry> entries;  // the best `capacity`, best first
  double tie_margin = 0;    // entries within it of the best's tokens/s are ties
};

// Validates the request (throws memest::Error naming the field), then enumerates the space
// (or the request's shortlist) and keeps the best `capacity` entries.
SearchOutcome run_search(const SearchRequest& request, uint32_t capacity);

// Divisors of n in increasing order, into `out` (up to `max` of them); returns the count, or
// -1 when n has more than `max` divisors (nothing is dropped silently).
int divisors(int64_t n, int64_t* out, int max);

}  // namespace memest
