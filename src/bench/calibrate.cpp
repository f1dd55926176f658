#include "bench/calibrate.hpp"

#include <linux/futex.h>
#include <railcoll/railcoll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "sim/machine.hpp"

namespace railcoll::bench {

namespace {

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double cpu_us() {  // the whole process: the runtime's work is done in the caller's thread
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}


struct Worker {
  railcoll_comm_t comm = nullptr;
  int me = 0, N = 1;
  std::ofstream rec;

  void check(railcoll_status_t st, const std::string& what) {
    if (st != RAILCOLL_OK) throw std::runtime_error(what + ": " + railcoll_last_error());
  }
  // Every rank's value; a collective "allreduce" built from the all-gather.
  std::vector<double> gather(double x) {
    std::vector<double> all(N);
    check(railcoll_allgather(comm, &x, all.data(), sizeof x, nullptr), "collecting results");
    return all;
  }
  double slowest(double x) {
    auto v = gather(x);
    return *std::max_element(v.begin(), v.end());
  }
  void put(const std::string& line) {
    if (me == 0) rec << line << "\n" << std::flush;
  }
};

// 2 ranks on 2 nodes: all-gather "direct" = one message each way per call.
void test_p2p(Worker& w, bool quick) {
  std::vector<uint64_t> sizes = {0, 8, 64, 512, 4096, 32768, 262144, 524288, 1 << 20, 2 << 20, 4 << 20};
  if (quick) sizes = {0, 8, 64, 524288, 1 << 20, 2 << 20};
  railcoll_call_opts_t direct{"direct", 0};
  std::vector<unsigned char> send(4 << 20), recv(8 << 20);
  for (uint64_t m : sizes) {
    int trials = quick ? 5 : (m >= (1 << 20) ? 11 : 31);
    std::vector<double> t;
    for (int i = -2; i < trials; ++i) {  // 2 warm-up calls
      w.check(railcoll_barrier(w.comm), "barrier");
      double t0 = now_us();
      w.check(railcoll_allgather(w.comm, send.data(), recv.data(), m, &direct), "direct all-gather");
      double dt = w.slowest(now_us() - t0);  // a collective ends with its last rank
      if (i >= 0) t.push_back(dt);
    }
    std::ostringstream l;
    l << "p2p " << m << " " << median(t);
    w.put(l.str());
  }
}

// This process on one core: the lowest one it may run on. Every rank of a job
// pinned so shares that core, so the time they take is their CPU time, and the
// kernel's work for them (the veths, the bridges and the shapers, in softirq
// context) runs there too, accounted to the process it interrupts.
void pin_to_one_core() {
  cpu_set_t allowed, one;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) throw std::runtime_error("sched_getaffinity failed");
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) {
      CPU_SET(c, &one);
      break;
    }
  if (sched_setaffinity(0, sizeof one, &one) != 0) throw std::runtime_error("sched_setaffinity failed");
}

// Context switches of this process so far: voluntary ones (it slept), and all.
double sleeps_so_far() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_nvcsw);
}
double switches_so_far() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_nvcsw + u.ru_nivcsw);
}

// A free TCP port on `host` (an IPv4 address), for a store to listen on.
int free_port(const std::string& host) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  socklen_t len = sizeof a;
  if (fd < 0 || inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1 ||
      bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) close(fd);
    throw std::runtime_error("no free port on " + host);
  }
  close(fd);
  return ntohs(a.sin_port);
}

// The measured ranks of a job and the crowd beside them. Every rank of the
// job is pinned to one core: as many processes as the benchmark puts on this
// machine's busiest core (docs/calibration.md, "Host CPU in the crowd").
// `members` (world ranks, rank 0 first) form a communicator of their own with
// waits that sleep at once (RAILCOLL_SPIN_US=0: their CPU time is work, and
// one wake-up per sleep); every other rank a communicator of one, whose calls
// run beside the measured ones and whose waits spin, as a benchmarked rank's do.
struct Crowd {
  railcoll_comm_t comm = nullptr;
  bool member = false;
  Crowd() = default;
  Crowd(const Crowd&) = delete;
  Crowd& operator=(const Crowd&) = delete;
  ~Crowd() {
    if (comm) railcoll_comm_destroy(comm);
  }
};
void join_crowd(Worker& w, const std::vector<int>& members, const std::string& name, Crowd* c) {
  pin_to_one_core();
  c->member = std::find(members.begin(), members.end(), w.me) != members.end();
  const std::string world = getenv("RAILCOLL_STORE") ? getenv("RAILCOLL_STORE") : "127.0.0.1:0";
  const std::string host = world.substr(0, world.rfind(':'));
  const double port = w.me == 0 ? free_port(host) : 0;  // rank 0 serves the members' store
  const int members_port = static_cast<int>(w.gather(port)[0]);
  const std::string job = name + "-" + (getenv("RAILCOLL_JOB_ID") ? getenv("RAILCOLL_JOB_ID") : "calibrate");
  if (c->member) {
    setenv("RAILCOLL_SPIN_US", "0", 1);
    const int rank = static_cast<int>(std::find(members.begin(), members.end(), w.me) - members.begin());
    w.check(railcoll_comm_init_explicit(&c->comm, rank, static_cast<int>(members.size()),
                                        (host + ":" + std::to_string(members_port)).c_str(), job.c_str()),
            "the measured ranks' communicator");
  } else {
    const std::string solo = "127.0.0.1:" + std::to_string(free_port("127.0.0.1"));
    w.check(railcoll_comm_init_explicit(&c->comm, 0, 1, solo.c_str(), (job + "-" + std::to_string(w.me)).c_str()),
            "a communicator of one");
  }
}

