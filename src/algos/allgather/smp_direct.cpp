// SMP-aware Direct all-gather (seed 001 §6.2.2, Figure 4).
//
// Phase 1 (step 0): every process memcpy's its block into the node-shared buffer
//   (N blocks, laid out like recv) and sets its flag.
// Phase 2 (steps 1..ceil((M-1)/k)): the masters run k-port Direct across the M
//   nodes: step s, port j, the master writes its node's blocks into the shared
//   buffer of node (n + (s-1)*k + j) mod M. Overlap: right after posting the
//   first puts, every process copies its own node's blocks from the shared
//   buffer into its recv while the network works.
// Phase 3: every process copies each other node's chunk out as soon as it has
//   arrived (one node counter per source node, watched by all local processes,
//   in the order the chunks are sent), so copy-out overlaps the network too;
//   no final node sync (common.hpp: consecutive calls use two banks).
// Hockney, M nodes, P per node: T = P m copy + ceil((M-1)/k) (ts + P m tau)
//   + (N - P) m copy   (the own-node copy hides behind the network phase).
#include "algos/allgather/common.hpp"
#include "core/registry.hpp"

namespace railcoll::allgather {

namespace {

void build_smp_direct(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int M = t.nnodes(), k = t.rails();
  const int steps = (M - 1 + k - 1) / k;
  enum { kGathered = 0, kFrom = 1 };  // kFrom + q: node q's chunk is in

  for (int n = 0; n < M; ++n) {
    b.set_shared(n, L.total());
    shm_gather(b, L, n, 0, kGathered, [&](int r) { return L.displ[r]; });
    const RankRuns own = runs_of(t.ranks_of(n));
    uint64_t own_bytes = 0;
    for (auto& br : byte_ranges(L, own)) own_bytes += br.second - br.first;
    const int master = t.leader(n);
    for (int r : t.ranks_of(n)) {
      b.wait(r, 0, b.node_counter(n, kGathered), t.node_size(n));
      if (r == master) {
        for (int s = 1; s <= steps; ++s) {
          if (s > 1) b.flush(r, s);
          for (int j = 1; j <= k; ++j) {
            int dist = (s - 1) * k + j;
            if (dist > M - 1) break;
            int q = (n + dist) % M;
            b.put(r, s, t.leader(q), same_offset_segments(L, own, b.shared(n, 0, 0), b.shared(q, 0, 0)),
                  b.rail_for(own_bytes, j - 1), b.node_counter(q, kFrom + n));
          }
          if (s == 1) copy_runs_out(b, L, r, 1, own);  // overlap with the network
        }
        if (steps == 0) copy_runs_out(b, L, r, 1, own);
      } else {
        copy_runs_out(b, L, r, 1, own);
      }
      for (int dist = 1; dist < M; ++dist) {  // node n - dist sent to us at step ceil(dist/k)
        int q = (n - dist + M) % M, step = (dist + k - 1) / k;
        b.wait(r, step, b.node_counter(n, kFrom + q), 1);
        copy_runs_out(b, L, r, step, runs_of(t.ranks_of(q)));
      }
    }
  }
}

const AlgorithmRegistrar registered{{Collective::Allgather, 10, "smp_direct",
    "shm gather, k-port Direct among node masters, overlapped shm copy-out",
    "P m c + ceil((M-1)/k) (ts + P m tau) + (N-P) m c",
    "seed 001 §6.2.2", {}, build_smp_direct}};

}  // namespace

}  // namespace railcoll::allgather
