// railcoll cluster up|status|down|ceiling|run|mpirun|torchrun|slurm: the emulated multi-rail cluster
// (docs/cluster.md). Exit status: 0 ok, 1 failed (a command, a check, a
// job), 2 bad usage or wrong state, 3 (status only) no cluster; run, mpirun
// and torchrun exit with the job's status.
#include <algorithm>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <set>

#include "args.hpp"
#include "commands.hpp"
#include "core/errors.hpp"
#include "job_args.hpp"
#include "testbed/ceiling.hpp"
#include "testbed/cluster.hpp"
#include "testbed/cluster_job.hpp"
#include "cmd_cluster_slurm.hpp"
#include "usage.hpp"

namespace railcoll::cli {
namespace {

namespace cl = railcoll::cluster;

constexpr long kDefaultTimeout = 600;

int fail(const std::string& verb, const std::string& msg, int status) {
  std::cerr << "railcoll cluster " << verb << ": " << msg << "\n";
  return status;
}

// Root is checked after the arguments, so usage errors are reported first.
bool need_root(const std::string& verb) {
  if (cl::is_root()) return true;
  if (verb == "up")
    std::cerr << "railcoll cluster up needs root (network namespaces); the local launcher `railcoll run` works "
                 "without it\n";
  else
    std::cerr << "railcoll cluster " << verb << " needs root (network namespaces)\n";
  return false;
}

std::string plural(int n, const std::string& what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

void no_positional(const Args& a) {
  if (!a.positional().empty()) throw UsageError("unexpected argument '" + a.positional().front() + "'");
}

// ------------------------------------------------------------------ up

// The ceiling search's options from the command line (cluster up --rate auto, cluster ceiling).
const std::set<std::string> kCeilingValued = {"bytes", "calls", "repeats", "target", "start", "low", "high", "rates"};
testbed::CeilingOptions ceiling_options(const Args& a) {
  testbed::CeilingOptions o;
  o.bytes = static_cast<uint64_t>(a.integer("bytes", 0, 0, 64 << 20));
  o.calls = static_cast<int>(a.integer("calls", o.calls, 1, 1000));
  o.repeats = static_cast<int>(a.integer("repeats", o.repeats, 1, 100));
  o.target_pct = static_cast<double>(a.integer("target", static_cast<long>(o.target_pct), 1, 100));
  try {
    if (a.has("start")) o.start_bps = cl::parse_rate(a.str("start"));
    if (a.has("low")) o.low_bps = cl::parse_rate(a.str("low"));
    if (a.has("high")) o.high_bps = cl::parse_rate(a.str("high"));
    const std::string rates = a.str("rates", "");
    for (size_t at = 0; at < rates.size();) {
      const size_t comma = std::min(rates.find(',', at), rates.size());
      o.rates.push_back(cl::parse_rate(rates.substr(at, comma - at)));
      at = comma + 1;
    }
  } catch (const cl::ClusterInputError& e) {
    throw UsageError(e.what());
  }
  if (o.low_bps > o.high_bps) throw UsageError("--low must not be above --high");
  return o;
}

// Takes the rate the search found (or, when none reached the target, its knee)
// for the cluster's rails, recorded as found.
void keep_ceiling(cl::Config& c, const testbed::Ceiling& found) {
  const uint64_t rate = found.rate_bps ? found.rate_bps : found.knee_bps;
  const double pct = found.rate_bps ? found.pct : found.knee_pct;
  c.rate_source = "auto";
  c.ceiling_pct = pct;
  cl::set_rate(c, rate);
}

std::string rate_words(const cl::Config& c) {
  std::ostringstream o;
  o << c.rate;
  if (c.rate_source == "auto")
    o << " (auto: the plain TCP all-to-all reaches " << std::fixed << std::setprecision(0) << c.ceiling_pct
      << "% of the rail bound there)";
  return o.str();
}

int cluster_up(const std::vector<std::string>& argv) {
  std::set<std::string> valued = {"nodes", "ppn", "rails", "rate", "shaper"};
  valued.insert(kCeilingValued.begin(), kCeilingValued.end());
  Args a(argv, {"slurm"}, valued);
  no_positional(a);
  cl::Config c;
  c.nodes = static_cast<int>(a.integer("nodes", 4, 1, cl::kMaxNodes));
  c.ppn = static_cast<int>(a.integer("ppn", 4, 1, cl::kMaxPpn));
  c.rails = static_cast<int>(a.integer("rails", 2, 1, cl::kMaxRails));
  c.rate = a.str("rate", "1gbit");
  const bool automatic = c.rate == "auto";
  const testbed::CeilingOptions search = ceiling_options(a);
  if (!automatic)
    for (auto& k : kCeilingValued)
      if (a.has(k)) throw UsageError(a.spelled(k) + " goes with --rate auto");
  if (automatic && c.nodes < 2) throw UsageError("--rate auto needs at least 2 nodes (it measures between them)");
  try {
    c.rate_bps = automatic ? 1000000000 : cl::parse_rate(c.rate);
  } catch (const cl::ClusterInputError& e) {
    throw UsageError(e.what());
  }
  if (automatic) c.rate = "1000mbit";  // until the search has found the rate
  c.shaper = a.str("shaper", "bucket");
  try {
    cl::choose_shaping(c);
  } catch (const cl::ClusterInputError& e) {
    throw UsageError(e.what());
  }
  if (!need_root("up")) return 2;

  cl::StateLock lock;
  if (auto cur = cl::load_state())
    return fail("up", "a cluster is already up (" + plural(cur->nodes, "node") + ", " + plural(cur->rails, "rail") +
                          "); `railcoll cluster down` removes it",
                2);
  if (cl::Present p = cl::scan(); p.any())
    return fail("up",
                "leftovers of an earlier cluster exist (" + p.summary() + "); `railcoll cluster down` removes them", 2);
  if (std::string clash = cl::address_conflict(); !clash.empty())
    return fail("up", clash + "; remove it first or use another machine", 2);
  try {
    cl::up(c);
  } catch (const cl::CommandError& e) {
    return fail("up", std::string(e.what()) + " (removed what was created)", 1);
  }
  if (automatic) {
    try {
      const testbed::Ceiling found = testbed::find_ceiling(c, search, std::cout);
      keep_ceiling(c, found);
      std::cout << "ceiling: " << c.rate << " per rail"
                << (found.rate_bps ? ""
                                   : " (no rate reached the target, which a loaded machine feeds at no rate: the "
                                     "knee, the highest rate within 5 points of the best share measured)")
                << ", found in " << std::fixed << std::setprecision(0) << found.seconds << " s\n";
    } catch (const cl::CommandError& e) {
      std::string msg = std::string("finding the rate failed: ") + e.what();
      try {
        cl::down();
      } catch (const cl::CommandError& e2) {
        msg += std::string("; removing the cluster also failed: ") + e2.what();
      }
      return fail("up", msg + " (the cluster was removed)", 1);
    }
  }
  std::cout << "cluster up: " << plural(c.nodes, "node") << " (rc-n0..rc-n" << c.nodes - 1 << "), "
            << plural(c.ppn, "rank") << " per node, " << plural(c.rails, "rail") << " (" << cl::rail_subnets(c.rails)
            << ") at " << rate_words(c) << " each way\n";
  if (a.flag("slurm") && slurm_up_on(c, "up") != 0) {
    cl::down();
    std::cerr << "railcoll cluster up: took the cluster down again\n";
    return 1;
  }
  return 0;
}

// ------------------------------------------------------------------ status

void print_config(const cl::Config& c) {
  std::cout << "cluster: " << plural(c.nodes, "node") << ", " << plural(c.ppn, "rank") << " per node, "
            << plural(c.rails, "rail") << "\n"
            << "rate:    " << rate_words(c) << " (" << c.rate_bps << " bit/s) per rail and direction; tbf burst "
            << c.burst_bytes << " B (" << c.shaper << "), queue " << c.latency_ms << " ms\n"
            << "rails:   " << cl::rail_subnets(c.rails) << " (root side 198.18.<r>.254 on rcbr<r>)\n"
            << "state:   " << cl::state_path() << "\n";
}

int cluster_status(const std::vector<std::string>& argv) {
  Args a(argv, {}, {});
  no_positional(a);
  if (!need_root("status")) return 2;
  auto cfg = cl::load_state();
  if (!cfg) {
    cl::Present p = cl::scan();
    if (p.any()) {
      std::cout << "no cluster state, but leftovers exist: " << p.summary()
                << " (`railcoll cluster down` removes them)\n";
      return 1;
    }
    std::cout << "no cluster is up (`railcoll cluster up` creates one)\n";
    return 3;
  }
  print_config(*cfg);
  cl::Health h = cl::check(*cfg);
  for (int r = 0; r < cfg->rails; ++r)
    std::cout << cl::bridge_name(r) << "   " << (h.bridge_problems[r].empty() ? "ok" : h.bridge_problems[r]) << "\n";
  for (int i = 0; i < cfg->nodes; ++i) {
    const auto& n = h.nodes[i];
    std::cout << cl::node_name(i) << "  namespace " << (n.namespace_ok ? "ok" : "MISSING");
    for (int r = 0; r < cfg->rails; ++r)
      std::cout << "  " << cl::rail_if_name(r) << " " << cl::rail_address(r, i) << " "
                << (n.rail_problems[r].empty() ? "ok" : "(" + n.rail_problems[r] + ")");
    std::cout << "\n";
  }
  bool ok = h.healthy();
  std::cout << (ok ? "healthy" : "DEGRADED: parts are missing; `railcoll cluster down` and `up` rebuild it") << "\n";
  return ok ? 0 : 1;
}

// ------------------------------------------------------------------ ceiling

// Measures the ceiling curve on the cluster that is up; puts its rate back
// unless --set, which keeps the rate found (as `up --rate auto` does).
int cluster_ceiling(const std::vector<std::string>& argv) {
  std::set<std::string> valued = {"json", "plot"};
  valued.insert(kCeilingValued.begin(), kCeilingValued.end());
  Args a(argv, {"set"}, valued);
  no_positional(a);
  const testbed::CeilingOptions search = ceiling_options(a);
  if (!need_root("ceiling")) return 2;
  cl::StateLock lock;
  auto cfg = cl::load_state();
  if (!cfg) return fail("ceiling", "no cluster is up (`railcoll cluster up` creates one)", 2);
  if (cfg->nodes < 2) return fail("ceiling", "the cluster has one node: nothing to measure between nodes", 2);
  cl::Config c = *cfg;
  const cl::Config before = c;
  testbed::Ceiling found;
  try {
    found = testbed::find_ceiling(c, search, std::cout);
    if (a.flag("set")) {
      keep_ceiling(c, found);
    } else {
      c = before;
      cl::set_rate(c, before.rate_bps);
    }
  } catch (const cl::CommandError& e) {
    cl::Config back = before;
    try {
      cl::set_rate(back, before.rate_bps);
    } catch (const cl::CommandError&) {
    }
    return fail("ceiling", e.what(), 1);
  }
  if (found.rate_bps)
    std::cout << "ceiling: " << found.rate_bps / 1000000 << " Mbit/s per rail (" << std::fixed << std::setprecision(0)
              << found.pct << "% of the rail bound), found in " << found.seconds << " s";
  else
    std::cout << "ceiling: no rate reached " << search.target_pct << "%; the knee (the highest rate within 5 points "
              << "of the best share) is " << found.knee_bps / 1000000 << " Mbit/s at " << std::fixed
              << std::setprecision(0) << found.knee_pct << "% (searched in " << found.seconds << " s)";
  std::cout << (a.flag("set") ? "; the cluster's rails now run at " + c.rate
                              : "; the cluster's rails are back at " + before.rate)
            << "\n";
  const std::string json = testbed::ceiling_json(c, found, search);
  if (a.has("json")) {
    std::ofstream f(a.str("json"));
    f << json;
    if (!f.flush()) return fail("ceiling", "cannot write " + a.str("json"), 1);
    std::cout << "wrote " << a.str("json") << "\n";
  }
  if (a.has("plot")) {
    if (!testbed::plot_ceiling(json, a.str("plot"))) return 1;
    std::cout << "wrote " << a.str("plot") << "\n";
  }
  return 0;
}

// ------------------------------------------------------------------ down

int cluster_down(const std::vector<std::string>& argv) {
  Args a(argv, {}, {});
  no_positional(a);
  if (!need_root("down")) return 2;
  cl::StateLock lock;
  cl::Present before = cl::scan();
  int stopped = 0;
  try {
    slurm_down_said("down");  // its controller and munged live outside the nodes
    stopped = cl::down();
  } catch (const cl::CommandError& e) {
    return fail("down", e.what(), 1);
  }
  if (stopped > 0)
    std::cout << "cluster down: stopped " << stopped << (stopped == 1 ? " process" : " processes")
              << " still running in the nodes\n";
  if (before.any())
    std::cout << "cluster down: removed " << before.summary() << "\n";
  else
    std::cout << "cluster down: nothing was up\n";
  return 0;
}

// ------------------------------------------------------------------ jobs

// Splits "OPTIONS -- PROG ARGS" (the "--" may be left out when PROG does not
// start with '-'); the options part goes to Args, PROG ARGS are the job.
std::pair<std::vector<std::string>, std::vector<std::string>> split_job(const std::vector<std::string>& argv,
                                                                        const std::set<std::string>& valued) {
  size_t i = 0;
  for (; i < argv.size(); ++i) {
    if (argv[i] == "--") return {{argv.begin(), argv.begin() + i}, {argv.begin() + i + 1, argv.end()}};
    if (argv[i].rfind("-", 0) != 0) break;
    std::string name = argv[i].substr(argv[i].rfind("--", 0) == 0 ? 2 : 1);
    if (valued.count(name)) ++i;  // skip its value
  }
  auto cut = argv.begin() + std::min(i, argv.size());
  return {{argv.begin(), cut}, {cut, argv.end()}};
}

// The request every job verb makes of the cluster: --ppn or --layout, --rails.
testbed::ClusterJobRequest job_request(const Args& a, const std::vector<std::string>& job, const std::string& verb) {
  if (job.empty()) throw UsageError("give the program to run after --, e.g. railcoll cluster " + verb + " -- hostname");
  no_positional(a);
  if (a.has("ppn") && a.has("layout")) throw UsageError("give only one of --ppn and --layout");
  testbed::ClusterJobRequest req;
  req.program = job;
  req.ppn = static_cast<int>(a.integer("ppn", 0, 1, cl::kMaxPpn));
  if (a.has("layout")) req.layout = testbed::parse_layout(a.str("layout"));
  req.rails = static_cast<int>(a.integer("rails", 0, 1, cl::kMaxRails));
  return req;
}

// Checks the arguments first (usage errors before "needs root"), then the cluster.
testbed::ClusterJob prepare(const std::string& verb, const Args& a, const std::vector<std::string>& job) {
  testbed::ClusterJobRequest req = job_request(a, job, verb);
  job_options(a, kDefaultTimeout);  // its errors too
  return testbed::prepare_cluster_job(req);
}

int cluster_run(const std::vector<std::string>& argv) {
  std::set<std::string> valued = {"ppn", "layout", "rails"};
  valued.insert(kJobValued.begin(), kJobValued.end());
  auto [opts, job] = split_job(argv, valued);
  Args a(opts, kJobFlags, valued);
  testbed::ClusterJob j = prepare("run", a, job);
  testbed::JobOptions options = job_options(a, kDefaultTimeout);
  options.ask_for_flight_records = true;
  testbed::JobFlightRecords records;
  return report_job("cluster run", testbed::run_cluster_job(j, options), &records);
}

// An MPI program across the nodes: Open MPI's mpirun or MPICH's Hydra (--mpi,
// else the program's own), with --railcoll railcoll's collectives preloaded.
int cluster_mpirun(const std::vector<std::string>& argv) {
  std::set<std::string> valued = {"ppn", "layout", "rails", "mpi"};
  valued.insert(kJobValued.begin(), kJobValued.end());
  auto [opts, job] = split_job(argv, valued);
  std::set<std::string> flags = {"han", "verbose", "railcoll"};
  flags.insert(kJobFlags.begin(), kJobFlags.end());
  Args a(opts, flags, valued);
  testbed::MpirunOptions how;
  if (a.has("mpi")) {
    try {
      how.mpi = testbed::parse_mpi_flavor(a.str("mpi"));
    } catch (const InputError& e) {
      throw UsageError(e.what());
    }
  }
  how.han = a.flag("han");
  how.railcoll = a.flag("railcoll");
  how.verbose = a.flag("verbose");
  if (how.han && how.railcoll) throw UsageError("give only one of --han and --railcoll (whose collectives run)");
  testbed::ClusterJob j = prepare("mpirun", a, job);
  testbed::JobOptions options = job_options(a, kDefaultTimeout);
  options.ask_for_flight_records = true;  // Open MPI's mpirun and Hydra pass SIGUSR1 on to the ranks
  std::optional<testbed::JobFlightRecords> records;
  if (how.railcoll) records.emplace();
  testbed::JobResult r = testbed::run_cluster_mpirun(j, how, options);
  if (r.exit_status != 0) {
    // The launcher calls mpirun "rank 0"; say "mpirun exited with status 1".
    std::string why = r.failure.rfind("rank 0 ", 0) == 0 ? r.failure.substr(7) : r.failure;
    std::cerr << "railcoll cluster mpirun: the MPI launcher failed: " << why << "\n";
  }
  if (records) report_records("cluster mpirun", r, *records, j.ranks());
  return r.exit_status;
}

// A torch.distributed program across the nodes: one torchrun agent per node
// (docs/torch.md). The agents are the job's "ranks" for the launcher: when one
// fails, the others are ended.
int cluster_torchrun(const std::vector<std::string>& argv) {
  std::set<std::string> valued = {"nproc-per-node", "nodes", "rails", "torchrun"};
  valued.insert(kJobValued.begin(), kJobValued.end());
  auto [opts, script] = split_job(argv, valued);
  Args a(opts, kJobFlags, valued);
  if (script.empty()) throw UsageError("give the script to run after --, e.g. railcoll cluster torchrun -- train.py");
  std::vector<std::string> job = {a.str("torchrun", "torchrun")};
  const int ppn = static_cast<int>(a.integer("nproc-per-node", 0, 1, cl::kMaxPpn));
  const int nodes = static_cast<int>(a.integer("nodes", 0, 1, cl::kMaxNodes));
  testbed::ClusterJobRequest req;
  req.program = job;
  req.rails = static_cast<int>(a.integer("rails", 0, 1, cl::kMaxRails));
  no_positional(a);
  const testbed::JobOptions options = job_options(a, kDefaultTimeout);
  if (!need_root("torchrun")) return 2;
  if (nodes > 0) {
    auto cfg = cl::load_state();
    req.layout.assign(nodes, ppn > 0 ? ppn : (cfg ? cfg->ppn : 1));
  } else {
    req.ppn = ppn;
  }
  testbed::ClusterJob j = testbed::prepare_cluster_job(req);
  return report_job("cluster torchrun", testbed::run_job(testbed::cluster_torchrun_agents(j, j.program[0], script),
                                                         options));
}

}  // namespace

int cmd_cluster(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << verb_usage("cluster");
    return args.empty() ? 2 : 0;
  }
  const std::string verb = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (verb == "up") return cluster_up(rest);
    if (verb == "status") return cluster_status(rest);
    if (verb == "down") return cluster_down(rest);
    if (verb == "ceiling") return cluster_ceiling(rest);
    if (verb == "run") return cluster_run(rest);
    if (verb == "mpirun") return cluster_mpirun(rest);
    if (verb == "torchrun") return cluster_torchrun(rest);
    if (verb == "slurm") return cluster_slurm(rest);
  } catch (const UsageError& e) {
    return fail(verb, e.what(), 2);
  } catch (const HelpRequested&) {
    std::cout << verb_usage("cluster");
    return 0;
  } catch (const InputError& e) {
    return fail(verb, e.what(), 2);
  } catch (const cl::ClusterInputError& e) {
    return fail(verb, e.what(), 2);
  } catch (const cl::CommandError& e) {
    return fail(verb, e.what(), 1);
  }
  throw UsageError("unknown verb '" + verb +
                   "' (up, status, down, ceiling, run, mpirun, torchrun, slurm; railcoll cluster --help)");
}

}  // namespace railcoll::cli
