// The collectives of the C API, each in its three forms: blocking
// (railcoll_COLL), nonblocking (railcoll_iCOLL) and persistent
// (railcoll_COLL_init). One body per collective checks the arguments and
// builds the call (a Request's steps, rt/requests.hpp); the form decides when
// it runs: now, in the background, or at every railcoll_start.
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

namespace {

using railcoll::capi::fail;
using railcoll::capi::guarded;
using railcoll::capi::live;
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
    s.bufs = {send, recv};
    push(std::move(s));
  }
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

railcoll_status_t check_flags(const char* fn, const railcoll_call_opts_t* opts) {
  const unsigned known = RAILCOLL_IN_PLACE | RAILCOLL_ROOT_COUNTS;
  if (opts && (opts->flags & ~known)) {
    char bits[32];
    snprintf(bits, sizeof bits, "0x%x", opts->flags & ~known);
    return fail(RAILCOLL_ERR_ARG, std::string(fn) + ": unknown option flags " + bits +
                                      " (RAILCOLL_IN_PLACE is 0x1, RAILCOLL_ROOT_COUNTS 0x2)");
  }
  return RAILCOLL_OK;
}

bool root_counts(const railcoll_call_opts_t* opts) { return opts && (opts->flags & RAILCOLL_ROOT_COUNTS); }

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
#define RAILCOLL_THREE_FORMS(name, params, opts, ...)                                                 \
  railcoll_status_t railcoll_##name params {                                                          \
    return blocking(comm, "railcoll_" #name, opts, __VA_ARGS__);                                      \
  }                                                                                                   \
  railcoll_status_t railcoll_i##name PARAMS_REQ(params) {                                             \
    return in_background(comm, "railcoll_i" #name, opts, req, false, __VA_ARGS__);                   \
  }                                                                                                   \
  railcoll_status_t railcoll_##name##_init PARAMS_REQ(params) {                                       \
    return in_background(comm, "railcoll_" #name "_init", opts, req, true, __VA_ARGS__);             \
  }

bool overlap(const void* a, size_t alen, const void* b, size_t blen) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return alen && blen && x < y + blen && y < x + alen;
}

railcoll_status_t overlap_error() {
  return fail(RAILCOLL_ERR_ARG, "sendbuf and recvbuf overlap (use RAILCOLL_IN_PLACE for an in-place call)");
}

bool in_place_call(const railcoll_call_opts_t* opts) { return opts && (opts->flags & RAILCOLL_IN_PLACE); }

railcoll_status_t check_root(Call& call, int root) {
  if (root < 0 || root >= call.size())
    return fail(RAILCOLL_ERR_ARG, "root " + std::to_string(root) + " is out of range (" + std::to_string(call.size()) +
                                      " ranks)");
  return RAILCOLL_OK;
}

railcoll_status_t gather_call(Call& call, const void* sendbuf, void* recvbuf, std::vector<uint64_t> counts,
                              const railcoll_call_opts_t* opts) {
  const int me = call.rank();
  uint64_t total = 0, displ = 0;
  for (int r = 0; r < static_cast<int>(counts.size()); ++r) {
    if (r == me) displ = total;
    total += counts[r];
  }
  const bool in_place = in_place_call(opts);
  if (total > 0 && !recvbuf) return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL with a non-zero size");
  if (counts[me] > 0 && !sendbuf && !in_place) return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with a non-zero size");
  if (in_place)
    sendbuf = call.copy_at_start(static_cast<char*>(recvbuf) + displ, counts[me]);
  else if (overlap(sendbuf, counts[me], recvbuf, total))
    return overlap_error();
  call.step(railcoll::Collective::Allgather, sendbuf, recvbuf, counts, opts);
  return RAILCOLL_OK;
}

