// User-defined reduction operators of the C API: railcoll_op_create gives a
// railcoll_op_t value above the predefined ones that the reducing calls look
// up (find_user_op); a call holds its operator until it completes.
#include <memory>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "capi/capi_internal.hpp"

namespace {

using railcoll::capi::fail;
using railcoll::capi::guarded;
using railcoll::rt::UserOp;

constexpr int kFirstUserOp = 256;  // above every predefined railcoll_op_t

struct Table {
  std::mutex mu;
  std::vector<std::shared_ptr<const UserOp>> ops;  // value kFirstUserOp + i; null: free
};
Table& table() {
  static Table* t = new Table;  // never destroyed: a call may outlive static destruction
  return *t;
}

}  // namespace

std::shared_ptr<const UserOp> railcoll::capi::find_user_op(int op) {
  if (op < kFirstUserOp) return nullptr;
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  const size_t i = static_cast<size_t>(op - kFirstUserOp);
  return i < t.ops.size() ? t.ops[i] : nullptr;
}

extern "C" {

railcoll_status_t railcoll_op_create(railcoll_user_fn fn, size_t elem_bytes, int commute, void* context,
                                     railcoll_op_t* op) {
  return guarded([&]() -> railcoll_status_t {
    if (!op) return fail(RAILCOLL_ERR_ARG, "railcoll_op_create: op is NULL");
    if (!fn) return fail(RAILCOLL_ERR_ARG, "railcoll_op_create: the function is NULL");
    if (elem_bytes == 0 || elem_bytes > (1u << 30))
      return fail(RAILCOLL_ERR_ARG, "railcoll_op_create: elem_bytes " + std::to_string(elem_bytes) +
                                        " is not in [1, 2^30]");
    auto user = std::make_shared<UserOp>();
    user->fn = fn;
    user->context = context;
    user->elem_bytes = elem_bytes;
    user->commutative = commute != 0;
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.mu);
    size_t i = 0;
    while (i < t.ops.size() && t.ops[i]) ++i;
    if (i == t.ops.size()) t.ops.emplace_back();
    t.ops[i] = std::move(user);
    const int value = kFirstUserOp + static_cast<int>(i);
    memcpy(op, &value, sizeof value);  // a value outside the enum's named ones
    return RAILCOLL_OK;
  });
}

railcoll_status_t railcoll_op_free(railcoll_op_t* op) {
  return guarded([&]() -> railcoll_status_t {
    if (!op) return fail(RAILCOLL_ERR_ARG, "railcoll_op_free: op is NULL");
    int value;
    memcpy(&value, op, sizeof value);
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.mu);
    const size_t i = static_cast<size_t>(value - kFirstUserOp);
    if (value < kFirstUserOp || i >= t.ops.size() || !t.ops[i])
      return fail(RAILCOLL_ERR_ARG, "railcoll_op_free: " + std::to_string(value) + " is not a user operator");
    t.ops[i].reset();
    const int freed = -1;
    memcpy(op, &freed, sizeof freed);
    return RAILCOLL_OK;
  });
}

}  // extern "C"
