#include "algos/scan/common.hpp"

namespace railcoll::scan {

BothScans::BothScans(int order, const char* name, const char* summary, const char* cost, const char* source,
                     BuildFn build)
    : inclusive({Collective::Scan, order, name, summary, cost, source, {}, build, true}),
      exclusive({Collective::Exscan, order, name, summary, cost, source, {}, build, true}) {}

bool exclusive(const ScheduleBuilder& b) { return b.collective() == Collective::Exscan; }

int chain(ScheduleBuilder& b, const std::vector<Unit>& units, bool exclusive, const std::vector<Span>& running,
          int step0, int counter) {
  const int U = static_cast<int>(units.size());
  for (int u = 0; u < U; ++u) {
    const Unit& me = units[u];
    const int step = step0 + u;
    Span pass = me.in;  // the prefix of units 0..u, to hand on
    if (u == 0) {
      if (!exclusive) b.copy(me.rank, step, {{me.in, me.out}});
    } else {
      b.wait(me.rank, step, b.rank_counter(me.rank, counter), 1);
      if (!exclusive) {
        b.reduce(me.rank, step, {{me.in, me.out}});  // out = (0..u-1) op u
        pass = me.out;
      } else if (u + 1 < U) {
        b.copy(me.rank, step, {{me.out, running[u]}});
        b.reduce(me.rank, step, {{me.in, running[u]}});
        pass = running[u];
      }
    }
    if (u + 1 < U) {
      const Unit& next = units[u + 1];
      b.put(me.rank, step, next.rank, {{pass, next.out}}, b.rail_for(pass.length, 0),
            b.rank_counter(next.rank, counter));
    }
  }
  return step0 + U;
}

int doubling_steps(int units) {
  int steps = 0;
  while ((1 << steps) < units) ++steps;
  return steps;
}

int recursive_doubling(ScheduleBuilder& b, const std::vector<Unit>& units, bool exclusive, const SlotFn& slot,
                       int step0, int counter0) {
  const int U = static_cast<int>(units.size()), steps = doubling_steps(U);
  for (int u = 0; u < U; ++u) {
    const Unit& me = units[u];
    if (!exclusive) b.copy(me.rank, step0, {{me.in, me.out}});
    Span partial = me.in;      // units [u & ~(2^s - 1), ...] combined, where it lies now
    bool has_result = !exclusive;  // exclusive: out holds nothing yet
    for (int s = 0; s < steps; ++s) {
      const int partner = u ^ (1 << s), step = step0 + s;
      if (partner >= U) continue;
      const Span got = slot(u, s);
      b.put(me.rank, step, units[partner].rank, {{partial, slot(partner, s)}}, b.rail_for(partial.length, s),
            b.rank_counter(units[partner].rank, counter0 + s));
      b.wait(me.rank, step, b.rank_counter(me.rank, counter0 + s), 1);
      const bool lower = partner < u;  // its block comes first
      if (lower && has_result) b.reduce_before(me.rank, step, {{got, me.out}});
      if (lower && !has_result) b.copy(me.rank, step, {{got, me.out}}), has_result = true;
      // The new partial lands in the slot: lower ? got op partial : partial op got.
      bool later = false;  // a step after this one still sends the partial
      for (int t = s + 1; t < steps; ++t) later |= (u ^ (1 << t)) < U;
      if (!later) break;
      b.combine(me.rank, step, {{partial, got}}, !lower);
      partial = got;
    }
  }
  return step0 + steps;
}

}  // namespace railcoll::scan