// A reduction's type and operator as the schedule's. A C caller may pass any
// int: the enums' bytes are read as ints, since loading an enum holding a
// value outside its range is undefined in C++.
railcoll_status_t reduction_args(const char* fn, railcoll_datatype_t type, railcoll_op_t op,
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
  auto t = std::find_if(std::begin(kTypes), std::end(kTypes), [&](auto& e) { return e.first == type_value; });
  if (t == std::end(kTypes)) return fail(RAILCOLL_ERR_ARG, std::string(fn) + ": unknown data type " + std::to_string(type_value));
  auto o = std::find_if(std::begin(kOps), std::end(kOps), [&](auto& e) { return e.first == op_value; });
  if (o == std::end(kOps)) return fail(RAILCOLL_ERR_ARG, std::string(fn) + ": unknown operation " + std::to_string(op_value));
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
bool element_bytes(size_t count, const railcoll::AlgoOptions& args, uint64_t* bytes) {
  const size_t elem = railcoll::dtype_size(args.dtype);
  if (count > railcoll::kMaxBytesPerRank / elem) return false;
  *bytes = count * elem;
  return true;
}

// reduce_scatter(_block): send holds every rank's block (counts, bytes) in
// rank order, recv this rank's; in place, recv holds the whole input.
railcoll_status_t reduce_scatter_call(Call& call, railcoll::Collective coll, const void* sendbuf, void* recvbuf,
                                      const std::vector<uint64_t>& counts, const railcoll_call_opts_t* opts,
                                      const railcoll::AlgoOptions& args) {
  const int me = call.rank();
  uint64_t total = 0;
  for (uint64_t n : counts) total += n;
  const bool in_place = in_place_call(opts);
  if ((in_place ? total : counts[me]) > 0 && !recvbuf) return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL with a non-zero count");
  if (total > 0 && !sendbuf && !in_place) return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with a non-zero count");
  if (in_place)
    sendbuf = call.copy_at_start(recvbuf, total);
  else if (overlap(sendbuf, total, recvbuf, counts[me]))
    return overlap_error();
  call.step(coll, sendbuf, recvbuf, counts, opts, args);
  return RAILCOLL_OK;
}

// ---- personalised data (alltoall(v), scatter(v), gatherv) ----
// The schedules read and write blocks packed in rank order; blocks the caller
// placed elsewhere travel through a packed copy.

// Where blocks lie in a caller's buffer (displs empty: packed), copied from the
// caller's arrays so that they may change once the call returns.
struct Layout {
  std::vector<size_t> counts, displs;
  Layout(const size_t* c, const size_t* d, int n) : counts(c, c + n) {
    if (d) displs.assign(d, d + n);
  }
  int n() const { return static_cast<int>(counts.size()); }
  size_t offset(int r) const {
    if (!displs.empty()) return displs[r];
    size_t at = 0;
    for (int q = 0; q < r; ++q) at += counts[q];
    return at;
  }
  // Empty blocks may sit anywhere.
  bool packed() const {
    if (displs.empty()) return true;
    size_t at = 0;
    for (int r = 0; r < n(); at += counts[r], ++r)
      if (counts[r] && displs[r] != at) return false;
    return true;
  }
  size_t total() const {
    size_t t = 0;
    for (size_t c : counts) t += c;
    return t;
  }
  // Bytes from the buffer's start to the end of its last block.
  size_t extent() const {
    size_t end = 0;
    for (int r = 0; r < n(); ++r)
      if (counts[r]) end = std::max(end, offset(r) + counts[r]);
    return end;
  }
};

// Where a schedule reads a caller's blocks: the buffer itself when packed, else
// a packed copy made at every start.
const void* packed_input(Call& call, const void* buf, const Layout& l) {
  if (l.packed()) return buf;
  char* copy = call.room(l.total());
  call.at_start([copy, buf, l] {
    size_t at = 0;
    for (int r = 0; r < l.n(); at += l.counts[r], ++r)
      memcpy(copy + at, static_cast<const char*>(buf) + l.displs[r], l.counts[r]);
  });
  return copy;
}

// Where a schedule writes a caller's blocks: the buffer itself when packed,
// else a packed room that unpack_output puts in place when the step ends.
void* packed_output(Call& call, void* buf, const Layout& l) {
  return l.packed() ? buf : call.room(l.total());
}
void unpack_output(Call& call, void* room, void* buf, const Layout& l) {
  if (room == buf) return;
  call.at_end([room, buf, l] {
    size_t at = 0;
    for (int r = 0; r < l.n(); at += l.counts[r], ++r)
      memcpy(static_cast<char*>(buf) + l.displs[r], static_cast<char*>(room) + at, l.counts[r]);
  });
}

railcoll_status_t check_counts(const size_t* counts, int n, const char* what) {
  if (!counts) return fail(RAILCOLL_ERR_ARG, std::string(what) + " is NULL");
  uint64_t total = 0;
  for (int r = 0; r < n; ++r) {
    if (counts[r] > railcoll::kMaxBytesPerRank)
      return fail(RAILCOLL_ERR_ARG, std::string(what) + "[" + std::to_string(r) + "] is above the limit of 2^40 bytes");
    total += counts[r];
  }
  if (total > railcoll::kMaxTotalBytes) return fail(RAILCOLL_ERR_ARG, std::string(what) + ": total above 2^48 bytes");
  return RAILCOLL_OK;
}

// alltoallv in two steps: the per-pair counts of every rank (row = source),
// all-gathered from each rank's own row, then the exchange, planned from them
// once they are checked against the counts this rank expects to receive.
void alltoallv_steps(Call& call, const Layout& send, const void* send_at, const Layout& recv, void* recv_at,
                     const railcoll_call_opts_t* opts) {
  const int n = call.size(), me = call.rank();
  auto* row = reinterpret_cast<uint64_t*>(call.room(n * sizeof(uint64_t)));
  std::copy(send.counts.begin(), send.counts.end(), row);
  auto* matrix = reinterpret_cast<uint64_t*>(call.room(static_cast<size_t>(n) * n * sizeof(uint64_t)));
  call.step(railcoll::Collective::Allgather, row, matrix, std::vector<uint64_t>(n, n * sizeof(uint64_t)), nullptr);
  railcoll_comm* c = call.c;
  const std::string algorithm = opts && opts->algorithm ? opts->algorithm : "";
  const std::vector<size_t> expected = recv.counts;
  call.step_planned_later([=](Step& s) {
    for (int src = 0; src < n; ++src)
      if (matrix[static_cast<size_t>(src) * n + me] != expected[src])
        throw railcoll::InputError("alltoallv: rank " + std::to_string(src) + " sends " +
                                   std::to_string(matrix[static_cast<size_t>(src) * n + me]) + " bytes to rank " +
                                   std::to_string(me) + ", which expects " + std::to_string(expected[src]));
    railcoll_call_opts_t named{};
    named.algorithm = algorithm.empty() ? nullptr : algorithm.c_str();
    s.plan = railcoll::capi::choose_plan(c, railcoll::Collective::Alltoallv,
                                         std::vector<uint64_t>(matrix, matrix + static_cast<size_t>(n) * n), &named, {});
    s.bufs = {send_at, recv_at};
  });
}

// With RAILCOLL_ROOT_COUNTS a rank other than the root reads counts[rank]
// alone: its own count in its place, zeros elsewhere (empty: read them all).
std::vector<size_t> own_count_only(Call& call, const size_t* counts, int root, const railcoll_call_opts_t* opts) {
  if (!root_counts(opts) || call.rank() == root || !counts) return {};
  call.took_root_counts = true;
  std::vector<size_t> own(static_cast<size_t>(call.size()), 0);
  own[static_cast<size_t>(call.rank())] = counts[call.rank()];
  return own;
}

// scatterv and gatherv with RAILCOLL_ROOT_COUNTS, in two steps of one request
// as alltoallv: the root's counts broadcast, then the call planned from them
// once this rank's own count (`mine`) is checked against the root's. A
// persistent call keeps them after its first start, where the first step has
// nothing left to do. `counts` are the root's at the root.
void root_counts_steps(Call& call, railcoll::Collective coll, int root, const std::vector<uint64_t>& counts, uint64_t mine,
                       const void* send, void* recv, const railcoll_call_opts_t* opts, const railcoll::AlgoOptions& args) {
  call.took_root_counts = true;
  const int n = call.size(), me = call.rank();
  const size_t row = static_cast<size_t>(n) * sizeof(uint64_t);
  auto* shared = reinterpret_cast<uint64_t*>(call.room(row));
  if (me == root) std::copy(counts.begin(), counts.end(), shared);
  railcoll::AlgoOptions at_root;
  at_root.root = root;
  railcoll_call_opts_t plain{};
  call.step(railcoll::Collective::Bcast, me == root ? shared : nullptr, me == root ? nullptr : shared,
            std::vector<uint64_t>(n, row), &plain, at_root);
  railcoll_comm* c = call.c;
  const std::string algorithm = opts && opts->algorithm ? opts->algorithm : "";
  auto planned = std::make_shared<std::shared_ptr<const railcoll::rt::Plan>>();
  // The broadcast's plan, dropped once the counts are known (persistent starts after the first).
  auto& first = call.last_step();
  first.before = [planned, share_plan = first.plan, old = std::move(first.before)](Step& s) {
    if (old) old(s);
    s.plan = *planned ? nullptr : share_plan;
  };
  call.step_planned_later([=](Step& s) {
    if (!*planned) {
      if (shared[me] != mine)
        throw railcoll::InputError(std::string(railcoll::collective_name(coll)) + ": the root's counts give rank " +
                                   std::to_string(me) + " " + std::to_string(shared[me]) + " bytes, but it passes " +
                                   std::to_string(mine));
      railcoll_call_opts_t named{};
      named.algorithm = algorithm.empty() ? nullptr : algorithm.c_str();
      *planned = railcoll::capi::choose_plan(c, coll, std::vector<uint64_t>(shared, shared + n), &named, args);
    }
    s.plan = *planned;
    s.bufs = {send, recv};
  });
}

// scatter and scatterv: counts[r] bytes for rank r, at displs in the root's sendbuf.
railcoll_status_t scatter_call(Call& call, railcoll::Collective coll, const void* sendbuf, const size_t* counts,
                               const size_t* displs, void* recvbuf, int root, const railcoll_call_opts_t* opts) {
  if (railcoll_status_t st = check_root(call, root)) return st;
  const int n = call.size(), me = call.rank();
  const bool v_root_counts = coll == railcoll::Collective::Scatterv && root_counts(opts);
  const std::vector<size_t> own = v_root_counts ? own_count_only(call, counts, root, opts) : std::vector<size_t>{};
  if (!own.empty()) counts = own.data();
  if (railcoll_status_t st = check_counts(counts, n, "counts")) return st;
  const Layout l(counts, displs, n);
  const bool at_root = me == root, in_place = at_root && in_place_call(opts);
  const size_t send_end = at_root ? l.extent() : 0;
  if (send_end > 0 && !sendbuf) return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL at the root with a non-zero size");
  if (counts[me] > 0 && !recvbuf && !in_place) return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL with a non-zero size");
  if (in_place)  // the root's block stays where it is: its copy goes nowhere
    recvbuf = call.room(counts[me]);
  else if (at_root && overlap(sendbuf, send_end, recvbuf, counts[me]))
    return overlap_error();
  const void* send = at_root ? packed_input(call, sendbuf, l) : nullptr;
  railcoll::AlgoOptions args;
  args.root = root;
  if (v_root_counts)
    root_counts_steps(call, coll, root, std::vector<uint64_t>(counts, counts + n), counts[me], send, recvbuf, opts, args);
  else
    call.step(coll, send, recvbuf, std::vector<uint64_t>(counts, counts + n), opts, args);
  return RAILCOLL_OK;
}

}  // namespace