// The cost of a direct all-gather of `bytes` per rank on the crowd's
// communicators as bench runs a call (each after `idle_us` of rest and a
// barrier of the whole job): the CPU time of the members' call together and
// the number of times they slept in it, medians over the calls.
struct CallCost {
  double cpu_us = 0, sleeps = 0;
};
CallCost direct_call_cost(Worker& w, const Crowd& crowd, uint64_t bytes, int calls, int idle_us) {
  railcoll_call_opts_t direct{"direct", 0};
  const int n = railcoll_comm_size(crowd.comm);
  std::vector<unsigned char> send(bytes), recv(bytes * static_cast<size_t>(n));
  std::vector<double> cpu, sleeps;
  for (int i = -3; i < calls; ++i) {  // 3 warm-up calls
    if (idle_us > 0) usleep(static_cast<useconds_t>(idle_us));
    w.check(railcoll_barrier(w.comm), "barrier");
    double c0 = cpu_us(), s0 = sleeps_so_far();
    w.check(railcoll_allgather(crowd.comm, send.data(), recv.data(), bytes, &direct), "direct all-gather");
    double mine[2] = {crowd.member ? cpu_us() - c0 : 0, crowd.member ? sleeps_so_far() - s0 : 0};
    std::vector<double> all(2 * static_cast<size_t>(w.N));
    w.check(railcoll_allgather(w.comm, mine, all.data(), sizeof mine, nullptr), "collecting results");
    if (i < 0) continue;
    double c = 0, z = 0;
    for (int r = 0; r < w.N; ++r) c += all[2 * r], z += all[2 * r + 1];
    cpu.push_back(c);
    sleeps.push_back(z);
  }
  return {median(cpu), median(sleeps)};
}

// Ranks per node of the job (node-major ranks: node 0's are 0..ppn-1).
int ranks_per_node() { return std::max(1, getenv("RAILCOLL_LOCAL_SIZE") ? atoi(getenv("RAILCOLL_LOCAL_SIZE")) : 1); }

// World ranks 0 and a peer measured in the crowd: direct all-gathers of 8 B
// (one message each way: the host's CPU per message) and of 64 KiB (less than
// the shapers' burst, which the rest refills: the CPU per byte). The peer on
// the next node: through the rails; with `local`, on rank 0's node: through
// a local socket.
void test_pair(Worker& w, bool quick, int idle_us, bool local) {
  const int peer = local ? 1 : ranks_per_node();
  if (peer >= w.N) throw std::runtime_error("the job has no rank " + std::to_string(peer) + " for the pair");
  Crowd crowd;
  join_crowd(w, {0, peer}, local ? "local-pair" : "pair", &crowd);
  for (uint64_t bytes : {uint64_t{8}, uint64_t{65536}}) {
    CallCost c = direct_call_cost(w, crowd, bytes, quick ? 30 : 200, idle_us);
    w.put(std::string(local ? "local " : "pair ") + std::to_string(bytes) + " " + std::to_string(c.cpu_us) + " " +
          std::to_string(c.sleeps));
  }
}

// Rank 0 alone in the crowd: the CPU of an 8-byte all-gather of one rank (a
// copy of 8 bytes), i.e. a call's own work, without messages.
void test_call(Worker& w, bool quick, int idle_us) {
  Crowd crowd;
  join_crowd(w, {0}, "call", &crowd);
  CallCost c = direct_call_cost(w, crowd, 8, quick ? 30 : 200, idle_us);
  w.put("call " + std::to_string(c.cpu_us));
}

// The first rank of every node in the crowd: 8-byte direct all-gathers put
// nodes (nodes - 1) messages in flight per call; the host CPU per message
// against the pair's 2 in flight says how much of a message's cost the
// messages in flight share (docs/calibration.md).
void test_burst(Worker& w, bool quick, int idle_us) {
  std::vector<int> leaders;
  for (int r = 0; r < w.N; r += ranks_per_node()) leaders.push_back(r);
  Crowd crowd;
  join_crowd(w, leaders, "burst", &crowd);
  CallCost c = direct_call_cost(w, crowd, 8, quick ? 30 : 200, idle_us);
  const int n = static_cast<int>(leaders.size());
  w.put("burst " + std::to_string(c.cpu_us) + " " + std::to_string(c.sleeps) + " " + std::to_string(n * (n - 1)));
}

// Every rank of the cluster on one core, spinning (RAILCOLL_SPIN_US set long
// by the worker): rank 0 sleeps 20 ms before a barrier the others spin in,
// each turn a yield, a poll of its connections and a look at its counters
// (src/runtime/executor.cpp, wait_until). The core's time divided by the
// spinners' context switches is one turn, with as many processes taking
// turns as bench puts on this machine's busiest core.
void test_turn(Worker& w, bool quick) {
  pin_to_one_core();
  const int sleep_us = 20000;
  std::vector<double> turn;
  for (int i = 0; i < (quick ? 2 : 7); ++i) {
    w.check(railcoll_barrier(w.comm), "barrier");
    double t0 = now_us(), s0 = switches_so_far();
    if (w.me == 0) usleep(sleep_us);
    w.check(railcoll_barrier(w.comm), "barrier");
    double mine = w.me == 0 ? 0 : switches_so_far() - s0, dt = now_us() - t0;
    auto all = w.gather(mine);
    double turns = 0;
    for (double x : all) turns += x;
    double wall = w.slowest(dt);
    if (turns > 0) turn.push_back(wall / turns);
  }
  w.put("turn " + std::to_string(median(turn)) + " " + std::to_string(w.N - 1));
}

