// SMP-aware reduce-scatter, the mirror image of the SMP multi-leader all-gather
// (allgather/smp_multileader.cpp; the hierarchical reductions of seed 003 §2
// and seed 004 §4, the shared-memory phases of seed 001 §5.1):
//   1-2. the node's ranks combine their inputs (all N blocks) into area 0 of
//      the node's shared buffer (allreduce/common.hpp node_reduce: staging
//      areas for short inputs, rotating slices for long ones), which then
//      holds the node's partial of every block;
//   3. one leader per rail (local rank l < min(k, P); one for partials up to the
//      striping threshold, on rail dist mod k) sends share l of the
//      node's partial of node q's blocks, packed, into node q's shared slot for
//      this node, one node per step on rail l (a 1-port Direct among nodes per
//      leader, all rails driven by different processes at once);
//   4. every rank copies its block of area 0 into its recv and combines the
//      other nodes' partials of it as they arrive.
// Hockney: T = N m c + (P-1)/P N m gamma + (M-1) (ts + P m tau / min(k, P)) + (M-1) m gamma
//          (P ranks per node, M nodes, m bytes a block, c: shm copy time per byte)
#include "algos/allgather/common.hpp"
#include "algos/reduce_scatter/common.hpp"

namespace railcoll::reduce_scatter {

namespace {

void build_smp(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int M = t.nnodes(), k = t.rails();
  const uint64_t T = L.total();
  enum { kCombined = 0, kFrom = 1 };  // kFrom + n: a share from node n is in; then node_reduce's
  std::vector<ByteRanges> node_ranges(M);
  std::vector<uint64_t> node_bytes(M, 0), packed_at(t.nranks(), 0);  // a rank's block in its node's string
  for (int n = 0; n < M; ++n) {
    node_ranges[n] = allgather::byte_ranges(L, allgather::runs_of(t.ranks_of(n)));
    for (int r : t.ranks_of(n)) packed_at[r] = node_bytes[n], node_bytes[n] += L.count[r];
  }
  // Node n's leaders for node q: one per rail, or one for partials no larger than
  // the striping threshold (a second message costs more than it saves: simulated
  // testbed 4x4, 8-256 B blocks: 209-226 us against 268-285 with two leaders).
  auto leaders = [&](int n, int q) { return node_bytes[q] <= o.stripe_threshold ? 1 : std::min(k, t.node_size(n)); };
  // Share l of node q's string as node n's leaders cut it.
  auto share = [&](int n, int q, int l) {
    const uint64_t B = node_bytes[q];
    return packed_part(node_ranges[q], B * l / leaders(n, q), B * (l + 1) / leaders(n, q));
  };
  auto shares = [&](int n, int q) {
    int c = 0;
    for (int l = 0; l < leaders(n, q); ++l) c += !share(n, q, l).empty();
    return c;
  };
  // Node q's slot for the partial of its blocks from node n.
  auto slot_at = [&](int q, int n) {
    return allreduce::node_combine_bytes(T, t.node_size(q)) + ((q - n + M) % M - 1) * node_bytes[q];
  };
  const size_t elem = element_size(o);
  for (int n = 0; n < M; ++n) {
    const int P = t.node_size(n);
    const auto& ranks = t.ranks_of(n);
    b.set_shared(n, allreduce::node_combine_bytes(T, P) + (M - 1) * node_bytes[n]);
    allreduce::node_reduce(b, n, T, elem, 0, kCombined, kFrom + M);  // 1-2. area 0: the node's partial
    for (int r : ranks) {
      b.wait(r, 1, b.node_counter(n, kCombined), P);
      const int l = t.local_rank(r);
      for (int dist = 1; dist < M; ++dist) {  // 3. the leaders' shares
        const int q = (n + dist) % M;
        if (l >= leaders(n, q)) continue;
        std::vector<Segment> segs;
        uint64_t len = 0;
        for (const Piece& pc : share(n, q, l)) {
          segs.push_back({b.shared(n, pc.spread, pc.length), b.shared(q, slot_at(q, n) + pc.packed, pc.length)});
          len += pc.length;
        }
        if (segs.empty()) continue;
        if (dist > 1) b.flush(r, 1 + dist);  // 1-port: the previous share is in the kernel's hands
        b.put(r, 1 + dist, t.ranks_of(q)[l % t.node_size(q)], segs, leaders(n, q) >= k ? l % k : b.rail_for(len, l + dist),
              b.node_counter(q, kFrom + n));
      }
      const Span mine = b.recv(r, 0, L.count[r]);  // 4. this rank's block
      b.copy(r, 2, {{b.shared(n, L.displ[r], L.count[r]), mine}});
      for (int dist = 1; dist < M; ++dist) {
        const int from = (n - dist + M) % M;
        b.wait(r, 1 + dist, b.node_counter(n, kFrom + from), shares(from, n));
        b.reduce(r, 1 + dist, {{b.shared(n, slot_at(n, from) + packed_at[r], L.count[r]), mine}});
      }
    }
  }
}

const BothRegistrars registered{4, "smp",
                                "shm reduction in the node, one leader per rail sends each node its partial, "
                                "every rank combines its block",
                                "N m c + (P-1)/P N m gamma + (M-1) (ts + P m tau / min(k,P)) + (M-1) m gamma",
                                "seed 003 §2, seed 004 §4, seed 001 §5.1; mirror of smp_multileader", build_smp};

}  // namespace

}  // namespace railcoll::reduce_scatter
