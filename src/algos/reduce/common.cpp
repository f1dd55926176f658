#include "algos/reduce/common.hpp"

#include "algos/common/trees.hpp"

namespace railcoll::reduce {

int binomial_reduce(ScheduleBuilder& b, const std::vector<TreeUnit>& units,
                    const std::function<Span(int unit, int low)>& slot, int step0,
                    const std::function<int(uint64_t bytes, int step)>& rail_of, int counter0) {
  const int U = static_cast<int>(units.size());
  const trees::BinomialTree tree(U);
  for (int v = 0; v < U; ++v) {
    const TreeUnit& me = units[v];
    Span acc = me.acc;
    bool writable = me.writable;
    auto kids = tree.children(v);
    for (auto c = kids.rbegin(); c != kids.rend(); ++c) {  // smallest subtree first: the first to be ready
      const int low = tree.up_step(*c);
      const Span in = slot(v, low);
      b.wait(me.rank, step0 + low, b.rank_counter(me.rank, counter0 + low), 1);
      if (writable) {
        b.reduce(me.rank, step0 + low, {{in, acc}});
      } else {
        b.reduce_before(me.rank, step0 + low, {{acc, in}});  // in = acc (op) in: this unit's first
        acc = in, writable = true;
      }
    }
    if (v == 0) continue;
    const int parent = tree.parent(v), step = step0 + tree.up_step(v);
    b.put(me.rank, step, units[parent].rank, {{acc, slot(parent, tree.up_step(v))}}, rail_of(acc.length, step),
          b.rank_counter(units[parent].rank, counter0 + tree.up_step(v)));
  }
  return step0 + tree.levels();
}

}  // namespace railcoll::reduce
