// The old entry points of bench_report.hpp, over the bench library and the test bed.
#include "bench_report.hpp"

#include <iostream>

#include "args.hpp"
#include "bench/driver.hpp"
#include "testbed/cluster.hpp"

namespace railcoll::cli {

bool cluster_is_up() { return cluster::usable(); }

int run_workers(bool cluster, const std::vector<std::string>& cluster_args,
                const std::vector<std::string>& local_args, std::vector<std::string> worker,
                std::vector<std::string>* records, std::string* output) {
  Args a(cluster ? cluster_args : local_args, {}, {"n", "ppn", "rails", "layout"});
  bench::PlacementRequest req;
  req.local = !cluster;
  req.n = static_cast<int>(a.integer("n", 0, 1, 4096));
  req.ppn = static_cast<int>(a.integer("ppn", 0, 1, 4096));
  req.rails = static_cast<int>(a.integer("rails", 0, 1, 8));
  if (a.has("layout")) req.layout = testbed::parse_layout(a.str("layout"));
  bench::Placement where = bench::choose_placement(req);
  if (cluster && !where.cluster) throw UsageError("no emulated cluster is up (railcoll cluster up)");
  testbed::JobOptions jo;
  jo.timeout_seconds = 3600;
  if (output)
    jo.on_line = [output](int, bool is_stderr, const std::string& line) {
      if (is_stderr) std::cerr << line << std::flush;
      else *output += line;
    };
  testbed::JobResult r = bench::run_workers(where, std::move(worker), records, jo);
  if (r.exit_status != 0) std::cerr << "railcoll: the job failed: " << r.failure << "\n" << r.rank_report();
  return r.exit_status;
}

int run_command(const std::vector<std::string>& argv, std::string* captured) {
  testbed::RunOptions o;
  o.capture_out = captured != nullptr;
  o.capture_err = false;
  testbed::RunResult r = testbed::run(argv, o);
  if (captured) *captured += r.out;
  return r.code();
}

}  // namespace railcoll::cli
