#include "algos/allgather/pairwise_exchange.hpp"

#include <algorithm>

#include "algos/allgather/common.hpp"

namespace railcoll::allgather {

Groups::Groups(int nranks, int ngroups) : count(ngroups) {
  first.assign(ngroups + 1, 0);
  for (int g = 0; g < ngroups; ++g) first[g + 1] = first[g] + nranks / ngroups + (g < nranks % ngroups);
}

int Groups::min_size() const {
  int m = size(0);
  for (int g = 1; g < count; ++g) m = std::min(m, size(g));
  return m;
}

void build_pairwise_exchange(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, int concurrency) {
  const int N = t.nranks();
  const Groups G(N, std::max(1, std::min(concurrency, N)));
  int P = 1, levels = 0;
  while (P * 2 <= G.min_size()) P *= 2, ++levels;
  bool any_extra = false;
  for (int g = 0; g < G.count; ++g) any_extra |= G.size(g) > P;
  const int first_exchange = (G.count > 1 || any_extra) ? 1 : 0;
  const int unfold_step = first_exchange + levels;
  enum { kFolded = 0, kCross = 1, kUnfolded = 2, kExchange = 3 };

  auto rank_at = [&](int g, int i) { return G.first[g] + i; };
  auto has = [&](int g, int i) { return i < G.size(g); };
  auto block = [&](int from, int to) {
    return Segment{b.send(from, 0, L.count[from]), b.recv(to, L.displ[from], L.count[from])};
  };

  for (int g = 0; g < G.count; ++g) {
    for (int i = 0; i < G.size(g); ++i) {
      int p = rank_at(g, i);
      if (i >= P) {  // extra: fold into core i-P of every group, then receive all
        int port = 0;
        for (int h = 0; h < G.count; ++h) {
          int core = rank_at(h, i - P);
          b.put(p, 0, core, {block(p, core)}, b.rail_for(L.count[p], port++),
                b.rank_counter(core, h == g ? kFolded : kCross));
        }
        b.wait(p, unfold_step, b.rank_counter(p, kUnfolded), 1);
        continue;
      }
      b.copy(p, 0, {{b.send(p, 0, L.count[p]), b.recv(p, L.displ[p], L.count[p])}});
      int port = 1;
      for (int h = 0; h < G.count; ++h) {
        if (h == g) continue;
        int peer = rank_at(h, i);
        b.put(p, 0, peer, {block(p, peer)}, b.rail_for(L.count[p], port++), b.rank_counter(peer, kCross));
      }
      bool extra = has(g, i + P);
      if (extra) b.wait(p, 0, b.rank_counter(p, kFolded), 1);

      for (int s = 0; s < levels; ++s) {
        int step = first_exchange + s, span = 1 << s, base = i & ~(span - 1), pair = i ^ span;
        RankRuns held{{rank_at(g, base), rank_at(g, base + span)}};
        int ex_first = std::min(G.size(g), P + base), ex_last = std::min(G.size(g), P + base + span);
        if (ex_first < ex_last) held.push_back({rank_at(g, ex_first), rank_at(g, ex_last)});
        uint64_t len = 0;
        for (auto& br : byte_ranges(L, held)) len += br.second - br.first;
        port = 0;
        for (int h0 = 0; h0 < G.count; ++h0) {
          int h = (g + h0) % G.count;  // own group first: the pair is port 0
          int q = rank_at(h, pair);
          b.put(p, step, q, same_offset_segments(L, held, b.recv(p, 0, 0), b.recv(q, 0, 0)),
                b.rail_for(len, port++), b.rank_counter(q, h == g ? kExchange + s : kCross));
        }
        b.wait(p, step, b.rank_counter(p, kExchange + s), 1);
      }
      // Everything from other groups: the pre-loop put of each peer, of its
      // extra if any, and one put per exchange step.
      int cross = 0;
      for (int h = 0; h < G.count; ++h)
        if (h != g) cross += 1 + has(h, i + P) + levels;
      b.wait(p, std::max(0, unfold_step - 1), b.rank_counter(p, kCross), cross);
      if (extra) {
        int x = rank_at(g, i + P);
        b.put(p, unfold_step, x, {{b.recv(p, 0, L.total()), b.recv(x, 0, L.total())}},
              b.rail_for(L.total(), 0), b.rank_counter(x, kUnfolded));
      }
    }
  }
}

}  // namespace railcoll::allgather
