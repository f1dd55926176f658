// k-port Standard Exchange all-gather (seed 000 §6.2, seed 001 §6.1.2; Bokhari).
//
// The k-port extension of recursive doubling for N = (k+1)^L: at step i the
// ranks that differ only in base-(k+1) digit i form a group of k+1 and exchange
// everything they hold, (k+1)^i blocks, with the k others. Seed 000 Figure 3
// shows N = 9, k = 2: step 0 inside (0,1,2),(3,4,5),(6,7,8), step 1 with p+-3, p+-6.
// Correction steps when N is not a power of k+1: with P the largest power of
// k+1 not above N, rank P+e first hands its block to core rank e mod P (at most
// k extras per core, one port each), the P core ranks exchange, then every core
// rank writes the whole result to its extras.
// Hockney (N = (k+1)^L): T = ts*log_{k+1}N + (N-1)/k * m*tau      [seed 001 eq. (2)]
// otherwise add (ts + m*tau) for the fold and (ts + N*m*tau) for the unfold.
#include "algos/allgather/common.hpp"
#include "core/registry.hpp"

namespace railcoll::allgather {

namespace {

void build_stdex(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int N = t.nranks(), k = t.rails(), K = k + 1;
  int P = 1, levels = 0;
  while (static_cast<long>(P) * K <= N) P *= K, ++levels;
  const bool fold = P < N;
  const int first_exchange_step = fold ? 1 : 0;
  const int unfold_step = first_exchange_step + levels;
  enum { kFolded = 0, kUnfolded = 1, kExchange = 2 };  // counter indices

  // Ranks of the held set of core rank p before exchange step i: core ranks of
  // its aligned group of size K^i, and the extras folded into them.
  auto held_segments = [&](int p, int group, int dst) {
    RankRuns runs;
    int base = p - p % group;
    for (int m = 0; base + m * P < N; ++m) {
      int first = base + m * P, last = std::min(base + group + m * P, m == 0 ? P : N);
      if (first < last) runs.push_back({first, last});
    }
    return same_offset_segments(L, runs, b.recv(p, 0, 0), b.recv(dst, 0, 0));
  };

  for (int p = 0; p < N; ++p) {
    if (p >= P) {  // an extra rank: fold, then receive everything
      int core = p % P;
      b.put(p, 0, core, {{b.send(p, 0, L.count[p]), b.recv(core, L.displ[p], L.count[p])}},
            b.rail_for(L.count[p], (p - P) / P), b.rank_counter(core, kFolded));
      b.wait(p, unfold_step, b.rank_counter(p, kUnfolded), 1);
      continue;
    }
    b.copy(p, 0, {{b.send(p, 0, L.count[p]), b.recv(p, L.displ[p], L.count[p])}});
    int extras = 0;
    for (int x = p + P; x < N; x += P) ++extras;
    b.wait(p, 0, b.rank_counter(p, kFolded), extras);
    int group = 1;
    for (int i = 0; i < levels; ++i, group *= K) {
      int step = first_exchange_step + i;
      int digit = (p / group) % K, base = p - p % (group * K) + p % group;
      CounterRef got = b.rank_counter(p, kExchange + i);
      int port = 0;
      for (int j = 0; j < K; ++j) {
        if (j == digit) continue;
        int q = base + j * group;
        auto segs = held_segments(p, group, q);
        uint64_t len = 0;
        for (auto& s : segs) len += s.src.length;
        b.put(p, step, q, std::move(segs), b.rail_for(len, port++), b.rank_counter(q, kExchange + i));
      }
      b.wait(p, step, got, k);
    }
    int port = 0;
    for (int x = p + P; x < N; x += P)
      b.put(p, unfold_step, x, {{b.recv(p, 0, L.total()), b.recv(x, 0, L.total())}},
            b.rail_for(L.total(), port++), b.rank_counter(x, kUnfolded));
  }
}

const AlgorithmRegistrar registered{{Collective::Allgather, 2, "stdex",
    "k-port Standard Exchange (recursive doubling in base k+1), correction steps",
    "log_{k+1}N ts + (N-1)/k m tau",
    "seed 000 §6.2, seed 001 §6.1.2", {}, build_stdex}};

}  // namespace

}  // namespace railcoll::allgather
