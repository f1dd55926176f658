// Binomial-tree reduce (MPICH's binomial reduce; the reduction trees of seed
// 003 §2): ranks renumbered relative to the root; in step s every rank whose
// lowest set bit is s puts its partial (its input combined with its subtree's)
// to its parent, which combines it. The root starts from a copy of its input in
// its recv; a leaf sends its send buffer as it is. Single-port; step s on rail
// s mod k, striped above the threshold.
// Hockney, L = ceil(log2 N): T = L (ts + m tau + m gamma)
#include <algorithm>

#include "algos/common/trees.hpp"
#include "algos/reduce/common.hpp"
#include "core/registry.hpp"

namespace railcoll::reduce {

namespace {

void build_binomial(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int N = t.nranks(), root = o.root;
  const trees::BinomialTree tree(N);
  const uint64_t m = L.count[0];
  std::vector<TreeUnit> units;
  for (int v = 0; v < N; ++v) {
    const int r = trees::absolute(v, root, N);
    units.push_back({r, v == 0 ? b.recv(r, 0, m) : b.send(r, 0, m), v == 0});
    b.set_scratch(r, m * std::min(tree.levels(), tree.low(v)));  // a slot per child, by the child's level
  }
  b.copy(root, 0, {{b.send(root, 0, m), b.recv(root, 0, m)}});
  binomial_reduce(
      b, units, [&](int v, int low) { return b.scratch(units[v].rank, low * m, m); }, 0,
      [&](uint64_t bytes, int step) { return b.rail_for(bytes, step); }, 0);
}

const AlgorithmRegistrar registered{{Collective::Reduce, 1, "binomial",
    "binomial tree to the root, partials combined on the way up",
    "ceil(log2 N) (ts + m tau + m gamma)", "MPICH; seed 003 §2", {}, build_binomial}};

}  // namespace

}  // namespace railcoll::reduce
