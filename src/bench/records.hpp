// Benchmark records: one per (algorithm, size) of a run, the unit every
// benchmark, simulation and report reads and writes; and the context of a run.
// One codec (nlohmann-json) reads and writes them. Files are a JSON array with
// one record per line, so both a JSON reader and a line reader take them; the
// reader takes either form (and the one-object-per-line output of the workers
// and of railcoll-mpi-bench, skipping lines that are not records).
// Field names are kept from the first version; new fields are added only when
// they hold something (docs/results.md, "How to read").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "bench/stats.hpp"
#include "select/tune.hpp"

namespace railcoll::bench {

struct BenchRecord {
  std::string collective = "allgather", algorithm;
  std::string chosen;  // for "auto": the algorithm the rules picked at this size
  uint64_t bytes = 0;  // per rank (allreduce: the vector; nodes on the x axis of a scaling figure)
  int ranks = 0, nodes = 0, rails = 0, iterations = 0;
  int ppn = 0;  // the most ranks on one node; 0: not known (not written)
  double avg_us = 0, min_us = 0, max_us = 0, p50_us = 0;
  double p90_us = -1, p99_us = -1;  // percentiles of the slowest rank's time; -1: not reported
  // Percentiles over calls of the span: last rank out minus first rank in, on
  // the one host clock of every rank; -1: not measured (the ranks' clocks differ).
  double span_p50_us = -1, span_p90_us = -1, span_p99_us = -1;
  // The field's figures (OSU, -z): percentiles over every rank's own time of
  // every call, the longest, and how many of those ranks x calls samples took
  // more than 3x their median (stats.hpp, kSlowFactor); -1: not reported.
  double own_p50_us = -1, own_p90_us = -1, own_p99_us = -1, own_max_us = -1;
  int slow_calls = -1;
  // How the calls were timed: the rest before each call's barrier (0: back to
  // back) and the random 0..skew_us delay of each rank's entry; -1: not said.
  int idle_us = -1, skew_us = -1;
  bool validated = false;
  std::vector<double> samples_us;  // the slowest rank's time of every call (barrier histograms)
  std::string background;          // traffic pattern during the measurement, "" when quiet
  bool simulated = false;          // from the simulator, not measured (written only when true)
  std::string preset;              // the simulator's machine (written only when set)
  // The transport between nodes it ran on: "tcp" or "ofi", and for ofi the
  // libfabric provider ("tcp;ofi_rxm"); "" for records of other programs (MPI).
  std::string transport, provider;
  // --nonblocking / --persistent (OSU's nonblocking benchmarks; bench/overlap.hpp):
  // the form timed ("" for blocking calls), whose post + wait (start + wait) the
  // fields above describe; the blocking call measured alongside (same calls,
  // alternating); the overlap run, post + compute + wait, over each call
  // (overall) and per part (means over ranks of each rank's mean); the overlap
  // in % by OSU's formula from those means, and from medians. -1: not measured.
  std::string form;
  double blocking_avg_us = -1, blocking_p50_us = -1, blocking_p99_us = -1;
  double overall_avg_us = -1, overall_p50_us = -1, overall_p99_us = -1;
  double compute_avg_us = -1, post_avg_us = -1, wait_avg_us = -1;
  double overlap_pct = -1, overlap_p50_pct = -1;
  // How far apart the ranks entered (posted) the same call, median over calls
  // of the last entry minus the first (ranks sharing one clock only; -1:
  // not measured): of the overlap run's calls, and of the pure nonblocking
  // calls'. A call cannot end before its last rank entered it, so where the
  // overlap run's skew exceeds the call's time no engine overlaps it.
  double entry_skew_p50_us = -1, pure_entry_skew_p50_us = -1;
  // Like for like (bench/driver.hpp): how many interleaved rounds the timed
  // calls (`iterations` in all; p50/p99 are over them, own_* over ranks x
  // them) came from, and the untimed calls before each round's; 0 / -1: not said.
  int rounds = 0, warmup = -1;
  // The rate of each rail the run had (bits/s, 0: not known, e.g. loopback),
  // and on the cluster how it was chosen ("given", or "auto" with the share of
  // the rail bound the plain TCP all-to-all reached there; BenchContext).
  double rail_bits_per_s = 0;
  std::string rate_source;
  double ceiling_pct = 0;
  std::string shaper;  // the cluster's rails: "bucket" or "wire" (testbed::Config); "": not on the cluster
  // nccl-tests' bandwidths (bench/bounds.hpp), from the judged time (the span
  // for a rooted collective when measured, else the slowest rank's p50), in
  // GB/s; busbw_pct: busbw as a share of one node's rails x rate; -1: none.
  double algbw_GBps = -1, busbw_GBps = -1, busbw_pct = -1;
  // The physical bounds (bench/bounds.hpp): the rails' and the cores', in us,
  // the larger one ("rail" or "compute") and the judged time's share of it, %.
  double rail_bound_us = -1, compute_bound_us = -1, bound_pct = -1;
  std::string binding;
  // Every rank's own time and every call's span, carried between a worker and
  // the driver so rounds can be pooled (written only while raw.calls > 0).
  RawTimes raw;