extern "C" {

RAILCOLL_THREE_FORMS(allgather,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t bytes,
                      const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       return gather_call(call, sendbuf, recvbuf, std::vector<uint64_t>(call.size(), bytes), opts);
                     })

RAILCOLL_THREE_FORMS(allgatherv,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, const size_t* counts,
                      const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       if (!counts) return fail(RAILCOLL_ERR_ARG, "counts is NULL");
                       return gather_call(call, sendbuf, recvbuf,
                                          std::vector<uint64_t>(counts, counts + call.size()), opts);
                     })

RAILCOLL_THREE_FORMS(barrier, (railcoll_comm_t comm), nullptr, [&](Call& call) {
  call.step(railcoll::Collective::Barrier, nullptr, nullptr, std::vector<uint64_t>(call.size(), 0), nullptr);
  return RAILCOLL_OK;
})

RAILCOLL_THREE_FORMS(bcast,
                     (railcoll_comm_t comm, void* buf, size_t bytes, int root, const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       if (railcoll_status_t st = check_root(call, root)) return st;
                       if (bytes > 0 && !buf) return fail(RAILCOLL_ERR_ARG, "buf is NULL with a non-zero size");
                       railcoll::AlgoOptions args;
                       args.root = root;
                       const bool at_root = call.rank() == root;
                       call.step(railcoll::Collective::Bcast, at_root ? buf : nullptr, at_root ? nullptr : buf,
                                 std::vector<uint64_t>(call.size(), bytes), opts, args);
                       return RAILCOLL_OK;
                     })

