#include "bench/fault.hpp"

#include <railcoll/railcoll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include "core/errors.hpp"
#include "testbed/cluster.hpp"
#include "testbed/spawn.hpp"

namespace railcoll::bench {

namespace {
double mono() { return testbed::monotonic_seconds(); }

unsigned char pattern(int rank, int call, size_t i) {
  return static_cast<unsigned char>((rank * 131 + call * 31 + i * 7 + (i >> 8)) & 0xff);
}

std::string number_text(double x) {
  char b[32];
  snprintf(b, sizeof b, "%g", x);
  return b;
}

double seconds_of(const std::string& s, const std::string& what) {
  char* end = nullptr;
  double x = strtod(s.c_str(), &end);
  if (s.empty() || *end || !(x > 0) || x > 3600)
    throw InputError("--fault: " + what + " '" + s + "' is not a number of seconds");
  return x;
}
}  // namespace

FaultSpec parse_fault(const std::string& text) {
  FaultSpec f;
  f.text = text;
  auto at = text.find('@');
  std::string kind = text.substr(0, at);
  if (at == std::string::npos || (kind != "rail-down" && kind != "flap" && kind != "kill"))
    throw InputError("--fault expects rail-down@T[:D], flap@T:D[:P] or kill@T (seconds), got '" + text + "'");
  f.kind = kind == "kill" ? FaultSpec::Kill : kind == "flap" ? FaultSpec::Flap : FaultSpec::RailDown;
  std::vector<std::string> fields;
  std::istringstream when(text.substr(at + 1));
  for (std::string x; std::getline(when, x, ':');) fields.push_back(x);
  if (fields.empty()) fields.push_back("");
  if (f.kind == FaultSpec::Kill && fields.size() > 1) throw InputError("--fault kill@T takes no duration");
  if (f.kind == FaultSpec::RailDown && fields.size() > 2) throw InputError("--fault rail-down@T[:D] takes one duration");
  if (f.kind == FaultSpec::Flap && (fields.size() < 2 || fields.size() > 3))
    throw InputError("--fault flap@T:D[:P] needs how long the rail flaps (D) and at most a period (P)");
  f.at = seconds_of(fields[0], "T");
  f.length = fields.size() > 1 ? seconds_of(fields[1], "D") : f.at;
  if (fields.size() > 2) f.period = seconds_of(fields[2], "P");
  if (f.kind == FaultSpec::Flap && (f.period < 0.01 || f.period > f.length))
    throw InputError("--fault flap@T:D:P: P must be between 0.01 s and D, got '" + fields.back() + "'");
  return f;
}

int fault_worker(const FaultSpec& f, const std::string& algo, uint64_t bytes, double duration,
                 const std::string& marker, const std::string& records) {
  railcoll_comm_t comm;
  if (railcoll_comm_init(&comm) != RAILCOLL_OK) {
    std::cerr << "railcoll bench: " << railcoll_last_error() << "\n";
    return 1;
  }
  const int me = railcoll_comm_rank(comm), N = railcoll_comm_size(comm);
  bytes = std::max<uint64_t>(bytes, 1);  // byte 0 of rank 0's block says whether to go on
  std::vector<unsigned char> send(bytes), recv(bytes * N);
  railcoll_call_opts_t opts{algo.c_str(), 0};
  std::ofstream rec;
  if (me == 0) rec.open(records, std::ios::app);
  int fewest_rails = railcoll_comm_rails_up(comm), wrong = 0, call = 0;
  double t0 = 0;
  for (bool more = true; more; ++call) {
    if (call == 3) {  // after a warm-up: the fault's clock starts
      t0 = mono();
      if (me == 0) std::ofstream(marker + ".start") << std::fixed << t0 << "\n";
      if (me == N - 1) std::ofstream(marker + ".pid") << getpid() << "\n";
    }
    for (size_t i = 0; i < bytes; ++i) send[i] = pattern(me, call, i);
    if (me == 0) send[0] = call < 3 || mono() - t0 < duration;
    double a = mono();
    railcoll_status_t st = railcoll_allgather(comm, send.data(), recv.data(), bytes, &opts);
    double b = mono();
    if (st != RAILCOLL_OK) {
      printf("#fault-error rank=%d t=%.3f took=%.3f status=%s msg=%s\n", me, b - t0, b - a, railcoll_strerror(st),
             railcoll_last_error());
      fflush(stdout);
      railcoll_comm_destroy(comm);
      return 1;
    }
    more = recv[0] == 1;
    for (int r = 0; r < N; ++r)
      for (size_t i = r == 0 ? 1 : 0; i < bytes; ++i)
        if (recv[r * bytes + i] != pattern(r, call, i)) {
          ++wrong;
          break;
        }
    fewest_rails = std::min(fewest_rails, railcoll_comm_rails_up(comm));
    if (me == 0 && call >= 3) rec << "#call t=" << b - t0 << " us=" << (b - a) * 1e6 << "\n";
  }
  printf("#fault-done rank=%d calls=%d wrong=%d rails_up_fewest=%d rails_up_end=%d\n", me, call, wrong, fewest_rails,
         railcoll_comm_rails_up(comm));
  railcoll_comm_destroy(comm);
  return wrong ? 1 : 0;
}

namespace {

struct Phase {
  std::string name;
  double from = 0, to = 0;
  size_t calls = 0;
  double median_us = 0, gbytes_per_s = 0;
};

}  // namespace

int fault_driver(const FaultSpec& f, const std::string& algo, uint64_t bytes, const Placement& where,
                 const std::string& json) {
  auto cfg = cluster::load_state();
  if (!where.cluster || !cfg) throw InputError("--fault needs the emulated cluster: railcoll cluster up (as root) first");
  if (where.layout.size() < 2) throw InputError("--fault needs ranks on at least 2 nodes");
  const int rails = where.rails > 0 ? where.rails : cfg->rails;
  if (f.kind == FaultSpec::RailDown && rails < 2)
    throw InputError("--fault rail-down needs at least 2 rails (with one, the job has nothing to move to)");
  const int ranks = testbed::layout_ranks(where.layout);
  double duration = f.kind == FaultSpec::Kill ? f.at + 30 : f.at + f.length + std::max(3.0, f.at);
  char tmpl[] = "/tmp/railcoll-fault-XXXXXX";
  if (!mkdtemp(tmpl)) throw RuntimeError(Status::Internal, "cannot make a directory in /tmp");
  std::string dir = tmpl, marker = dir + "/m";
  const int node = 1, rail = rails - 1;
  const bool link_fault = f.kind != FaultSpec::Kill;
  std::string what = f.kind == FaultSpec::Kill ? "the last rank killed" :
                     "rail " + std::to_string(rail) + " of node " + std::to_string(node) +
                         (f.kind == FaultSpec::Flap ? " flapping (its link down, up, ... every " + number_text(f.period) + " s)"
                                                    : " down");
  std::cout << "railcoll bench: allgather/" << algo << ", " << bytes << " B per rank, on the emulated cluster ("
            << where.text() << "); " << what << " at " << number_text(f.at) << " s"
            << (link_fault ? " for " + number_text(f.length) + " s" : "") << "\n"
            << std::flush;
  const std::string where_link = cluster::node_name(node) + " " + cluster::rail_if_name(rail);

  // The injector waits for the first timed call, then acts on its own clock.
  std::string injected;
  std::thread injector([&] {
    double t0 = 0;
    for (double give_up = mono() + 120; mono() < give_up && !(std::ifstream(marker + ".start") >> t0);)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (t0 == 0) return;
    std::this_thread::sleep_for(std::chrono::duration<double>(std::max(0.0, t0 + f.at - mono())));
    try {
      if (f.kind == FaultSpec::Kill) {
        int pid = 0;
        if (std::ifstream(marker + ".pid") >> pid && pid > 0) kill(pid, SIGKILL);
        injected = "killed pid " + std::to_string(pid);
      } else if (f.kind == FaultSpec::Flap) {
        int changes = cluster::flap_rail(node, rail, f.length, f.period);
        injected = where_link + " down and up " + std::to_string(changes / 2) + " times";
      } else {
        cluster::set_rail_link(node, rail, false);
        std::this_thread::sleep_for(std::chrono::duration<double>(f.length));
        cluster::set_rail_link(node, rail, true);
        injected = where_link + " down and up";
      }
    } catch (const std::exception& e) {
      injected = std::string("injecting failed: ") + e.what();
    }
  });
  // Whatever happened, the rail ends up (errors here would hide the job's).
  auto restore_link = [&] {
    if (!link_fault) return;
    try {
      cluster::set_rail_link(node, rail, true);
    } catch (const std::exception&) {
    }
  };
  std::vector<std::string> worker = {testbed::self_exe(), "bench", "allgather", "--worker", "--fault", f.text,
                                     "--algo", algo, "-m", std::to_string(bytes), "--fault-marker", marker,
                                     "--duration", std::to_string(duration)};
  std::vector<std::string> lines;
  std::string out;
  testbed::JobOptions jo;
  jo.grace_seconds = 60;  // the survivors of a kill report their errors themselves
  jo.timeout_seconds = duration + 120;
  jo.on_line = [&](int, bool, const std::string& line) { out += line; };
  testbed::JobResult job;
  try {
    job = run_workers(where, worker, &lines, jo);
  } catch (...) {
    injector.join();
    restore_link();
    throw;
  }
  injector.join();
  restore_link();
  for (auto* suffix : {".start", ".pid"}) unlink((marker + suffix).c_str());
  rmdir(dir.c_str());

  struct CallTime {  // when a call ended and how long it took
    double t, us;
  };
  std::vector<CallTime> calls;
  for (auto& l : lines) {
    CallTime c{};
    if (sscanf(l.c_str(), "#call t=%lf us=%lf", &c.t, &c.us) == 2) calls.push_back(c);
  }
  int wrong = 0, done = 0;
  std::vector<std::string> errors;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);) {
    int r, n, w, f1, f2;
    if (sscanf(l.c_str(), "#fault-done rank=%d calls=%d wrong=%d rails_up_fewest=%d rails_up_end=%d", &r, &n, &w, &f1,
               &f2) == 5)
      ++done, wrong += w;
    if (l.rfind("#fault-error", 0) == 0) errors.push_back(l.substr(13));
  }
  std::vector<Phase> phases;
  auto phase = [&](const char* name, double a, double b) {
    Phase p{name, a, b, 0, 0, 0};
    std::vector<double> us;
    double last = a;
    for (auto& c : calls)
      if (c.t >= a && c.t < b) us.push_back(c.us), last = c.t;
    p.to = b > 1e8 ? last : b;
    double span = std::max(1e-9, p.to - a);
    p.calls = us.size();
    if (us.empty()) {
      printf("%-8s %5.1f-%-5.1f %6d %12s %12s\n", name, a, p.to, 0, "-", "-");
    } else {
      std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
      p.median_us = us[us.size() / 2];
      p.gbytes_per_s = static_cast<double>(us.size()) * static_cast<double>(bytes) * ranks / span / 1e9;
      printf("%-8s %5.1f-%-5.1f %6zu %12.0f %12.3f\n", name, a, p.to, us.size(), p.median_us, p.gbytes_per_s);
    }
    phases.push_back(p);
    return p.gbytes_per_s;
  };
  printf("# phase   seconds      calls   median(us)  GB/s gathered\n");
  int status;
  // Calls finished in each second since the first timed call: a fault that
  // stalls the job for a moment shows here, averaged away in a phase.
  std::vector<int> per_second;
  for (auto& c : calls) {
    size_t s = static_cast<size_t>(std::max(0.0, c.t));
    if (per_second.size() <= s) per_second.resize(s + 1, 0);
    ++per_second[s];
  }
  double lowest_pct = -1;
  if (link_fault) {
    double before = phase("before", 0, f.at);
    double during = phase("during", f.at, f.at + f.length);
    double after = phase("after", f.at + f.length, 1e9);
    if (before > 0)
      printf("throughput during the fault: %.0f%% of before; after: %.0f%%\n", 100 * during / before,
             100 * after / before);
    printf("calls per second:");
    for (size_t s = 0; s < per_second.size(); ++s)
      printf("%s%d", s == static_cast<size_t>(std::ceil(f.at)) || s == static_cast<size_t>(std::ceil(f.at + f.length))
                         ? " | " : " ", per_second[s]);
    printf("\n");
    // The slowest window inside the fault against before's mean rate; a window
    // holds 5 calls of before at least, so that one call is not 50%.
    const double before_rate = phases[0].calls / std::max(1e-9, phases[0].to - phases[0].from);
    const double window = before_rate > 0 ? std::max(1.0, std::ceil(5 / before_rate)) : 1;
    int lowest = -1;
    for (double w = f.at; w + window <= f.at + f.length + 1e-9; w += window) {
      int n = 0;
      for (auto& c : calls) n += c.t >= w && c.t < w + window;
      lowest = lowest < 0 ? n : std::min(lowest, n);
    }
    if (lowest >= 0 && before_rate > 0) {
      lowest_pct = 100 * lowest / (before_rate * window);
      printf("slowest %g s of the fault: %d calls, %.0f%% of before's %.1f calls/s\n", window, lowest, lowest_pct,
             before_rate);
    }
    printf("%d of %d ranks finished, %d wrong results, %zu failed calls (%s)\n", done, ranks, wrong, errors.size(),
           injected.c_str());
    status = job.exit_status == 0 && errors.empty() && wrong == 0 ? 0 : 1;
  } else {
    phase("before", 0, f.at);
    printf("after the kill (%s):\n", injected.c_str());
    for (auto& e : errors) printf("  %s\n", e.c_str());
    printf("%zu of %d survivors returned an error\n", errors.size(), ranks - 1);
    status = static_cast<int>(errors.size()) == ranks - 1 ? 0 : 1;
  }
  fflush(stdout);
  if (!json.empty()) {
    nlohmann::ordered_json j;
    j["fault"] = f.text;
    j["collective"] = "allgather";
    j["algorithm"] = algo;
    j["bytes"] = bytes;
    j["ranks"] = ranks;
    j["nodes"] = where.layout.size();
    j["rails"] = rails;
    j["injected"] = injected;
    j["phases"] = nlohmann::ordered_json::array();
    for (auto& p : phases)
      j["phases"].push_back({{"phase", p.name}, {"from_s", p.from}, {"to_s", p.to}, {"calls", p.calls},
                             {"p50_us", p.median_us}, {"gbytes_per_s", p.gbytes_per_s}});
    j["calls_per_second"] = per_second;
    if (lowest_pct >= 0) j["slowest_second_pct"] = lowest_pct;
    j["ranks_finished"] = done;
    j["wrong_results"] = wrong;
    j["failed_calls"] = errors.size();
    j["errors"] = errors;
    j["ok"] = status == 0;
    std::ofstream(json) << j.dump(1) << "\n";
    std::cout << "wrote " << json << "\n";
  }
  return status;
}

}  // namespace railcoll::bench
