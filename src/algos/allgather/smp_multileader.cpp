// SMP multi-leader all-gather (railcoll's own, beyond the papers).
//
// The SMP-aware algorithms of seed 001 drive all rails from one master per node,
// so one process (one core, one memory path) feeds k NICs. Here every local rank
// is a leader: local rank l drives rail l mod k. After the shared-memory gather
// (step 0) the node's blocks, as one byte string, are cut into P nearly equal
// shares; rank l writes share l into the shared buffer of every other node, one
// node per step (1-port Direct on its rail), so all rails are driven by different
// processes at once and the sockets' work is spread over all cores. (Measured on
// the emulated cluster, 4 x 4 ranks, 2 rails: one leader per rail gave 81 ms at
// 1 MiB per rank, every rank a leader 79 ms; 19.0 vs 17.8 ms at 256 KiB.) Every process copies its own node's
// blocks out while the network works, then each other node's blocks as soon as
// all their shares are in (one node counter per source node, in the order they
// are sent); no node sync at the end (common.hpp: consecutive calls use two banks).
// With fewer ranks than rails the shares are striped over the rails above the
// threshold. Hockney: T = P m c + (M-1) (ts + P m tau / k) + (N-P) m c.
#include "algos/allgather/common.hpp"
#include "core/registry.hpp"

namespace railcoll::allgather {

namespace {
// Share l of L of the byte string formed by the node's blocks: segments of a
// rank-ordered buffer.
std::vector<std::pair<uint64_t, uint64_t>> share_ranges(const std::vector<std::pair<uint64_t, uint64_t>>& node,
                                                        uint64_t node_bytes, int l, int L) {
  uint64_t lo = node_bytes * l / L, hi = node_bytes * (l + 1) / L, pos = 0;
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (auto& br : node) {
    uint64_t len = br.second - br.first;
    uint64_t a = std::max(lo, pos), z = std::min(hi, pos + len);
    if (a < z) out.push_back({br.first + (a - pos), br.first + (z - pos)});
    pos += len;
  }
  return out;
}
}  // namespace

void smp_multileader_schedule(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, bool paced) {
  const int M = t.nnodes(), k = t.rails();
  enum { kGathered = 0, kFrom = 1 };  // kFrom + q: a share of node q is in
  auto leaders = [&](int n) { return t.node_size(n); };  // every local rank
  std::vector<uint64_t> node_bytes(M, 0);
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> node_ranges(M);
  for (int n = 0; n < M; ++n) {
    node_ranges[n] = byte_ranges(L, runs_of(t.ranks_of(n)));
    for (auto& br : node_ranges[n]) node_bytes[n] += br.second - br.first;
  }
  // Non-empty shares of each node: what every other node waits for from it.
  std::vector<int> shares_of(M, 0);
  for (int n = 0; n < M; ++n)
    for (int l = 0; l < leaders(n); ++l) shares_of[n] += !share_ranges(node_ranges[n], node_bytes[n], l, leaders(n)).empty();

  for (int n = 0; n < M; ++n) {
    b.set_shared(n, L.total());
    shm_gather(b, L, n, 0, kGathered, [&](int r) { return L.displ[r]; });
    const RankRuns own = runs_of(t.ranks_of(n));
    const int nl = leaders(n);
    for (int r : t.ranks_of(n)) {
      b.wait(r, 0, b.node_counter(n, kGathered), t.node_size(n));
      int l = t.local_rank(r);
      auto share = l < nl ? share_ranges(node_ranges[n], node_bytes[n], l, nl)
                          : std::vector<std::pair<uint64_t, uint64_t>>{};
      uint64_t len = 0;
      for (auto& br : share) len += br.second - br.first;
      const int rail = nl >= k ? l % k : b.rail_for(len, l);
      auto put_share = [&](int dist) {
        int q = (n + dist) % M;
        std::vector<Segment> segs;
        for (auto& br : share)
          segs.push_back({b.shared(n, br.first, br.second - br.first), b.shared(q, br.first, br.second - br.first)});
        if (dist > 1) b.flush(r, dist);  // 1-port: the previous share is in the kernel's hands
        b.put(r, dist, t.ranks_of(q)[l % leaders(q)], std::move(segs), rail, b.node_counter(q, kFrom + n));
      };
      const bool sends = !share.empty() && M > 1;
      if (sends) put_share(1);
      copy_runs_out(b, L, r, 1, own);  // overlap with the network
      for (int dist = 2; sends && !paced && dist < M; ++dist) put_share(dist);
      for (int dist = 1; dist < M; ++dist) {  // node n - dist sends to us at step dist
        int q = (n - dist + M) % M;
        b.wait(r, dist, b.node_counter(n, kFrom + q), shares_of[q]);
        if (sends && paced && dist + 1 < M) put_share(dist + 1);  // step dist is over here
        copy_runs_out(b, L, r, dist, runs_of(t.ranks_of(q)));
      }
    }
  }
}

namespace {

void build_smp_multileader(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions&) {
  smp_multileader_schedule(b, t, L, false);
}

const AlgorithmRegistrar registered{{Collective::Allgather, 12, "smp_multileader",
    "shm gather, every local rank sends its share of the node on rail r mod k",
    "P m c + (M-1) (ts + P m tau / k) + (N-P) m c",
    "railcoll (beyond seed 001)", {}, build_smp_multileader}};

}  // namespace

}  // namespace railcoll::allgather
