// SMP-aware broadcast (seed 001 §5.1 shm broadcast inside a node; seed 004 §4.2:
// the hardware broadcast lands in one shared-memory area per node "and then the
// processes copy from there", "a FIFO like scheme that tries to overlap the
// broadcast with the copies").
//
// The message is cut into C chunks: the chunk rule of pipelined_chain for the
// M-1 hops between nodes, or C = 1 where that chain's cost (trees.hpp
// pipeline_cost, ts/tau = 2 KiB) is not below the tree's R (ts + m tau): short
// messages, and many nodes at medium sizes. Across nodes, node leaders
// receive each chunk over the network straight into their node's shared buffer
// (on a node of one rank: into the leader's recv, no copy) and forward it as
// soon as it is in:
//   C = 1: a (k+1)-nomial tree of nodes rooted at the root's node, k children
//          per round, one per rail (the k-port broadcast of seed 001 §6.2.1);
//          fewest rounds, for latency. Above the stripe threshold, a binomial
//          tree with each send striped over the k rails where the model says
//          its extra rounds cost less (R2 = ceil(log2 M)).
//   C > 1: a chain of nodes, each chunk striped over all rails (rail c mod k
//          below the threshold): every node's rails carry the message once, the
//          rail bound, where a tree would send it several times from one node.
// The root puts from its send buffer, then copies each chunk into its own node's
// shared buffer and sets the chunk's flag. Inside every node, each rank waits
// for chunk c (one node counter per chunk, set by the arriving put or the
// root's flag) and copies it out while the next chunks arrive and are
// forwarded; no node sync at the end (allgather/common.hpp: consecutive calls use two banks).
// Short messages go through the shared buffer too: the leader's one receive
// and a futex wake per local rank cost less than a message to each of them
// through its Unix socket (which the final node sync used to justify; there is
// none now, allgather/common.hpp: local bench, 16 ranks, 8 B - 4 KiB: 47-87 us
// against 62-121 us, docs/runtime.md "The latency path").
// Hockney, M nodes, R = ceil(log_{k+1} M), c = memcpy time per byte:
//   C = 1: T = m c + min(R (ts + m tau), R2 (ts + m tau/k)) + m c
//   C > 1: T = (M - 2 + C) (ts + m/C tau/k) + m/C c   (the last chunk's copy)
#include <algorithm>

#include "algos/allgather/common.hpp"
#include "algos/common/trees.hpp"
#include "core/registry.hpp"

