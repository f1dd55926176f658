// The highest rail rate this machine can feed (docs/cluster.md, "A rate this
// machine can feed"): network emulators run their links no faster than the
// host can drive them, or the host's CPU, not the link, is what a measurement
// shows. The yardstick is a plain program with no library in it: a
// nonblocking TCP all-to-all with no copies (tools/probes/tcp_alltoall.c) in
// the cluster's shape, every node's ranks each sending to the same rank of
// every other node on its rail (local rank mod rails). At a rate the host can
// feed it takes the rail bound (the bytes a rail carries per call / the
// rate); the ceiling is the highest rate at which its median time stays
// within `target_pct` of that bound.
//
// The search: from `start`, rates doubling while they reach the target (or
// halving until one does), between `low` and `high`, then the interval between
// the last rate reached and the first missed halved (geometrically) `refine`
// times; each point is `repeats` runs of `calls` calls, judged by the median
// of the runs. A call moves several times the shapers' burst per rail (which
// passes at memory speed after a rest) so the burst does not flatter a rate. Every run reshapes the
// rails of the cluster that is up (cluster::set_rate); the caller holds the
// machine's cluster lock and puts the rate it wants back.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "testbed/cluster.hpp"

namespace railcoll::testbed {

struct CeilingOptions {
  // Per pair of processes and call; 0: what makes a rail carry the larger of
  // 1 MiB and 40 ms at the rate per call (8 shaper bursts or more).
  uint64_t bytes = 0;
  int calls = 6;               // timed calls per run (one more is run first and dropped)
  int repeats = 3;             // runs per rate
  double target_pct = 95;      // of the rail bound
  uint64_t start_bps = 400000000, low_bps = 50000000, high_bps = 10000000000ull;
  int refine = 3;              // halvings of the interval between the last rate reached and the first missed
  std::vector<uint64_t> rates;  // not empty: measure these rates instead of searching (the whole curve)
  std::string probe;           // the probe program; "" : railcoll-tcp-alltoall beside this program
};

struct CeilingPoint {
  uint64_t rate_bps = 0;
  double bound_us = 0;            // the rail bound of one call
  std::vector<double> run_p50_us;  // per run: the median over calls of the slowest process's time
  std::vector<double> run_pct;    // per run: bound / that median, %
  double pct = 0;                 // the median of run_pct
};

struct Ceiling {
  uint64_t rate_bps = 0;  // the highest rate that reached the target; 0: none did
  double pct = 0;         // what it reached
  // When none did (a loaded machine feeds no rate fully): the knee, the highest
  // rate within 5 points of the best share measured, and that share.
  uint64_t knee_bps = 0;
  double knee_pct = 0;
  std::vector<CeilingPoint> points;  // in the order measured
  double seconds = 0;     // how long the search took
};

// The bytes per pair and call at `rate_bps` (o.bytes, or the rule above).
uint64_t probe_bytes(const cluster::Config& cfg, uint64_t rate_bps, const CeilingOptions& o);

// One point: `repeats` runs of the probe at `rate_bps` on the cluster that is up.
// Throws cluster::CommandError when the probe fails.
CeilingPoint measure_point(cluster::Config& cfg, uint64_t rate_bps, const CeilingOptions& o);

// The search; each point is written to `log` as it is measured.
Ceiling find_ceiling(cluster::Config& cfg, const CeilingOptions& o, std::ostream& log);

// "rate_bps,bound_us,pct,run_pct..." lines and the ceiling, as JSON.
std::string ceiling_json(const cluster::Config& cfg, const Ceiling& c, const CeilingOptions& o);

// A PNG (or SVG) of the curve, rate against % of the rail bound, drawn by
// share/railcoll/plot_ceiling.py from ceiling_json's text; false (said on
// stderr) when it could not be drawn.
bool plot_ceiling(const std::string& json, const std::string& path);

}  // namespace railcoll::testbed
