#include "bench/driver.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "bench/bounds.hpp"
#include "bench/plot.hpp"
#include "bench/records.hpp"
#include "bench/report.hpp"
#include "bench/work_rates.hpp"
#include "core/errors.hpp"
#include "testbed/cluster_job.hpp"
#include "testbed/spawn.hpp"
#include "testbed/where.hpp"

namespace railcoll::bench {

namespace cl = railcoll::cluster;
using testbed::JobOptions;
using testbed::JobResult;

const char* const kDefaultOnecclSettings = "w1,w2-mnic";

const std::vector<OnecclSetting>& oneccl_settings() {
  // Every one over libfabric's tcp provider (ATL ofi): the ATL mpi transport
  // needs Intel MPI in the process, and the side channel here is Open MPI.
  static const std::vector<OnecclSetting> settings = {
      {"w1", "ATL ofi/tcp on the first rail, 1 worker thread that sleeps when idle",
       {{"CCL_ATL_TRANSPORT", "ofi"}, {"FI_PROVIDER", "tcp"}, {"FI_TCP_IFACE", "RAIL0"}, {"CCL_WORKER_COUNT", "1"},
        {"CCL_WORKER_WAIT", "1"}, {"CCL_YIELD", "sched_yield"}}},
      {"w2-mnic", "ATL ofi/tcp, 2 worker threads, one rail each (CCL_MNIC=global over the rails)",
       {{"CCL_ATL_TRANSPORT", "ofi"}, {"FI_PROVIDER", "tcp"}, {"CCL_WORKER_COUNT", "2"}, {"CCL_WORKER_WAIT", "1"},
        {"CCL_YIELD", "sched_yield"}, {"CCL_MNIC", "global"}, {"CCL_MNIC_NAME", "RAILS"}}},
      {"w1-spin", "ATL ofi/tcp on the first rail, 1 worker thread spinning (oneCCL's default wait)",
       {{"CCL_ATL_TRANSPORT", "ofi"}, {"FI_PROVIDER", "tcp"}, {"FI_TCP_IFACE", "RAIL0"}, {"CCL_WORKER_COUNT", "1"}}},
      {"w1-shm", "ATL ofi/tcp on the first rail between nodes and libfabric's shm inside one (CCL_ATL_SHM=1), "
                 "1 sleeping worker",
       {{"CCL_ATL_TRANSPORT", "ofi"}, {"FI_PROVIDER", "tcp"}, {"FI_TCP_IFACE", "RAIL0"}, {"CCL_ATL_SHM", "1"},
        {"CCL_WORKER_COUNT", "1"}, {"CCL_WORKER_WAIT", "1"}, {"CCL_YIELD", "sched_yield"}}},
  };
  return settings;
}

std::string Placement::text() const {
  const int n = testbed::layout_ranks(layout), nodes = static_cast<int>(layout.size());
  std::ostringstream o;
  o << n << " rank" << (n == 1 ? "" : "s") << " on " << nodes << (cluster ? " node" : " pretend node")
    << (nodes == 1 ? "" : "s") << " (" << testbed::layout_text(layout) << "), ";
  if (rails > 0) o << rails << (cluster ? " rail" : " loopback rail") << (rails == 1 ? "" : "s");
  else o << "every rail";
  return o.str();
}

Placement choose_placement(const PlacementRequest& req) {
  if (!req.layout.empty() && (req.n > 0 || req.ppn > 0))
    throw InputError("give either --layout or -n/--ppn, not both");
  Placement p;
  p.cluster = testbed::cluster_unless_local(req.local);
  p.rails = req.rails;
  if (!req.layout.empty()) {
    p.layout = req.layout;
  } else if (p.cluster) {
    cl::Config cfg = *cl::load_state();
    int ppn = req.ppn > 0 ? req.ppn : cfg.ppn;
    p.layout = req.n > 0 ? testbed::layout_of(req.n, ppn) : std::vector<int>(cfg.nodes, ppn);
    if (static_cast<int>(p.layout.size()) > cfg.nodes)
      throw InputError(std::to_string(req.n) + " ranks at " + std::to_string(ppn) + " per node need " +
                       std::to_string(p.layout.size()) + " nodes (" + testbed::layout_text(p.layout) +
                       ") but the cluster has " + std::to_string(cfg.nodes) + "; give --ppn or --layout");
  } else {
    if (req.n > 0) p.layout = testbed::layout_of(req.n, req.ppn > 0 ? req.ppn : req.n);
    else p.layout.assign(2, req.ppn > 0 ? req.ppn : 4);
    if (p.rails == 0) p.rails = 2;
  }
  return p;
}

namespace {

// The job for `program` at `where`, started with `options`.
JobResult run_at(const Placement& where, const std::vector<std::string>& program, const JobOptions& options) {
  if (where.cluster) {
    testbed::ClusterJobRequest req;
    req.program = program;
    req.layout = where.layout;
    req.rails = where.rails;
    return testbed::run_cluster_job(testbed::prepare_cluster_job(req), options);
  }
  testbed::LocalJob job;
  job.layout = where.layout;
  job.pretend_nodes = true;
  job.rails = where.rails;
  job.program = program;
  return testbed::run_local_job(job, options);
}

// 2.5 -> "2.5", 0.36 -> "0.36": a rate for a title.
std::string number_text(double x) {
  std::ostringstream o;
  o << std::setprecision(3) << x;
  return o.str();
}

std::string temp_file(const char* prefix) {
  std::string tmpl = std::string("/tmp/") + prefix + "-XXXXXX";
  int fd = mkstemp(tmpl.data());
  if (fd < 0) throw RuntimeError(Status::Internal, "cannot create a temporary file in /tmp");
  close(fd);
  return tmpl;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void report_failure(const std::string& what, const JobResult& r) {
  std::cerr << "railcoll bench: " << what << " failed: " << r.failure << "\n" << r.rank_report();
}

}  // namespace

JobResult run_workers(const Placement& where, std::vector<std::string> worker, std::vector<std::string>* records,
                      const JobOptions& options) {
  const std::string path = temp_file("railcoll-records");
  worker.insert(worker.end(), {"--records", path});
  std::cout << std::flush;  // the ranks write to the same stdout
  JobResult r;
  try {
    r = run_at(where, worker, options);
  } catch (...) {
    unlink(path.c_str());
    throw;
  }
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) records->push_back(line);
  unlink(path.c_str());
  return r;
}

std::vector<std::string> worker_command(const BenchPlan& plan) {
  std::vector<std::string> w = {testbed::self_exe(), "bench", collective_name(plan.collective), "--worker",
                                "--algo", plan.algo, "-m", std::to_string(plan.min) + ":" + std::to_string(plan.max),
                                "-i", std::to_string(plan.iters), "-x", std::to_string(plan.warmup)};
  if (plan.factor != 2) w.insert(w.end(), {"--factor", std::to_string(plan.factor)});
  if (plan.full) w.push_back("-f");
  if (plan.validate) w.push_back("-c");
  if (plan.idle_us > 0) w.insert(w.end(), {"--idle-us", std::to_string(plan.idle_us)});
  if (plan.skew_us > 0) w.insert(w.end(), {"--skew", std::to_string(plan.skew_us)});
  if (!plan.timeline.empty()) w.insert(w.end(), {"--timeline", plan.timeline});
  if (plan.form != CallForm::Blocking) w.push_back(std::string("--") + call_form_name(plan.form));
  if (plan.rounds > 1) w.insert(w.end(), {"--rounds", std::to_string(plan.rounds), "--raw"});
  return w;
}

namespace {

std::vector<BenchRecord> records_of(const std::vector<std::string>& lines, BenchContext* ctx) {
  std::string text;
  for (auto& l : lines) text += l + "\n";
  return parse_records(text, ctx, "the workers' records");
}

// Runs the workers again while `railcoll traffic` loads every rail from every
// node (seed 004 §5); the traffic job is stopped however the run ends.
int run_under_background(const BenchPlan& plan, const JobOptions& jo, std::vector<BenchRecord>* loaded) {
  const std::string self = testbed::self_exe(), pattern = background_name(plan.background);
  testbed::SpawnOptions so;
  so.argv = {self, "cluster", "run", "--ppn", "1"};
  if (plan.where.rails > 0) so.argv.insert(so.argv.end(), {"--rails", std::to_string(plan.where.rails)});
  so.argv.insert(so.argv.end(), {"--timeout", "0", "--", self, "traffic", "--pattern", pattern, "--seconds", "3600"});
  so.in = testbed::Stream::Null;
  so.out = testbed::Stream::File;
  so.out_file = temp_file("railcoll-traffic");
  so.err_to_out = true;
  std::cout << "\n# the same run under " << pattern << " background traffic on every rail\n" << std::flush;
  testbed::Process traffic(so);
  auto stop_traffic = [&] {
    traffic.signal_group(SIGTERM);  // the launcher forwards it to the generators
    if (!traffic.wait_until(testbed::monotonic_seconds() + 10)) {
      traffic.signal_group(SIGKILL);
      traffic.wait_until(0);
    }
  };
  // The generators connect and ramp up; a loaded run without load would mislead.
  if (traffic.wait_until(testbed::monotonic_seconds() + 2)) {
    std::cerr << "railcoll bench: the background traffic stopped before the measurement ("
              << traffic.status().text() << "); its output:\n"
              << file_text(so.out_file);
    unlink(so.out_file.c_str());
    return 1;
  }
  std::vector<std::string> lines;
  JobResult r;
  try {
    r = run_workers(plan.where, worker_command(plan), &lines, jo);
  } catch (...) {
    stop_traffic();
    unlink(so.out_file.c_str());
    throw;
  }
  stop_traffic();
  std::istringstream moved(file_text(so.out_file));
  for (std::string line; std::getline(moved, line);)  // "railcoll traffic: rank r (...) sent N MiB"
    if (line.find(" sent ") != std::string::npos) std::cout << "# " << line << "\n";
  unlink(so.out_file.c_str());
  if (r.exit_status != 0) {
    report_failure("the benchmark ranks under background traffic", r);
    return 1;
  }
  BenchContext ignored;
  *loaded = records_of(lines, &ignored);
  for (auto& rec : *loaded) rec.background = pattern;
  return 0;
}

// A peer's row: one program (railcoll-mpi-bench, railcoll-oneccl-bench) on the
// same ranks as the workers. railcoll-mpi-bench runs under Open MPI's own
// collectives (tuned, HAN) and under railcoll's, preloaded (docs/mpi.md).
struct PeerRow {
  std::string label;    // the records' "algorithm"
  std::string program;  // beside this program
  bool han = false, railcoll = false;
  std::map<std::string, std::string> env;  // the library's settings (oneCCL's)
  std::string what;     // for the heading
};

// The rows of the plan's peers, for its collective; rows that cannot run it are said and left out.
std::vector<PeerRow> peer_rows(const BenchPlan& plan, int rails) {
  std::vector<PeerRow> rows;
  for (const std::string& peer : plan.peers) {
    if (peer == "mpi") {
      rows.push_back({"mpi:tuned", "railcoll-mpi-bench", false, false, {}, "Open MPI mpi:tuned"});
      rows.push_back({"mpi:han", "railcoll-mpi-bench", true, false, {}, "Open MPI mpi:han"});
      continue;
    }
    if (peer == "mpi-layer") {
      rows.push_back({"mpi:railcoll", "railcoll-mpi-bench", false, true, {},
                      "railcoll's collectives through the same MPI program, mpi:railcoll"});
      continue;
    }
    // oneCCL: one row per setting tried.
    const Collective c = plan.collective;
    if (c == Collective::Gather || c == Collective::Gatherv || c == Collective::Scatter || c == Collective::Scatterv) {
      std::cout << "\n# oneCCL has no " << collective_name(c) << ": no oneccl row\n";
      continue;
    }
    if (plan.form == CallForm::Persistent) continue;
    std::string names = plan.oneccl_settings.empty() ? kDefaultOnecclSettings : "";
    for (auto& n : plan.oneccl_settings) names += (names.empty() ? "" : ",") + n;
    std::string rail_names;  // the cluster's nodes have rail0, rail1, ...; local processes loopback only
    for (int r = 0; r < std::max(1, rails); ++r) rail_names += (r ? ",rail" : "rail") + std::to_string(r);
    const std::string rail0 = plan.where.cluster ? "rail0" : "lo";
    if (!plan.where.cluster) rail_names = "lo";
    for (size_t at = 0; at <= names.size();) {
      size_t comma = std::min(names.find(',', at), names.size());
      const std::string name = names.substr(at, comma - at);
      at = comma + 1;
      auto it = std::find_if(oneccl_settings().begin(), oneccl_settings().end(),
                             [&](const OnecclSetting& s) { return s.name == name; });
      if (it == oneccl_settings().end()) throw InputError("unknown oneCCL setting '" + name + "'");
      PeerRow row{"oneccl:" + name, "railcoll-oneccl-bench", false, false, {}, ""};
      // Open MPI is only the side channel: ob1 over TCP, and not its libfabric
      // component (oneCCL brings a libfabric of its own into the process).
      row.env = {{"OMPI_MCA_pml", "ob1"}, {"OMPI_MCA_mtl", "^ofi"}, {"OMPI_MCA_btl", "tcp,vader,self"},
                 // oneCCL's key-value store on a rail: by default it may take loopback, which other nodes cannot reach.
                 {"CCL_KVS_IFACE", rail0}};
      for (auto [var, value] : it->env) {
        if (value == "RAILS") value = rail_names;
        if (value == "RAIL0") value = rail0;
        row.env[var] = value;
      }
      row.what = "Intel oneCCL, setting " + name + " (" + it->meaning + ")";
      rows.push_back(row);
    }
  }
  return rows;
}

// Locally railcoll's ranks live in pretend nodes of the plan's layout, as the
// workers do: a wrapper gives each MPI rank its node by its world rank.
std::vector<std::string> pretend_node_wrapper(const std::vector<int>& layout) {
  std::string sizes;
  for (int n : layout) sizes += " " + std::to_string(n);
  return {"/bin/sh", "-c",
          "r=$OMPI_COMM_WORLD_RANK; n=0; for s in" + sizes +
              "; do [ $r -lt $s ] && break; r=$((r - s)); n=$((n + 1)); done; RAILCOLL_NODE=$n exec \"$0\" \"$@\""};
}

void print_peer_table(const BenchPlan& plan, const BenchContext& ctx, const std::string& label,
                      const std::vector<BenchRecord>& recs) {
  if (plan.form != CallForm::Blocking) {
    print_overlap_header(std::cout, label, ctx, call_form_name(plan.form), plan.validate);
    for (auto& r : recs) print_overlap_row(std::cout, r);
  } else {
    print_table_header(std::cout, label, ctx, plan.full, plan.validate);
    for (auto& r : recs) print_table_row(std::cout, r, plan.full);
  }
}

// The peer's program on the same ranks as the workers: its records (none when
// it failed, which is said). With `rounds` > 1 it times its share of the calls
// and keeps every call's times for pooling; its table waits for the pool.
std::vector<BenchRecord> run_peer(const BenchPlan& plan, const BenchContext& ctx, const PeerRow& row, int rounds) {
  const std::string label = row.label;
  std::string self = testbed::self_exe();
  std::string program = self.substr(0, self.rfind('/')) + "/" + row.program;
  const char* name = collective_name(plan.collective);
  std::vector<std::string> args = {program, "--coll", name, "--label", label, "--rails", std::to_string(ctx.rails),
                                   "-i", std::to_string(plan.iters), "-x", std::to_string(plan.warmup)};
  if (!traits(plan.collective).moves_data) args.push_back("--samples");
  else args.insert(args.end(), {"-m", std::to_string(std::max<uint64_t>(plan.min, 1)) + ":" + std::to_string(plan.max)});
  if (plan.validate) args.push_back("-c");
  if (plan.idle_us > 0 && traits(plan.collective).moves_data)
    args.insert(args.end(), {"--idle-us", std::to_string(plan.idle_us)});
  if (plan.skew_us > 0) args.insert(args.end(), {"--skew", std::to_string(plan.skew_us)});
  if (plan.form == CallForm::Nonblocking) args.push_back("--nonblocking");  // Open MPI's: libnbc
  if (rounds > 1) args.insert(args.end(), {"--rounds", std::to_string(rounds), "--raw"});
  if (plan.factor != 2) args.insert(args.end(), {"--factor", std::to_string(plan.factor)});
  if (access(program.c_str(), X_OK) != 0) {
    std::cerr << "railcoll bench: no " << row.program << " beside this program"
              << (row.program == "railcoll-oneccl-bench" ? " (built when scripts/install-deps.sh has installed oneCCL)"
                                                         : " (built when an MPI library is installed)")
              << ": no " << label << " row\n";
    return {};
  }
  if (rounds == 1)
    std::cout << "\n# " << row.what
              << (plan.where.cluster        ? " on the same emulated cluster"
                  : row.railcoll            ? " on this machine, in the workers' pretend nodes"
                                            : " on this machine (one node)")
              << "\n" << std::flush;
  std::string out;
  int status = 0;
  std::string failure;
  try {
    if (plan.where.cluster) {
      testbed::ClusterJobRequest req;
      req.program = args;
      req.layout = plan.where.layout;
      req.rails = plan.where.rails;
      testbed::MpirunOptions how;
      how.mpi = testbed::MpiFlavor::OpenMpi;  // both programs are built with Open MPI
      how.han = row.han;
      how.railcoll = row.railcoll;
      how.env = row.env;
      JobOptions jo;
      jo.timeout_seconds = plan.timeout;
      jo.on_line = [&](int, bool is_stderr, const std::string& line) {
        if (is_stderr) std::cerr << line << std::flush;
        else out += line;
      };
      JobResult r = testbed::run_cluster_mpirun(testbed::prepare_cluster_job(req), how, jo);
      status = r.exit_status;
      failure = r.failure;
    } else {
      std::vector<std::string> cmd = {"mpirun", "--allow-run-as-root", "--oversubscribe", "-n",
                                      std::to_string(testbed::layout_ranks(plan.where.layout)), "--mca", "btl",
                                      "tcp,vader,self", "--mca", "mpi_yield_when_idle", "1"};
      if (row.han) cmd.insert(cmd.end(), {"--mca", "coll_han_priority", "100"});
      for (auto& [var, value] : row.env) cmd.insert(cmd.end(), {"-x", var + "=" + value});
      testbed::RunOptions ro;
      if (row.railcoll) {
        ro.env = testbed::railcoll_mpi_env();
        std::string rails;
        for (int r = 0; r < std::max(plan.where.rails, 1); ++r) rails += (r ? ",127.0.0." : "127.0.0.") + std::to_string(r + 1);
        ro.env["RAILCOLL_RAILS"] = rails;
        cmd.insert(cmd.end(), {"-x", "LD_PRELOAD=" + testbed::mpi_layer_library(testbed::MpiFlavor::OpenMpi)});
        for (auto& [var, value] : ro.env) cmd.insert(cmd.end(), {"-x", var});
        auto wrapper = pretend_node_wrapper(plan.where.layout);
        cmd.insert(cmd.end(), wrapper.begin(), wrapper.end());
      }
      cmd.insert(cmd.end(), args.begin(), args.end());
      ro.timeout_s = plan.timeout;
      ro.capture_err = false;
      testbed::RunResult r = testbed::run(cmd, ro);
      status = r.code();
      out = r.out;
      failure = r.status.text();
    }
  } catch (const InputError& e) {  // checked before anything ran (require_mpi_peer), so only a vanished one
    status = 2;
    failure = e.what();
  }
  if (status != 0) {
    std::cerr << "railcoll bench: " << label << " failed (" << failure << "); its output:\n" << out;
    return {};
  }
  std::vector<BenchRecord> recs = parse_records(out, nullptr, label + " output");
  if (recs.empty()) {  // a row with no figures is a failure, not an empty table
    std::cerr << "railcoll bench: " << label << " exited 0 but reported nothing; its output:\n" << out;
    return {};
  }
  if (rounds == 1) {
    for (auto& r : recs) set_bandwidths(&r, ctx);
    print_peer_table(plan, ctx, label, recs);
  }
  return recs;
}

// The best of oneCCL's settings at each size, as the row "oneccl" (its
// setting in "chosen"): what a user who tuned oneCCL for this cluster gets.
std::vector<BenchRecord> best_oneccl(const std::vector<BenchRecord>& recs) {
  std::map<uint64_t, const BenchRecord*> best;
  for (auto& r : recs)
    if (r.background.empty() && r.algorithm.rfind("oneccl:", 0) == 0 &&
        (!best.count(r.bytes) || judged_us(r) < judged_us(*best[r.bytes])))
      best[r.bytes] = &r;
  std::vector<BenchRecord> rows;
  for (auto& [bytes, r] : best) {
    BenchRecord b = *r;
    b.chosen = r->algorithm.substr(7);
    b.algorithm = "oneccl";
    rows.push_back(b);
  }
  return rows;
}

// What reaching railcoll through MPI costs: mpi:railcoll against railcoll's own
// benchmark (auto) at every size, by the summary's metric.
void print_layer_cost(std::ostream& o, const std::vector<BenchRecord>& recs, const BenchContext& c) {
  const SummaryMetric m = summary_metric(c.collective, recs);
  std::map<uint64_t, const BenchRecord*> own, through;
  for (auto& r : recs) {
    if (!r.background.empty()) continue;
    if (r.algorithm == "auto") own[r.bytes] = &r;
    if (r.algorithm == "mpi:railcoll") through[r.bytes] = &r;
  }
  if (through.empty() || own.empty()) return;
  o << "\n# railcoll through MPI: mpi:railcoll (railcoll-mpi-bench, librailcoll_mpi.so preloaded) against auto "
       "(railcoll's own bench); "
    << m.name() << " in us\n# Size          auto  mpi:railcoll  mpi:railcoll/auto\n";
  for (auto& [bytes, t] : through) {
    auto a = own.find(bytes);
    if (a == own.end()) continue;
    o << std::left << std::setw(9) << bytes << std::right << std::fixed << std::setprecision(1) << std::setw(10)
      << m.p50(*a->second) << std::setw(14) << m.p50(*t) << std::setw(18) << std::setprecision(3)
      << (m.p50(*a->second) > 0 ? m.p50(*t) / m.p50(*a->second) : 0) << "\n";
  }
  o << std::flush;
}

// --transport both: each algorithm and size on the libfabric transport against
// the native one, by the summary's metric, with the rail bound's efficiency.
void print_transport_ratio(std::ostream& o, const std::vector<BenchRecord>& recs, const BenchContext& c) {
  const SummaryMetric m = summary_metric(c.collective, recs);
  std::map<std::pair<std::string, uint64_t>, std::map<std::string, const BenchRecord*>> by;
  std::string provider;
  for (auto& r : recs) {
    if (!r.background.empty() || r.transport.empty()) continue;
    by[{r.algorithm, r.bytes}][r.transport] = &r;
    if (!r.provider.empty()) provider = r.provider;
  }
  o << "\n# ofi (libfabric, provider " << (provider.empty() ? "?" : provider) << ") against tcp (native sockets); "
    << m.name() << " in us; eff = rail bound / time\n"
    << "# algorithm                Size           tcp         ofi    ofi/tcp  eff tcp  eff ofi\n";
  for (auto& [key, t] : by) {
    auto a = t.find("tcp"), b = t.find("ofi");
    if (a == t.end() || b == t.end()) continue;
    const double x = m.p50(*a->second), y = m.p50(*b->second), bound = rail_bound_us(c, key.second);
    o << std::left << std::setw(25) << key.first << std::setw(9) << key.second << std::right << std::fixed
      << std::setprecision(1) << std::setw(12) << x << std::setw(12) << y << std::setprecision(3) << std::setw(11)
      << (x > 0 ? y / x : 0);
    if (bound > 0) o << std::setprecision(2) << std::setw(9) << bound / x << std::setw(9) << bound / y;
    o << "\n";
  }
  o << std::flush;
}

}  // namespace

// The time a shaped rail takes to refill its burst, with a quarter to spare:
// after it, every call starts from the same full bucket (docs/cluster.md).
int default_idle_us(const Placement& where) {
  if (!where.cluster) return 0;
  auto cfg = cl::load_state();
  if (!cfg || cfg->rate_bps == 0) return 0;
  return static_cast<int>(1.25 * static_cast<double>(cfg->burst_bytes) * 8e6 / static_cast<double>(cfg->rate_bps));
}

// --mpi asked for Open MPI beside railcoll: without it (mpirun, the benchmark
// binary, the interposition library) the run would measure less than asked.
void require_mpi_peer() {
  testbed::require_peer("mpirun", "Open MPI, the peer --mpi measures against",
                        "install openmpi-bin and libopenmpi-dev (scripts/install-deps.sh), or leave out --mpi");
  const std::string self = testbed::self_exe();
  testbed::require_peer(self.substr(0, self.rfind('/')) + "/railcoll-mpi-bench", "the benchmark --mpi runs",
                        "it is built when Open MPI's development files are installed (scripts/install-deps.sh)");
  testbed::mpi_layer_library(testbed::MpiFlavor::OpenMpi);  // the mpi:railcoll row's
}

int run_bench(const BenchPlan& asked) {
  BenchPlan plan = asked;
  for (const std::string& peer : plan.peers)
    if (peer == "mpi" || peer == "mpi-layer") {
      require_mpi_peer();
      break;
    }
  if (plan.background != BackgroundPattern::None && !plan.where.cluster)
    throw InputError("--background needs the emulated cluster (railcoll cluster up)");
  if (plan.idle_us < 0) plan.idle_us = default_idle_us(plan.where);
  // The overlap runs and the transports side by side run once.
  const int rounds = plan.form == CallForm::Blocking && plan.transport != "both" ? std::max(1, plan.rounds) : 1;
  plan.rounds = rounds;
  if (plan.where.cluster)
    std::cout << "railcoll bench: on the emulated cluster: " << plan.where.text() << "\n";
  else
    std::cout << "railcoll bench: local processes (--local), " << plan.where.text() << "\n";
  if (plan.idle_us > 0 && traits(plan.collective).moves_data)
    std::cout << "railcoll bench: every timed call, on both sides, starts after " << plan.idle_us
              << " us of rest (the rails' shaper refills its burst; --idle-us)\n";
  else if (traits(plan.collective).moves_data)
    std::cout << "railcoll bench: timed calls back to back, a barrier between them, on both sides (--idle-us 0)\n";
  if (plan.skew_us > 0)
    std::cout << "railcoll bench: every rank enters every call after a random 0.." << plan.skew_us
              << " us, on both sides (--skew)\n";
  const std::vector<PeerRow> rows = peer_rows(plan, plan.where.rails > 0 ? plan.where.rails
                                                    : plan.where.cluster ? cl::load_state()->rails : 2);
  if (rounds > 1 && !rows.empty())
    std::cout << "railcoll bench: like for like: " << rounds << " rounds of railcoll, then each peer ("
              << rows.size() << " rows), alternating; each round times its share of every size's calls after its "
              << "own warm-up, and the records pool the calls of every round (--rounds)\n";
  // The compute bound's rates, measured before any rank runs (bench/bounds.hpp).
  const WorkRates rates = measure_work_rates();
  std::cout << "railcoll bench: this machine: ";
  print_work_rates(std::cout, rates);
  std::cout << " (the compute bound)\n" << std::flush;
  JobOptions jo;
  jo.timeout_seconds = plan.timeout;
  BenchContext ctx;
  // Every round's records of one run (program, algorithm, size), in the order they first came.
  std::vector<std::string> order;
  std::map<std::string, std::vector<BenchRecord>> parts;
  auto keep = [&](const std::vector<BenchRecord>& recs) {
    for (auto& r : recs) {
      const std::string key = r.algorithm + "|" + r.transport + "|" + r.background + "|" + std::to_string(r.bytes);
      if (!parts.count(key)) order.push_back(key);
      parts[key].push_back(r);
    }
  };
  const std::vector<std::string> transports =
      plan.transport == "both" ? std::vector<std::string>{"tcp", "ofi"} : std::vector<std::string>{plan.transport};
  std::string failed_rows;  // a peer's row that failed fails the run, after the others are reported
  for (int round = 0; round < rounds; ++round) {
    if (rounds > 1) std::cout << "\n# round " << round + 1 << " of " << rounds << "\n" << std::flush;
    std::vector<BenchRecord> this_round;
    for (const std::string& transport : transports) {
      if (!transport.empty()) {
        setenv("RAILCOLL_TRANSPORT", transport.c_str(), 1);  // the workers inherit it
        std::cout << "\n# transport " << transport << " (RAILCOLL_TRANSPORT)\n" << std::flush;
      }
      std::vector<std::string> lines;
      JobResult r = run_workers(plan.where, worker_command(plan), &lines, jo);
      std::vector<BenchRecord> mine = records_of(lines, &ctx);
      if (r.exit_status != 0) {
        report_failure(
            "the benchmark ranks (transport " + (transport.empty() ? std::string("default") : transport) + ")", r);
        return 1;
      }
      if (transports.size() > 1) print_summary(std::cout, mine, ctx);
      if (rounds > 1) std::cout << "# railcoll: " << mine.size() << " sizes x algorithms\n" << std::flush;
      keep(mine);
    }
    for (const PeerRow& row : rows) {
      auto peer = run_peer(plan, ctx, row, rounds);
      if (peer.empty() && failed_rows.find(row.label) == std::string::npos)
        failed_rows += std::string(failed_rows.empty() ? "" : ", ") + row.label;
      if (rounds > 1) std::cout << "# " << row.label << ": " << peer.size() << " sizes\n" << std::flush;
      keep(peer);
    }
  }
  std::vector<BenchRecord> recs;
  for (auto& key : order) recs.push_back(rounds > 1 ? pooled_record(parts[key]) : parts[key].front());
  ctx.cores = rates.cores, ctx.copy_Bps = rates.copy_all_Bps, ctx.reduce_Bps = rates.reduce_all_Bps;
  if (plan.where.cluster)
    if (auto cfg = cl::load_state()) ctx.rate_source = cfg->rate_source, ctx.ceiling_pct = cfg->ceiling_pct, ctx.shaper = cfg->shaper;
  std::vector<BenchRecord> best = best_oneccl(recs);
  recs.insert(recs.end(), best.begin(), best.end());
  set_bounds(&recs, ctx);
  if (rounds > 1) {  // the tables of the pooled records, one per run
    std::vector<std::string> labels;
    for (auto& r : recs)
      if (std::find(labels.begin(), labels.end(), r.algorithm) == labels.end()) labels.push_back(r.algorithm);
    for (auto& label : labels) {
      std::vector<BenchRecord> mine;
      for (auto& r : recs)
        if (r.algorithm == label) mine.push_back(r);
      print_peer_table(plan, ctx, label, mine);
    }
  }
  if (transports.size() > 1) print_transport_ratio(std::cout, recs, ctx);
  if (plan.background != BackgroundPattern::None) {
    std::vector<BenchRecord> loaded;
    BenchPlan once = plan;  // one run under load: nothing to pool
    once.rounds = 1;
    if (run_under_background(once, jo, &loaded) != 0) return 1;
    set_bounds(&loaded, ctx);
    print_background_summary(std::cout, recs, loaded, ctx, background_name(plan.background));
    recs.insert(recs.end(), loaded.begin(), loaded.end());
  }
  if (transports.size() == 1) {
    print_summary(std::cout, recs, ctx);
    print_bandwidth_summary(std::cout, recs, ctx);
    print_field_summary(std::cout, recs, ctx);
    print_overlap_summary(std::cout, recs, ctx);
  }
  print_layer_cost(std::cout, recs, ctx);
  if (!plan.json.empty()) write_json(plan.json, recs), std::cout << "wrote " << plan.json << "\n";
  if (!plan.csv.empty()) write_csv(plan.csv, recs), std::cout << "wrote " << plan.csv << "\n";
  if (!plan.plot.empty()) {
    std::string title = ctx.collective + ", " + std::to_string(ctx.ranks) + " ranks on " + std::to_string(ctx.nodes) +
                        " nodes, " + std::to_string(ctx.rails) + " rails";
    if (ctx.rail_bits_per_s > 0) title += " x " + number_text(ctx.rail_bits_per_s / 1e9) + " Gbit/s";
    title += " (" + ctx.where + ")";
    if (write_plot(recs, plan.plot, title)) std::cout << "wrote " << plan.plot << "\n";
  }
  if (!failed_rows.empty()) {
    std::cerr << "railcoll bench: " << failed_rows << " failed (above): the results lack them\n";
    return 1;
  }
  return 0;
}

}  // namespace railcoll::bench
