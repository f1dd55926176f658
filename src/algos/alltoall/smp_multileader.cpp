// SMP-aware multi-leader alltoall(v) (railcoll's own, beyond the papers: seed 001
// §6.2's SMP-aware phases with the multi-leader exchange of smp_multileader
// all-gather, for personalised data and every block size).
//
// Step 0: every rank puts its blocks for its own node straight into the local
//   destinations' recv (shared memory).
// Step u = 1..M-1: every rank copies its blocks for the node at distance u into
//   its node's shared buffer, where the blocks bound for one node sit together
//   as one node-to-node block ordered by (destination, source). Once every rank
//   has staged it, one leader per rail (local rank l < L = min(P, k)) sends share
//   l of L of that block on rail l (striped when the node has fewer ranks than
//   rails) into the destination node's shared buffer, which holds one block from
//   every other node: every rail carries the same bytes. Shares above 16 KiB are
//   paced: each step every node takes in one node's block (no two nodes send to
//   one at once) and staging the next node's blocks overlaps sending this one's;
//   smaller ones are staged in one copy and sent at once, and when no node
//   paces, every rank waits once for all of them (one wake-up per rank).
// Then every rank copies its blocks out of each node's block as soon as its L
//   shares are in (one node counter per source node), while later ones arrive.
// One node: flat, every block through the node's shared buffer, no local
// socket (algos/common/one_node.hpp).
// A node sends M-1 messages instead of P(N-P): what a node of P ranks takes in
// over the network is the same, P (N-P) m, but in large messages on every rail.
// Hockney, M nodes of P ranks, L = min(P, k) leaders (staging and copy-out
// overlap the network but for the first and last node's blocks):
//   T = P m c + (M-1) (ts + P^2 m tau / L) + P m c.
#include <algorithm>

#include "algos/alltoall/common.hpp"
#include "algos/common/one_node.hpp"

namespace railcoll::alltoall {

namespace {

// A node whose shares are larger than this paces them (1-port: one destination
// node per step, staging the next while sending this one).
constexpr uint64_t kPaceBytes = 16 * 1024;

void build_smp_multileader(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions&) {
  const int M = t.nnodes(), k = t.rails();
  if (M == 1) {
    uint64_t all = 0;
    for (int s = 0; s < t.nranks(); ++s) all += L.recv_total(s);
    if (one_node::flat_fits(all)) return one_node::alltoall(b, L);
  }
  // Node counters: kFrom + a, node a's shares are in; kStaged + u, the blocks for
  // the node at distance u are staged. Rank counter kLocal: the node's blocks are in.
  // kAll: every other node's shares are in (when no node paces: one wake-up).
  const int kFrom = 0, kStaged = M, kAll = 2 * M, kLocal = 0;
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
  // Large shares are staged and sent one destination node at a time; small
  // ones are staged at once and sent at once (one wake-up, latency first).
  // When no node paces, a rank waits once for all the other nodes' shares.
  std::vector<char> paced(M, 0);
  for (int n = 0; n < M; ++n)
    for (int c = 0; c < M; ++c) paced[n] |= c != n && chunk[n][c] / std::min(t.node_size(n), k) > kPaceBytes;
  const bool at_once = std::none_of(paced.begin(), paced.end(), [](char p) { return p; });
  for (int n = 0; n < M; ++n) {
    const auto& mine = t.ranks_of(n);
    const int P = t.node_size(n), leaders = std::min(P, k);
    for (int s : mine) {
      for (int d : mine)  // step 0: blocks for this node, straight into the local recvs
        if (d == s)
          b.copy(s, 0, {block_to_recv(b, L, s, s)});
        else
          b.put(s, 0, d, {block_to_recv(b, L, s, d)}, 0, b.rank_counter(d, kLocal));
      const int l = t.local_rank(s);
      for (int u = 1; u < M; ++u) {  // step u: stage the blocks for node n+u, then a leader sends its share
        const int c = (n + u) % M;
        if (paced[n] || u == 1) {
          std::vector<Segment> staged;
          for (int v = u; v < (paced[n] ? u + 1 : M); ++v)
            for (int d : t.ranks_of((n + v) % M))
              staged.push_back({b.send(s, L.send_offset(s, d), L.pair(s, d)),
                                b.shared(n, out[n][t.node_of(d)] + chunk_offset(n, t.node_of(d), s, d), L.pair(s, d))});
          b.copy(s, u, staged);
          b.signal(s, u, b.node_counter(n, kStaged + u));
        }
        if (l >= leaders) continue;
        if (paced[n] || u == 1) b.wait(s, u, b.node_counter(n, kStaged + u), P);
        const uint64_t lo = chunk[n][c] * l / leaders, len = chunk[n][c] * (l + 1) / leaders - lo;
        if (paced[n] && u > 1) b.flush(s, u);  // one node per step: the previous share has left
        b.put(s, u, t.ranks_of(c)[l % t.node_size(c)], {{b.shared(n, out[n][c] + lo, len), b.shared(c, in[c][n] + lo, len)}},
              leaders == k ? l : b.rail_for(len, l), b.node_counter(c, at_once ? kAll : kFrom + n));
      }
    }
    int shares_in = 0;  // from every other node, one per leader
    for (int a = 0; a < M; ++a) shares_in += a != n ? std::min(t.node_size(a), k) : 0;
    for (int d : mine) {  // copy out: local blocks, then every other node's as it comes in
      b.wait(d, 0, b.rank_counter(d, kLocal), P - 1);
      if (at_once && M > 1) b.wait(d, 1, b.node_counter(n, kAll), shares_in);
      std::vector<Segment> segs;
      for (int u = 1; u < M; ++u) {
        const int a = (n - u + M) % M;  // sends to us at step u
        if (!at_once) b.wait(d, u, b.node_counter(n, kFrom + a), std::min(t.node_size(a), k));
        for (int s : t.ranks_of(a))
          segs.push_back({b.shared(n, in[n][a] + chunk_offset(a, n, s, d), L.pair(s, d)),
                          b.recv(d, L.recv_offset(d, s), L.pair(s, d))});
        if (!at_once) b.copy(d, u, segs), segs.clear();
      }
      b.copy(d, M > 1 ? M - 1 : 0, segs);  // at once: every node's blocks in one copy
    }
  }
}

const AlltoallRegistrar registered{{Collective::Alltoall, 4, "smp_multileader",
    "shm staging per node, one leader per rail exchanges whole node-to-node blocks, local copy-out",
    "P m c + (M-1) (ts + P^2 m tau / min(P,k)) + P m c",
    "railcoll (seed 001 §6.2 phases, multi-leader)", {}, build_smp_multileader}};

}  // namespace

}  // namespace railcoll::alltoall
