#include "bench/peer.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <random>
#include <sstream>
#include <thread>

#include "bench/busy_compute.h"
#include "bench/clock.hpp"
#include "bench/overlap_figures.hpp"
#include "bench/records.hpp"
#include "bench/report.hpp"
#include "bench/stats.hpp"

namespace railcoll::bench {

namespace {

constexpr int kDefaultIters = 100, kDefaultBarrierIters = 10000;  // a barrier's distribution needs many
constexpr int kDefaultWarmup = 10, kDefaultBarrierWarmup = 100;

volatile double compute_sink = 0;  // keeps the busy loop

void rest_us(uint64_t us) {
  if (us > 0) std::this_thread::sleep_for(std::chrono::microseconds(us));
}

bool whole_number(const std::string& s, uint64_t* out) {
  if (s.empty() || s[0] == '-') return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = strtoull(s.c_str(), &end, 10);
  if (*end || errno) return false;
  *out = v;
  return true;
}

bool size_range(const std::string& s, uint64_t* lo, uint64_t* hi) {
  const size_t colon = s.find(':');
  if (colon == std::string::npos) return whole_number(s, hi);
  if (colon > 0 && !whole_number(s.substr(0, colon), lo)) return false;
  return colon + 1 == s.size() || whole_number(s.substr(colon + 1), hi);
}

// One size: every call timed on this rank.
class SizeRun {
 public:
  SizeRun(PeerCollectives& lib, const PeerOptions& o, CallBuffers& b, int first_call)
      : lib_(lib), o_(o), b_(b), call_(first_call), barrier_(o.collective == Collective::Barrier) {}

  // Before each call: its input, the rest, the barrier (none between barriers).
  void before() {
    if (o_.validate) b_.prepare(call_);
    if (!barrier_) {
      rest_us(o_.idle_us);
      lib_.barrier();
    }
  }
  // After it: checked once every rank has left it (a rank that checks while
  // the slowest is still in it takes a core from it).
  void after(const char* kind) {
    if (o_.validate) {
      if (!barrier_) lib_.barrier();
      std::string w = b_.check(call_);
      if (!w.empty() && wrong.empty()) wrong = std::string(kind) + "call " + std::to_string(call_) + ": " + w;
    }
    ++call_;
  }

  // entries, then exits (us)
  std::vector<double> blocking(int calls, int warmup, uint64_t seed) {
    std::vector<double> t(2 * static_cast<size_t>(calls));
    std::mt19937 rng(static_cast<unsigned>(seed));
    std::uniform_int_distribution<uint64_t> skew(0, o_.skew_us);
    for (int i = -warmup; i < calls; ++i) {
      before();
      if (o_.skew_us > 0) rest_us(skew(rng));
      const double t0 = monotonic_us();
      lib_.call(o_.collective, b_);
      const double t1 = monotonic_us();
      if (i >= 0) t[i] = t0, t[calls + i] = t1;
      after("");
    }
    return t;
  }

  // OSU's nonblocking benchmark (bench/overlap.hpp): the blocking and the
  // nonblocking call alternating (which one first changes every round), then
  // post, a busy loop as long as this rank's mean post + wait, wait.
  OverlapTimes nonblocking(int calls, int warmup) {
    using S = OverlapTimes;
    OverlapTimes t(calls);
    for (int i = -warmup; i < calls; ++i)
      for (int k = 0; k < 2; ++k) {
        const bool blocking = (k == 0) == ((i & 1) == 0);
        before();
        const double t0 = monotonic_us();
        if (blocking) {
          lib_.call(o_.collective, b_);
        } else {
          lib_.post(o_.collective, b_);
          lib_.wait();
        }
        const double t1 = monotonic_us();
        if (i >= 0) {
          t.series(blocking ? S::BlockingIn : S::PureIn)[i] = t0;
          t.series(blocking ? S::BlockingOut : S::PureOut)[i] = t1;
        }
        after(blocking ? "blocking " : "nonblocking ");
      }
    double target = 0;
    for (int i = 0; i < calls; ++i) target += (t.series(S::PureOut)[i] - t.series(S::PureIn)[i]) / calls;
    for (int i = -warmup; i < calls; ++i) {
      before();
      const double t0 = monotonic_us();
      lib_.post(o_.collective, b_);
      const double t1 = monotonic_us();
      compute_sink = railcoll_busy_compute(target);
      const double t2 = monotonic_us();
      lib_.wait();
      const double t3 = monotonic_us();
      if (i >= 0) {
        t.series(S::OverlapIn)[i] = t0, t.series(S::OverlapOut)[i] = t3;
        t.series(S::Post)[i] = t1 - t0, t.series(S::Compute)[i] = t2 - t1, t.series(S::Wait)[i] = t3 - t2;
      }
      after("overlapped ");
    }
    return t;
  }

  int next_call() const { return call_; }
  std::string wrong;  // the first wrong result this rank saw

