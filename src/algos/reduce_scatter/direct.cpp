// k-port Direct reduce-scatter (seed 000 §6.1's Direct, each rank sending its
// partial of block q to rank q instead of one block to everyone): rank r puts
// block r+d of its input into rank r+d's scratch slot for distance d, for
// d = 1 .. N-1, the j-th message of a step on rail j mod k (striped above the
// threshold); the puts are one-sided, so all N-1 are in flight at once. Each
// rank combines the partials in the order they are due (r-1, r-2, ...) into its
// recv as they arrive, overlapping the combining with the network; for a
// non-commutative operator in rank order instead (r-1 .. 0 in front, then
// r+1 .. N-1 behind).
// Hockney: T = ceil((N-1)/k) (ts + m tau) + (N-1) m gamma
#include <algorithm>

#include "algos/reduce_scatter/common.hpp"

namespace railcoll::reduce_scatter {

namespace {

void build_direct(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int N = t.nranks(), k = t.rails();
  // Rank q's slot for the partial from distance d (1 .. N-1).
  auto slot = [&](int q, int d) { return b.scratch(q, (d - 1) * L.count[q], L.count[q]); };
  for (int r = 0; r < N; ++r) {
    b.set_scratch(r, (N - 1) * L.count[r]);
    b.copy(r, 0, {{b.send(r, L.displ[r], L.count[r]), b.recv(r, 0, L.count[r])}});
    for (int d = 1; d < N; ++d) {
      const int q = (r + d) % N;
      b.put(r, (d - 1) / k, q, {{b.send(r, L.displ[q], L.count[q]), slot(q, d)}}, b.rail_for(L.count[q], d - 1),
            b.rank_counter(q, d - 1));
    }
    // The partial from distance d comes from rank r-d. In rank order (a
    // non-commutative operator): r-1 .. 0 in front, then r+1 .. N-1 behind.
    std::vector<int> order;
    for (int d = 1; d < N; ++d) order.push_back(d);
    if (!o.commutative) std::reverse(order.begin() + r, order.end());
    for (int d : order) {
      b.wait(r, (d - 1) / k, b.rank_counter(r, d - 1), 1);
      b.combine(r, (d - 1) / k, {{slot(r, d), b.recv(r, 0, L.count[r])}}, d <= r);
    }
  }
}

const BothRegistrars registered{3, "direct", "every rank puts each partial straight to its owner, k at a time",
                                "ceil((N-1)/k) (ts + m tau) + (N-1) m gamma", "seed 000 §6.1", build_direct, true};

}  // namespace

}  // namespace railcoll::reduce_scatter
