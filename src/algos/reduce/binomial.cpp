// Binomial-tree reduce (MPICH's binomial reduce; the reduction trees of seed
// 003 §2): ranks renumbered relative to the root; in step s every rank whose
// lowest set bit is s puts its partial (its input combined with its subtree's)
// to its parent, which combines it. The root starts from a copy of its input in
// its recv; a leaf sends its send buffer as it is. Single-port; step s on rail
// s mod k, striped above the threshold. A non-commutative operator needs rank
// order: the tree is then rooted at rank 0 (ranks not renumbered) and rank 0
// puts the result to the root, one step more (MPICH does the same).
// Hockney, L = ceil(log2 N): T = L (ts + m tau + m gamma)
#include <algorithm>

#include "algos/common/trees.hpp"
#include "algos/reduce/common.hpp"
#include "core/registry.hpp"

namespace railcoll::reduce {

namespace {

void build_binomial(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int N = t.nranks(), root = o.root;
  const int top = o.commutative ? root : 0;  // the tree's root
  const trees::BinomialTree tree(N);
  const uint64_t m = L.count[0];
  std::vector<TreeUnit> units;
  for (int v = 0; v < N; ++v) {
    const int r = trees::absolute(v, top, N), slots = std::min(tree.levels(), tree.low(v));
    const Span acc = v > 0 ? b.send(r, 0, m) : r == root ? b.recv(r, 0, m) : b.scratch(r, slots * m, m);
    units.push_back({r, acc, v == 0});
    b.set_scratch(r, m * (slots + (v == 0 && r != root)));  // a slot per child, by the child's level
  }
  b.copy(top, 0, {{b.send(top, 0, m), units[0].acc}});
  const int last = binomial_reduce(
      b, units, [&](int v, int low) { return b.scratch(units[v].rank, low * m, m); }, 0,
      [&](uint64_t bytes, int step) { return b.rail_for(bytes, step); }, 0);
  if (top == root) return;
  b.put(top, last, root, {{units[0].acc, b.recv(root, 0, m)}}, b.rail_for(m, last),
        b.rank_counter(root, tree.levels()));
  b.wait(root, last, b.rank_counter(root, tree.levels()), 1);
}

const AlgorithmRegistrar registered{{Collective::Reduce, 1, "binomial",
    "binomial tree to the root, partials combined on the way up",
    "ceil(log2 N) (ts + m tau + m gamma)", "MPICH; seed 003 §2", {}, build_binomial,
    /*keeps_order=*/true, /*in_place_ok=*/true}};

}  // namespace

}  // namespace railcoll::reduce
