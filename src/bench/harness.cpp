#include "bench/harness.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>
#include <iostream>
#include <thread>

#include "bench/bounds.hpp"
#include "bench/overlap.hpp"
#include "bench/plot.hpp"
#include "bench/report.hpp"
#include "bench/stats.hpp"
#include "core/registry.hpp"
#include "select/select.hpp"

namespace railcoll::bench {

namespace {

// One collective in its three forms: the blocking call with `args`, or the
// nonblocking / persistent one with `args` and the request.
template <class Blocking, class Nonblocking, class Persistent, class... Args>
railcoll_status_t call_as(CallForm form, railcoll_request_t* req, Blocking blocking, Nonblocking nonblocking,
                          Persistent persistent, Args... args) {
  switch (form) {
    case CallForm::Blocking: return blocking(args...);
    case CallForm::Nonblocking: return nonblocking(args..., req);
    default: return persistent(args..., req);
  }
}

}  // namespace

railcoll_status_t BenchCall::run(railcoll_comm_t comm, const railcoll_call_opts_t* opts) {
  return post(CallForm::Blocking, comm, opts, nullptr);
}

railcoll_status_t BenchCall::post(CallForm form, railcoll_comm_t comm, const railcoll_call_opts_t* opts,
                                  railcoll_request_t* req) {
  const uint64_t bytes = shape_.bytes;
  const size_t floats = bytes / 4;
  void *send = send_.data(), *recv = recv_.data();
  size_t *counts = counts_.data(), *displs = displs_.data();
  switch (t_.id) {
    case Collective::Allgather:
      return call_as(form, req, railcoll_allgather, railcoll_iallgather, railcoll_allgather_init, comm,
                     send, recv, bytes, opts);
    case Collective::Gather:
      return call_as(form, req, railcoll_gather, railcoll_igather, railcoll_gather_init, comm,
                     send, recv, bytes, 0, opts);
    case Collective::Bcast:
      return call_as(form, req, railcoll_bcast, railcoll_ibcast, railcoll_bcast_init, comm, recv, bytes, 0, opts);
    case Collective::Allreduce:
      return call_as(form, req, railcoll_allreduce, railcoll_iallreduce, railcoll_allreduce_init, comm,
                     send, recv, floats, RAILCOLL_FLOAT, RAILCOLL_SUM, opts);
    case Collective::ReduceScatterBlock:
      return call_as(form, req, railcoll_reduce_scatter_block, railcoll_ireduce_scatter_block,
                     railcoll_reduce_scatter_block_init, comm, send, recv, floats,
                     RAILCOLL_FLOAT, RAILCOLL_SUM, opts);
    case Collective::ReduceScatter: {
      // Copied by the library (railcoll.h), so a local array does for every form.
      const std::vector<size_t> block(shape_.nranks, floats);
      return call_as(form, req, railcoll_reduce_scatter, railcoll_ireduce_scatter, railcoll_reduce_scatter_init,
                     comm, send, recv, block.data(), RAILCOLL_FLOAT, RAILCOLL_SUM, opts);
    }
    case Collective::Reduce:
      return call_as(form, req, railcoll_reduce, railcoll_ireduce, railcoll_reduce_init, comm,
                     send, recv, floats, RAILCOLL_FLOAT, RAILCOLL_SUM, 0, opts);
    case Collective::Alltoall:
      return call_as(form, req, railcoll_alltoall, railcoll_ialltoall, railcoll_alltoall_init, comm,
                     send, recv, bytes, opts);
    case Collective::Alltoallv:
      return call_as(form, req, railcoll_alltoallv, railcoll_ialltoallv, railcoll_alltoallv_init, comm,
                     send, counts,
                     displs, recv, counts,
                     displs, opts);
    case Collective::Scatter:
      return call_as(form, req, railcoll_scatter, railcoll_iscatter, railcoll_scatter_init, comm,
                     send, recv, bytes, 0, opts);
    case Collective::Scatterv:
      return call_as(form, req, railcoll_scatterv, railcoll_iscatterv, railcoll_scatterv_init, comm,
                     send, counts,
                     displs, recv, 0, opts);
    case Collective::Gatherv:
      return call_as(form, req, railcoll_gatherv, railcoll_igatherv, railcoll_gatherv_init, comm,
                     send, recv, counts,
                     displs, 0, opts);
    case Collective::Scan:
      return call_as(form, req, railcoll_scan, railcoll_iscan, railcoll_scan_init, comm, send, recv, floats,
                     RAILCOLL_FLOAT, RAILCOLL_SUM, opts);
    case Collective::Exscan:
      return call_as(form, req, railcoll_exscan, railcoll_iexscan, railcoll_exscan_init, comm, send, recv, floats,
                     RAILCOLL_FLOAT, RAILCOLL_SUM, opts);
    default: return call_as(form, req, railcoll_barrier, railcoll_ibarrier, railcoll_barrier_init, comm);
  }
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  for (size_t at = 0; at < text.size();) {
    const size_t comma = std::min(text.find(',', at), text.size());
    if (comma > at) items.push_back(text.substr(at, comma - at));
    at = comma + 1;
  }
  return items;
}

std::vector<std::string> algorithms_to_run(Collective c, const std::string& algo) {
  if (algo != "all") return split_list(algo);  // one name or a list, run in its order
  std::vector<std::string> algos;
  for (auto& s : all_algorithms())
    if (s.collective == c && software_equivalent(s.collective, s.name) == s.name) algos.push_back(s.name);
  algos.push_back("auto");
  return algos;
}

namespace {

// "tcp", or "ofi:<provider>" (railcoll_comm_transport) -> the record's two fields.
void set_transport(BenchRecord* r, const char* described) {
  std::string t = described ? described : "";
  size_t colon = t.find(':');
  r->transport = t.substr(0, colon);
  r->provider = colon == std::string::npos ? "" : t.substr(colon + 1);
}

// Rank 0's gathered [entries, exits] of every rank -> CallTimes.
CallTimes call_times(const std::vector<double>& every, int ranks, int calls) {
  const size_t n = static_cast<size_t>(calls);
  return gathered_call_times(every, ranks, calls, 2 * n, 0, n);
}

// The context every rank agrees on, from small all-gathers at start-up.
bool gather_context(railcoll_comm_t comm, const WorkerOptions& o, BenchContext* ctx) {
  const int N = railcoll_comm_size(comm);
  ctx->collective = collective_name(o.collective);
  ctx->ranks = N;
  ctx->nodes = railcoll_comm_nodes(comm);
  ctx->rails = railcoll_comm_rails(comm);
  // Ranks per node, from the node leaders' local sizes (node-major ranks).
  std::vector<int> local(N);
  int mine = getenv("RAILCOLL_LOCAL_SIZE") ? atoi(getenv("RAILCOLL_LOCAL_SIZE")) : 0;
  if (railcoll_allgather(comm, &mine, local.data(), sizeof(int), nullptr) != RAILCOLL_OK) return false;
  int at = 0;
  while (at < N && local[at] > 0) {
    ctx->ranks_per_node.push_back(local[at]);
    at += local[at];
  }
  if (at != N || static_cast<int>(ctx->ranks_per_node.size()) != ctx->nodes)
    ctx->ranks_per_node.assign(ctx->nodes, N / std::max(1, ctx->nodes));
  ctx->max_ppn = *std::max_element(ctx->ranks_per_node.begin(), ctx->ranks_per_node.end());
  // Spans need one clock: every rank's CLOCK_MONOTONIC must be the same.
  uint64_t clock = clock_identity();
  std::vector<uint64_t> clocks(N);
  if (railcoll_allgather(comm, &clock, clocks.data(), sizeof clock, nullptr) != RAILCOLL_OK) return false;
  ctx->shared_clock = std::all_of(clocks.begin(), clocks.end(), [&](uint64_t c) { return c == clock; });
  if (ctx->shared_clock) {
    // Spans start at the first rank's entry: how unevenly ranks leave the
    // barrier before a call is part of every span. An empty call shows it.
    constexpr int kRounds = 50;
    std::vector<double> times(2 * kRounds), every(railcoll_comm_rank(comm) == 0 ? times.size() * N : 0);
    for (int i = 0; i < kRounds; ++i) {
      if (railcoll_barrier(comm) != RAILCOLL_OK) return false;
      times[i] = monotonic_us();
      times[kRounds + i] = monotonic_us();
    }
    if (railcoll_gather(comm, times.data(), every.empty() ? nullptr : every.data(), times.size() * sizeof(double), 0,
                        nullptr) != RAILCOLL_OK)
      return false;
    if (!every.empty()) ctx->empty_span_p50_us = percentiles(combine(call_times(every, N, kRounds), true).span_us).p50;
  }
  if (getenv("RAILCOLL_RAIL_RATE")) ctx->rail_bits_per_s = atof(getenv("RAILCOLL_RAIL_RATE"));
  ctx->where = getenv("RAILCOLL_CLUSTER") ? "emulated cluster" : "local processes";
  if (!getenv("RAILCOLL_CLUSTER") && ctx->nodes > 1) ctx->where += ", pretend nodes over loopback";
  return true;
}

// The time this thread has waited for a core, runnable, since it started
// (/proc/thread-self/schedstat's second field), in us; -1 where the kernel
// does not say.
class RunQueueClock {
 public:
  RunQueueClock() : fd_(open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC)) {}
  ~RunQueueClock() {
    if (fd_ >= 0) close(fd_);
  }
  RunQueueClock(const RunQueueClock&) = delete;
  RunQueueClock& operator=(const RunQueueClock&) = delete;
  double waited_us() const {
    char buf[96];
    const ssize_t n = fd_ < 0 ? -1 : pread(fd_, buf, sizeof buf - 1, 0);
    if (n <= 0) return -1;
    buf[n] = 0;
    unsigned long long ran = 0, waited = 0;
    return sscanf(buf, "%llu %llu", &ran, &waited) == 2 ? static_cast<double>(waited) / 1e3 : -1;
  }

