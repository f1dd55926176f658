// SMP-aware reduce (the hierarchical reductions of seed 003 §2 and seed 004
// §4; the shared-memory phases of seed 001 §5.1), with one leader per rail:
//   1-2. every node combines its ranks' vectors in shared memory, local rank i
//        one slice (allreduce/common.hpp node_reduce: staged or rotating);
//   3.   the vector is cut into L = min(k, smallest node size) slices; local
//        rank j of every node reduces slice j along a binomial tree of the
//        nodes rooted at the root's node, on rail j (L leaders drive the rails
//        at once), into the root node's area 0;
//   4.   the root copies area 0 into its recv.
// One node: flat, the root combines every rank's input from shared memory
// (algos/common/one_node.hpp).
// Hockney: T = 2 m c + (P-1)/P m gamma + ceil(log2 M) (ts + m/L tau + m/L gamma)
//          (P ranks per node, M nodes, c: shm copy time per byte)
#include <algorithm>

#include "algos/allreduce/common.hpp"
#include "algos/common/one_node.hpp"
#include "algos/common/trees.hpp"
#include "algos/reduce/common.hpp"
#include "core/registry.hpp"

namespace railcoll::reduce {

namespace {

void build_smp(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int M = t.nnodes(), k = t.rails(), root = o.root, root_node = t.node_of(root);
  const uint64_t m = L.count[0];
  const size_t elem = element_size(o);
  if (m == 0) return;  // nothing to combine, nothing to wait for
  if (M == 1 && one_node::flat_fits(t.nranks() * m)) return one_node::reduce(b, m, root);
  // One leader per rail, or one for vectors up to the striping threshold (a
  // second tree costs more than it saves).
  int leaders = m <= o.stripe_threshold ? 1 : k;
  for (int n = 0; n < M; ++n) leaders = std::min(leaders, t.node_size(n));
  const int levels = trees::ceil_log(2, M);
  enum { kCombined = 0, kReduced = 1, kFree = 2 };  // kFree..: node_reduce's
  for (int n = 0; n < M; ++n) {
    b.set_shared(n, allreduce::node_combine_bytes(m, t.node_size(n)) + levels * m);  // then a slot per tree level
    allreduce::node_reduce(b, n, m, elem, 0, kCombined, kFree);
  }
  const allreduce::Chunks slices(m, elem, leaders);
  int step = 2;
  for (int j = 0; j < leaders; ++j) {  // 3. slice j along a binomial tree of the nodes
    const uint64_t at = slices.begin(j), len = slices.size(j);
    std::vector<TreeUnit> units;
    for (int v = 0; v < M; ++v) {
      const int n = trees::absolute(v, root_node, M), r = t.ranks_of(n)[j];
      b.wait(r, 2, b.node_counter(n, kCombined), t.node_size(n));
      units.push_back({r, b.shared(n, at, len), true});
    }
    const int rail = leaders >= k ? j % k : b.rail_for(len, j);
    step = binomial_reduce(
        b, units,
        [&](int v, int low) {
          const int n = trees::absolute(v, root_node, M);
          return b.shared(n, allreduce::node_combine_bytes(m, t.node_size(n)) + low * m + at, len);
        },
        2, [&](uint64_t, int) { return rail; }, 0);
    b.signal(units[0].rank, step, b.node_counter(root_node, kReduced));
  }
  b.wait(root, step, b.node_counter(root_node, kReduced), leaders);  // 4. copy out
  b.copy(root, step, {{b.shared(root_node, 0, m), b.recv(root, 0, m)}});
}

const AlgorithmRegistrar registered{{Collective::Reduce, 3, "smp",
    "shm reduction in the node, one leader per rail reduces a slice across nodes, root copies out",
    "2 m c + (P-1)/P m gamma + ceil(log2 M) (ts + m/L tau + m/L gamma)",
    "seed 003 §2, seed 004 §4, seed 001 §5.1", {}, build_smp, /*keeps_order=*/false,
    /*in_place_ok=*/true}};

}  // namespace

}  // namespace railcoll::reduce