// Every rank of the cluster where the kernel puts it: after bench's rest and
// a barrier, the core each rank is on when its call starts (an 8-byte
// all-gather, then). The share of the ranks on the busiest core, median over
// the calls (docs/calibration.md, "Where the processes run").
void test_placement(Worker& w, bool quick, int idle_us) {
  std::vector<unsigned char> send(8), recv(8 * static_cast<size_t>(w.N));
  std::vector<double> share;
  for (int i = -3; i < (quick ? 30 : 200); ++i) {
    if (idle_us > 0) usleep(static_cast<useconds_t>(idle_us));
    w.check(railcoll_barrier(w.comm), "barrier");
    double core = sched_getcpu();
    w.check(railcoll_allgather(w.comm, send.data(), recv.data(), 8, nullptr), "all-gather");
    auto cores = w.gather(core);
    if (i < 0) continue;
    std::map<double, int> on;
    for (double c : cores) ++on[c];
    int busiest = 0;
    for (auto& kv : on) busiest = std::max(busiest, kv.second);
    share.push_back(static_cast<double>(busiest) / w.N);
  }
  w.put("placement " + std::to_string(median(share)));
}

// The whole cluster: its shape, one process's memcpy rate, the aggregate rate of
// node 0's processes copying at once, and of every process copying at once.
void test_node(Worker& w, bool quick) {
  int mine = getenv("RAILCOLL_LOCAL_SIZE") ? atoi(getenv("RAILCOLL_LOCAL_SIZE")) : 1;
  auto locals = w.gather(mine);
  int ppn0 = static_cast<int>(locals[0]);  // ranks are node-major: node 0 is ranks 0..ppn0-1
  int ppn_max = static_cast<int>(*std::max_element(locals.begin(), locals.end()));
  std::ostringstream shape;
  shape << "shape " << railcoll_comm_nodes(w.comm) << " " << ppn_max << " " << railcoll_comm_rails(w.comm) << " "
        << w.N << " " << (getenv("RAILCOLL_RAIL_RATE") ? getenv("RAILCOLL_RAIL_RATE") : "0");
  w.put(shape.str());
  // 16 MiB: the largest buffer a benchmarked all-gather touches (16 ranks x 1 MiB).
  const size_t bytes = 16 << 20;
  const int reps = quick ? 2 : 4;
  std::vector<char> src(bytes, 1), dst(bytes, 2);
  auto copy_round = [&](bool active) {  // returns this rank's busy time
    w.check(railcoll_barrier(w.comm), "barrier");
    double t0 = now_us();
    if (active)
      for (int r = 0; r < reps; ++r) {
        memcpy(dst.data(), src.data(), bytes);
        src[r] ^= dst[bytes - 1 - r];  // keep the copies from being optimised away
      }
    return active ? now_us() - t0 : 0.0;
  };
  std::vector<double> one, node, all;
  for (int i = 0; i < (quick ? 3 : 7); ++i) {
    one.push_back(bytes * reps / w.slowest(copy_round(w.me == 0)));
    node.push_back(double(bytes) * reps * ppn0 / w.slowest(copy_round(w.me < ppn0)));
    all.push_back(double(bytes) * reps * w.N / w.slowest(copy_round(true)));
  }
  w.put("copy " + std::to_string(median(one)));
  w.put("membus_node " + std::to_string(median(node)));
  w.put("membus_all " + std::to_string(median(all)));
}

// 2 ranks of one node: back-to-back SMP barriers. The SMP barrier is two flag
// hops (arrive, release: src/algos/barrier/smp.cpp), so a flag is half a barrier.
void test_flag(Worker& w, bool quick) {
  const int calls = quick ? 200 : 1000;
  std::vector<double> t;
  for (int i = 0; i < (quick ? 3 : 9); ++i) {
    w.check(railcoll_barrier(w.comm), "barrier");
    double t0 = now_us();
    for (int c = 0; c < calls; ++c) w.check(railcoll_barrier(w.comm), "barrier");
    t.push_back(w.slowest((now_us() - t0) / calls));
  }
  w.put("barrier " + std::to_string(median(t)));
}

}  // namespace

int calibration_worker(const WorkerOptions& o) {
  // One rail alone: keep only the o.rail-th entry of the launcher's rail list.
  if (o.rail >= 0 && getenv("RAILCOLL_RAILS")) {
    std::stringstream ss(getenv("RAILCOLL_RAILS"));
    std::vector<std::string> list;
    for (std::string x; std::getline(ss, x, ',');) list.push_back(x);
    if (o.rail >= static_cast<int>(list.size())) {
      std::cerr << "railcoll calibrate: no rail " << o.rail << " in RAILCOLL_RAILS\n";
      return 1;
    }
    setenv("RAILCOLL_RAILS", list[o.rail].c_str(), 1);
  }
  setenv("RAILCOLL_BARRIER_ALGO", "smp", 1);  // the barrier the flag test models
  if (o.test == "turn") setenv("RAILCOLL_SPIN_US", "1000000", 1);            // spinning through the 20 ms
  Worker w;
  if (railcoll_comm_init(&w.comm) != RAILCOLL_OK) {
    std::cerr << "railcoll calibrate: " << railcoll_last_error() << "\n";
    return 1;
  }
  w.me = railcoll_comm_rank(w.comm);
  w.N = railcoll_comm_size(w.comm);
  if (w.me == 0) w.rec.open(o.records, std::ios::app);
  int rc = 0;
  try {
    if (o.test == "p2p") test_p2p(w, o.quick);
    else if (o.test == "node") test_node(w, o.quick);
    else if (o.test == "flag") test_flag(w, o.quick);
    else if (o.test == "pair") test_pair(w, o.quick, o.idle_us, false);
    else if (o.test == "local") test_pair(w, o.quick, o.idle_us, true);
    else if (o.test == "burst") test_burst(w, o.quick, o.idle_us);
    else if (o.test == "call") test_call(w, o.quick, o.idle_us);
    else if (o.test == "turn") test_turn(w, o.quick);
    else if (o.test == "placement") test_placement(w, o.quick, o.idle_us);
    else throw std::runtime_error("unknown test '" + o.test + "'");
  } catch (const std::exception& e) {
    std::cerr << "railcoll calibrate: rank " << w.me << ": " << e.what() << "\n";
    rc = 1;
  }
  railcoll_comm_destroy(w.comm);
  return rc;
}


