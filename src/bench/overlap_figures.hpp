// The figures of OSU's nonblocking benchmark (bench/overlap.hpp says how the
// calls are timed) from every rank's times: shared by railcoll's workers and
// the peers' programs (bench/peer.hpp).
#pragma once
#include <vector>

#include "bench/records.hpp"
#include "bench/stats.hpp"

namespace railcoll::bench {

// One rank's times of one size, per timed call, in us: kSeries arrays of
// `calls` values, laid out one after the other in `all` (so that one gather
// brings every rank's to rank 0).
struct OverlapTimes {
  enum Series {
    BlockingIn, BlockingOut,  // the blocking call's entry and exit
    PureIn, PureOut,          // post's entry, wait's exit, nothing between
    OverlapIn, OverlapOut,    // post's entry, wait's exit, the computation between
    Compute, Post, Wait,      // the overlap run's parts
    kSeries
  };
  int calls = 0;
  std::vector<double> all;
  explicit OverlapTimes(int n) : calls(n), all(static_cast<size_t>(kSeries) * n) {}
  double* series(Series s) { return all.data() + static_cast<size_t>(s) * calls; }
};

// Rank 0: every rank's OverlapTimes (gathered, rank after rank) -> the
// record's nonblocking figures; returns the statistics of the pure
// nonblocking calls, which fill the record's usual fields.
SizeStats overlap_figures(const std::vector<double>& every, int ranks, int calls, bool shared_clock, BenchRecord* r);

}  // namespace railcoll::bench
