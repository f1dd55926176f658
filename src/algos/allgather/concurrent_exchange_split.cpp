// Concurrent Exchange with message splitting (seed 002 §3.2), concurrency 2.
//
// Same number of steps as pairwise exchange, but every block is split in two
// halves that travel in opposite directions at once: at step s (distance
// d = 2^s) rank p sends the first halves it holds to its pair p xor d, and the
// second halves it holds to its co-pair, "a process at the same distance as the
// pair but in the opposite direction" (p - d if bit s of p is 0, else p + d,
// mod N). Both patterns double what a rank holds each step; when pair and
// co-pair coincide (d = N/2) the halves go as one message. The halves of many
// blocks form one message of many segments, as on networks with non-contiguous
// transfers (seed 002 §3.2). Non-powers of two fold as recursive doubling does.
// Cost (seed 002 eq. (5)): T4 = sum_{i=0}^{log2 N - 1} T2(m*2^i / 2), two
// half-size messages in flight per step; Hockney: log2(N) * ts + (N-1)*m*tau/2
// when the two directions use two rails.
#include <algorithm>
#include <stdexcept>

#include "algos/allgather/common.hpp"
#include "core/registry.hpp"

namespace railcoll::allgather {

namespace {

void build_concurrent_exchange_split(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int N = t.nranks();
  int P = 1, levels = 0;
  while (P * 2 <= N) P *= 2, ++levels;
  const int first_exchange = P < N ? 1 : 0;
  const int unfold_step = first_exchange + levels;
  enum { kFolded = 0, kUnfolded = 1, kExchange = 2 };

  auto copair = [&](int i, int d) { return (i & d) ? (i + d) % P : (i - d + P) % P; };
  // Byte range of one half of block r: half 0 = first floor(m/2) bytes.
  auto half = [&](int r, int h) {
    uint64_t cut = L.displ[r] + L.count[r] / 2;
    return h == 0 ? std::make_pair(L.displ[r], cut) : std::make_pair(cut, L.displ[r + 1]);
  };
  auto half_segments = [&](int from, int to, const std::vector<int>& cores, int h,
                           std::vector<Segment>& out) {
    for (int c : cores)
      for (int r : {c, c + P}) {  // the core block and its folded extra
        if (r >= N) continue;
        auto br = half(r, h);
        uint64_t len = br.second - br.first;
        out.push_back({b.recv(from, br.first, len), b.recv(to, br.first, len)});
      }
  };

  // What core rank i holds before step s: of the first halves, the aligned
  // range [i & ~(2^s-1), +2^s) (recursive doubling); of the second halves, a
  // cyclic range [start[s][i], +2^s) mod P: two adjacent ranges merge each step.
  std::vector<std::vector<int>> start(levels + 1, std::vector<int>(P));
  for (int i = 0; i < P; ++i) start[0][i] = i;
  for (int s = 0; s < levels; ++s) {
    int d = 1 << s;
    for (int i = 0; i < P; ++i) {
      int mine = start[s][i], theirs = start[s][copair(i, d)];
      if ((mine + d) % P == theirs) start[s + 1][i] = mine;
      else if ((theirs + d) % P == mine) start[s + 1][i] = theirs;
      else throw std::logic_error("concurrent_exchange_split: co-pair ranges are not adjacent");
    }
  }
  auto held = [&](int s, int i, int h) {
    std::vector<int> cores;
    int w = 1 << s, first = h == 0 ? (i & ~(w - 1)) : start[s][i];
    for (int j = 0; j < w; ++j) cores.push_back((first + j) % P);
    return cores;
  };

  for (int p = 0; p < N; ++p) {
    if (p >= P) {
      int core = p - P;
      b.put(p, 0, core, {{b.send(p, 0, L.count[p]), b.recv(core, L.displ[p], L.count[p])}},
            b.rail_for(L.count[p], 0), b.rank_counter(core, kFolded));
      b.wait(p, unfold_step, b.rank_counter(p, kUnfolded), 1);
      continue;
    }
    b.copy(p, 0, {{b.send(p, 0, L.count[p]), b.recv(p, L.displ[p], L.count[p])}});
    bool extra = p + P < N;
    if (extra) b.wait(p, 0, b.rank_counter(p, kFolded), 1);
    for (int s = 0; s < levels; ++s) {
      int step = first_exchange + s, d = 1 << s;
      int pair = p ^ d, co = copair(p, d);
      CounterRef got = b.rank_counter(p, kExchange + s);
      std::vector<Segment> first, second;
      half_segments(p, pair, held(s, p, 0), 0, first);
      half_segments(p, co, held(s, p, 1), 1, second);
      if (pair == co) {
        first.insert(first.end(), second.begin(), second.end());
        uint64_t len = 0;
        for (auto& sg : first) len += sg.src.length;
        b.put(p, step, pair, std::move(first), b.rail_for(len, 0), b.rank_counter(pair, kExchange + s));
        b.wait(p, step, got, 1);
        continue;
      }
      uint64_t l0 = 0, l1 = 0;
      for (auto& sg : first) l0 += sg.src.length;
      for (auto& sg : second) l1 += sg.src.length;
      b.put(p, step, pair, std::move(first), b.rail_for(l0, 0), b.rank_counter(pair, kExchange + s));
      b.put(p, step, co, std::move(second), b.rail_for(l1, 1), b.rank_counter(co, kExchange + s));
      b.wait(p, step, got, 2);
    }
    if (extra) {
      int x = p + P;
      b.put(p, unfold_step, x, {{b.recv(p, 0, L.total()), b.recv(x, 0, L.total())}},
            b.rail_for(L.total(), 0), b.rank_counter(x, kUnfolded));
    }
  }
}

const AlgorithmRegistrar registered{{Collective::Allgather, 8, "concurrent_exchange_split",
    "pairwise exchange, half of each block to the pair, half to the co-pair",
    "sum_i T2(2^i m / 2), i < log2 N",
    "seed 002 §3.2", {}, build_concurrent_exchange_split}};

}  // namespace

}  // namespace railcoll::allgather