 private:
  PeerCollectives& lib_;
  const PeerOptions& o_;
  CallBuffers& b_;
  int call_;
  bool barrier_;
};

}  // namespace

std::string parse_peer_options(const std::vector<std::string>& args, const std::string& program,
                               const std::string& default_label, PeerOptions* o) {
  *o = PeerOptions{};
  o->label = default_label;
  o->program = program;
  if (const char* r = getenv("RAILCOLL_RAILS"); r && *r) o->rails = 1 + static_cast<int>(std::count(r, r + strlen(r), ','));
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-c") o->validate = true;
    else if (a == "--full") o->full = true;
    else if (a == "--samples") o->samples = true;
    else if (a == "--nonblocking") o->nonblocking = true;
    else if (a == "--raw") o->raw = true;
    else if (a == "-h" || a == "--help") return "help";
    else if (a == "--coll" || a == "-m" || a == "-i" || a == "-x" || a == "--label" || a == "--rails" ||
             a == "--idle-us" || a == "--skew" || a == "--rounds" || a == "--factor") {
      if (i + 1 >= args.size()) return "option " + a + " needs a value";
      const std::string v = args[++i];
      uint64_t x = 0;
      if (a == "--label") o->label = v;
      else if (a == "--coll") {
        if (!parse_collective(v, &o->collective) || !traits(o->collective).user_facing)
          return "--coll expects one of the collectives -h lists, got '" + v + "'";
      } else if (a == "-m") {
        if (!size_range(v, &o->min, &o->max) || o->min < 1 || o->min > o->max || o->max > (1ull << 30))
          return "-m expects MIN:MAX bytes with 1 <= MIN <= MAX <= 1073741824, got '" + v + "'";
      } else {
        const bool zero_ok = a == "-x" || a == "--idle-us" || a == "--skew";
        if (!whole_number(v, &x) || x > 100000000 || (x < 1 && !zero_ok))
          return a + " expects a whole number" + (zero_ok ? "" : " >= 1") + ", got '" + v + "'";
        if (a == "-i") o->iters = static_cast<int>(x);
        else if (a == "-x") o->warmup = static_cast<int>(x);
        else if (a == "--idle-us") o->idle_us = x;
        else if (a == "--skew") o->skew_us = x;
        else if (a == "--rounds") o->rounds = static_cast<int>(std::min<uint64_t>(x, 1000));
        else if (a == "--factor") {
          if (x < 2 || x > 1024) return "--factor must be between 2 and 1024";
          o->factor = static_cast<int>(x);
        }
        else if (x > 64) return "--rails must be between 1 and 64";
        else o->rails = static_cast<int>(x);
      }
    } else {
      return "unknown option '" + a + "' (-h lists them)";
    }
  }
  if (o->nonblocking && o->skew_us) return "--skew does not go with --nonblocking";
  if (o->nonblocking && o->raw) return "--raw does not go with --nonblocking";
  const bool barrier = o->collective == Collective::Barrier;
  if (o->iters < 0) o->iters = barrier ? kDefaultBarrierIters : kDefaultIters;
  if (o->warmup < 0) o->warmup = barrier ? kDefaultBarrierWarmup : kDefaultWarmup;
  return "";
}