 private:
  int fd_;
};

// Times one size of blocking calls on this rank into times (entries, then
// exits); returns "" or what failed; a wrong result sets *wrong (the first).
std::string time_blocking(railcoll_comm_t comm, BenchCall& call, const railcoll_call_opts_t* opts,
                          const std::string& algo, int iters, int warmup, const WorkerOptions& o,
                          std::vector<double>* times, std::string* wrong, std::vector<double>* runq) {
  const bool consecutive = !traits(o.collective).moves_data;  // barriers: timed back to back (seed 004 §5)
  const uint64_t bytes = call.bytes();
  if (consecutive) {  // the same algorithm for the barrier that is measured and the ones around it
    setenv("RAILCOLL_BARRIER_ALGO", algo.c_str(), 1);
    if (algo == "auto") unsetenv("RAILCOLL_BARRIER_ALGO");
  }
  const int me = railcoll_comm_rank(comm);
  std::mt19937 skew_rng(static_cast<unsigned>(me) * 7919u + static_cast<unsigned>(bytes));
  std::uniform_int_distribution<int> skew(0, std::max(0, o.skew_us));
  std::string err;
  RunQueueClock rq;
  for (int i = -warmup; i < iters && err.empty(); ++i) {
    if (o.validate) call.prepare(i + warmup);
    if (!consecutive && o.idle_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(o.idle_us));
    const double q_rested = runq ? rq.waited_us() : 0;
    // Each call timed alone, not overlapped with the previous one.
    if (!consecutive && railcoll_barrier(comm) != RAILCOLL_OK) err = "barrier";
    if (o.skew_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(skew(skew_rng)));
    const double q0 = runq ? rq.waited_us() : 0;
    double t0 = monotonic_us();
    if (err.empty() && call.run(comm, opts) != RAILCOLL_OK) err = "the call";
    double t1 = monotonic_us();
    if (i >= 0) (*times)[i] = t0, (*times)[iters + i] = t1;
    if (runq && i >= 0) (*runq)[i] = rq.waited_us() - q0, (*runq)[iters + i] = q0 - q_rested;
    // Check only once every rank has left the call: ranks that check while
    // the slowest is still in it take cores from it (railcoll-mpi-bench does
    // the same).
    if (err.empty() && o.validate && !consecutive && railcoll_barrier(comm) != RAILCOLL_OK) err = "barrier";
    std::string w = err.empty() && o.validate && wrong->empty() ? call.check(i + warmup) : "";
    if (!w.empty()) *wrong = "call " + std::to_string(i) + ": " + w;
  }
  if (consecutive) unsetenv("RAILCOLL_BARRIER_ALGO");
  return err;
}

}  // namespace

