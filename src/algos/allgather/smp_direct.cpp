// SMP-aware Direct all-gather (seed 001 §6.2.2, Figure 4).
//
// Phase 1 (step 0): every process memcpy's its block into the node-shared buffer
//   (N blocks, laid out like recv) and sets its flag.
// Phase 2 (steps 1..ceil((M-1)/k)): the masters run k-port Direct across the M
//   nodes: step s, port j, the master writes its node's blocks into the shared
//   buffer of node (n + (s-1)*k + j) mod M.
// Phase 3, large chunks (a node's blocks >= kOverlapBytes): overlap. Right after
//   posting the first puts every process copies its own node's blocks from the
//   shared buffer into its recv while the network works, then each other node's
//   chunk as soon as it has arrived (one node counter per source node, watched
//   by all local processes, in the order the chunks are sent).
// Phase 3, small chunks: one wake-up per process. The master, which receives
//   every chunk anyway, raises one node flag when all are in, and every process
//   copies the whole buffer out at once: waking for each chunk cost more than
//   the copies it would overlap (a wake-up is ~10 us on an oversubscribed node,
//   the time to copy ~150 KB; docs/runtime.md, "The latency path").
// One node (M = 1), flat: no master relays the node flag; every process waits
//   for the gathered counter itself and copies out. A relay is one more
//   process that must be scheduled between the last block in and the first
//   copy out: on a node with more processes than cores, a scheduling round
//   (docs/runtime.md, "One node: flat schedules").
// No final node sync (common.hpp: consecutive calls use two banks).
// Hockney, M nodes, P per node: T = P m copy + ceil((M-1)/k) (ts + P m tau)
//   + (N - P) m copy   (large: the own-node copy hides behind the network phase;
//   small: + P m copy, and one wake-up instead of M-1).
#include <algorithm>

#include "algos/allgather/common.hpp"
#include "core/registry.hpp"

namespace railcoll::allgather {

namespace {

// A node's chunk from which the copy-out overlaps the network chunk by chunk.
constexpr uint64_t kOverlapBytes = 128 * 1024;

void build_smp_direct(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int M = t.nnodes(), k = t.rails();
  const int steps = (M - 1 + k - 1) / k;
  enum { kGathered = 0, kAllIn = 1, kFrom = 2 };  // kFrom + q: node q's chunk is in
  uint64_t largest_chunk = 0;
  for (int n = 0; n < M; ++n) {
    uint64_t chunk = 0;
    for (int r : t.ranks_of(n)) chunk += L.count[r];
    largest_chunk = std::max(largest_chunk, chunk);
  }
  const bool overlap = largest_chunk >= kOverlapBytes;

  for (int n = 0; n < M; ++n) {
    b.set_shared(n, L.total());
    shm_gather(b, L, n, 0, kGathered, [&](int r) { return L.displ[r]; });
    const RankRuns own = runs_of(t.ranks_of(n));
    uint64_t own_bytes = 0;
    for (auto& br : byte_ranges(L, own)) own_bytes += br.second - br.first;
    const int master = t.leader(n);
    if (M == 1) {
      for (int r : t.ranks_of(n)) {
        b.wait(r, 0, b.node_counter(n, kGathered), t.node_size(n));
        b.copy(r, 0, {{b.shared(n, 0, L.total()), b.recv(r, 0, L.total())}});
      }
      continue;
    }
    // Step s of k-port Direct: the master writes its node's blocks to k nodes.
    auto send_step = [&](int s) {
      if (s > 1) b.flush(master, s);
      for (int j = 1; j <= k; ++j) {
        int dist = (s - 1) * k + j;
        if (dist > M - 1) break;
        int q = (n + dist) % M;
        b.put(master, s, t.leader(q), same_offset_segments(L, own, b.shared(n, 0, 0), b.shared(q, 0, 0)),
              b.rail_for(own_bytes, j - 1), b.node_counter(q, kFrom + n));
      }
    };
    if (!overlap) {
      b.wait(master, 0, b.node_counter(n, kGathered), t.node_size(n));
      for (int s = 1; s <= steps; ++s) send_step(s);
      for (int dist = 1; dist < M; ++dist)
        b.wait(master, (dist + k - 1) / k, b.node_counter(n, kFrom + (n - dist + M) % M), 1);
      if (t.node_size(n) > 1) b.signal(master, steps, b.node_counter(n, kAllIn));
      for (int r : t.ranks_of(n)) {
        if (r != master) b.wait(r, steps, b.node_counter(n, kAllIn), 1);
        b.copy(r, steps, {{b.shared(n, 0, L.total()), b.recv(r, 0, L.total())}});
      }
      continue;
    }
    for (int r : t.ranks_of(n)) {
      b.wait(r, 0, b.node_counter(n, kGathered), t.node_size(n));
      if (r == master) {
        for (int s = 1; s <= steps; ++s) {
          send_step(s);
          if (s == 1) copy_runs_out(b, L, r, 1, own);  // overlap with the network
        }
        if (steps == 0) copy_runs_out(b, L, r, 1, own);
      } else {
        copy_runs_out(b, L, r, 1, own);
      }
      for (int dist = 1; dist < M; ++dist) {  // node n - dist sent to us at step ceil(dist/k)
        int q = (n - dist + M) % M, step = (dist + k - 1) / k;
        b.wait(r, step, b.node_counter(n, kFrom + q), 1);
        copy_runs_out(b, L, r, step, runs_of(t.ranks_of(q)));
      }
    }
  }
}

const AlgorithmRegistrar registered{{Collective::Allgather, 10, "smp_direct",
    "shm gather, k-port Direct among node masters, overlapped shm copy-out",
    "P m c + ceil((M-1)/k) (ts + P m tau) + (N-P) m c",
    "seed 001 §6.2.2", {}, build_smp_direct}};

}  // namespace

}  // namespace railcoll::allgather
