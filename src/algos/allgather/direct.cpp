// k-port Direct all-gather (seed 000 §6.1, seed 001 §6.1.1).
//
// Step s (0-based), port j = 1..k: rank p writes its block straight into the
// recv of rank (p + s*k + j) mod N. ceil((N-1)/k) steps; between steps the
// sender waits until its puts no longer read the send buffer (elan_wait).
// Hockney: T = ceil((N-1)/k) * (ts + m*tau)        [seed 000 eq. (1)]
// Bytes sent per rank: (N-1)*m, (N-1)*m/k per rail with striping or one rail per port.
#include "algos/allgather/common.hpp"
#include "core/registry.hpp"

namespace railcoll::allgather {

namespace {

void build_direct(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int N = t.nranks(), k = t.rails();
  const int steps = (N - 1 + k - 1) / k;
  for (int p = 0; p < N; ++p) {
    CounterRef arrived = b.rank_counter(p, 0);
    b.copy(p, 0, {{b.send(p, 0, L.count[p]), b.recv(p, L.displ[p], L.count[p])}});
    for (int s = 0; s < steps; ++s) {
      if (s > 0) b.flush(p, s);
      for (int j = 1; j <= k; ++j) {
        int dist = s * k + j;
        if (dist > N - 1) break;
        int d = (p + dist) % N;
        b.put(p, s, d, {{b.send(p, 0, L.count[p]), b.recv(d, L.displ[p], L.count[p])}},
              b.rail_for(L.count[p], j - 1), b.rank_counter(d, 0));
      }
    }
    b.wait(p, steps > 0 ? steps - 1 : 0, arrived, N - 1);
  }
}

const AlgorithmRegistrar registered{{Collective::Allgather, 1, "direct",
    "k-port Direct: each rank writes its block to k others per step",
    "ceil((N-1)/k) (ts + m tau)",
    "seed 000 §6.1", {}, build_direct}};

}  // namespace

}  // namespace railcoll::allgather
