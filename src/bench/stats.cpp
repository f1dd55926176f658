#include "bench/stats.hpp"

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>

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

CallTimes gathered_call_times(const std::vector<double>& every, int ranks, int calls, size_t stride, size_t in,
                              size_t out) {
  CallTimes ct;
  ct.ranks = ranks;
  ct.calls = calls;
  for (int k = 0; k < ranks; ++k) {
    auto base = every.begin() + static_cast<ptrdiff_t>(k * stride);
    ct.entry.insert(ct.entry.end(), base + in, base + in + calls);
    ct.exit.insert(ct.exit.end(), base + out, base + out + calls);
  }
  return ct;
}

OwnTimes own_times(std::vector<double> own_us) {
  OwnTimes o;
  if (own_us.empty()) return o;
  std::sort(own_us.begin(), own_us.end());
  o.p50 = percentile_of_sorted(own_us, 0.5);
  o.p90 = percentile_of_sorted(own_us, 0.9);
  o.p99 = percentile_of_sorted(own_us, 0.99);
  o.max = own_us.back();
  o.slow = static_cast<int>(own_us.end() - std::upper_bound(own_us.begin(), own_us.end(), kSlowFactor * o.p50));
  return o;
}

void write_timeline(std::ostream& out, const std::string& algorithm, uint64_t bytes, const CallTimes& t,
                    const CallTimes* runq) {
  if (t.entry.empty()) return;
  const double zero = *std::min_element(t.entry.begin(), t.entry.end());
  out << "# algorithm bytes call rank entry_us exit_us (from the first entry at this size)"
      << (runq ? " runq_in_us runq_before_us (runnable, waiting for a core: in the call; before it)" : "") << "\n";
  for (int i = 0; i < t.calls; ++i)
    for (int k = 0; k < t.ranks; ++k) {
      const size_t at = static_cast<size_t>(k) * t.calls + i;
      out << algorithm << ' ' << bytes << ' ' << i << ' ' << k << ' ' << t.entry[at] - zero << ' '
          << t.exit[at] - zero;
      if (runq) out << ' ' << runq->entry[at] << ' ' << runq->exit[at];
      out << '\n';
    }
  out << std::flush;
}

RawTimes raw_times(const CallTimes& t, bool with_span) {
  RawTimes raw;
  raw.ranks = t.ranks;
  raw.calls = t.calls;
  raw.own.resize(t.entry.size());
  for (size_t at = 0; at < t.entry.size(); ++at) raw.own[at] = t.exit[at] - t.entry[at];
  for (int i = 0; i < t.calls && with_span && t.ranks > 0; ++i) {
    double first_in = t.entry[i], last_out = t.exit[i];
    for (int k = 1; k < t.ranks; ++k) {
      const size_t at = static_cast<size_t>(k) * t.calls + i;
      first_in = std::min(first_in, t.entry[at]);
      last_out = std::max(last_out, t.exit[at]);
    }
    raw.span.push_back(last_out - first_in);
  }
  return raw;
}

RawTimes pooled(const RawTimes& a, const RawTimes& b) {
  if (a.calls == 0) return b;
  if (b.calls == 0) return a;
  if (a.ranks != b.ranks)
    throw std::invalid_argument("cannot pool calls of " + std::to_string(a.ranks) + " and " +
                                std::to_string(b.ranks) + " ranks");
  RawTimes p;
  p.ranks = a.ranks;
  p.calls = a.calls + b.calls;
  for (int k = 0; k < a.ranks; ++k) {
    p.own.insert(p.own.end(), a.own.begin() + static_cast<ptrdiff_t>(k) * a.calls,
                 a.own.begin() + static_cast<ptrdiff_t>(k + 1) * a.calls);
    p.own.insert(p.own.end(), b.own.begin() + static_cast<ptrdiff_t>(k) * b.calls,
                 b.own.begin() + static_cast<ptrdiff_t>(k + 1) * b.calls);
  }
  if (!a.span.empty() && !b.span.empty()) {
    p.span = a.span;
    p.span.insert(p.span.end(), b.span.begin(), b.span.end());
  }
  return p;
}

SizeStats stats_of(const RawTimes& raw) {
  SizeStats s;
  const int N = raw.ranks, iters = raw.calls;
  if (N <= 0 || iters <= 0 || raw.own.size() != static_cast<size_t>(N) * iters) return s;
  s.min_us = 1e300;
  s.slowest_us.assign(iters, 0);
  for (int k = 0; k < N; ++k) {
    double sum = 0;
    for (int i = 0; i < iters; ++i) {
      const double own = raw.own[static_cast<size_t>(k) * iters + i];
      sum += own;
      s.slowest_us[i] = std::max(s.slowest_us[i], own);
    }
    double mean = sum / iters;
    s.avg_us += mean / N;
    s.min_us = std::min(s.min_us, mean);
    s.max_us = std::max(s.max_us, mean);
  }
  s.own = own_times(raw.own);
  s.span_us = raw.span;
  return s;
}

SizeStats combine(const CallTimes& t, bool with_span) { return stats_of(raw_times(t, with_span)); }

}  // namespace railcoll::bench
