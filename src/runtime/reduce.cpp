#include "runtime/reduce.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace railcoll::rt {

namespace {

template <class T, class F>
void combine(void* dst, const void* src, size_t bytes, F f) {
  size_t n = bytes / sizeof(T);
  if (reinterpret_cast<uintptr_t>(dst) % alignof(T) == 0 && reinterpret_cast<uintptr_t>(src) % alignof(T) == 0) {
    T* d = static_cast<T*>(dst);
    const T* s = static_cast<const T*>(src);
    for (size_t i = 0; i < n; ++i) d[i] = f(d[i], s[i]);  // vectorized
    return;
  }
  auto* d = static_cast<char*>(dst);
  auto* s = static_cast<const char*>(src);
  for (size_t i = 0; i < n; ++i) {
    T a, b;
    memcpy(&a, d + i * sizeof(T), sizeof(T));
    memcpy(&b, s + i * sizeof(T), sizeof(T));
    a = f(a, b);
    memcpy(d + i * sizeof(T), &a, sizeof(T));
  }
}

template <class T>
void by_op(ReduceOp op, void* dst, const void* src, size_t bytes) {
  switch (op) {
    case ReduceOp::Sum:
      return combine<T>(dst, src, bytes, [](T a, T b) {
        if constexpr (std::is_integral_v<T>) {  // wraps like MPI's, without signed overflow
          using U = std::make_unsigned_t<T>;
          return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
        } else {
          return a + b;
        }
      });
    case ReduceOp::Min: return combine<T>(dst, src, bytes, [](T a, T b) { return std::min(a, b); });
    case ReduceOp::Max: return combine<T>(dst, src, bytes, [](T a, T b) { return std::max(a, b); });
  }
}

}  // namespace

void reduce_into(DataType t, ReduceOp op, void* dst, const void* src, size_t bytes) {
  switch (t) {
    case DataType::Int32: return by_op<int32_t>(op, dst, src, bytes);
    case DataType::Int64: return by_op<int64_t>(op, dst, src, bytes);
    case DataType::Float32: return by_op<float>(op, dst, src, bytes);
    case DataType::Float64: return by_op<double>(op, dst, src, bytes);
    case DataType::Byte: return;  // rejected when the schedule is built
  }
}

}  // namespace railcoll::rt
