// Recursive doubling (pairwise exchange) all-gather, any N.
//
// Step s: rank p exchanges the 2^s blocks it holds with p xor 2^s. When N is not a
// power of two, the N - P extra ranks (P the largest power of two below N) first
// fold their block into rank p - P and get the whole result back at the end.
// It is the concurrent exchange engine with C = 1 (see pairwise_exchange.hpp);
// seed 002 §3 eq. (2) is its cost with non-blocking, bidirectional messages.
// Hockney (N = 2^L): T = L*ts + (N-1)*m*tau; otherwise + (ts + m tau) + (ts + N m tau).
#include "algos/allgather/pairwise_exchange.hpp"
#include "core/registry.hpp"

namespace railcoll::allgather {

namespace {

void build_recursive_doubling(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  build_pairwise_exchange(b, t, L, 1);
}

const AlgorithmRegistrar registered{{Collective::Allgather, 5, "recursive_doubling",
    "pairwise exchange: log2 N steps, message doubles each step",
    "log2N ts + (N-1) m tau",
    "seed 002 §3 eq. (2)", {}, build_recursive_doubling}};

}  // namespace

}  // namespace railcoll::allgather
