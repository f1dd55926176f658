// Rabenseifner's allreduce (Rabenseifner 2004; Thakur, Rabenseifner, Gropp 2005):
// reduce-scatter by recursive halving, then all-gather by recursive doubling.
// With p2 participants the vector is cut into p2 chunks; in halving step s a
// rank keeps half of its current chunk range, sends the other half to
// p XOR (p2 >> (s+1)) and combines what it gets back; after log2 p2 steps it
// owns one finished chunk, and the doubling steps mirror the halving ones,
// writing finished ranges straight into the partners' recv. Ranks beyond p2
// fold in and out as in recursive doubling (common.hpp).
// Hockney: T = 2 log2 p2 ts + 2 (p2-1)/p2 m tau + (p2-1)/p2 m gamma
//          (+ 2 (ts + m tau) + m gamma when N is not a power of two)
#include "algos/allreduce/common.hpp"
#include "core/registry.hpp"

namespace railcoll::allreduce {

namespace {

void build_rabenseifner(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int N = t.nranks();
  const uint64_t m = L.count[0];
  Fold f(N);
  // Scratch: slot 0 for the fold, slot 1+s for halving step s (each at the
  // offsets of the range it holds, so a later step never overwrites an earlier one's).
  for (int r = 0; r < N; ++r) {
    b.copy(r, 0, {{b.send(r, 0, m), b.recv(r, 0, m)}});
    b.set_scratch(r, m * (f.log2 + 1));
  }
  std::vector<Unit> units;
  for (int r = 0; r < N; ++r) units.push_back({r, b.recv(r, 0, m)});
  halving_doubling(
      b, units, [&](int u, int s) { return b.scratch(units[u].rank, s * m, m); }, element_size(o), 0,
      [&](uint64_t bytes) { return b.rail_for(bytes, 0); }, 0);
}

const AlgorithmRegistrar registered{{Collective::Allreduce, 3, "rabenseifner",
    "reduce-scatter by recursive halving, all-gather by recursive doubling",
    "2 log2 N ts + 2 (N-1)/N m tau + (N-1)/N m gamma",
    "Rabenseifner 2004", {}, build_rabenseifner, /*keeps_order=*/false,
    /*in_place_ok=*/true}};

}  // namespace

}  // namespace railcoll::allreduce
