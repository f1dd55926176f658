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
  Chunks ch(m, dtype_size(o.dtype), f.p2);
  // Scratch: slot 0 for the fold, slot 1+s for halving step s (each at the
  // offsets of the range it holds, so a later step never overwrites an earlier one's).
  auto slot = [&](int r, int s, int c0, int c1) { return b.scratch(r, s * m + ch.begin(c0), ch.begin(c1) - ch.begin(c0)); };
  auto range = [&](Region reg, int r, int c0, int c1) {
    return Span{reg, r, ch.begin(c0), ch.begin(c1) - ch.begin(c0)};
  };
  for (int r = 0; r < N; ++r) {
    b.copy(r, 0, {{b.send(r, 0, m), b.recv(r, 0, m)}});
    b.set_scratch(r, m * (f.log2 + 1));
  }
  std::vector<Unit> units;
  for (int r = 0; r < N; ++r) units.push_back({r, b.recv(r, 0, m)});
  fold_in(b, f, units, [&](int r, int) { return slot(r, 0, 0, f.p2); }, 0, b.rail_for(m, 0), 0);
  // Per participant: the chunk range [lo, hi) it holds after each halving step.
  std::vector<std::vector<std::pair<int, int>>> held(f.p2);
  for (int p = 0; p < f.p2; ++p) {
    int lo = 0, hi = f.p2;
    for (int s = 0; s < f.log2; ++s) {
      int mid = (lo + hi) / 2;
      if (p & (f.p2 >> (s + 1))) lo = mid; else hi = mid;
      held[p].push_back({lo, hi});
    }
  }
  for (int s = 0; s < f.log2; ++s) {  // reduce-scatter by recursive halving
    int step = 1 + s;
    for (int p = 0; p < f.p2; ++p) {
      int r = f.unit_of(p), q = p ^ (f.p2 >> (s + 1)), peer = f.unit_of(q);
      auto [lo, hi] = held[q][s];  // the half the partner keeps
      auto [klo, khi] = held[p][s];
      b.put(r, step, peer, {{range(Region::Recv, r, lo, hi), slot(peer, 1 + s, lo, hi)}},
            b.rail_for(ch.begin(hi) - ch.begin(lo), 0), b.rank_counter(peer, 1 + s));
      b.wait(r, step, b.rank_counter(r, 1 + s), 1);
      b.reduce(r, step, {{slot(r, 1 + s, klo, khi), range(Region::Recv, r, klo, khi)}});
    }
  }
  for (int s = f.log2 - 1; s >= 0; --s) {  // all-gather by recursive doubling, mirrored
    int step = 1 + f.log2 + (f.log2 - 1 - s), counter = 1 + f.log2 + (f.log2 - 1 - s);
    for (int p = 0; p < f.p2; ++p) {
      int r = f.unit_of(p), peer = f.unit_of(p ^ (f.p2 >> (s + 1)));
      auto [lo, hi] = held[p][s];  // finished by now: send it where the partner lacks it
      b.put(r, step, peer, {{range(Region::Recv, r, lo, hi), range(Region::Recv, peer, lo, hi)}},
            b.rail_for(ch.begin(hi) - ch.begin(lo), 0), b.rank_counter(peer, counter));
      b.wait(r, step, b.rank_counter(r, counter), 1);
    }
  }
  fold_out(b, f, units, 1 + 2 * f.log2, b.rail_for(m, 0), 1 + 2 * f.log2);
}

const AlgorithmRegistrar registered{{Collective::Allreduce, 3, "rabenseifner",
    "reduce-scatter by recursive halving, all-gather by recursive doubling",
    "2 log2 N ts + 2 (N-1)/N m tau + (N-1)/N m gamma",
    "Rabenseifner 2004", {}, build_rabenseifner}};

}  // namespace

}  // namespace railcoll::allreduce
