// Tensors as the C API takes them: which C type a reduction runs in, the
// tensor it is staged in (contiguous, of that type), what is done to the result
// afterwards, and the byte-level packing of tensor lists (docs/torch.md,
// "Datatypes").
#pragma once
#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <string>
#include <vector>

#include "capi.hpp"

namespace railcoll_torch {

[[noreturn]] void fail(const std::string& msg);

// What is done to a reduction's result before the caller sees it.
enum class After { Nothing, Average, NonZero, Parity };

// How a torch reduce op on a dtype runs: the C type and operator, the dtype the
// tensor is carried in (its own when the library reduces it; a wider one whose
// result casts back exactly; a complex tensor's real type, viewed as pairs),
// and the fix-up afterwards.
struct ReducePlan {
  Reduction c;
  at::ScalarType carried;
  After after = After::Nothing;
};
ReducePlan reduce_plan(at::ScalarType s, const c10d::ReduceOp& rop, const char* op);

// The tensor the C call works on for `t`: `t` itself (or its real view) when it
// is contiguous and of the carried type, else a contiguous copy in that type.
at::Tensor staged(const at::Tensor& t, at::ScalarType carried);
// Elements the C call counts in a staged tensor (a complex one counts twice).
inline size_t elements(const at::Tensor& x) { return static_cast<size_t>(x.numel()); }
inline size_t bytes_of(const at::Tensor& t) { return t.numel() * t.element_size(); }
// Writes a result back into the caller's tensor unless it is already there.
void copy_back(at::Tensor& dst, const at::Tensor& src);
void apply_after(at::Tensor& x, After after, int size);

// Argument checks shared by the operations (raise on the calling thread).
void check_cpu(const at::Tensor& t, const char* op);
at::Tensor single(std::vector<at::Tensor>& tensors, const char* op);

std::vector<at::Tensor> flatten_each(const std::vector<at::Tensor>& ts);
std::vector<at::Tensor> flatten_bytes(const std::vector<at::Tensor>& ts);
// Copies consecutive byte blocks of `flat` into `outs`.
void unpack_bytes(const at::Tensor& flat, std::vector<at::Tensor>& outs, const std::vector<size_t>& counts);

}  // namespace railcoll_torch
