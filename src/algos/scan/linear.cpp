// Linear scan (MPICH's and Open MPI's basic scan): rank r waits for the prefix
// of ranks 0..r-1 from rank r-1, combines its own vector on the right and
// passes the prefix of 0..r on to rank r+1. N-1 steps one after the other,
// one message each: the least traffic, for short vectors on few ranks.
// Hockney: T = (N-1) (ts + m tau + m gamma)
#include "algos/scan/common.hpp"

namespace railcoll::scan {

namespace {

void build_linear(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions&) {
  const int N = t.nranks();
  const uint64_t m = L.count[0];
  if (m == 0) return;
  const bool excl = exclusive(b);
  std::vector<Unit> units;
  std::vector<Span> running;
  for (int r = 0; r < N; ++r) {
    units.push_back({r, b.send(r, 0, m), b.recv(r, 0, m)});
    running.push_back(b.scratch(r, 0, m));
    if (excl && r > 0 && r + 1 < N) b.set_scratch(r, m);
  }
  chain(b, units, excl, running, 0, 0);
}

const BothScans registered{1, "linear", "a chain: each rank adds its vector and passes the prefix on",
                           "(N-1) (ts + m tau + m gamma)", "MPICH, Open MPI basic scan", build_linear};

}  // namespace

}  // namespace railcoll::scan
