// SMP allreduce: node-level reduction in shared memory, leaders across nodes,
// node-level broadcast (the hierarchical reductions of seed 003 §2 and seed 004
// §4; the shared-memory phases of seed 001 §5.1), with one leader per slice:
//   1. every local rank copies its vector into its staging area of the node's
//      shared buffer;
//   2. the P local ranks of the node each combine one slice of all P staging
//      areas into staging area 0 (a shared-memory reduce-scatter);
//   3. local rank j (j < L, L the smallest node size) runs an allreduce of
//      slice j of staging area 0 with local rank j of every other node, on
//      rail j mod k: L leaders drive the rails at once. Recursive doubling
//      (log2 M whole slices cross each leader), or, for long slices on 4 nodes
//      or more, Rabenseifner's halving and doubling (2 (M-1)/M of a slice, in
//      twice the steps) where the model says it is cheaper;
//   4. every local rank copies staging area 0 into its recv.
// Hockney: T = m c + (P-1)/P m gamma + 2 [M not 2^x] (ts + m/L tau) + m c
//   + min(log2 M (ts + m/L tau + m/L gamma),
//         2 log2 M ts + 2 (M'-1)/M' m/L tau + (M'-1)/M' m/L gamma)   (M' = 2^floor(log2 M))
//          (P ranks per node, M nodes, c: shm copy time per byte)
#include "algos/allgather/common.hpp"
#include "algos/allreduce/common.hpp"
#include "algos/common/trees.hpp"
#include "core/registry.hpp"

namespace railcoll::allreduce {

namespace {

void build_smp(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int M = t.nnodes();
  const uint64_t m = L.count[0];
  const size_t elem = element_size(o);
  if (m == 0) return;  // nothing to combine, nothing to wait for
  int leaders = t.node_size(0);
  for (int n = 0; n < M; ++n) leaders = std::min(leaders, t.node_size(n));
  Chunks leader_slices(m, elem, leaders);
  Fold f(M);
  // Shared buffer of a node: P staging areas, then one receive slot per
  // recursive-doubling exchange (fold + log2 M steps).
  auto staging = [&](int n, int i, uint64_t off, uint64_t len) { return b.shared(n, i * m + off, len); };
  enum { kStaged = 0, kCombined = 1, kReduced = 2 };
  for (int n = 0; n < M; ++n) {
    const int P = t.node_size(n);
    b.set_shared(n, (P + 1 + f.log2) * m);
    node_combine(b, n, m, elem, 0, kStaged, kCombined);  // 1-2. stage, combine slice i into area 0
  }
  int step = 2;
  for (int j = 0; j < leaders; ++j) {  // 3. leaders across nodes, one slice each
    uint64_t at = leader_slices.begin(j), len = leader_slices.size(j);
    std::vector<Unit> units;
    for (int n = 0; n < M; ++n) {
      int r = t.ranks_of(n)[j];
      b.wait(r, 2, b.node_counter(n, kCombined), t.node_size(n));
      units.push_back({r, staging(n, 0, at, len)});
    }
    int rail = leaders >= t.rails() ? j % t.rails() : b.rail_for(len, j);
    SlotFn slot = [&](int n, int s) { return b.shared(n, (t.node_size(n) + s) * m + at, len); };
    // Costs in bytes of tau (trees.hpp: ts = kLatencyBytes of it); gamma left out.
    const double ts = static_cast<double>(trees::kLatencyBytes), bytes = static_cast<double>(len);
    const double doubling = f.log2 * (ts + bytes), halving = 2 * f.log2 * ts + 2.0 * (f.p2 - 1) / f.p2 * bytes;
    step = halving < doubling
               ? halving_doubling(b, units, slot, elem, 2, [&](uint64_t) { return rail; }, 0)
               : recursive_doubling(b, units, slot, 2, rail, 0);
    for (int n = 0; n < M; ++n) {
      int r = t.ranks_of(n)[j];
      b.flush(r, step);  // the NIC may still read the slice it sent last
      b.signal(r, step, b.node_counter(n, kReduced));
    }
  }
  for (int n = 0; n < M; ++n) {  // 4. copy out; no node sync after it (allgather/common.hpp)
    for (int r : t.ranks_of(n)) {
      b.wait(r, step, b.node_counter(n, kReduced), leaders);
      b.copy(r, step, {{staging(n, 0, 0, m), b.recv(r, 0, m)}});
    }
  }
}

const AlgorithmRegistrar registered{{Collective::Allreduce, 4, "smp",
    "shm reduce-scatter in the node, one leader per slice across nodes, shm copy-out",
    "2 m c + (P-1)/P m gamma + min(log2 M (ts + m/L tau), 2 log2 M ts + 2 (M-1)/M m/L tau)",
    "seed 003 §2, seed 004 §4, seed 001 §5.1", {}, build_smp, /*keeps_order=*/false,
    /*in_place_ok=*/true}};

}  // namespace

}  // namespace railcoll::allreduce
