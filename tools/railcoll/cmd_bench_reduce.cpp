// railcoll bench --reduce: the reduction kernels' speed (runtime/reduce.hpp),
// in bytes of the vector combined per second (dst = dst op src reads two
// vectors and writes one), per type and kernel set, beside memcpy's, so
// float16 and bfloat16 can be compared with float32 and with the memory's
// speed. Runs on this process alone: nothing to launch. The kernel sets take
// turns round by round; the median of the rounds is printed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "args.hpp"
#include "commands.hpp"
#include "core/collective.hpp"
#include "runtime/engine/reduce.hpp"

namespace railcoll::cli {

namespace {

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Seconds per call of f, over calls worth about `budget` bytes.
template <class F>
double per_call(uint64_t bytes, uint64_t budget, F f) {
  const int calls = static_cast<int>(std::clamp<uint64_t>(budget / std::max<uint64_t>(bytes, 1), 3, 100000));
  f();  // warm the caches and the pages
  const double t0 = seconds_now();
  for (int i = 0; i < calls; ++i) f();
  return (seconds_now() - t0) / calls;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int cmd_bench_reduce(const std::vector<std::string>& argv) {
  Args a(argv, {"reduce"}, {"m", "rounds", "budget"});
  if (!a.positional().empty()) throw UsageError("unexpected argument '" + a.positional().front() + "'");
  uint64_t lo = 64 << 10, hi = 32 << 20;
  if (a.has("m")) size_range(a, &lo, &hi);
  const int rounds = static_cast<int>(a.integer("rounds", 5, 1, 1000));
  const uint64_t budget = a.size("budget", 256 << 20);
  std::vector<rt::Kernels> sets;
  for (rt::Kernels k : {rt::Kernels::Portable, rt::Kernels::Avx2, rt::Kernels::Avx512})
    if (rt::kernels_supported(k)) sets.push_back(k);
  std::printf("reduction kernels (sum), GB/s of the vector combined (median of %d rounds); this CPU's best: %s\n",
              rounds, rt::kernels_name(rt::best_kernels()));
  std::printf("%-10s %10s %10s", "type", "bytes", "memcpy");
  for (rt::Kernels k : sets) std::printf(" %10s", rt::kernels_name(k));
  std::printf(" %14s\n", "best/float32");
  for (uint64_t bytes = lo; bytes <= hi; bytes *= 8) {
    std::vector<char> dst(bytes), src(bytes), copy(bytes);
    double float32_best = 0;
    for (DataType t : {DataType::Float32, DataType::Float64, DataType::BFloat16, DataType::Float16}) {
      // Ones: sums stay finite and exact for every type over many calls.
      const size_t elem = dtype_size(t);
      const uint16_t one16 = t == DataType::Float16 ? 0x3c00 : 0x3f80;
      for (size_t i = 0; i < bytes / elem; ++i) {
        if (t == DataType::Float32) reinterpret_cast<float*>(src.data())[i] = 1.0f;
        else if (t == DataType::Float64) reinterpret_cast<double*>(src.data())[i] = 1.0;
        else reinterpret_cast<uint16_t*>(src.data())[i] = one16;
      }
      std::vector<std::vector<double>> runs(sets.size() + 1);
      for (int r = 0; r < rounds; ++r) {
        runs[0].push_back(per_call(bytes, budget, [&] { std::memcpy(copy.data(), src.data(), bytes); }));
        for (size_t k = 0; k < sets.size(); ++k) {
          std::memset(dst.data(), 0, bytes);
          runs[k + 1].push_back(per_call(bytes, budget, [&] {
            rt::reduce_into_with(sets[k], t, ReduceOp::Sum, dst.data(), src.data(), bytes);
          }));
        }
      }
      std::printf("%-10s %10llu", dtype_name(t), static_cast<unsigned long long>(bytes));
      double best = 0;
      for (size_t k = 0; k < runs.size(); ++k) {
        const double gbs = bytes / median(runs[k]) / 1e9;
        std::printf(" %10.2f", gbs);
        if (k && sets[k - 1] == rt::best_kernels()) best = gbs;
      }
      if (t == DataType::Float32) float32_best = best;
      std::printf(" %13.2fx\n", best / float32_best);
    }
  }
  return 0;
}

}  // namespace railcoll::cli
