// Binomial-tree gather (seed 001 §2: elan_gather's gather, "leaf processes send
// data to their parents; intermediate processes add their own data and forward
// to their parents"; MPICH's binomial gather).
//
// Ranks are renumbered relative to the root; the tree is the binomial
// broadcast's, so the subtree of v is the contiguous relative range
// [v, v + 2^low(v)). An inner rank keeps its subtree's blocks in `scratch`, in
// relative order: its own block first (a copy from send), then each child's
// subtree as it arrives. At step low(v) it puts the whole range to its parent:
// into the parent's scratch at the subtree's place, or, for a child of the root,
// straight into the root's recv at the blocks' final offsets (two segments when
// the relative range wraps past rank N-1). A leaf puts from its send buffer.
// Single-port; step s goes on rail s mod k, striped above the threshold.
// Hockney, L = ceil(log2 N): T = sum_{i<L} (ts + 2^i m tau) = L ts + (N-1) m tau;
// N-1 messages; the root receives L of them.
#include <algorithm>

#include "algos/common/trees.hpp"
#include "core/registry.hpp"

namespace railcoll::gather {

namespace {

void build_tree(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int N = t.nranks(), root = o.root;
  const trees::BinomialTree tree(N);
  // Blocks in relative order: rel.displ[v] is where relative rank v's block
  // starts in any scratch that holds a range of relative ranks.
  std::vector<uint64_t> rel_counts(N);
  for (int v = 0; v < N; ++v) rel_counts[v] = L.count[trees::absolute(v, root, N)];
  const BlockLayout rel(rel_counts);

  for (int p = 0; p < N; ++p) {
    const int v = trees::relative(p, root, N), end = tree.subtree_end(v);
    const auto kids = tree.children(v);
    if (v == 0) {
      b.copy(p, 0, {{b.send(p, 0, L.count[p]), b.recv(p, L.displ[p], L.count[p])}});
    } else if (!kids.empty()) {
      b.set_scratch(p, rel.range_bytes(v, end));
      b.copy(p, 0, {{b.send(p, 0, L.count[p]), b.scratch(p, 0, L.count[p])}});
    }
    b.wait(p, kids.empty() ? 0 : tree.up_step(kids.front()), b.rank_counter(p, 0), kids.size());
    if (v == 0) continue;
    const int parent = tree.parent(v), q = trees::absolute(parent, root, N);
    uint64_t len = rel.range_bytes(v, end);
    Span src = kids.empty() ? b.send(p, 0, len) : b.scratch(p, 0, len);
    std::vector<Segment> segs;
    if (parent != 0) {
      segs.push_back({src, b.scratch(q, rel.displ[v] - rel.displ[parent], len)});
    } else {  // final offsets in the root's recv: ranks root+v .. root+end-1, mod N
      for (int first = v; first < end;) {
        int a = trees::absolute(first, root, N), last = std::min(end, first + (N - a));
        uint64_t n = rel.range_bytes(first, last);
        segs.push_back({{src.region, p, src.offset + rel.displ[first] - rel.displ[v], n}, b.recv(q, L.displ[a], n)});
        first = last;
      }
    }
    b.put(p, tree.up_step(v), q, std::move(segs), b.rail_for(len, tree.up_step(v)), b.rank_counter(q, 0));
  }
}

const AlgorithmRegistrar registered{{Collective::Gather, 1, "tree",
    "binomial gather to the root, subtrees collected in scratch",
    "ceil(log2 N) ts + (N-1) m tau",
    "seed 001 §2 (elan_gather)", {}, build_tree}};

}  // namespace

}  // namespace railcoll::gather