RAILCOLL_THREE_FORMS(gather,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t bytes, int root,
                      const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       if (railcoll_status_t st = check_root(call, root)) return st;
                       const int me = call.rank(), n = call.size();
                       const bool at_root = me == root, in_place = in_place_call(opts);
                       const uint64_t total = static_cast<uint64_t>(n) * bytes;
                       if (at_root && total > 0 && !recvbuf)
                         return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL at the root with a non-zero size");
                       if (bytes > 0 && !sendbuf && !(in_place && at_root))
                         return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with a non-zero size");
                       const void* send = sendbuf;
                       if (in_place && at_root)  // the root's block is already in place in recvbuf
                         send = call.copy_at_start(static_cast<char*>(recvbuf) + me * bytes, bytes);
                       else if (at_root && overlap(sendbuf, bytes, recvbuf, total))
                         return overlap_error();
                       railcoll::AlgoOptions args;
                       args.root = root;
                       call.step(railcoll::Collective::Gather, send, at_root ? recvbuf : nullptr,
                                 std::vector<uint64_t>(n, bytes), opts, args);
                       return RAILCOLL_OK;
                     })

RAILCOLL_THREE_FORMS(allreduce,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                      railcoll_datatype_t type, railcoll_op_t op, const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       railcoll::AlgoOptions args;
                       uint64_t bytes = 0;
                       if (railcoll_status_t st = reduction_args("allreduce", type, op, &args)) return st;
                       if (!element_bytes(count, args, &bytes))
                         return fail(RAILCOLL_ERR_ARG, "allreduce: count is too large");
                       const bool in_place = in_place_call(opts);
                       if (bytes > 0 && !recvbuf) return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL with a non-zero count");
                       if (bytes > 0 && !sendbuf && !in_place)
                         return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with a non-zero count");
                       const void* send = sendbuf;
                       if (in_place)
                         send = call.copy_at_start(recvbuf, bytes);
                       else if (overlap(sendbuf, bytes, recvbuf, bytes))
                         return overlap_error();
                       call.step(railcoll::Collective::Allreduce, send, recvbuf,
                                 std::vector<uint64_t>(call.size(), bytes), opts, args);
                       return RAILCOLL_OK;
                     })

