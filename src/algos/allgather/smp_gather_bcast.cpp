// SMP-aware Gather and Broadcast all-gather (seed 001 §6.2.1, Figure 3).
//
// Phase 1 (step 0): every process memcpy's its block into its node's shared
//   buffer (laid out like recv) and sets its flag; the master (first process of
//   the node) waits for all flags.
// Phase 2 (step 1): Direct inter-node gather: each master writes its node's
//   blocks to their final positions in the root node's shared buffer, one
//   message per master, masters on different rails (node mod k), striped above
//   the threshold. On the root node the local blocks are already in place (the
//   "optimization for node 0").
// Phase 3 (steps 2..): the root master broadcasts the whole buffer to the other
//   masters over a (k+1)-nomial tree (k ports; the papers use the hardware
//   broadcast here), then every process copies the buffer into its recv (no
//   node-wide synchronization after it: common.hpp: consecutive calls use two banks).
// Hockney, M nodes, P per node, n = N*m, c = memcpy time per byte:
//   T = P m c + (ts + (M-1) P m tau / k) + ceil(log_{k+1} M) (ts + n tau) + n c
// (the root node receives M-1 chunks over k rails; in a broadcast round a master
// sends up to k whole buffers at once, so each rail carries n per round).
#include "algos/allgather/common.hpp"
#include "algos/common/trees.hpp"
#include "core/registry.hpp"

namespace railcoll::allgather {

namespace {

void build_smp_gather_bcast(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int M = t.nnodes(), k = t.rails(), root = t.node_of(0);
  enum { kGathered = 0, kAtRoot = 1, kBcast = 2 };
  const int copy_out_step = 2 + trees::ceil_log(k + 1, M);

  for (int n = 0; n < M; ++n) {
    b.set_shared(n, L.total());
    shm_gather(b, L, n, 0, kGathered, [&](int r) { return L.displ[r]; });
    int master = t.leader(n);
    b.wait(master, 0, b.node_counter(n, kGathered), t.node_size(n));
    int v = (n - root + M) % M;  // position in the broadcast tree
    if (n != root) {
      auto runs = runs_of(t.ranks_of(n));
      auto segs = same_offset_segments(L, runs, b.shared(n, 0, 0), b.shared(root, 0, 0));
      uint64_t len = 0;
      for (auto& s : segs) len += s.src.length;
      b.put(master, 1, t.leader(root), std::move(segs), b.rail_for(len, n % k), b.node_counter(root, kAtRoot));
      b.wait(master, 1, b.node_counter(n, kBcast), 1);
    } else {
      b.wait(master, 1, b.node_counter(n, kAtRoot), M - 1);
    }
    // (k+1)-nomial tree: in round t the nodes below (k+1)^t send to v + j*(k+1)^t.
    for (auto& e : trees::knomial_children(v, M, k)) {
      int c = (e.child + root) % M;
      b.put(master, 2 + e.round, t.leader(c), {{b.shared(n, 0, L.total()), b.shared(c, 0, L.total())}},
            b.rail_for(L.total(), e.port), b.node_counter(c, kBcast));
    }
    for (int r : t.ranks_of(n)) {
      if (r != master) {
        if (n == root) {
          b.wait(r, 1, b.node_counter(n, kGathered), t.node_size(n));
          b.wait(r, 1, b.node_counter(n, kAtRoot), M - 1);
        } else {
          b.wait(r, copy_out_step, b.node_counter(n, kBcast), 1);
        }
      }
      b.copy(r, copy_out_step, {{b.shared(n, 0, L.total()), b.recv(r, 0, L.total())}});
    }
  }
}

const AlgorithmRegistrar registered{{Collective::Allgather, 9, "smp_gather_bcast",
    "shm gather, Direct gather of masters to root, broadcast, shm copy-out",
    "P m c + (ts + (M-1) P m tau/k) + ceil(log_{k+1}M) (ts + N m tau) + N m c",
    "seed 001 §6.2.1", {}, build_smp_gather_bcast}};

}  // namespace

}  // namespace railcoll::allgather
