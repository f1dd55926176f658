#include "bench_fault.hpp"

#include <railcoll/railcoll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>
#include <vector>

#include "args.hpp"
#include "bench_report.hpp"
#include "cluster/cluster.hpp"

namespace railcoll::cli {

namespace {
double mono() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

unsigned char pattern(int rank, int call, size_t i) {
  return static_cast<unsigned char>((rank * 131 + call * 31 + i * 7 + (i >> 8)) & 0xff);
}

double seconds_of(const std::string& s, const std::string& what) {
  char* end = nullptr;
  double x = strtod(s.c_str(), &end);
  if (s.empty() || *end || !(x > 0) || x > 3600) throw UsageError("--fault: " + what + " '" + s + "' is not a number of seconds");
  return x;
}
}  // namespace

FaultSpec parse_fault(const std::string& text) {
  FaultSpec f;
  f.text = text;
  auto at = text.find('@');
  std::string kind = text.substr(0, at);
  if (at == std::string::npos || (kind != "rail-down" && kind != "kill"))
    throw UsageError("--fault expects rail-down@T[:D] or kill@T (seconds), got '" + text + "'");
  std::string when = text.substr(at + 1);
  auto colon = when.find(':');
  f.kind = kind == "kill" ? FaultSpec::Kill : FaultSpec::RailDown;
  f.at = seconds_of(when.substr(0, colon), "T");
  if (colon != std::string::npos) {
    if (f.kind == FaultSpec::Kill) throw UsageError("--fault kill@T takes no duration");
    f.length = seconds_of(when.substr(colon + 1), "D");
  } else {
    f.length = f.at;
  }
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

int fault_driver(const FaultSpec& f, const std::string& algo, uint64_t bytes) {
  auto cfg = cluster::load_state();
  if (!cfg || !cluster_is_up())
    throw UsageError("--fault needs the emulated cluster: railcoll cluster up (as root) first");
  if (cfg->nodes < 2) throw UsageError("--fault needs a cluster of at least 2 nodes");
  if (f.kind == FaultSpec::RailDown && cfg->rails < 2)
    throw UsageError("--fault rail-down needs at least 2 rails (with one, the job has nothing to move to)");
  double duration = f.kind == FaultSpec::Kill ? f.at + 30 : f.at + f.length + std::max(3.0, f.at);
  char tmpl[] = "/tmp/railcoll-fault-XXXXXX";
  if (!mkdtemp(tmpl)) throw std::runtime_error("cannot make a directory in /tmp");
  std::string dir = tmpl, marker = dir + "/m";
  const int node = 1, rail = cfg->rails - 1;
  std::string what = f.kind == FaultSpec::Kill ? "the last rank killed" :
                     "rail " + std::to_string(rail) + " of node " + std::to_string(node) + " down";
  std::cout << "railcoll bench: allgather/" << algo << ", " << bytes << " B per rank, on the emulated cluster; "
            << what << " at " << f.at << " s" << (f.kind == FaultSpec::RailDown ? " for " + std::to_string(f.length).substr(0, 4) + " s" : "")
            << "\n" << std::flush;

  // The injector waits for the first timed call, then acts on its own clock.
  std::string injected;
  std::thread injector([&] {
    double t0 = 0;
    for (double give_up = mono() + 120; mono() < give_up && !(std::ifstream(marker + ".start") >> t0);)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (t0 == 0) return;
    std::this_thread::sleep_until(std::chrono::steady_clock::time_point(std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(t0 + f.at))));
    std::string ns = cluster::node_name(node), dev = cluster::rail_if_name(rail);
    if (f.kind == FaultSpec::Kill) {
      int pid = 0;
      if (std::ifstream(marker + ".pid") >> pid && pid > 0) kill(pid, SIGKILL);
      injected = "killed pid " + std::to_string(pid);
      return;
    }
    run_command({"ip", "netns", "exec", ns, "ip", "link", "set", dev, "down"});
    std::this_thread::sleep_for(std::chrono::duration<double>(f.length));
    run_command({"ip", "netns", "exec", ns, "ip", "link", "set", dev, "up"});
    injected = ns + " " + dev + " down and up";
  });
  std::vector<std::string> worker = {self_exe(), "bench", "allgather", "--worker", "--fault", f.text, "--algo", algo,
                                     "-m", std::to_string(bytes), "--fault-marker", marker,
                                     "--duration", std::to_string(duration)};
  std::vector<std::string> lines;
  std::string out;
  int rc = run_workers(true, {}, {}, worker, &lines, &out);
  injector.join();
  // Make sure the rail is up whatever happened.
  if (f.kind == FaultSpec::RailDown)
    run_command({"ip", "netns", "exec", cluster::node_name(node), "ip", "link", "set", cluster::rail_if_name(rail), "up"});
  for (auto* suffix : {".start", ".pid"}) unlink((marker + suffix).c_str());
  rmdir(dir.c_str());

  struct Call {
    double t, us;
  };
  std::vector<Call> calls;
  for (auto& l : lines) {
    Call c{};
    if (sscanf(l.c_str(), "#call t=%lf us=%lf", &c.t, &c.us) == 2) calls.push_back(c);
  }
  int ranks = 0, wrong = 0, done = 0;
  std::vector<std::string> errors;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);) {
    int r, n, w, f1, f2;
    if (sscanf(l.c_str(), "#fault-done rank=%d calls=%d wrong=%d rails_up_fewest=%d rails_up_end=%d", &r, &n, &w, &f1, &f2) == 5)
      ++done, wrong += w, ranks = std::max(ranks, r + 1);
    if (l.rfind("#fault-error", 0) == 0) errors.push_back(l.substr(13));
  }
  ranks = std::max<int>(ranks, static_cast<int>(errors.size()) + 1);
  auto phase = [&](const char* name, double a, double b) {
    std::vector<double> us;
    double last = a;
    for (auto& c : calls)
      if (c.t >= a && c.t < b) us.push_back(c.us), last = c.t;
    double span = std::max(1e-9, (b > 1e8 ? last : b) - a);
    if (us.empty()) {
      printf("%-8s %5.1f-%-5.1f %6d %12s %12s\n", name, a, b, 0, "-", "-");
      return 0.0;
    }
    std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
    double med = us[us.size() / 2];
    double gbps = static_cast<double>(us.size()) * static_cast<double>(bytes) * cfg->nodes * cfg->ppn / span / 1e9;
    printf("%-8s %5.1f-%-5.1f %6zu %12.0f %12.3f\n", name, a, b > 1e8 ? last : b, us.size(), med, gbps);
    return gbps;
  };
  printf("# phase   seconds      calls   median(us)  GB/s gathered\n");
  if (f.kind == FaultSpec::RailDown) {
    double before = phase("before", 0, f.at);
    double during = phase("during", f.at, f.at + f.length);
    double after = phase("after", f.at + f.length, 1e9);
    if (before > 0)
      printf("throughput during the outage: %.0f%% of before; after: %.0f%%\n", 100 * during / before, 100 * after / before);
    printf("%d of %d ranks finished, %d wrong results, %zu failed calls (%s)\n", done, cfg->nodes * cfg->ppn, wrong,
           errors.size(), injected.c_str());
    return rc == 0 && errors.empty() && wrong == 0 ? 0 : 1;
  }
  phase("before", 0, f.at);
  printf("after the kill (%s):\n", injected.c_str());
  for (auto& e : errors) printf("  %s\n", e.c_str());
  printf("%zu of %d survivors returned an error\n", errors.size(), cfg->nodes * cfg->ppn - 1);
  return static_cast<int>(errors.size()) == cfg->nodes * cfg->ppn - 1 ? 0 : 1;
}

}  // namespace railcoll::cli
