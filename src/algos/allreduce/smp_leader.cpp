// SMP allreduce with one leader per node, for short vectors: as few node-wide
// synchronizations as possible, since on an oversubscribed node each one costs
// wake-ups (seed 004 §4: the hierarchical, leader-based collectives):
//   1. every local rank copies its vector into its staging area of the node's
//      shared buffer and raises the node's flag;
//   2. the leader combines all staging areas into its recv;
//   3. the leaders run a recursive-doubling allreduce across nodes;
//   4. the leader copies the result into the node's shared buffer and raises
//      a second flag; every local rank copies it out (one wake-up each, no
//      message through a local socket; nobody waits for the copies: the next
//      call uses the other bank of the shared buffer, allgather/common.hpp).
// One node and a short vector: flat, every rank combines every input itself
// (algos/common/one_node.hpp: no leader to wait for).
// Hockney: T = m c + (P-1) m gamma + (ceil(log2 M) + 2 [M not 2^x]) (ts + m tau + m gamma) + 2 m c
#include "algos/allreduce/common.hpp"
#include "algos/common/one_node.hpp"
#include "core/registry.hpp"

namespace railcoll::allreduce {

namespace {

void build_smp_leader(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int M = t.nnodes();
  const uint64_t m = L.count[0];
  if (m == 0) return;  // nothing to combine, nothing to wait for
  if (M == 1 && m <= one_node::kFlatAllreduceBytes) return one_node::allreduce(b, m);
  Fold f(M);
  enum { kStaged = 0, kResult = 1 };
  std::vector<Unit> units;
  for (int n = 0; n < M; ++n) {
    const auto& ranks = t.ranks_of(n);
    const int P = t.node_size(n), leader = ranks[0];
    b.set_shared(n, P * m);  // P-1 staging areas, then the result
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
    const int P = t.node_size(n);
    if (P == 1) continue;
    const Span result = b.shared(n, (P - 1) * m, m);
    b.copy(ranks[0], step, {{b.recv(ranks[0], 0, m), result}});
    b.signal(ranks[0], step, b.node_counter(n, kResult));
    for (int i = 1; i < P; ++i) {
      b.wait(ranks[i], step, b.node_counter(n, kResult), 1);
      b.copy(ranks[i], step, {{result, b.recv(ranks[i], 0, m)}});
    }
  }
}

const AlgorithmRegistrar registered{{Collective::Allreduce, 5, "smp_leader",
    "one leader per node combines the node in shm, leaders allreduce, result copied out of shm",
    "m c + (P-1) m gamma + ceil(log2 M) (ts + m tau + m gamma) + 2 m c",
    "seed 004 §4", {}, build_smp_leader, /*keeps_order=*/false,
    /*in_place_ok=*/true}};

}  // namespace

}  // namespace railcoll::allreduce
