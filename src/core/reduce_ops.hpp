// The reduction operators on one pair of elements, and how each data type is
// loaded and stored for them: one definition that the runtime's kernels
// (runtime/reduce.cpp) and the traits' expected results (core/collective.cpp)
// both use. Integers wrap as MPI's do (computed unsigned, so no signed
// overflow); float16 and bfloat16 are computed in float32.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/collective.hpp"

namespace railcoll::ops {

template <class T>
using Wide = std::conditional_t<std::is_integral_v<T>, std::make_unsigned_t<T>, T>;

struct Sum {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<Wide<T>>(a) + static_cast<Wide<T>>(b));
    else return a + b;
  }
};
struct Prod {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      // unsigned short * unsigned short promotes to (signed) int: widen first.
      using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, Wide<T>>;
      return static_cast<T>(static_cast<U>(static_cast<Wide<T>>(a)) * static_cast<U>(static_cast<Wide<T>>(b)));
    } else {
      return a * b;
    }
  }
};
struct Min {
  template <class T>
  T operator()(T a, T b) const { return std::min(a, b); }
};
struct Max {
  template <class T>
  T operator()(T a, T b) const { return std::max(a, b); }
};
struct BAnd {
  template <class T>
  T operator()(T a, T b) const { return static_cast<T>(a & b); }
};
struct BOr {
  template <class T>
  T operator()(T a, T b) const { return static_cast<T>(a | b); }
};
struct BXor {
  template <class T>
  T operator()(T a, T b) const { return static_cast<T>(a ^ b); }
};
struct LAnd {
  template <class T>
  T operator()(T a, T b) const { return static_cast<T>(a != 0 && b != 0); }
};
struct LOr {
  template <class T>
  T operator()(T a, T b) const { return static_cast<T>(a != 0 || b != 0); }
};
struct LXor {
  template <class T>
  T operator()(T a, T b) const { return static_cast<T>((a != 0) != (b != 0)); }
};

// MPI's (value, index) pairs, as C lays them out (MPI_FLOAT_INT is
// struct { float; int; }). minloc and maxloc keep the lesser index on a tie.
template <class V>
struct ValueIndex {
  V value;
  int32_t index;
  bool operator==(const ValueIndex& o) const { return value == o.value && index == o.index; }
  bool operator!=(const ValueIndex& o) const { return !(*this == o); }
};
template <class T>
struct IsPair : std::false_type {};
template <class V>
struct IsPair<ValueIndex<V>> : std::true_type {};
struct MinLoc {
  template <class T>
  T operator()(T a, T b) const {
    if (a.value != b.value) return b.value < a.value ? b : a;
    return b.index < a.index ? b : a;
  }
};
struct MaxLoc {
  template <class T>
  T operator()(T a, T b) const {
    if (a.value != b.value) return a.value < b.value ? b : a;
    return b.index < a.index ? b : a;
  }
};

// Calls f(Op{}) with the operator's functor; an operator the type lacks is
// never called (redop_applies rejects it first).
template <class T, class F>
void with_op(ReduceOp op, F&& f) {
  if constexpr (IsPair<T>::value) {
    if (op == ReduceOp::MinLoc) return f(MinLoc{});
    if (op == ReduceOp::MaxLoc) return f(MaxLoc{});
  } else {
    switch (op) {
      case ReduceOp::Sum: return f(Sum{});
      case ReduceOp::Prod: return f(Prod{});
      case ReduceOp::Min: return f(Min{});
      case ReduceOp::Max: return f(Max{});
      case ReduceOp::MinLoc: case ReduceOp::MaxLoc: case ReduceOp::User: return;
      case ReduceOp::BAnd: case ReduceOp::BOr: case ReduceOp::BXor:
      case ReduceOp::LAnd: case ReduceOp::LOr: case ReduceOp::LXor:
        if constexpr (std::is_integral_v<T>) {
          switch (op) {
            case ReduceOp::BAnd: return f(BAnd{});
            case ReduceOp::BOr: return f(BOr{});
            case ReduceOp::BXor: return f(BXor{});
            case ReduceOp::LAnd: return f(LAnd{});
            case ReduceOp::LOr: return f(LOr{});
            default: return f(LXor{});
          }
        }
        return;
    }
  }
}

// How elements of a type sit in memory (Stored) and what they are computed in (Calc).
// make(v, i): the element of value v (and index i, for pairs), as stored.
template <class T>
struct Native {
  using Stored = T;
  using Calc = T;
  static Calc load(Stored s) { return s; }
  static Stored store(Calc c) { return c; }
  static Stored make(int64_t v, int32_t) { return static_cast<T>(v); }
};
struct Half {
  using Stored = uint16_t;
  using Calc = float;
  static Calc load(Stored s) { return half_to_float(s); }
  static Stored store(Calc c) { return float_to_half(c); }
  static Stored make(int64_t v, int32_t) { return store(static_cast<float>(v)); }
};
struct BFloat {
  using Stored = uint16_t;
  using Calc = float;
  static Calc load(Stored s) { return bf16_to_float(s); }
  static Stored store(Calc c) { return float_to_bf16(c); }
  static Stored make(int64_t v, int32_t) { return store(static_cast<float>(v)); }
};
template <class V>
struct Pair {
  using Stored = ValueIndex<V>;
  using Calc = ValueIndex<V>;
  static Calc load(Stored s) { return s; }
  static Stored store(Calc c) { return c; }
  static Stored make(int64_t v, int32_t i) { return {static_cast<V>(v), i}; }
};

// Calls f(Codec{}) with the codec of type t (nothing for Byte).
template <class F>
void with_type(DataType t, F&& f) {
  switch (t) {
    case DataType::Byte: return;
    case DataType::Int8: return f(Native<int8_t>{});
    case DataType::UInt8: return f(Native<uint8_t>{});
    case DataType::Int16: return f(Native<int16_t>{});
    case DataType::UInt16: return f(Native<uint16_t>{});
    case DataType::Int32: return f(Native<int32_t>{});
    case DataType::UInt32: return f(Native<uint32_t>{});
    case DataType::Int64: return f(Native<int64_t>{});
    case DataType::UInt64: return f(Native<uint64_t>{});
    case DataType::Float32: return f(Native<float>{});
    case DataType::Float64: return f(Native<double>{});
    case DataType::Float16: return f(Half{});
    case DataType::BFloat16: return f(BFloat{});
    case DataType::FloatInt: return f(Pair<float>{});
    case DataType::DoubleInt: return f(Pair<double>{});
    case DataType::LongInt: return f(Pair<long>{});
    case DataType::TwoInt: return f(Pair<int32_t>{});
    case DataType::ShortInt: return f(Pair<int16_t>{});
  }
}

}  // namespace railcoll::ops
