// Flat schedules for a job on one node, shared by the SMP algorithms of the
// reductions and of alltoall(v) (each calls them from its one-node case).
//
// Every rank copies its input into its own slot of the node's shared buffer and
// raises one node counter (seed 001 §5.1's shared buffer and flags); every rank that needs a result waits for that
// counter to reach the node's size and takes its result from the slots, each
// reduction combining the slots in rank order (so a non-commutative operator
// is served). One synchronisation, nobody relays: on a node with more
// processes than cores a relay (a leader that combines, then releases the
// others; a chain; a message through a local socket) is one more process that
// must be scheduled before the others can go on (docs/runtime.md, "One node:
// flat schedules"). The flat form copies every input once into shared memory,
// as Open MPI's sm collectives do; allreduce's ranks each combine the whole
// vector, so the callers use it for small calls only (flat_fits).
// Hockney (P ranks, m bytes a rank): T = m c + t_flag + (P-1) m gamma + m c.
#pragma once
#include <cstdint>

#include "core/schedule.hpp"

namespace railcoll::one_node {

// The node's shared bytes a flat schedule may take; beyond it the callers
// keep their own form, which overlaps its copies with each other.
constexpr uint64_t kFlatSharedBytes = 1 << 20;
inline bool flat_fits(uint64_t shared_bytes) { return shared_bytes <= kFlatSharedBytes; }
// allreduce's vector up to which every rank combines all P inputs itself: a
// leader combines them once, the flat form P times.
constexpr uint64_t kFlatAllreduceBytes = 1024;

// allreduce: every rank combines the P slots into its recv. Shared: P m.
void allreduce(ScheduleBuilder& b, uint64_t m);
// reduce: the root combines the P slots into its recv; the others leave
// once their input is in. Shared: P m.
void reduce(ScheduleBuilder& b, uint64_t m, int root);
// reduce_scatter(v): rank r combines block r of the P slots (each a whole
// input, L.total()) into its recv. Shared: P L.total().
void reduce_scatter(ScheduleBuilder& b, const BlockLayout& L);
// alltoall(v): rank s copies each block s -> d into the shared buffer, rank d
// copies the blocks for it out. Shared: the sum of the pairs.
void alltoall(ScheduleBuilder& b, const BlockLayout& L);

}  // namespace railcoll::one_node
