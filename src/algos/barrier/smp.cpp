// SMP barrier: node-shared flags inside a node, dissemination among the node
// leaders across nodes (seed 001 §5.1's shared-memory flags; the shape of the
// hierarchical barriers of seed 004 §4).
//
// Step 0: every local process increments the node's arrival counter; the leader
// waits for all of them. Steps 1..ceil(log2 M): dissemination among leaders
// (0-byte puts). Last step: the leader increments the node's release counter,
// on which every local process waits. One node (M = 1), flat: every process
// waits for the arrival counter itself, with no leader to relay it (a
// scheduling round less where the node's processes outnumber its cores;
// docs/runtime.md, "One node: flat schedules").
// Hockney: T = 2 * t_flag + ceil(log2 M) * ts   (M nodes; t_flag: a shared-memory flag)
#include "core/registry.hpp"

namespace railcoll::barrier {

namespace {

void build_smp(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int M = t.nnodes();
  int rounds = 0;
  for (long d = 1; d < M; d *= 2) ++rounds;
  enum { kArrived = 0, kReleased = 1 };
  for (int n = 0; n < M; ++n) {
    CounterRef arrived = b.node_counter(n, kArrived), released = b.node_counter(n, kReleased);
    int leader = t.leader(n);
    for (int r : t.ranks_of(n)) b.signal(r, 0, arrived);
    if (M == 1) {
      for (int r : t.ranks_of(n)) b.wait(r, 0, arrived, t.node_size(n));
      continue;
    }
    b.wait(leader, 0, arrived, t.node_size(n));
    int step = 1;
    for (long d = 1; d < M; d *= 2, ++step) {
      int to = t.leader(static_cast<int>((n + d) % M));
      b.put(leader, step, to, {}, (step - 1) % t.rails(), b.rank_counter(to, step - 1));
      b.wait(leader, step, b.rank_counter(leader, step - 1), 1);
    }
    b.signal(leader, rounds + 1, released);
    for (int r : t.ranks_of(n)) b.wait(r, rounds + 1, released, 1);
  }
}

const AlgorithmRegistrar registered{{Collective::Barrier, 2, "smp",
    "shared-memory flags inside a node, dissemination among node leaders",
    "2 t_flag + ceil(log2 M) ts",
    "seed 001 §5.1 flags, seed 004 §4", {}, build_smp}};

}  // namespace

}  // namespace railcoll::barrier
