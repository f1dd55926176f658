// SMP-aware reduce-scatter whose nodes form a pipelined ring: node n sends
// only to node n+1 and takes in only from node n-1, so every node's rails
// carry one stream out and one in for the whole call. smp_pipelined sends each
// node's partials straight to their nodes, M-1 streams out of every node and
// into every node at once; streams that meet a busy receiver slow down while
// the sender's rails have nothing else to carry (docs/runtime.md, "Rails kept
// full", the plain TCP all-to-all; docs/results-log.md, "reduce_scatter_block
// round a ring of the nodes"). The bytes on the wire are the same: (M-1) P m
// out of and into every node.
//   1. the node's partial is combined along a chain of its ranks in pieces,
//      as in smp_pipelined, in the order the ring needs them: node n-1's
//      string first, then n-2, ..., the own node's last;
//   2. ring step 1: the chain's last rank puts each finished piece of node
//      n-1's string into node n+1's slot for it (striped over the rails above
//      the threshold); ring step s = 2 .. M-1: the piece of node n-s's string
//      that arrived from node n-1 is combined with the own partial's and put
//      on to node n+1 at once, by local rank j mod P for piece j (a node's
//      pieces go in and out over P connections and P cores, as reduce
//      smp_chain's); after step M-1 node n holds, for every piece of its own
//      string, the sum of the other nodes' partials;
//   3. every rank copies its block of the own partial into its recv and
//      combines the arrived sum into it, piece by piece as they arrive.
// The hierarchical reduction is seed 003 §2 / seed 004 §4, the shared-memory
// phases seed 001 §5.1; pipelining a long message in pieces is seed 000 §6;
// the ring among nodes is the bandwidth-optimal ring reduce-scatter (Patarasuk
// and Yuan 2009; NCCL's and Gloo's ring), one hop per node instead of per rank.
// Hockney (c: shm copy time per byte, s: piece bytes, P ranks per node, M
// nodes, k rails, m bytes a block):
//   T = max(N m (c + gamma), (M-1) P m tau / k) + (M-1) (ts + s (tau / k + gamma)) + m (c + gamma)
//   (the node's chain or its rails, whichever is slower; then the pipeline's
//    fill through M-1 hops and the last piece's combine)
#include "algos/reduce_scatter/common.hpp"

