#include "runtime/engine/reduce.hpp"

#include <cstdint>
#include <cstring>

#include "core/reduce_ops.hpp"

namespace railcoll::rt {

namespace {

// dst[i] = f(dst[i], src[i]) over the elements, in the codec's compute type
// (src_first: f(src[i], dst[i])).
template <class Codec, bool src_first, class F>
void combine(void* dst, const void* src, size_t bytes, F f) {
  auto g = [&f](auto d, auto s) { return src_first ? f(s, d) : f(d, s); };
  using S = typename Codec::Stored;
  const size_t n = bytes / sizeof(S);
  if (reinterpret_cast<uintptr_t>(dst) % alignof(S) == 0 && reinterpret_cast<uintptr_t>(src) % alignof(S) == 0) {
    S* d = static_cast<S*>(dst);
    const S* s = static_cast<const S*>(src);
    for (size_t i = 0; i < n; ++i) d[i] = Codec::store(g(Codec::load(d[i]), Codec::load(s[i])));  // vectorized
    return;
  }
  auto* d = static_cast<char*>(dst);
  auto* s = static_cast<const char*>(src);
  for (size_t i = 0; i < n; ++i) {
    S a, b;
    memcpy(&a, d + i * sizeof(S), sizeof(S));
    memcpy(&b, s + i * sizeof(S), sizeof(S));
    a = Codec::store(g(Codec::load(a), Codec::load(b)));
    memcpy(d + i * sizeof(S), &a, sizeof(S));
  }
}

}  // namespace

void reduce_into(DataType t, ReduceOp op, void* dst, const void* src, size_t bytes, bool src_first) {
  // Byte is rejected when the schedule is built, and so is an operator the type lacks.
  ops::with_type(t, [&](auto codec) {
    using Codec = decltype(codec);
    ops::with_op<typename Codec::Calc>(op, [&](auto f) {
      if (src_first) combine<Codec, true>(dst, src, bytes, f);
      else combine<Codec, false>(dst, src, bytes, f);
    });
  });
}

void reduce_user(const UserOp& op, void* dst, const void* src, size_t bytes, bool src_first, std::vector<char>* tmp) {
  const size_t n = bytes / op.elem_bytes;
  if (n == 0) return;
  if (src_first || op.commutative) return op.fn(src, dst, n, op.context);
  tmp->assign(static_cast<const char*>(src), static_cast<const char*>(src) + bytes);
  op.fn(dst, tmp->data(), n, op.context);
  memcpy(dst, tmp->data(), bytes);
}

}  // namespace railcoll::rt
