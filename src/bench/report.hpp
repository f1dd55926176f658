// How benchmark records are shown: OSU-style tables, the summary against Open
// MPI, the background-traffic comparison (docs/results.md, "How to read").
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "bench/records.hpp"
#include "bench/stats.hpp"
#include "core/collective.hpp"

namespace railcoll::bench {

// The sizes a benchmark of `c` runs, from min to max, each `factor` times the
// last (doubling by default): only 0 for a collective that moves no data
// (barrier); whole elements for a reduction (float sums: multiples of 4
// bytes); 0 first when min is 0.
std::vector<uint64_t> bench_sizes(Collective c, uint64_t min, uint64_t max, int factor = 2);
std::vector<uint64_t> bench_sizes(const std::string& collective, uint64_t min, uint64_t max);

// How many calls of one size each program times, the same rule for railcoll's
// workers and every peer's program, so p50 and p99 are over as many samples on
// both sides: at most kCallBudgetBytes gathered (bytes x ranks) per size over
// all rounds, but at least kMinCalls, never more than `iters`; split evenly
// over `rounds` (rounded up; bench/driver.hpp interleaves the rounds of the
// programs), each round after its own untimed calls (a fifth of its timed
// ones, at least 1, at most `warmup`).
constexpr uint64_t kCallBudgetBytes = 128ull << 20;
constexpr int kMinCalls = 10;
struct CallCounts {
  int timed = 0, untimed = 0;  // in one round
};
CallCounts calls_for(uint64_t bytes, int ranks, int iters, int warmup, int rounds = 1);

// A record's figures from those of its size: avg/min/max, the percentiles of
// the slowest rank's time, of the span and of every rank's own time; with
// `samples` the slowest rank's time of every call (barrier histograms).
void set_figures(BenchRecord* r, const SizeStats& s, bool samples);
// One record of the calls of every round (each with its raw times), the
// figures computed once over all of them; the fields that describe the run
// come from the first. Throws InputError when a round has no raw times or the
// rounds are not of one size and label.
BenchRecord pooled_record(const std::vector<BenchRecord>& rounds);

// The slowest rank's time of every call -> p50, p90, p99 of the record.
void set_percentiles(BenchRecord* r, std::vector<double> slowest_us);
// The span of every call -> span_p50, span_p90, span_p99.
void set_span_percentiles(BenchRecord* r, std::vector<double> span_us);
// Every rank's own time, summarised (stats.hpp) -> own_p50..own_max, slow_calls.
void set_own_times(BenchRecord* r, const OwnTimes& own);

// Which time a summary compares. A rooted collective (bcast, gather) is over
// when the data has reached the last rank, which no single rank's time shows
// (the root of a broadcast leaves at once): its summary compares the span, the
// first rank in to the last rank out, when every record has one. The others
// compare the median of the slowest rank's time.
struct SummaryMetric {
  bool span = false;
  double p50(const BenchRecord& r) const { return span ? r.span_p50_us : r.p50_us; }
  double p99(const BenchRecord& r) const { return span ? r.span_p99_us : r.p99_us; }
  const char* name() const { return span ? "median span" : "median latency"; }
};
SummaryMetric summary_metric(const std::string& collective, const std::vector<BenchRecord>& recs);

void print_table_header(std::ostream& o, const std::string& algorithm, const BenchContext& c, bool full,
                        bool validate);
void print_table_row(std::ostream& o, const BenchRecord& r, bool full);
// A peer's row: another library's collectives (Open MPI's mpi:tuned, mpi:han,
// oneCCL's oneccl...), not railcoll's own algorithms nor mpi:railcoll (railcoll
// through the MPI layer).
bool is_peer(const std::string& algorithm);
bool is_railcoll_own(const std::string& algorithm);
// Per size: best railcoll algorithm, auto, every peer, speed-ups, the rail and
// compute bounds (bench/bounds.hpp), which binds, auto's share of it.
void print_summary(std::ostream& o, const std::vector<BenchRecord>& recs, const BenchContext& c);
// Per size: nccl-tests' busbw of auto and every peer, its share of a node's
// rails and of the binding bound, and the best peer's time over auto's.
void print_bandwidth_summary(std::ostream& o, const std::vector<BenchRecord>& recs, const BenchContext& c);
// The field's view (OSU, -z), per size: the mean of each rank's own time for
// auto, mpi:railcoll, mpi:tuned and mpi:han, railcoll's speed-ups over the better
// MPI, and each one's tail (own p99/p50, calls > 3x the median). Nothing when no
// record has its own times.
void print_field_summary(std::ostream& o, const std::vector<BenchRecord>& recs, const BenchContext& c);
// Quiet vs loaded, per algorithm and size: p50 and p99 side by side, slowdowns.
void print_background_summary(std::ostream& o, const std::vector<BenchRecord>& quiet,
                              const std::vector<BenchRecord>& loaded, const BenchContext& c,
                              const std::string& pattern);
// --nonblocking / --persistent (bench/overlap.hpp): per size the blocking and
// the nonblocking latency (p50 of the slowest rank, their ratio, p99), and the
// overlap run: compute, overall, post and wait (means over ranks), overlap %
// by OSU's formula from those means and from medians.
void print_overlap_header(std::ostream& o, const std::string& algorithm, const BenchContext& c, const std::string& form,
                          bool validate);
void print_overlap_row(std::ostream& o, const BenchRecord& r);
// Per size, every run with overlap figures side by side (auto, mpi:railcoll,
// mpi:tuned, mpi:han): nonblocking / blocking latency and overlap %, against
// the targets (within 5% of blocking; 80% overlap). Nothing when no
// record has them.
void print_overlap_summary(std::ostream& o, const std::vector<BenchRecord>& recs, const BenchContext& c);

// The least time the node that receives most needs to take in its data over
// all its rails, in us; 0 when unknown or nothing crosses the network.
double rail_bound_us(const BenchContext& c, uint64_t bytes);

}  // namespace railcoll::bench