namespace {

struct Fit {
  double a = 0, b = 0;  // time(m) = a + m / b: a in us, b in bytes/us = MB/s
};

// a: median time of the sizes <= 64 B; b: least-squares slope over sizes >= 512 KiB
// (well above the token bucket's 128 KiB burst, which a smaller message passes at memory speed).
Fit fit(const std::vector<std::pair<double, double>>& pts) {
  Fit f;
  std::vector<double> small;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  int n = 0;
  for (auto& p : pts) {
    if (p.first <= 64) small.push_back(p.second);
    if (p.first >= 524288) {
      sx += p.first, sy += p.second, sxx += p.first * p.first, sxy += p.first * p.second, ++n;
    }
  }
  f.a = median(small);
  double slope = n >= 2 ? (n * sxy - sx * sy) / (n * sxx - sx * sx) : 0;
  f.b = slope > 0 ? 1 / slope : 0;
  return f;
}

std::string fmt(double x, int prec = 3) {
  std::ostringstream o;
  o << std::setprecision(prec) << std::fixed << x;
  std::string s = o.str();
  while (s.find('.') != std::string::npos && (s.back() == '0' || s.back() == '.')) {
    bool dot = s.back() == '.';
    s.pop_back();
    if (dot) break;
  }
  return s;
}

// Wake-up cost of a process asleep in a wait, as the runtime sleeps on a node
// counter (a futex; progress.cpp): two processes pinned to one core take
// turns, each waking the other with FUTEX_WAKE and sleeping in FUTEX_WAIT;
// each round trip wakes each of them once. Half a round trip: the waker's
// wake, the switch and the woken one's return to work.
double measure_wakeup_us(bool quick) {
  std::vector<double> trials;
  for (int trial = 0; trial < (quick ? 1 : 3); ++trial) {
    void* mem = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return 0;
    auto* turn = static_cast<std::atomic<uint32_t>*>(mem);  // whose turn: 0 the parent's, 1 the child's
    turn->store(0);
    const int rounds = quick ? 2000 : 20000;
    // Waits until *turn is `mine`, sleeping on the futex meanwhile.
    auto await = [turn](uint32_t mine) {
      for (uint32_t v; (v = turn->load()) != mine;) syscall(SYS_futex, turn, FUTEX_WAIT, v, nullptr, nullptr, 0);
    };
    auto give = [turn](uint32_t to) {
      turn->store(to);
      syscall(SYS_futex, turn, FUTEX_WAKE, 1, nullptr, nullptr, 0);
    };
    cpu_set_t allowed;
    sched_getaffinity(0, sizeof allowed, &allowed);
    pin_to_one_core();  // inherited by the child: they share that core
    pid_t pid = fork();
    if (pid == 0) {
      for (int i = 0; i < rounds; ++i) {
        await(1);
        give(0);
      }
      _exit(0);
    }
    double t0 = now_us();
    for (int i = 0; i < rounds && pid > 0; ++i) {
      give(1);
      await(0);
    }
    if (pid > 0) trials.push_back((now_us() - t0) / rounds / 2);
    if (pid > 0) waitpid(pid, nullptr, 0);
    munmap(mem, 4096);
    sched_setaffinity(0, sizeof allowed, &allowed);
  }
  return median(trials);
}

}  // namespace

