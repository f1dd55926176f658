// Helpers shared by the all-gather builders.
#pragma once
#include <utility>
#include <vector>

#include "core/registry.hpp"
#include "core/schedule.hpp"

namespace railcoll::allgather {

// [first, last) rank ranges.
using RankRuns = std::vector<std::pair<int, int>>;

// Maximal runs of consecutive ranks among a sorted rank list.
RankRuns runs_of(const std::vector<int>& sorted_ranks);

// Segments that move the blocks of `runs` from one rank-ordered buffer to
// another at the same offsets (both buffers laid out like recv).
std::vector<Segment> same_offset_segments(const BlockLayout& L, const RankRuns& runs, Span src_base,
                                          Span dst_base);

// Byte ranges [begin, end) of a rank-ordered buffer that hold the blocks of runs.
std::vector<std::pair<uint64_t, uint64_t>> byte_ranges(const BlockLayout& L, const RankRuns& runs);

// The ranks not in `runs`, as runs.
RankRuns complement(int nranks, const RankRuns& runs);

// SMP phase 1 (seed 001 §6.2.1, Phase 1): every local process memcpy's its block
// into the node-shared buffer at `offset_of(rank)` and sets its flag; `gathered`
// (node counter) reaches the node size when all blocks are in.
template <class OffsetFn>
void shm_gather(ScheduleBuilder& b, const BlockLayout& L, int node, int step, int gathered_index,
                OffsetFn offset_of) {
  const Topology& t = b.topo();
  CounterRef g = b.node_counter(node, gathered_index);
  for (int r : t.ranks_of(node)) {
    b.copy(r, step, {{b.send(r, 0, L.count[r]), b.shared(node, offset_of(r), L.count[r])}});
    b.signal(r, step, g);
  }
}

// The SMP algorithms end without seed 001 §6.2.2's "final synchronization among
// all processes", which was there so that the next call could reuse the node's
// shared buffer: consecutive calls use two banks of the node's counters and
// shared buffer (docs/runtime.md, "Consecutive calls"), and a rank's return
// ends its own puts' reads (the runtime drains them). On a node with more
// processes than cores that synchronisation cost a round of wake-ups per call.

// SMP multi-leader all-gather (smp_multileader.cpp); paced: a leader sends its
// share to the next node only when the previous step's shares have all arrived
// at its own node (smp_multileader_paced.cpp).
void smp_multileader_schedule(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, bool paced);

// Copies rank-ordered shared-buffer runs into a rank's recv.
void copy_runs_out(ScheduleBuilder& b, const BlockLayout& L, int rank, int step, const RankRuns& runs);

}  // namespace railcoll::allgather