std::string peer_usage(const std::string& program, const std::string& library) {
  std::ostringstream u;
  const std::string pad(program.size() + 8, ' ');
  u << "usage: " << program << " [--coll NAME] [-m MIN:MAX] [-i ITERS] [-x WARMUP] [-c] [--full]\n"
    << pad << "[--samples] [--label NAME] [--rails K] [--idle-us N] [--skew US]\n"
    << pad << "[--nonblocking] [--rounds R] [--raw] [--factor F]\n"
    << "An OSU-style benchmark of " << library << "'s collectives, the calls railcoll bench compares\n"
    << "railcoll's with on the same ranks (src/bench/peer.hpp).\n"
    << "  --coll NAME   the collective (default allgather): allgather, bcast (from rank 0), gather\n"
    << "                (to rank 0), allreduce, reduce_scatter_block, reduce_scatter, reduce (sums of\n"
    << "                bytes/4 floats; sizes rounded up to whole floats), barrier (one record with\n"
    << "                bytes 0; -m is ignored), alltoall, alltoallv, scatter, scatterv, gatherv (the\n"
    << "                v-forms with the same count for every rank, packed); bytes are per rank\n"
    << "                (allreduce, reduce: the vector; reduce_scatter: each rank's block; alltoall:\n"
    << "                per pair)\n"
    << "  -m MIN:MAX    sizes in bytes from MIN to MAX, each twice the last (default 8:1048576)\n"
    << "  --factor F    each size F times the last instead (railcoll bench --factor)\n"
    << "  -i ITERS      timed calls per size (default 100, barrier 10000); large sizes run fewer:\n"
    << "                at most " << (kCallBudgetBytes >> 20) << " MiB gathered (bytes x ranks) per size, but at least "
    << kMinCalls << ",\n"
    << "                the rule railcoll bench follows too (unless --full)\n"
    << "  -x WARMUP     untimed calls first (default 10, barrier 100; fewer when large sizes run\n"
    << "                fewer calls)\n"
    << "  -c            validate every call: byte patterns, exact float sums\n"
    << "  --full        run -i and -x calls at every size\n"
    << "  --samples     add \"samples_us\": the slowest rank's time of every timed call\n"
    << "  --label NAME  the \"algorithm\" field, e.g. mpi:tuned or mpi:han\n"
    << "  --rails K     rails in use, copied to the output (default: the count in RAILCOLL_RAILS, else 1)\n"
    << "  --idle-us N   sleep N us before each call's barrier (default 0), so every call finds the\n"
    << "                rails idle: a shaper's burst refilled, as railcoll bench does\n"
    << "  --skew US     after each call's barrier, each rank waits a random 0..US us before entering\n"
    << "                the call (its time starts then), as an application's imbalance does\n"
    << "  --nonblocking OSU's nonblocking benchmark: the nonblocking call + wait alternating with the\n"
    << "                blocking call, then post, a busy loop as long as this rank's mean post + wait\n"
    << "                that calls nothing of the library, wait; the record's times are post + wait's,\n"
    << "                with the blocking call's, the overlap run's and overlap % beside them (not with\n"
    << "                --skew)\n"
    << "  --rounds R    this run is one of R interleaved with railcoll's (railcoll bench): it times\n"
    << "                its share of each size's calls, after its own warm-up\n"
    << "  --raw         add every rank's own time of every call and every call's span (railcoll\n"
    << "                bench pools the rounds from them)\n"
    << "Timing: a barrier of the library before every timed call, except for barrier, whose calls\n"
    << "are timed back to back. Output: one JSON record per size on stdout (docs/results.md).\n";
  return u.str();
}

int run_peer_bench(SideChannel& side, PeerCollectives& lib, const PeerOptions& o, std::ostream& out,
                   std::ostream& err) {
  const int me = side.rank(), N = side.size();
  const int nodes = side.nodes(), ppn = side.max_ppn();
  const bool shared_clock = side.all_equal(clock_identity());
  const bool barrier = o.collective == Collective::Barrier;
  int status = 0, call = 1;
  for (uint64_t bytes : bench_sizes(o.collective, o.min, o.max, o.factor)) {
    CallCounts n = calls_for(bytes, N, o.iters, o.warmup, o.rounds);
    if (o.full) n = {o.iters, o.warmup};
    CallBuffers b(o.collective, bytes, me, N);
    b.prepare(0);  // defined contents for the calls -c does not prepare (no NaNs in sums)
    SizeRun run(lib, o, b, call);
    std::vector<double> mine;
    if (o.nonblocking) mine = run.nonblocking(n.timed, n.untimed).all;
    else mine = run.blocking(n.timed, n.untimed, static_cast<uint64_t>(me) * 7919u + bytes + 1);
    call = run.next_call();
    if (!run.wrong.empty())
      err << o.program << ": rank " << me << ": " << collective_name(o.collective) << " of " << bytes << " bytes, " << run.wrong
          << "\n" << std::flush;
    const uint64_t wrong = side.sum(run.wrong.empty() ? 0 : 1);
    std::vector<double> every;
    side.gather(mine, &every);
    if (me == 0) {
      BenchRecord r;
      SizeStats s;
      if (o.nonblocking) {
        s = overlap_figures(every, N, n.timed, shared_clock, &r);
        r.form = "nonblocking";
      } else {
        RawTimes raw = raw_times(gathered_call_times(every, N, n.timed, 2 * static_cast<size_t>(n.timed), 0,
                                                     static_cast<size_t>(n.timed)),
                                 shared_clock);
        s = stats_of(raw);
        if (o.raw) r.raw = std::move(raw);
      }
      r.collective = collective_name(o.collective);
      r.algorithm = o.label;
      r.bytes = bytes;
      r.ranks = N, r.nodes = nodes, r.rails = o.rails, r.ppn = ppn;
      r.iterations = n.timed;
      r.warmup = n.untimed;
      if (o.rounds > 1) r.rounds = o.rounds;
      set_figures(&r, s, o.samples);
      r.idle_us = barrier ? 0 : static_cast<int>(o.idle_us);
      r.skew_us = static_cast<int>(o.skew_us);
      r.validated = o.validate && wrong == 0;
      out << to_json_line(r) << "\n" << std::flush;
      if (wrong)
        err << o.program << ": validation FAILED: " << (o.nonblocking ? "nonblocking " : "") << collective_name(o.collective) << " of "
            << bytes << " bytes: " << wrong << " rank(s) saw a wrong result (each one's first is said above)\n"
            << std::flush;
    }
    if (wrong) {
      status = 1;
      break;
    }
  }
  return status;
}

}  // namespace railcoll::bench
