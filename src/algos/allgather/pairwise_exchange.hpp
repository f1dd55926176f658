// The concurrent pairwise exchange of seed 002 §3.1, for any N. With C = 1 it is
// plain recursive doubling (pairwise exchange).
//
// Ranks are cut into C contiguous groups of balanced size. P is the largest power
// of two not above the smallest group; a rank with group index i >= P is an
// "extra" folded into core rank i - P of its group. Core rank (g,i):
//   step 0      puts its block to rank (g',i) of every other group (the
//               non-blocking pre-loop put of §3.1); an extra (g,i+P) puts its
//               block to (g,i) and to every (g',i);
//   step 1+s    (s < log2 P) puts the blocks of its group it holds (2^s core
//               blocks and their extras) to its pair (g, i xor 2^s) and to the
//               peer-of-pair (g', i xor 2^s) in every other group, then waits for
//               its pair only: data from other groups is never forwarded, so it
//               is awaited once, at the end;
//   last step   writes the whole result to its extra, if it has one.
// For N = C * 2^L this is exactly the algorithm of seed 002 (Figure 2, 3).
#pragma once
#include "core/schedule.hpp"

namespace railcoll::allgather {

void build_pairwise_exchange(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, int concurrency);

// Balanced contiguous groups: group g holds ranks [first(g), first(g+1)).
struct Groups {
  Groups(int nranks, int ngroups);
  int count;
  std::vector<int> first;  // count+1 entries
  int size(int g) const { return first[g + 1] - first[g]; }
  int min_size() const;
};

}  // namespace railcoll::allgather
