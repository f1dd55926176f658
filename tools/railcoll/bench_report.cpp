#include "bench_report.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>
#include <cstring>
#include <iostream>

#include "core/schedule_io.hpp"

namespace railcoll::cli {

void print_table_header(std::ostream& o, const std::string& algorithm, const BenchContext& c, bool full,
                        bool validate) {
  o << "\n# railcoll " << c.collective << ": " << algorithm << " (" << c.ranks << " ranks, " << c.nodes << " nodes, "
    << c.rails << " rail" << (c.rails > 1 ? "s" : "") << "; " << c.where << (validate ? "; every byte validated" : "")
    << ")\n";
  o << "# Size       Avg Latency(us)   Median(us)";
  if (full) o << "   Min Latency(us)   Max Latency(us)  Iterations";
  o << "      p90(us)      p99(us)";
  o << "\n";
}

void print_table_row(std::ostream& o, const BenchRecord& r, bool full) {
  o << std::left << std::setw(10) << r.bytes << std::right << std::fixed << std::setprecision(2) << std::setw(18)
    << r.avg_us << std::setw(13) << r.p50_us;
  if (full) o << std::setw(18) << r.min_us << std::setw(18) << r.max_us << std::setw(12) << r.iterations;
  if (r.p99_us >= 0) o << std::setw(13) << r.p90_us << std::setw(13) << r.p99_us;
  if (!r.chosen.empty()) o << "   (" << r.chosen << ")";
  o << "\n" << std::flush;
}

double rail_bound_us(const BenchContext& c, uint64_t bytes) {
  if (c.rail_bits_per_s <= 0 || c.nodes < 2) return 0;
  int fewest = *std::min_element(c.ranks_per_node.begin(), c.ranks_per_node.end());
  double m = static_cast<double>(bytes), node_bytes = 0;
  if (c.collective == "allgather" || c.collective == "gather")
    node_bytes = static_cast<double>(c.ranks - fewest) * m;  // what the node (or root's node) lacks
  else if (c.collective == "bcast")
    node_bytes = m;  // every other node must receive the message once
  else if (c.collective == "allreduce")
    node_bytes = 2.0 * (c.nodes - 1) / c.nodes * m;  // reduce-scatter + all-gather across nodes
  return node_bytes * 8 / (c.rail_bits_per_s * c.rails) * 1e6;
}

std::vector<uint64_t> bench_sizes(const std::string& collective, uint64_t min, uint64_t max) {
  std::vector<uint64_t> v;
  if (collective == "barrier") return {0};
  // allreduce sums floats: whole 4-byte elements
  uint64_t first = collective == "allreduce" ? std::max<uint64_t>(min, 4) : std::max<uint64_t>(min, 1);
  for (uint64_t s = first; s <= max; s *= 2) v.push_back(collective == "allreduce" ? (s + 3) / 4 * 4 : s);
  if (min == 0) v.insert(v.begin(), 0);
  return v;
}

void set_percentiles(BenchRecord* r, std::vector<double> slowest_us) {
  if (slowest_us.empty()) return;
  std::sort(slowest_us.begin(), slowest_us.end());
  auto at = [&](double q) { return slowest_us[std::min(slowest_us.size() - 1, static_cast<size_t>(q * slowest_us.size()))]; };
  r->p50_us = at(0.5);
  r->p90_us = at(0.9);
  r->p99_us = at(0.99);
}

void print_summary(std::ostream& o, const std::vector<BenchRecord>& recs, const BenchContext& c) {
  std::map<uint64_t, std::map<std::string, const BenchRecord*>> by_size;
  for (auto& r : recs)
    if (r.background.empty()) by_size[r.bytes][r.algorithm] = &r;  // loaded runs have their own table
  bool have_bound = c.rail_bits_per_s > 0 && c.nodes > 1;
  o << "\n# Summary: " << c.collective << ", " << c.ranks << " ranks on " << c.nodes << " nodes, " << c.rails << " rail"
    << (c.rails > 1 ? "s" : "");
  if (c.rail_bits_per_s > 0) o << " x " << c.rail_bits_per_s / 1e9 << " Gbit/s";
  o << " (" << c.where << "); median latency in us; speed-up = baseline / auto\n";
  o << "# Size     best railcoll              auto                          mpi:tuned     mpi:han"
       "  auto/tuned  auto/han";
  if (have_bound) o << "  rail bound  auto eff";
  o << "\n";
  auto cell = [&](const BenchRecord* r) {
    std::ostringstream s;
    if (r) s << std::fixed << std::setprecision(1) << r->p50_us; else s << "-";
    return s.str();
  };
  for (auto& [bytes, algos] : by_size) {
    const BenchRecord* best = nullptr;
    for (auto& [name, r] : algos)
      if (name.rfind("mpi:", 0) != 0 && name != "auto" && (!best || r->p50_us < best->p50_us)) best = r;
    const BenchRecord* a = algos.count("auto") ? algos["auto"] : nullptr;
    const BenchRecord* tuned = algos.count("mpi:tuned") ? algos["mpi:tuned"] : nullptr;
    const BenchRecord* han = algos.count("mpi:han") ? algos["mpi:han"] : nullptr;
    std::ostringstream b, au;
    if (best) b << cell(best) << " " << best->algorithm;
    if (a) au << cell(a) << " " << a->chosen;
    auto ratio = [&](const BenchRecord* base) {
      std::ostringstream s;
      if (a && base && a->p50_us > 0) s << std::fixed << std::setprecision(2) << base->p50_us / a->p50_us << "x";
      else s << "-";
      return s.str();
    };
    o << std::left << std::setw(9) << bytes << std::setw(27) << (best ? b.str() : "-") << std::setw(30)
      << (a ? au.str() : "-") << std::right << std::setw(9) << cell(tuned) << std::setw(12) << cell(han)
      << std::setw(12) << ratio(tuned) << std::setw(10) << ratio(han);
    if (have_bound) {
      double bound = rail_bound_us(c, bytes);  // 0: nothing to move (a barrier)
      if (bound > 0) o << std::setw(12) << std::fixed << std::setprecision(1) << bound << std::setw(9);
      else o << std::setw(12) << "-" << std::setw(9);
      if (a && a->p50_us > 0 && bound > 0) o << std::setprecision(0) << 100 * bound / a->p50_us << "%"; else o << "-";
    }
    o << "\n";
  }
  o << std::flush;
}

void print_background_summary(std::ostream& o, const std::vector<BenchRecord>& quiet,
                              const std::vector<BenchRecord>& loaded, const BenchContext& c, const std::string& pattern) {
  o << "\n# Background traffic: " << c.collective << " quiet vs under " << pattern << " traffic on every rail ("
    << c.ranks << " ranks on " << c.nodes << " nodes); latency in us; slowdown = loaded / quiet\n";
  o << "# Algorithm              Size       quiet p50   loaded p50  slowdown   quiet p99   loaded p99  slowdown\n";
  for (auto& q : quiet)
    for (auto& l : loaded) {
      if (l.algorithm != q.algorithm || l.bytes != q.bytes) continue;
      auto ratio = [](double a, double b) { return b > 0 ? a / b : 0; };
      o << std::left << std::setw(25) << q.algorithm << std::setw(8) << q.bytes << std::right << std::fixed
        << std::setprecision(1) << std::setw(12) << q.p50_us << std::setw(13) << l.p50_us << std::setw(9)
        << ratio(l.p50_us, q.p50_us) << "x" << std::setw(12) << q.p99_us << std::setw(13) << l.p99_us << std::setw(9)
        << ratio(l.p99_us, q.p99_us) << "x\n";
    }
  o << std::flush;
}

std::string to_json_line(const BenchRecord& r) {
  std::ostringstream o;
  o << std::setprecision(6) << "{\"collective\":\"" << r.collective << "\",\"algorithm\":\"" << r.algorithm << "\"";
  if (!r.chosen.empty()) o << ",\"chosen\":\"" << r.chosen << "\"";
  if (!r.background.empty()) o << ",\"background\":\"" << r.background << "\"";
  o << ",\"bytes\":" << r.bytes << ",\"ranks\":" << r.ranks << ",\"nodes\":" << r.nodes << ",\"rails\":" << r.rails
    << ",\"avg_us\":" << r.avg_us << ",\"min_us\":" << r.min_us << ",\"max_us\":" << r.max_us
    << ",\"p50_us\":" << r.p50_us;
  if (r.p99_us >= 0) o << ",\"p90_us\":" << r.p90_us << ",\"p99_us\":" << r.p99_us;
  o << ",\"iterations\":" << r.iterations << ",\"validated\":" << (r.validated ? "true" : "false");
  if (!r.samples_us.empty()) {
    o << ",\"samples_us\":[";
    for (size_t i = 0; i < r.samples_us.size(); ++i) o << (i ? "," : "") << r.samples_us[i];
    o << "]";
  }
  o << "}";
  return o.str();
}

bool from_json_line(const std::string& line, BenchRecord* r) {
  auto str = [&](const char* key, std::string* out) {
    std::smatch m;
    if (std::regex_search(line, m, std::regex(std::string("\"") + key + "\":\"([^\"]*)\""))) *out = m[1];
  };
  auto num = [&](const char* key) -> double {
    std::smatch m;
    if (std::regex_search(line, m, std::regex(std::string("\"") + key + "\":([-0-9.eE+]+)"))) return std::stod(m[1]);
    return -1;
  };
  if (line.find("\"collective\"") == std::string::npos) return false;
  str("collective", &r->collective);
  str("algorithm", &r->algorithm);
  str("chosen", &r->chosen);
  str("background", &r->background);
  r->bytes = static_cast<uint64_t>(num("bytes"));
  r->ranks = static_cast<int>(num("ranks"));
  r->nodes = static_cast<int>(num("nodes"));
  r->rails = static_cast<int>(num("rails"));
  r->avg_us = num("avg_us");
  r->min_us = num("min_us");
  r->max_us = num("max_us");
  r->p50_us = num("p50_us");
  if (r->p50_us < 0) r->p50_us = r->avg_us;  // OSU-style tools report no median
  r->p90_us = num("p90_us");
  r->p99_us = num("p99_us");
  r->iterations = static_cast<int>(std::max(0.0, num("iterations")));
  auto samples = line.find("\"samples_us\":[");
  if (samples != std::string::npos) {
    std::istringstream in(line.substr(samples + 14, line.find(']', samples) - samples - 14));
    for (std::string x; std::getline(in, x, ',');) r->samples_us.push_back(std::stod(x));
  }
  r->validated = line.find("\"validated\":true") != std::string::npos;
  return !r->algorithm.empty();
}

void write_json(const std::string& path, const std::vector<BenchRecord>& recs) {
  std::ofstream f(path);
  f << "[\n";
  for (size_t i = 0; i < recs.size(); ++i) f << "  " << to_json_line(recs[i]) << (i + 1 < recs.size() ? ",\n" : "\n");
  f << "]\n";
}

void write_csv(const std::string& path, const std::vector<BenchRecord>& recs) {
  std::ofstream f(path);
  f << "collective,algorithm,chosen,bytes,ranks,nodes,rails,avg_us,min_us,max_us,p50_us,p90_us,p99_us,iterations,"
       "validated\n";
  for (auto& r : recs)
    f << r.collective << "," << r.algorithm << "," << r.chosen << "," << r.bytes << "," << r.ranks << "," << r.nodes
      << "," << r.rails << "," << r.avg_us << "," << r.min_us << "," << r.max_us << "," << r.p50_us << ","
      << r.p90_us << "," << r.p99_us << "," << r.iterations << "," << (r.validated ? "true" : "false") << "\n";
}

namespace {
const char* kPlotScript = R"PY(
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
recs = json.load(open(sys.argv[1]))
for r in recs:  # runs under background traffic are lines of their own
    if r.get("background"):
        r["algorithm"] += " + " + r["background"] + " traffic"
title = sys.argv[3] if len(sys.argv) > 3 else "allgather"
fig, ax = plt.subplots(figsize=(10, 6.5))
sampled = [r for r in recs if r.get("samples_us")]
if sampled:  # latency distributions (barrier): one histogram per algorithm, log-spaced bins
    import math
    lo = max(0.1, min(min(r["samples_us"]) for r in sampled))
    hi = max(max(r["samples_us"]) for r in sampled)
    bins = [lo * (hi / lo) ** (i / 60) for i in range(61)] if hi > lo else 20
    for r in sampled:
        label = "%s (p50 %.0f, p99 %.0f us)" % (r["algorithm"], r["p50_us"], r.get("p99_us", -1))
        ax.hist(r["samples_us"], bins=bins, histtype="step", lw=1.6, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("latency of one call, slowest rank (us)")
    ax.set_ylabel("calls")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)
    sys.exit(0)
algos = []
for r in recs:
    if r["algorithm"] not in algos:
        algos.append(r["algorithm"])
for a in algos:
    pts = sorted((r["bytes"], r.get("p50_us", r["avg_us"])) for r in recs if r["algorithm"] == a and r["bytes"] > 0)
    if not pts:
        continue
    style = dict(lw=2.6, color="black") if a == "auto" else dict(lw=2.2, ls="--") if a.startswith("mpi:") else dict(lw=1.1, alpha=0.8)
    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=a, **style)
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xlabel(sys.argv[4] if len(sys.argv) > 4 else "bytes per rank")
ax.set_ylabel("median latency (us)")
ax.set_title(title)
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=8, ncol=2)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
)PY";
}  // namespace

