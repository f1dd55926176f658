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
    b.reduce(to.rank, step, {{slot(u + 1, 0), to.acc}});
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
      b.reduce(me.rank, step, {{slot(u, 1 + s), me.acc}});
    }
  }
  int last = step0 + 1 + f.log2;
  fold_out(b, f, units, last, rail, counter0 + 1 + f.log2);
  return last + 1;
}

}  // namespace railcoll::allreduce
