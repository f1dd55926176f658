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

namespace railcoll::cli {

namespace {

struct BenchOptions {
  std::string algo = "all";
  uint64_t min = 8, max = 1 << 20;
  int iters = 100, warmup = 10;
  bool full = false, validate = false, mpi = false, local = false;
  std::string json, csv, plot, records;
  std::string fault, fault_marker;  // --fault rail-down@T[:D] | kill@T
  double duration = 0;
  int n = 8, ppn = 4, rails = 2;
  bool n_given = false, ppn_given = false, rails_given = false;
  std::vector<std::string> forwarded;  // options passed on to the workers
};

const std::set<std::string> kFlags = {"f", "c", "mpi", "local", "worker"};
const std::set<std::string> kValued = {"algo", "m", "i", "x", "json", "csv", "plot", "n", "ppn", "rails", "records",
                                       "fault", "fault-marker", "duration"};

BenchOptions parse(const std::vector<std::string>& argv) {
  Args a(argv, kFlags, kValued);
  if (a.positional().size() != 1 || a.positional()[0] != "allgather")
    throw UsageError("usage: railcoll bench allgather [--algo A|all|auto] [-m MIN:MAX] [-i N] [-x N] [-f] [-c] [--mpi] "
                     "[--json F] [--csv F] [--plot F] [-n N] [--ppn P] [--rails K] [--local] "
                     "[--fault rail-down@T[:D] | kill@T]");
  BenchOptions o;
  o.algo = a.str("algo", "all");
  if (o.algo != "all" && o.algo != "auto" && !find_algorithm("allgather", o.algo))
    throw UsageError("unknown allgather algorithm '" + o.algo + "' (railcoll algos lists them)");
  size_range(a, &o.min, &o.max);
  if (o.max > (1ull << 30)) throw UsageError("-m: at most 1 GiB per rank");
  o.iters = static_cast<int>(a.integer("i", 100, 1, 1000000));
  o.warmup = static_cast<int>(a.integer("x", 10, 0, 1000000));
  o.full = a.flag("f");
  o.validate = a.flag("c");
  o.mpi = a.flag("mpi");
  o.local = a.flag("local");
  o.json = a.str("json");
  o.csv = a.str("csv");
  o.plot = a.str("plot");
  o.records = a.str("records");
  o.fault = a.str("fault");
  o.fault_marker = a.str("fault-marker");
  if (a.has("duration")) o.duration = std::stod(a.str("duration"));
  if (!o.fault.empty()) {
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

std::vector<uint64_t> sizes(const BenchOptions& o) {
  std::vector<uint64_t> v;
  for (uint64_t s = std::max<uint64_t>(o.min, 1); s <= o.max; s *= 2) v.push_back(s);
  if (o.min == 0) v.insert(v.begin(), 0);
  return v;
}

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

unsigned char pattern(int rank, int iter, size_t i) {
  return static_cast<unsigned char>((rank * 131 + iter * 31 + i * 7 + (i >> 8)) & 0xff);
}

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
    for (auto& s : all_algorithms())
      if (std::string(s.collective) == "allgather") algos.push_back(s.name);
    algos.push_back("auto");
  } else {
    algos.push_back(o.algo);
  }
  std::ofstream records;
  if (me == 0 && !o.records.empty()) {
    records.open(o.records, std::ios::app);
    records << "#context ranks=" << ctx.ranks << " nodes=" << ctx.nodes << " rails=" << ctx.rails
            << " rate=" << ctx.rail_bits_per_s << " ppn=";
    for (size_t i = 0; i < ctx.ranks_per_node.size(); ++i) records << (i ? "," : "") << ctx.ranks_per_node[i];
    records << " where=" << ctx.where << "\n" << std::flush;
  }
  std::vector<BenchRecord> all;
  for (auto& algo : algos) {
    if (me == 0) print_table_header(std::cout, algo, ctx, o.full, o.validate);
    for (uint64_t bytes : sizes(o)) {
      // Fewer iterations for large messages: at most ~64 MiB gathered per size.
      uint64_t per_call = std::max<uint64_t>(1, bytes * static_cast<uint64_t>(N));
      int iters = static_cast<int>(std::max<uint64_t>(5, std::min<uint64_t>(o.iters, (64ull << 20) / per_call)));
      iters = std::min(iters, o.iters);
      int warmup = std::min(o.warmup, std::max(1, iters / 5));
      std::vector<unsigned char> send(bytes + 1), recv(bytes * N + 1);
      railcoll_call_opts_t opts{algo.c_str(), 0};
      std::vector<double> lat(iters);
      int bad = 0;
      for (int i = -warmup; i < iters; ++i) {
        if (o.validate) {
          for (size_t b = 0; b < bytes; ++b) send[b] = pattern(me, i + warmup, b);
          std::fill(recv.begin(), recv.end(), 0xEE);
        }
        // A barrier before every call, as railcoll-mpi-bench does: each call is
        // timed alone, not overlapped with the previous one.
        if (railcoll_barrier(comm) != RAILCOLL_OK) return fail("barrier");
        double t0 = now_us();
        if (railcoll_allgather(comm, send.data(), recv.data(), bytes, &opts) != RAILCOLL_OK)
          return fail(algo + " at " + std::to_string(bytes) + " B");
        double t1 = now_us();
        if (i >= 0) lat[i] = t1 - t0;
        if (o.validate)
          for (int r = 0; r < N && !bad; ++r)
            for (size_t b = 0; b < bytes; ++b)
              if (recv[r * bytes + b] != pattern(r, i + warmup, b)) {
                std::cerr << "railcoll bench: rank " << me << ": " << algo << " at " << bytes << " B, call " << i
                          << ": wrong byte " << b << " of rank " << r << "'s block\n";
                bad = 1;
                break;
              }
      }
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
      if (algo == "auto") r.chosen = railcoll_algorithm_for(comm, "allgather", bytes, nullptr);
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
      std::nth_element(slowest.begin(), slowest.begin() + iters / 2, slowest.end());
      r.p50_us = slowest[iters / 2];
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



int driver(const BenchOptions& o) {
  std::string self = self_exe();
  std::string dir = self.substr(0, self.rfind('/'));
  bool cluster = !o.local && cluster_is_up();
  std::vector<std::string> worker = {self, "bench", "allgather"};
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
  std::vector<BenchRecord> recs;
  BenchContext ctx;
  for (auto& line : lines) {
    BenchRecord r;
    if (line.rfind("#context", 0) == 0) ctx = read_context(line);
    else if (from_json_line(line, &r)) recs.push_back(r);
  }
  if (rc != 0) {
    std::cerr << "railcoll bench: the benchmark ranks failed (status " << rc << ")\n";
    return 1;
  }

  if (o.mpi) {
    std::string mpibench = dir + "/railcoll-mpi-bench";
    for (std::string label : {"mpi:tuned", "mpi:han"}) {
      std::vector<std::string> args = {mpibench, "--label", label, "--rails", std::to_string(ctx.rails), "-m",
                                       std::to_string(o.min) + ":" + std::to_string(o.max), "-i",
                                       std::to_string(o.iters), "-x", std::to_string(o.warmup)};
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
    std::string title = "allgather, " + std::to_string(ctx.ranks) + " ranks on " + std::to_string(ctx.nodes) +
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
