// Calibration (`railcoll calibrate`, docs/calibration.md): measures the
// parameters of the simulator's machine model (src/sim/machine.hpp) on a
// cluster and writes them as a preset, every value with the measurement it
// came from; and compares simulated records with measured ones.
//
// The measurements run as small jobs whose ranks call calibration_worker()
// and use only the public C API; rank 0 appends "key value..." lines to a
// records file. Starting those jobs (the emulated cluster's launcher, or local
// processes) is the caller's: a JobRunner.
#pragma once
#include "bench/driver.hpp"  // PlacementRequest
#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace railcoll::bench {

// ---- a rank of a calibration job

struct WorkerOptions {
  std::string test;     // node, flag, p2p, pair, burst, turn, placement
  std::string records;  // file rank 0 appends its "key value..." lines to
  bool quick = false;
  int rail = -1;        // p2p: measure this rail alone (keeps that entry of RAILCOLL_RAILS)
  int idle_us = 0;      // pair, burst, placement: bench's rest before every call (BenchPlan::idle_us)
};
// Runs `test` on the calling rank; returns the process exit status.
int calibration_worker(const WorkerOptions& o);

// ---- the driver

// A job's records: key -> values, in the order the workers wrote them.
using Records = std::multimap<std::string, std::vector<double>>;
// The ranks of a job and where they run, for a JobRunner.
struct JobShape {
  PlacementRequest cluster;  // on the emulated cluster (e.g. layout 1,1)
  PlacementRequest local;    // as local processes (e.g. -n 2 --ppn 1)
};
// Runs the worker job of `test` (on rail `rail`, or all rails with -1) and
// returns its records; throws std::runtime_error when the job fails.
using JobRunner = std::function<Records(const std::string& test, const JobShape& shape, int rail)>;

struct CalibrationOptions {
  std::string out = "presets/testbed.preset";
  bool quick = false;
  bool cluster = false;    // on the emulated cluster (else local processes)
  int n = 8, ppn = 4, rails = 2;  // local processes: the job's shape
  double burst_bytes = 0;  // the cluster shapers' token bucket (0: none)
  int idle_us = 0;         // bench's rest before every timed call there (default_idle_us)
  std::string where;       // says where it ran, for the preset's header
};
// Measures, prints the measurements to `log` and writes the preset to o.out.
// Throws std::runtime_error when a measurement fails.
void calibrate(const CalibrationOptions& o, const JobRunner& run, std::ostream& log);

// ---- simulated against measured

struct Timing {
  std::string algorithm;
  uint64_t bytes = 0;
  double p50_us = 0;
};
struct Comparison {
  struct Size {
    uint64_t bytes = 0;
    std::string fastest_sim, fastest_measured;
    double median_error = 0;  // over the algorithms at this size
    double choice_loss = 0;   // measured time of the simulated fastest / measured fastest - 1
  };
  std::vector<Size> sizes;
  double median_error = 0;  // median |sim - measured| / measured over every (algorithm, size)
  size_t pairs = 0;
  int same_fastest = 0, within_10 = 0;
  double median_loss = 0;
};
// Median error over every (algorithm, size) in both, and the share of sizes
// where both have the same fastest algorithm. "auto" (a copy of the algorithm
// it chose) and Open MPI ("mpi:*") records are left out. With several measured
// runs a pair's measurement is its median over the runs. Throws
// std::invalid_argument when no pair is in both.
Comparison compare(const std::vector<Timing>& simulated, const std::vector<std::vector<Timing>>& measured_runs);
void print_comparison(const Comparison& c, std::ostream& out);

}  // namespace railcoll::bench
