#include "throughput/collectives.hpp"

#include <algorithm>
#include <cmath>

namespace memest {

Link link_of(const memest_gpu& g, const Group& group) {
  Link l;
  const double n = group.size;
  l.ranks = n;
  if (n <= 1) return l;
  const double node = static_cast<double>(g.gpus_per_node);
  const bool inside = group.span <= node;
  const double per_node = std::clamp(node / (group.span / n), 1.0, n);  // ranks in one node
  const double bus =
      (inside ? g.intra_node_gbps : std::min(g.intra_node_gbps, per_node * g.inter_node_gbps)) * 1e9;
  l.step_latency = (inside ? g.intra_node_latency_us : g.inter_node_latency_us) * 1e-6;
  // NCCL's tree and ring latencies grow with the steps a collective takes; log2(n) steps is
  // the tree's (and the hierarchical ring's across nodes) order (floor, from the bits of n).
  l.steps = std::max(1, 63 - __builtin_clzll(static_cast<unsigned long long>(n)));
  l.per_byte = 1 / bus;
  if (inside) {
    l.a2a_per_byte = l.per_byte;
  } else {
    const double off_node = (n - per_node) / (n - 1), on_node = (per_node - 1) / (n - 1);
    l.a2a_per_byte = std::max(off_node / (g.inter_node_gbps * 1e9), on_node / (g.intra_node_gbps * 1e9));
  }
  return l;
}

double collective_seconds(const Link& l, Collective kind, double bytes) {
  const double n = l.ranks;
  if (n <= 1 || !(bytes > 0)) return 0;
  double factor = 1;
  switch (kind) {
    case Collective::AllReduce: factor = 2 * (n - 1) / n; break;
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll: factor = (n - 1) / n; break;
    case Collective::SendRecv: factor = 1; break;
  }
  const double steps = kind == Collective::SendRecv ? 1 : l.steps;
  const double per_byte = kind == Collective::AllToAll ? l.a2a_per_byte : l.per_byte;
  return l.step_latency * steps + bytes * factor * per_byte;
}

double collective_seconds(const memest_gpu& g, Collective kind, const Group& group, double bytes) {
  if (group.size <= 1 || !(bytes > 0)) return 0;
  return collective_seconds(link_of(g, group), kind, bytes);
}

}  // namespace memest
