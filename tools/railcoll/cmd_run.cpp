// railcoll run -n N [--ppn P | --layout 2,3,1] [--rails K] [--timeout S] [--grace S] [--tag-output] -- PROG ARGS...
// The local launcher (src/testbed/job.hpp): N processes on this machine. With
// --ppn or --layout the ranks are cut into pretend nodes (shared memory inside,
// loopback sockets between); --rails K gives every rank K loopback addresses
// to use as rails.
#include <iostream>

#include "args.hpp"
#include "commands.hpp"
#include "job_args.hpp"
#include "testbed/job.hpp"

namespace railcoll::cli {

const std::set<std::string> kJobFlags = {"tag-output"};
const std::set<std::string> kJobValued = {"timeout", "grace"};

std::vector<std::string> split_at_dashes(const std::vector<std::string>& argv, std::vector<std::string>* prog) {
  std::vector<std::string> opts;
  bool after = false;
  for (auto& a : argv) {
    if (!after && a == "--") {
      after = true;
      continue;
    }
    (after ? *prog : opts).push_back(a);
  }
  return opts;
}

testbed::JobOptions job_options(const Args& a, double default_timeout) {
  testbed::JobOptions o;
  o.timeout_seconds = static_cast<double>(a.integer("timeout", static_cast<long>(default_timeout), 0, 7 * 86400));
  o.grace_seconds = static_cast<double>(a.integer("grace", 0, 0, 86400));
  o.tag_output = a.flag("tag-output");
  return o;
}

void report_records(const std::string& verb, const testbed::JobResult& r, testbed::JobFlightRecords& records, int ranks) {
  const std::string where = records.report(r, ranks);
  if (!where.empty()) std::cerr << "railcoll " << verb << ": " << where << "\n" << std::flush;
}

int report_job(const std::string& verb, const testbed::JobResult& r, testbed::JobFlightRecords* records) {
  if (r.exit_status != 0)
    std::cerr << "railcoll " << verb << ": " << r.failure << "\n"
              << "railcoll " << verb << ": every rank:\n"
              << r.rank_report() << std::flush;
  if (records) report_records(verb, r, *records, static_cast<int>(r.ranks.size()));
  return r.exit_status;
}

int cmd_run(const std::vector<std::string>& argv) {
  std::vector<std::string> prog;
  auto opts = split_at_dashes(argv, &prog);
  std::set<std::string> valued = {"n", "np", "ppn", "layout", "rails"};
  valued.insert(kJobValued.begin(), kJobValued.end());
  Args a(opts, kJobFlags, valued);
  if (!a.positional().empty() || prog.empty())
    throw UsageError("usage: railcoll run -n N [--ppn P | --layout 2,3,1] [--rails K] [--timeout S] [--grace S] "
                     "[--tag-output] -- PROG ARGS...");
  if (a.has("n") && a.has("np")) throw UsageError("give only one of -n and --np");
  if (a.has("ppn") && a.has("layout")) throw UsageError("give only one of --ppn and --layout");
  const char* n_name = a.has("np") ? "np" : "n";
  int n = static_cast<int>(a.integer(n_name, 0, 1, 1024));
  testbed::LocalJob job;
  job.rails = static_cast<int>(a.integer("rails", 1, 1, 8));
  job.program = prog;
  if (a.has("layout")) {
    job.layout = testbed::parse_layout(a.str("layout"));
    if (n && n != testbed::layout_ranks(job.layout))
      throw UsageError(a.spelled(n_name) + " " + std::to_string(n) + " but --layout " + a.str("layout") + " holds " +
                       std::to_string(testbed::layout_ranks(job.layout)) + " ranks");
    job.pretend_nodes = true;
  } else {
    if (n == 0) throw UsageError("-n N (the number of ranks) is required, or --layout");
    job.pretend_nodes = a.has("ppn");
    job.layout = testbed::layout_of(n, static_cast<int>(a.integer("ppn", n, 1, 1024)));
  }
  testbed::JobOptions options = job_options(a, 0);
  options.ask_for_flight_records = true;
  testbed::JobFlightRecords records;
  return report_job("run", testbed::run_local_job(job, options), &records);
}

}  // namespace railcoll::cli
