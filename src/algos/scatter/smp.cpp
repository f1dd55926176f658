// SMP-aware scatter(v) (seed 001 §5.1's per-node shared-memory transfer and
// §6.2.1's phases, run as the mirror image of gather/smp).
//
// The root puts the blocks of every other node, packed in that node's rank
// order, in one message into the node's shared buffer (node u relative to the
// root's node on port (u-1) mod k, step (u-1)/k, striped above the threshold);
// every rank of that node copies its block out as soon as the message is in. A
// node of one rank takes its block straight into recv. The root delivers its own
// node's blocks with shared-memory puts straight into the local ranks' recv.
// Hockney, M nodes of P ranks: T = ceil((M-1)/k) (ts + P m tau) + m c.
#include "algos/common/trees.hpp"
#include "core/registry.hpp"

namespace railcoll::scatter {

namespace {

void build_smp(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int M = t.nnodes(), k = t.rails(), root = o.root, R = t.node_of(root);
  enum { kArrived = 0 };  // node counter: the node's message is in; rank counter 0: my block is in
  for (int n = 0; n < M; ++n) {
    const auto& ranks = t.ranks_of(n);
    if (n == R) {
      for (int r : ranks) {
        Segment block{b.send(root, L.displ[r], L.count[r]), b.recv(r, 0, L.count[r])};
        if (r == root) {
          b.copy(root, 0, {block});
        } else {
          b.put(root, 0, r, {block}, 0, b.rank_counter(r, 0));
          b.wait(r, 0, b.rank_counter(r, 0), 1);
        }
      }
      continue;
    }
    const int u = (n - R + M) % M, step = (u - 1) / k;
    if (ranks.size() == 1) {
      const int r = ranks[0];
      b.put(root, step, r, {{b.send(root, L.displ[r], L.count[r]), b.recv(r, 0, L.count[r])}},
            b.rail_for(L.count[r], (u - 1) % k), b.rank_counter(r, 0));
      b.wait(r, step, b.rank_counter(r, 0), 1);
      continue;
    }
    std::vector<Segment> segs;
    uint64_t packed = 0;
    for (int r : ranks) {
      segs.push_back({b.send(root, L.displ[r], L.count[r]), b.shared(n, packed, L.count[r])});
      packed += L.count[r];
    }
    b.set_shared(n, packed);
    b.put(root, step, t.leader(n), segs, b.rail_for(packed, (u - 1) % k), b.node_counter(n, kArrived));
    packed = 0;
    for (int r : ranks) {
      b.wait(r, step, b.node_counter(n, kArrived), 1);
      b.copy(r, step + 1, {{b.shared(n, packed, L.count[r]), b.recv(r, 0, L.count[r])}});
      packed += L.count[r];
    }
  }
}

const AlgorithmRegistrar registered{{Collective::Scatter, 3, "smp",
    "root puts each node's blocks into its shared buffer in one message, ranks copy out",
    "ceil((M-1)/k) (ts + P m tau) + m c",
    "seed 001 §5.1, §6.2.1", {}, build_smp}, Collective::Scatterv};

}  // namespace

}  // namespace railcoll::scatter
