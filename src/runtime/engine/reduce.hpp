// Element-wise reduction kernels of the reduce operations (reduce: dst = dst
// op src; reduce_before: dst = src op dst), for the predefined operators and
// for a user's function.
#pragma once
#include <cstddef>
#include <vector>

#include "core/schedule.hpp"

namespace railcoll::rt {

// bytes is a whole number of elements; the buffers may be unaligned.
// src_first: dst = src op dst.
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

}  // namespace railcoll::rt
