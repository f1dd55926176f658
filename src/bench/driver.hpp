// The benchmark's driver (`railcoll bench` started by hand): it starts the
// workers (bench/harness.hpp) as the ranks of a job on the emulated cluster,
// or as local processes when asked (--local); runs them again under background
// traffic when asked; runs Open MPI's collectives on the same ranks
// (railcoll-mpi-bench), and railcoll's through that same MPI program (the MPI
// interposition library preloaded: mpi:railcoll); then prints the summary and
// writes JSON, CSV and plot.
#pragma once
#include <string>
#include <vector>

#include "core/background.hpp"
#include "bench/call_form.hpp"
#include "core/collective.hpp"
#include "testbed/job.hpp"

namespace railcoll::bench {

// Where the ranks of a benchmark run.
struct Placement {
  bool cluster = false;     // the emulated cluster; else local processes in pretend nodes
  std::vector<int> layout;  // ranks per node, node-major
  int rails = 0;            // on the cluster 0 means all of its rails
  std::string text() const;  // "13 ranks on 3 nodes (5,5,3), 2 rails"
};

// What the command line asked for: -n, --ppn, --layout, --rails, --local (0 / empty: not given).
struct PlacementRequest {
  bool local = false;
  int n = 0, ppn = 0, rails = 0;
  std::vector<int> layout;
};

// The cluster when one is up and usable, local processes when `local`;
// neither: an InputError saying how to get one (testbed/where.hpp). Ranks per
// node: --layout; else -n in nodes of --ppn (the cluster's ppn, locally -n in
// one node) with the rest on a last, smaller node; else --ppn on every node
// (locally 2 nodes); else the cluster's shape (locally 2 nodes of 4). Never more ranks than asked: a layout that does not
// fit the cluster is an InputError.
Placement choose_placement(const PlacementRequest& request);

// The rest bench takes before every timed call at `where` (--idle-us default):
// on the cluster the time its shaped rails take to refill their burst, else 0.
int default_idle_us(const Placement& where);

// Runs `worker` (a command line) as the ranks of a job at `where` with
// `--records FILE` appended, and returns the job's result and, in `records`,
// the lines the workers wrote to FILE.
testbed::JobResult run_workers(const Placement& where, std::vector<std::string> worker,
                               std::vector<std::string>* records, const testbed::JobOptions& options);

struct BenchPlan {
  Collective collective = Collective::Allgather;
  std::string algo = "all";
  uint64_t min = 8, max = 1 << 20;
  int factor = 2;  // each size this times the last (--factor)
  int iters = 100, warmup = 10;
  bool full = false, validate = false;
  // Idle time before each timed call, in both benchmarks alike: a shaped rail
  // passes its burst at memory speed after a pause, so calls moving less than
  // that per rail are timed by how long the rails rested before them, which
  // differs between the two programs unless fixed. -1: on the emulated
  // cluster the time to refill the shaper's burst (docs/results.md), locally 0.
  int idle_us = -1;
  int skew_us = 0;  // each rank's entry delayed by a random 0..skew_us us, both sides alike (WorkerOptions)
  BackgroundPattern background = BackgroundPattern::None;  // needs the cluster
  Placement where;
  double timeout = 3600;  // seconds for each job (workers, Open MPI)
  std::string json, csv, plot;
  // --transport: "tcp" or "ofi" (RAILCOLL_TRANSPORT for the workers), "both"
  // (tcp then ofi, side by side, with their ratio), "" (the environment's).
  std::string transport;
  std::string timeline;  // every rank's entry and exit of every call (WorkerOptions::timeline)
  // --nonblocking / --persistent: OSU's overlap measurement (bench/overlap.hpp);
  // with --mpi the MPI rows run railcoll-mpi-bench --nonblocking.
  CallForm form = CallForm::Blocking;
  // The peers railcoll is compared with on the same ranks (--peer): "mpi"
  // (Open MPI's tuned and HAN), "oneccl" (Intel oneCCL, each of
  // `oneccl_settings` tried, the best of them reported as the row "oneccl"),
  // and "mpi-layer" (railcoll through the MPI layer, mpi:railcoll, not a peer
  // but the same MPI program); --mpi is mpi and mpi-layer.
  std::vector<std::string> peers;
  std::vector<std::string> oneccl_settings;  // empty: kDefaultOnecclSettings
  // Like for like: railcoll's workers and every peer's program run `rounds`
  // times, alternating (railcoll, peer 1, peer 2, ..., railcoll, ...), each
  // round timing its share of every size's calls (calls_for) after its own
  // warm-up; each record pools the calls of every round. Blocking calls alone
  // (the overlap runs and --transport both run once).
  int rounds = 1;
};

// oneCCL's settings `--peer oneccl` tries (name -> its variables): its ATL
// transport, worker threads, how they wait, and its multi-NIC support over the
// rails. `railcoll bench --help` lists them.
struct OnecclSetting {
  std::string name, meaning;
  // RAILS: the rails' interface names, RAIL0 the first's (locally both "lo").
  std::vector<std::pair<std::string, std::string>> env;
};
const std::vector<OnecclSetting>& oneccl_settings();
extern const char* const kDefaultOnecclSettings;  // "w1,w2-mnic"

// The workers' command line for the plan (this program, `bench ... --worker`).
std::vector<std::string> worker_command(const BenchPlan& plan);

// Runs the plan and reports; returns the exit status (0 ok, 1 a job failed or
// a result was wrong, 2 the plan cannot run here).
int run_bench(const BenchPlan& plan);

}  // namespace railcoll::bench