void calibrate(const CalibrationOptions& o, const JobRunner& run, std::ostream& log) {
  const bool cluster = o.cluster;
  const std::string& where = o.where;
  auto S = [](int x) { return std::to_string(x); };
  const double burst = o.burst_bytes;  // the shapers' bucket: bursts that pass the rails at memory speed after idle

  log << "measuring the cluster's shape and memory copies (" << (cluster ? "every rank" : S(o.n) + " ranks")
            << ") ...\n" << std::flush;
  auto node = run("node", JobShape{{}, {true, o.n, o.ppn, o.rails, {}}}, -1);
  auto get = [](const std::multimap<std::string, std::vector<double>>& r, const std::string& k) {
    auto it = r.find(k);
    if (it == r.end() || it->second.empty()) throw std::runtime_error("no '" + k + "' result from the workers");
    return it->second;
  };
  auto shape = get(node, "shape");
  int nodes = static_cast<int>(shape[0]), ppn = static_cast<int>(shape[1]), rails = static_cast<int>(shape[2]);
  double rate_bps = shape.size() > 4 ? shape[4] : 0;
  // One rank on each of `count` nodes, every rail.
  auto one_per_node = [&](int count) {
    return JobShape{{false, 0, 0, rails, std::vector<int>(count, 1)}, {true, count, 1, rails, {}}};
  };
  double copy = get(node, "copy")[0], membus = get(node, "membus_node")[0], membus_all = get(node, "membus_all")[0];

  log << "measuring a shared-memory flag (2 ranks of one node, SMP barriers) ...\n" << std::flush;
  auto flag_rec = run("flag", JobShape{{false, 0, 0, 1, {2}}, {true, 2, 0, 1, {}}}, -1);
  double barrier = get(flag_rec, "barrier")[0], flag = barrier / 2;

  // Per rail: 2 ranks on 2 nodes, the worker keeping only that rail.
  std::vector<Fit> fits;
  std::vector<std::vector<std::pair<double, double>>> curves;
  for (int r = 0; r <= rails; ++r) {  // r == rails: all rails at once (striped), for the table only
    bool all = r == rails;
    log << "measuring point-to-point on " << (all ? "all " + S(rails) + " rails (striped)" : "rail " + S(r))
              << " (2 ranks on 2 nodes, direct all-gather, 0 B - " << (o.quick ? "2" : "4") << " MiB) ...\n"
              << std::flush;
    // Several jobs: the two processes land on one core or on two, which changes
    // small-message times by 2-3x (docs/calibration.md); the median over jobs is kept.
    std::map<double, std::vector<double>> per_size;
    for (int job = 0; job < (o.quick ? 1 : 3); ++job) {
      auto p = run("p2p", one_per_node(2), all ? -1 : r);
      for (auto it = p.lower_bound("p2p"); it != p.upper_bound("p2p"); ++it)
        per_size[it->second[0]].push_back(it->second[1]);
    }
    std::vector<std::pair<double, double>> pts;
    for (auto& [m, t] : per_size) pts.push_back({m, median(t)});
    curves.push_back(pts);
    fits.push_back(fit(pts));
  }

  // The host's work per message and per byte (docs/calibration.md): 2 ranks
  // on one core, sleeping waits, each call after bench's rest; the wake-ups
  // (one per sleep) taken out.
  const double wakeup = measure_wakeup_us(o.quick);
  // Every rank of the cluster on one core; the measured ones beside the
  // others' calls (test_pair: "the crowd").
  const JobShape everyone{{}, {true, o.n, o.ppn, o.rails, {}}};
  const std::string crowd = "every rank on one core, " + S(o.idle_us) + " us of rest before each call";
  log << "measuring the CPU of a call apart from its messages (rank 0 alone; " << crowd << ") ...\n" << std::flush;
  const double call = get(run("call", everyone, -1), "call")[0];
  // CPU per call of 8 B and of 64 KiB, each less its wake-ups and the two
  // ranks' own call work.
  auto work_per_call = [&](const Records& r, const std::string& key, std::vector<double>* sleeps) {
    std::map<double, double> at;
    for (auto it = r.lower_bound(key); it != r.upper_bound(key); ++it) {
      at[it->second[0]] = it->second[1] - it->second[2] * wakeup - 2 * call;
      sleeps->push_back(it->second[2]);
    }
    if (!at.count(8) || !at.count(65536)) throw std::runtime_error("no '" + key + "' results from the workers");
    return std::make_pair(at[8], at[65536]);
  };
  log << "measuring host CPU per message and per byte (ranks 0 and " << ppn << ", then 0 and 1; " << crowd
      << ") ...\n" << std::flush;
  std::vector<double> pair_sleeps, local_sleeps;
  auto [remote8, remote64] = work_per_call(run("pair", everyone, -1), "pair", &pair_sleeps);
  auto [local8, local64] = work_per_call(run("local", everyone, -1), "local", &local_sleeps);
  const double host = remote8 / 2;  // o_s + o_r: a call is one message each way
  // ns per byte per end: 2 messages of 64 KiB - 8 B more, each copied on 2 ends.
  auto per_byte = [](double small_us, double large_us) { return std::max(0.0, (large_us - small_us) * 1e3 / (4.0 * (65536 - 8))); };
  const double kernel = per_byte(remote8, remote64);
  const double socket_overhead = local8 / 2, local_socket = per_byte(local8, local64);

  // Messages in flight: the first rank of every node, every call nodes
  // (nodes - 1) messages at once, against the pair's 2.
  double burst_cpu = host, burst_in_flight = 2;
  if (nodes > 2) {
    log << "measuring host CPU per message with " << nodes * (nodes - 1) << " in flight (the first rank of each of "
        << nodes << " nodes, 8-byte direct all-gathers; " << crowd << ") ...\n" << std::flush;
    auto b = get(run("burst", everyone, -1), "burst");
    burst_in_flight = b[2];
    burst_cpu = (b[0] - b[1] * wakeup - nodes * call) / burst_in_flight;
  }

  log << "measuring a spinning wait's turn (every rank on one core) and where the kernel puts the ranks "
         "(every rank, " << o.idle_us << " us of rest before each call) ...\n" << std::flush;
  auto turn = get(run("turn", everyone, -1), "turn");
  const double spin_turn = turn[0];
  const double busiest_share = get(run("placement", everyone, -1), "placement")[0];
  const int cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));

  // Derivations (docs/calibration.md). The model of one p2p call is
  // copy(m) + o_s + L + m/bw + o_r: the fitted slope also contains the local copy.
  std::vector<double> per_rail_a, per_rail_bw;
  for (int r = 0; r < rails; ++r) {
    per_rail_a.push_back(fits[r].a);
    double inv = 1 / fits[r].b - 1 / copy;
    per_rail_bw.push_back(inv > 0 ? 1 / inv : fits[r].b);
  }
  double a = median(per_rail_a), bw = median(per_rail_bw);
  // A message pays o (1 - f + f / n) with n in flight (sim::Machine::
  // overhead_shared): host = M1 (1 - f / 2) at 2 in flight, burst_cpu =
  // M1 (1 - f + f / K) at K; their ratio gives f, then M1 = o_s + o_r of a
  // lone message.
  const double R = burst_cpu / host, K = burst_in_flight;
  double shared = 0;
  if (K > 2 && std::fabs(R / 2 - 1 + 1 / K) > 1e-12) shared = std::clamp((R - 1) / (R / 2 - 1 + 1 / K), 0.0, 1.0);
  const double lone = host / (1 - shared / 2);
  double o_s = lone / 2, o_r = lone / 2;
  // The p2p processes run on a core each: a = o_s + L + o_r at 2 in flight.
  double wire = std::max(0.0, a - host);

  // The table.
  log << "\n# measured on " << where << ": " << nodes << " nodes x " << ppn << " ranks, " << rails << " rail"
            << (rails > 1 ? "s" : "") << (rate_bps > 0 ? " at " + fmt(rate_bps / 1e6, 0) + " Mbit/s" : "") << "\n";
  log << "# point-to-point (2 ranks, direct all-gather, median of the slowest rank per call), us\n";
  log << std::left << std::setw(10) << "bytes";
  for (int r = 0; r <= rails; ++r) log << std::right << std::setw(14) << (r == rails ? "all rails" : "rail " + S(r));
  log << "\n";
  for (size_t i = 0; i < curves[0].size(); ++i) {
    log << std::left << std::setw(10) << static_cast<uint64_t>(curves[0][i].first);
    for (auto& c : curves) log << std::right << std::setw(14) << (i < c.size() ? fmt(c[i].second, 2) : "-");
    log << "\n";
  }
  log << std::left << std::setw(10) << "fit a us";
  for (auto& f : fits) log << std::right << std::setw(14) << fmt(f.a, 2);
  log << "\n" << std::left << std::setw(10) << "fit MB/s";
  for (auto& f : fits) log << std::right << std::setw(14) << fmt(f.b, 1);
  log << "\n\n";
  log << "host CPU of a call apart from its messages, per rank: " << fmt(call, 2) << " us\n";
  log << "host CPU per call of 2 ranks on one core, less " << fmt(median(pair_sleeps), 1) << " and "
      << fmt(median(local_sleeps), 1) << " wake-ups of " << fmt(wakeup, 2) << " us and their calls' own work: between nodes "
      << fmt(remote8, 2) << " us at 8 B, " << fmt(remote64, 2) << " us at 64 KiB; on one node " << fmt(local8, 2)
      << " and " << fmt(local64, 2) << " us\n";
  log << "host CPU per message: " << fmt(host, 2) << " us with 2 in flight, " << fmt(burst_cpu, 2) << " us with "
      << fmt(burst_in_flight, 0) << " (shared part " << fmt(100 * shared, 1) << "%); through a local socket "
      << fmt(socket_overhead, 2) << " us\n";
  log << "a spinning wait's turn with " << fmt(turn[1], 0) << " spinners on one core: " << fmt(spin_turn, 2)
      << " us; ranks on the busiest of " << cores << " cores when a call starts: " << fmt(100 * busiest_share, 1)
      << "%\n";
  log << "memcpy 16 MiB: one process " << fmt(copy, 0) << " MB/s; node 0's " << ppn << " at once "
            << fmt(membus, 0) << " MB/s; all " << static_cast<int>(shape[3]) << " ranks at once " << fmt(membus_all, 0)
            << " MB/s (" << fmt(membus_all / nodes, 0) << " per node)\n";
  log << "SMP barrier, 2 ranks of one node: " << fmt(barrier, 2) << " us\n\n";

  // The preset, in the format of src/sim/machine.cpp.
  char date[32];
  time_t t = time(nullptr);
  strftime(date, sizeof date, "%Y-%m-%d", localtime(&t));
  std::string src = std::string("source: measured by railcoll calibrate on ") + date + ": ";
  std::string p2p = "2-rank direct all-gather between 2 nodes, 0 B-" + std::string(o.quick ? "2" : "4") +
                    " MiB, median of the slowest rank over " + (o.quick ? "5" : "11-31") +
                    " barrier-separated calls, median over " + (o.quick ? "1 job" : "3 jobs");
  // The pair jobs: how each was run, for the sources.
  std::string pair = "the 2 ranks on one core with every other rank of the cluster (each making calls of its own "
                     "beside them, spinning), waits that sleep at once (RAILCOLL_SPIN_US=0), each call after " +
                     S(o.idle_us) + " us of rest and a barrier as bench runs it; the CPU time of both per call " +
                     "(the kernel's softirq work runs on that core, inside it), median of " + (o.quick ? "30" : "200") +
                     " calls, less a wake-up (wakeup_us) per sleep and call_overhead_us per rank";
  const char* spin_env = getenv("RAILCOLL_SPIN_US");
  std::string spin_us = spin_env ? spin_env : "2000";
  std::vector<std::pair<std::string, std::string>> kv = {
      {"name = testbed", "source: railcoll calibrate"},
      {"nodes = " + S(nodes), src + "the calibration job's communicator (railcoll_comm_nodes)"},
      {"ppn = " + S(ppn), src + "RAILCOLL_LOCAL_SIZE of the calibration job's ranks"},
      {"rails = " + S(rails), src + "railcoll_comm_rails of the calibration job"},
      {"topology = crossbar", src + "not measured: one bridge per rail (docs/cluster.md)"},
      {"wire_latency_us = " + fmt(wire), src + "fit intercept a = " + fmt(a, 2) + " us (median of the 0-64 B times, " +
                                              p2p + ", median over rails; a process per core) minus the host CPU of " +
                                              "a message at 2 in flight (" + fmt(host, 2) + " us: one send + one receive)"},
      {"hop_latency_us = 0", src + "not measured: one switch (bridge) per rail"},
      {"send_overhead_us = " + fmt(o_s), src + "half the host CPU of a lone message (one send + one receive, even "
                                               "split assumed): " + fmt(host, 2) + " us per message = half of " +
                                               fmt(remote8, 2) + " us per 8-byte direct all-gather between 2 nodes (" +
                                               pair + "), / (1 - overhead_shared / 2)"},
      {"recv_overhead_us = " + fmt(o_r), src + "the other half of the same CPU per message (even split assumed)"},
      {"overhead_shared = " + fmt(shared),
       src + (burst_in_flight > 2
                  ? "from the host CPU per message with 2 in flight (" + fmt(host, 2) + " us) and with " +
                        fmt(burst_in_flight, 0) + " in flight (" + fmt(burst_cpu, 2) +
                        " us: one rank on each node, the same way), a message paying o (1 - f + f / n) with n in flight"
                  : std::string("not measured: fewer than 3 nodes, no job with more than 2 messages in flight"))},
      {"gap_us = " + fmt(o_s * (1 - shared)), src + "assumed: the NIC is the sending CPU's TCP stack, so a rail takes the "
                                                  "next message when the last send call is done; the send overhead of "
                                                  "a message among many in flight, send_overhead_us (1 - "
                                                  "overhead_shared)"},
      {"recv_cpu = loggp", src + "not measured: every message is received through a socket, so the receiving "
                                 "process works for each"},
      {"link_MBps = " + fmt(bw, 1), src + "1 / (fitted slope - 1/copy_MBps): least squares over 512 KiB-" +
                                        (o.quick ? "2" : "4") + " MiB, " + p2p + ", median over rails; fitted b = " +
                                        fmt(median([&] { std::vector<double> v; for (int r = 0; r < rails; ++r) v.push_back(fits[r].b); return v; }()), 1) +
                                        " MB/s"},
      {"pci_MBps = " + fmt(copy, 0), src + "not measured: a veth has no host bus; the kernel copies into the "
                                          "socket at memory speed (copy_MBps; its CPU is kernel_ns_per_byte)"},
      {"link_burst_bytes = " + S(static_cast<int>(burst)),
       src + (burst > 0 ? "the tbf bucket of every rail's shapers, both directions (railcoll cluster up; "
                          "docs/cluster.md)"
                        : "no shaper: local processes over loopback")},
      {"pci_duplex = full", src + "not measured: a veth pair has no host bus; both directions are the kernel's work"},
      {"dma_engines = 1", src + "not measured: one TCP socket per peer and rail, no DMA engine"},
      {"copy_MBps = " + fmt(copy, 0), src + "memcpy of 16 MiB buffers by one process, median of trials"},
      {"membus_MBps = " + fmt(membus_all, 0), src + "aggregate memcpy rate of all " + S(static_cast<int>(shape[3])) +
                                                  " processes copying 16 MiB at once, median of trials"},
      {"membus_shared_by = machine", src + "every emulated node runs on this one host and its memory"},
      {"flag_latency_us = " + fmt(flag), src + "half a 2-rank SMP barrier on one node (" + fmt(barrier, 2) +
                                             " us, back-to-back barriers; the barrier is two flag hops)"},
      {"intranode_put = socket", src + "not measured: the runtime sends a put to a local rank's private buffer "
                                       "through a Unix socket (a put into the node's shared buffer is a memcpy)"},
      {"socket_overhead_us = " + fmt(socket_overhead), src + "half of " + fmt(local8, 2) + " us per 8-byte direct "
                                                             "all-gather between 2 ranks of one node (" + pair + ")"},
      {"socket_ns_per_byte = " + fmt(local_socket), src + "the same 2 ranks of one node: (" + fmt(local64, 2) +
                                                          " us per 64 KiB call - " + fmt(local8, 2) +
                                                          " us per 8 B call) / 4 x 64 KiB (2 messages, 2 ends)"},
      {"cores = " + S(cores), src + "online processors of the host (sysconf)"},
      {"cores_shared_by = machine", src + "every emulated node (a namespace, or a pretend node) runs on this one host"},
      {"busiest_core_share = " + fmt(busiest_share),
       src + "the share of the " + S(static_cast<int>(shape[3])) + " ranks on the busiest core when a call starts "
             "(sched_getcpu after " + S(o.idle_us) + " us of rest and a barrier, as bench runs a call), median of " +
             (o.quick ? "30" : "200") + " calls"},
      {"call_overhead_us = " + fmt(call), src + "the CPU time of an 8-byte all-gather on a communicator of one rank "
                                                "(a copy of 8 bytes), rank 0 on one core with every other rank of the "
                                                "cluster (each making calls of its own beside it), each call after " +
                                                S(o.idle_us) + " us of rest and a barrier as bench runs it, median of " +
                                                (o.quick ? "30" : "200") + " calls"},
      {"wakeup_us = " + fmt(wakeup), src + "half the round trip of a futex ping-pong (FUTEX_WAKE, FUTEX_WAIT) between "
                                           "two processes pinned to one core (each round trip wakes each once), "
                                           "median of trials"},
      {"kernel_ns_per_byte = " + fmt(kernel), src + "2 ranks on 2 nodes: (" + fmt(remote64, 2) + " us per 64 KiB call - " +
                                                    fmt(remote8, 2) + " us per 8 B call) / 4 x 64 KiB (2 messages, "
                                                    "2 ends; " + pair + ")"},
      {"spin_us = " + spin_us, src + "not measured: the runtime's spin before it sleeps in a wait (RAILCOLL_SPIN_US" +
                                   std::string(spin_env ? ", as set here" : ", default 2000 us: kOwnCoreSpin in src/runtime/executor.hpp") + ")"},
      {"spin_turn_us = " + fmt(spin_turn), src + "every rank of the cluster on one core, " + fmt(turn[1], 0) +
                                               " of them spinning in a barrier (RAILCOLL_SPIN_US long) for 20 ms "
                                               "while rank 0 sleeps: 20 ms / their context switches, median of " +
                                               (o.quick ? "2" : "7") + " trials"},
  };
  std::ostringstream text;
  text << "# testbed: " << where << ", " << nodes << " nodes x " << ppn << " ranks, " << rails << " rails"
       << (rate_bps > 0 ? " at " + fmt(rate_bps / 1e6, 0) + " Mbit/s" : "") << ", measured by railcoll calibrate on "
       << date << (o.quick ? " (--quick)" : "") << "\n";
  for (auto& [line, source] : kv) text << line << "    # " << source << "\n";
  sim::parse_machine(text.str(), o.out);  // a preset the simulator accepts, or an error here
  std::ofstream f(o.out);
  if (!(f << text.str()) || (f.close(), !f)) throw std::runtime_error("cannot write " + o.out);
  log << "preset parameters:\n";
  for (auto& [line, source] : kv) log << "  " << line << "\n";
  log << "wrote " << o.out << "\n";
}


