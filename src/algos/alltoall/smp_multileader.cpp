// SMP-aware multi-leader alltoall(v) (railcoll's own, beyond the papers: seed 001
// §6.2's SMP-aware phases with the multi-leader exchange of smp_multileader
// all-gather, for personalised data and every block size).
//
// Step 0: every rank copies the blocks it has for other nodes into its node's
//   shared buffer, where the blocks bound for node c sit together as one
//   node-to-node block ordered by (destination, source); blocks for its own node
//   it puts straight into the local destinations' recv (shared memory).
// Step 1..: one leader per rail (local rank l < min(P, k)) sends whole node-to-node
//   blocks: the block for the node at distance u goes from leader (u-1) mod L on
//   its rail (striped when the node has fewer ranks than rails) into the
//   destination node's shared buffer, which holds one block from every other node.
// Then every rank copies its blocks out of each node's block as soon as it is in
//   (one node counter per source node), while the other nodes' blocks still arrive.
// A node sends M-1 messages instead of P(N-P): what a node of P ranks takes in
// over the network is the same, P (N-P) m, but in large messages on every rail.
// Hockney, M nodes of P ranks: T = (N-P) m c + ceil((M-1)/min(P,k)) (ts + P^2 m tau / k')
//   + (N-P) m c, k' = min(P, k) rails driven at once.
#include "algos/alltoall/common.hpp"

namespace railcoll::alltoall {

namespace {

void build_smp_multileader(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions&) {
  const int M = t.nnodes(), k = t.rails();
  enum { kGathered = 0, kLocal = 0, kFrom = 1 };  // node counters kGathered, kFrom + source node; rank counter kLocal
  // A node-to-node block (source node a, destination node c) ordered by
  // (destination, source): where block s -> d lies in it, and its size.
  auto chunk_offset = [&](int a, int c, int s, int d) {
    uint64_t off = 0;
    for (int dd : t.ranks_of(c))
      for (int ss : t.ranks_of(a)) {
        if (dd == d && ss == s) return off;
        off += L.pair(ss, dd);
      }
    return off;
  };
  std::vector<std::vector<uint64_t>> chunk(M, std::vector<uint64_t>(M, 0));  // [a][c] bytes
  for (int s = 0; s < t.nranks(); ++s)
    for (int d = 0; d < t.nranks(); ++d) chunk[t.node_of(s)][t.node_of(d)] += L.pair(s, d);
  // Node n's shared buffer: out[c] for every other node c, then in[a] for every other node a.
  std::vector<std::vector<uint64_t>> out(M, std::vector<uint64_t>(M, 0)), in = out;
  for (int n = 0; n < M; ++n) {
    uint64_t at = 0;
    for (int c = 0; c < M; ++c)
      if (c != n) out[n][c] = at, at += chunk[n][c];
    for (int a = 0; a < M; ++a)
      if (a != n) in[n][a] = at, at += chunk[a][n];
    b.set_shared(n, at);
  }
  for (int n = 0; n < M; ++n) {
    const auto& mine = t.ranks_of(n);
    const int P = t.node_size(n), leaders = std::min(P, k);
    for (int s : mine) {  // step 0: stage the blocks for other nodes, deliver the local ones
      std::vector<Segment> staged;
      for (int d = 0; d < t.nranks(); ++d) {
        const int c = t.node_of(d);
        if (c != n)
          staged.push_back({b.send(s, L.send_offset(s, d), L.pair(s, d)),
                            b.shared(n, out[n][c] + chunk_offset(n, c, s, d), L.pair(s, d))});
      }
      b.copy(s, 0, staged);
      b.signal(s, 0, b.node_counter(n, kGathered));
      for (int d : mine)
        if (d == s)
          b.copy(s, 0, {block_to_recv(b, L, s, s)});
        else
          b.put(s, 0, d, {block_to_recv(b, L, s, d)}, 0, b.rank_counter(d, kLocal));
    }
    for (int l = 0; l < leaders && M > 1; ++l) {  // step 1..: whole node-to-node blocks
      const int leader = mine[l];
      b.wait(leader, 0, b.node_counter(n, kGathered), P);
      for (int u = 1 + l; u < M; u += leaders) {
        const int c = (n + u) % M;
        const int peer = t.ranks_of(c)[l % t.node_size(c)];
        const uint64_t len = chunk[n][c];
        b.put(leader, 1 + (u - 1) / leaders, peer, {{b.shared(n, out[n][c], len), b.shared(c, in[c][n], len)}},
              leaders == k ? l : b.rail_for(len, l), b.node_counter(c, kFrom + n));
      }
    }
    for (int d : mine) {  // copy out: local blocks, then every other node's as it comes in
      b.wait(d, 0, b.rank_counter(d, kLocal), P - 1);
      for (int u = 1; u < M; ++u) {
        const int a = (n - u + M) % M;  // sends to us at distance u
        const int step = 1 + (u - 1) / std::min(t.node_size(a), k);
        b.wait(d, step, b.node_counter(n, kFrom + a), 1);
        std::vector<Segment> segs;
        for (int s : t.ranks_of(a))
          segs.push_back({b.shared(n, in[n][a] + chunk_offset(a, n, s, d), L.pair(s, d)),
                          b.recv(d, L.recv_offset(d, s), L.pair(s, d))});
        b.copy(d, step, segs);
      }
    }
  }
}

const AlltoallRegistrar registered{{Collective::Alltoall, 4, "smp_multileader",
    "shm staging per node, one leader per rail exchanges whole node-to-node blocks, local copy-out",
    "(N-P) m c + ceil((M-1)/min(P,k)) (ts + P^2 m tau / min(P,k)) + (N-P) m c",
    "railcoll (seed 001 §6.2 phases, multi-leader)", {}, build_smp_multileader}};

}  // namespace

}  // namespace railcoll::alltoall
