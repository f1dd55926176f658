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

// A share of a bound: the bound's time over the judged time, in percent.
std::string share(double bound_us, const BenchRecord& r) {
  const double t = judged_us(r);
  return bound_us > 0 && t > 0 ? fixed(100 * bound_us / t, 0) + "%" : "-";
}

// A peer's cell: busbw in GB/s with its share of the rail bound, or a
// barrier's time.
std::string peer_cell(const BenchRecord* r) {
  if (!r) return "-";
  if (r->busbw_GBps < 0) return fixed(judged_us(*r), 1) + " us";
  return significant(r->busbw_GBps) + " (" + share(r->rail_bound_us, *r) + ")";
}

// railcoll's cells: busbw (or a barrier's time), its share of the rail bound,
// of the binding bound, and the tail: p99 over p50 of the judged time (the
// span for rooted collectives, else the slowest rank's; a rank's own time
// says little of a rooted call, whose root leaves first).
std::string railcoll_cells(const BenchRecord& r) {
  std::string s = r.busbw_GBps < 0 ? fixed(judged_us(r), 1) + " us" : significant(r.busbw_GBps);
  s += " | " + share(r.rail_bound_us, r) + " | " + (r.bound_pct > 0 ? fixed(r.bound_pct, 0) + "%" : "-");
  const bool span = r.span_p50_us > 0 && r.span_p99_us > 0 && judged_us(r) == r.span_p50_us;
  const double p50 = span ? r.span_p50_us : r.p50_us, p99 = span ? r.span_p99_us : r.p99_us;
  s += " | " + (p50 > 0 && p99 > 0 ? fixed(p99 / p50, 1) : std::string("-"));
  return s;
}

std::string rate_text(double bps) {
  std::ostringstream o;
  if (bps >= 1e9) o << std::setprecision(3) << bps / 1e9 << " Gbit/s";
  else o << std::fixed << std::setprecision(0) << bps / 1e6 << " Mbit/s";
  return o.str();
}

// The calls each row's p50/p99 are over (the same on both sides: like for
// like), as their range over the regime's railcoll rows.
std::string samples_text(const ResultRegime& g) {
  int lo = 0, hi = 0;
  for (auto& run : g.runs)
    for (auto& r : run.records)
      if (r.algorithm == "auto" && r.iterations > 0) {
        lo = lo ? std::min(lo, r.iterations) : r.iterations;
        hi = std::max(hi, r.iterations);
      }
  if (!hi) return "not recorded";
  return lo == hi ? std::to_string(lo) + " calls" : std::to_string(lo) + "-" + std::to_string(hi) + " calls";
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
    c.rail_bits_per_s = r.rail_bits_per_s, c.rate_source = r.rate_source, c.ceiling_pct = r.ceiling_pct, c.shaper = r.shaper;
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
    if (c.shaper == "wire") o << "; wire shaping (no burst above the rate)";
    o << "\n\n";
    if (!g.note.empty()) o << g.note << (g.note.back() == '\n' ? "" : "\n") << "\n";
    // The peers of every run of the regime, for the columns.
    std::vector<std::string> peers;
    for (auto& run : g.runs)
      for (auto& r : run.records)
        if (is_peer(r.algorithm) && std::find(peers.begin(), peers.end(), r.algorithm) == peers.end())
          peers.push_back(r.algorithm);
    std::sort(peers.begin(), peers.end());
    o << "railcoll's busbw in GB/s (nccl-tests' factors; a barrier: its p50 time), its share of the rail "
         "bound and of the binding bound (`binds`: rail or compute), p99/p50 of the time judged (the span for the rooted collectives, else the slowest rank's); each peer's busbw (share of the "
         "rail bound); the best peer's p50 time over railcoll's (above 1: railcoll ahead). Samples per row: "
      << samples_text(g) << ".\n\n";
    o << "| collective | bytes | binds | railcoll busbw | % rail | % binding | p99/p50 |";
    for (auto& p : peers) o << " " << p << " |";
    o << " best peer / railcoll |\n|---|---:|---|---:|---:|---:|---:|";
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
          << " | " << railcoll_cells(*a) << " |";
        for (auto& p : peers) o << " " << peer_cell(rows.count(p) ? rows[p] : nullptr) << " |";
        if (best && judged_us(*a) > 0)
          o << " " << fixed(judged_us(*best) / judged_us(*a), 2) << " (" << best->algorithm << ") |\n";
        else
          o << " - |\n";
      }
    }
  }
}

}  // namespace railcoll::bench
