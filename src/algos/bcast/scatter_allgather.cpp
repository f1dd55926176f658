// Scatter + all-gather broadcast for large messages (van de Geijn; Barnett et
// al. 1994; MPICH's long-message broadcast).
//
// The message is cut into N even chunks; chunk v belongs to relative rank v.
// Scatter (steps 0..L-1, L = ceil(log2 N)): down the binomial tree of the
// binomial broadcast, each rank receives the chunks of its subtree
// [v, v + 2^low(v)) into its recv and passes each child its child's subtree.
// Ring all-gather (steps L..L+N-2): at ring step s, v puts chunk (v - s) mod N
// into v+1, which forwards it at the next step; a chunk v+1 already holds from
// the scatter, or that is empty, is not sent, and nothing is sent to the root.
// (Ring rather than recursive doubling: it takes any N without extra steps and
// each rank sends only one chunk per step, the large-message regime this is for.)
// Step s goes on rail s mod k below the threshold, striped above it.
// Hockney: T = L ts + (N-1)/N m tau  +  (N-1) (ts + m/N tau)
//            ~ (L + N - 1) ts + 2 (N-1)/N m tau
// against the binomial L (ts + m tau): it wins once m tau (L - 2) > (N-1) ts.
#include "algos/common/trees.hpp"
#include "core/registry.hpp"

namespace railcoll::bcast {

namespace {

void build_scatter_allgather(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int N = t.nranks(), root = o.root;
  const uint64_t m = L.count[root];
  const trees::BinomialTree tree(N);
  auto begin = [&](int chunk) { return trees::chunk_begin(m, N, chunk); };
  auto len = [&](int first, int last) { return begin(last) - begin(first); };
  // Whether relative rank w still needs chunk c in the ring.
  auto needs = [&](int w, int c) { return w != 0 && (c < w || c >= tree.subtree_end(w)) && len(c, c + 1) > 0; };
  enum { kScatter = 0, kRing = 1 };  // kRing + s: the chunk of ring step s
  const int ring0 = tree.levels();

  for (int p = 0; p < N; ++p) {
    const int v = trees::relative(p, root, N), next = v + 1;
    auto src = [&](uint64_t off, uint64_t n) { return v == 0 ? b.send(p, off, n) : b.recv(p, off, n); };
    if (v > 0 && len(v, tree.subtree_end(v)) > 0)
      b.wait(p, tree.down_step(v), b.rank_counter(p, kScatter), 1);
    for (int c : tree.children(v)) {
      uint64_t n = len(c, tree.subtree_end(c));
      if (n == 0) continue;
      int q = trees::absolute(c, root, N), step = tree.down_step(c);
      b.put(p, step, q, {{src(begin(c), n), b.recv(q, begin(c), n)}}, b.rail_for(n, step),
            b.rank_counter(q, kScatter));
    }
    for (int s = 0; s < N - 1; ++s) {
      int chunk = ((v - s) % N + N) % N;
      if (s > 0 && needs(v, chunk)) b.wait(p, ring0 + s - 1, b.rank_counter(p, kRing + s - 1), 1);
      if (next < N && needs(next, chunk)) {
        int q = trees::absolute(next, root, N);
        uint64_t n = len(chunk, chunk + 1);
        b.put(p, ring0 + s, q, {{src(begin(chunk), n), b.recv(q, begin(chunk), n)}}, b.rail_for(n, s),
              b.rank_counter(q, kRing + s));
      }
    }
    int last = (v + 1) % N;  // the chunk of the last ring step
    if (N > 1 && needs(v, last)) b.wait(p, ring0 + N - 2, b.rank_counter(p, kRing + N - 2), 1);
  }
}

const AlgorithmRegistrar registered{{Collective::Bcast, 2, "scatter_allgather",
    "binomial scatter of N chunks, then ring all-gather of the chunks (van de Geijn)",
    "(ceil(log2 N) + N-1) ts + 2 (N-1)/N m tau",
    "van de Geijn; MPICH long bcast", {}, build_scatter_allgather}};

}  // namespace

}  // namespace railcoll::bcast
