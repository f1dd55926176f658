// Element-wise reduction kernels of the reduce operation (dst = dst op src):
// the one implementation every schedule's Reduce op runs (executor.cpp).
#pragma once
#include <cstddef>

#include "core/schedule.hpp"

namespace railcoll::rt {

// bytes is a whole number of elements; the buffers may be unaligned. Runs the
// best kernels this CPU has (best_kernels()).
void reduce_into(DataType t, ReduceOp op, void* dst, const void* src, size_t bytes);

// Which kernels float32, float16 and bfloat16 sums, products, minima and
// maxima use (the other types are plain loops): every set gives the same bits
// as the portable one. Picked once per process from the CPU (cpuid).
enum class Kernels { Portable, Avx2, Avx512 };
Kernels best_kernels();
bool kernels_supported(Kernels k);  // on this CPU
const char* kernels_name(Kernels k);  // "portable", "avx2", "avx512"
// reduce_into with the given set (it must be supported): for tests and `railcoll bench --reduce`.
void reduce_into_with(Kernels k, DataType t, ReduceOp op, void* dst, const void* src, size_t bytes);

}  // namespace railcoll::rt
