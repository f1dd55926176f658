// railcoll calibrate [--nodes-from-cluster] [-o FILE] [--local] [--quick] [-n N] [--ppn P] [--rails K]
// railcoll calibrate --compare SIM.json BENCH.json [BENCH2.json ...]
//
// Measures the parameters of the simulator's machine model on the emulated
// cluster (or, with --local, on local processes) into the `testbed`
// preset, and compares simulated with measured records: the library is
// src/bench/calibrate.hpp. This verb parses the flags, starts the calibration
// jobs (`railcoll calibrate --worker --test T` under `railcoll cluster run` or
// `railcoll run`, as `bench` starts its own) and reads record files.
#include <fstream>
#include <iostream>
#include <sstream>

#include "args.hpp"
#include "bench/calibrate.hpp"
#include "bench/driver.hpp"
#include "bench/records.hpp"
#include "commands.hpp"
#include "core/errors.hpp"
#include "testbed/cluster.hpp"
#include "testbed/where.hpp"
#include "testbed/spawn.hpp"

namespace railcoll::cli {

namespace {

// Runs one worker job and returns its records ("key" -> values, in order).
bench::Records run_job(bool cluster, bool quick, int idle_us, const std::string& test, const bench::JobShape& shape,
                       int rail) {
  std::vector<std::string> worker = {testbed::self_exe(), "calibrate", "--worker", "--test", test};
  if (rail >= 0) worker.insert(worker.end(), {"--rail", std::to_string(rail)});
  if (idle_us > 0) worker.insert(worker.end(), {"--idle-us", std::to_string(idle_us)});
  if (quick) worker.push_back("--quick");
  // A cluster that went away meanwhile: choose_placement refuses, never local.
  bench::Placement where = bench::choose_placement(cluster ? shape.cluster : shape.local);
  std::string out;
  std::vector<std::string> lines;
  testbed::JobOptions jo;
  jo.timeout_seconds = 3600;
  jo.on_line = [&out](int, bool is_stderr, const std::string& line) {
    if (is_stderr) std::cerr << line << std::flush;
    else out += line;
  };
  testbed::JobResult job = bench::run_workers(where, std::move(worker), &lines, jo);
  const int rc = job.exit_status;
  bench::Records recs;
  for (const std::string& line : lines) {
    std::istringstream l(line);
    std::string key;
    l >> key;
    std::vector<double> v;
    for (double x; l >> x;) v.push_back(x);
    recs.emplace(key, v);
  }
  if (rc != 0) {
    std::cerr << out;
    throw std::runtime_error("the " + test + " job failed: " + job.failure + "\n" + job.rank_report());
  }
  return recs;
}

std::vector<bench::Timing> read_timings(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot read '" + path + "'");
  std::vector<bench::Timing> v;
  for (std::string line; std::getline(in, line);) {
    bench::BenchRecord r;
    if (bench::from_json_line(line, &r)) v.push_back({r.algorithm, r.bytes, r.p50_us});
  }
  if (v.empty()) throw UsageError("'" + path + "' has no records");
  return v;
}

int compare(const std::string& sim_path, const std::vector<std::string>& bench_paths) {
  std::vector<std::vector<bench::Timing>> runs;
  for (auto& p : bench_paths) runs.push_back(read_timings(p));
  try {
    bench::print_comparison(bench::compare(read_timings(sim_path), runs), std::cout);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  return 0;
}

int driver(bench::CalibrationOptions o, bool local) {
  o.cluster = testbed::cluster_unless_local(local);
  if (o.cluster) {
    o.where = "the emulated cluster (railcoll cluster run)";
    std::cout << "railcoll calibrate: on " << o.where << "\n";
    if (auto c = railcoll::cluster::load_state()) o.burst_bytes = static_cast<double>(c->burst_bytes);
    o.idle_us = bench::default_idle_us(bench::Placement{true, {}, 0});  // the rest bench takes there
  } else {
    o.where = "local processes (railcoll run, pretend nodes over loopback)";
    std::cout << "railcoll calibrate: local processes (--local), " << o.n << " ranks, " << o.ppn
              << " per pretend node, " << o.rails << " loopback rails\n";
  }
  bench::calibrate(o, [&](const std::string& test, const bench::JobShape& shape, int rail) {
    return run_job(o.cluster, o.quick, o.idle_us, test, shape, rail);
  }, std::cout);
  return 0;
}

}  // namespace

int cmd_calibrate(const std::vector<std::string>& argv) {
  Args a(argv, {"nodes-from-cluster", "local", "quick", "worker", "compare"},
         {"o", "test", "records", "rail", "n", "ppn", "rails", "idle-us"});
  const char* usage =
      "usage: railcoll calibrate [--nodes-from-cluster] [-o FILE] [--local] [--quick] [-n N] [--ppn P] [--rails K]; "
      "railcoll calibrate --compare SIM.json BENCH.json [BENCH2.json ...]";
  if (a.flag("compare")) {
    if (a.positional().size() < 2) throw UsageError(usage);
    return compare(a.positional()[0], {a.positional().begin() + 1, a.positional().end()});
  }
  if (!a.positional().empty()) throw UsageError(usage);
  if (a.flag("worker")) {
    bench::WorkerOptions w;
    w.test = a.str("test");
    w.records = a.str("records");
    w.quick = a.flag("quick");
    w.rail = static_cast<int>(a.integer("rail", -1, 0, 63));
    w.idle_us = static_cast<int>(a.integer("idle-us", 0, 0, 10000000));
    return bench::calibration_worker(w);
  }
  bench::CalibrationOptions o;
  o.out = a.str("o", o.out);
  o.quick = a.flag("quick");
  const bool local = a.flag("local"), from_cluster = a.flag("nodes-from-cluster");
  if (local && from_cluster) throw UsageError("give only one of --local and --nodes-from-cluster");
  o.n = static_cast<int>(a.integer("n", 8, 2, 512));
  o.ppn = static_cast<int>(a.integer("ppn", 4, 1, 512));
  o.rails = static_cast<int>(a.integer("rails", 2, 1, 8));
  try {
    return driver(o, local);
  } catch (const std::runtime_error& e) {
    if (dynamic_cast<const UsageError*>(&e) || dynamic_cast<const InputError*>(&e)) throw;
    std::cerr << "railcoll calibrate: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace railcoll::cli
