#include "bench/report.hpp"

#include <algorithm>
#include <iomanip>
#include <map>
#include <sstream>

#include "bench/bounds.hpp"
#include "bench/stats.hpp"
#include "core/errors.hpp"

namespace railcoll::bench {

std::vector<uint64_t> bench_sizes(Collective c, uint64_t min, uint64_t max, int factor) {
  const CollectiveTraits& t = traits(c);
  if (!t.moves_data) return {0};
  // The benchmark's reductions sum floats: whole 4-byte elements.
  const uint64_t element = t.reducing ? dtype_size(DataType::Float32) : 1;
  std::vector<uint64_t> v;
  for (uint64_t s = std::max(min, element); s <= max; s *= std::max(2, factor))
    v.push_back((s + element - 1) / element * element);
  v.erase(std::unique(v.begin(), v.end()), v.end());
  if (min == 0) v.insert(v.begin(), 0);
  return v;
}

std::vector<uint64_t> bench_sizes(const std::string& collective, uint64_t min, uint64_t max) {
  return bench_sizes(collective_from_name(collective), min, max);
}

CallCounts calls_for(uint64_t bytes, int ranks, int iters, int warmup, int rounds) {
  const uint64_t per_call = std::max<uint64_t>(1, bytes * static_cast<uint64_t>(std::max(1, ranks)));
  const uint64_t fit = std::max<uint64_t>(kMinCalls, kCallBudgetBytes / per_call);
  const int total = static_cast<int>(std::min<uint64_t>(static_cast<uint64_t>(std::max(1, iters)), fit));
  rounds = std::max(1, rounds);
  CallCounts c;
  c.timed = (total + rounds - 1) / rounds;
  c.untimed = std::min(warmup, std::max(1, c.timed / 5));
  return c;
}

void set_figures(BenchRecord* r, const SizeStats& s, bool samples) {
  r->avg_us = s.avg_us, r->min_us = s.min_us, r->max_us = s.max_us;
  if (samples) r->samples_us = s.slowest_us;
  set_percentiles(r, s.slowest_us);
  set_span_percentiles(r, s.span_us);
  set_own_times(r, s.own);
}

BenchRecord pooled_record(const std::vector<BenchRecord>& rounds) {
  if (rounds.empty()) throw InputError("no rounds to pool");
  BenchRecord r = rounds.front();
  RawTimes all;
  for (const BenchRecord& x : rounds) {
    if (x.raw.calls == 0) throw InputError(x.algorithm + " at " + std::to_string(x.bytes) + " B: a round without its calls' times");
    if (x.algorithm != r.algorithm || x.bytes != r.bytes || x.background != r.background)
      throw InputError("rounds of different runs: " + r.algorithm + " and " + x.algorithm);
    all = pooled(all, x.raw);
    r.validated = r.validated && x.validated;
  }
  r.iterations = all.calls;
  r.rounds = static_cast<int>(rounds.size());
  r.samples_us.clear();
  r.span_p50_us = r.span_p90_us = r.span_p99_us = -1;  // unless every round has them
  set_figures(&r, stats_of(all), !rounds.front().samples_us.empty());
  r.raw = RawTimes{};
  return r;
}

void set_percentiles(BenchRecord* r, std::vector<double> slowest_us) {
  if (slowest_us.empty()) return;
  Percentiles p = percentiles(std::move(slowest_us));
  r->p50_us = p.p50, r->p90_us = p.p90, r->p99_us = p.p99;
}

void set_span_percentiles(BenchRecord* r, std::vector<double> span_us) {
  if (span_us.empty()) return;
  Percentiles p = percentiles(std::move(span_us));
  r->span_p50_us = p.p50, r->span_p90_us = p.p90, r->span_p99_us = p.p99;
}

void set_own_times(BenchRecord* r, const OwnTimes& own) {
  r->own_p50_us = own.p50, r->own_p90_us = own.p90, r->own_p99_us = own.p99, r->own_max_us = own.max;
  r->slow_calls = own.slow;
}

SummaryMetric summary_metric(const std::string& collective, const std::vector<BenchRecord>& recs) {
  Collective c;
  SummaryMetric m;
  if (!parse_collective(collective, &c) || !traits(c).rooted || recs.empty()) return m;
  m.span = std::all_of(recs.begin(), recs.end(), [](const BenchRecord& r) { return r.has_span(); });
  return m;
}

void print_table_header(std::ostream& o, const std::string& algorithm, const BenchContext& c, bool full,
                        bool validate) {
  o << "\n# railcoll " << c.collective << ": " << algorithm << " (" << c.ranks << " ranks, " << c.nodes << " nodes, "
    << c.rails << " rail" << (c.rails > 1 ? "s" : "") << "; " << c.where << (validate ? "; every byte validated" : "")
    << ")\n";
  o << "# Size       Avg Latency(us)   Median(us)";
  if (full) o << "   Min Latency(us)   Max Latency(us)  Iterations";
  o << "      p90(us)      p99(us)";
  if (c.shared_clock) o << "   Span p50(us)   Span p99(us)";
  o << "  Own p50(us)  Own p90(us)  Own p99(us)  >3x p50";
  Collective coll;
  if (parse_collective(c.collective, &coll) && traits(coll).moves_data) o << "  algbw(GB/s)  busbw(GB/s)";
  o << "\n";
}

void print_table_row(std::ostream& o, const BenchRecord& r, bool full) {
  o << std::left << std::setw(10) << r.bytes << std::right << std::fixed << std::setprecision(2) << std::setw(18)
    << r.avg_us << std::setw(13) << r.p50_us;
  if (full) o << std::setw(18) << r.min_us << std::setw(18) << r.max_us << std::setw(12) << r.iterations;
  if (r.p99_us >= 0) o << std::setw(13) << r.p90_us << std::setw(13) << r.p99_us;
  if (r.has_span()) o << std::setw(15) << r.span_p50_us << std::setw(15) << r.span_p99_us;
  if (r.has_own())
    o << std::setw(13) << r.own_p50_us << std::setw(13) << r.own_p90_us << std::setw(13) << r.own_p99_us
      << std::setw(9) << r.slow_calls;
  if (r.busbw_GBps >= 0) o << std::setprecision(4) << std::setw(13) << r.algbw_GBps << std::setw(13) << r.busbw_GBps;
  if (!r.chosen.empty()) o << "   (" << r.chosen << ")";
  o << "\n" << std::flush;
}

void print_overlap_header(std::ostream& o, const std::string& algorithm, const BenchContext& c, const std::string& form,
                          bool validate) {
  o << "\n# railcoll " << c.collective << " " << form << ": " << algorithm << " (" << c.ranks << " ranks, " << c.nodes
    << " nodes, " << c.rails << " rail" << (c.rails > 1 ? "s" : "") << "; " << c.where
    << (validate ? "; every byte validated" : "") << ")\n"
    << "# blocking and " << (form == "persistent" ? "start + wait" : "post + wait")
    << ": p50/p99 of the slowest rank per call; compute, overall, post, wait: means over ranks (OSU); overlap % = "
       "100 (1 - (overall - compute) / nonblocking), from means (OSU) and from medians; skew: how far apart the "
       "ranks posted the overlap run's calls (median over calls; -1: no shared clock)\n"
    << "# Size     Blocking(us)  Nonblocking(us)  nb/blk  Blk p99(us)  Nb p99(us)  Compute(us)  Overall(us)  "
       "Post(us)  Wait(us)  Overlap(%)  Overlap p50(%)  Skew p50(us)\n";
}

void print_overlap_row(std::ostream& o, const BenchRecord& r) {
  o << std::left << std::setw(9) << r.bytes << std::right << std::fixed << std::setprecision(2) << std::setw(13)
    << r.blocking_p50_us << std::setw(17) << r.p50_us << std::setprecision(3) << std::setw(8)
    << (r.blocking_p50_us > 0 ? r.p50_us / r.blocking_p50_us : 0) << std::setprecision(2) << std::setw(13)
    << r.blocking_p99_us << std::setw(12) << r.p99_us << std::setw(13) << r.compute_avg_us << std::setw(13)
    << r.overall_avg_us << std::setw(10) << r.post_avg_us << std::setw(10) << r.wait_avg_us << std::setprecision(1)
    << std::setw(12) << r.overlap_pct << std::setw(16) << r.overlap_p50_pct << std::setw(14)
    << r.entry_skew_p50_us;
  if (!r.chosen.empty()) o << "   (" << r.chosen << ")";
  o << "\n" << std::flush;
}

void print_overlap_summary(std::ostream& o, const std::vector<BenchRecord>& recs, const BenchContext& c) {
  // Per size, railcoll's own runs first, then through MPI, then Open MPI's.
  auto order = [](const std::string& a) { return a == "auto" ? 0 : a == "mpi:railcoll" ? 2 : a.rfind("mpi:", 0) == 0 ? 3 : 1; };
  std::map<uint64_t, std::vector<const BenchRecord*>> by_size;
  std::string form;
  for (auto& r : recs)
    if (r.has_overlap() && r.background.empty()) by_size[r.bytes].push_back(&r), form = r.form;
  if (by_size.empty()) return;
  o << "\n# " << (form.empty() ? "nonblocking" : form) << " " << c.collective << ", " << c.ranks << " ranks on "
    << c.nodes << " nodes, " << c.rails << " rail" << (c.rails > 1 ? "s" : "") << " (" << c.where
    << "): latency = p50 of the slowest rank per call, us; nb/blk = nonblocking / blocking (target <= 1.05 from 4 "
       "KiB); overlap % by OSU's formula from means, and from medians (target >= 80 from 64 KiB, above Open MPI's)\n"
    << "# Size     run                     blocking  nonblocking   nb/blk    compute    overall  overlap%  "
       "overlap p50%  skew p50\n";
  for (auto& [bytes, runs] : by_size) {
    std::stable_sort(runs.begin(), runs.end(),
                     [&](const BenchRecord* a, const BenchRecord* b) { return order(a->algorithm) < order(b->algorithm); });
    for (const BenchRecord* r : runs)
      o << std::left << std::setw(9) << bytes << std::setw(22) << r->algorithm << std::right << std::fixed
        << std::setprecision(1) << std::setw(10) << r->blocking_p50_us << std::setw(13) << r->p50_us
        << std::setprecision(3) << std::setw(9) << (r->blocking_p50_us > 0 ? r->p50_us / r->blocking_p50_us : 0)
        << std::setprecision(1) << std::setw(11) << r->compute_avg_us << std::setw(11) << r->overall_avg_us
        << std::setw(10) << r->overlap_pct << std::setw(14) << r->overlap_p50_pct << std::setw(10)
        << r->entry_skew_p50_us << "\n";
  }
  o << std::flush;
}

double rail_bound_us(const BenchContext& c, uint64_t bytes) {
  Collective coll;
  if (c.rail_bits_per_s <= 0 || c.nodes < 2 || c.ranks_per_node.empty() || !parse_collective(c.collective, &coll))
    return 0;
  int fewest = *std::min_element(c.ranks_per_node.begin(), c.ranks_per_node.end());
  double node_bytes = traits(coll).node_recv_bytes(c.ranks, c.nodes, fewest, static_cast<double>(bytes));
  return node_bytes * 8 / (c.rail_bits_per_s * c.rails) * 1e6;
}

bool is_peer(const std::string& algorithm) {
  if (algorithm == "mpi:railcoll") return false;  // railcoll through the MPI layer
  // oneCCL's row is the best of its settings ("oneccl"); each setting's own
  // ("oneccl:w1", ...) is kept in the records but is not a peer of its own.
  return algorithm.rfind("mpi:", 0) == 0 || algorithm == "oneccl";
}

bool is_railcoll_own(const std::string& algorithm) {
  return !is_peer(algorithm) && algorithm != "mpi:railcoll" && algorithm.rfind("oneccl:", 0) != 0;
}

namespace {

// The peers' labels among quiet records, in a fixed order: Open MPI's, then the others.
std::vector<std::string> peers_in(const std::vector<BenchRecord>& recs) {
  std::vector<std::string> peers;
  for (auto& r : recs)
    if (r.background.empty() && is_peer(r.algorithm) &&
        std::find(peers.begin(), peers.end(), r.algorithm) == peers.end())
      peers.push_back(r.algorithm);
  auto order = [](const std::string& p) {
    return p == "mpi:tuned" ? 0 : p == "mpi:han" ? 1 : p.rfind("mpi:", 0) == 0 ? 2 : 3;
  };
  std::stable_sort(peers.begin(), peers.end(), [&](auto& a, auto& b) { return order(a) < order(b); });
  return peers;
}

std::string number(double x, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << x;
  return s.str();
}

// "tuned" for "mpi:tuned": short names for column heads.
std::string short_name(const std::string& label) { return label.substr(label.find(':') + 1); }

}  // namespace

void print_summary(std::ostream& o, const std::vector<BenchRecord>& recs, const BenchContext& c) {
  std::vector<BenchRecord> quiet;
  for (auto& r : recs)
    if (r.background.empty()) quiet.push_back(r);  // loaded runs have their own table
  const SummaryMetric m = summary_metric(c.collective, quiet);
  std::map<uint64_t, std::map<std::string, const BenchRecord*>> by_size;
  for (auto& r : quiet) by_size[r.bytes][r.algorithm] = &r;
  const std::vector<std::string> peers = peers_in(quiet);
  bool have_bound = c.rail_bits_per_s > 0 && c.nodes > 1;
  o << "\n# Summary: " << c.collective << ", " << c.ranks << " ranks on " << c.nodes << " nodes, " << c.rails << " rail"
    << (c.rails > 1 ? "s" : "");
  if (c.rail_bits_per_s > 0) o << " x " << c.rail_bits_per_s / 1e9 << " Gbit/s";
  o << " (" << c.where << "); " << m.name() << " in us";
  if (m.span) o << " (first rank in to last rank out)";
  o << "; speed-up = peer / auto";
  if (have_bound) o << "; auto eff = the binding bound (the larger of rail and compute) / auto's time";
  o << "\n";
  if (m.span && c.empty_span_p50_us >= 0)
    o << "# every span includes how unevenly the ranks leave the barrier before the call: an empty call's span is "
      << std::fixed << std::setprecision(1) << c.empty_span_p50_us << " us (median)\n";
  // Columns wide enough for the longest algorithm name (smp_multileader_paced) and a time.
  constexpr int kBestWidth = 33, kAutoWidth = 34, kPeerWidth = 12;
  o << std::left << std::setw(9) << "# Size" << std::setw(kBestWidth) << "best railcoll" << std::setw(kAutoWidth) << "auto"
    << std::right;
  for (auto& p : peers) o << std::setw(kPeerWidth) << p;
  for (auto& p : peers) o << std::setw(kPeerWidth) << "auto/" + short_name(p);
  if (have_bound) o << "  rail bound  compute bound  binds  auto eff";
  o << "\n";
  auto cell = [&](const BenchRecord* r) { return r ? number(m.p50(*r), 1) : std::string("-"); };
  for (auto& [bytes, algos] : by_size) {
    const BenchRecord* best = nullptr;
    for (auto& [name, r] : algos)
      if (is_railcoll_own(name) && name != "auto" && (!best || m.p50(*r) < m.p50(*best))) best = r;
    const BenchRecord* a = algos.count("auto") ? algos["auto"] : nullptr;
    std::ostringstream b, au;
    if (best) b << cell(best) << " " << best->algorithm;
    if (a) au << cell(a) << " " << a->chosen;
    o << std::left << std::setw(9) << bytes << std::setw(kBestWidth) << (best ? b.str() : "-") << std::setw(kAutoWidth)
      << (a ? au.str() : "-") << std::right;
    for (auto& p : peers) o << std::setw(kPeerWidth) << cell(algos.count(p) ? algos[p] : nullptr);
    for (auto& p : peers) {
      const BenchRecord* base = algos.count(p) ? algos[p] : nullptr;
      o << std::setw(kPeerWidth) << (a && base && m.p50(*a) > 0 ? number(m.p50(*base) / m.p50(*a), 2) + "x" : "-");
    }
    if (have_bound) {
      const BenchRecord* x = a ? a : best;
      const double rail = x && x->rail_bound_us > 0 ? x->rail_bound_us : rail_bound_us(c, bytes);
      const double compute = x ? x->compute_bound_us : -1;
      o << std::setw(12) << (rail > 0 ? number(rail, 1) : "-") << std::setw(15)
        << (compute > 0 ? number(compute, 1) : "-") << std::setw(7) << (x && !x->binding.empty() ? x->binding : "-");
      if (a && a->bound_pct > 0) o << std::setw(10) << number(a->bound_pct, 0) + "%";
      else if (a && m.p50(*a) > 0 && rail > 0) o << std::setw(10) << number(100 * rail / m.p50(*a), 0) + "%";
      else o << std::setw(10) << "-";
    }
    o << "\n";
  }
  o << std::flush;
}

void print_bandwidth_summary(std::ostream& o, const std::vector<BenchRecord>& recs, const BenchContext& c) {
  std::map<uint64_t, std::map<std::string, const BenchRecord*>> by_size;
  std::vector<BenchRecord> quiet;
  for (auto& r : recs)
    if (r.background.empty()) {
      quiet.push_back(r);
      if (r.busbw_GBps >= 0 && (r.algorithm == "auto" || is_peer(r.algorithm))) by_size[r.bytes][r.algorithm] = &r;
    }
  if (by_size.empty()) return;
  const std::vector<std::string> peers = peers_in(quiet);
  const double node_GBps = c.rail_bits_per_s * std::max(1, c.rails) / 8e9;
  Collective coll;
  if (!parse_collective(c.collective, &coll)) return;
  o << "\n# Bus bandwidth: " << c.collective << ", busbw = algbw x " << bus_factor_text(coll) << " (nccl-tests), GB/s; (%) its share of one node's " << c.rails << " rail" << (c.rails > 1 ? "s" : "");
  if (node_GBps > 0) o << " = " << number(node_GBps, 3) << " GB/s";
  o << "; then eff = the binding bound / the time; ratio = the best peer's time / auto's\n";
  constexpr int kCell = 22;
  o << std::left << std::setw(9) << "# Size" << std::setw(9) << "binds" << std::right << std::setw(kCell) << "auto";
  for (auto& p : peers) o << std::setw(kCell) << p;
  o << std::setw(16) << "ratio" << "\n";
  auto cell = [&](const BenchRecord* r) {
    if (!r) return std::string("-");
    std::string s = number(r->busbw_GBps, 3);
    if (r->busbw_pct >= 0) s += " (" + number(r->busbw_pct, 0) + "%)";
    s += r->bound_pct > 0 ? " " + number(r->bound_pct, 0) + "%" : " -";
    return s;
  };
  for (auto& [bytes, algos] : by_size) {
    const BenchRecord* a = algos.count("auto") ? algos["auto"] : nullptr;
    const BenchRecord* best = nullptr;
    for (auto& p : peers)
      if (algos.count(p) && (!best || judged_us(*algos[p]) < judged_us(*best))) best = algos[p];
    o << std::left << std::setw(9) << bytes << std::setw(9) << (a && !a->binding.empty() ? a->binding : "-")
      << std::right << std::setw(kCell) << cell(a);
    for (auto& p : peers) o << std::setw(kCell) << cell(algos.count(p) ? algos[p] : nullptr);
    o << std::setw(16)
      << (a && best && judged_us(*a) > 0 ? number(judged_us(*best) / judged_us(*a), 2) + "x " + short_name(best->algorithm)
                                         : "-")
      << "\n";
  }
  o << std::flush;
}

void print_field_summary(std::ostream& o, const std::vector<BenchRecord>& recs, const BenchContext& c) {
  std::map<uint64_t, std::map<std::string, const BenchRecord*>> by_size;
  const BenchRecord* any = nullptr;
  for (auto& r : recs)
    if (r.background.empty() && r.has_own()) by_size[r.bytes][r.algorithm] = &r, any = any ? any : &r;
  if (!any) return;
  o << "\n# The field's figures: " << c.collective << ", each rank's own time ("
    << (any->idle_us == 0 ? "calls back to back" : any->idle_us > 0 ? "after " + std::to_string(any->idle_us) + " us of rest" : "")
    << (any->skew_us > 0 ? ", entries skewed by 0.." + std::to_string(any->skew_us) + " us" : "")
    << "); mean = OSU's Avg Latency (over ranks of each rank's mean), us; base = the best peer (Open MPI's "
       "tuned or HAN, oneCCL), > 1: railcoll ahead; own p99 in us (p99/p50 in brackets) and calls > 3x p50, over ranks x calls\n";
  o << std::left << std::setw(9) << "# Size" << std::right << std::setw(10) << "auto" << std::setw(14) << "mpi:railcoll"
    << std::setw(11) << "mpi:tuned" << std::setw(10) << "mpi:han" << std::setw(11) << "base/auto" << std::setw(13)
    << "base/mpi:rc" << std::setw(14) << "p99 auto" << std::setw(14) << "mpi:rc" << std::setw(14) << "tuned"
    << std::setw(14) << "han" << "   >3x auto mpi:rc tuned  han\n";
  auto get = [](const std::map<std::string, const BenchRecord*>& m, const char* name) -> const BenchRecord* {
    auto it = m.find(name);
    return it == m.end() ? nullptr : it->second;
  };
  for (auto& [bytes, algos] : by_size) {
    const BenchRecord *a = get(algos, "auto"), *rc = get(algos, "mpi:railcoll"), *tuned = get(algos, "mpi:tuned"),
                      *han = get(algos, "mpi:han");
    const BenchRecord* base = nullptr;  // the best peer by its mean
    for (auto& [name, r] : algos)
      if (is_peer(name) && (!base || r->avg_us < base->avg_us)) base = r;
    auto mean = [](const BenchRecord* r) {
      std::ostringstream s;
      if (r) s << std::fixed << std::setprecision(1) << r->avg_us; else s << "-";
      return s.str();
    };
    auto ratio = [&](const BenchRecord* r) {
      std::ostringstream s;
      if (r && base && r->avg_us > 0) s << std::fixed << std::setprecision(2) << base->avg_us / r->avg_us << "x";
      else s << "-";
      return s.str();
    };
    auto tail = [](const BenchRecord* r) {  // "p99 (p99/p50)"
      std::ostringstream s;
      if (r && r->has_own() && r->own_p50_us > 0)
        s << std::fixed << std::setprecision(0) << r->own_p99_us << " (" << std::setprecision(1)
          << r->own_p99_us / r->own_p50_us << ")";
      else s << "-";
      return s.str();
    };
    auto slow = [](const BenchRecord* r) { return r && r->has_own() ? std::to_string(r->slow_calls) : std::string("-"); };
    o << std::left << std::setw(9) << bytes << std::right << std::setw(10) << mean(a) << std::setw(14) << mean(rc)
      << std::setw(11) << mean(tuned) << std::setw(10) << mean(han) << std::setw(11) << ratio(a) << std::setw(13)
      << ratio(rc) << std::setw(14) << tail(a) << std::setw(14) << tail(rc) << std::setw(14) << tail(tuned)
      << std::setw(14) << tail(han) << std::setw(11) << slow(a) << std::setw(7) << slow(rc) << std::setw(6)
      << slow(tuned) << std::setw(5) << slow(han) << "\n";
  }
  o << std::flush;
}

void print_background_summary(std::ostream& o, const std::vector<BenchRecord>& quiet,
                              const std::vector<BenchRecord>& loaded, const BenchContext& c,
                              const std::string& pattern) {
  std::vector<BenchRecord> both = quiet;
  both.insert(both.end(), loaded.begin(), loaded.end());
  const SummaryMetric m = summary_metric(c.collective, both);
  o << "\n# Background traffic: " << c.collective << " quiet vs under " << pattern << " traffic on every rail ("
    << c.ranks << " ranks on " << c.nodes << " nodes); " << (m.span ? "span" : "latency")
    << " in us; slowdown = loaded / quiet\n";
  o << "# Algorithm              Size       quiet p50   loaded p50  slowdown   quiet p99   loaded p99  slowdown\n";
  for (auto& q : quiet)
    for (auto& l : loaded) {
      if (l.algorithm != q.algorithm || l.bytes != q.bytes) continue;
      auto ratio = [](double a, double b) { return b > 0 ? a / b : 0; };
      o << std::left << std::setw(25) << q.algorithm << std::setw(8) << q.bytes << std::right << std::fixed
        << std::setprecision(1) << std::setw(12) << m.p50(q) << std::setw(13) << m.p50(l) << std::setw(9)
        << ratio(m.p50(l), m.p50(q)) << "x" << std::setw(12) << m.p99(q) << std::setw(13) << m.p99(l) << std::setw(9)
        << ratio(m.p99(l), m.p99(q)) << "x\n";
    }
  o << std::flush;
}

}  // namespace railcoll::bench
