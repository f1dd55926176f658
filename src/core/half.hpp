// IEEE binary16 and bfloat16 from and to float, rounding to nearest even.
// Inline, so the reduction kernels' portable loops (runtime/reduce*.cpp) can
// keep them in registers and vectorise them; the vector kernels there give the
// same bits.
#pragma once
#include <cstdint>
#include <cstring>

namespace railcoll {

namespace half_detail {
inline uint32_t float_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  return x;
}
inline float bits_float(uint32_t x) {
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}
// Drops the low `shift` bits of `v`, rounding to nearest, ties to even.
inline uint32_t round_shift(uint32_t v, int shift) {
  const uint32_t kept = v >> shift, rest = v & ((1u << shift) - 1), half = 1u << (shift - 1);
  return kept + (rest > half || (rest == half && (kept & 1)));
}
}  // namespace half_detail

inline float half_to_float(uint16_t h) {
  using namespace half_detail;
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16, exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000 | mant << 13);
  if (exp != 0) return bits_float(sign | (exp + 127 - 15) << 23 | mant << 13);
  if (mant == 0) return bits_float(sign);
  int e = 127 - 15 + 1;  // subnormal: normalise
  while (!(mant & 0x400)) mant <<= 1, --e;
  return bits_float(sign | static_cast<uint32_t>(e) << 23 | (mant & 0x3ff) << 13);
}

// A NaN keeps its sign and becomes the quiet NaN 0x7e00 (its payload is dropped).
inline uint16_t float_to_half(float f) {
  using namespace half_detail;
  const uint32_t x = float_bits(f), sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff, mant = x & 0x7fffff;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mant ? 0x200 : 0));
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (e <= 0) {  // subnormal or zero
    if (e < -10) return static_cast<uint16_t>(sign);
    return static_cast<uint16_t>(sign | round_shift(mant | 0x800000, 14 - e));
  }
  // A carry out of the mantissa rounds into the exponent, up to infinity.
  return static_cast<uint16_t>(sign | round_shift(static_cast<uint32_t>(e) << 23 | mant, 13));
}

inline float bf16_to_float(uint16_t h) { return half_detail::bits_float(static_cast<uint32_t>(h) << 16); }

// A NaN stays a NaN (quiet bit set, upper payload kept).
inline uint16_t float_to_bf16(float f) {
  using namespace half_detail;
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);
  return static_cast<uint16_t>(round_shift(x, 16));
}

}  // namespace railcoll
