// The benchmark harness: one benchmarked call (buffers, the call, the check of
// every byte, all as the collective's traits define them), the timing of every
// call on every rank, and the worker loop that every rank of `railcoll bench`
// runs (started by a launcher: railcoll run / cluster run, mpirun, srun,
// torchrun-style environment).
//
// Timing (docs/results.md, "How to read"): a barrier before every call (each
// call timed alone, as the OSU benchmarks and railcoll-mpi-bench do; barriers
// themselves are timed back to back), and each rank's entry into and exit from
// every call on CLOCK_MONOTONIC. Per call: every rank's own time, the slowest
// rank's time, and the span, the last rank out minus the first rank in, which
// is meaningful because every emulated node reads the one host clock (the span
// is left out when the ranks' clocks differ).
#pragma once
#include <railcoll/railcoll.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench/call_buffers.hpp"
#include "bench/clock.hpp"
#include "bench/call_form.hpp"
#include "bench/records.hpp"
#include "core/collective.hpp"

namespace railcoll::bench {

// One call of the benchmarked collective through railcoll's C API, on the
// buffers every benchmark shares (bench/call_buffers.hpp).
class BenchCall : public CallBuffers {
 public:
  using CallBuffers::CallBuffers;
  railcoll_status_t run(railcoll_comm_t comm, const railcoll_call_opts_t* opts);
  // railcoll_iCOLL (Nonblocking) or railcoll_COLL_init (Persistent) of the
  // same call, on the same buffers, into *req.
  railcoll_status_t post(CallForm form, railcoll_comm_t comm, const railcoll_call_opts_t* opts,
                         railcoll_request_t* req);
};

struct WorkerOptions {
  Collective collective = Collective::Allgather;
  std::string algo = "all";  // a name, "auto", or "all" (every software algorithm, then auto)
  uint64_t min = 8, max = 1 << 20;
  int factor = 2;  // each size this times the last (bench_sizes)
  int iters = 100, warmup = 10;
  bool full = false, validate = false;
  // Sleep before each call's barrier (not barriers'): every call finds the
  // rails idle, as railcoll-mpi-bench --idle-us does (BenchPlan::idle_us).
  int idle_us = 0;
  // After the barrier, each rank waits a random 0..skew_us us before entering
  // each call (its own time starts then), as an application's imbalance does;
  // railcoll-mpi-bench --skew does the same.
  int skew_us = 0;
  // Rank 0 appends the context and the records here (the driver reads them);
  // "" when run by hand under a launcher: rank 0 then prints the summary and
  // writes json/csv/plot itself.
  std::string records;
  std::string json, csv, plot;
  // Rank 0 appends every rank's entry into and exit from every timed call here
  // (write_timeline, stats.hpp): where a slow call's time went. "": not kept.
  std::string timeline;
  // Nonblocking or Persistent: the overlap measurement (bench/overlap.hpp)
  // instead of timing blocking calls alone.
  CallForm form = CallForm::Blocking;
  // One of `rounds` runs interleaved with the peers' (bench/driver.hpp): its
  // share of the timed calls (calls_for); `raw`: the records carry every
  // call's times so the driver can pool the rounds.
  int rounds = 1;
  bool raw = false;
};

// "a,b,c" -> {a, b, c}; "" -> {}; empty items are dropped.
std::vector<std::string> split_list(const std::string& text);

// The algorithms "all" means for a collective: every software algorithm (the
// hardware ones would run their software twins again), then auto; else the
// names of a comma-separated list (one name: itself).
std::vector<std::string> algorithms_to_run(Collective c, const std::string& algo);

// Runs as one rank; returns the exit status (0, or 1 after a failure or a
// wrong result, said on stderr).
int run_worker(const WorkerOptions& o);

}  // namespace railcoll::bench
