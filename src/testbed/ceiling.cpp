#include "testbed/ceiling.hpp"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "testbed/job.hpp"
#include "testbed/spawn.hpp"

namespace railcoll::testbed {

namespace cl = railcoll::cluster;

namespace {

double monotonic_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The bytes one rail of a node carries each way per call: each of the node's
// ranks sends `bytes` to every other node on its rail, ppn / rails ranks a rail.
uint64_t rail_bytes(const cl::Config& cfg, uint64_t bytes) {
  const uint64_t per_rail = (static_cast<uint64_t>(cfg.ppn) + cfg.rails - 1) / cfg.rails;
  return static_cast<uint64_t>(cfg.nodes - 1) * bytes * per_rail;
}

std::string rate_text(uint64_t bps) {
  std::ostringstream o;
  if (bps >= 1000000000 && bps % 100000000 == 0) o << bps / 1e9 << " Gbit/s";
  else o << bps / 1000000 << " Mbit/s";
  return o.str();
}

// One run of the probe: per call, the slowest process's time; their median.
double run_probe(const cl::Config& cfg, const CeilingOptions& o, uint64_t bytes, const std::string& probe) {
  const int calls = o.calls + 1;  // the first is dropped: processes start at different times
  const double per_call_s = static_cast<double>(rail_bytes(cfg, bytes)) * 8 / static_cast<double>(cfg.rate_bps);
  const long period_ms = static_cast<long>(per_call_s * 2.5e3) + 20;  // the slowest ends, the shapers refill
  // Start 2 s from now: every process is up by then, even on a loaded machine.
  const long long t0_ns = static_cast<long long>((monotonic_s() + 2) * 1e9);
  std::vector<RankProcess> procs;
  for (int n = 0; n < cfg.nodes; ++n)
    for (int l = 0; l < cfg.ppn; ++l) {
      RankProcess p;
      std::vector<std::string> argv = {probe, std::to_string(n), std::to_string(cfg.nodes), std::to_string(l),
                                       std::to_string(l % cfg.rails), "1", std::to_string(bytes),
                                       std::to_string(calls), std::to_string(period_ms), std::to_string(t0_ns)};
      p.argv = cl::node_exec_argv(n, argv);
      // The sockets as railcoll's rails have them: cubic, 32 KiB unsent at most.
      p.env = {{"TCP_A2A_CC", "cubic"}, {"TCP_A2A_LOWAT", "32768"}};
      p.where = cl::node_name(n);
      procs.push_back(p);
    }
  std::map<int, double> slowest;  // call -> the slowest process's time
  std::string errors;
  JobOptions jo;
  jo.timeout_seconds = 60 + calls * period_ms / 1e3;
  jo.on_line = [&](int, bool is_stderr, const std::string& line) {
    if (is_stderr) {
      errors += line;
      return;
    }
    std::istringstream in(line);  // "node call microseconds"
    int node = 0, call = 0;
    double us = 0;
    if (in >> node >> call >> us) slowest[call] = std::max(slowest[call], us);
  };
  JobResult r = run_job(procs, jo);
  if (r.exit_status != 0)
    throw cl::CommandError("the TCP probe failed (" + r.failure + ")" + (errors.empty() ? "" : ": " + errors));
  std::vector<double> times;
  for (auto& [call, us] : slowest)
    if (call > 0) times.push_back(us);
  if (times.empty()) throw cl::CommandError("the TCP probe reported no call");
  return median(times);
}

// "1.02 0.98 0.91" from /proc/loadavg: a measurement on a shared machine says its load.
std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

}  // namespace

uint64_t probe_bytes(const cl::Config& cfg, uint64_t rate_bps, const CeilingOptions& o) {
  if (o.bytes > 0) return o.bytes;
  const double per_rail = std::max(1048576.0, static_cast<double>(rate_bps) / 8 * 0.040);
  const uint64_t pairs = rail_bytes(cfg, 1);  // bytes a rail carries per byte of a pair
  return std::max<uint64_t>(4096, static_cast<uint64_t>(per_rail / static_cast<double>(std::max<uint64_t>(1, pairs))));
}

CeilingPoint measure_point(cl::Config& cfg, uint64_t rate_bps, const CeilingOptions& o) {
  std::string probe = o.probe;
  if (probe.empty()) {
    const std::string self = self_exe();
    probe = self.substr(0, self.rfind('/')) + "/railcoll-tcp-alltoall";
  }
  cl::set_rate(cfg, rate_bps);
  const uint64_t bytes = probe_bytes(cfg, rate_bps, o);
  CeilingPoint p;
  p.rate_bps = rate_bps;
  p.bound_us = static_cast<double>(rail_bytes(cfg, bytes)) * 8 / static_cast<double>(rate_bps) * 1e6;
  for (int i = 0; i < o.repeats; ++i) {
    const double t = run_probe(cfg, o, bytes, probe);
    p.run_p50_us.push_back(t);
    p.run_pct.push_back(100 * p.bound_us / t);
  }
  p.pct = median(p.run_pct);
  return p;
}

Ceiling find_ceiling(cl::Config& cfg, const CeilingOptions& o, std::ostream& log) {
  const double start = monotonic_s();
  Ceiling c;
  log << "ceiling: " << cfg.nodes << " nodes x " << cfg.ppn << " ranks x " << cfg.rails
      << " rails; a plain TCP all-to-all (tools/probes/tcp_alltoall.c, cubic, 32 KiB unsent at most) of "
      << (o.bytes ? std::to_string(o.bytes / 1024) + " KiB per pair" : std::string("1 MiB or 40 ms per rail"))
      << ", " << o.repeats << " runs of " << o.calls << " calls per rate; target " << o.target_pct
      << "% of the rail bound; load average " << load_average() << "\n"
      << "# rate          bound(us)    p50(us)   % of bound (each run)\n"
      << std::flush;
  auto measure = [&](uint64_t rate) {
    CeilingPoint p = measure_point(cfg, rate, o);
    log << std::left << std::setw(14) << rate_text(rate) << std::right << std::fixed << std::setprecision(0)
        << std::setw(11) << p.bound_us << std::setw(11) << median(p.run_p50_us) << std::setw(9) << p.pct << "%  (";
    for (size_t i = 0; i < p.run_pct.size(); ++i) log << (i ? ", " : "") << std::setprecision(0) << p.run_pct[i];
    log << ")\n" << std::flush;
    c.points.push_back(p);
    if (p.pct >= o.target_pct && rate > c.rate_bps) c.rate_bps = rate, c.pct = p.pct;
    return p.pct >= o.target_pct;
  };
  uint64_t good = 0, bad = 0;
  const uint64_t first = std::min(o.high_bps, std::max(o.low_bps, o.start_bps));
  if (!o.rates.empty()) {
    for (uint64_t rate : o.rates) measure(rate);
  } else if (measure(first)) {
    good = first;
    for (uint64_t rate = first * 2; rate <= o.high_bps; rate *= 2) {
      if (!measure(rate)) {
        bad = rate;
        break;
      }
      good = rate;
    }
  } else {
    bad = first;
    for (uint64_t rate = first / 2; rate >= o.low_bps; rate /= 2) {
      if (measure(rate)) {
        good = rate;
        break;
      }
      bad = rate;
    }
  }
  for (int i = 0; i < o.refine && good > 0 && bad > 0; ++i) {
    // Geometric middle, on a 10 Mbit/s grid.
    uint64_t mid = static_cast<uint64_t>(std::sqrt(static_cast<double>(good) * static_cast<double>(bad)) / 1e7) * 10000000;
    if (mid <= good || mid >= bad) break;
    if (measure(mid)) good = mid;
    else bad = mid;
  }
  if (c.rate_bps == 0) {
    double best = 0;
    for (auto& p : c.points) best = std::max(best, p.pct);
    for (auto& p : c.points)
      if (p.pct >= best - 5 && p.rate_bps > c.knee_bps) c.knee_bps = p.rate_bps, c.knee_pct = p.pct;
  }
  c.seconds = monotonic_s() - start;
  return c;
}

std::string ceiling_json(const cl::Config& cfg, const Ceiling& c, const CeilingOptions& o) {
  std::ostringstream j;
  j << "{\"nodes\":" << cfg.nodes << ",\"ppn\":" << cfg.ppn << ",\"rails\":" << cfg.rails << ",\"bytes\":" << o.bytes
    << ",\"calls\":" << o.calls << ",\"repeats\":" << o.repeats << ",\"target_pct\":" << o.target_pct
    << ",\"ceiling_bps\":" << c.rate_bps << ",\"ceiling_pct\":" << c.pct << ",\"knee_bps\":" << c.knee_bps
    << ",\"knee_pct\":" << c.knee_pct << ",\"seconds\":" << c.seconds << ",\"load\":\"" << load_average() << "\""
    << ",\"points\":[";
  for (size_t i = 0; i < c.points.size(); ++i) {
    const CeilingPoint& p = c.points[i];
    j << (i ? "," : "") << "\n {\"rate_bps\":" << p.rate_bps << ",\"bound_us\":" << p.bound_us << ",\"pct\":" << p.pct
      << ",\"run_pct\":[";
    for (size_t k = 0; k < p.run_pct.size(); ++k) j << (k ? "," : "") << p.run_pct[k];
    j << "],\"run_p50_us\":[";
    for (size_t k = 0; k < p.run_p50_us.size(); ++k) j << (k ? "," : "") << p.run_p50_us[k];
    j << "]}";
  }
  j << "]}\n";
  return j.str();
}

bool plot_ceiling(const std::string& json, const std::string& path) {
  const std::string exe = self_exe(), bin = exe.substr(0, exe.rfind('/'));
  const std::string script = bin.substr(0, bin.rfind('/')) + "/share/railcoll/plot_ceiling.py";
  char tmpl[] = "/tmp/railcoll-ceiling-XXXXXX.json";
  int fd = mkstemps(tmpl, 5);
  if (fd < 0) {
    std::cerr << "railcoll: cannot plot: no temporary file in /tmp\n";
    return false;
  }
  const bool written = write(fd, json.data(), json.size()) == static_cast<ssize_t>(json.size());
  close(fd);
  RunResult r;
  if (written) {
    try {
      r = run({"python3", script, tmpl, path}, 120);
    } catch (const SpawnError& e) {
      r.status.code = 127, r.err = e.what();
    }
  }
  unlink(tmpl);
  if (!written || r.code() != 0) {
    std::cerr << "railcoll: plotting the ceiling failed (is matplotlib installed? make deps installs it): "
              << r.err.substr(0, 2000) << "\n";
    return false;
  }
  return true;
}

}  // namespace railcoll::testbed