RAILCOLL_THREE_FORMS(reduce_scatter_block,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                      railcoll_datatype_t type, railcoll_op_t op, const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       railcoll::AlgoOptions args;
                       uint64_t bytes = 0;
                       if (railcoll_status_t st = reduction_args("reduce_scatter_block", type, op, &args)) return st;
                       if (!element_bytes(count, args, &bytes))
                         return fail(RAILCOLL_ERR_ARG, "reduce_scatter_block: count is too large");
                       return reduce_scatter_call(call, railcoll::Collective::ReduceScatterBlock, sendbuf, recvbuf,
                                                  std::vector<uint64_t>(call.size(), bytes), opts, args);
                     })

RAILCOLL_THREE_FORMS(reduce_scatter,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, const size_t* counts,
                      railcoll_datatype_t type, railcoll_op_t op, const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       railcoll::AlgoOptions args;
                       if (railcoll_status_t st = reduction_args("reduce_scatter", type, op, &args)) return st;
                       if (!counts) return fail(RAILCOLL_ERR_ARG, "reduce_scatter: counts is NULL");
                       std::vector<uint64_t> bytes(call.size());
                       for (int r = 0; r < call.size(); ++r)
                         if (!element_bytes(counts[r], args, &bytes[r]))
                           return fail(RAILCOLL_ERR_ARG,
                                       "reduce_scatter: count of rank " + std::to_string(r) + " is too large");
                       return reduce_scatter_call(call, railcoll::Collective::ReduceScatter, sendbuf, recvbuf, bytes,
                                                  opts, args);
                     })

