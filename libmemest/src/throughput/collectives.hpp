// Time of one collective or point-to-point transfer: latency + bytes x factor / bus bandwidth,
// with the bus-bandwidth factors nccl-tests defines (doc/PERFORMANCE.md: all-reduce
// 2(n-1)/n, all-gather and reduce-scatter (n-1)/n of the full buffer, all-to-all (n-1)/n), and
// the bus bandwidth of where the group sits: inside the NVLink domain (gpus_per_node), or across
// nodes. Across nodes NCCL runs one ring or tree per channel, each through its own NIC (rail),
// with the hops inside a node on NVLink: a group with g ranks in each node moves its data over
// g NICs at once, so its bus bandwidth is g x the per-GPU network bandwidth, up to NVLink's
// (nccl-tests multi-node all_reduce_perf on 8-GPU DGX nodes reaches about 8 x the per-NIC rate;
// a group of one rank per node, such as data parallelism strided by tp = 8, gets one NIC's).
// All-to-all has no such ring: each rank sends the share bound for other nodes through its own
// NIC (DeepEP and NCCL's alltoall alike), the rest over NVLink.
#pragma once

#include "memest/memest.h"

namespace memest {

enum class Collective { AllReduce, AllGather, ReduceScatter, AllToAll, SendRecv };

// A process group: `size` ranks spread over `span` consecutive global ranks (a group of
// stride s and size n spans s*n ranks). Inside one NVLink domain when span <= gpus_per_node;
// else gpus_per_node / s of its ranks share each node.
struct Group {
  double size = 1;
  double span = 1;
};

// A group's link as its collectives see it: the latency of one step, the steps of a collective
// (log2 of the ranks) and the seconds per byte of bus traffic. Resolved once per group.
struct Link {
  double ranks = 1;
  double step_latency = 0;  // seconds
  double steps = 1;         // latency steps of a collective (not of a send)
  double per_byte = 0;      // seconds per byte of bus traffic
  // All-to-all has no ring to share rails on: of what a rank sends, the share bound for other
  // nodes leaves through its own NIC, the rest over NVLink, at the same time.
  double a2a_per_byte = 0;  // seconds per byte a rank sends, the slower of the two paths
};
Link link_of(const memest_gpu& g, const Group& group);
double collective_seconds(const Link& link, Collective kind, double bytes);

// Seconds for a collective over `group` of a buffer of `bytes` (the full, gathered size for
// all-gather / reduce-scatter; what one rank sends for send/recv and all-to-all), 0 for a group
// of one rank.
double collective_seconds(const memest_gpu& g, Collective kind, const Group& group, double bytes);

}  // namespace memest