// ----------------------------------------------------------------- compare --

Comparison compare(const std::vector<Timing>& simulated, const std::vector<std::vector<Timing>>& measured_runs) {
  using Key = std::pair<uint64_t, std::string>;
  auto load = [](const std::vector<Timing>& v, std::map<Key, std::vector<double>>* m) {
    for (const Timing& r : v)
      if (r.algorithm != "auto" && r.algorithm.rfind("mpi:", 0) != 0 && r.p50_us > 0)
        (*m)[{r.bytes, r.algorithm}].push_back(r.p50_us);
  };
  std::map<Key, std::vector<double>> sims, runs;
  load(simulated, &sims);
  for (auto& run : measured_runs) load(run, &runs);
  std::map<Key, double> sim, bench;
  for (auto& [key, v] : sims) sim[key] = v.back();
  for (auto& [key, v] : runs) bench[key] = median(v);
  std::vector<double> errs;
  std::map<uint64_t, std::pair<std::string, double>> best_sim, best_bench;
  std::map<uint64_t, std::vector<double>> size_errs;
  for (auto& [key, b] : bench) {
    auto it = sim.find(key);
    if (it == sim.end()) continue;
    double e = std::fabs(it->second - b) / b;
    errs.push_back(e);
    size_errs[key.first].push_back(e);
    auto better = [&](std::map<uint64_t, std::pair<std::string, double>>& best, double t) {
      auto bi = best.find(key.first);
      if (bi == best.end() || t < bi->second.second) best[key.first] = {key.second, t};
    };
    better(best_sim, it->second);
    better(best_bench, b);
  }
  if (errs.empty()) throw std::invalid_argument("no (algorithm, size) is in both the simulated and the measured records");
  Comparison c;
  c.median_error = median(errs);
  c.pairs = errs.size();
  // What choosing by the model costs: the measured time of the simulated
  // fastest over the measured fastest (runs of one benchmark often disagree on
  // the fastest of two algorithms a few percent apart).
  std::vector<double> losses;
  for (auto& [bytes, s] : best_sim) {
    Comparison::Size z;
    z.bytes = bytes;
    z.fastest_sim = s.first;
    z.fastest_measured = best_bench[bytes].first;
    z.median_error = median(size_errs[bytes]);
    z.choice_loss = bench[{bytes, s.first}] / best_bench[bytes].second - 1;
    c.same_fastest += z.fastest_sim == z.fastest_measured;
    c.within_10 += z.choice_loss <= 0.10;
    losses.push_back(z.choice_loss);
    c.sizes.push_back(z);
  }
  c.median_loss = median(losses);
  return c;
}

