// Binomial-tree broadcast (seed 003 §4.2 and seed 004 §2.3.2: the software tree
// of point-to-point messages; MPICH's short-message broadcast).
//
// Ranks are renumbered relative to the root. Rank v receives the whole message
// from v - 2^low(v) (low: its lowest set bit) at step L-1-low(v), then puts it
// into the recv of v + 2^j for j = low(v)-1 .. 0, one step each, largest
// subtree first. The root sends from `send`, the others from their `recv`.
// Single-port, but puts are non-blocking and the root posts its L puts back to
// back, so step s goes on rail s mod k: up to k of them are on the wire at once.
// Striped above the threshold.
// Hockney, L = ceil(log2 N): T = L (ts + m tau); N-1 messages, the root sends L.
#include "algos/common/trees.hpp"
#include "core/registry.hpp"

namespace railcoll::bcast {

namespace {

void build_binomial(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int N = t.nranks(), root = o.root;
  const uint64_t m = L.count[root];
  const trees::BinomialTree tree(N);
  for (int p = 0; p < N; ++p) {
    int v = trees::relative(p, root, N);
    if (v > 0) b.wait(p, tree.down_step(v), b.rank_counter(p, 0), 1);
    Span src = v == 0 ? b.send(p, 0, m) : b.recv(p, 0, m);
    for (int c : tree.children(v)) {
      int q = trees::absolute(c, root, N), step = tree.down_step(c);
      b.put(p, step, q, {{src, b.recv(q, 0, m)}}, b.rail_for(m, step), b.rank_counter(q, 0));
    }
  }
}

const AlgorithmRegistrar registered{{Collective::Bcast, 1, "binomial",
    "binomial tree from the root, step s on rail s mod k",
    "ceil(log2 N) (ts + m tau)",
    "seed 004 §2.3.2, seed 003 §4.2", {}, build_binomial}};

}  // namespace

}  // namespace railcoll::bcast
