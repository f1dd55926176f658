// Vector kernels for float16 and bfloat16 (reduce_half.cpp): the runtime's
// hottest loop when a model all-reduces in half precision. Internal to the
// kernels (reduce.cpp); use reduce_into.
#pragma once
#include <cstddef>

#include "core/schedule.hpp"
#include "runtime/engine/reduce.hpp"

namespace railcoll::rt {

// dst = dst op src for float32, float16 and bfloat16 sums, products, minima
// and maxima with kernel set k (Avx2 or Avx512); false (nothing done) for any
// other type, operator or set.
bool reduce_half_vector(Kernels k, DataType t, ReduceOp op, void* dst, const void* src, size_t bytes);
// The portable kernels of every type and operator (reduce.cpp); src_first:
// dst = src op dst.
void reduce_portable(DataType t, ReduceOp op, void* dst, const void* src, size_t bytes, bool src_first = false);

}  // namespace railcoll::rt