void print_comparison(const Comparison& c, std::ostream& out) {
  out << std::left << std::setw(10) << "bytes" << std::setw(28) << "fastest simulated" << std::setw(28)
      << "fastest measured" << std::setw(14) << "median error" << "model's choice, measured\n";
  for (const Comparison::Size& z : c.sizes) {
    bool same = z.fastest_sim == z.fastest_measured;
    out << std::left << std::setw(10) << z.bytes << std::setw(28) << z.fastest_sim << std::setw(28)
        << z.fastest_measured + (same ? "" : " *") << std::setw(14) << fmt(100 * z.median_error, 1) + "%" << "+"
        << fmt(100 * z.choice_loss, 1) << "%\n";
  }
  const size_t n = c.sizes.size();
  out << "median absolute relative error: " << fmt(100 * c.median_error, 1) << "% over " << c.pairs
      << " (algorithm, size) pairs\n";
  out << "same fastest algorithm: " << c.same_fastest << " of " << n << " sizes ("
      << fmt(100.0 * c.same_fastest / n, 1) << "%)\n";
  out << "the model's fastest is within 10% of the measured fastest at " << c.within_10 << " of " << n
      << " sizes (median +" << fmt(100 * c.median_loss, 1) << "%)\n";
}

}  // namespace railcoll::bench