namespace railcoll::bcast {

namespace {

void build_smp(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int M = t.nnodes(), k = t.rails(), root = o.root, R = t.node_of(root);
  const uint64_t m = L.count[root];
  // Chunks for a chain of nodes; one chunk (the tree) where the model says the
  // chain's M-2 extra hops cost more than the tree's repeated sends.
  int C = trees::pipeline_chunks(m, M - 1, k);
  // The tree's fan-out: k children per round, one rail each (fewest rounds), or,
  // where the message is striped anyway, one child per round over all k rails
  // when its extra rounds cost less than sending the message k times from one
  // node (4 nodes, 2 rails: 2 rounds either way, half the bytes per round).
  // The tree may stripe above kTreeStripeBytes even where the call's threshold
  // is higher: a striped round halves the bytes on a rail, and the tree's few
  // sends are not the many small parts that make the runtime's threshold 16 KiB
  // (docs/runtime.md, "Striping threshold"). At 8 KiB on 4 x 4 ranks it then
  // beats the two-chunk chain: own p50 with --skew 200, 66-76 us against 94-102.
  constexpr uint64_t kTreeStripeBytes = 4 << 10;
  int fan = k;
  double tree_cost = trees::ceil_log(k + 1, M) * (trees::kLatencyBytes + static_cast<double>(m));
  if (k > 1 && m > std::min(o.stripe_threshold, kTreeStripeBytes)) {
    const double striped = trees::ceil_log(2, M) * (trees::kLatencyBytes + static_cast<double>(m) / k);
    if (striped < tree_cost) fan = 1, tree_cost = striped;
  }
  if (C > 1 && trees::pipeline_cost(m, M - 1, k, C) >= tree_cost) C = 1;
  enum { kChunk = 0 };
  constexpr int kCopyBatches = 4;  // kChunk + c: chunk c is in the node's landing buffer
  auto node_at = [&](int u) { return (u + R) % M; };
  // The children of relative node u: (child, step of chunk 0, port).
  auto children = [&](int u) {
    std::vector<trees::KnomialEdge> out;
    if (C == 1) return trees::knomial_children(u, M, fan);
    if (u + 1 < M) out.push_back({u + 1, u, 0});
    return out;
  };
  // The step at which chunk c is in the buffer of relative node u.
  auto arrival = [&](int u, int c) {
    if (C == 1) return u == 0 ? 0 : trees::knomial_round_received(u, fan);
    return std::max(u - 1, 0) + c;
  };
  auto landing = [&](int n, uint64_t off, uint64_t len) {
    return t.node_size(n) > 1 ? b.shared(n, off, len) : b.recv(t.leader(n), off, len);
  };

  for (int n = 0; n < M; ++n) {
    const int u = (n - R + M) % M, sender = n == R ? root : t.leader(n);
    const bool shm = t.node_size(n) > 1;
    if (shm) b.set_shared(n, m);
    for (int c = 0; c < C; ++c) {
      uint64_t off = trees::chunk_begin(m, C, c), len = trees::chunk_begin(m, C, c + 1) - off;
      CounterRef in = b.node_counter(n, kChunk + c);
      if (n != R) b.wait(sender, arrival(u, c), in, 1);
      Span src = n == R ? b.send(root, off, len) : landing(n, off, len);
      for (auto& e : children(u)) {
        int cn = node_at(e.child), step = C == 1 ? e.round : e.round + c;
        const int rail = C == 1 && fan == 1 ? kStripe : b.rail_for(len, C == 1 ? e.port : c);
        b.put(sender, step, t.leader(cn), {{src, landing(cn, off, len)}}, rail,
              b.node_counter(cn, kChunk + c));
      }
      if (!shm) continue;
      if (n == R) {
        b.copy(root, arrival(u, c), {{src, b.shared(n, off, len)}});
        b.signal(root, arrival(u, c), in);
      }
      // Ranks that only copy out take the chunks in a few batches: on a node with
      // more processes than cores every wait is a wake-up, and waking for each
      // of up to 64 chunks cost more than the overlap won (docs/results.md).
      const int per_batch = (C + kCopyBatches - 1) / kCopyBatches;
      const bool batch_end = (c + 1) % per_batch == 0 || c == C - 1;
      const uint64_t batch_off = trees::chunk_begin(m, C, c - c % per_batch);
      for (int r : t.ranks_of(n)) {
        if (r == root) continue;
        if (r == sender) {
          b.copy(r, arrival(u, c), {{b.shared(n, off, len), b.recv(r, off, len)}});
        } else if (batch_end) {  // every chunk's own flag: each comes by its own put
          for (int d = c - c % per_batch; d <= c; ++d) b.wait(r, arrival(u, c), b.node_counter(n, kChunk + d), 1);
          b.copy(r, arrival(u, c), {{b.shared(n, batch_off, off + len - batch_off), b.recv(r, batch_off, off + len - batch_off)}});
        }
      }
    }
  }
}

const AlgorithmRegistrar registered{{Collective::Bcast, 4, "smp",
    "node leaders receive into shared memory, forward at once (tree or chunked chain), shm copy-out",
    "C=1: min(R (ts + m tau), R2 (ts + m tau/k)) + 2 m c; C>1: (M-2+C) (ts + m/C tau/k) + m/C c",
    "seed 004 §4.2, seed 001 §5.1", {}, build_smp}};

}  // namespace

}  // namespace railcoll::bcast
