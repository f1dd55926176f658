// Statistics of a benchmark: percentiles over calls, and the figures of one
// size combined over ranks and calls (docs/results.md, "How to read").
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace railcoll::bench {

// Element floor(q * n) of the sorted values (the same rule as
// railcoll-mpi-bench, so both sides' p50/p90/p99 mean the same); 0 if empty.
double percentile_of_sorted(const std::vector<double>& sorted, double q);

struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0;
};
Percentiles percentiles(std::vector<double> values);

// Every rank's entry into and exit from every timed call, on one clock (us):
// entry[k * calls + i] is rank k's entry into call i.
struct CallTimes {
  int ranks = 0, calls = 0;
  std::vector<double> entry, exit;
};

// One kind of call in what rank 0 gathered from every rank: rank k's values
// start at every[k * stride], its entries at + in, its exits at + out, each
// `calls` long.
CallTimes gathered_call_times(const std::vector<double>& every, int ranks, int calls, size_t stride, size_t in,
                              size_t out);

// The field's view of one size (OSU with -z): every rank's own time of every
// call, each a sample, not the slowest rank's: its percentiles, its longest,
// and how many samples took more than kSlowFactor times the median.
constexpr double kSlowFactor = 3;
struct OwnTimes {
  double p50 = 0, p90 = 0, p99 = 0, max = 0;
  int slow = 0;  // samples > kSlowFactor * p50
};
OwnTimes own_times(std::vector<double> own_us);

// One line per rank and call: "ALGORITHM BYTES CALL RANK ENTRY_US EXIT_US
// RUNQ_IN_US RUNQ_BEFORE_US", times from the size's first entry (a header line
// says so); the last two, when `runq` has them (laid out as CallTimes' entry
// and exit), the time the rank waited for a core, runnable, inside the call
// and between the end of its rest and its entry (the barrier before the call).
void write_timeline(std::ostream& out, const std::string& algorithm, uint64_t bytes, const CallTimes& t,
                    const CallTimes* runq = nullptr);

struct SizeStats {
  double avg_us = 0, min_us = 0, max_us = 0;  // OSU: mean over ranks of each rank's mean time; min, max of those
  std::vector<double> slowest_us;             // per call: the slowest rank's own time (exit - entry)
  std::vector<double> span_us;                // per call: last exit - first entry, over ranks
  OwnTimes own;                               // over every rank's own time of every call
};

// What the figures of one size are made of, kept so that the calls of several
// runs (rounds interleaved with a peer's, bench/driver.hpp) can be pooled and
// the figures computed once over all of them: every rank's own time of every
// call (rank-major: own[k * calls + i]) and every call's span (empty when the
// ranks' clocks differ).
struct RawTimes {
  int ranks = 0, calls = 0;
  std::vector<double> own, span;
};
// Every rank's own times and, `with_span`, the spans of the calls of `t`.
RawTimes raw_times(const CallTimes& t, bool with_span);
// The calls of `b` after those of `a`, rank by rank; the spans only when both
// have them. Throws std::invalid_argument when the rank counts differ.
RawTimes pooled(const RawTimes& a, const RawTimes& b);
SizeStats stats_of(const RawTimes& raw);

// `with_span`: the clocks of all ranks are one (the same host clock); otherwise
// span_us stays empty: differences of unrelated clocks mean nothing.
SizeStats combine(const CallTimes& t, bool with_span);

}  // namespace railcoll::bench