int run_worker(const WorkerOptions& o) {
  railcoll_comm_t comm;
  railcoll_status_t st = railcoll_comm_init(&comm);
  if (st != RAILCOLL_OK) {
    std::cerr << "railcoll bench: " << railcoll_strerror(st) << ": " << railcoll_last_error() << "\n";
    return 1;
  }
  const int me = railcoll_comm_rank(comm), N = railcoll_comm_size(comm);
  auto fail = [&](const std::string& what) {
    std::cerr << "railcoll bench: rank " << me << ": " << what << ": " << railcoll_last_error() << "\n";
    railcoll_comm_destroy(comm);
    return 1;
  };
  BenchContext ctx;
  if (!gather_context(comm, o, &ctx)) return fail("start-up");
  const CollectiveTraits& t = traits(o.collective);
  const bool consecutive = !t.moves_data;  // barriers: timed back to back (seed 004 §5)

  std::ofstream records;
  if (me == 0 && !o.records.empty()) {
    records.open(o.records, std::ios::app);
    records << context_line(ctx) << "\n" << std::flush;
  }
  std::vector<BenchRecord> all;
  const bool tables = me == 0 && !o.raw;  // a round's raw records are the driver's to pool and show
  for (auto& algo : algorithms_to_run(o.collective, o.algo)) {
    if (tables && o.form != CallForm::Blocking)
      print_overlap_header(std::cout, algo, ctx, call_form_name(o.form), o.validate);
    else if (tables)
      print_table_header(std::cout, algo, ctx, o.full, o.validate);
    for (uint64_t bytes : bench_sizes(o.collective, o.min, o.max, o.factor)) {
      const CallCounts counts = calls_for(bytes, N, o.iters, o.warmup, o.rounds);
      const int iters = counts.timed, warmup = counts.untimed;
      BenchCall call(o.collective, bytes, me, N);
      railcoll_call_opts_t opts{algo.c_str(), 0};
      const bool overlap = o.form != CallForm::Blocking;
      std::vector<double> times;  // blocking: entries, then exits; else OverlapTimes (bench/overlap.hpp)
      std::vector<double> runq;   // with a timeline: waits for a core in each call, then before each
      std::string wrong, err;
      if (overlap) {
        OverlapTimes mine(iters);
        err = time_overlap(comm, call, o.form, &opts, iters, warmup, o.validate, consecutive ? 0 : o.idle_us, &mine,
                           &wrong);
        times = std::move(mine.all);
      } else {
        times.assign(2 * static_cast<size_t>(iters), 0);
        if (!o.timeline.empty()) runq.assign(times.size(), 0);
        err = time_blocking(comm, call, &opts, algo, iters, warmup, o, &times, &wrong,
                            o.timeline.empty() ? nullptr : &runq);
      }
      if (!err.empty()) return fail(algo + " at " + std::to_string(bytes) + " B: " + err);
      const int bad = wrong.empty() ? 0 : 1;
      if (bad) std::cerr << "railcoll bench: rank " << me << ": " << algo << " at " << bytes << " B, " << wrong << "\n";
      // Every rank's times to rank 0; whether any rank saw a wrong byte to all.
      std::vector<double> every(me == 0 ? times.size() * N : 0);
      std::vector<double> every_runq(me == 0 ? runq.size() * N : 0);
      std::vector<int> bads(N);
      if (!runq.empty() && railcoll_gather(comm, runq.data(), me == 0 ? every_runq.data() : nullptr,
                                           runq.size() * sizeof(double), 0, nullptr) != RAILCOLL_OK)
        return fail("collecting statistics");
      if (railcoll_gather(comm, times.data(), me == 0 ? every.data() : nullptr, times.size() * sizeof(double), 0,
                          nullptr) != RAILCOLL_OK ||
          railcoll_allgather(comm, &bad, bads.data(), sizeof(int), nullptr) != RAILCOLL_OK)
        return fail("collecting statistics");
      if (o.validate && std::count(bads.begin(), bads.end(), 0) != N) {
        if (me == 0) std::cerr << "railcoll bench: " << algo << " returned wrong bytes at " << bytes << " B\n";
        railcoll_comm_destroy(comm);
        return 1;
      }
      if (me != 0) continue;
      BenchRecord r;
      SizeStats s;
      if (overlap) {
        s = overlap_figures(every, N, iters, ctx.shared_clock, &r);
        r.form = call_form_name(o.form);
      } else {
        const CallTimes ct = call_times(every, N, iters);
        if (!o.timeline.empty()) {
          std::ofstream tl(o.timeline, std::ios::app);
          const CallTimes runq_ct = call_times(every_runq, N, iters);
          write_timeline(tl, algo, bytes, ct, every_runq.empty() ? nullptr : &runq_ct);
        }
        RawTimes raw = raw_times(ct, ctx.shared_clock);
        s = stats_of(raw);
        if (o.raw) r.raw = std::move(raw);
      }
      r.collective = ctx.collective;
      r.algorithm = algo;
      if (algo == "auto") r.chosen = railcoll_algorithm_for(comm, ctx.collective.c_str(), bytes, nullptr);
      r.bytes = bytes;
      r.ranks = N;
      r.nodes = ctx.nodes;
      r.rails = ctx.rails;
      r.ppn = ctx.max_ppn;
      r.iterations = iters;
      r.warmup = warmup;
      r.rounds = o.rounds;
      set_figures(&r, s, consecutive && !overlap);
      set_bandwidths(&r, ctx);
      r.idle_us = consecutive ? 0 : o.idle_us;
      r.skew_us = o.skew_us;
      r.validated = o.validate;
      set_transport(&r, railcoll_comm_transport(comm));
      if (tables && overlap) print_overlap_row(std::cout, r);
      else if (tables) print_table_row(std::cout, r, o.full);
      if (records.is_open()) records << to_json_line(r) << "\n" << std::flush;
      all.push_back(r);
    }
  }
  railcoll_comm_destroy(comm);
  if (me == 0 && o.records.empty()) {  // run by hand under a launcher: report here
    print_summary(std::cout, all, ctx);
    print_overlap_summary(std::cout, all, ctx);
    if (!o.json.empty()) write_json(o.json, all);
    if (!o.csv.empty()) write_csv(o.csv, all);
    if (!o.plot.empty()) write_plot(all, o.plot, ctx.collective + ", " + std::to_string(N) + " ranks (" + ctx.where + ")");
  }
  return 0;
}

}  // namespace railcoll::bench
