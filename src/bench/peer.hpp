// The benchmark of a peer library's collectives, railcoll is compared with on
// the same ranks (railcoll-mpi-bench: Open MPI's, tools/mpi_bench/;
// railcoll-oneccl-bench: oneCCL's, tools/oneccl_bench/): the OSU-style loop
// over the bench library's buffers (fill and check by the traits), statistics
// and records, so that a peer's record means exactly what a railcoll worker's
// does (bench/harness.hpp) and the calls per size follow the same rule
// (calls_for).
//
// Timing, as railcoll bench's: for each size every call is preceded by the
// library's barrier and timed alone (with --idle-us a rest before it, with
// --skew a random delay of each rank's entry after it); with -c a second
// barrier after the call keeps validation out of every call's time. A barrier
// is timed back to back. --nonblocking: OSU's nonblocking benchmark (the
// nonblocking call alternating with the blocking one, then the overlap run;
// bench/overlap.hpp). Output: one record per size, on rank 0's stdout, one
// JSON object a line (bench/records.hpp); the exit status is 0, 1 after a
// wrong result (said on stderr), 2 for bad usage.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "bench/call_buffers.hpp"
#include "core/collective.hpp"

namespace railcoll::bench {

// The job as the program's launcher sees it, through a side channel that is
// used between timed calls only (to gather statistics): MPI for both peers.
class SideChannel {
 public:
  virtual ~SideChannel() = default;
  virtual int rank() = 0;
  virtual int size() = 0;
  virtual int nodes() = 0;    // groups of ranks that share memory
  virtual int max_ppn() = 0;  // the most ranks on one of them
  // Every rank's `mine` (all of one length) to rank 0, rank after rank.
  virtual void gather(const std::vector<double>& mine, std::vector<double>* all) = 0;
  virtual uint64_t sum(uint64_t mine) = 0;   // on every rank
  virtual bool all_equal(uint64_t mine) = 0;  // on every rank
};

// The library under test: the calls that are timed.
class PeerCollectives {
 public:
  virtual ~PeerCollectives() = default;
  // "" when the library has `c` (`nonblocking`: in its nonblocking form), else why not.
  virtual std::string lacks(Collective c, bool nonblocking) = 0;
  virtual void barrier() = 0;  // before each timed call
  virtual void call(Collective c, CallBuffers& b) = 0;
  virtual void post(Collective c, CallBuffers& b) = 0;  // the nonblocking form; wait() completes it
  virtual void wait() = 0;
};

struct PeerOptions {
  Collective collective = Collective::Allgather;
  uint64_t min = 8, max = 1 << 20;
  int factor = 2;               // each size this times the last (bench_sizes)
  int iters = -1, warmup = -1;  // -1: the collective's default (barrier: many more)
  bool validate = false, full = false, samples = false, nonblocking = false, raw = false;
  int rails = 1;
  int rounds = 1;  // one of `rounds` interleaved runs: its share of the calls (calls_for)
  uint64_t idle_us = 0, skew_us = 0;
  std::string label;
  std::string program;  // for messages
};

// The peers' common command line (peer_usage lists it); "" when it is fine,
// "help" for -h/--help, else the error. `default_label` names the records.
std::string parse_peer_options(const std::vector<std::string>& args, const std::string& program,
                               const std::string& default_label, PeerOptions* o);
std::string peer_usage(const std::string& program, const std::string& library);

// Runs every size; rank 0 writes the records to `out`; wrong results are said
// on `err`. Returns 0, or 1 after a wrong result.
int run_peer_bench(SideChannel& side, PeerCollectives& lib, const PeerOptions& o, std::ostream& out,
                   std::ostream& err);

}  // namespace railcoll::bench
