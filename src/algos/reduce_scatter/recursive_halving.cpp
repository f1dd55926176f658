// Recursive-halving reduce-scatter (Thakur, Rabenseifner, Gropp 2005, §4.2;
// MPICH's commutative reduce_scatter): log2 p2 steps, each exchanging half of
// the remaining blocks with the partner p XOR (p2 >> (s+1)) and combining the
// half kept; ranks beyond the largest power of two p2 fold their input into a
// neighbour first and get their block from it at the end (common.hpp).
// Hockney: T = log2 p2 ts + (p2-1)/p2 N m tau + (p2-1)/p2 N m gamma
//          (+ ts + N m tau + N m gamma + ts + m tau when N is not a power of two)
#include "algos/reduce_scatter/common.hpp"

namespace railcoll::reduce_scatter {

namespace {

void build_recursive_halving(ScheduleBuilder& b, const Topology&, const BlockLayout& L, const AlgoOptions&) {
  recursive_halving(
      b, L, [&](int r) { return b.send(r, 0, L.total()); }, 0, 0,
      [&](int owner, int holder, Span reduced, int step, int counter) {
        const Span dst = b.recv(owner, 0, L.count[owner]);
        if (owner == holder) return b.copy(holder, step, {{reduced, dst}});
        b.put(holder, step, owner, {{reduced, dst}}, b.rail_for(reduced.length, 0), b.rank_counter(owner, counter));
        b.wait(owner, step, b.rank_counter(owner, counter), 1);
      });
}

const BothRegistrars registered{2, "recursive_halving",
                                "recursive halving: half the remaining blocks to a partner per step",
                                "log2 N ts + (N-1)/N N m (tau + gamma)", "Thakur, Rabenseifner, Gropp 2005",
                                build_recursive_halving};

}  // namespace

}  // namespace railcoll::reduce_scatter
