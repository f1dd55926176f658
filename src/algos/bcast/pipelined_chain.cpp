// Pipelined chain broadcast (the long-message broadcast of Open MPI's tuned
// "pipeline"/"chain" and of MPICH's pipelined algorithms; seed 000 §5 for the
// striping of each chunk over rails).
//
// The chain: the root, the other ranks of its node, then the ranks of each
// following node in node order (node-major, so only M-1 hops cross the network
// and the others are shared-memory puts). The message is cut into C even
// chunks; rank i of the chain waits for chunk c from rank i-1 and puts it into
// the recv of rank i+1 at once, so all hops work at the same time on different
// chunks. Chunk c goes on rail c mod k (consecutive chunks on different rails),
// or is striped over all rails above the threshold; one counter per chunk,
// because chunks on different rails may overtake each other.
// Chunk rule (trees.hpp pipeline_chunks): C = floor(sqrt((N-2) m / (k 2 KiB))),
// clamped to 1..64: the C that minimises the cost below with ts/tau = 2 KiB.
// Hockney, C chunks, each hop on all k rails:
//   T = (N - 2 + C) (ts + m/(C k) tau)
//   -> about m tau/k + 2 sqrt((N-2) m tau ts / k) at the best C: the rails'
//   bandwidth, which no tree reaches, plus a fill that grows with sqrt(N).
#include "algos/common/trees.hpp"
#include "core/registry.hpp"

namespace railcoll::bcast {

namespace {

void build_pipelined_chain(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int N = t.nranks(), M = t.nnodes(), root = o.root;
  const uint64_t m = L.count[root];
  std::vector<int> chain = {root};
  for (int d = 0; d < M; ++d)
    for (int r : t.ranks_of((t.node_of(root) + d) % M))
      if (r != root) chain.push_back(r);
  const int C = trees::pipeline_chunks(m, N - 1, t.rails());
  for (int i = 0; i < N; ++i) {
    int p = chain[i];
    for (int c = 0; c < C; ++c) {
      uint64_t off = trees::chunk_begin(m, C, c), len = trees::chunk_begin(m, C, c + 1) - off;
      if (i > 0) b.wait(p, i - 1 + c, b.rank_counter(p, c), 1);
      if (i + 1 == N) continue;
      int q = chain[i + 1];
      Span src = i == 0 ? b.send(p, off, len) : b.recv(p, off, len);
      b.put(p, i + c, q, {{src, b.recv(q, off, len)}}, b.rail_for(len, c), b.rank_counter(q, c));
    }
  }
}

const AlgorithmRegistrar registered{{Collective::Bcast, 3, "pipelined_chain",
    "chain over the ranks (node-major), message in C chunks, chunk c on rail c mod k",
    "(N-2+C) (ts + m/C tau), C = sqrt((N-2) m / 2 KiB)",
    "seed 000 §5 striping; pipelined chain", {}, build_pipelined_chain}};

}  // namespace

}  // namespace railcoll::bcast
