#include "throughput/collectives.hpp"

#include <algorithm>
#include <cmath>

namespace memest {

double collective_seconds(const memest_gpu& g, Collective kind, const Group& group, double bytes) {
  const double n = group.size;
  if (n <= 1 || !(bytes > 0)) return 0;
  const double node = static_cast<double>(g.gpus_per_node);
  const bool inside = group.span <= node;
  const double per_node = std::clamp(node / (group.span / n), 1.0, n);  // ranks in one node
  const double bus =
      (inside ? g.intra_node_gbps : std::min(g.intra_node_gbps, per_node * g.inter_node_gbps)) * 1e9;
  const double latency = (inside ? g.intra_node_latency_us : g.inter_node_latency_us) * 1e-6;
  double factor = 1;
  switch (kind) {
    case Collective::AllReduce: factor = 2 * (n - 1) / n; break;
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll: factor = (n - 1) / n; break;
    case Collective::SendRecv: factor = 1; break;
  }
  // NCCL's tree and ring latencies grow with the steps a collective takes; log2(n) steps is
  // the tree's (and the hierarchical ring's across nodes) order (floor, from the bits of n).
  const int bits = 63 - __builtin_clzll(static_cast<unsigned long long>(n));
  const double steps = kind == Collective::SendRecv ? 1 : std::max(1, bits);
  return latency * steps + bytes * factor / bus;
}

}  // namespace memest
