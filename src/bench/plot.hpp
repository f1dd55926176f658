// Plots of benchmark records, drawn by the Python script shipped with railcoll
// (scripts/plot_bench.py, installed as share/railcoll/plot_bench.py).
#pragma once
#include <string>
#include <vector>

#include "bench/records.hpp"

namespace railcoll::bench {

// Where the plot script is: $RAILCOLL_PLOT_SCRIPT, else share/railcoll/plot_bench.py
// beside the running program's bin/ (the build tree and an install alike).
std::string plot_script_path();

// A log-log PNG (or SVG, by the file's extension) of latency against size, one
// line per algorithm, each with its own colour and marker; records with
// samples (barrier) give a histogram of the per-call latencies instead. A
// rooted collective's lines are the span when every record has one.
// `x_label` names what `bytes` holds when it is not the size (the
// reproductions' scaling figures put the number of nodes there). Returns false
// (and says why on stderr) when the plot could not be drawn.
bool write_plot(const std::vector<BenchRecord>& recs, const std::string& path, const std::string& title,
                const std::string& x_label = "bytes per rank");

}  // namespace railcoll::bench
