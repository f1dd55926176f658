// float16 and bfloat16 combined 16 (AVX-512) or 8 (AVX2 + F16C) at a time:
// widened to float, combined, rounded back to nearest even; float32 likewise.
// The portable kernel converts element by element (a tenth of float32's speed
// for bfloat16, a thirtieth for float16), and GCC's -O2 leaves even its
// float32 loop scalar; these run at memory speed (`railcoll bench --reduce`,
// docs/torch.md).
//
// Same bits as the portable kernel (core/half.hpp), lane for lane:
//  * bfloat16 -> float is a shift; float -> bfloat16 adds 0x7fff plus the
//    kept part's lowest bit and shifts (round to nearest even, carrying into
//    the exponent up to infinity), as round_shift does;
//  * float16 <-> float by the F16C / AVX-512 conversions, rounding to nearest
//    even whatever MXCSR says, subnormals exact, as half.hpp's;
//  * min(a, b) is MINPS(b, a): b when b < a, else a, NaN or signed zero
//    included, as std::min(a, b); max likewise;
//  * a block whose result holds a NaN is redone by the portable kernel, whose
//    NaN bits differ (float16's quiet NaN; and which NaN of a + b survives,
//    the compiler being free to swap a commutative operation's operands).
// Chosen at run time by cpuid (reduce.cpp): the library stays portable.
#include "runtime/engine/reduce_half.hpp"

#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define RAILCOLL_X86_KERNELS 1
// GCC 12 warns of the intrinsics' own `_mm512_undefined_*() { __Y = __Y; }`
// pass-through operands (gcc bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace railcoll::rt {

#if RAILCOLL_X86_KERNELS
namespace {

enum class Fn { Add, Mul, Min, Max };
enum class Elem { F32, BF16, F16 };  // what the vectors are loaded from and stored as

#define RAILCOLL_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline
#define RAILCOLL_AVX2 __attribute__((target("avx2,f16c"), always_inline)) inline

struct Avx512 {
  static constexpr size_t kLanes = 16;
  using V = __m512;
  RAILCOLL_AVX512 static V load_bf16(const char* p) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  RAILCOLL_AVX512 static V load_f16(const char* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  RAILCOLL_AVX512 static V load_f32(const char* p) { return _mm512_loadu_ps(reinterpret_cast<const float*>(p)); }
  RAILCOLL_AVX512 static void store_f32(char* p, V r) { _mm512_storeu_ps(reinterpret_cast<float*>(p), r); }
  RAILCOLL_AVX512 static bool has_nan(V r) { return _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q) != 0; }
  RAILCOLL_AVX512 static void store_bf16(char* p, V r) {
    const __m512i x = _mm512_castps_si512(r);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    const __m512i y = _mm512_srli_epi32(_mm512_add_epi32(x, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(y));
  }
  RAILCOLL_AVX512 static void store_f16(char* p, V r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT));
  }
  template <Fn f>
  RAILCOLL_AVX512 static V apply(V a, V b) {
    if constexpr (f == Fn::Add) return _mm512_add_ps(a, b);
    else if constexpr (f == Fn::Mul) return _mm512_mul_ps(a, b);
    else if constexpr (f == Fn::Min) return _mm512_min_ps(b, a);
    else return _mm512_max_ps(b, a);
  }
};

struct Avx2 {
  static constexpr size_t kLanes = 8;
  using V = __m256;
  RAILCOLL_AVX2 static V load_bf16(const char* p) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  RAILCOLL_AVX2 static V load_f16(const char* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  RAILCOLL_AVX2 static V load_f32(const char* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
  RAILCOLL_AVX2 static void store_f32(char* p, V r) { _mm256_storeu_ps(reinterpret_cast<float*>(p), r); }
  RAILCOLL_AVX2 static bool has_nan(V r) { return _mm256_movemask_ps(_mm256_cmp_ps(r, r, _CMP_UNORD_Q)) != 0; }
  RAILCOLL_AVX2 static void store_bf16(char* p, V r) {
    const __m256i x = _mm256_castps_si256(r);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    const __m256i y = _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
    // y's lanes fit 16 bits, so the saturating pack is exact; it packs within
    // 128-bit halves: keep quadwords 0 and 2.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(y, y), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
  }
  RAILCOLL_AVX2 static void store_f16(char* p, V r) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT));
  }
  template <Fn f>
  RAILCOLL_AVX2 static V apply(V a, V b) {
    if constexpr (f == Fn::Add) return _mm256_add_ps(a, b);
    else if constexpr (f == Fn::Mul) return _mm256_mul_ps(a, b);
    else if constexpr (f == Fn::Min) return _mm256_min_ps(b, a);
    else return _mm256_max_ps(b, a);
  }
};

