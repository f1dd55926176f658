// Element-wise reduction kernels of the reduce operations (reduce: dst = dst
// op src; reduce_before: dst = src op dst), for the predefined operators and
// for a user's function: the one implementation every schedule's Reduce op
// runs (executor.cpp).
#pragma once
#include <cstddef>
#include <vector>

#include "core/schedule.hpp"

namespace railcoll::rt {

// bytes is a whole number of elements; the buffers may be unaligned. Runs the
// best kernels this CPU has (best_kernels()). src_first: dst = src op dst.
void reduce_into(DataType t, ReduceOp op, void* dst, const void* src, size_t bytes, bool src_first = false);

// A reduction operator of the program's own (ReduceOp::User), which a call
// carries with its buffers: fn(in, inout, n, context) sets inout[i] = in[i] op
// inout[i] for n elements of elem_bytes each -- MPI's convention (MPI 4.0
// §6.9.5: `in` holds the lower ranks' values).
struct UserOp {
  void (*fn)(const void* in, void* inout, size_t n, void* context) = nullptr;
  void* context = nullptr;
  size_t elem_bytes = 0;
  bool commutative = true;
};
// dst = dst op src (src_first: src op dst) with a user's function. MPI's form
// writes its right operand, so dst = dst op src of a non-commutative operator
// goes through `tmp` (a copy of src, then dst = tmp); a commutative one is
// called as src op dst.
void reduce_user(const UserOp& op, void* dst, const void* src, size_t bytes, bool src_first, std::vector<char>* tmp);

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
