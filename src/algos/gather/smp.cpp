// SMP-aware gather (seed 001 §5.1: the per-node shared-memory gather, "co-located
// processes just need to concurrently transfer their messages to different
// sections of a shared memory region using memcpy() operations; and then the
// root process copies the entire shared-memory buffer into its own destination
// buffer"; Phase 2 of seed 001 §6.2.1 for the step between nodes).
//
// Step 0: on every node of several ranks, each rank copies its block into the
//   node's shared buffer (the node's blocks packed in rank order) and sets its
//   flag (shm_gather).
// Step 1..: the leader of every other node puts its node's blocks straight into
//   the root's recv at their final offsets, one message per node (one segment
//   per run of consecutive ranks), node u (relative to the root's node) on port
//   (u-1) mod k, striped above the threshold. A node of one rank puts from send.
// The root copies its node's blocks out of the shared buffer while the other
//   nodes' messages arrive, waits for M-1 of them. No node sync at the end
//   (allgather/common.hpp: consecutive calls use two banks).
// Hockney, M nodes, P per node: T = P m c + ceil((M-1)/k) (ts + P m tau) + P m c
// (the root's copy-out overlaps the network).
#include <algorithm>

#include "algos/allgather/common.hpp"
#include "algos/common/trees.hpp"
#include "core/registry.hpp"

namespace railcoll::gather {

namespace {

void build_smp(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int M = t.nnodes(), k = t.rails(), root = o.root, R = t.node_of(root);
  const int steps = (M - 1 + k - 1) / k;
  enum { kGathered = 0 };  // node counter; rank counter 0 of the root: nodes arrived
  // Each node's blocks packed in rank order: where a rank's block goes in its node's buffer.
  std::vector<uint64_t> packed(t.nranks(), 0), node_bytes(M, 0);
  for (int r = 0; r < t.nranks(); ++r) packed[r] = node_bytes[t.node_of(r)], node_bytes[t.node_of(r)] += L.count[r];
  for (int n = 0; n < M; ++n) {
    const auto& ranks = t.ranks_of(n);
    const int u = (n - R + M) % M, size = t.node_size(n);
    const auto runs = allgather::runs_of(ranks);
    auto node_segments = [&](Span src, Span dst) {
      std::vector<Segment> segs;
      for (auto& run : runs) {
        uint64_t len = L.range_bytes(run.first, run.second);
        segs.push_back({{src.region, src.owner, packed[run.first], len}, {dst.region, dst.owner, L.displ[run.first], len}});
      }
      return segs;
    };
    if (size > 1) {
      b.set_shared(n, node_bytes[n]);
      allgather::shm_gather(b, L, n, 0, kGathered, [&](int r) { return packed[r]; });
    }
    if (n == R) {
      if (size == 1) b.copy(root, 0, {{b.send(root, 0, L.count[root]), b.recv(root, L.displ[root], L.count[root])}});
      b.wait(root, 0, b.node_counter(n, kGathered), size > 1 ? size : 0);
      if (size > 1) b.copy(root, 1, node_segments(b.shared(n, 0, 0), b.recv(root, 0, 0)));
      b.wait(root, steps, b.rank_counter(root, 0), M - 1);
    } else {
      const int leader = t.leader(n);
      Span src = size > 1 ? b.shared(n, 0, 0) : b.send(leader, 0, 0);
      if (size > 1) b.wait(leader, 0, b.node_counter(n, kGathered), size);
      b.put(leader, 1 + (u - 1) / k, root, node_segments(src, b.recv(root, 0, 0)), b.rail_for(node_bytes[n], (u - 1) % k),
            b.rank_counter(root, 0));
    }
  }
}

const AlgorithmRegistrar registered{{Collective::Gather, 3, "smp",
    "shm gather per node, leaders put node blocks to the root, root copies out",
    "P m c + ceil((M-1)/k) (ts + P m tau) + P m c",
    "seed 001 §5.1, §6.2.1", {}, build_smp}, Collective::Gatherv};  // gather's counts may differ: gatherv as well

}  // namespace

}  // namespace railcoll::gather
