#include "algos/common/trees.hpp"

#include <algorithm>
#include <cmath>

namespace railcoll::trees {

int ceil_log(long base, long n) {
  int l = 0;
  for (long reach = 1; reach < n; reach *= base) ++l;
  return l;
}

int BinomialTree::low(int v) const {
  if (v == 0) return levels_;
  int j = 0;
  while (!(v >> j & 1)) ++j;
  return j;
}

int BinomialTree::subtree_end(int v) const {
  return static_cast<int>(std::min<long>(n_, v + (1L << low(v))));
}

std::vector<int> BinomialTree::children(int v) const {
  std::vector<int> out;
  for (int j = low(v) - 1; j >= 0; --j)
    if (v + (1L << j) < n_) out.push_back(v + (1 << j));
  return out;
}

std::vector<KnomialEdge> knomial_children(int v, int n, int k) {
  std::vector<KnomialEdge> out;
  int round = 0;
  for (long reach = 1; reach < n; reach *= (k + 1), ++round) {
    if (v >= reach) continue;
    for (int j = 1; j <= k && v + j * reach < n; ++j)
      out.push_back({static_cast<int>(v + j * reach), round, j - 1});
  }
  return out;
}

int knomial_round_received(int v, int k) {
  int round = 0;
  for (long reach = k + 1; reach <= v; reach *= (k + 1)) ++round;
  return round;
}

int pipeline_chunks(uint64_t bytes, int hops, int rails) {
  if (hops <= 1 || bytes == 0) return 1;
  double best = std::sqrt(static_cast<double>(hops - 1) * static_cast<double>(bytes) / (rails * kLatencyBytes));
  return static_cast<int>(std::clamp<double>(std::floor(best), 1, std::min<double>(kMaxChunks, bytes)));
}

double pipeline_cost(uint64_t bytes, int hops, int rails, int chunks) {
  return (hops - 1 + chunks) * (kLatencyBytes + static_cast<double>(bytes) / (static_cast<double>(chunks) * rails));
}

}  // namespace railcoll::trees
