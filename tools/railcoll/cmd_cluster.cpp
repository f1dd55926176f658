// railcoll cluster up|status|down|run|mpirun: the emulated multi-rail cluster
// (docs/cluster.md). Exit status: 0 ok, 1 failed (a command, a check, a
// job), 2 bad usage or wrong state, 3 (status only) no cluster; run and
// mpirun exit with the job's status.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <set>

#include "args.hpp"
#include "cluster/cluster.hpp"
#include "commands.hpp"
#include "launch/job.hpp"

namespace railcoll::cli {
namespace {

namespace cl = railcoll::cluster;

const char* kClusterUsage =
    "usage: railcoll cluster <verb> [options]\n"
    "\n"
    "  up [--nodes M] [--ppn P] [--rails K] [--rate R]\n"
    "        create M nodes (network namespaces rc-n0..) with K rails each, every\n"
    "        rail shaped to R in both directions (defaults 4, 4, 2, 1gbit; R in\n"
    "        tc syntax: 1gbit, 500mbit, 100mbps). Needs root.\n"
    "  status                             the configuration and each node's health\n"
    "                                     (exit 0 healthy, 1 partly there, 3 none)\n"
    "  down                               remove everything (also a half-made cluster)\n"
    "  run [--ppn P | --layout 2,3,1] [--rails K] [--timeout S] -- PROG ARGS...\n"
    "        run a railcoll job: node-major ranks, RAILCOLL_* environment\n"
    "  mpirun [--ppn P] [--rails K] [--han] [--timeout S] [--verbose] -- PROG ARGS...\n"
    "        run an MPI program with Open MPI's mpirun across the nodes (baseline)\n"
    "\n"
    "--timeout is in seconds (default 600, 0 = none). Addresses: rail r of node i\n"
    "is 198.18.r.(i+1)/24, the root namespace has 198.18.r.254 on bridge rcbr<r>.\n";

constexpr long kDefaultTimeout = 600;
constexpr long kMaxTimeout = 7 * 24 * 3600;

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

int cluster_up(const std::vector<std::string>& argv) {
  Args a(argv, {}, {"nodes", "ppn", "rails", "rate"});
  no_positional(a);
  cl::Config c;
  c.nodes = static_cast<int>(a.integer("nodes", 4, 1, cl::kMaxNodes));
  c.ppn = static_cast<int>(a.integer("ppn", 4, 1, cl::kMaxPpn));
  c.rails = static_cast<int>(a.integer("rails", 2, 1, cl::kMaxRails));
  c.rate = a.str("rate", "1gbit");
  try {
    c.rate_bps = cl::parse_rate(c.rate);
  } catch (const cl::ClusterInputError& e) {
    throw UsageError(e.what());
  }
  cl::choose_shaping(c);
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
  std::cout << "cluster up: " << plural(c.nodes, "node") << " (rc-n0..rc-n" << c.nodes - 1 << "), "
            << plural(c.ppn, "rank") << " per node, " << plural(c.rails, "rail") << " (" << cl::rail_subnets(c.rails)
            << ") at " << c.rate << " each way\n";
  return 0;
}

// ------------------------------------------------------------------ status

void print_config(const cl::Config& c) {
  std::cout << "cluster: " << plural(c.nodes, "node") << ", " << plural(c.ppn, "rank") << " per node, "
            << plural(c.rails, "rail") << "\n"
            << "rate:    " << c.rate << " (" << c.rate_bps << " bit/s) per rail and direction; tbf burst "
            << c.burst_bytes << " B, queue " << c.latency_ms << " ms\n"
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

// ------------------------------------------------------------------ down

int cluster_down(const std::vector<std::string>& argv) {
  Args a(argv, {}, {});
  no_positional(a);
  if (!need_root("down")) return 2;
  cl::StateLock lock;
  cl::Present before = cl::scan();
  int stopped = 0;
  try {
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
    std::string name = argv[i].substr(2);
    if (valued.count(name)) ++i;  // skip its value
  }
  auto cut = argv.begin() + std::min(i, argv.size());
  return {{argv.begin(), cut}, {cut, argv.end()}};
}

struct JobSetup {
  cl::Config cfg;
  std::vector<std::string> program;  // absolute PROG, then ARGS
  int rails = 0;
  double timeout = 0;
};

// Reads the cluster and the options every job verb shares; returns the exit
// status to stop with, or -1 to go on.
int job_setup(const std::string& verb, const Args& a, const std::vector<std::string>& job, JobSetup& s) {
  if (job.empty()) throw UsageError("give the program to run after --, e.g. railcoll cluster " + verb + " -- hostname");
  no_positional(a);
  s.timeout = static_cast<double>(a.integer("timeout", kDefaultTimeout, 0, kMaxTimeout));
  long rails_opt = a.integer("rails", 0, 1, cl::kMaxRails);
  if (!need_root(verb)) return 2;
  std::optional<cl::Config> cfg;
  try {
    cfg = cl::load_state();
  } catch (const cl::ClusterInputError& e) {
    return fail(verb, e.what(), 2);
  }
  if (!cfg) return fail(verb, "no cluster is up (`railcoll cluster up` creates one)", 2);
  s.cfg = *cfg;
  // A missing node would fail every one of its ranks with a less clear message.
  cl::Present present = cl::scan();
  const auto& ns = present.namespaces;
  for (int i = 0; i < s.cfg.nodes; ++i)
    if (std::find(ns.begin(), ns.end(), cl::node_name(i)) == ns.end())
      return fail(verb, "the cluster is damaged: namespace " + cl::node_name(i) + " is missing (see status)", 1);
  s.rails = rails_opt ? static_cast<int>(rails_opt) : s.cfg.rails;
  if (s.rails > s.cfg.rails)
    throw UsageError("--rails " + std::to_string(s.rails) + " but the cluster has only " +
                     std::to_string(s.cfg.rails) + " rails");
  // Resolved here, with the launcher's PATH: inside the node the program is
  // started by an exec chain that must not depend on where it looks.
  std::string prog = cl::resolve_program(job[0]);
  if (prog.empty()) return fail(verb, "cannot find an executable '" + job[0] + "' (PATH or path)", 2);
  s.program = job;
  s.program[0] = prog;
  return -1;
}

// Ranks per node from --ppn or --layout.
std::vector<int> layout_of(const Args& a, const cl::Config& cfg) {
  if (a.has("ppn") && a.has("layout")) throw UsageError("give only one of --ppn and --layout");
  if (!a.has("layout")) return std::vector<int>(cfg.nodes, static_cast<int>(a.integer("ppn", cfg.ppn, 1, cl::kMaxPpn)));
  std::vector<int> layout = parse_int_list(a.str("layout"), "--layout");
  if (layout.empty()) throw UsageError("--layout expects ranks per node, like 2,3,1");
  if (static_cast<int>(layout.size()) > cfg.nodes)
    throw UsageError("--layout names " + std::to_string(layout.size()) + " nodes but the cluster has " +
                     std::to_string(cfg.nodes));
  for (int n : layout)
    if (n < 1 || n > cl::kMaxPpn)
      throw UsageError("--layout entries must be between 1 and " + std::to_string(cl::kMaxPpn) + ", got " +
                       std::to_string(n));
  return layout;
}

int store_port() {
  // Rank 0 binds 198.18.0.1 inside rc-n0, a port space of its own; this only
  // checks the number in the root namespace, which is as good a guess as any.
  int port = launch::free_port("127.0.0.1");
  if (port > 0) return port;
  std::random_device rd;
  return 20000 + static_cast<int>(rd() % 12000);
}

int cluster_run(const std::vector<std::string>& argv) {
  const std::set<std::string> valued = {"ppn", "layout", "rails", "timeout"};
  auto [opts, job] = split_job(argv, valued);
  Args a(opts, {}, valued);
  JobSetup s;
  if (int st = job_setup("run", a, job, s); st >= 0) return st;
  std::vector<int> layout = layout_of(a, s.cfg);

  int size = 0;
  for (int n : layout) size += n;
  const std::string store = "198.18.0.1:" + std::to_string(store_port());
  const std::string job_id = launch::new_job_id(), job_key = launch::new_job_key(), rails = cl::rail_subnets(s.rails);
  std::vector<launch::RankProcess> ranks;
  for (int node = 0, rank = 0; node < static_cast<int>(layout.size()); ++node) {
    for (int local = 0; local < layout[node]; ++local, ++rank) {
      launch::RankProcess p;
      p.argv = cl::node_exec_argv(node, s.program);
      p.env = launch::rank_env(rank, size, local, layout[node], node, store, job_id, job_key, rails);
      p.env["RAILCOLL_CLUSTER"] = "1";
      p.env["RAILCOLL_RAIL_RATE"] = std::to_string(s.cfg.rate_bps);
      ranks.push_back(std::move(p));
    }
  }
  launch::JobResult r = launch::run_job(ranks, 10, s.timeout);
  if (r.exit_status != 0) std::cerr << "railcoll cluster run: " << r.failure << "\n";
  return r.exit_status;
}

// A private directory for the rsh agent, removed when the job is over.
class AgentDir {
 public:
  AgentDir() {
    mkdir(cl::state_dir().c_str(), 0755);
    std::string tmpl = cl::state_dir() + "/mpirun.XXXXXX";
    if (!mkdtemp(tmpl.data()))
      throw cl::CommandError("cannot create a directory in " + cl::state_dir() + ": " + strerror(errno));
    dir_ = tmpl;
    agent_ = dir_ + "/railcoll-rsh-agent";
    std::ofstream f(agent_);
    f << cl::rsh_agent_script();
    f.close();
    if (!f || chmod(agent_.c_str(), 0755) != 0)
      throw cl::CommandError("cannot write " + agent_ + ": " + strerror(errno));
  }
  ~AgentDir() {
    unlink(agent_.c_str());
    rmdir(dir_.c_str());
  }
  const std::string& agent() const { return agent_; }

 private:
  std::string dir_, agent_;
};

std::vector<std::string> mpirun_argv(const JobSetup& s, int ppn, bool han, const std::string& agent) {
  std::string hosts;
  for (int i = 0; i < s.cfg.nodes; ++i) hosts += (i ? "," : "") + cl::node_name(i) + ":" + std::to_string(ppn);
  std::vector<std::string> argv = {
      "mpirun", "-np", std::to_string(s.cfg.nodes * ppn), "-H", hosts,
      // orted is started in each node by the agent, directly (no ssh tree).
      "--mca", "plm_rsh_agent", agent, "--mca", "plm_rsh_no_tree_spawn", "1",
      // orted reaches mpirun (root namespace) on rail 0's bridge address.
      "--mca", "oob_tcp_if_include", cl::rail_subnet(0),
      // MPI traffic: shared memory inside a node, TCP over the first K rails.
      "--mca", "btl", "tcp,vader,self", "--mca", "btl_tcp_if_include", cl::rail_subnets(s.rails),
      // Many ranks on 2 cores: yield when idle, do not pin every node's
      // ranks onto the same cores.
      "--mca", "mpi_yield_when_idle", "1", "--bind-to", "none",
      "-x", "RAILCOLL_CLUSTER", "-x", "RAILCOLL_RAIL_RATE", "-x", "RAILCOLL_RAILS"};
  if (han) argv.insert(argv.end(), {"--mca", "coll_han_priority", "100"});
  argv.insert(argv.end(), s.program.begin(), s.program.end());
  return argv;
}

int cluster_mpirun(const std::vector<std::string>& argv) {
  const std::set<std::string> valued = {"ppn", "rails", "timeout"};
  auto [opts, job] = split_job(argv, valued);
  Args a(opts, {"han", "verbose"}, valued);
  JobSetup s;
  if (int st = job_setup("mpirun", a, job, s); st >= 0) return st;
  int ppn = static_cast<int>(a.integer("ppn", s.cfg.ppn, 1, cl::kMaxPpn));
  std::string mpirun = cl::resolve_program("mpirun");
  if (mpirun.empty()) return fail("mpirun", "cannot find Open MPI's mpirun in PATH", 2);

  AgentDir dir;
  launch::RankProcess p;
  p.argv = mpirun_argv(s, ppn, a.flag("han"), dir.agent());
  p.argv[0] = mpirun;
  // Open MPI refuses root unless both are set; they reach orted and the ranks too.
  p.env = {{"OMPI_ALLOW_RUN_AS_ROOT", "1"},
           {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
           {"RAILCOLL_CLUSTER", "1"},
           {"RAILCOLL_RAIL_RATE", std::to_string(s.cfg.rate_bps)},
           {"RAILCOLL_RAILS", cl::rail_subnets(s.rails)}};
  if (a.flag("verbose")) {
    std::cerr << "railcoll cluster mpirun:";
    for (auto& w : p.argv) std::cerr << " " << w;
    std::cerr << "\n";
  }
  launch::JobResult r = launch::run_job({p}, 10, s.timeout);
  if (r.exit_status != 0) {
    // The launcher calls mpirun "rank 0"; say "mpirun exited with status 1".
    std::string why = r.failure.rfind("rank 0 ", 0) == 0 ? r.failure.substr(7) : r.failure;
    std::cerr << "railcoll cluster mpirun: mpirun failed: " << why << "\n";
  }
  return r.exit_status;
}

}  // namespace

int cmd_cluster(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << kClusterUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string verb = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (verb == "up") return cluster_up(rest);
    if (verb == "status") return cluster_status(rest);
    if (verb == "down") return cluster_down(rest);
    if (verb == "run") return cluster_run(rest);
    if (verb == "mpirun") return cluster_mpirun(rest);
  } catch (const UsageError& e) {
    return fail(verb, e.what(), 2);
  } catch (const cl::ClusterInputError& e) {
    return fail(verb, e.what(), 2);
  } catch (const cl::CommandError& e) {
    return fail(verb, e.what(), 1);
  }
  throw UsageError("unknown verb '" + verb + "' (up, status, down, run, mpirun; railcoll cluster --help)");
}

}  // namespace railcoll::cli
