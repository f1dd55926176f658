// Recursive doubling (pairwise exchange) all-gather, any N.
//
// Step s: rank p exchanges the 2^s blocks it holds with p xor 2^s. When N is not a
// power of two, the N - P extra ranks (P the largest power of two below N) first
// fold their block into rank p - P and get the whole result back at the end.
// It is the concurrent exchange engine with C = 1 (see pairwise_exchange.hpp);
// seed 002 §3 eq. (2) is its cost with non-blocking, bidirectional messages.
// Hockney (N = 2^L): T = L*ts + (N-1)*m*tau; otherwise + (ts + m tau) + (ts + N m tau).
#include "algos/allgather/pairwise_exchange.hpp"

namespace railcoll::allgather {

Schedule build_recursive_doubling(const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  return build_pairwise_exchange("recursive_doubling", t, L, o, 1);
}

}  // namespace railcoll::allgather
