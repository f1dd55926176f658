// Ring all-gather (the large-message branch of elan_gather, seed 001 §2).
//
// Step s = 0..N-2: rank p forwards block (p - s) mod N to rank p+1, which waits
// for it before forwarding it on. Steps rotate over the rails (multiplexing, seed
// 000 §5); above the threshold each message is striped.
// Hockney: T = (N-1) * (ts + m*tau); bytes sent per rank (N-1)*m.
#include "algos/allgather/common.hpp"
#include "core/registry.hpp"

namespace railcoll::allgather {

namespace {

void build_ring(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int N = t.nranks();
  for (int p = 0; p < N; ++p) {
    int next = (p + 1) % N;
    b.copy(p, 0, {{b.send(p, 0, L.count[p]), b.recv(p, L.displ[p], L.count[p])}});
    for (int s = 0; s < N - 1; ++s) {
      int blk = ((p - s) % N + N) % N;
      if (s > 0) b.wait(p, s - 1, b.rank_counter(p, s - 1), 1);
      Span src = s == 0 ? b.send(p, 0, L.count[p]) : b.recv(p, L.displ[blk], L.count[blk]);
      b.put(p, s, next, {{src, b.recv(next, L.displ[blk], L.count[blk])}}, b.rail_for(L.count[blk], s),
            b.rank_counter(next, s));
    }
    if (N > 1) b.wait(p, N - 2, b.rank_counter(p, N - 2), 1);
  }
}

const AlgorithmRegistrar registered{{Collective::Allgather, 4, "ring",
    "ring: N-1 steps, each rank forwards one block to its right neighbour",
    "(N-1) (ts + m tau)",
    "seed 001 §2 (elan_gather, large messages)", {}, build_ring}};

}  // namespace

}  // namespace railcoll::allgather
