// Recursive-doubling scan (Hillis and Steele 1986; MPICH's
// scan_intra_recursive_doubling): in step s rank r exchanges the partial
// prefix of its aligned block of 2^s ranks with rank r XOR 2^s and, when the
// partner's block is the lower one, puts it in front of its own result.
// ceil(log2 N) steps for any N (a partner beyond N is skipped).
// Hockney: T = ceil(log2 N) (ts + m tau + 2 m gamma)
#include "algos/scan/common.hpp"

namespace railcoll::scan {

namespace {

void build_recursive_doubling(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions&) {
  const int N = t.nranks();
  const uint64_t m = L.count[0];
  if (m == 0) return;
  std::vector<Unit> units;
  for (int r = 0; r < N; ++r) {
    units.push_back({r, b.send(r, 0, m), b.recv(r, 0, m)});
    b.set_scratch(r, doubling_steps(N) * m);
  }
  recursive_doubling(b, units, exclusive(b), [&](int u, int s) { return b.scratch(u, s * m, m); }, 0, 0);
}

const BothScans registered{2, "recursive_doubling", "log2 N exchanges of partial prefixes (Hillis-Steele)",
                           "ceil(log2 N) (ts + m tau + 2 m gamma)", "Hillis and Steele 1986; MPICH",
                           build_recursive_doubling};

}  // namespace

}  // namespace railcoll::scan
