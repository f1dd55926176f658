// How a C API collective is made, shared by the files that define them
// (collectives_c.cpp, scan_c.cpp): a Call being built, the three forms
// (blocking, nonblocking, persistent) from one body, and the argument checks
// every body uses.
#pragma once
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "capi/capi_internal.hpp"
#include "core/errors.hpp"
#include "core/registry.hpp"
#include "railcoll/railcoll.h"
#include "runtime/comm.hpp"

namespace railcoll::capi {

using railcoll::rt::Request;
using railcoll::rt::Step;

// A call being built: the steps it appends to its request, and the buffers it
// owns. Work on the caller's data (an in-place input copied, blocks packed or
// unpacked) is registered to run when the call starts or ends, so a
// persistent call redoes exactly that at every start and nothing else.
class Call {
 public:
  Call(railcoll_comm* c, Request& req) : c(c), req_(req) {}
  railcoll_comm* const c;

  int rank() const { return c->comm->rank(); }
  int size() const { return c->comm->size(); }

  // `bytes` at src, copied at every start into a buffer of the call: the input
  // of an in-place call, which the schedule may overwrite while reading it.
  const void* copy_at_start(const void* src, size_t bytes) {
    char* dst = req_.keep(bytes).data();
    if (bytes) at_start_.push_back([=] { memcpy(dst, src, bytes); });
    return dst;
  }
  // A buffer of the call (zeroed once).
  char* room(size_t bytes) { return req_.keep(bytes).data(); }
  void at_start(std::function<void()> f) { at_start_.push_back(std::move(f)); }

  // A step running collective `coll` on (send, recv): its plan chosen now.
  void step(railcoll::Collective coll, const void* send, void* recv, const std::vector<uint64_t>& counts,
            const railcoll_call_opts_t* opts, const railcoll::AlgoOptions& args = {}) {
    Step s;
    s.plan = railcoll::capi::choose_plan(c, coll, counts, opts, args);
    s.bufs = {send, recv, args.redop == railcoll::ReduceOp::User ? user_op : nullptr};
    push(std::move(s));
  }
  // The call's user operator (reduction_args), held until the call is over.
  std::shared_ptr<const railcoll::rt::UserOp> user_op;
  // A step whose plan and buffers are made when it begins (from an earlier step's result).
  void step_planned_later(std::function<void(Step&)> plan) {
    Step s;
    s.before = std::move(plan);
    push(std::move(s));
  }
  // After the last step so far has ended.
  void at_end(std::function<void()> f) { req_.steps.back().after = std::move(f); }
  Step& last_step() { return req_.steps.back(); }
  // The body read RAILCOLL_ROOT_COUNTS (scatterv, gatherv); any other call refuses it.
  bool took_root_counts = false;

 private:
  void push(Step s) {
    if (!at_start_.empty()) {
      auto first = std::move(s.before);
      s.before = [work = std::move(at_start_), first = std::move(first)](Step& st) {
        for (auto& f : work) f();
        if (first) first(st);
      };
      at_start_.clear();
    }
    req_.steps.push_back(std::move(s));
  }