// One loop per (set, type, operator); the attribute must be spelled on each.
#define RAILCOLL_HALF_LOOP(Isa, ATTR)                                                                      \
  template <Elem e, Fn f>                                                                                  \
  __attribute__((target(ATTR))) void loop_##Isa(DataType t, ReduceOp op, char* d, const char* s, size_t n) { \
    constexpr size_t W = Isa::kLanes, size = e == Elem::F32 ? 4 : 2;                                        \
    size_t i = 0;                                                                                          \
    for (; i + W <= n; i += W) {                                                                           \
      char* dp = d + size * i;                                                                             \
      const char* sp = s + size * i;                                                                       \
      const Isa::V a = e == Elem::F32 ? Isa::load_f32(dp) : e == Elem::BF16 ? Isa::load_bf16(dp) : Isa::load_f16(dp); \
      const Isa::V b = e == Elem::F32 ? Isa::load_f32(sp) : e == Elem::BF16 ? Isa::load_bf16(sp) : Isa::load_f16(sp); \
      const Isa::V r = Isa::template apply<f>(a, b);                                                       \
      if (Isa::has_nan(r)) {                                                                               \
        reduce_portable(t, op, dp, sp, size * W);                                                          \
        continue;                                                                                          \
      }                                                                                                    \
      if (e == Elem::F32) Isa::store_f32(dp, r);                                                           \
      else if (e == Elem::BF16) Isa::store_bf16(dp, r);                                                    \
      else Isa::store_f16(dp, r);                                                                          \
    }                                                                                                      \
    if (i < n) reduce_portable(t, op, d + size * i, s + size * i, size * (n - i));                          \
  }
RAILCOLL_HALF_LOOP(Avx512, "avx512f,avx512bw,avx512vl")
RAILCOLL_HALF_LOOP(Avx2, "avx2,f16c")
#undef RAILCOLL_HALF_LOOP

using Loop = void (*)(DataType, ReduceOp, char*, const char*, size_t);

template <Elem e>
Loop pick(Kernels k, ReduceOp op) {
  const bool wide = k == Kernels::Avx512;
  switch (op) {
    case ReduceOp::Sum: return wide ? loop_Avx512<e, Fn::Add> : loop_Avx2<e, Fn::Add>;
    case ReduceOp::Prod: return wide ? loop_Avx512<e, Fn::Mul> : loop_Avx2<e, Fn::Mul>;
    case ReduceOp::Min: return wide ? loop_Avx512<e, Fn::Min> : loop_Avx2<e, Fn::Min>;
    case ReduceOp::Max: return wide ? loop_Avx512<e, Fn::Max> : loop_Avx2<e, Fn::Max>;
    default: return nullptr;
  }
}

}  // namespace
#endif

bool reduce_half_vector(Kernels k, DataType t, ReduceOp op, void* dst, const void* src, size_t bytes) {
#if RAILCOLL_X86_KERNELS
  if (k != Kernels::Avx2 && k != Kernels::Avx512) return false;
  Loop loop = t == DataType::BFloat16  ? pick<Elem::BF16>(k, op)
              : t == DataType::Float16 ? pick<Elem::F16>(k, op)
              : t == DataType::Float32 ? pick<Elem::F32>(k, op)
                                       : nullptr;
  if (!loop) return false;
  loop(t, op, static_cast<char*>(dst), static_cast<const char*>(src), bytes / dtype_size(t));
  return true;
#else
  return false;
#endif
}

}  // namespace railcoll::rt
