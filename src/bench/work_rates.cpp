#include "bench/work_rates.hpp"

#include <sched.h>

#include <algorithm>
#include <cstring>
#include <iomanip>
#include <thread>
#include <vector>

#include "bench/harness.hpp"  // monotonic_us
#include "runtime/engine/reduce.hpp"

namespace railcoll::bench {

namespace {

constexpr size_t kBytes = 32u << 20;  // per buffer: beyond the caches of this kind of machine
constexpr double kTrialUs = 150e3;
constexpr int kTrials = 3;

// Bytes per second one thread moves with `work` over its own buffers for kTrialUs.
template <class Work>
double rate_of(Work work, std::vector<unsigned char>& dst, const std::vector<unsigned char>& src) {
  work(dst.data(), src.data(), kBytes);  // pages touched before timing
  const double start = monotonic_us();
  double now = start;
  uint64_t moved = 0;
  while (now - start < kTrialUs) {
    work(dst.data(), src.data(), kBytes);
    moved += kBytes;
    now = monotonic_us();
  }
  return static_cast<double>(moved) / (now - start) * 1e6;
}

// The summed rate of `threads` threads at once, best of kTrials.
template <class Work>
double best_rate(int threads, Work work) {
  std::vector<std::vector<unsigned char>> dst(threads), src(threads);
  for (int t = 0; t < threads; ++t) {
    dst[t].assign(kBytes, 0);
    src[t].assign(kBytes, 0);
    // Small integers as floats: a sum never overflows nor turns denormal.
    auto* f = reinterpret_cast<float*>(src[t].data());
    for (size_t i = 0; i < kBytes / sizeof(float); ++i) f[i] = static_cast<float>(i % 7);
  }
  double best = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    std::vector<double> rates(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] { rates[t] = rate_of(work, dst[t], src[t]); });
    for (auto& th : pool) th.join();
    double sum = 0;
    for (double r : rates) sum += r;
    best = std::max(best, sum);
  }
  return best;
}

void copy(unsigned char* dst, const unsigned char* src, size_t n) { std::memcpy(dst, src, n); }
void reduce(unsigned char* dst, const unsigned char* src, size_t n) {
  rt::reduce_into(DataType::Float32, ReduceOp::Sum, dst, src, n);
}

}  // namespace

WorkRates measure_work_rates() {
  WorkRates w;
  cpu_set_t set;
  CPU_ZERO(&set);
  w.cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  w.cores = std::max(1, w.cores);
  w.copy_one_Bps = best_rate(1, copy);
  w.reduce_one_Bps = best_rate(1, reduce);
  // All the cores together do at least what one does alone: on a loaded
  // machine the threads may not get every core, which is no property of it.
  w.copy_all_Bps = w.cores > 1 ? std::max(w.copy_one_Bps, best_rate(w.cores, copy)) : w.copy_one_Bps;
  w.reduce_all_Bps = w.cores > 1 ? std::max(w.reduce_one_Bps, best_rate(w.cores, reduce)) : w.reduce_one_Bps;
  return w;
}

void print_work_rates(std::ostream& o, const WorkRates& w) {
  o << std::fixed << std::setprecision(1) << "copy (memcpy) " << w.copy_one_Bps / 1e9 << " GB/s on one core, "
    << w.copy_all_Bps / 1e9 << " with " << w.cores << " at once; reduce (float sum) " << w.reduce_one_Bps / 1e9
    << " GB/s on one core, " << w.reduce_all_Bps / 1e9 << " with " << w.cores << " at once";
}

}  // namespace railcoll::bench
