// k-port Direct alltoall(v) (seed 000 §6.1 and seed 001 §6.1.1's Direct, applied
// to personalised data; the pairwise exchange of MPICH and Open MPI with k
// partners per step).
//
// Step s (0-based), port j = 1..k: rank p puts its block for q = (p + s*k + j)
// mod N straight into q's recv, on rail j-1; a block above the stripe threshold
// is split over all rails. In step s rank p receives from p - (s*k + j), so every
// rank sends k and receives k messages per step and the k rails of every node
// are busy at once. ceil((N-1)/k) steps; between steps the sender waits until
// its puts no longer read the send buffer (elan_wait).
// Hockney: T = ceil((N-1)/k) (ts + m tau); bytes sent per rank (N-1) m.
#include "algos/alltoall/common.hpp"

namespace railcoll::alltoall {

namespace {

void build_direct(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions&) {
  const int N = t.nranks(), k = t.rails();
  const int steps = (N - 1 + k - 1) / k;
  for (int p = 0; p < N; ++p) {
    std::vector<std::vector<int>> rounds(steps);
    for (int s = 0; s < steps; ++s)
      for (int j = 1; j <= k && s * k + j <= N - 1; ++j) rounds[s].push_back((p + s * k + j) % N);
    exchange_in_rounds(b, L, p, rounds);
  }
}

const AlltoallRegistrar registered{{Collective::Alltoall, 1, "direct",
    "k-port Direct/pairwise: each step every rank puts its blocks for k ranks on k rails",
    "ceil((N-1)/k) (ts + m tau)",
    "seed 000 §6.1, seed 001 §6.1.1", {}, build_direct}};

}  // namespace

}  // namespace railcoll::alltoall
