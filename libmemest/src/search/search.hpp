// Layout search: enumerate parallel layouts, estimate each with the same code as a single
// estimate (make_plan_unchecked, peak_memory, estimate_throughput), drop those predicted to
// go out of memory, rank the rest by predicted throughput. The hot loop allocates nothing.
#pragma once

#include "memest/memest.h"

namespace memest {

// Validates the request, then fills `result` and the best `capacity` entries.
void run_search(const memest_search_request& request, memest_search_result& result,
                memest_search_entry* entries, uint32_t capacity);

// Divisors of n in increasing order, into `out` (up to `max` of them); returns the count.
int divisors(int64_t n, int64_t* out, int max);

}  // namespace memest
