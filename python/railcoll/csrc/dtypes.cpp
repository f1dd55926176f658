#include "dtypes.hpp"

#include <c10/util/Exception.h>

#include <optional>

namespace railcoll_torch {

using c10d::ReduceOp;

void fail(const std::string& msg) { TORCH_CHECK(false, "railcoll: ", msg); }

namespace {

// The C type of a dtype the linked library reduces as itself, if any.
std::optional<railcoll_datatype_t> native_type(at::ScalarType s) {
  switch (s) {
    case at::kFloat: return RAILCOLL_FLOAT;
    case at::kDouble: return RAILCOLL_DOUBLE;
    case at::kInt: return RAILCOLL_INT32;
    case at::kLong: return RAILCOLL_INT64;
#if RAILCOLL_HAS_INT8
    case at::kChar: return RAILCOLL_INT8;
#endif
#if RAILCOLL_HAS_UINT8
    case at::kByte: return RAILCOLL_UINT8;
#endif
#if RAILCOLL_HAS_INT16
    case at::kShort: return RAILCOLL_INT16;
#endif
#if RAILCOLL_HAS_FLOAT16
    case at::kHalf: return RAILCOLL_FLOAT16;
#endif
#if RAILCOLL_HAS_BFLOAT16
    case at::kBFloat16: return RAILCOLL_BFLOAT16;
#endif
    default: return std::nullopt;
  }
}

// The C type and the dtype carried for a dtype: its own, else a wider one
// whose result casts back exactly.
std::pair<railcoll_datatype_t, at::ScalarType> carried_type(at::ScalarType s, const std::string& op) {
  if (auto t = native_type(s)) return {*t, s};
  switch (s) {
    case at::kChar:
    case at::kByte:
    case at::kShort:
    case at::kBool: return {RAILCOLL_INT32, at::kInt};
    case at::kHalf:
    case at::kBFloat16: return {RAILCOLL_FLOAT, at::kFloat};
    case at::kComplexFloat: return {RAILCOLL_FLOAT, at::kFloat};
    case at::kComplexDouble: return {RAILCOLL_DOUBLE, at::kDouble};
    default: fail(op + " cannot reduce " + std::string(c10::toString(s)) + " tensors");
  }
}

}  // namespace

ReducePlan reduce_plan(at::ScalarType s, const ReduceOp& rop, const char* opname) {
  const std::string op = opname;
  const auto [ctype, carried] = carried_type(s, op);
  ReducePlan p{{ctype, RAILCOLL_SUM}, carried};
  const bool is_bool = s == at::kBool, is_float = at::isFloatingType(s), is_complex = at::isComplexType(s);
  [[maybe_unused]] auto need = [&](const char* coll_op) -> railcoll_op_t {
    fail(op + " with " + std::string(coll_op) + " needs railcoll's " + coll_op +
         " operator (this library has none): use gloo for it, e.g. a dist.new_group(backend=\"gloo\")");
  };
  // A complex tensor is reduced as pairs of reals: right for sums alone (as gloo and nccl).
  if (is_complex && rop.op_ != ReduceOp::SUM && rop.op_ != ReduceOp::AVG)
    fail(op + " on complex tensors takes SUM or AVG (as torch.distributed's other backends)");
  switch (rop.op_) {
    case ReduceOp::SUM:
      if (is_bool) p.after = After::NonZero;  // logical or, as the other backends do
      return p;
    case ReduceOp::AVG:
      if (!is_float && !is_complex)
        fail(op + " with AVG takes floating-point tensors (got " + std::string(c10::toString(s)) + ")");
      p.after = After::Average;
      return p;
    case ReduceOp::MIN: p.c.op = RAILCOLL_MIN; return p;
    case ReduceOp::MAX: p.c.op = RAILCOLL_MAX; return p;
    case ReduceOp::PRODUCT:
      if (is_bool) {  // and
        p.c.op = RAILCOLL_MIN;
        return p;
      }
#if RAILCOLL_HAS_PROD
      p.c.op = RAILCOLL_PROD;
      return p;
#else
      need("PRODUCT");
#endif
    case ReduceOp::BAND:
    case ReduceOp::BOR:
    case ReduceOp::BXOR:
      if (is_float) fail(op + " with a bitwise operator takes integer or bool tensors");
      if (is_bool) {  // on 0/1 values: and = min, or = max, xor = parity of the sum
        p.c.op = rop.op_ == ReduceOp::BAND ? RAILCOLL_MIN : rop.op_ == ReduceOp::BOR ? RAILCOLL_MAX : RAILCOLL_SUM;
        if (rop.op_ == ReduceOp::BXOR) p.after = After::Parity;
        return p;
      }
#if RAILCOLL_HAS_BITWISE
      p.c.op = rop.op_ == ReduceOp::BAND ? RAILCOLL_BAND : rop.op_ == ReduceOp::BOR ? RAILCOLL_BOR : RAILCOLL_BXOR;
      return p;
#else
      need(rop.op_ == ReduceOp::BAND ? "BAND" : rop.op_ == ReduceOp::BOR ? "BOR" : "BXOR");
#endif
    default:
      fail(op + ": this reduce op is not supported by the railcoll backend (SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, "
                "BXOR are)");
  }
}

at::Tensor staged(const at::Tensor& t, at::ScalarType carried) {
  if (t.is_complex() && !at::isComplexType(carried)) return at::view_as_real(t.contiguous()).reshape({-1});
  // (Tensor::to keeps a strided layout when the dtype stays: contiguous() apart.)
  return t.scalar_type() == carried ? t.contiguous() : t.to(carried).contiguous();
}

void copy_back(at::Tensor& dst, const at::Tensor& src) {
  if (dst.is_same(src)) return;
  if (dst.is_complex() && !src.is_complex()) {
    // The real view of dst itself (contiguous dst), or a copy to write back.
    if (dst.is_contiguous() && src.data_ptr() == dst.data_ptr()) return;
    dst.copy_(at::view_as_complex(src.view({-1, 2})).view(dst.sizes()));
    return;
  }
  dst.copy_(src.view(dst.sizes()));
}

void apply_after(at::Tensor& x, After after, int size) {
  switch (after) {
    case After::Nothing: break;
    case After::Average: x.div_(size); break;
    case After::NonZero: x.ne_(0); break;
    case After::Parity: x.remainder_(2); break;
  }
}

void check_cpu(const at::Tensor& t, const char* op) {
  if (!t.device().is_cpu())
    fail(std::string(op) + " got a tensor on " + t.device().str() +
         ": the railcoll backend serves CPU tensors (register another backend for other devices, e.g. "
         "init_process_group(\"cpu:railcoll,cuda:nccl\"))");
  if (t.is_sparse()) fail(std::string(op) + " got a sparse tensor: the railcoll backend all-reduces sparse tensors "
                                            "(SUM) and serves dense ones otherwise");
}

at::Tensor single(std::vector<at::Tensor>& tensors, const char* op) {
  if (tensors.size() != 1)
    fail(std::string(op) + " takes one tensor per call (got " + std::to_string(tensors.size()) + ")");
  check_cpu(tensors[0], op);
  return tensors[0];
}

std::vector<at::Tensor> flatten_each(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> flat;
  for (auto& t : ts) flat.push_back(t.reshape({-1}));
  return flat;
}

std::vector<at::Tensor> flatten_bytes(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> flat;
  for (auto& t : ts) flat.push_back(t.contiguous().reshape({-1}).view(at::kByte));
  return flat;
}

void unpack_bytes(const at::Tensor& flat, std::vector<at::Tensor>& outs, const std::vector<size_t>& counts) {
  int64_t at = 0;
  for (size_t i = 0; i < outs.size(); ++i) {
    const auto n = static_cast<int64_t>(counts[i]);
    if (n) outs[i].copy_(flat.narrow(0, at, n).view(outs[i].scalar_type()).view(outs[i].sizes()));
    at += n;
  }
}

}  // namespace railcoll_torch
