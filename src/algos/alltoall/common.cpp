#include "algos/alltoall/common.hpp"

namespace railcoll::alltoall {

void exchange_in_rounds(ScheduleBuilder& b, const BlockLayout& L, int p, const std::vector<std::vector<int>>& rounds) {
  b.copy(p, 0, {block_to_recv(b, L, p, p)});
  int last = 0;
  for (size_t s = 0; s < rounds.size(); ++s) {
    if (rounds[s].empty()) continue;
    if (s > 0) b.flush(p, static_cast<int>(s));
    for (size_t j = 0; j < rounds[s].size(); ++j) {
      const int q = rounds[s][j];
      b.put(p, static_cast<int>(s), q, {block_to_recv(b, L, p, q)}, b.rail_for(L.pair(p, q), static_cast<int>(j)),
            b.rank_counter(q, 0));
    }
    last = static_cast<int>(s);
  }
  b.wait(p, last, b.rank_counter(p, 0), L.n() - 1);
}

}  // namespace railcoll::alltoall
