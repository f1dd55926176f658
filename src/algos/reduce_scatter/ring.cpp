// Ring reduce-scatter (the first half of the ring allreduce, Patarasuk and Yuan
// 2009; NCCL's and Gloo's ring): in step i = 0 .. N-2 rank r passes its partial
// of block r-1-i to its right neighbour, which combines it with its own input
// of that block and passes it on in the next step; in the last step rank r
// receives the partial of its own block from every other rank and combines it
// into its recv. Each message is one block, striped over the rails above the
// threshold, so every rail carries m/k of it. Every block has its own scratch
// slot: the left neighbour may send step i+1 before this rank has passed step i on.
// Hockney: T = (N-1) (ts + m/k tau + m gamma)   (m: bytes of a block)
#include "algos/reduce_scatter/common.hpp"

namespace railcoll::reduce_scatter {

namespace {

void build_ring(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions&) {
  const int N = t.nranks();
  auto block = [&](int x) { return ((x % N) + N) % N; };
  auto slot = [&](int r, int blk) { return b.scratch(r, L.displ[blk], L.count[blk]); };
  auto input = [&](int r, int blk) { return b.send(r, L.displ[blk], L.count[blk]); };
  for (int r = 0; r < N; ++r) {
    b.copy(r, 0, {{input(r, r), b.recv(r, 0, L.count[r])}});
    b.set_scratch(r, N > 1 ? L.total() : 0);
  }
  for (int i = 0; i + 1 < N; ++i) {
    for (int r = 0; r < N; ++r) {
      const int right = (r + 1) % N, out = block(r - 1 - i), in = block(r - 2 - i);
      // Step 0 passes the rank's own input; later steps the partial it combined.
      const Span from = i == 0 ? input(r, out) : slot(r, out);
      b.put(r, i, right, {{from, slot(right, out)}}, b.rail_for(L.count[out], i), b.rank_counter(right, i));
      b.wait(r, i, b.rank_counter(r, i), 1);
      if (in == r) b.reduce(r, i, {{slot(r, in), b.recv(r, 0, L.count[r])}});  // the last step: own block
      else b.reduce(r, i, {{input(r, in), slot(r, in)}});
    }
  }
}

const BothRegistrars registered{1, "ring", "ring over the ranks, one block per step, striped over the rails",
                                "(N-1) (ts + m/k tau + m gamma)", "Patarasuk and Yuan 2009", build_ring};

}  // namespace

}  // namespace railcoll::reduce_scatter
