// SMP-aware scatter(v) (seed 001 §5.1's per-node shared-memory transfer and
// §6.2.1's phases, run as the mirror image of gather/smp).
//
// The root puts the blocks of every other node, packed in that node's rank
// order, in one message into the node's shared buffer (node u relative to the
// root's node on port (u-1) mod k, step (u-1)/k, striped above the threshold);
// every rank of that node copies its block out as soon as the message is in. A
// node of one rank takes its block straight into recv. The root's own node comes
// last, the same way through its shared buffer (a memcpy and one flag, not a
// socket frame per local rank), and the root's own block last of all.
// Hockney, M nodes of P ranks: T = ceil((M-1)/k) (ts + P m tau) + m c.
#include "algos/common/trees.hpp"
#include "core/registry.hpp"

namespace railcoll::scatter {

namespace {

void build_smp(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int M = t.nnodes(), k = t.rails(), root = o.root, R = t.node_of(root);
  enum { kArrived = 0 };  // node counter: the node's message is in; rank counter 0: my block is in
  // The other nodes first (their messages take longest), the root's own node last.
  for (int u = 1; u <= M; ++u) {
    const int n = (R + u) % M;
    const bool own = n == R;
    const int step = own ? (M - 1 + k - 1) / k : (u - 1) / k;
    std::vector<int> ranks;
    for (int r : t.ranks_of(n))
      if (r != root) ranks.push_back(r);
    if (ranks.empty()) continue;
    if (ranks.size() == 1 && !own) {
      const int r = ranks[0];
      b.put(root, step, r, {{b.send(root, L.displ[r], L.count[r]), b.recv(r, 0, L.count[r])}},
            b.rail_for(L.count[r], (u - 1) % k), b.rank_counter(r, 0));
      b.wait(r, step, b.rank_counter(r, 0), 1);
      continue;
    }
    // One message into the node's shared buffer (on the root's own node a
    // memcpy and a flag, where a put into each rank's recv is a socket frame each).
    std::vector<Segment> segs;
    uint64_t packed = 0;
    for (int r : ranks) {
      segs.push_back({b.send(root, L.displ[r], L.count[r]), b.shared(n, packed, L.count[r])});
      packed += L.count[r];
    }
    b.set_shared(n, packed);
    if (own) {
      b.copy(root, step, segs);
      b.signal(root, step, b.node_counter(n, kArrived));
    } else {
      b.put(root, step, ranks[0], segs, b.rail_for(packed, (u - 1) % k), b.node_counter(n, kArrived));
    }
    packed = 0;
    for (int r : ranks) {
      b.wait(r, step, b.node_counter(n, kArrived), 1);
      b.copy(r, step + 1, {{b.shared(n, packed, L.count[r]), b.recv(r, 0, L.count[r])}});
      packed += L.count[r];
    }
  }
  b.copy(root, 0, {{b.send(root, L.displ[root], L.count[root]), b.recv(root, 0, L.count[root])}});
}

const AlgorithmRegistrar registered{{Collective::Scatter, 3, "smp",
    "root puts each node's blocks into its shared buffer in one message, ranks copy out",
    "ceil((M-1)/k) (ts + P m tau) + m c",
    "seed 001 §5.1, §6.2.1", {}, build_smp}, Collective::Scatterv};

}  // namespace

}  // namespace railcoll::scatter
