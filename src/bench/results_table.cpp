#include "bench/results_table.hpp"

#include <dirent.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>

#include "bench/bounds.hpp"
#include "bench/report.hpp"
#include "core/collective.hpp"
#include "core/errors.hpp"

namespace railcoll::bench {

namespace {

std::string fixed(double x, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << x;
  return s.str();
}

// Three significant digits, never in exponent form: 0.000123, 0.0456, 1.23, 45.6.
std::string significant(double x) {
  if (x <= 0) return "0";
  const int digits = std::max(0, 2 - static_cast<int>(std::floor(std::log10(x))));
  return fixed(x, std::min(digits, 7));
}

// A row's cell: busbw in GB/s with its share of the binding bound, or a
// barrier's time.
std::string cell(const BenchRecord* r) {
  if (!r) return "-";
  if (r->busbw_GBps < 0) return fixed(judged_us(*r), 1) + " us";
  std::string s = significant(r->busbw_GBps);
  if (r->bound_pct > 0) s += " (" + fixed(r->bound_pct, 0) + "%)";
  return s;
}

std::string rate_text(double bps) {
  std::ostringstream o;
  if (bps >= 1e9) o << std::setprecision(3) << bps / 1e9 << " Gbit/s";
  else o << std::fixed << std::setprecision(0) << bps / 1e6 << " Mbit/s";
  return o.str();
}

// Collectives in the traits table's order.
int collective_order(const std::string& name) {
  const auto& all = user_collectives();
  for (size_t i = 0; i < all.size(); ++i)
    if (collective_name(all[i]) == name) return static_cast<int>(i);
  return 1000;
}

}  // namespace

ResultRegime read_regime(const std::string& dir) {
  ResultRegime g;
  DIR* d = opendir(dir.c_str());
  if (!d) throw InputError("cannot read the directory " + dir);
  std::vector<std::string> files;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() > 5 && name.substr(name.size() - 5) == ".json") files.push_back(dir + "/" + name);
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  for (auto& f : files) {
    ResultRun run;
    run.records = read_records(f);
    if (run.records.empty()) continue;
    const BenchRecord& r = run.records.front();  // every record of a run says the same of it
    BenchContext& c = run.context;
    c.collective = r.collective, c.ranks = r.ranks, c.nodes = r.nodes, c.rails = r.rails, c.max_ppn = r.ppn;
    c.rail_bits_per_s = r.rail_bits_per_s, c.rate_source = r.rate_source, c.ceiling_pct = r.ceiling_pct;
    g.runs.push_back(std::move(run));
  }
  if (g.runs.empty()) throw InputError("no benchmark records (railcoll bench --json) in " + dir);
  std::stable_sort(g.runs.begin(), g.runs.end(), [](const ResultRun& a, const ResultRun& b) {
    return collective_order(a.context.collective) < collective_order(b.context.collective);
  });
  std::ifstream note(dir + "/NOTE");
  std::stringstream text;
  text << note.rdbuf();
  g.note = text.str();
  return g;
}

void write_results_table(std::ostream& o, const std::vector<ResultRegime>& regimes) {
  for (const ResultRegime& g : regimes) {
    const BenchContext& c = g.runs.front().context;
    o << "\n### " << c.nodes << " nodes x " << c.max_ppn << " ranks, " << c.rails << " rails";
    if (c.rail_bits_per_s > 0) o << " x " << rate_text(c.rail_bits_per_s);
    if (c.rate_source == "auto")
      o << ": the faithful cluster (rate found by `cluster up --rate auto`: the plain TCP all-to-all reaches "
        << fixed(c.ceiling_pct, 0) << "% of the rail bound)";
    else if (c.rate_source == "given")
      o << " (rate given)";
    o << "\n\n";
    if (!g.note.empty()) o << g.note << (g.note.back() == '\n' ? "" : "\n") << "\n";
    // The peers of every run of the regime, for the columns.
    std::vector<std::string> peers;
    for (auto& run : g.runs)
      for (auto& r : run.records)
        if (is_peer(r.algorithm) && std::find(peers.begin(), peers.end(), r.algorithm) == peers.end())
          peers.push_back(r.algorithm);
    std::sort(peers.begin(), peers.end());
    o << "| collective | bytes | binds | railcoll (auto) |";
    for (auto& p : peers) o << " " << p << " |";
    o << " best peer / railcoll |\n|---|---:|---|---:|";
    for (size_t i = 0; i < peers.size(); ++i) o << "---:|";
    o << "---:|\n";
    for (const ResultRun& run : g.runs) {
      std::map<uint64_t, std::map<std::string, const BenchRecord*>> by_size;
      for (auto& r : run.records)
        if (r.background.empty() && r.form.empty()) by_size[r.bytes][r.algorithm] = &r;
      for (auto& [bytes, rows] : by_size) {
        const BenchRecord* a = rows.count("auto") ? rows["auto"] : nullptr;
        if (!a) continue;
        const BenchRecord* best = nullptr;
        for (auto& p : peers)
          if (rows.count(p) && (!best || judged_us(*rows[p]) < judged_us(*best))) best = rows[p];
        o << "| " << run.context.collective << " | " << bytes << " | " << (a->binding.empty() ? "-" : a->binding)
          << " | " << cell(a) << " |";
        for (auto& p : peers) o << " " << cell(rows.count(p) ? rows[p] : nullptr) << " |";
        if (best && judged_us(*a) > 0)
          o << " " << fixed(judged_us(*best) / judged_us(*a), 2) << " (" << best->algorithm << ") |\n";
        else
          o << " - |\n";
      }
    }
  }
}

}  // namespace railcoll::bench
