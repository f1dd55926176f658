// Benchmark records and how they are shown: OSU-style tables, the summary
// against Open MPI, JSON, CSV and the plot.
#pragma once
#include <ostream>
#include <string>
#include <vector>

namespace railcoll::cli {

struct BenchRecord {
  std::string collective = "allgather", algorithm;
  std::string chosen;  // for "auto": the algorithm the rules picked at this size
  uint64_t bytes = 0;
  int ranks = 0, nodes = 0, rails = 0, iterations = 0;
  double avg_us = 0, min_us = 0, max_us = 0, p50_us = 0;
  double p90_us = -1, p99_us = -1;  // percentiles of the slowest rank's time; -1: not reported
  bool validated = false;
  std::vector<double> samples_us;  // the slowest rank's time of every call (barrier histograms)
  std::string background;          // traffic pattern during the measurement, "" when quiet
};

// The sizes a benchmark of `collective` runs, doubling from min to max: none
// but 0 for barrier; whole 4-byte elements for allreduce (float sums); 0 first
// when min is 0.
std::vector<uint64_t> bench_sizes(const std::string& collective, uint64_t min, uint64_t max);

// The slowest rank's time of every call -> p50, p90, p99 of the record.
void set_percentiles(BenchRecord* r, std::vector<double> slowest_us);

// Context of a run, for the headers and the rail bound.
struct BenchContext {
  std::string collective = "allgather";
  int ranks = 0, nodes = 0, rails = 0, max_ppn = 0;
  std::vector<int> ranks_per_node;
  double rail_bits_per_s = 0;  // per rail; 0 when unknown (local runs)
  std::string where;           // "emulated cluster" / "local, 2 pretend nodes"
};

void print_table_header(std::ostream& o, const std::string& algorithm, const BenchContext& c, bool full, bool validate);
void print_table_row(std::ostream& o, const BenchRecord& r, bool full);
// Per size: best railcoll algorithm, auto, mpi:tuned, mpi:han, speed-ups, rail efficiency.
void print_summary(std::ostream& o, const std::vector<BenchRecord>& recs, const BenchContext& c);
// Quiet vs loaded, per algorithm and size: p50 and p99 side by side, slowdowns.
void print_background_summary(std::ostream& o, const std::vector<BenchRecord>& quiet,
                              const std::vector<BenchRecord>& loaded, const BenchContext& c, const std::string& pattern);
// Seconds a node needs at least to receive what it lacks over all its rails.
double rail_bound_us(const BenchContext& c, uint64_t bytes);

std::string to_json_line(const BenchRecord& r);
bool from_json_line(const std::string& line, BenchRecord* r);
void write_json(const std::string& path, const std::vector<BenchRecord>& recs);
void write_csv(const std::string& path, const std::vector<BenchRecord>& recs);
// A log-log PNG of median latency vs size, one line per algorithm (matplotlib);
// for records with samples (barrier), a histogram of the per-call latencies.
// `x_label` names what `bytes` holds when it is not the size (the reproductions'
// scaling figures put the number of nodes there).
bool write_plot(const std::vector<BenchRecord>& recs, const std::string& png, const std::string& title,
                const std::string& x_label = "bytes per rank");
// The path of the running railcoll binary (drivers start their workers with it).
std::string self_exe();
// Whether an emulated cluster is up (`railcoll cluster status` exits 0).
bool cluster_is_up();
// Starts `worker` (a railcoll command line) as the ranks of a job: under
// `railcoll cluster run CLUSTER_ARGS --` or `railcoll run LOCAL_ARGS --`, with
// `--records FILE` appended; returns the job's exit status and the lines the
// workers wrote to FILE. `output` (may be null: inherit stdout) gets the output.
int run_workers(bool cluster, const std::vector<std::string>& cluster_args,
                const std::vector<std::string>& local_args, std::vector<std::string> worker,
                std::vector<std::string>* records, std::string* output = nullptr);
// Runs a command and waits; with `captured`, its standard output is collected.
int run_command(const std::vector<std::string>& argv, std::string* captured = nullptr);

}  // namespace railcoll::cli