  Request& req_;
  std::vector<std::function<void()>> at_start_;
};

inline railcoll_status_t check_flags(const char* fn, const railcoll_call_opts_t* opts) {
  const unsigned known = RAILCOLL_IN_PLACE | RAILCOLL_ROOT_COUNTS;
  if (opts && (opts->flags & ~known)) {
    char bits[32];
    snprintf(bits, sizeof bits, "0x%x", opts->flags & ~known);
    return fail(RAILCOLL_ERR_ARG, std::string(fn) + ": unknown option flags " + bits +
                                      " (RAILCOLL_IN_PLACE is 0x1, RAILCOLL_ROOT_COUNTS 0x2)");
  }
  return RAILCOLL_OK;
}

inline bool root_counts(const railcoll_call_opts_t* opts) { return opts && (opts->flags & RAILCOLL_ROOT_COUNTS); }

// Builds a call on a live handle. A failure before the call began (a bad
// argument, an unknown algorithm, a call the nodes' memory cannot hold) is
// this rank's alone: it tells its peers it does not join, and they fail the
// call, or their next one, with RAILCOLL_ERR_PEER naming it, instead of
// waiting for it until the deadline. The communicator is then broken on every
// rank, as after any failed collective. `then` runs the built call.
// (Body and Then are templates, not std::function: a blocking 8 B call is a few
// thousand instructions, and each std::function of a capturing lambda would
// allocate.)
template <class Body, class Then>
railcoll_status_t build(railcoll_comm_t handle, const char* fn, const railcoll_call_opts_t* opts, Request& req,
                        const Body& body, const Then& then) {
  return guarded([&]() -> railcoll_status_t {
    railcoll_comm* c = live(handle, fn);
    if (!c) return RAILCOLL_ERR_ARG;
    railcoll_status_t st = guarded([&]() -> railcoll_status_t {
      if (railcoll_status_t bad = check_flags(fn, opts)) return bad;
      Call call(c, req);
      if (railcoll_status_t bad = body(call)) return bad;
      if (root_counts(opts) && !call.took_root_counts)
        return fail(RAILCOLL_ERR_ARG, std::string(fn) + ": RAILCOLL_ROOT_COUNTS is for scatterv and gatherv only");
      return then(c);
    });
    if (st != RAILCOLL_OK && c->comm->broken().empty()) {
      const std::string mine = railcoll::capi::last_error_text();
      c->comm->abandon("rank " + std::to_string(c->comm->rank()) + "'s " + fn + " failed before it began (" +
                       railcoll_strerror(st) + ": " + mine + ")");
      fail(st, mine);
    }
    return st;
  });
}

// The blocking form: the steps run here, one after the other.
template <class Body>
railcoll_status_t blocking(railcoll_comm_t handle, const char* fn, const railcoll_call_opts_t* opts, const Body& body) {
  Request req;
  return build(handle, fn, opts, req, body, [&](railcoll_comm* c) {
    for (Step& s : req.steps) {
      if (s.before) s.before(s);
      if (s.plan) c->comm->run(*s.plan, s.bufs);  // no plan: nothing to do this time
      if (s.after) s.after();
    }
    return RAILCOLL_OK;
  });
}

template <class Body>
railcoll_status_t in_background(railcoll_comm_t handle, const char* fn, const railcoll_call_opts_t* opts,
                                railcoll_request_t* out, bool persistent, const Body& body) {
  if (!out) return fail(RAILCOLL_ERR_ARG, std::string(fn) + ": the request pointer is NULL");
  *out = RAILCOLL_REQUEST_NULL;
  auto req = std::make_shared<Request>();
  req->persistent = persistent;
  return build(handle, fn, opts, *req, body, [&](railcoll_comm* c) {
    if (!persistent) c->comm->post(req);
    *out = railcoll::capi::make_request(c, req);
    return RAILCOLL_OK;
  });
}

// The three forms of one collective from its parameters (in parentheses) and
// its body (a lambda taking the Call). PARAMS_REQ((a, b)) is (a, b, req).
#define PARAMS_REQ(...) PARAMS_REQ_I __VA_ARGS__
#define PARAMS_REQ_I(...) (__VA_ARGS__, railcoll_request_t* req)
#define RAILCOLL_THREE_FORMS(name, params, opts, ...)                                                                  \
  railcoll_status_t railcoll_##name params {                                                                           \
    return railcoll::capi::blocking(comm, "railcoll_" #name, opts, __VA_ARGS__);                                       \
  }                                                                                                                    \
  railcoll_status_t railcoll_i##name PARAMS_REQ(params) {                                                              \
    return railcoll::capi::in_background(comm, "railcoll_i" #name, opts, req, false, __VA_ARGS__);                     \
  }                                                                                                                    \
  railcoll_status_t railcoll_##name##_init PARAMS_REQ(params) {                                                        \
    return railcoll::capi::in_background(comm, "railcoll_" #name "_init", opts, req, true, __VA_ARGS__);               \
  }

inline bool overlap(const void* a, size_t alen, const void* b, size_t blen) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return alen && blen && x < y + blen && y < x + alen;
}

inline railcoll_status_t overlap_error() {
  return fail(RAILCOLL_ERR_ARG, "sendbuf and recvbuf overlap (use RAILCOLL_IN_PLACE for an in-place call)");
}

inline bool in_place_call(const railcoll_call_opts_t* opts) { return opts && (opts->flags & RAILCOLL_IN_PLACE); }

inline railcoll_status_t check_root(Call& call, int root) {
  if (root < 0 || root >= call.size())
    return fail(RAILCOLL_ERR_ARG, "root " + std::to_string(root) + " is out of range (" + std::to_string(call.size()) +
                                      " ranks)");
  return RAILCOLL_OK;
}

