// The benchmark records, reports and plots now live in the bench library
// (src/bench/) and process starting in the test bed (src/testbed/). This
// header keeps the verbs that used them from the command (cmd_sim,
// cmd_reproduce, cmd_calibrate) compiling with the names they know; new code
// includes "bench/records.hpp", "bench/report.hpp", "bench/plot.hpp",
// "bench/driver.hpp" and "testbed/spawn.hpp" instead.
#pragma once
#include <string>
#include <vector>

#include "bench/plot.hpp"
#include "bench/records.hpp"
#include "bench/report.hpp"
#include "testbed/spawn.hpp"

namespace railcoll::cli {

using bench::BenchContext;
using bench::BenchRecord;
using bench::bench_sizes;
using bench::from_json_line;
using bench::print_background_summary;
using bench::print_summary;
using bench::print_table_header;
using bench::print_table_row;
using bench::rail_bound_us;
using bench::set_percentiles;
using bench::to_json_line;
using bench::write_csv;
using bench::write_json;
using bench::write_plot;
using testbed::self_exe;

// Whether an emulated cluster is up, healthy and usable here (root).
bool cluster_is_up();
// Starts `worker` (a railcoll command line) as the ranks of a job: on the
// cluster with CLUSTER_ARGS (--ppn P, --rails K, --layout L) or locally with
// LOCAL_ARGS (-n N, --ppn P, --rails K), with `--records FILE` appended;
// returns the job's exit status and the lines the workers wrote to FILE.
// `output` (may be null: forwarded) gets the ranks' standard output.
int run_workers(bool cluster, const std::vector<std::string>& cluster_args,
                const std::vector<std::string>& local_args, std::vector<std::string> worker,
                std::vector<std::string>* records, std::string* output = nullptr);
// Runs a command and waits; with `captured`, its standard output is collected.
int run_command(const std::vector<std::string>& argv, std::string* captured = nullptr);

}  // namespace railcoll::cli