  bool has_span() const { return span_p50_us >= 0; }
  bool has_own() const { return own_p50_us >= 0; }
  bool has_overlap() const { return overlap_pct >= 0; }
};

// What a run was: for the headers, the rail bound and the summary.
struct BenchContext {
  std::string collective = "allgather";
  int ranks = 0, nodes = 0, rails = 0, max_ppn = 0;
  std::vector<int> ranks_per_node;
  double rail_bits_per_s = 0;  // per rail; 0 when unknown (local runs)
  std::string where;           // "emulated cluster" / "local processes, pretend nodes over loopback"
  bool shared_clock = false;   // every rank reads the same CLOCK_MONOTONIC: spans are measured
  // The median span of an empty call after a barrier: how unevenly the ranks
  // leave the barrier, which every span includes; -1: not measured.
  double empty_span_p50_us = -1;
  // This machine's rates for the compute bound (bench/bounds.hpp), bytes/s
  // with all `cores` at once; 0: not measured.
  double copy_Bps = 0, reduce_Bps = 0;
  int cores = 0;
  // How the rails' rate was chosen: "given" or "auto" (found by `cluster up
  // --rate auto`, with the share of the rail bound the plain TCP all-to-all
  // reached there); "" : not on the cluster.
  std::string rate_source;
  double ceiling_pct = 0;
  std::string shaper;  // "bucket" or "wire" (testbed::Config::shaper); "": not on the cluster
};

// One record as one line of JSON (no newline), fields in the documented order.
std::string to_json_line(const BenchRecord& r);
// false when the line holds no record (other output, "[", "]"); a trailing
// comma is allowed. Throws InputError for a record with a field of the wrong type.
bool from_json_line(const std::string& line, BenchRecord* r);

// The context as one line of JSON ({"context":{...}}); parse_records reads it back.
std::string context_line(const BenchContext& c);

// Records in `text`: a JSON array (or one object), or one object per line with
// other lines skipped. A context object sets *ctx. Throws InputError naming
// `source` and the record for malformed records.
std::vector<BenchRecord> parse_records(const std::string& text, BenchContext* ctx = nullptr,
                                       const std::string& source = "records");
// The records of a file; InputError if it cannot be read.
std::vector<BenchRecord> read_records(const std::string& path, BenchContext* ctx = nullptr);

// Quiet, measured records of known algorithms as measurements for tuning
// (select/tune.hpp): the span for rooted collectives when it was measured (a
// root's or a receiver's own time hides the others), else the slowest rank's
// p50; ppn from the record, else ranks spread evenly over the nodes.
std::vector<Measurement> measurements(const std::vector<BenchRecord>& recs);

// A JSON array, one record per line. Throws InputError if the file cannot be written.
void write_json(const std::string& path, const std::vector<BenchRecord>& recs);
// One row per record; the first columns are those of the first version.
void write_csv(const std::string& path, const std::vector<BenchRecord>& recs);

}  // namespace railcoll::bench
