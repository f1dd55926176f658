// railcoll sim reproduce seed001|seed002|seed003|seed004|all ... [--json F] [--plot-dir D]
//
// The seeds' headline results beside the simulator's (src/sim/reproduce.hpp):
// this verb prints them, writes one JSON record per quantity and one plot per
// figure (and its data as CSV).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "args.hpp"
#include "bench/plot.hpp"
#include "bench/records.hpp"
#include "bench/report.hpp"
#include "testbed/spawn.hpp"
#include "commands.hpp"
#include "sim/reproduce.hpp"

namespace railcoll::cli {

using namespace railcoll::bench;  // records, reports and plots

namespace {

std::string json_escaped(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

std::string number(double x) {
  std::ostringstream o;
  o << std::setprecision(6) << x;
  return o.str();
}

// A figure's points as benchmark records, for write_plot.
std::vector<BenchRecord> records(const sim::Figure& f) {
  std::vector<BenchRecord> v;
  for (const sim::FigurePoint& p : f.points) {
    BenchRecord r;
    r.simulated = true;
    r.collective = p.collective;
    r.algorithm = p.label;
    r.bytes = p.x;
    r.ranks = p.ranks;
    r.nodes = p.nodes;
    r.rails = p.rails;
    r.avg_us = r.min_us = r.max_us = p.us;
    r.iterations = 1;
    if (!p.samples_us.empty()) {
      r.samples_us = p.samples_us;
      set_percentiles(&r, p.samples_us);
      r.iterations = static_cast<int>(p.samples_us.size());
    } else {
      r.p50_us = p.us;
    }
    r.background = p.background;
    v.push_back(r);
  }
  return v;
}

void print(const std::vector<sim::Quantity>& q) {
  std::cout << "# paper    figure  quantity" << std::string(60, ' ') << "paper     sim  rel.error\n";
  for (auto& x : q) {
    std::cout << std::left << std::setw(11) << x.paper << std::setw(8) << x.figure << std::setw(85) << x.quantity
              << std::right << std::fixed << std::setprecision(2) << std::setw(6) << x.paper_value << std::setw(8)
              << x.sim_value;
    if (x.kind == "band")
      std::cout << "   band " << x.band_lo << ".." << x.band_hi << (x.met() ? " holds it" : " MISSES it");
    else if (x.unit == "at least")
      std::cout << (x.met() ? "   ok (above)" : "   MISSED (below)");
    else
      std::cout << std::setw(9) << std::setprecision(0) << 100 * x.rel_error() << "%" << (x.met() ? " met" : "");
    std::cout << "\n";
  }
  int points = 0, met_points = 0, bands = 0, met_bands = 0;
  for (auto& x : q) {
    (x.kind == "band" ? bands : points) += 1;
    (x.kind == "band" ? met_bands : met_points) += x.met();
  }
  std::cout << "# " << met_points << " of " << points << " point quantities within 20% (or above, for 'at least'); "
            << met_bands << " of " << bands << " bands hold the paper's value\n";
  bool header = false;
  for (auto& x : q)
    if (!x.met() && !x.cause.empty()) {
      if (!header) std::cout << "# why the others miss (docs/simulator.md, \"Reproductions\"):\n";
      header = true;
      std::cout << "#  " << x.paper << ", " << x.quantity << ": " << x.cause << "\n";
    }
}

void write_json(const std::string& path, const std::vector<sim::Quantity>& q) {
  std::ofstream f(path);
  f << "[\n";
  for (size_t i = 0; i < q.size(); ++i) {
    const sim::Quantity& x = q[i];
    f << "  {\"paper\":\"" << x.paper << "\",\"figure\":\"" << x.figure << "\",\"quantity\":\""
      << json_escaped(x.quantity) << "\",\"paper_value\":" << number(x.paper_value)
      << ",\"sim_value\":" << number(x.sim_value) << ",\"rel_error\":" << number(x.rel_error()) << ",\"kind\":\""
      << x.kind << "\",\"unit\":\"" << x.unit << "\"";
    if (!x.open_input.empty())  // a band, or a point whose open input moves it less than 20%
      f << ",\"band_lo\":" << number(x.band_lo) << ",\"band_hi\":" << number(x.band_hi) << ",\"open_input\":\""
        << json_escaped(x.open_input) << "\"";
    if (!x.met() && !x.cause.empty()) f << ",\"cause\":\"" << json_escaped(x.cause) << "\"";
    f << ",\"met\":" << (x.met() ? "true" : "false") << "}" << (i + 1 < q.size() ? ",\n" : "\n");
  }
  f << "]\n";
  if (!f) throw UsageError("cannot write '" + path + "'");
}

}  // namespace

int cmd_reproduce(const std::vector<std::string>& argv) {
  Args a(argv, {}, {"json", "plot-dir"});
  const auto& names = sim::reproduction_names();
  const std::string usage = "railcoll sim reproduce seed001|seed002|seed003|seed004|all ... [--json F] [--plot-dir D]";
  if (a.positional().empty()) throw UsageError("usage: " + usage);
  for (auto& w : a.positional())
    if (w != "all" && std::find(names.begin(), names.end(), w) == names.end())
      throw UsageError("unknown reproduction '" + w + "' (" + usage + ")");
  const auto& wanted = a.positional();
  const bool all = std::find(wanted.begin(), wanted.end(), "all") != wanted.end();
  std::string plots = a.str("plot-dir");
  if (!plots.empty()) std::filesystem::create_directories(plots);
  std::vector<sim::Quantity> q;
  for (auto& name : names) {
    if (!all && std::find(wanted.begin(), wanted.end(), name) == wanted.end()) continue;
    sim::Reproduction r = sim::reproduce(name);
    q.insert(q.end(), r.quantities.begin(), r.quantities.end());
    if (!plots.empty())
      for (auto& f : r.figures) {  // the figure's data beside its plot
        write_csv(plots + "/" + f.name + ".csv", records(f));
        write_plot(records(f), plots + "/" + f.name + ".png", f.title, f.x_label);
      }
  }
  print(q);
  if (a.has("json")) write_json(a.str("json"), q);
  return 0;
}

}  // namespace railcoll::cli
