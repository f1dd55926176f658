// The communicator part of the C API over rt::Comm.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "capi/capi_internal.hpp"
#include "capi/comm_handle.hpp"
#include "core/errors.hpp"
#include "core/registry.hpp"
#include "railcoll/railcoll.h"
#include "runtime/comm.hpp"
#include "select/select.hpp"

namespace railcoll::capi {

railcoll_status_t make_handle(railcoll_comm_t* out, const char* fn, const MakeComm& make) {
  return guarded([&]() -> railcoll_status_t {
    if (!out) return fail(RAILCOLL_ERR_ARG, std::string(fn) + ": output pointer is NULL");
    *out = nullptr;
    auto c = std::make_unique<railcoll_comm>();
    railcoll_comm* shell = c.get();
    c->comm = make([shell] { shell->selector = Selector::from_environment(); });
    // Never freed (see railcoll_comm), and reachable from here, so that leak
    // checkers count the shells of destroyed communicators as kept.
    static std::mutex mu;
    static auto* handles = new std::vector<railcoll_comm*>;
    std::lock_guard<std::mutex> lock(mu);
    handles->push_back(c.get());
    *out = c.release();
    return RAILCOLL_OK;
  });
}

railcoll_comm* live(railcoll_comm_t comm, const char* fn) {
  if (!comm) return fail(RAILCOLL_ERR_ARG, std::string(fn) + ": communicator is NULL"), nullptr;
  if (!comm->comm)
    return fail(RAILCOLL_ERR_ARG, std::string(fn) + ": the communicator was destroyed (railcoll_comm_destroy)"), nullptr;
  return comm;
}

}  // namespace railcoll::capi

railcoll_comm_t railcoll::capi::adopt_comm(railcoll::Selector selector, std::unique_ptr<railcoll::rt::Comm> comm) {
  auto c = std::make_unique<railcoll_comm>();
  c->selector = std::move(selector);
  c->comm = std::move(comm);
  return c.release();
}

namespace {

using railcoll::capi::fail;
using railcoll::capi::guarded;
using railcoll::capi::live;

// What a call runs: the algorithm and its plan.
struct Chosen {
  std::string algorithm;
  std::shared_ptr<const railcoll::rt::Plan> plan;
};

// Says `what` once per communicator, on rank 0 only.
void report_once(railcoll_comm* c, const std::string& key, const std::string& what) {
  if (c->comm->rank() == 0 && c->reported.insert(key).second) fprintf(stderr, "railcoll: %s\n", what.c_str());
}

// A call's candidates' plans (cached by the communicator), and whether they fit.
struct Planner {
  railcoll_comm* c;
  railcoll::Collective collective;
  const std::vector<uint64_t>& counts;
  const railcoll::AlgoOptions& args;
  Chosen out;