namespace railcoll::reduce_scatter {

namespace {

using allreduce::Chunks;

void build_smp_ring(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int M = t.nnodes();
  const uint64_t T = L.total();
  const NodeStrings str(t, L, element_size(o));
  const auto& node_bytes = str.bytes;
  auto cut = [&](int q) { return str.pieces(q); };
  auto mod = [M](int x) { return ((x % M) + M) % M; };
  // Node n's strings in chain order: d = 1 .. M is node n-d's (d = M: its own).
  // Ring step s brings node n-1-s's string into node n (s = M-1: its own).
  // Node counters of node n: the chain's, one per piece in chain order, then
  // one per piece arriving at steps 1 .. M-1. Shared buffer of node n: its
  // partial in rank order [0, T), then a slot per step, each a packed string.
  const int chain_pieces = str.all_pieces();
  auto chain_counter = [&](int n, int d, int j) {
    int at = 0;
    for (int e = 1; e < d; ++e) at += cut(mod(n - e)).parts;
    return b.node_counter(n, at + j);
  };
  auto arrived = [&](int n, int s, int j) {
    int at = chain_pieces;
    for (int e = 1; e < s; ++e) at += cut(mod(n - 1 - e)).parts;
    return b.node_counter(n, at + j);
  };
  auto slot_at = [&](int n, int s) {
    uint64_t at = T;
    for (int e = 1; e < s; ++e) at += node_bytes[mod(n - 1 - e)];
    return at;
  };
  auto handler = [&](int n, int j) {
    const auto& rn = t.ranks_of(n);
    return rn[static_cast<size_t>(j) % rn.size()];
  };
  for (int n = 0; n < M; ++n) {
    const auto& ranks = t.ranks_of(n);
    const int P = static_cast<int>(ranks.size()), next = mod(n + 1);
    uint64_t shared = T;
    for (int s = 1; s < M; ++s) shared += node_bytes[mod(n - 1 - s)];
    b.set_shared(n, shared);
    for (int i = 0; i < P; ++i) {  // 1-2. the chain, node n-1's string first; ring step 1
      const int r = ranks[i];
      for (int d = 1; d <= M; ++d) {
        const int q = mod(n - d);
        const Chunks pieces = cut(q);
        for (int j = 0; j < pieces.parts; ++j) {
          const CounterRef done = chain_counter(n, d, j);
          SegList local, wire;
          for (const Piece& pc : str.piece(q, j)) {
            local.push_back({b.send(r, pc.spread, pc.length), b.shared(n, pc.spread, pc.length)});
            wire.push_back({b.shared(n, pc.spread, pc.length), b.shared(next, slot_at(next, 1) + pc.packed, pc.length)});
          }
          if (i > 0) b.wait(r, 1, done, i);
          if (!local.empty()) {
            if (i == 0) b.copy(r, 0, local); else b.reduce(r, 1, local);
          }
          b.signal(r, i ? 1 : 0, done);
          if (i == P - 1 && d == 1 && M > 1 && pieces.size(j) > 0)
            b.put(r, 2, handler(next, j), wire, b.rail_for(pieces.size(j), j), arrived(next, 1, j));
        }
      }
    }
    for (int s = 1; s + 1 < M; ++s) {  // 2. ring steps 2 .. M-1: combine what arrived with the partial, pass it on
      const int q = mod(n - 1 - s);  // arrived at step s, leaves at step s + 1
      const Chunks pieces = cut(q);
      for (int j = 0; j < pieces.parts; ++j) {
        if (pieces.size(j) == 0) continue;
        const int h = handler(n, j), to = handler(next, j);
        b.wait(h, 1 + s, arrived(n, s, j), 1);
        b.wait(h, 1 + s, chain_counter(n, s + 1, j), P);
        SegList in_slot, wire;
        for (const Piece& pc : str.piece(q, j)) {
          in_slot.push_back({b.shared(n, pc.spread, pc.length), b.shared(n, slot_at(n, s) + pc.packed, pc.length)});
          wire.push_back({in_slot.back().dst, b.shared(next, slot_at(next, s + 1) + pc.packed, pc.length)});
        }
        b.reduce(h, 1 + s, in_slot);
        b.put(h, 2 + s, to, wire, b.rail_for(pieces.size(j), j), arrived(next, s + 1, j));
      }
    }
    const Chunks own = cut(n);
    for (int r : ranks) {  // 3. this rank's block: the own partial plus the others' sum
      bool reads = false;
      for (int j = 0; j < own.parts && M > 1; ++j) reads |= r == handler(n, j) && own.size(j) > 0;
      if (L.count[r] == 0 && !reads) continue;
      const uint64_t lo = str.packed_at[r], hi = lo + L.count[r];
      const Span mine = b.recv(r, 0, L.count[r]);
      for (int j = 0; j < own.parts; ++j) {
        const uint64_t a = std::max(lo, own.begin(j)), z = std::min(hi, own.begin(j) + own.size(j));
        if (a >= z) {  // a handler stays in the call until its pieces are in
          if (M > 1 && r == handler(n, j) && own.size(j) > 0) b.wait(r, 1 + M, arrived(n, M - 1, j), 1);
          continue;
        }
        const Span part{mine.region, mine.owner, mine.offset + (a - lo), z - a};
        b.wait(r, 1 + M, chain_counter(n, M, j), P);
        b.copy(r, 1 + M, {{b.shared(n, L.displ[r] + (a - lo), z - a), part}});
        if (M == 1) continue;
        b.wait(r, 1 + M, arrived(n, M - 1, j), 1);
        b.reduce(r, 1 + M, {{b.shared(n, slot_at(n, M - 1) + a, z - a), part}});
      }
    }
  }
}

const BothRegistrars registered{6, "smp_ring",
                                "shm reduction along a chain of the node's ranks in pieces, the nodes' partials "
                                "passed round a pipelined ring of the nodes, each node combining its own in",
                                "max(N m (c+gamma), (M-1) P m tau/k) + (M-1) (ts + s (tau/k+gamma)) + m (c+gamma)",
                                "seed 003 §2, seed 004 §4, seed 001 §5.1, seed 000 §6 (pipelining); ring "
                                "reduce-scatter (Patarasuk, Yuan 2009)",
                                build_smp_ring};

}  // namespace

}  // namespace railcoll::reduce_scatter
