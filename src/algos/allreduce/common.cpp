#include "algos/allreduce/common.hpp"

namespace railcoll::allreduce {

Fold::Fold(int units) {
  while (p2 * 2 <= units) p2 *= 2, ++log2;
  rem = units - p2;
}

int Fold::participant(int unit) const {
  if (unit < 2 * rem) return unit % 2 ? unit / 2 : -1;
  return unit - rem;
}

Chunks::Chunks(uint64_t bytes, size_t elem_size, int nparts)
    : elems(bytes / elem_size), elem(elem_size), parts(nparts) {}

void fold_in(ScheduleBuilder& b, const Fold& f, const std::vector<Unit>& units, const SlotFn& slot, int step,
             int rail, int counter) {
  for (int u = 0; u < 2 * f.rem; u += 2) {
    const Unit &from = units[u], &to = units[u + 1];
    CounterRef c = b.rank_counter(to.rank, counter);
    b.put(from.rank, step, to.rank, {{from.acc, slot(u + 1, 0)}}, rail, c);
    b.wait(to.rank, step, c, 1);
    b.reduce_before(to.rank, step, {{slot(u + 1, 0), to.acc}});  // the even unit's comes first
  }
}

void fold_out(ScheduleBuilder& b, const Fold& f, const std::vector<Unit>& units, int step, int rail, int counter) {
  for (int u = 0; u < 2 * f.rem; u += 2) {
    const Unit &to = units[u], &from = units[u + 1];
    CounterRef c = b.rank_counter(to.rank, counter);
    b.put(from.rank, step, to.rank, {{from.acc, to.acc}}, rail, c);
    b.wait(to.rank, step, c, 1);
  }
}

int recursive_doubling(ScheduleBuilder& b, const std::vector<Unit>& units, const SlotFn& slot, int step0,
                       int rail, int counter0) {
  const int U = static_cast<int>(units.size());
  Fold f(U);
  auto counter = [&](int u, int i) { return b.rank_counter(units[u].rank, counter0 + i); };
  fold_in(b, f, units, slot, step0, rail, counter0);
  for (int s = 0; s < f.log2; ++s) {
    int step = step0 + 1 + s;
    for (int u = 0; u < U; ++u) {
      int p = f.participant(u);
      if (p < 0) continue;
      int partner = f.unit_of(p ^ (1 << s));
      const Unit& me = units[u];
      b.put(me.rank, step, units[partner].rank, {{me.acc, slot(partner, 1 + s)}}, rail, counter(partner, 1 + s));
      b.wait(me.rank, step, counter(u, 1 + s), 1);
      b.flush(me.rank, step);  // the put reads acc, which the reduce rewrites
      b.combine(me.rank, step, {{slot(u, 1 + s), me.acc}}, partner < u);  // the lower block on the left
    }
  }
  int last = step0 + 1 + f.log2;
  fold_out(b, f, units, last, rail, counter0 + 1 + f.log2);
  return last + 1;
}

int halving_doubling(ScheduleBuilder& b, const std::vector<Unit>& units, const SlotFn& slot, size_t elem,
                     int step0, const std::function<int(uint64_t)>& rail_of, int counter0) {
  const int U = static_cast<int>(units.size());
  Fold f(U);
  const uint64_t m = units.empty() ? 0 : units[0].acc.length;
  Chunks ch(m, elem, f.p2);
  auto part = [&](Span s, int c0, int c1) { return Span{s.region, s.owner, s.offset + ch.begin(c0), ch.begin(c1) - ch.begin(c0)}; };
  auto counter = [&](int u, int i) { return b.rank_counter(units[u].rank, counter0 + i); };
  fold_in(b, f, units, slot, step0, rail_of(m), counter0);
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
    const int step = step0 + 1 + s;
    for (int p = 0; p < f.p2; ++p) {
      const int u = f.unit_of(p), q = p ^ (f.p2 >> (s + 1)), v = f.unit_of(q);
      auto [lo, hi] = held[q][s];  // the half the partner keeps
      auto [klo, khi] = held[p][s];
      b.put(units[u].rank, step, units[v].rank, {{part(units[u].acc, lo, hi), part(slot(v, 1 + s), lo, hi)}},
            rail_of(ch.begin(hi) - ch.begin(lo)), counter(v, 1 + s));
      b.wait(units[u].rank, step, counter(u, 1 + s), 1);
      b.reduce(units[u].rank, step, {{part(slot(u, 1 + s), klo, khi), part(units[u].acc, klo, khi)}});
    }
  }
  for (int s = f.log2 - 1; s >= 0; --s) {  // all-gather by recursive doubling, mirrored
    const int i = 1 + f.log2 + (f.log2 - 1 - s), step = step0 + i;
    for (int p = 0; p < f.p2; ++p) {
      const int u = f.unit_of(p), v = f.unit_of(p ^ (f.p2 >> (s + 1)));
      auto [lo, hi] = held[p][s];  // finished by now: where the partner lacks it
      b.put(units[u].rank, step, units[v].rank, {{part(units[u].acc, lo, hi), part(units[v].acc, lo, hi)}},
            rail_of(ch.begin(hi) - ch.begin(lo)), counter(v, i));
      b.wait(units[u].rank, step, counter(u, i), 1);
    }
  }
  const int last = step0 + 1 + 2 * f.log2;
  fold_out(b, f, units, last, rail_of(m), counter0 + 1 + 2 * f.log2);
  return last + 1;
}

