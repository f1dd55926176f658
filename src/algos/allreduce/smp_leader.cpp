// SMP allreduce with one leader per node, for short vectors: as few node-wide
// synchronizations as possible, since on an oversubscribed node each one costs
// wake-ups (seed 004 §4: the hierarchical, leader-based collectives):
//   1. every local rank copies its vector into its staging area of the node's
//      shared buffer and raises the node's flag;
//   2. the leader combines all staging areas into its recv;
//   3. the leaders run a recursive-doubling allreduce across nodes;
//   4. the leader writes the result into every local rank's recv (a message
//      each), so nobody reads the shared buffer after the leader has: no final
//      node-wide synchronization is needed.
// Hockney: T = m c + (P-1) m gamma + (ceil(log2 M) + 2 [M not 2^x]) (ts + m tau + m gamma) + (P-1) (ts_shm + m c)
#include "algos/allreduce/common.hpp"
#include "core/registry.hpp"

namespace railcoll::allreduce {

namespace {

void build_smp_leader(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int M = t.nnodes();
  const uint64_t m = L.count[0];
  if (m == 0) return;  // nothing to combine, nothing to wait for
  Fold f(M);
  enum { kStaged = 0 };
  const int kResult = f.log2 + 2;  // rank counter after recursive doubling's
  std::vector<Unit> units;
  for (int n = 0; n < M; ++n) {
    const auto& ranks = t.ranks_of(n);
    const int P = t.node_size(n), leader = ranks[0];
    b.set_shared(n, (P - 1) * m);
    for (int i = 1; i < P; ++i) {  // 1. stage (the leader's own vector goes straight to its recv)
      b.copy(ranks[i], 0, {{b.send(ranks[i], 0, m), b.shared(n, (i - 1) * m, m)}});
      b.signal(ranks[i], 0, b.node_counter(n, kStaged));
    }
    b.copy(leader, 0, {{b.send(leader, 0, m), b.recv(leader, 0, m)}});  // 2. combine
    b.wait(leader, 0, b.node_counter(n, kStaged), P - 1);
    for (int i = 1; i < P; ++i) b.reduce(leader, 0, {{b.shared(n, (i - 1) * m, m), b.recv(leader, 0, m)}});
    units.push_back({leader, b.recv(leader, 0, m)});
    b.set_scratch(leader, (f.log2 + 1) * m);
  }
  int step = recursive_doubling(b, units, [&](int n, int s) { return b.scratch(t.leader(n), s * m, m); }, 1,
                                b.rail_for(m, 0), 0);
  for (int n = 0; n < M; ++n) {  // 4. hand out the result
    const auto& ranks = t.ranks_of(n);
    for (size_t i = 1; i < ranks.size(); ++i) {
      b.put(ranks[0], step, ranks[i], {{b.recv(ranks[0], 0, m), b.recv(ranks[i], 0, m)}}, 0,
            b.rank_counter(ranks[i], kResult));
      b.wait(ranks[i], step, b.rank_counter(ranks[i], kResult), 1);
    }
  }
}

const AlgorithmRegistrar registered{{Collective::Allreduce, 5, "smp_leader",
    "one leader per node combines the node in shm, leaders allreduce, results sent out",
    "m c + (P-1) m gamma + ceil(log2 M) (ts + m tau + m gamma) + (P-1) (ts_shm + m c)",
    "seed 004 §4", {}, build_smp_leader}};

}  // namespace

}  // namespace railcoll::allreduce
