// SMP-aware reduce-scatter whose node-local reduction and inter-node sends
// overlap (smp.cpp reduces the node's whole input, N m bytes, before any
// leader sends: at 1 MiB blocks on the emulated cluster the two phases took
// about as long each and ran one after the other). The node's partial is cut
// into pieces of at most kPieceBytes, ordered by the node they are bound for
// (the next node first, as in smp's 1-port Direct among nodes, the own node
// last), and every piece is combined along a chain of the node's ranks:
//   1. local rank 0 copies its input's piece into the node's shared buffer,
//      local rank i > 0 combines its own once rank i-1 is done with it
//      (a node counter per piece); the ranks of a node work on different
//      pieces at once and only wait for a piece the previous rank has not
//      reached, so on cores shared by many ranks they rarely sleep;
//   2. the last rank of the chain sends a finished piece bound for another
//      node at once (striped over the rails above the threshold) into that
//      node's slot for this node's partial, notifying a node counter per piece;
//      the receiving node's ranks read the pieces' frames in turn;
//   3. every rank copies its block of the own node's partial into its recv and
//      combines the other nodes' pieces of it, nearest node first, piece by
//      piece as they arrive.
// The hierarchical reduction is seed 003 §2 / seed 004 §4, the shared-memory
// phases seed 001 §5.1; pipelining a long message in pieces is seed 000 §6.
// One node: flat instead of the chain, every rank combines its block of every
// input from shared memory (algos/common/one_node.hpp).
// Hockney (c: shm copy time per byte, C pieces of size <= kPieceBytes):
//   T = max(N m (c + gamma), (M-1) P m tau / k) + (M-1) C ts + kPieceBytes (c + gamma + tau / k)
//       + M m gamma
//   (P ranks per node, M nodes, m bytes a block; the first term: the node's
//    chain or its rails, whichever is slower; then the pipeline's fill and the
//    combine of the last arriving pieces)
#include "algos/common/one_node.hpp"
#include "algos/reduce_scatter/common.hpp"

namespace railcoll::reduce_scatter {

namespace {

using allreduce::Chunks;

void build_smp_pipelined(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int M = t.nnodes();
  const uint64_t T = L.total();
  if (M == 1 && one_node::flat_fits(t.nranks() * T)) return one_node::reduce_scatter(b, L);
  const NodeStrings str(t, L, element_size(o));
  const auto& node_bytes = str.bytes;
  auto cut = [&](int q) { return str.pieces(q); };
  // Node counters of node q: first its chain's (one per piece of its partial,
  // in chain order), then one per piece that arrives from node q - d, d = 1 .. M-1.
  const int chain_pieces = str.all_pieces();
  auto arrived = [&](int q, int d, int piece) {
    return b.node_counter(q, chain_pieces + (d - 1) * cut(q).parts + piece);
  };
  // The rank of node q that reads the frames of piece j from another node: the
  // node's ranks in turn, so a node receives on every rail over P connections at
  // once (one connection per rail delivered less through the shaped rails:
  // emulated cluster 4x4, 1 MiB, docs/results.md). Each reader stays in the call
  // until its pieces are in.
  auto reader_of = [&](int q, int j) {
    const auto& rq = t.ranks_of(q);
    return rq[static_cast<size_t>(j) % rq.size()];
  };
  // Shared buffer of node q: its partial in rank order [0, T), then a slot per
  // sending node, nearest first, each node q's string packed.
  auto slot_at = [&](int q, int d) { return T + static_cast<uint64_t>(d - 1) * node_bytes[q]; };
  for (int n = 0; n < M; ++n) {
    const auto& ranks = t.ranks_of(n);
    const int P = static_cast<int>(ranks.size());
    b.set_shared(n, T + static_cast<uint64_t>(M - 1) * node_bytes[n]);
    std::vector<int> own_first(t.nranks(), 0);  // chain counter of the own node's first piece
    for (int i = 0; i < P; ++i) {  // 1-2. the chain, nearest destination first
      const int r = ranks[i];
      int counter = 0;
      for (int step = 1; step <= M; ++step) {
        const int d = step % M, q = (n + d) % M;
        const Chunks pieces = cut(q);
        if (d == 0) own_first[r] = counter;
        for (int j = 0; j < pieces.parts; ++j, ++counter) {
          const CounterRef done = b.node_counter(n, counter);
          SegList local, wire;
          for (const Piece& pc : str.piece(q, j)) {
            local.push_back({b.send(r, pc.spread, pc.length), b.shared(n, pc.spread, pc.length)});
            wire.push_back({b.shared(n, pc.spread, pc.length), b.shared(q, slot_at(q, d) + pc.packed, pc.length)});
          }
          if (i > 0) b.wait(r, 1, done, i);
          if (!local.empty()) {
            if (i == 0) b.copy(r, 0, local); else b.reduce(r, 1, local);
          }
          b.signal(r, i ? 1 : 0, done);
          if (i == P - 1 && d != 0 && pieces.size(j) > 0) {
            b.put(r, 1 + step, reader_of(q, j), wire, b.rail_for(pieces.size(j), j), arrived(q, d, j));
          }
        }
      }
    }
    for (int r : ranks) {  // 3. this rank's block: the own partial, then the others nearest first
      bool reads = false;
      for (int j = 0; j < cut(n).parts && M > 1; ++j) reads |= r == reader_of(n, j);
      if (L.count[r] == 0 && !reads) continue;
      const uint64_t lo = str.packed_at[r], hi = lo + L.count[r];
      const Chunks pieces = cut(n);
      const Span mine = b.recv(r, 0, L.count[r]);
      auto part = [&](const Span& s, uint64_t a, uint64_t z) { return Span{s.region, s.owner, s.offset + (a - lo), z - a}; };
      for (int d = 0; d < M; ++d) {
        for (int j = 0; j < pieces.parts; ++j) {
          const uint64_t a = std::max(lo, pieces.begin(j)), z = std::min(hi, pieces.begin(j) + pieces.size(j));
          if (a >= z) {
            if (d != 0 && r == reader_of(n, j) && pieces.size(j) > 0) b.wait(r, 1 + M, arrived(n, d, j), 1);
            continue;
          }
          if (d == 0) {
            b.wait(r, 1, b.node_counter(n, own_first[r] + j), P);
            b.copy(r, 1, {{b.shared(n, L.displ[r] + (a - lo), z - a), part(mine, a, z)}});
          } else {
            b.wait(r, 1 + M, arrived(n, d, j), 1);
            b.reduce(r, 1 + M, {{b.shared(n, slot_at(n, d) + a, z - a), part(mine, a, z)}});
          }
        }
      }
    }
  }
}

const BothRegistrars registered{5, "smp_pipelined",
                                "shm reduction along a chain of the node's ranks in pieces, each finished "
                                "piece sent to its node at once; every rank combines its block",
                                "max(N m (c+gamma), (M-1) P m tau/k) + (M-1) C ts + piece (c+gamma+tau/k) + M m gamma",
                                "seed 003 §2, seed 004 §4, seed 001 §5.1, seed 000 §6 (pipelining)",
                                build_smp_pipelined};

}  // namespace

}  // namespace railcoll::reduce_scatter
