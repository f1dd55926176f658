// How a C API collective is made, shared by the files that define them
// (collectives_c.cpp, scan_c.cpp): one body per collective maps its arguments
// onto the call front end's CallArgs (runtime/front_end.hpp), which checks
// them through the collective traits, plans and builds the call; the three
// forms (blocking, nonblocking, persistent) come from that one body.
#pragma once
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "capi/capi_internal.hpp"
#include "core/errors.hpp"
#include "railcoll/railcoll.h"
#include "runtime/front_end.hpp"

namespace railcoll::capi {

enum class Form { Blocking, Nonblocking, Persistent };

inline void check_flags(const char* fn, const railcoll_call_opts_t* opts) {
  const unsigned known = RAILCOLL_IN_PLACE | RAILCOLL_ROOT_COUNTS;
  if (opts && (opts->flags & ~known)) {
    char bits[32];
    snprintf(bits, sizeof bits, "0x%x", opts->flags & ~known);
    throw InputError(std::string(fn) + ": unknown option flags " + bits +
                     " (RAILCOLL_IN_PLACE is 0x1, RAILCOLL_ROOT_COUNTS 0x2)");
  }
}

// A call in one of its forms: `fill` maps the arguments onto CallArgs (it may
// throw InputError for a value C allows and railcoll does not know); the
// front end does the rest. A failure before the call began tells the peers
// that this rank does not join (FrontEnd::run). (Fill is a template, not a
// std::function: a blocking 8 B call is a few thousand instructions, and a
// std::function of a capturing lambda would allocate.)
template <class Fill>
railcoll_status_t issue(railcoll_comm_t handle, const char* fn, const railcoll_call_opts_t* opts, Form form,
                        railcoll_request_t* out, const Fill& fill) {
  if (form != Form::Blocking) {
    if (!out) return fail(RAILCOLL_ERR_ARG, std::string(fn) + ": the request pointer is NULL");
    *out = RAILCOLL_REQUEST_NULL;
  }
  return guarded([&]() -> railcoll_status_t {
    railcoll_comm* c = live(handle, fn);
    if (!c) return RAILCOLL_ERR_ARG;
    rt::CallArgs a;
    a.fn = fn;
    try {
      check_flags(fn, opts);
      a.in_place = opts && (opts->flags & RAILCOLL_IN_PLACE);
      a.root_counts = opts && (opts->flags & RAILCOLL_ROOT_COUNTS);
      a.algorithm = opts ? opts->algorithm : nullptr;
      fill(a);
    } catch (const std::exception& e) {
      c->front->abandon(fn, e);
      throw;
    }
    if (form == Form::Blocking) {
      c->front->run(a);
    } else {
      auto req = c->front->start(a, form == Form::Persistent);
      *out = make_request(c, std::move(req));
    }
    return RAILCOLL_OK;
  });
}

// The three forms of one collective from its parameters (in parentheses) and
// its body (a lambda filling CallArgs). PARAMS_REQ((a, b)) is (a, b, req).
#define PARAMS_REQ(...) PARAMS_REQ_I __VA_ARGS__
#define PARAMS_REQ_I(...) (__VA_ARGS__, railcoll_request_t* req)
#define RAILCOLL_THREE_FORMS(name, params, opts, ...)                                                             \
  railcoll_status_t railcoll_##name params {                                                                      \
    return railcoll::capi::issue(comm, "railcoll_" #name, opts, railcoll::capi::Form::Blocking, nullptr,           \
                                 __VA_ARGS__);                                                                    \
  }                                                                                                               \
  railcoll_status_t railcoll_i##name PARAMS_REQ(params) {                                                         \
    return railcoll::capi::issue(comm, "railcoll_i" #name, opts, railcoll::capi::Form::Nonblocking, req,          \
                                 __VA_ARGS__);                                                                    \
  }                                                                                                               \
  railcoll_status_t railcoll_##name##_init PARAMS_REQ(params) {                                                   \
    return railcoll::capi::issue(comm, "railcoll_" #name "_init", opts, railcoll::capi::Form::Persistent, req,    \
                                 __VA_ARGS__);                                                                    \
  }

// A reduction's type and operator as the runtime's: a predefined pair, or a
// user operator (railcoll_op_create) on its own elements, which the call then
// holds until it is over. Whether the operator applies to the type is the
// front end's check. A C caller may pass any int: the enums' bytes are read
// as ints, since loading an enum holding a value outside its range is
// undefined in C++.
inline void reduction(rt::CallArgs& a, railcoll_datatype_t type, railcoll_op_t op) {
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
  const std::string coll = collective_name(a.collective);
  if (std::shared_ptr<const rt::UserOp> user = find_user_op(op_value)) {
    if (type_value != RAILCOLL_OP_ELEMENTS)
      throw InputError(coll + ": a user operator takes the type RAILCOLL_OP_ELEMENTS (its own elements), not " +
                       std::to_string(type_value));
    a.dtype = DataType::Byte;
    a.op = ReduceOp::User;
    a.user_op = std::move(user);
    return;
  }
  auto o = std::find_if(std::begin(kOps), std::end(kOps), [&](auto& e) { return e.first == op_value; });
  if (o == std::end(kOps))
    throw InputError(coll + ": unknown operation " + std::to_string(op_value) +
                     " (neither predefined nor a live user operator)");
  if (type_value == RAILCOLL_OP_ELEMENTS)
    throw InputError(coll + ": RAILCOLL_OP_ELEMENTS needs a user operator (railcoll_op_create), not the predefined " +
                     redop_name(o->second));
  auto t = std::find_if(std::begin(kTypes), std::end(kTypes), [&](auto& e) { return e.first == type_value; });
  if (t == std::end(kTypes)) throw InputError(coll + ": unknown data type " + std::to_string(type_value));
  a.dtype = t->second;
  a.op = o->second;
}

}  // namespace railcoll::capi
