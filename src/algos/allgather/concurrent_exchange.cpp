// Concurrent Exchange all-gather, baseline (seed 002 §3.1), concurrency index C
// (option --concurrency, default k: one concurrent message per rail).
//
// The N ranks form C groups; each group does a log2(N/C)-step pairwise exchange
// and every message to the pair is also sent, non-blocking, to the pair's peer in
// each other group; a pre-loop put gives every peer our own block. Any N: see
// pairwise_exchange.hpp for how uneven groups and non-powers of two are folded.
// Cost with sufficient network concurrency (seed 002 eq. (3)), delta = the cost
// of initiating a message (the paper charges the pre-loop step delta; it posts
// C-1 puts, so it is written delta*(C-1) here; the two agree at the paper's C = 2):
//   T3 = delta*(C-1) + sum_{i=0}^{log2(N/C)-1} [ T(m*2^i) + delta*(C-1) ]
// In Hockney terms each step costs ts + 2^i m tau on the critical path, and a
// rank sends C-1 + log2(N/C)*C messages, (N/C - 1)*C*m + (C-1)*m bytes.
#include "algos/allgather/pairwise_exchange.hpp"
#include "core/registry.hpp"

namespace railcoll::allgather {

namespace {

void build_concurrent_exchange(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  int C = o.concurrency > 0 ? o.concurrency : t.rails();
  build_pairwise_exchange(b, t, L, C);
}

const AlgorithmRegistrar registered{{Collective::Allgather, 7, "concurrent_exchange",
    "C groups exchange pairwise, every message also to the peers of the pair",
    "sum_i [T(2^i m) + (C-1) delta], i < log2(N/C)",
    "seed 002 §3.1", {"concurrency"}, build_concurrent_exchange}};

}  // namespace

}  // namespace railcoll::allgather
