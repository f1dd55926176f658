// Element-wise reduction kernels of the reduce operation (dst = dst op src).
#pragma once
#include <cstddef>

#include "core/schedule.hpp"

namespace railcoll::rt {

// bytes is a whole number of elements; the buffers may be unaligned.
void reduce_into(DataType t, ReduceOp op, void* dst, const void* src, size_t bytes);

}  // namespace railcoll::rt
