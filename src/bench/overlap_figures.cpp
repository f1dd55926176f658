#include "bench/overlap_figures.hpp"

#include <algorithm>

namespace railcoll::bench {

namespace {

// Per rank: the mean of each rank's mean of `series` (OSU's Avg).
double mean_of_means(const std::vector<double>& every, int ranks, int calls, OverlapTimes::Series series) {
  double sum = 0;
  for (int k = 0; k < ranks; ++k) {
    const double* v = every.data() + (static_cast<size_t>(k) * OverlapTimes::kSeries + series) * calls;
    double own = 0;
    for (int i = 0; i < calls; ++i) own += v[i];
    sum += own / calls;
  }
  return sum / ranks;
}

// Every rank's [in, out] of one kind of call -> CallTimes.
CallTimes times_of(const std::vector<double>& every, int ranks, int calls, OverlapTimes::Series in,
                   OverlapTimes::Series out) {
  const size_t n = static_cast<size_t>(calls);
  return gathered_call_times(every, ranks, calls, OverlapTimes::kSeries * n, in * n, out * n);
}

// The median over calls of how far apart the ranks entered each call.
double entry_skew_p50(const std::vector<double>& every, int ranks, int calls, OverlapTimes::Series in) {
  std::vector<double> skew;
  for (int i = 0; i < calls; ++i) {
    double first = 0, last = 0;
    for (int k = 0; k < ranks; ++k) {
      const double t = every[(static_cast<size_t>(k) * OverlapTimes::kSeries + in) * calls + i];
      if (k == 0 || t < first) first = t;
      if (k == 0 || t > last) last = t;
    }
    skew.push_back(last - first);
  }
  return skew.empty() ? -1 : percentiles(skew).p50;
}

double overlap_percent(double overall, double compute, double pure) {
  return pure > 0 ? std::max(0.0, 100.0 * (1.0 - (overall - compute) / pure)) : 0;
}

}  // namespace

SizeStats overlap_figures(const std::vector<double>& every, int ranks, int calls, bool shared_clock, BenchRecord* r) {
  using S = OverlapTimes;
  const SizeStats blocking = combine(times_of(every, ranks, calls, S::BlockingIn, S::BlockingOut), shared_clock);
  const SizeStats pure = combine(times_of(every, ranks, calls, S::PureIn, S::PureOut), shared_clock);
  const SizeStats overall = combine(times_of(every, ranks, calls, S::OverlapIn, S::OverlapOut), shared_clock);
  const Percentiles b = percentiles(blocking.slowest_us), o = percentiles(overall.slowest_us);
  r->blocking_avg_us = blocking.avg_us, r->blocking_p50_us = b.p50, r->blocking_p99_us = b.p99;
  r->overall_avg_us = overall.avg_us, r->overall_p50_us = o.p50, r->overall_p99_us = o.p99;
  r->compute_avg_us = mean_of_means(every, ranks, calls, S::Compute);
  r->post_avg_us = mean_of_means(every, ranks, calls, S::Post);
  r->wait_avg_us = mean_of_means(every, ranks, calls, S::Wait);
  r->overlap_pct = overlap_percent(r->overall_avg_us, r->compute_avg_us, pure.avg_us);
  // The same from medians over every rank's calls: the communication left
  // over after computing (overall - compute) against the pure latency.
  std::vector<double> left;
  for (int k = 0; k < ranks; ++k) {
    const double* base = every.data() + static_cast<size_t>(k) * S::kSeries * calls;
    for (int i = 0; i < calls; ++i)
      left.push_back(base[S::OverlapOut * calls + i] - base[S::OverlapIn * calls + i] - base[S::Compute * calls + i]);
  }
  r->overlap_p50_pct = overlap_percent(percentiles(left).p50, 0, pure.own.p50);
  if (shared_clock) {
    r->entry_skew_p50_us = entry_skew_p50(every, ranks, calls, S::OverlapIn);
    r->pure_entry_skew_p50_us = entry_skew_p50(every, ranks, calls, S::PureIn);
  }
  return pure;
}

}  // namespace railcoll::bench