RAILCOLL_THREE_FORMS(reduce,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                      railcoll_datatype_t type, railcoll_op_t op, int root, const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       if (railcoll_status_t st = check_root(call, root)) return st;
                       railcoll::AlgoOptions args;
                       uint64_t bytes = 0;
                       if (railcoll_status_t st = reduction_args("reduce", type, op, &args)) return st;
                       if (!element_bytes(count, args, &bytes))
                         return fail(RAILCOLL_ERR_ARG, "reduce: count is too large");
                       args.root = root;
                       const bool at_root = call.rank() == root, in_place = at_root && in_place_call(opts);
                       if (at_root && bytes > 0 && !recvbuf)
                         return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL at the root with a non-zero count");
                       if (bytes > 0 && !sendbuf && !in_place)
                         return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with a non-zero count");
                       const void* send = sendbuf;
                       if (in_place)
                         send = call.copy_at_start(recvbuf, bytes);
                       else if (at_root && overlap(sendbuf, bytes, recvbuf, bytes))
                         return overlap_error();
                       call.step(railcoll::Collective::Reduce, send, at_root ? recvbuf : nullptr,
                                 std::vector<uint64_t>(call.size(), bytes), opts, args);
                       return RAILCOLL_OK;
                     })

RAILCOLL_THREE_FORMS(alltoall,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t bytes,
                      const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       const int n = call.size();
                       if (bytes > railcoll::kMaxBytesPerRank)
                         return fail(RAILCOLL_ERR_ARG, "alltoall: bytes is above the limit of 2^40");
                       const uint64_t total = n * static_cast<uint64_t>(bytes);
                       const bool in_place = in_place_call(opts);
                       if (total > 0 && !recvbuf) return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL with a non-zero size");
                       if (total > 0 && !sendbuf && !in_place)
                         return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with a non-zero size");
                       const void* send = sendbuf;
                       if (in_place)
                         send = call.copy_at_start(recvbuf, total);
                       else if (overlap(sendbuf, total, recvbuf, total))
                         return overlap_error();
                       call.step(railcoll::Collective::Alltoall, send, recvbuf, std::vector<uint64_t>(n, bytes), opts);
                       return RAILCOLL_OK;
                     })