  void plan(const std::string& name) {
    out.algorithm = railcoll::software_equivalent(collective, name);
    out.plan = c->comm->plan(collective, out.algorithm, counts, args);
  }
  std::string unfit(const std::string& name) {
    try {
      plan(name);
      return c->comm->unfit(*out.plan);
    } catch (const railcoll::Error& e) {
      out.plan.reset();
      return e.what();
    }
  }
};

// The algorithm for a call: the per-call option, else RAILCOLL_<COLL>_ALGO, else
// the tuning file, else the default rules (src/select/select.hpp), then the
// software form of a hardware algorithm. A rule's choice whose schedule the
// nodes' shared memory cannot hold (RAILCOLL_SHM_MIB) is passed over for one
// that fits; every rank knows every node's capacity, so all pick alike.
Chosen choose(railcoll_comm* c, railcoll::Collective collective, const std::vector<uint64_t>& counts,
              const railcoll_call_opts_t* opts, const railcoll::AlgoOptions& args) {
  uint64_t largest = 0;
  for (auto n : counts) largest = std::max(largest, n);
  Planner planner{c, collective, counts, args, {}};
  const std::string requested = opts && opts->algorithm ? opts->algorithm : "";
  const railcoll::Choice choice = c->selector.choose(
      collective, c->comm->topo(), largest, requested,
      [p = &planner](const std::string& name) { return p->unfit(name); });  // one pointer: no allocation
  const std::string software = railcoll::software_equivalent(collective, choice.algorithm);
  if (!planner.out.plan || planner.out.algorithm != software) planner.plan(choice.algorithm);
  if (software == choice.algorithm && choice.passed_over.empty()) return std::move(planner.out);
  const std::string coll = railcoll::collective_name(collective);
  if (software != choice.algorithm)
    report_once(c, coll + "/" + choice.algorithm,
                coll + "/" + choice.algorithm + " needs network hardware this cluster lacks; running " + coll + "/" +
                    software + " instead");
  if (!choice.passed_over.empty())
    report_once(c, coll + " " + choice.passed_over.substr(0, choice.passed_over.find(' ')) + " -> " + software,
                coll + ": " + choice.passed_over + "; running " + coll + "/" + software + " (" + choice.origin +
                    ") instead");
  return std::move(planner.out);
}

railcoll_status_t run(railcoll_comm* c, railcoll::Collective coll, const void* send, void* recv,
                      const std::vector<uint64_t>& counts, const railcoll_call_opts_t* opts,
                      const railcoll::AlgoOptions& args = {}) {
  Chosen chosen = choose(c, coll, counts, opts, args);
  c->comm->run(*chosen.plan, {send, recv});
  return RAILCOLL_OK;
}

// A collective's body on a live handle. A failure before the call began (a
// bad argument, an unknown algorithm, a call the nodes' memory cannot hold) is
// this rank's alone: it tells its peers it does not join, and they fail the
// call, or their next one, with RAILCOLL_ERR_PEER naming it, instead of
// waiting for it until the deadline. The communicator is then broken on every
// rank, as after any failed collective.
template <class Body>
railcoll_status_t collective(railcoll_comm_t handle, const char* fn, const railcoll_call_opts_t* opts, Body body) {
  return guarded([&]() -> railcoll_status_t {
    railcoll_comm* c = live(handle, fn);
    if (!c) return RAILCOLL_ERR_ARG;
    railcoll_status_t st = guarded([&]() -> railcoll_status_t {
      if (opts && (opts->flags & ~RAILCOLL_IN_PLACE)) {
        char bits[32];
        snprintf(bits, sizeof bits, "0x%x", opts->flags & ~RAILCOLL_IN_PLACE);
        return fail(RAILCOLL_ERR_ARG, std::string(fn) + ": unknown option flags " + bits + " (RAILCOLL_IN_PLACE is 0x1)");
      }
      return body(c);
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

bool overlap(const void* a, size_t alen, const void* b, size_t blen) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return alen && blen && x < y + blen && y < x + alen;
}

// An in-place call's input lives in recvbuf, which the schedule overwrites while
// it may still read the input: the runtime gets a copy as its send buffer.
const void* input_copy(void* recvbuf, uint64_t offset, uint64_t bytes, std::vector<char>* copy) {
  copy->assign(static_cast<char*>(recvbuf) + offset, static_cast<char*>(recvbuf) + offset + bytes);
  return copy->data();
}

railcoll_status_t check_root(railcoll_comm* comm, int root) {
  if (root < 0 || root >= comm->comm->size())
    return fail(RAILCOLL_ERR_ARG, "root " + std::to_string(root) + " is out of range (" +
                                      std::to_string(comm->comm->size()) + " ranks)");
  return RAILCOLL_OK;
}

railcoll_status_t gather_call(railcoll_comm* comm, const void* sendbuf, void* recvbuf, std::vector<uint64_t> counts,
                              const railcoll_call_opts_t* opts) {
  int me = comm->comm->rank();
  uint64_t total = 0, displ = 0;
  for (int r = 0; r < static_cast<int>(counts.size()); ++r) {
    if (r == me) displ = total;
    total += counts[r];
  }
  bool in_place = opts && (opts->flags & RAILCOLL_IN_PLACE);
  if (total > 0 && !recvbuf) return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL with a non-zero size");
  if (counts[me] > 0 && !sendbuf && !in_place) return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with a non-zero size");
  std::vector<char> own;
  if (in_place) {
    sendbuf = input_copy(recvbuf, displ, counts[me], &own);
  } else if (overlap(sendbuf, counts[me], recvbuf, total)) {
    return fail(RAILCOLL_ERR_ARG, "sendbuf and recvbuf overlap (use RAILCOLL_IN_PLACE for an in-place call)");
  }
  return run(comm, railcoll::Collective::Allgather, sendbuf, recvbuf, counts, opts);
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
railcoll_status_t reduce_scatter_call(railcoll_comm* c, railcoll::Collective coll, const void* sendbuf, void* recvbuf,
                                      const std::vector<uint64_t>& counts, const railcoll_call_opts_t* opts,
                                      const railcoll::AlgoOptions& args) {
  const int me = c->comm->rank();
  uint64_t total = 0;
  for (uint64_t n : counts) total += n;
  const bool in_place = opts && (opts->flags & RAILCOLL_IN_PLACE);
  if ((in_place ? total : counts[me]) > 0 && !recvbuf) return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL with a non-zero count");
  if (total > 0 && !sendbuf && !in_place) return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with a non-zero count");
  std::vector<char> input;
  if (in_place) {
    sendbuf = input_copy(recvbuf, 0, total, &input);
  } else if (overlap(sendbuf, total, recvbuf, counts[me])) {
    return fail(RAILCOLL_ERR_ARG, "sendbuf and recvbuf overlap (use RAILCOLL_IN_PLACE for an in-place call)");
  }
  return run(c, coll, sendbuf, recvbuf, counts, opts, args);
}

// ---- personalised data (alltoall(v), scatter(v), gatherv) ----
// The schedules read and write blocks packed in rank order; blocks the caller
// placed elsewhere travel through a packed copy.

// displs NULL: packed. Empty blocks may sit anywhere.
bool is_packed(const size_t* counts, const size_t* displs, int n) {
  if (!displs) return true;
  size_t at = 0;
  for (int r = 0; r < n; at += counts[r], ++r)
    if (counts[r] && displs[r] != at) return false;
  return true;
}

size_t block_offset(const size_t* counts, const size_t* displs, int r) {
  if (displs) return displs[r];
  size_t at = 0;
  for (int q = 0; q < r; ++q) at += counts[q];
  return at;
}

// Bytes from the buffer's start to the end of its last block.
size_t extent(const size_t* counts, const size_t* displs, int n) {
  size_t end = 0;
  for (int r = 0; r < n; ++r)
    if (counts[r]) end = std::max(end, block_offset(counts, displs, r) + counts[r]);
  return end;
}

// Where a schedule reads a caller's blocks: the buffer itself when packed, else a packed copy.
const void* packed_input(const void* buf, const size_t* counts, const size_t* displs, int n, std::vector<char>* copy) {
  if (is_packed(counts, displs, n)) return buf;
  for (int r = 0; r < n; ++r) {
    const char* at = static_cast<const char*>(buf) + displs[r];
    copy->insert(copy->end(), at, at + counts[r]);
  }
  return copy->data();
}

// Where a schedule writes a caller's blocks: the buffer itself when packed, else
// room for a packed copy that unpack_output puts in place.
void* packed_output(void* buf, const size_t* counts, const size_t* displs, int n, std::vector<char>* room) {
  if (is_packed(counts, displs, n)) return buf;
  size_t total = 0;
  for (int r = 0; r < n; ++r) total += counts[r];
  room->assign(total, 0);
  return room->data();
}

void unpack_output(const std::vector<char>& room, void* buf, const size_t* counts, const size_t* displs, int n) {
  if (room.empty()) return;
  size_t at = 0;
  for (int r = 0; r < n; at += counts[r], ++r) memcpy(static_cast<char*>(buf) + displs[r], room.data() + at, counts[r]);
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

bool in_place_call(const railcoll_call_opts_t* opts) { return opts && (opts->flags & RAILCOLL_IN_PLACE); }

// alltoall(v): the per-pair counts of every rank (row = source), from each
// rank's own row, checked against the counts this rank expects to receive.
railcoll_status_t pair_counts(railcoll_comm* c, const size_t* sendcounts, const size_t* recvcounts,
                              std::vector<uint64_t>* matrix) {
  const int n = c->comm->size(), me = c->comm->rank();
  std::vector<uint64_t> row(sendcounts, sendcounts + n);
  matrix->assign(static_cast<size_t>(n) * n, 0);
  if (railcoll_status_t st = run(c, railcoll::Collective::Allgather, row.data(), matrix->data(),
                                 std::vector<uint64_t>(n, n * sizeof(uint64_t)), nullptr))
    return st;
  for (int s = 0; s < n; ++s)
    if ((*matrix)[static_cast<size_t>(s) * n + me] != recvcounts[s])
      return fail(RAILCOLL_ERR_ARG, "alltoallv: rank " + std::to_string(s) + " sends " +
                                        std::to_string((*matrix)[static_cast<size_t>(s) * n + me]) + " bytes to rank " +
                                        std::to_string(me) + ", which expects " + std::to_string(recvcounts[s]));
  return RAILCOLL_OK;
}

int query(railcoll_comm_t handle, const char* fn, int (*what)(const railcoll::rt::Comm&)) {
  railcoll::capi::clear_error();
  railcoll_comm* c = live(handle, fn);
  return c ? what(*c->comm) : -1;
}

// A communicator's check when its settings come from the environment: a wrong
// RAILCOLL_* setting (kept by bootstrap_from_env) fails set-up on every rank,
// like a wrong algorithm name; then the handle's own check.
railcoll::rt::Comm::Check settings_then(const std::exception_ptr& bad_setting, const railcoll::rt::Comm::Check& check) {
  return [bad_setting, check] {
    if (bad_setting) std::rethrow_exception(bad_setting);
    check();
  };
}

}  // namespace

extern "C" {

railcoll_status_t railcoll_comm_init(railcoll_comm_t* out) {
  using railcoll::rt::Comm;
  return railcoll::capi::make_handle(out, "railcoll_comm_init", [](const Comm::Check& check) {
    std::exception_ptr bad_setting;
    railcoll::rt::Bootstrap b = railcoll::rt::bootstrap_from_env(&bad_setting);
    return std::make_unique<Comm>(b, settings_then(bad_setting, check));
  });
}

railcoll_status_t railcoll_comm_init_explicit(railcoll_comm_t* out, int rank, int size, const char* store,
                                              const char* job_id) {
  using railcoll::rt::Comm;
  const char* fn = "railcoll_comm_init_explicit";
  return railcoll::capi::make_handle(out, fn, [&](const Comm::Check& check) {
    if (size < 1 || rank < 0 || rank >= size)
      throw railcoll::InputError(std::string(fn) + ": rank " + std::to_string(rank) + " is not in [0, size " +
                                 std::to_string(size) + ")");
    if (size > 1 && (!store || !*store))
      throw railcoll::InputError(std::string(fn) + ": a store host:port is needed for more than one rank");
    if (!job_id || !*job_id) throw railcoll::InputError(std::string(fn) + ": job_id is empty");
    std::exception_ptr bad_setting;
    railcoll::rt::Bootstrap b = railcoll::rt::settings_from_env(&bad_setting);
    b.rank = rank;
    b.size = size;
    b.store = store ? store : "";
    if (size > 1) railcoll::rt::split_host_port(b.store);  // a bad address fails here, as ARG
    b.job_id = job_id;
    b.source = fn;
    return std::make_unique<Comm>(b, settings_then(bad_setting, check));
  });
}

railcoll_status_t railcoll_comm_destroy(railcoll_comm_t comm) {
  return guarded([&]() -> railcoll_status_t {
    railcoll_comm* c = live(comm, "railcoll_comm_destroy");
    if (!c) return RAILCOLL_ERR_ARG;
    c->comm.reset();  // the shell stays: see railcoll_comm
    c->selector = railcoll::Selector();
    c->reported.clear();
    return RAILCOLL_OK;
  });
}

int railcoll_comm_rank(railcoll_comm_t c) {
  return query(c, "railcoll_comm_rank", [](const railcoll::rt::Comm& m) { return m.rank(); });
}
int railcoll_comm_size(railcoll_comm_t c) {
  return query(c, "railcoll_comm_size", [](const railcoll::rt::Comm& m) { return m.size(); });
}
int railcoll_comm_nodes(railcoll_comm_t c) {
  return query(c, "railcoll_comm_nodes", [](const railcoll::rt::Comm& m) { return m.topo().nnodes(); });
}
int railcoll_comm_rails(railcoll_comm_t c) {
  return query(c, "railcoll_comm_rails", [](const railcoll::rt::Comm& m) { return m.rails(); });
}
int railcoll_comm_rails_up(railcoll_comm_t c) {
  return query(c, "railcoll_comm_rails_up", [](const railcoll::rt::Comm& m) { return m.rails_up(); });
}
const char* railcoll_comm_transport(railcoll_comm_t c) {
  railcoll::capi::clear_error();
  railcoll_comm* m = live(c, "railcoll_comm_transport");
  if (!m) return nullptr;
  m->transport = m->comm->transport();
  return m->transport.c_str();
}

railcoll_status_t railcoll_allgather(railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t bytes,
                                     const railcoll_call_opts_t* opts) {
  return collective(comm, "railcoll_allgather", opts, [&](railcoll_comm* c) {
    return gather_call(c, sendbuf, recvbuf, std::vector<uint64_t>(c->comm->size(), bytes), opts);
  });
}

railcoll_status_t railcoll_allgatherv(railcoll_comm_t comm, const void* sendbuf, void* recvbuf, const size_t* counts,
                                      const railcoll_call_opts_t* opts) {
  return collective(comm, "railcoll_allgatherv", opts, [&](railcoll_comm* c) {
    if (!counts) return fail(RAILCOLL_ERR_ARG, "counts is NULL");
    return gather_call(c, sendbuf, recvbuf, std::vector<uint64_t>(counts, counts + c->comm->size()), opts);
  });
}

railcoll_status_t railcoll_barrier(railcoll_comm_t comm) {
  return collective(comm, "railcoll_barrier", nullptr, [&](railcoll_comm* c) {
    return run(c, railcoll::Collective::Barrier, nullptr, nullptr, std::vector<uint64_t>(c->comm->size(), 0), nullptr);
  });
}

railcoll_status_t railcoll_bcast(railcoll_comm_t comm, void* buf, size_t bytes, int root,
                                 const railcoll_call_opts_t* opts) {
  return collective(comm, "railcoll_bcast", opts, [&](railcoll_comm* c) {
    if (railcoll_status_t st = check_root(c, root)) return st;
    if (bytes > 0 && !buf) return fail(RAILCOLL_ERR_ARG, "buf is NULL with a non-zero size");
    railcoll::AlgoOptions args;
    args.root = root;
    bool at_root = c->comm->rank() == root;
    return run(c, railcoll::Collective::Bcast, at_root ? buf : nullptr, at_root ? nullptr : buf,
               std::vector<uint64_t>(c->comm->size(), bytes), opts, args);
  });
}

railcoll_status_t railcoll_gather(railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t bytes,
                                  int root, const railcoll_call_opts_t* opts) {
  return collective(comm, "railcoll_gather", opts, [&](railcoll_comm* c) {
    if (railcoll_status_t st = check_root(c, root)) return st;
    int me = c->comm->rank(), n = c->comm->size();
    bool at_root = me == root, in_place = opts && (opts->flags & RAILCOLL_IN_PLACE);
    uint64_t total = static_cast<uint64_t>(n) * bytes;
    if (at_root && total > 0 && !recvbuf) return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL at the root with a non-zero size");
    if (bytes > 0 && !sendbuf && !(in_place && at_root))
      return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with a non-zero size");
    std::vector<char> own;
    if (in_place && at_root) {  // the root's block is already in place in recvbuf
      sendbuf = input_copy(recvbuf, me * bytes, bytes, &own);
    } else if (at_root && overlap(sendbuf, bytes, recvbuf, total)) {
      return fail(RAILCOLL_ERR_ARG, "sendbuf and recvbuf overlap (use RAILCOLL_IN_PLACE for an in-place call)");
    }
    railcoll::AlgoOptions args;
    args.root = root;
    return run(c, railcoll::Collective::Gather, sendbuf, at_root ? recvbuf : nullptr, std::vector<uint64_t>(n, bytes),
               opts, args);
  });
}

railcoll_status_t railcoll_allreduce(railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                                     railcoll_datatype_t type, railcoll_op_t op, const railcoll_call_opts_t* opts) {
  return collective(comm, "railcoll_allreduce", opts, [&](railcoll_comm* c) {
    railcoll::AlgoOptions args;
    uint64_t bytes = 0;
    if (railcoll_status_t st = reduction_args("allreduce", type, op, &args)) return st;
    if (!element_bytes(count, args, &bytes)) return fail(RAILCOLL_ERR_ARG, "allreduce: count is too large");
    bool in_place = opts && (opts->flags & RAILCOLL_IN_PLACE);
    if (bytes > 0 && !recvbuf) return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL with a non-zero count");
    if (bytes > 0 && !sendbuf && !in_place) return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with a non-zero count");
    std::vector<char> input;
    if (in_place) {
      sendbuf = input_copy(recvbuf, 0, bytes, &input);
    } else if (overlap(sendbuf, bytes, recvbuf, bytes)) {
      return fail(RAILCOLL_ERR_ARG, "sendbuf and recvbuf overlap (use RAILCOLL_IN_PLACE for an in-place call)");
    }
    return run(c, railcoll::Collective::Allreduce, sendbuf, recvbuf, std::vector<uint64_t>(c->comm->size(), bytes),
               opts, args);
  });
}

railcoll_status_t railcoll_reduce_scatter_block(railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                                                railcoll_datatype_t type, railcoll_op_t op,
                                                const railcoll_call_opts_t* opts) {
  return collective(comm, "railcoll_reduce_scatter_block", opts, [&](railcoll_comm* c) {
    railcoll::AlgoOptions args;
    uint64_t bytes = 0;
    if (railcoll_status_t st = reduction_args("reduce_scatter_block", type, op, &args)) return st;
    if (!element_bytes(count, args, &bytes)) return fail(RAILCOLL_ERR_ARG, "reduce_scatter_block: count is too large");
    return reduce_scatter_call(c, railcoll::Collective::ReduceScatterBlock, sendbuf, recvbuf,
                               std::vector<uint64_t>(c->comm->size(), bytes), opts, args);
  });
}

railcoll_status_t railcoll_reduce_scatter(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                                          const size_t* counts, railcoll_datatype_t type, railcoll_op_t op,
                                          const railcoll_call_opts_t* opts) {
  return collective(comm, "railcoll_reduce_scatter", opts, [&](railcoll_comm* c) {
    railcoll::AlgoOptions args;
    if (railcoll_status_t st = reduction_args("reduce_scatter", type, op, &args)) return st;
    if (!counts) return fail(RAILCOLL_ERR_ARG, "reduce_scatter: counts is NULL");
    std::vector<uint64_t> bytes(c->comm->size());
    for (int r = 0; r < c->comm->size(); ++r)
      if (!element_bytes(counts[r], args, &bytes[r]))
        return fail(RAILCOLL_ERR_ARG, "reduce_scatter: count of rank " + std::to_string(r) + " is too large");
    return reduce_scatter_call(c, railcoll::Collective::ReduceScatter, sendbuf, recvbuf, bytes, opts, args);
  });
}

railcoll_status_t railcoll_reduce(railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                                  railcoll_datatype_t type, railcoll_op_t op, int root,
                                  const railcoll_call_opts_t* opts) {
  return collective(comm, "railcoll_reduce", opts, [&](railcoll_comm* c) {
    if (railcoll_status_t st = check_root(c, root)) return st;
    railcoll::AlgoOptions args;
    uint64_t bytes = 0;
    if (railcoll_status_t st = reduction_args("reduce", type, op, &args)) return st;
    if (!element_bytes(count, args, &bytes)) return fail(RAILCOLL_ERR_ARG, "reduce: count is too large");
    args.root = root;
    const bool at_root = c->comm->rank() == root, in_place = at_root && opts && (opts->flags & RAILCOLL_IN_PLACE);
    if (at_root && bytes > 0 && !recvbuf) return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL at the root with a non-zero count");
    if (bytes > 0 && !sendbuf && !in_place) return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with a non-zero count");
    std::vector<char> input;
    if (in_place) {
      sendbuf = input_copy(recvbuf, 0, bytes, &input);
    } else if (at_root && overlap(sendbuf, bytes, recvbuf, bytes)) {
      return fail(RAILCOLL_ERR_ARG, "sendbuf and recvbuf overlap (use RAILCOLL_IN_PLACE for an in-place call)");
    }
    return run(c, railcoll::Collective::Reduce, sendbuf, at_root ? recvbuf : nullptr,
               std::vector<uint64_t>(c->comm->size(), bytes), opts, args);
  });
}

railcoll_status_t railcoll_alltoall(railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t bytes,
                                    const railcoll_call_opts_t* opts) {
  return collective(comm, "railcoll_alltoall", opts, [&](railcoll_comm* c) {
    const int n = c->comm->size();
    if (bytes > railcoll::kMaxBytesPerRank) return fail(RAILCOLL_ERR_ARG, "alltoall: bytes is above the limit of 2^40");
    const uint64_t total = n * static_cast<uint64_t>(bytes);
    const bool in_place = in_place_call(opts);
    if (total > 0 && !recvbuf) return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL with a non-zero size");
    if (total > 0 && !sendbuf && !in_place) return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with a non-zero size");
    std::vector<char> input;
    if (in_place) {
      sendbuf = input_copy(recvbuf, 0, total, &input);
    } else if (overlap(sendbuf, total, recvbuf, total)) {
      return fail(RAILCOLL_ERR_ARG, "sendbuf and recvbuf overlap (use RAILCOLL_IN_PLACE for an in-place call)");
    }
    return run(c, railcoll::Collective::Alltoall, sendbuf, recvbuf, std::vector<uint64_t>(n, bytes), opts);
  });
}

railcoll_status_t railcoll_alltoallv(railcoll_comm_t comm, const void* sendbuf, const size_t* sendcounts,
                                     const size_t* sdispls, void* recvbuf, const size_t* recvcounts,
                                     const size_t* rdispls, const railcoll_call_opts_t* opts) {
  return collective(comm, "railcoll_alltoallv", opts, [&](railcoll_comm* c) {
    const int n = c->comm->size();
    const bool in_place = in_place_call(opts);
    if (in_place) sendbuf = recvbuf, sendcounts = recvcounts, sdispls = rdispls;  // send what is received
    if (railcoll_status_t st = check_counts(recvcounts, n, "recvcounts")) return st;
    if (railcoll_status_t st = check_counts(sendcounts, n, "sendcounts")) return st;
    const size_t send_end = extent(sendcounts, sdispls, n), recv_end = extent(recvcounts, rdispls, n);
    if (recv_end > 0 && !recvbuf) return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL with non-zero counts");
    if (send_end > 0 && !sendbuf) return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with non-zero counts");
    if (!in_place && overlap(sendbuf, send_end, recvbuf, recv_end))
      return fail(RAILCOLL_ERR_ARG, "sendbuf and recvbuf overlap (use RAILCOLL_IN_PLACE for an in-place call)");
    std::vector<uint64_t> matrix;
    if (railcoll_status_t st = pair_counts(c, sendcounts, recvcounts, &matrix)) return st;
    std::vector<char> input, output;
    const void* send = packed_input(sendbuf, sendcounts, sdispls, n, &input);
    if (in_place && send == sendbuf) send = input_copy(recvbuf, 0, send_end, &input);  // recv overwrites it
    void* recv = packed_output(recvbuf, recvcounts, rdispls, n, &output);
    if (railcoll_status_t st = run(c, railcoll::Collective::Alltoallv, send, recv, matrix, opts)) return st;
    unpack_output(output, recvbuf, recvcounts, rdispls, n);
    return RAILCOLL_OK;
  });
}

namespace {

// scatter and scatterv: counts[r] bytes for rank r, at displs in the root's sendbuf.
railcoll_status_t scatter_call(railcoll_comm* c, railcoll::Collective coll, const void* sendbuf, const size_t* counts,
                               const size_t* displs, void* recvbuf, int root, const railcoll_call_opts_t* opts) {
  if (railcoll_status_t st = check_root(c, root)) return st;
  const int n = c->comm->size(), me = c->comm->rank();
  if (railcoll_status_t st = check_counts(counts, n, "counts")) return st;
  const bool at_root = me == root, in_place = at_root && in_place_call(opts);
  const size_t send_end = at_root ? extent(counts, displs, n) : 0;
  if (send_end > 0 && !sendbuf) return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL at the root with a non-zero size");
  if (counts[me] > 0 && !recvbuf && !in_place) return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL with a non-zero size");
  std::vector<char> input, discard;
  if (in_place) {  // the root's block stays where it is: its copy goes nowhere
    discard.assign(counts[me], 0);
    recvbuf = discard.data();
  } else if (at_root && overlap(sendbuf, send_end, recvbuf, counts[me])) {
    return fail(RAILCOLL_ERR_ARG, "sendbuf and recvbuf overlap (use RAILCOLL_IN_PLACE for an in-place call)");
  }
  const void* send = at_root ? packed_input(sendbuf, counts, displs, n, &input) : nullptr;
  railcoll::AlgoOptions args;
  args.root = root;
  return run(c, coll, send, recvbuf, std::vector<uint64_t>(counts, counts + n), opts, args);
}

}  // namespace

railcoll_status_t railcoll_scatter(railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t bytes, int root,
                                   const railcoll_call_opts_t* opts) {
  return collective(comm, "railcoll_scatter", opts, [&](railcoll_comm* c) {
    const std::vector<size_t> counts(c->comm->size(), bytes);
    return scatter_call(c, railcoll::Collective::Scatter, sendbuf, counts.data(), nullptr, recvbuf, root, opts);
  });
}

railcoll_status_t railcoll_scatterv(railcoll_comm_t comm, const void* sendbuf, const size_t* counts,
                                    const size_t* displs, void* recvbuf, int root, const railcoll_call_opts_t* opts) {
  return collective(comm, "railcoll_scatterv", opts, [&](railcoll_comm* c) {
    return scatter_call(c, railcoll::Collective::Scatterv, sendbuf, counts, displs, recvbuf, root, opts);
  });
}

railcoll_status_t railcoll_gatherv(railcoll_comm_t comm, const void* sendbuf, void* recvbuf, const size_t* counts,
                                   const size_t* displs, int root, const railcoll_call_opts_t* opts) {
  return collective(comm, "railcoll_gatherv", opts, [&](railcoll_comm* c) {
    if (railcoll_status_t st = check_root(c, root)) return st;
    const int n = c->comm->size(), me = c->comm->rank();
    if (railcoll_status_t st = check_counts(counts, n, "counts")) return st;
    const bool at_root = me == root, in_place = at_root && in_place_call(opts);
    const size_t recv_end = at_root ? extent(counts, displs, n) : 0;
    if (recv_end > 0 && !recvbuf) return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL at the root with a non-zero size");
    if (counts[me] > 0 && !sendbuf && !in_place) return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with a non-zero size");
    std::vector<char> own, output;
    if (in_place) {  // the root's block is already in place in recvbuf
      sendbuf = input_copy(recvbuf, block_offset(counts, displs, me), counts[me], &own);
    } else if (at_root && overlap(sendbuf, counts[me], recvbuf, recv_end)) {
      return fail(RAILCOLL_ERR_ARG, "sendbuf and recvbuf overlap (use RAILCOLL_IN_PLACE for an in-place call)");
    }
    void* recv = at_root ? packed_output(recvbuf, counts, displs, n, &output) : nullptr;
    railcoll::AlgoOptions args;
    args.root = root;
    if (railcoll_status_t st =
            run(c, railcoll::Collective::Gatherv, sendbuf, recv, std::vector<uint64_t>(counts, counts + n), opts, args))
      return st;
    if (at_root) unpack_output(output, recvbuf, counts, displs, n);
    return RAILCOLL_OK;
  });
}

const char* railcoll_algorithm_for(railcoll_comm_t comm, const char* collective, size_t bytes,
                                   const railcoll_call_opts_t* opts) {
  const char* fn = "railcoll_algorithm_for";
  const char* name = nullptr;
  guarded([&]() -> railcoll_status_t {
    railcoll_comm* c = live(comm, fn);
    if (!c) return RAILCOLL_ERR_ARG;
    if (!collective) return fail(RAILCOLL_ERR_ARG, std::string(fn) + ": collective is NULL");
    railcoll::Collective coll = railcoll::collective_from_name(collective);
    // The registry's own copy of the name: valid for the life of the library.
    name = railcoll::find_algorithm(coll, choose(c, coll, std::vector<uint64_t>(c->comm->size(), bytes), opts,
                                                 railcoll::call_defaults(coll))
                                              .algorithm)
               ->name;
    return RAILCOLL_OK;
  });
  return name;
}

}  // extern "C"
