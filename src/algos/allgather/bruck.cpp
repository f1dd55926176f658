// k-port Bruck all-gather (seed 000 §6.3, seed 001 §6.1.3; Bruck et al. 1997).
//
// Every rank keeps an N-block buffer (scratch) whose block i is the data of rank
// p+i. Phase 1, step i: with c = (k+1)^i blocks held, rank p sends its first c
// blocks to p - j*c, j = 1..k, which append them at block j*c. After
// floor(log_{k+1} N) steps one more step is needed when N is not a power of k+1:
// the remaining N - c blocks are spread over as many ports as they need (port j
// carries min(c, N - j*c) blocks). Phase 2 is a single local shift (rotation)
// from scratch into recv. Seed 000 Figure 4 shows N = 9, k = 2.
// Hockney: T = ts*ceil(log_{k+1}N) + (N-1)/k * m*tau   [same as seed 001 eq. (2)]
#include "algos/allgather/common.hpp"
#include "core/registry.hpp"

namespace railcoll::allgather {

namespace {

void build_bruck(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int N = t.nranks(), k = t.rails();
  for (int p = 0; p < N; ++p) {
    b.set_scratch(p, L.total());
    b.copy(p, 0, {{b.send(p, 0, L.count[p]), b.scratch(p, 0, L.count[p])}});
    int step = 0;
    for (long held = 1; held < N; ++step) {
      int senders = 0;
      for (int j = 1; j <= k; ++j) {
        long nblocks = std::min<long>(held, N - j * held);
        if (nblocks <= 0) break;
        int q = static_cast<int>(((p - j * held) % N + N) % N);
        uint64_t len = L.cyclic_bytes(p, static_cast<int>(nblocks));
        uint64_t at = L.cyclic_bytes(q, static_cast<int>(j * held));
        b.put(p, step, q, {{b.scratch(p, 0, len), b.scratch(q, at, len)}}, b.rail_for(len, j - 1),
              b.rank_counter(q, step));
        ++senders;
      }
      b.wait(p, step, b.rank_counter(p, step), senders);
      held = std::min<long>(N, held * (k + 1));
    }
    // Phase 2: blocks p..N-1 sit at the top of scratch, 0..p-1 after them.
    uint64_t top = L.range_bytes(p, N);
    b.copy(p, step, {{b.scratch(p, 0, top), b.recv(p, L.displ[p], top)},
                     {b.scratch(p, top, L.displ[p]), b.recv(p, 0, L.displ[p])}});
  }
}

const AlgorithmRegistrar registered{{Collective::Allgather, 3, "bruck",
    "k-port Bruck: log_{k+1} N rounds on a rotated buffer, final local shift",
    "ceil(log_{k+1}N) ts + (N-1)/k m tau",
    "seed 000 §6.3", {}, build_bruck}};

}  // namespace

}  // namespace railcoll::allgather
