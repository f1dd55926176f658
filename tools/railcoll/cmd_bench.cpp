// railcoll bench allgather [--algo A|all|auto] [-m MIN:MAX] [-i N] [-x N] [-f] [-c]
//        [--mpi] [--json F] [--csv F] [--plot F] [-n N] [--ppn P] [--rails K] [--local]
//        [--fault rail-down@T[:D] | kill@T]   (bench_fault.cpp)
//
// Started by a launcher (railcoll run / cluster run, mpirun, srun, torchrun env)
// it is a worker: every rank runs the OSU-style loops through the C API and rank
// 0 prints the tables. Started plainly it is the driver: it launches the workers
// on the emulated cluster when one is up (else locally), runs Open MPI's
// MPI_Allgather on the same ranks (--mpi), then prints the summary and writes
// the JSON, CSV and plot.
#include <railcoll/railcoll.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "args.hpp"
#include "bench_fault.hpp"
#include "bench_report.hpp"
#include "commands.hpp"
#include "core/errors.hpp"
#include "core/registry.hpp"
#include "core/select.hpp"

namespace railcoll::cli {

namespace {

struct BenchOptions {
  std::string collective = "allgather";
  Collective coll = Collective::Allgather;
  std::string algo = "all";
  uint64_t min = 8, max = 1 << 20;
  int iters = 100, warmup = 10;
  bool full = false, validate = false, mpi = false, local = false;
  std::string json, csv, plot, records;
  std::string background;  // traffic pattern while measuring again (cluster only)
  std::string fault, fault_marker;  // --fault rail-down@T[:D] | kill@T
  double duration = 0;
  int n = 8, ppn = 4, rails = 2;
  bool n_given = false, ppn_given = false, rails_given = false;
  std::vector<std::string> forwarded;  // options passed on to the workers
};

const std::set<std::string> kFlags = {"f", "c", "mpi", "local", "worker"};
const std::set<std::string> kValued = {"algo", "m",     "i",     "x",       "json",    "csv",
                                       "plot", "n",     "ppn",   "rails",   "records", "background",
                                       "fault", "fault-marker", "duration"};

BenchOptions parse(const std::vector<std::string>& argv) {
  Args a(argv, kFlags, kValued);
  Collective coll;
  if (a.positional().size() != 1 || !parse_collective(a.positional()[0], &coll))
    throw UsageError("usage: railcoll bench allgather|bcast|gather|allreduce|barrier [--algo A|all|auto] "
                     "[-m MIN:MAX] [-i N] [-x N] [-f] [-c] [--mpi] [--background complement|uniform|hotspot] "
                     "[--json F] [--csv F] [--plot F] [-n N] [--ppn P] [--rails K] [--local] "
                     "[--fault rail-down@T[:D] | kill@T]");
  BenchOptions o;
  o.collective = a.positional()[0];
  o.coll = coll;
  o.algo = a.str("algo", "all");
  if (o.algo != "all" && o.algo != "auto" && !find_algorithm(o.coll, o.algo))
    throw UsageError("unknown " + o.collective + " algorithm '" + o.algo + "' (railcoll algos lists them)");
  size_range(a, &o.min, &o.max);
  if (o.max > (1ull << 30)) throw UsageError("-m: at most 1 GiB per rank");
  const bool moves_data = traits(o.coll).moves_data;
  if (!moves_data) o.min = o.max = 0;
  // A barrier's latency distribution needs many consecutive calls (seed 004 §5).
  o.iters = static_cast<int>(a.integer("i", moves_data ? 100 : 10000, 1, 1000000));
  o.warmup = static_cast<int>(a.integer("x", moves_data ? 10 : 100, 0, 1000000));
  o.full = a.flag("f");
  o.validate = a.flag("c");
  o.mpi = a.flag("mpi");
  o.local = a.flag("local");
  o.json = a.str("json");
  o.csv = a.str("csv");
  o.plot = a.str("plot");
  o.records = a.str("records");
  o.background = a.str("background");
  if (!o.background.empty() && o.background != "complement" && o.background != "uniform" && o.background != "hotspot")
    throw UsageError("--background must be complement, uniform or hotspot");
  o.fault = a.str("fault");
  o.fault_marker = a.str("fault-marker");
  if (a.has("duration")) o.duration = std::stod(a.str("duration"));
  if (!o.fault.empty()) {
    if (o.collective != "allgather") throw UsageError("--fault runs all-gathers only");
    parse_fault(o.fault);  // bad input: a usage error before anything starts
    if (o.algo == "all") o.algo = "direct";
    if (!a.has("m")) o.max = 1 << 20;
  }
  o.n_given = a.has("n");
  o.ppn_given = a.has("ppn");
  o.rails_given = a.has("rails");
  o.n = static_cast<int>(a.integer("n", 8, 1, 512));
  o.ppn = static_cast<int>(a.integer("ppn", o.n_given ? o.n : 4, 1, 512));
  if (!o.n_given && o.ppn_given) o.n = 2 * o.ppn;
  o.rails = static_cast<int>(a.integer("rails", 2, 1, 8));
  for (const char* k : {"algo", "m", "i", "x"})
    if (a.has(k)) o.forwarded.insert(o.forwarded.end(), {std::string(strlen(k) == 1 ? "-" : "--") + k, a.str(k)});
  if (o.full) o.forwarded.push_back("-f");
  if (o.validate) o.forwarded.push_back("-c");
  return o;
}

bool launched_by_a_launcher() {
  for (const char* v : {"RAILCOLL_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "RANK"})
    if (getenv(v)) return true;
  return false;
}

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One call of the benchmarked collective: its buffers, the call, and the check
// of every byte (-c), as the collective's traits define them. bcast and gather
// use root 0, allreduce sums floats.
class BenchCall {
 public:
  BenchCall(Collective coll, uint64_t bytes, int me, int n) : t_(traits(coll)) {
    shape_.rank = me;
    shape_.nranks = n;
    shape_.bytes = bytes;
    if (t_.reducing) shape_.dtype = DataType::Float32;
    send_.assign(t_.send_length(shape_) + 4, 0);
    recv_.assign(std::max<uint64_t>(t_.recv_length(shape_), bytes * (t_.result == Result::Blocks ? n : 1)) + 4, 0);
  }
  void prepare(int call) { t_.fill(shape_, call, send_.data(), recv_.data()); }
  railcoll_status_t run(railcoll_comm_t comm, const railcoll_call_opts_t* opts) {
    const uint64_t bytes = shape_.bytes;
    switch (t_.id) {
      case Collective::Allgather: return railcoll_allgather(comm, send_.data(), recv_.data(), bytes, opts);
      case Collective::Gather: return railcoll_gather(comm, send_.data(), recv_.data(), bytes, 0, opts);
      case Collective::Bcast: return railcoll_bcast(comm, recv_.data(), bytes, 0, opts);
      case Collective::Allreduce:
        return railcoll_allreduce(comm, send_.data(), recv_.data(), bytes / 4, RAILCOLL_FLOAT, RAILCOLL_SUM, opts);
      default: return railcoll_barrier(comm);
    }
  }
  // "" when the result is right, else what is wrong.
  std::string check(int call) const { return t_.check(shape_, call, recv_.data()); }

 private:
  const CollectiveTraits& t_;
  CallShape shape_;
  std::vector<unsigned char> send_, recv_;
};

// ------------------------------------------------------------------ worker --

int worker(const BenchOptions& o) {
  railcoll_comm_t comm;
  railcoll_status_t st = railcoll_comm_init(&comm);
  if (st != RAILCOLL_OK) {
    std::cerr << "railcoll bench: " << railcoll_strerror(st) << ": " << railcoll_last_error() << "\n";
    return 1;
  }
  const int me = railcoll_comm_rank(comm), N = railcoll_comm_size(comm);
  auto fail = [&](const std::string& what) {
    std::cerr << "railcoll bench: rank " << me << ": " << what << ": " << railcoll_last_error() << "\n";
    railcoll_comm_destroy(comm);
    return 1;
  };
  BenchContext ctx;
  ctx.collective = o.collective;
  ctx.ranks = N;
  ctx.nodes = railcoll_comm_nodes(comm);
  ctx.rails = railcoll_comm_rails(comm);
  // Ranks per node, from a tiny all-gather of node leaders' local sizes.
  {
    std::vector<int> local(N);
    int mine = getenv("RAILCOLL_LOCAL_SIZE") ? atoi(getenv("RAILCOLL_LOCAL_SIZE")) : 0;
    if (railcoll_allgather(comm, &mine, local.data(), sizeof(int), nullptr) != RAILCOLL_OK) return fail("start-up");
    int at = 0;
    while (at < N && local[at] > 0) {
      ctx.ranks_per_node.push_back(local[at]);
      at += local[at];
    }
    if (at != N || static_cast<int>(ctx.ranks_per_node.size()) != ctx.nodes)
      ctx.ranks_per_node.assign(ctx.nodes, N / std::max(1, ctx.nodes));
  }
  ctx.max_ppn = *std::max_element(ctx.ranks_per_node.begin(), ctx.ranks_per_node.end());
  if (getenv("RAILCOLL_RAIL_RATE")) ctx.rail_bits_per_s = atof(getenv("RAILCOLL_RAIL_RATE"));
  ctx.where = getenv("RAILCOLL_CLUSTER") ? "emulated cluster" : "local processes";
  if (!getenv("RAILCOLL_CLUSTER") && ctx.nodes > 1) ctx.where += ", pretend nodes over loopback";

  std::vector<std::string> algos;
  if (o.algo == "all") {
    for (auto& s : all_algorithms())  // hardware algorithms would run their software twins again
      if (s.collective == o.coll && software_equivalent(s.collective, s.name) == s.name)
        algos.push_back(s.name);
    algos.push_back("auto");
  } else {
    algos.push_back(o.algo);
  }
  std::ofstream records;
  if (me == 0 && !o.records.empty()) {
    records.open(o.records, std::ios::app);
    records << "#context collective=" << ctx.collective << " ranks=" << ctx.ranks << " nodes=" << ctx.nodes << " rails=" << ctx.rails
            << " rate=" << ctx.rail_bits_per_s << " ppn=";
    for (size_t i = 0; i < ctx.ranks_per_node.size(); ++i) records << (i ? "," : "") << ctx.ranks_per_node[i];
    records << " where=" << ctx.where << "\n" << std::flush;
  }
  std::vector<BenchRecord> all;
  for (auto& algo : algos) {
    if (me == 0) print_table_header(std::cout, algo, ctx, o.full, o.validate);
    for (uint64_t bytes : bench_sizes(o.collective, o.min, o.max)) {
      // Fewer iterations for large messages: at most ~64 MiB gathered per size.
      uint64_t per_call = std::max<uint64_t>(1, bytes * static_cast<uint64_t>(N));
      int iters = static_cast<int>(std::max<uint64_t>(5, std::min<uint64_t>(o.iters, (64ull << 20) / per_call)));
      iters = std::min(iters, o.iters);
      int warmup = std::min(o.warmup, std::max(1, iters / 5));
      BenchCall call(o.coll, bytes, me, N);
      railcoll_call_opts_t opts{algo.c_str(), 0};
      std::vector<double> lat(iters);
      int bad = 0;
      bool consecutive = !traits(o.coll).moves_data;
      if (consecutive) {  // the same algorithm for the barrier that is measured and the ones around it
        setenv("RAILCOLL_BARRIER_ALGO", algo.c_str(), 1);
        if (algo == "auto") unsetenv("RAILCOLL_BARRIER_ALGO");
      }
      for (int i = -warmup; i < iters; ++i) {
        if (o.validate) call.prepare(i + warmup);
        // A barrier before every call, as railcoll-mpi-bench does: each call is
        // timed alone, not overlapped with the previous one. Barriers themselves
        // are timed back to back, as seed 004's distributions are.
        if (!consecutive && railcoll_barrier(comm) != RAILCOLL_OK) return fail("barrier");
        double t0 = now_us();
        if (call.run(comm, &opts) != RAILCOLL_OK) return fail(algo + " at " + std::to_string(bytes) + " B");
        double t1 = now_us();
        if (i >= 0) lat[i] = t1 - t0;
        // Check only once every rank has left the call: ranks that check while
        // the slowest is still in it take cores from it (railcoll-mpi-bench does
        // the same).
        if (o.validate && !consecutive && railcoll_barrier(comm) != RAILCOLL_OK) return fail("barrier");
        std::string wrong = o.validate && !bad ? call.check(i + warmup) : "";
        if (!wrong.empty()) {
          std::cerr << "railcoll bench: rank " << me << ": " << algo << " at " << bytes << " B, call " << i << ": "
                    << wrong << "\n";
          bad = 1;
        }
      }
      if (consecutive) unsetenv("RAILCOLL_BARRIER_ALGO");
      // Statistics over ranks, OSU style, plus the median over iterations of the
      // slowest rank's time (a collective is done when its last rank is).
      std::vector<double> every(static_cast<size_t>(iters) * N);
      std::vector<int> bads(N);
      if (railcoll_allgather(comm, lat.data(), every.data(), iters * sizeof(double), nullptr) != RAILCOLL_OK ||
          railcoll_allgather(comm, &bad, bads.data(), sizeof(int), nullptr) != RAILCOLL_OK)
        return fail("collecting statistics");
      if (me != 0) continue;
      BenchRecord r;
      r.algorithm = algo;
      if (algo == "auto") r.chosen = railcoll_algorithm_for(comm, o.collective.c_str(), bytes, nullptr);
      r.collective = o.collective;
      r.bytes = bytes;
      r.ranks = N;
      r.nodes = ctx.nodes;
      r.rails = ctx.rails;
      r.iterations = iters;
      r.min_us = 1e300;
      std::vector<double> slowest(iters, 0);
      for (int k = 0; k < N; ++k) {
        double sum = 0;
        for (int i = 0; i < iters; ++i) {
          sum += every[k * iters + i];
          slowest[i] = std::max(slowest[i], every[k * iters + i]);
        }
        double mean = sum / iters;
        r.avg_us += mean / N;
        r.min_us = std::min(r.min_us, mean);
        r.max_us = std::max(r.max_us, mean);
      }
      if (consecutive) r.samples_us = slowest;
      set_percentiles(&r, slowest);
      r.validated = o.validate && std::count(bads.begin(), bads.end(), 0) == N;
      if (o.validate && !r.validated) {
        std::cerr << "railcoll bench: " << algo << " returned wrong bytes at " << bytes << " B\n";
        railcoll_comm_destroy(comm);
        return 1;
      }
      print_table_row(std::cout, r, o.full);
      if (records.is_open()) records << to_json_line(r) << "\n" << std::flush;
      all.push_back(r);
    }
  }
  railcoll_comm_destroy(comm);
  if (me == 0 && o.records.empty()) {  // run by hand under a launcher: report here
    print_summary(std::cout, all, ctx);
    if (!o.json.empty()) write_json(o.json, all);
    if (!o.csv.empty()) write_csv(o.csv, all);
  }
  return 0;
}

// ------------------------------------------------------------------ driver --


BenchContext read_context(const std::string& line) {
  BenchContext c;
  auto where = line.find(" where=");
  std::istringstream in(line.substr(9, where == std::string::npos ? std::string::npos : where - 9));
  for (std::string kv; in >> kv;) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "collective") c.collective = v;
    if (k == "ranks") c.ranks = std::stoi(v);
    if (k == "nodes") c.nodes = std::stoi(v);
    if (k == "rails") c.rails = std::stoi(v);
    if (k == "rate") c.rail_bits_per_s = std::stod(v);
    if (k == "ppn") {
      std::stringstream ss(v);
      for (std::string x; std::getline(ss, x, ',');) c.ranks_per_node.push_back(std::stoi(x));
    }
  }
  if (where != std::string::npos) c.where = line.substr(where + 7);
  c.max_ppn = c.ranks_per_node.empty() ? 1 : *std::max_element(c.ranks_per_node.begin(), c.ranks_per_node.end());
  return c;
}



// The records of a worker run: its context line and one JSON line per size.
std::vector<BenchRecord> parse_records(const std::vector<std::string>& lines, BenchContext* ctx) {
  std::vector<BenchRecord> recs;
  for (auto& line : lines) {
    BenchRecord r;
    if (line.rfind("#context", 0) == 0) *ctx = read_context(line);
    else if (from_json_line(line, &r)) recs.push_back(r);
  }
  return recs;
}

// Runs the workers again while `railcoll traffic` loads every rail from every
// node (seed 004 §5); the traffic job is stopped however the run ends.
int run_under_background(const BenchOptions& o, const std::vector<std::string>& cluster_args,
                         const std::vector<std::string>& local_args, const std::vector<std::string>& worker,
                         std::vector<BenchRecord>* loaded) {
  std::string self = self_exe();
  std::vector<std::string> traffic = {self, "cluster", "run", "--ppn", "1"};
  if (o.rails_given) traffic.insert(traffic.end(), {"--rails", std::to_string(o.rails)});
  traffic.insert(traffic.end(), {"--", self, "traffic", "--pattern", o.background, "--seconds", "1800"});
  std::cout << "\n# the same run under " << o.background << " background traffic on every rail\n" << std::flush;
  char log_path[] = "/tmp/railcoll-traffic-XXXXXX";
  int log_fd = mkstemp(log_path);
  if (log_fd < 0) throw std::runtime_error("cannot create a temporary file in /tmp");
  pid_t pid = fork();
  if (pid == 0) {
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    std::vector<char*> v;
    for (auto& a : traffic) v.push_back(const_cast<char*>(a.c_str()));
    v.push_back(nullptr);
    execv(v[0], v.data());
    _exit(127);
  }
  close(log_fd);
  auto traffic_output = [&] {
    std::ifstream in(log_path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  sleep(2);  // the generators connect and ramp up
  int status = 0;
  if (waitpid(pid, &status, WNOHANG) == pid) {  // a loaded run without load would mislead
    std::cerr << "railcoll bench: the background traffic stopped before the measurement; its output:\n"
              << traffic_output();
    unlink(log_path);
    return 1;
  }
  std::vector<std::string> lines;
  int rc = run_workers(true, cluster_args, local_args, worker, &lines);
  kill(pid, SIGTERM);
  for (int i = 0; i < 100 && waitpid(pid, &status, WNOHANG) == 0; ++i) usleep(100000);
  if (waitpid(pid, &status, WNOHANG) == 0) kill(pid, SIGKILL), waitpid(pid, &status, 0);
  std::istringstream moved(traffic_output());
  for (std::string line; std::getline(moved, line);)  // "railcoll traffic: rank r (...) sent N MiB"
    if (line.find(" sent ") != std::string::npos) std::cout << "# " << line << "\n";
  unlink(log_path);
  if (rc != 0) {
    std::cerr << "railcoll bench: the benchmark ranks failed under background traffic (status " << rc << ")\n";
    return 1;
  }
  BenchContext ignored;
  *loaded = parse_records(lines, &ignored);
  for (auto& r : *loaded) r.background = o.background;
  return 0;
}

int driver(const BenchOptions& o) {
  std::string self = self_exe();
  std::string dir = self.substr(0, self.rfind('/'));
  bool cluster = !o.local && cluster_is_up();
  std::vector<std::string> worker = {self, "bench", o.collective};
  worker.insert(worker.end(), o.forwarded.begin(), o.forwarded.end());
  std::vector<std::string> cluster_args, local_args = {"-n", std::to_string(o.n), "--ppn", std::to_string(o.ppn),
                                                       "--rails", std::to_string(o.rails)};
  if (o.rails_given) cluster_args.insert(cluster_args.end(), {"--rails", std::to_string(o.rails)});
  if (o.ppn_given) cluster_args.insert(cluster_args.end(), {"--ppn", std::to_string(o.ppn)});
  if (cluster)
    std::cout << "railcoll bench: on the emulated cluster (railcoll cluster status)\n";
  else
    std::cout << "railcoll bench: no emulated cluster is up: " << o.n << " local processes"
              << (o.ppn < o.n ? ", " + std::to_string(o.ppn) + " per pretend node" : "") << ", " << o.rails
              << " loopback rail" << (o.rails > 1 ? "s" : "") << "\n";
  std::cout << std::flush;
  std::vector<std::string> lines;
  int rc = run_workers(cluster, cluster_args, local_args, worker, &lines);
  BenchContext ctx;
  std::vector<BenchRecord> recs = parse_records(lines, &ctx);
  if (rc != 0) {
    std::cerr << "railcoll bench: the benchmark ranks failed (status " << rc << ")\n";
    return 1;
  }
  if (!o.background.empty()) {
    if (!cluster) {
      std::cerr << "railcoll bench: --background needs the emulated cluster (railcoll cluster up)\n";
      return 2;
    }
    std::vector<BenchRecord> loaded;
    if (run_under_background(o, cluster_args, local_args, worker, &loaded) != 0) return 1;
    print_background_summary(std::cout, recs, loaded, ctx, o.background);
    recs.insert(recs.end(), loaded.begin(), loaded.end());
  }

  if (o.mpi) {
    std::string mpibench = dir + "/railcoll-mpi-bench";
    for (std::string label : {"mpi:tuned", "mpi:han"}) {
      std::vector<std::string> args = {mpibench, "--coll", o.collective, "--label", label, "--rails",
                                       std::to_string(ctx.rails), "-i", std::to_string(o.iters), "-x",
                                       std::to_string(o.warmup)};
      if (o.collective == "barrier") args.push_back("--samples");
      else args.insert(args.end(), {"-m", std::to_string(std::max<uint64_t>(o.min, 1)) + ":" + std::to_string(o.max)});
      if (o.validate) args.push_back("-c");
      std::vector<std::string> cmd;
      if (cluster) {
        cmd = {self, "cluster", "mpirun"};
        if (label == "mpi:han") cmd.push_back("--han");
        if (o.rails_given) cmd.insert(cmd.end(), {"--rails", std::to_string(o.rails)});
        if (o.ppn_given) cmd.insert(cmd.end(), {"--ppn", std::to_string(o.ppn)});
        cmd.push_back("--");
      } else {
        cmd = {"mpirun", "--allow-run-as-root", "--oversubscribe", "-n", std::to_string(o.n), "--mca", "btl",
               "tcp,vader,self", "--mca", "mpi_yield_when_idle", "1"};
        if (label == "mpi:han") cmd.insert(cmd.end(), {"--mca", "coll_han_priority", "100"});
      }
      cmd.insert(cmd.end(), args.begin(), args.end());
      std::string out;
      std::cout << "\n# Open MPI " << label << (cluster ? " on the same emulated cluster" : " on this machine (one node)")
                << "\n" << std::flush;
      int st = run_command(cmd, &out);
      if (st != 0) {
        std::cerr << "railcoll bench: " << label << " failed (status " << st << "); its output:\n" << out;
        continue;
      }
      BenchContext mctx = ctx;
      print_table_header(std::cout, label, mctx, o.full, o.validate);
      std::istringstream lines(out);
      for (std::string line; std::getline(lines, line);) {
        BenchRecord r;
        if (!from_json_line(line, &r)) continue;
        print_table_row(std::cout, r, o.full);
        recs.push_back(r);
      }
    }
  }
  print_summary(std::cout, recs, ctx);
  if (!o.json.empty()) write_json(o.json, recs), std::cout << "wrote " << o.json << "\n";
  if (!o.csv.empty()) write_csv(o.csv, recs), std::cout << "wrote " << o.csv << "\n";
  if (!o.plot.empty()) {
    std::string title = o.collective + ", " + std::to_string(ctx.ranks) + " ranks on " + std::to_string(ctx.nodes) +
                        " nodes, " + std::to_string(ctx.rails) + " rails (" + ctx.where + ")";
    if (write_plot(recs, o.plot, title)) std::cout << "wrote " << o.plot << "\n";
  }
  return 0;
}

}  // namespace

int cmd_bench(const std::vector<std::string>& argv) {
  bool worker_mode = std::find(argv.begin(), argv.end(), "--worker") != argv.end() || launched_by_a_launcher();
  BenchOptions o = parse(argv);
  if (!o.fault.empty())
    return worker_mode ? fault_worker(parse_fault(o.fault), o.algo, o.max, o.duration, o.fault_marker, o.records)
                       : fault_driver(parse_fault(o.fault), o.algo, o.max);
  return worker_mode ? worker(o) : driver(o);
}

}  // namespace railcoll::cli