// A reduction's type and operator as the schedule's (a user operator's with
// the call). A C caller may pass any int: the enums' bytes are read as ints,
// since loading an enum holding a value outside its range is undefined in C++.
inline railcoll_status_t reduction_args(Call& call, const char* fn, railcoll_datatype_t type, railcoll_op_t op,
                                        railcoll::AlgoOptions* args) {
  using railcoll::DataType;
  using railcoll::ReduceOp;
  static const std::pair<int, DataType> kTypes[] = {
      {RAILCOLL_INT32, DataType::Int32},   {RAILCOLL_INT64, DataType::Int64},       {RAILCOLL_FLOAT, DataType::Float32},
      {RAILCOLL_DOUBLE, DataType::Float64}, {RAILCOLL_INT8, DataType::Int8},        {RAILCOLL_UINT8, DataType::UInt8},
      {RAILCOLL_INT16, DataType::Int16},   {RAILCOLL_UINT16, DataType::UInt16},     {RAILCOLL_UINT32, DataType::UInt32},
      {RAILCOLL_UINT64, DataType::UInt64}, {RAILCOLL_FLOAT16, DataType::Float16}, {RAILCOLL_BFLOAT16, DataType::BFloat16},
      {RAILCOLL_FLOAT_INT, DataType::FloatInt}, {RAILCOLL_DOUBLE_INT, DataType::DoubleInt},
      {RAILCOLL_LONG_INT, DataType::LongInt},   {RAILCOLL_2INT, DataType::TwoInt},
      {RAILCOLL_SHORT_INT, DataType::ShortInt}};
  static const std::pair<int, ReduceOp> kOps[] = {
      {RAILCOLL_SUM, ReduceOp::Sum},   {RAILCOLL_MIN, ReduceOp::Min},   {RAILCOLL_MAX, ReduceOp::Max},
      {RAILCOLL_PROD, ReduceOp::Prod}, {RAILCOLL_BAND, ReduceOp::BAnd}, {RAILCOLL_BOR, ReduceOp::BOr},
      {RAILCOLL_BXOR, ReduceOp::BXor}, {RAILCOLL_LAND, ReduceOp::LAnd}, {RAILCOLL_LOR, ReduceOp::LOr},
      {RAILCOLL_LXOR, ReduceOp::LXor}, {RAILCOLL_MINLOC, ReduceOp::MinLoc}, {RAILCOLL_MAXLOC, ReduceOp::MaxLoc}};
  int type_value, op_value;
  memcpy(&type_value, &type, sizeof type_value);
  memcpy(&op_value, &op, sizeof op_value);
  if (std::shared_ptr<const railcoll::rt::UserOp> user = find_user_op(op_value)) {
    if (type_value != RAILCOLL_OP_ELEMENTS)
      return fail(RAILCOLL_ERR_ARG, std::string(fn) + ": a user operator takes the type RAILCOLL_OP_ELEMENTS (its "
                                                      "own elements), not " + std::to_string(type_value));
    args->dtype = DataType::Byte;
    args->redop = ReduceOp::User;
    args->elem_bytes = static_cast<uint32_t>(user->elem_bytes);
    args->commutative = user->commutative;
    call.user_op = std::move(user);
    return RAILCOLL_OK;
  }
  auto o = std::find_if(std::begin(kOps), std::end(kOps), [&](auto& e) { return e.first == op_value; });
  if (o == std::end(kOps))
    return fail(RAILCOLL_ERR_ARG, std::string(fn) + ": unknown operation " + std::to_string(op_value) +
                                      " (neither predefined nor a live user operator)");
  if (type_value == RAILCOLL_OP_ELEMENTS)
    return fail(RAILCOLL_ERR_ARG, std::string(fn) + ": RAILCOLL_OP_ELEMENTS needs a user operator (railcoll_op_create), "
                                                    "not the predefined " + railcoll::redop_name(o->second));
  auto t = std::find_if(std::begin(kTypes), std::end(kTypes), [&](auto& e) { return e.first == type_value; });
  if (t == std::end(kTypes)) return fail(RAILCOLL_ERR_ARG, std::string(fn) + ": unknown data type " + std::to_string(type_value));
  if (!railcoll::redop_applies(o->second, t->second))
    return fail(RAILCOLL_ERR_ARG, std::string(fn) + ": the operation " + railcoll::redop_name(o->second) +
                                      " is not defined on " + railcoll::dtype_name(t->second) +
                                      " (bitwise and logical operations take integer types, minloc and "
                                      "maxloc the (value, index) pairs)");
  args->dtype = t->second;
  args->redop = o->second;
  return RAILCOLL_OK;
}

// `count` elements of the call's type in bytes; false when that is too many.
inline bool element_bytes(size_t count, const railcoll::AlgoOptions& args, uint64_t* bytes) {
  const size_t elem = railcoll::element_size(args);
  if (count > railcoll::kMaxBytesPerRank / elem) return false;
  *bytes = count * elem;
  return true;
}

}  // namespace railcoll::capi
