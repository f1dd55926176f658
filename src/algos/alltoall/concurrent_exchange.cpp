// Concurrent Exchange alltoall(v), concurrency index C (seed 002 §3.1, applied
// to personalised data; option --concurrency, default k: one message per rail).
//
// The N ranks form C groups of G = ceil(N/C) (the last may be smaller); rank
// p = g*G + i has the peer h*G + i in every other group h. A pre-loop step puts
// p's blocks for its peers (non-blocking, one per group); then in step s = 1..G-1
// rank p exchanges with its pair, position (i + s) mod G of its own group, and
// puts, non-blocking, the blocks for the peers-of-pair, position (i + s) mod G of
// every other group: C concurrent messages a step, the j-th on rail j mod k
// (striped above the threshold). Personalised data needs no forwarding, so every
// block goes straight to its destination's recv and the pairwise exchange's
// log2(N/C) steps of growing messages become G steps of single blocks.
// Cost with sufficient network concurrency (seed 002 eq. (3), delta = the cost of
// initiating a message): T = ceil(N/C) (T(m) + (C-1) delta), in Hockney terms
// ceil(N/C) (ts + m tau) when C <= k.
#include "algos/alltoall/common.hpp"

namespace railcoll::alltoall {

namespace {

void build_concurrent_exchange(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int N = t.nranks();
  const int C = std::min(N, o.concurrency > 0 ? o.concurrency : t.rails());
  const int G = (N + C - 1) / C;
  for (int p = 0; p < N; ++p) {
    const int g = p / G, i = p % G;
    std::vector<std::vector<int>> rounds(G);
    for (int s = 0; s < G; ++s)
      for (int h = 0; h < C; ++h) {  // own group first: the pair, then the peers-of-pair
        const int q = ((g + h) % C) * G + (i + s) % G;
        if (q < N && q != p) rounds[s].push_back(q);
      }
    exchange_in_rounds(b, L, p, rounds);
  }
}

const AlltoallRegistrar registered{{Collective::Alltoall, 3, "concurrent_exchange",
    "C groups: each step a rank puts to its pair and to the pair's peer in every other group",
    "ceil(N/C) (ts + m tau + (C-1) delta)",
    "seed 002 §3.1", {"concurrency"}, build_concurrent_exchange}};

}  // namespace

}  // namespace railcoll::alltoall
