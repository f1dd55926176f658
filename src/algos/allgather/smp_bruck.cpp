// SMP-aware Bruck all-gather (seed 001 §6.2.2).
//
// Phase 1 (step 0): shared-memory gather of the node's blocks to the top of the
//   node-shared buffer.
// Phase 2 (steps 1..ceil(log_{k+1} M)): the masters run k-port Bruck across the
//   M nodes on node chunks (a chunk is one node's blocks; chunks may differ in
//   size on uneven nodes): node n's buffer holds chunks n, n+1, ... in that
//   order; at step i a master with c chunks writes its first min(c, M - j*c)
//   chunks into the buffer of node n - j*c at chunk position j*c, j = 1..k.
//   Overlap: after the first puts every process copies its own node's blocks
//   into recv.
// Phase 3: "Instead of doing a local memory shift, we copy each message from the
//   shared buffer to the right position of the destination buffer for every
//   process"; no final node sync (common.hpp: consecutive calls use two banks).
// Hockney: T = P m copy + ceil(log_{k+1} M) ts + (M-1)/k * P m tau + (N-P) m copy.
#include "algos/allgather/common.hpp"
#include "core/registry.hpp"

namespace railcoll::allgather {

namespace {

void build_smp_bruck(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int M = t.nnodes(), k = t.rails();
  enum { kGathered = 0, kStep = 1 };  // kStep + i: chunks of Bruck step i

  std::vector<uint64_t> chunk(M, 0);
  for (int n = 0; n < M; ++n)
    for (int r : t.ranks_of(n)) chunk[n] += L.count[r];
  const BlockLayout chunks(chunk);
  int steps = 0;
  for (long held = 1; held < M; held *= (k + 1)) ++steps;

  for (int n = 0; n < M; ++n) {
    b.set_shared(n, L.total());
    // Within chunk 0 the node's blocks are in rank order.
    std::vector<uint64_t> at(t.nranks(), 0);
    uint64_t pos = 0;
    for (int r : t.ranks_of(n)) at[r] = pos, pos += L.count[r];
    shm_gather(b, L, n, 0, kGathered, [&](int r) { return at[r]; });

    // Copies from the rotated buffer to recv for the chunks at positions [from, to).
    auto chunks_to_recv = [&](int rank, int step, int from, int to) {
      std::vector<Segment> segs;
      for (int i = from; i < to; ++i) {
        int x = (n + i) % M;
        uint64_t off = chunks.cyclic_bytes(n, i);
        for (int r : t.ranks_of(x)) {
          segs.push_back({b.shared(n, off, L.count[r]), b.recv(rank, L.displ[r], L.count[r])});
          off += L.count[r];
        }
      }
      b.copy(rank, step, std::move(segs));
    };

    const int master = t.leader(n);
    std::vector<int> senders_per_step;
    for (int r : t.ranks_of(n)) {
      b.wait(r, 0, b.node_counter(n, kGathered), t.node_size(n));
      if (r != master) {
        chunks_to_recv(r, 1, 0, 1);
        continue;
      }
      long held = 1;
      for (int i = 0; i < steps; ++i) {
        int senders = 0;
        for (int j = 1; j <= k; ++j) {
          long c = std::min<long>(held, M - j * held);
          if (c <= 0) break;
          int q = static_cast<int>(((n - j * held) % M + M) % M);
          uint64_t len = chunks.cyclic_bytes(n, static_cast<int>(c));
          uint64_t off = chunks.cyclic_bytes(q, static_cast<int>(j * held));
          b.put(r, 1 + i, t.leader(q), {{b.shared(n, 0, len), b.shared(q, off, len)}}, b.rail_for(len, j - 1),
                b.node_counter(q, kStep + i));
          ++senders;
        }
        if (i == 0) chunks_to_recv(r, 1, 0, 1);  // overlap with the network
        b.wait(r, 1 + i, b.node_counter(n, kStep + i), senders);
        senders_per_step.push_back(senders);
        held = std::min<long>(M, held * (k + 1));
      }
      if (steps == 0) chunks_to_recv(r, 1, 0, 1);
    }
    for (int r : t.ranks_of(n)) {
      if (r != master)
        for (int i = 0; i < steps; ++i) b.wait(r, 1 + steps, b.node_counter(n, kStep + i), senders_per_step[i]);
      chunks_to_recv(r, 1 + steps, 1, M);
    }
  }
}

const AlgorithmRegistrar registered{{Collective::Allgather, 11, "smp_bruck",
    "shm gather, k-port Bruck among node masters, copy-out instead of shift",
    "P m c + ceil(log_{k+1}M) ts + (M-1)/k P m tau + (N-P) m c",
    "seed 001 §6.2.2", {}, build_smp_bruck}};

}  // namespace

}  // namespace railcoll::allgather
