// Binomial scatter(v) (the MPICH / Open MPI binomial scatter; seed 001 §6.2.1's
// tree phases run downwards with personalised data).
//
// Ranks renumbered so the root is 0; v's subtree is the contiguous range
// [v, subtree_end(v)) (trees::BinomialTree). The root puts to each child c, at
// step down_step(c), the blocks of c's subtree in one message; an inner rank
// takes its subtree's blocks into scratch (relative rank order), keeps its own
// and forwards each child's range the same way; a leaf takes its block straight
// into recv. Relative ranks wrap around N in the root's send: up to two segments.
// Hockney: T = ceil(log2 N) ts + (N-1) m tau (each level halves the data).
#include "algos/common/trees.hpp"
#include "core/registry.hpp"

namespace railcoll::scatter {

namespace {

void build_binomial(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int N = t.nranks(), root = o.root;
  const trees::BinomialTree tree(N);
  // Bytes of relative ranks [v, w): the blocks of absolute ranks root+v .. root+w-1 (mod N).
  auto rel_bytes = [&](int v, int w) { return L.cyclic_bytes(trees::absolute(v, root, N), w - v); };
  // Where relative rank v keeps its subtree's blocks: the root its send, inner
  // ranks their scratch, a leaf its recv (its own block only).
  auto segments_to = [&](int v, int c) {  // the blocks of c's subtree, from v's copy to c's
    const int end = tree.subtree_end(c);
    const bool leaf = end - c == 1;
    const uint64_t len = rel_bytes(c, end);
    Span dst = leaf ? b.recv(trees::absolute(c, root, N), 0, len) : b.scratch(trees::absolute(c, root, N), 0, len);
    std::vector<Segment> segs;
    if (v != 0) {
      segs.push_back({b.scratch(trees::absolute(v, root, N), rel_bytes(v, c), len), dst});
      return segs;
    }
    // The root's send is in absolute order: the range may wrap past rank N-1.
    const int first = trees::absolute(c, root, N), count = end - c;
    const int before_wrap = std::min(count, N - first);
    const uint64_t a = L.range_bytes(first, first + before_wrap);
    segs.push_back({b.send(root, L.displ[first], a), {dst.region, dst.owner, dst.offset, a}});
    if (count > before_wrap) {
      const uint64_t rest = L.range_bytes(0, count - before_wrap);
      segs.push_back({b.send(root, 0, rest), {dst.region, dst.owner, dst.offset + a, rest}});
    }
    return segs;
  };
  for (int v = 0; v < N; ++v) {
    const int r = trees::absolute(v, root, N);
    const int end = tree.subtree_end(v);
    const bool inner = v != 0 && end - v > 1;
    if (v != 0) b.wait(r, tree.down_step(v), b.rank_counter(r, 0), 1);
    if (inner) {
      b.set_scratch(r, rel_bytes(v, end));
      b.copy(r, tree.down_step(v) + 1, {{b.scratch(r, 0, L.count[r]), b.recv(r, 0, L.count[r])}});
    }
    if (v == 0) b.copy(r, 0, {{b.send(r, L.displ[r], L.count[r]), b.recv(r, 0, L.count[r])}});
    for (int c : tree.children(v)) {
      const uint64_t len = rel_bytes(c, tree.subtree_end(c));
      b.put(r, tree.down_step(c), trees::absolute(c, root, N), segments_to(v, c), b.rail_for(len, 0),
            b.rank_counter(trees::absolute(c, root, N), 0));
    }
  }
}

const AlgorithmRegistrar registered{{Collective::Scatter, 1, "binomial",
    "binomial tree: each rank forwards its subtree's blocks, halving per level",
    "ceil(log2 N) ts + (N-1) m tau",
    "seed 001 §6.2.1 (tree phases, downwards)", {}, build_binomial}, Collective::Scatterv};

}  // namespace

}  // namespace railcoll::scatter
