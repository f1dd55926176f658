// SMP-aware reduce along a pipelined chain of the nodes (the hierarchical
// reductions of seed 003 §2 and seed 004 §4; the shared-memory phases of seed
// 001 §5.1; the chain of MPICH's and Open MPI's chain/pipeline reduce, cut in
// pieces as seed 000 §6 pipelines a long message). Every node takes in one
// vector and sends one, the root's node takes in one and sends none: the
// rail bound's traffic, where a tree makes the root's node take in one vector
// per child (smp, binomial: 2 on 4 nodes).
//   1. every node combines its ranks' vectors in shared memory into area 0
//      (allreduce/common.hpp node_reduce);
//   2. the vector is cut into C pieces of whole elements; the nodes form a
//      chain root_node+1, root_node+2, ..., root_node, the farthest first:
//      piece j leaves the first node as soon as its node is combined; every
//      later node combines the arriving piece j with its own area 0's and
//      passes it on at once, so all hops carry pieces at the same time. A
//      piece is striped over the rails (b.rail_for), and local rank j mod P
//      of every node handles piece j: a node's pieces come in and go out over
//      P connections and P cores;
//   3. the root copies its node's finished area 0 into its recv.
// C = floor(sqrt((M-2) m / (k ts/tau))) (trees.hpp pipeline_chunks), at most
// the vector's elements.
// Hockney: T = 2 m c + (P-1)/P m gamma + (M-2+C) (ts + m/(C k) tau + m/C gamma)
//          (P ranks per node, M nodes, k rails, c: shm copy time per byte)
#include <algorithm>

#include "algos/allreduce/common.hpp"
#include "algos/common/trees.hpp"
#include "core/registry.hpp"

namespace railcoll::reduce {

namespace {

void build_smp_chain(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int M = t.nnodes(), root = o.root, root_node = t.node_of(root);
  const uint64_t m = L.count[0];
  const size_t elem = element_size(o);
  if (m == 0) return;  // nothing to combine, nothing to wait for
  const int C = static_cast<int>(
      std::min<uint64_t>(trees::pipeline_chunks(m, M - 1, t.rails()), std::max<uint64_t>(1, m / elem)));
  const allreduce::Chunks pieces(m, elem, C);
  enum { kCombined = 0, kDone = 1, kFree = 2 };  // kDone: pieces finished on the root's node; kFree..: node_reduce's
  // Node n's shared buffer: area 0 (and node_reduce's staging areas), then where the pieces arrive.
  auto arrivals = [&](int n) { return allreduce::node_combine_bytes(m, t.node_size(n)); };
  auto handler = [&](int n, int j) { return t.ranks_of(n)[j % t.node_size(n)]; };
  for (int n = 0; n < M; ++n) {
    const int P = t.node_size(n), next = (n + 1) % M, pos = (n - root_node - 1 + M) % M, step = 2 + pos;
    b.set_shared(n, arrivals(n) + m);
    allreduce::node_reduce(b, n, m, elem, 0, kCombined, kFree);  // 1.
    std::vector<bool> started(P, false);
    for (int j = 0; j < C; ++j) {  // 2. piece j through this node
      const uint64_t at = pieces.begin(j), len = pieces.size(j);
      const int h = handler(n, j);
      if (!started[j % P]) b.wait(h, step, b.node_counter(n, kCombined), P);
      started[j % P] = true;
      const Span mine = b.shared(n, at, len);
      if (pos > 0) {
        b.wait(h, step, b.rank_counter(h, j), 1);
        b.reduce(h, step, {{b.shared(n, arrivals(n) + at, len), mine}});
      }
      if (n == root_node) {
        b.signal(h, step, b.node_counter(n, kDone));
        continue;
      }
      const int to = handler(next, j);
      b.put(h, step, to, {{mine, b.shared(next, arrivals(next) + at, len)}}, b.rail_for(len, j),
            b.rank_counter(to, j));
    }
    for (int i = 0; i < std::min(P, C) && n != root_node; ++i) b.flush(t.ranks_of(n)[i], step);  // the puts read area 0
  }
  b.wait(root, M + 1, b.node_counter(root_node, kDone), C);  // 3.
  b.copy(root, M + 1, {{b.shared(root_node, 0, m), b.recv(root, 0, m)}});
}

const AlgorithmRegistrar registered{{Collective::Reduce, 4, "smp_chain",
    "shm reduction in the node, then the nodes' vectors in pieces along a pipelined chain to the root's node",
    "2 m c + (P-1)/P m gamma + (M-2+C) (ts + m/(C k) tau + m/C gamma)",
    "seed 003 §2, seed 004 §4, seed 001 §5.1; MPICH/Open MPI chain reduce; seed 000 §6 (pipelining)", {},
    build_smp_chain, /*keeps_order=*/false, /*in_place_ok=*/true}};

}  // namespace

}  // namespace railcoll::reduce