int run_command(const std::vector<std::string>& argv, std::string* captured) {
  int pipefd[2] = {-1, -1};
  if (captured && pipe(pipefd) != 0) return 127;
  pid_t pid = fork();
  if (pid == 0) {
    if (captured) dup2(pipefd[1], 1), close(pipefd[0]), close(pipefd[1]);
    std::vector<char*> v;
    for (auto& s : argv) v.push_back(const_cast<char*>(s.c_str()));
    v.push_back(nullptr);
    execvp(v[0], v.data());
    fprintf(stderr, "railcoll: cannot run %s: %s\n", v[0], strerror(errno));
    _exit(127);
  }
  if (captured) {
    close(pipefd[1]);
    char buf[4096];
    for (ssize_t n; (n = read(pipefd[0], buf, sizeof buf)) > 0;) captured->append(buf, static_cast<size_t>(n));
    close(pipefd[0]);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}


std::string self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "railcoll";
}

bool cluster_is_up() {
  std::string ignored;
  return run_command({self_exe(), "cluster", "status"}, &ignored) == 0;
}

int run_workers(bool cluster, const std::vector<std::string>& cluster_args,
                const std::vector<std::string>& local_args, std::vector<std::string> worker,
                std::vector<std::string>* records, std::string* output) {
  char tmpl[] = "/tmp/railcoll-records-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) throw std::runtime_error("cannot create a temporary file in /tmp");
  close(fd);
  std::vector<std::string> cmd = {self_exe()};
  if (cluster) cmd.insert(cmd.end(), {"cluster", "run"});
  else cmd.push_back("run");
  const auto& extra = cluster ? cluster_args : local_args;
  cmd.insert(cmd.end(), extra.begin(), extra.end());
  cmd.push_back("--");
  cmd.insert(cmd.end(), worker.begin(), worker.end());
  cmd.insert(cmd.end(), {"--records", tmpl});
  int rc = run_command(cmd, output);
  std::ifstream in(tmpl);
  for (std::string line; std::getline(in, line);) records->push_back(line);
  unlink(tmpl);
  return rc;
}

bool write_plot(const std::vector<BenchRecord>& recs, const std::string& png, const std::string& title,
                const std::string& x_label) {
  std::string json = png + ".json", script = "/tmp/railcoll-plot-" + std::to_string(getpid()) + ".py";
  write_json(json, recs);
  std::ofstream(script) << kPlotScript;
  int st = run_command({"python3", script, json, png, title, x_label});
  unlink(script.c_str());
  unlink(json.c_str());
  if (st != 0) std::cerr << "railcoll: plotting failed (is matplotlib installed? make deps installs it)\n";
  return st == 0;
}

}  // namespace railcoll::cli
