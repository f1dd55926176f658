// railcoll bench COLL [options] (usage.cpp has them all): parses the command
// line and calls the benchmark library (src/bench/). Started by a launcher
// (railcoll run / cluster run, mpirun, srun, torchrun env) it is a worker rank;
// started plainly it is the driver, which launches the workers.
#include <algorithm>
#include <cstring>

#include "args.hpp"
#include "bench/driver.hpp"
#include "bench/fault.hpp"
#include "bench/harness.hpp"
#include "commands.hpp"
#include "core/errors.hpp"
#include "core/registry.hpp"
#include "testbed/job.hpp"
#include "testbed/traffic.hpp"

namespace railcoll::cli {

namespace {

const std::set<std::string> kFlags = {"f", "c", "mpi", "local", "worker", "nonblocking", "persistent", "raw"};
const std::set<std::string> kValued = {"algo",    "m",          "i",     "x",      "json",         "csv",
                                       "plot",    "n",          "ppn",   "layout", "rails",        "records",
                                       "timeout", "background", "fault", "fault-marker", "duration", "idle-us", "skew",
                                       "timeline", "transport", "peer", "oneccl-settings", "rounds", "factor"};

// Options that mean nothing with --fault: refused rather than ignored.
const char* const kNotWithFault[] = {"mpi", "background", "csv",      "plot",        "f",         "c",
                                     "i",   "x",          "skew",     "timeline",    "nonblocking", "persistent",
                                     "peer", "rounds"};
// Options the overlap measurement (--nonblocking, --persistent) does not take.
const char* const kNotWithOverlap[] = {"background", "skew", "timeline", "plot"};

// Where the ranks go: -n, --ppn, --layout, --rails, --local.
bench::Placement placement(const Args& a) {
  bench::PlacementRequest req;
  req.local = a.flag("local");
  req.n = static_cast<int>(a.integer("n", 0, 1, 4096));
  req.ppn = static_cast<int>(a.integer("ppn", 0, 1, 4096));
  req.rails = static_cast<int>(a.integer("rails", 0, 1, 8));
  if (a.has("layout")) req.layout = testbed::parse_layout(a.str("layout"));
  if (req.n > 0 && !req.layout.empty() && req.n != testbed::layout_ranks(req.layout))
    throw UsageError(a.spelled("n") + " " + std::to_string(req.n) + " but --layout " + a.str("layout") + " holds " +
                     std::to_string(testbed::layout_ranks(req.layout)) + " ranks");
  if (!req.layout.empty()) req.n = 0;  // the layout says it all
  return bench::choose_placement(req);
}

int run(const std::vector<std::string>& argv, bool worker) {
  Args a(argv, kFlags, kValued);
  Collective coll;
  if (a.positional().size() != 1 || !parse_collective(a.positional()[0], &coll)) {
    std::string names;
    for (Collective c : user_collectives()) names += (names.empty() ? "" : "|") + std::string(collective_name(c));
    throw UsageError("expects one collective: railcoll bench " + names + " [options] (railcoll bench --help)");
  }
  bench::BenchPlan p;
  p.collective = coll;
  const std::string name = a.positional()[0];
  if (a.flag("nonblocking") && a.flag("persistent")) throw UsageError("give --nonblocking or --persistent, not both");
  p.form = a.flag("nonblocking")  ? bench::CallForm::Nonblocking
           : a.flag("persistent") ? bench::CallForm::Persistent
                                  : bench::CallForm::Blocking;
  // Nonblocking calls run the algorithms the blocking ones choose: auto unless asked.
  p.algo = a.str("algo", p.form == bench::CallForm::Blocking ? "all" : "auto");
  if (p.algo != "all") {
    const std::vector<std::string> named = bench::algorithms_to_run(coll, p.algo);
    if (named.empty()) throw UsageError("--algo: name an algorithm, all or auto");
    for (const std::string& algo : named)
      if (algo != "auto" && !find_algorithm(coll, algo))
        throw UsageError("unknown " + name + " algorithm '" + algo + "' (railcoll algos lists them)");
  }
  size_range(a, &p.min, &p.max);
  if (p.max > (1ull << 30)) throw UsageError("-m: at most 1 GiB per rank");
  p.factor = static_cast<int>(a.integer("factor", 2, 2, 1024));
  const bool moves_data = traits(coll).moves_data;
  if (!moves_data) p.min = p.max = 0;
  // A barrier's latency distribution needs many consecutive calls (seed 004 §5).
  p.iters = static_cast<int>(a.integer("i", moves_data ? 100 : 10000, 1, 1000000));
  p.warmup = static_cast<int>(a.integer("x", moves_data ? 10 : 100, 0, 1000000));
  p.full = a.flag("f");
  p.validate = a.flag("c");
  if (a.flag("mpi")) p.peers = {"mpi", "mpi-layer"};
  for (const std::string& peer : bench::split_list(a.str("peer", ""))) {
    if (peer != "mpi" && peer != "oneccl" && peer != "mpi-layer")
      throw UsageError("--peer takes mpi, oneccl, mpi-layer or several (mpi,oneccl)");
    if (std::find(p.peers.begin(), p.peers.end(), peer) == p.peers.end()) p.peers.push_back(peer);
  }
  for (const std::string& s : bench::split_list(a.str("oneccl-settings", ""))) {
    if (s == "all") {
      for (auto& known : bench::oneccl_settings()) p.oneccl_settings.push_back(known.name);
      continue;
    }
    if (std::none_of(bench::oneccl_settings().begin(), bench::oneccl_settings().end(),
                     [&](const bench::OnecclSetting& k) { return k.name == s; }))
      throw UsageError("unknown oneCCL setting '" + s + "' (railcoll bench --help lists them)");
    p.oneccl_settings.push_back(s);
  }
  if (!p.oneccl_settings.empty() && std::find(p.peers.begin(), p.peers.end(), "oneccl") == p.peers.end())
    throw UsageError("--oneccl-settings goes with --peer oneccl");
  p.rounds = static_cast<int>(a.integer("rounds", 1, 1, 100));
  p.json = a.str("json");
  p.csv = a.str("csv");
  p.plot = a.str("plot");
  p.timeline = a.str("timeline");
  p.timeout = static_cast<double>(a.integer("timeout", 3600, 0, 7 * 86400));
  p.idle_us = static_cast<int>(a.integer("idle-us", -1, -1, 10000000));
  p.transport = a.str("transport", "");
  if (!p.transport.empty() && p.transport != "tcp" && p.transport != "ofi" && p.transport != "both")
    throw UsageError("--transport must be tcp, ofi or both");
  if (p.transport == "both" && a.has("background")) throw UsageError("--transport both does not go with --background");
  p.skew_us = static_cast<int>(a.integer("skew", 0, 0, 10000000));
  if (a.has("background") && (!parse_background(a.str("background"), &p.background) ||
                              p.background == BackgroundPattern::None))
    throw UsageError(std::string("--background must be one of ") + kBackgroundPatternNames);

  if (p.form != bench::CallForm::Blocking) {
    const std::string form = std::string("--") + bench::call_form_name(p.form);
    for (const char* k : kNotWithOverlap)
      if (a.has(k)) throw UsageError(a.spelled(k) + " does not go with " + form);
    if (p.transport == "both") throw UsageError("--transport both does not go with " + form);
    if (p.form == bench::CallForm::Persistent && !p.peers.empty())
      throw UsageError("--persistent does not go with --mpi or --peer (Open MPI 4.1 has no MPI_Allgather_init)");
  }

  if (a.has("fault")) {
    if (coll != Collective::Allgather) throw UsageError("--fault runs all-gathers only");
    bench::FaultSpec f = bench::parse_fault(a.str("fault"));  // bad input: an error before anything starts
    for (const char* k : kNotWithFault)
      if (a.has(k)) throw UsageError(a.spelled(k) + " does not go with --fault");
    if (p.algo == "all") p.algo = "direct";
    if (p.algo.find(',') != std::string::npos) throw UsageError("--fault runs one algorithm, not a list");
    if (worker) {
      double duration = 0;
      try {
        duration = std::stod(a.str("duration", "0"));
      } catch (const std::exception&) {
        throw UsageError("--duration expects seconds");
      }
      return bench::fault_worker(f, p.algo, p.max, duration, a.str("fault-marker"), a.str("records"));
    }
    return bench::fault_driver(f, p.algo, p.max, placement(a), p.json);
  }

  if (worker) {
    bench::WorkerOptions w;
    w.collective = coll;
    w.algo = p.algo;
    w.min = p.min, w.max = p.max;
    w.factor = p.factor;
    w.iters = p.iters, w.warmup = p.warmup;
    w.full = p.full, w.validate = p.validate;
    w.idle_us = std::max(0, p.idle_us);
    w.skew_us = p.skew_us;
    w.records = a.str("records");
    w.json = p.json, w.csv = p.csv, w.plot = p.plot;
    w.timeline = p.timeline;
    w.form = p.form;
    w.rounds = p.rounds;
    w.raw = a.flag("raw");
    return bench::run_worker(w);
  }
  p.where = placement(a);
  return bench::run_bench(p);
}

}  // namespace

int cmd_bench(const std::vector<std::string>& argv) {
  if (std::find(argv.begin(), argv.end(), "--torch") != argv.end()) return cmd_bench_torch(argv);
  if (std::find(argv.begin(), argv.end(), "--reduce") != argv.end()) return cmd_bench_reduce(argv);
  bool worker = std::find(argv.begin(), argv.end(), "--worker") != argv.end() || testbed::started_by_a_launcher();
  return run(argv, worker);
}

}  // namespace railcoll::cli
