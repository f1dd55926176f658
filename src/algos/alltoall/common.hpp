// Helpers shared by the alltoall(v) builders. Every builder reads the per-pair
// layout (BlockLayout::pair, send_offset, recv_offset), so one builder serves
// alltoall and alltoallv alike and registers for both (AlltoallRegistrar).
#pragma once
#include <vector>

#include "core/registry.hpp"

namespace railcoll::alltoall {

// Block src -> dst, from src's send straight into dst's recv.
inline Segment block_to_recv(const ScheduleBuilder& b, const BlockLayout& L, int src, int dst) {
  const uint64_t len = L.pair(src, dst);
  return {b.send(src, L.send_offset(src, dst), len), b.recv(dst, L.recv_offset(dst, src), len)};
}

// A personalised exchange in rounds (Direct, Concurrent Exchange): rank p
// copies its own block, then in round s puts block p -> q straight into q's recv
// for every q of rounds[s], the j-th message of a round on port j (its own rail,
// striped above the threshold); it flushes between rounds (the papers'
// elan_wait: the round's messages are in the network before the next ones go)
// and ends when the N-1 blocks bound for it are in (rank counter 0).
void exchange_in_rounds(ScheduleBuilder& b, const BlockLayout& L, int p, const std::vector<std::vector<int>>& rounds);

// Registers a builder for alltoall and alltoallv.
struct AlltoallRegistrar {
  explicit AlltoallRegistrar(const AlgoSpec& spec) : both{spec, Collective::Alltoallv} {}
  AlgorithmRegistrar both;
};

}  // namespace railcoll::alltoall
