// The reduction kernels of every type and operator, against the traits'
// expected values; and float16 / bfloat16 conversion, every half value.
#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <random>
#include <vector>
#include <cstring>

#include "core/collective.hpp"
#include "runtime/engine/reduce.hpp"

using namespace railcoll;

TEST(ReduceOps, HalfRoundTripsEveryValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(f)))) << h;
      continue;
    }
    EXPECT_EQ(float_to_half(f), h) << std::hex << h;
  }
  EXPECT_EQ(half_to_float(0x3c00), 1.0f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(half_to_float(0x7bff), 65504.0f);               // largest finite
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);                // rounds up to infinity
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // a tie rounds to even
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
}

TEST(ReduceOps, BFloat16RoundsToNearestEven) {
  for (uint32_t h = 0; h < 0x10000; h += 7) {
    const float f = bf16_to_float(static_cast<uint16_t>(h));
    if (!std::isnan(f)) EXPECT_EQ(float_to_bf16(f), h);
  }
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie: to even
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
}

// N ranks' inputs as the traits fill them, combined by the runtime's kernel
// in rank order, make the result the traits' check accepts; a wrong operator
// or a missing rank does not.
TEST(ReduceOps, EveryTypeAndOperatorMatchesTheTraits) {
  const CollectiveTraits& t = traits(Collective::Allreduce);
  int pairs = 0;
  for (int N : {1, 2, 5, 64})
    for (DataType dt : reduction_types())
      for (ReduceOp op : reduction_ops()) {
        if (!redop_applies(op, dt)) continue;
        CallShape s;
        s.nranks = N;
        s.bytes = 40 * dtype_size(dt);
        s.dtype = dt;
        s.redop = op;
        std::vector<std::vector<unsigned char>> in(N, std::vector<unsigned char>(s.bytes));
        std::vector<unsigned char> acc(s.bytes), ignored(s.bytes);
        for (int r = 0; r < N; ++r) {
          s.rank = r;
          t.fill(s, 3, in[r].data(), ignored.data());
        }
        acc = in[0];
        for (int r = 1; r < N; ++r) rt::reduce_into(dt, op, acc.data(), in[r].data(), s.bytes);
        EXPECT_EQ(t.check(s, 3, acc.data()), "") << dtype_name(dt) << " " << redop_name(op) << " N " << N;
        if (N >= 5) {  // one rank left out
          std::vector<unsigned char> short_acc = in[0];
          for (int r = 1; r + 1 < N; ++r) rt::reduce_into(dt, op, short_acc.data(), in[r].data(), s.bytes);
          const bool idempotent_input = op == ReduceOp::BAnd || op == ReduceOp::BOr || op == ReduceOp::LAnd ||
                                        op == ReduceOp::LOr || op == ReduceOp::Min || op == ReduceOp::Max ||
                                        op == ReduceOp::MinLoc || op == ReduceOp::MaxLoc;
          if (!idempotent_input)
            EXPECT_NE(t.check(s, 3, short_acc.data()), "") << dtype_name(dt) << " " << redop_name(op);
        }
        ++pairs;
      }
  EXPECT_EQ(pairs, 4 * (8 * 10 + 4 * 4 + 5 * 2));  // integers take 10 operators, floats 4, the pairs 2
}

// MPI's pair layouts, and a tie going to the lesser index.
TEST(ReduceOps, MinLocAndMaxLocKeepTheLesserIndexOnATie) {
  struct FloatInt { float v; int i; };
  struct DoubleInt { double v; int i; };
  EXPECT_EQ(dtype_size(DataType::FloatInt), sizeof(FloatInt));
  EXPECT_EQ(dtype_size(DataType::DoubleInt), sizeof(DoubleInt));
  FloatInt a[3] = {{1.5f, 4}, {2.0f, 9}, {3.0f, 2}}, b[3] = {{1.5f, 3}, {1.0f, 1}, {3.0f, 5}};
  rt::reduce_into(DataType::FloatInt, ReduceOp::MinLoc, a, b, sizeof a);
  EXPECT_EQ(a[0].v, 1.5f);
  EXPECT_EQ(a[0].i, 3);  // tie: the lesser index
  EXPECT_EQ(a[1].v, 1.0f);
  EXPECT_EQ(a[1].i, 1);
  EXPECT_EQ(a[2].i, 2);
  DoubleInt c[2] = {{-1.0, 7}, {5.0, 0}}, d[2] = {{2.0, 1}, {5.0, 3}};
  rt::reduce_into(DataType::DoubleInt, ReduceOp::MaxLoc, c, d, sizeof c);
  EXPECT_EQ(c[0].v, 2.0);
  EXPECT_EQ(c[0].i, 1);
  EXPECT_EQ(c[1].i, 0);
}

