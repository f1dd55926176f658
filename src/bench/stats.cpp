#include "bench/stats.hpp"

#include <algorithm>

namespace railcoll::bench {

double percentile_of_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t k = static_cast<size_t>(q * static_cast<double>(sorted.size()));
  return sorted[std::min(sorted.size() - 1, k)];
}

Percentiles percentiles(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return {percentile_of_sorted(values, 0.5), percentile_of_sorted(values, 0.9), percentile_of_sorted(values, 0.99)};
}

SizeStats combine(const CallTimes& t, bool with_span) {
  SizeStats s;
  const int N = t.ranks, iters = t.calls;
  if (N <= 0 || iters <= 0) return s;
  s.min_us = 1e300;
  s.slowest_us.assign(iters, 0);
  if (with_span) s.span_us.assign(iters, 0);
  for (int k = 0; k < N; ++k) {
    double sum = 0;
    for (int i = 0; i < iters; ++i) {
      const size_t at = static_cast<size_t>(k) * iters + i;
      double own = t.exit[at] - t.entry[at];
      sum += own;
      s.slowest_us[i] = std::max(s.slowest_us[i], own);
    }
    double mean = sum / iters;
    s.avg_us += mean / N;
    s.min_us = std::min(s.min_us, mean);
    s.max_us = std::max(s.max_us, mean);
  }
  for (int i = 0; i < iters && with_span; ++i) {
    double first_in = t.entry[i], last_out = t.exit[i];
    for (int k = 1; k < N; ++k) {
      const size_t at = static_cast<size_t>(k) * iters + i;
      first_in = std::min(first_in, t.entry[at]);
      last_out = std::max(last_out, t.exit[at]);
    }
    s.span_us[i] = last_out - first_in;
  }
  return s;
}

}  // namespace railcoll::bench
