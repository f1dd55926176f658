// Recursive-doubling allreduce: every rank copies its vector into recv, then in
// step s = 0..log2(p2)-1 exchanges the whole vector with rank (p XOR 2^s) and
// combines; ranks beyond the largest power of two p2 fold in before and get the
// result after (common.hpp, Fold). Latency-optimal, for short vectors. The
// lower partner's vector always goes on the left: rank order is kept.
// Hockney: T = (ceil(log2 N) + 2 [N not a power of two]) (ts + m tau + m gamma)
//          (m: vector bytes, gamma: combine time per byte)
#include "algos/allreduce/common.hpp"
#include "core/registry.hpp"

namespace railcoll::allreduce {

namespace {

void build_recursive_doubling(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int N = t.nranks();
  const uint64_t m = L.count[0];
  std::vector<Unit> units;
  for (int r = 0; r < N; ++r) {
    b.copy(r, 0, {{b.send(r, 0, m), b.recv(r, 0, m)}});
    units.push_back({r, b.recv(r, 0, m)});
    b.set_scratch(r, m * (Fold(N).log2 + 1));
  }
  recursive_doubling(b, units, [&](int u, int slot) { return b.scratch(u, slot * m, m); }, 0, b.rail_for(m, 0), 0);
}

const AlgorithmRegistrar registered{{Collective::Allreduce, 1, "recursive_doubling",
    "log2 N exchanges of the whole vector, both partners combine",
    "ceil(log2 N) (ts + m tau + m gamma)",
    "seed 002 §3 pairwise exchange, combining", {}, build_recursive_doubling, /*keeps_order=*/true,
    /*in_place_ok=*/true}};

}  // namespace

}  // namespace railcoll::allreduce
