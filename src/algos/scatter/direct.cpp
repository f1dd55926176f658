// k-port Direct scatter(v) (seed 000 §6.1's Direct, turned away from one rank:
// the mirror image of gather/direct).
//
// The root copies its own block and puts block r straight into the recv of
// every other rank r; rank v (relative to the root) is the ((v-1) mod k)-th
// message of step (v-1)/k, on port (v-1) mod k, so the root drives its k rails
// at once (a block above the threshold is striped). The steps are not enforced:
// puts are one-sided and the root's rails serialise them.
// Hockney: T = ceil((N-1)/k) (ts + m tau).
#include "algos/common/trees.hpp"
#include "core/registry.hpp"

namespace railcoll::scatter {

namespace {

void build_direct(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int N = t.nranks(), k = t.rails(), root = o.root;
  b.copy(root, 0, {{b.send(root, L.displ[root], L.count[root]), b.recv(root, 0, L.count[root])}});
  for (int v = 1; v < N; ++v) {
    const int r = trees::absolute(v, root, N);
    b.put(root, (v - 1) / k, r, {{b.send(root, L.displ[r], L.count[r]), b.recv(r, 0, L.count[r])}},
          b.rail_for(L.count[r], (v - 1) % k), b.rank_counter(r, 0));
    b.wait(r, (v - 1) / k, b.rank_counter(r, 0), 1);
  }
}

const AlgorithmRegistrar registered{{Collective::Scatter, 2, "direct",
    "k-port Direct: the root puts every rank's block into its recv, port (v-1) mod k",
    "ceil((N-1)/k) (ts + m tau)",
    "seed 000 §6.1", {}, build_direct}, Collective::Scatterv};

}  // namespace

}  // namespace railcoll::scatter
