// The one current table docs/results.md opens with (`railcoll report results`,
// scripts/results.sh): for each regime (the faithful cluster, the 1 Gbit/s one)
// and every collective x size, railcoll's busbw and its share of the binding
// bound, each peer's, and the best peer's time over railcoll's.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "bench/records.hpp"

namespace railcoll::bench {

// One benchmark run of one collective: its records (auto and the peers) and
// the context they share (ranks per node, rails, their rate and its source).
struct ResultRun {
  BenchContext context;
  std::vector<BenchRecord> records;
};

// The runs of one regime (one cluster), with what the table says of it: how
// it was measured (the command, the load averages).
struct ResultRegime {
  std::vector<ResultRun> runs;
  std::string note;
};

// The runs of a directory: every *.json written by railcoll bench --json;
// InputError when there is none.
ResultRegime read_regime(const std::string& dir);

// The markdown: a heading per regime with its cluster and rate, then a table
// of every collective x size.
void write_results_table(std::ostream& o, const std::vector<ResultRegime>& regimes);

}  // namespace railcoll::bench