RAILCOLL_THREE_FORMS(alltoallv,
                     (railcoll_comm_t comm, const void* sendbuf, const size_t* sendcounts, const size_t* sdispls,
                      void* recvbuf, const size_t* recvcounts, const size_t* rdispls,
                      const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       const int n = call.size();
                       const bool in_place = in_place_call(opts);
                       const void* sbuf = sendbuf;
                       const size_t *scounts = sendcounts, *sdisp = sdispls;
                       if (in_place) sbuf = recvbuf, scounts = recvcounts, sdisp = rdispls;  // send what is received
                       if (railcoll_status_t st = check_counts(recvcounts, n, "recvcounts")) return st;
                       if (railcoll_status_t st = check_counts(scounts, n, "sendcounts")) return st;
                       const Layout send(scounts, sdisp, n), recv(recvcounts, rdispls, n);
                       const size_t send_end = send.extent(), recv_end = recv.extent();
                       if (recv_end > 0 && !recvbuf) return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL with non-zero counts");
                       if (send_end > 0 && !sbuf) return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with non-zero counts");
                       if (!in_place && overlap(sbuf, send_end, recvbuf, recv_end)) return overlap_error();
                       const void* send_at = packed_input(call, sbuf, send);
                       if (in_place && send_at == sbuf) send_at = call.copy_at_start(recvbuf, send_end);  // recv overwrites it
                       void* recv_at = packed_output(call, recvbuf, recv);
                       alltoallv_steps(call, send, send_at, recv, recv_at, opts);
                       unpack_output(call, recv_at, recvbuf, recv);
                       return RAILCOLL_OK;
                     })

RAILCOLL_THREE_FORMS(scatter,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t bytes, int root,
                      const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       const std::vector<size_t> counts(call.size(), bytes);
                       return scatter_call(call, railcoll::Collective::Scatter, sendbuf, counts.data(), nullptr,
                                           recvbuf, root, opts);
                     })

RAILCOLL_THREE_FORMS(scatterv,
                     (railcoll_comm_t comm, const void* sendbuf, const size_t* counts, const size_t* displs,
                      void* recvbuf, int root, const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       return scatter_call(call, railcoll::Collective::Scatterv, sendbuf, counts, displs, recvbuf,
                                           root, opts);
                     })

RAILCOLL_THREE_FORMS(gatherv,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, const size_t* counts,
                      const size_t* displs, int root, const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       if (railcoll_status_t st = check_root(call, root)) return st;
                       const int n = call.size(), me = call.rank();
                       const std::vector<size_t> own = own_count_only(call, counts, root, opts);
                       const size_t* sizes = own.empty() ? counts : own.data();
                       if (railcoll_status_t st = check_counts(sizes, n, "counts")) return st;
                       const Layout l(sizes, displs, n);
                       const bool at_root = me == root, in_place = at_root && in_place_call(opts);
                       const size_t recv_end = at_root ? l.extent() : 0;
                       if (recv_end > 0 && !recvbuf)
                         return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL at the root with a non-zero size");
                       if (sizes[me] > 0 && !sendbuf && !in_place)
                         return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with a non-zero size");
                       const void* send = sendbuf;
                       if (in_place)  // the root's block is already in place in recvbuf
                         send = call.copy_at_start(static_cast<char*>(recvbuf) + l.offset(me), sizes[me]);
                       else if (at_root && overlap(sendbuf, sizes[me], recvbuf, recv_end))
                         return overlap_error();
                       void* recv = at_root ? packed_output(call, recvbuf, l) : nullptr;
                       railcoll::AlgoOptions args;
                       args.root = root;
                       const std::vector<uint64_t> bytes(sizes, sizes + n);
                       if (root_counts(opts))
                         root_counts_steps(call, railcoll::Collective::Gatherv, root, bytes, sizes[me], send, recv, opts,
                                           args);
                       else
                         call.step(railcoll::Collective::Gatherv, send, recv, bytes, opts, args);
                       if (at_root) unpack_output(call, recv, recvbuf, l);
                       return RAILCOLL_OK;
                     })

}  // extern "C"