TEST(ReduceOps, IntegersWrapAndLogicalOperatorsGiveOneOrZero) {
  int8_t a[2] = {100, 5}, b[2] = {100, -7};
  rt::reduce_into(DataType::Int8, ReduceOp::Sum, a, b, 2);
  EXPECT_EQ(a[0], static_cast<int8_t>(-56));
  EXPECT_EQ(a[1], -2);
  uint16_t p[1] = {300}, q[1] = {300};
  rt::reduce_into(DataType::UInt16, ReduceOp::Prod, p, q, 2);
  EXPECT_EQ(p[0], static_cast<uint16_t>(90000 % 65536));
  int32_t x[3] = {7, 0, 7}, y[3] = {-3, 5, 0};
  rt::reduce_into(DataType::Int32, ReduceOp::LAnd, x, y, 12);
  EXPECT_EQ(x[0], 1);
  EXPECT_EQ(x[1], 0);
  EXPECT_EQ(x[2], 0);
  uint64_t u[1] = {0xF0F0}, v[1] = {0x0FF0};
  rt::reduce_into(DataType::UInt64, ReduceOp::BXor, u, v, 8);
  EXPECT_EQ(u[0], 0xFF00u);
}

// The vector kernels (AVX2, AVX-512) of float32, float16 and bfloat16 give
// the portable kernel's bits: random bits, and every class of value
// (subnormals, infinities, NaNs, signed zeros, ties that round to even, sums
// that overflow), at odd lengths and odd addresses (so every block and tail
// path runs).
TEST(ReduceOps, VectorKernelsGiveThePortableBits) {
  std::mt19937 rng(33);
  const uint16_t special[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x7bff, 0x7c00, 0xfc00, 0x7c01, 0x7e00,
                              0xfe00, 0x3c00, 0x3c01, 0x7f80, 0xff80, 0x7f81, 0x7fc0, 0x0080, 0x007f, 0x3f80,
                              0x3f81, 0x4780, 0x477f, 0xc780};
  int compared = 0;
  for (rt::Kernels k : {rt::Kernels::Avx2, rt::Kernels::Avx512}) {
    if (!rt::kernels_supported(k)) continue;
    for (DataType t : {DataType::Float16, DataType::BFloat16, DataType::Float32})
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max})
        for (int rep = 0; rep < 60; ++rep) {
          // 16-bit words: a half each, or the halves of a float32.
          const size_t n = 1 + rng() % 200, words = n * dtype_size(t) / 2, off = rep % 2;
          std::vector<uint16_t> a(words + 1), b(words + 1);
          for (size_t i = 0; i <= words; ++i) {
            a[i] = rep % 3 ? static_cast<uint16_t>(rng()) : special[rng() % std::size(special)];
            b[i] = rep % 4 ? static_cast<uint16_t>(rng()) : special[rng() % std::size(special)];
          }
          std::vector<uint16_t> want = a, got = a;
          const char* src = reinterpret_cast<const char*>(b.data()) + off;
          const size_t bytes = n * dtype_size(t);
          rt::reduce_into_with(rt::Kernels::Portable, t, op, reinterpret_cast<char*>(want.data()) + off, src, bytes);
          rt::reduce_into_with(k, t, op, reinterpret_cast<char*>(got.data()) + off, src, bytes);
          ASSERT_EQ(want, got) << rt::kernels_name(k) << " " << dtype_name(t) << " " << redop_name(op) << " n " << n
                               << " offset " << off;
          ++compared;
        }
  }
  if (!compared) GTEST_SKIP() << "this CPU has neither AVX2 with F16C nor AVX-512";
  EXPECT_NE(rt::best_kernels(), rt::Kernels::Portable);
}
