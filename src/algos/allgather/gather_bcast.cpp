// Gather + broadcast all-gather: the papers' baseline, elan_gather's algorithm
// for short messages (seed 000 §2, seed 001 §2): a binomial-tree gather to rank 0
// ("leaf processes send data to their parents; intermediate processes add their
// own data and forward"), then a binomial-tree broadcast of the whole result.
// Single-port: one message per rank per step.
// Hockney, L = ceil(log2 N): gather  sum_{i<L} (ts + 2^i m tau) ~ L ts + (N-1) m tau,
//                            bcast   L (ts + N m tau).
#include "algos/allgather/common.hpp"
#include "core/registry.hpp"

namespace railcoll::allgather {

namespace {

void build_gather_bcast(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int N = t.nranks();
  int levels = 0;
  while ((1L << levels) < N) ++levels;
  enum { kChildren = 0, kFromParent = 1 };
  for (int p = 0; p < N; ++p) {
    b.copy(p, 0, {{b.send(p, 0, L.count[p]), b.recv(p, L.displ[p], L.count[p])}});
    // The level at which p hands its subtree to its parent (levels for the root).
    int up = 0;
    while (up < levels && !(p & (1 << up))) ++up;
    int children = 0;
    for (int i = 0; i < up; ++i)
      if (p + (1 << i) < N) ++children;
    b.wait(p, up > 0 ? up - 1 : 0, b.rank_counter(p, kChildren), children);
    if (p != 0) {
      int parent = p - (1 << up), last = std::min(N, p + (1 << up));
      uint64_t len = L.range_bytes(p, last);
      b.put(p, up, parent, {{b.recv(p, L.displ[p], len), b.recv(parent, L.displ[p], len)}},
            b.rail_for(len, 0), b.rank_counter(parent, kChildren));
      // Broadcast phase, mirror image: the parent sends at step 2L-1-up.
      b.wait(p, 2 * levels - 1 - up, b.rank_counter(p, kFromParent), 1);
    }
    for (int i = up - 1; i >= 0; --i) {
      int child = p + (1 << i);
      if (child >= N) continue;
      b.put(p, 2 * levels - 1 - i, child, {{b.recv(p, 0, L.total()), b.recv(child, 0, L.total())}},
            b.rail_for(L.total(), 0), b.rank_counter(child, kFromParent));
    }
  }
}

const AlgorithmRegistrar registered{{Collective::Allgather, 6, "gather_bcast",
    "binomial gather to rank 0, then binomial broadcast (native baseline)",
    "2 log2N ts + (N-1) m tau + log2N N m tau",
    "seed 000 §2, seed 001 §2", {}, build_gather_bcast}};

}  // namespace

}  // namespace railcoll::allgather