void node_combine(ScheduleBuilder& b, int node, uint64_t m, size_t elem, int step, int staged, int combined) {
  const auto& ranks = b.topo().ranks_of(node);
  const int P = static_cast<int>(ranks.size());
  auto area = [&](int i, uint64_t off, uint64_t len) { return b.shared(node, i * m + off, len); };
  for (int i = 0; i < P; ++i) {
    b.copy(ranks[i], step, {{b.send(ranks[i], 0, m), area(i, 0, m)}});
    b.signal(ranks[i], step, b.node_counter(node, staged));
  }
  Chunks slices(m, elem, P);
  for (int i = 0; i < P; ++i) {
    const int r = ranks[i];
    const uint64_t at = slices.begin(i), len = slices.size(i);
    b.wait(r, step + 1, b.node_counter(node, staged), P);
    // One reduce per area: they all combine into the same bytes.
    for (int j = 1; j < P; ++j) b.reduce(r, step + 1, {{area(j, at, len), area(0, at, len)}});
    b.signal(r, step + 1, b.node_counter(node, combined));
  }
}

void node_combine_rotating(ScheduleBuilder& b, int node, uint64_t m, size_t elem, int step, int slice_counter0,
                           int combined) {
  const auto& ranks = b.topo().ranks_of(node);
  const int P = static_cast<int>(ranks.size());
  Chunks slices(m, elem, P);
  for (int i = 0; i < P; ++i) {
    const int r = ranks[i];
    for (int j = 0; j < P; ++j) {
      const int s = (i + j) % P;
      const CounterRef rounds = b.node_counter(node, slice_counter0 + s);
      const SegList seg{{b.send(r, slices.begin(s), slices.size(s)), b.shared(node, slices.begin(s), slices.size(s))}};
      if (j == 0) {
        b.copy(r, step, seg);
      } else {
        b.wait(r, step + 1, rounds, j);
        b.reduce(r, step + 1, seg);
      }
      b.signal(r, j ? step + 1 : step, rounds);
    }
    b.signal(r, step + 1, b.node_counter(node, combined));
  }
}

void node_reduce(ScheduleBuilder& b, int node, uint64_t m, size_t elem, int step, int combined, int first_free) {
  if (m <= kRotateFromBytes) return node_combine(b, node, m, elem, step, first_free, combined);
  node_combine_rotating(b, node, m, elem, step, first_free, combined);
}

}  // namespace railcoll::allreduce
