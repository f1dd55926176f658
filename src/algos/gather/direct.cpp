// k-port Direct gather (seed 000 §6.1's Direct, turned towards one rank; the
// multi-port RDMA gather of seed 001 §2 [15, 16]).
//
// Every rank puts its block straight into the root's recv at its final offset.
// Rank v (relative to the root) is the ((v-1) mod k)-th of step (v-1) / k and
// uses port (v-1) mod k, so the k senders of a step arrive on the root's k
// different rails (striped above the threshold). The steps are not enforced by
// waits: puts are one-sided and the root's rails serialise them; the step
// numbers say in which order the root's rails take them. The root copies its
// own block and waits for N-1 arrivals.
// Hockney: T = ceil((N-1)/k) (ts + m tau): the root's k ports each take
// (N-1)/k messages. One network step of latency, the most concurrent senders.
#include "algos/common/trees.hpp"
#include "core/registry.hpp"

namespace railcoll::gather {

namespace {

void build_direct(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int N = t.nranks(), k = t.rails(), root = o.root;
  const int steps = (N - 1 + k - 1) / k;
  for (int p = 0; p < N; ++p) {
    int v = trees::relative(p, root, N);
    if (v == 0) {
      b.copy(p, 0, {{b.send(p, 0, L.count[p]), b.recv(p, L.displ[p], L.count[p])}});
      b.wait(p, steps > 0 ? steps - 1 : 0, b.rank_counter(p, 0), N - 1);
    } else {
      b.put(p, (v - 1) / k, root, {{b.send(p, 0, L.count[p]), b.recv(root, L.displ[p], L.count[p])}},
            b.rail_for(L.count[p], (v - 1) % k), b.rank_counter(root, 0));
    }
  }
}

const AlgorithmRegistrar registered{{Collective::Gather, 2, "direct",
    "k-port Direct: every rank puts its block into the root's recv, port (v-1) mod k",
    "ceil((N-1)/k) (ts + m tau)",
    "seed 000 §6.1, seed 001 §2", {}, build_direct}, Collective::Gatherv};  // gather's counts may differ: gatherv as well

}  // namespace

}  // namespace railcoll::gather
