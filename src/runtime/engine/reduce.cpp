#include "runtime/engine/reduce.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/reduce_ops.hpp"
#include "runtime/engine/reduce_half.hpp"

namespace railcoll::rt {

namespace {

// dst[i] = f(dst[i], src[i]) over the elements, in the codec's compute type
// (src_first: f(src[i], dst[i])).
template <class Codec, bool src_first, class F>
void combine(void* dst, const void* src, size_t bytes, F f) {
  auto g = [&f](auto d, auto s) { return src_first ? f(s, d) : f(d, s); };
  using S = typename Codec::Stored;
  const size_t n = bytes / sizeof(S);
  if (reinterpret_cast<uintptr_t>(dst) % alignof(S) == 0 && reinterpret_cast<uintptr_t>(src) % alignof(S) == 0) {
    S* d = static_cast<S*>(dst);
    const S* s = static_cast<const S*>(src);
    for (size_t i = 0; i < n; ++i) d[i] = Codec::store(g(Codec::load(d[i]), Codec::load(s[i])));  // vectorized
    return;
  }
  auto* d = static_cast<char*>(dst);
  auto* s = static_cast<const char*>(src);
  for (size_t i = 0; i < n; ++i) {
    S a, b;
    memcpy(&a, d + i * sizeof(S), sizeof(S));
    memcpy(&b, s + i * sizeof(S), sizeof(S));
    a = Codec::store(g(Codec::load(a), Codec::load(b)));
    memcpy(d + i * sizeof(S), &a, sizeof(S));
  }
}

// RAILCOLL_REDUCE_KERNELS=portable|avx2|avx512 picks a set (one this CPU
// lacks falls back to the best it has, said once on stderr): for comparing them.
Kernels detect() {
  if (const char* want = std::getenv("RAILCOLL_REDUCE_KERNELS"); want && *want) {
    bool known = false;
    for (Kernels k : {Kernels::Portable, Kernels::Avx2, Kernels::Avx512})
      if (std::strcmp(want, kernels_name(k)) == 0) {
        if (kernels_supported(k)) return k;
        known = true;
      }
    std::fprintf(stderr, "railcoll: RAILCOLL_REDUCE_KERNELS=%s: %s: the best this CPU has runs instead\n", want,
                 known ? "this CPU lacks them" : "not portable, avx2 or avx512");
  }
  if (kernels_supported(Kernels::Avx512)) return Kernels::Avx512;
  if (kernels_supported(Kernels::Avx2)) return Kernels::Avx2;
  return Kernels::Portable;
}

}  // namespace

void reduce_portable(DataType t, ReduceOp op, void* dst, const void* src, size_t bytes, bool src_first) {
  // Byte is rejected when the schedule is built, and so is an operator the type lacks.
  ops::with_type(t, [&](auto codec) {
    using Codec = decltype(codec);
    ops::with_op<typename Codec::Calc>(op, [&](auto f) {
      if (src_first) combine<Codec, true>(dst, src, bytes, f);
      else combine<Codec, false>(dst, src, bytes, f);
    });
  });
}

Kernels best_kernels() {
  static const Kernels best = detect();
  return best;
}

bool kernels_supported(Kernels k) {
#if defined(__x86_64__) && defined(__GNUC__)
  switch (k) {
    case Kernels::Portable: return true;
    case Kernels::Avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    case Kernels::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl");
  }
  return false;
#else
  return k == Kernels::Portable;
#endif
}

const char* kernels_name(Kernels k) {
  switch (k) {
    case Kernels::Portable: return "portable";
    case Kernels::Avx2: return "avx2";
    case Kernels::Avx512: return "avx512";
  }
  return "?";
}

void reduce_into_with(Kernels k, DataType t, ReduceOp op, void* dst, const void* src, size_t bytes) {
  if (k != Kernels::Portable && reduce_half_vector(k, t, op, dst, src, bytes)) return;
  reduce_portable(t, op, dst, src, bytes);
}

void reduce_into(DataType t, ReduceOp op, void* dst, const void* src, size_t bytes, bool src_first) {
  // The vector kernels take dst op src alone; src op dst (a scan's order) is
  // the portable loop's: min/max of NaNs and signed zeros depend on it.
  if (src_first) return reduce_portable(t, op, dst, src, bytes, true);
  reduce_into_with(best_kernels(), t, op, dst, src, bytes);
}

void reduce_user(const UserOp& op, void* dst, const void* src, size_t bytes, bool src_first, std::vector<char>* tmp) {
  const size_t n = bytes / op.elem_bytes;
  if (n == 0) return;
  if (src_first || op.commutative) return op.fn(src, dst, n, op.context);
  tmp->assign(static_cast<const char*>(src), static_cast<const char*>(src) + bytes);
  op.fn(dst, tmp->data(), n, op.context);
  memcpy(dst, tmp->data(), bytes);
}

}  // namespace railcoll::rt
