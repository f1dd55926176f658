// The communicator part of the C API over rt::Comm.
#include <cstdio>
#include <cstring>
#include <set>
#include <memory>
#include <new>
#include <string>

#include "capi/capi_internal.hpp"
#include "capi/comm_handle.hpp"
#include "core/errors.hpp"
#include "core/registry.hpp"
#include "railcoll/railcoll.h"
#include "runtime/comm.hpp"
#include "select/select.hpp"

struct railcoll_comm {
  std::unique_ptr<railcoll::rt::Comm> comm;
  // RAILCOLL_<COLL>_ALGO checked and RAILCOLL_TUNING read when the communicator
  // is made: a wrong name fails railcoll_comm_init, not the first call.
  railcoll::Selector selector;
  std::set<std::string> warned_hardware;  // hardware algorithms already reported as substituted
};

railcoll_comm_t railcoll::capi::adopt_comm(railcoll::Selector selector, std::unique_ptr<railcoll::rt::Comm> comm) {
  auto c = std::make_unique<railcoll_comm>();
  c->selector = std::move(selector);
  c->comm = std::move(comm);
  return c.release();
}

namespace {

using railcoll::capi::fail;
using railcoll::capi::guarded;

// The algorithm for a call: the per-call option, else RAILCOLL_<COLL>_ALGO, else
// the tuning file, else the default rules (src/select/select.hpp), then the
// software form of a hardware algorithm.
std::string choose(railcoll_comm* c, railcoll::Collective collective, uint64_t bytes, const railcoll_call_opts_t* opts) {
  const std::string coll = railcoll::collective_name(collective);
  const std::string requested = opts && opts->algorithm ? opts->algorithm : "";
  const std::string name = c->selector.choose(collective, c->comm->topo(), bytes, requested).algorithm;
  std::string software = railcoll::software_equivalent(collective, name);
  if (software != name && c->warned_hardware.insert(coll + "/" + name).second && c->comm->rank() == 0)
    fprintf(stderr, "railcoll: %s/%s needs network hardware this cluster lacks; running %s/%s instead\n",
            coll.c_str(), name.c_str(), coll.c_str(), software.c_str());
  return software;
}

railcoll_status_t run(railcoll_comm* c, railcoll::Collective coll, const void* send, void* recv,
                      std::vector<uint64_t> counts, const railcoll_call_opts_t* opts,
                      const railcoll::AlgoOptions& args = {}) {
  uint64_t largest = 0;
  for (auto n : counts) largest = std::max(largest, n);
  std::string algo = choose(c, coll, largest, opts);
  c->comm->run(coll, algo, counts, args, {send, recv});
  return RAILCOLL_OK;
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

railcoll_status_t check_root(railcoll_comm_t comm, int root) {
  if (root < 0 || root >= comm->comm->size())
    return fail(RAILCOLL_ERR_ARG, "root " + std::to_string(root) + " is out of range (" +
                                      std::to_string(comm->comm->size()) + " ranks)");
  return RAILCOLL_OK;
}

railcoll_status_t gather_call(railcoll_comm_t comm, const void* sendbuf, void* recvbuf,
                              std::vector<uint64_t> counts, const railcoll_call_opts_t* opts) {
  if (!comm || !comm->comm) return fail(RAILCOLL_ERR_ARG, "communicator is NULL");
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
  return run(comm, railcoll::Collective::Allgather, sendbuf, recvbuf, std::move(counts), opts);
}

}  // namespace

extern "C" {

railcoll_status_t railcoll_comm_init(railcoll_comm_t* out) {
  return guarded([&]() -> railcoll_status_t {
    if (!out) return fail(RAILCOLL_ERR_ARG, "railcoll_comm_init: output pointer is NULL");
    *out = nullptr;
    auto c = std::make_unique<railcoll_comm>();
    c->selector = railcoll::Selector::from_environment();  // before any peer waits on this rank
    c->comm = std::make_unique<railcoll::rt::Comm>(railcoll::rt::bootstrap_from_env());
    *out = c.release();
    return RAILCOLL_OK;
  });
}

railcoll_status_t railcoll_comm_init_explicit(railcoll_comm_t* out, int rank, int size, const char* store,
                                              const char* job_id) {
  return guarded([&]() -> railcoll_status_t {
    if (!out) return fail(RAILCOLL_ERR_ARG, "railcoll_comm_init_explicit: output pointer is NULL");
    *out = nullptr;
    if (size < 1 || rank < 0 || rank >= size)
      return fail(RAILCOLL_ERR_ARG, "railcoll_comm_init_explicit: rank " + std::to_string(rank) +
                                        " is not in [0, size " + std::to_string(size) + ")");
    if (size > 1 && (!store || !*store))
      return fail(RAILCOLL_ERR_ARG, "railcoll_comm_init_explicit: a store host:port is needed for more than one rank");
    if (!job_id || !*job_id) return fail(RAILCOLL_ERR_ARG, "railcoll_comm_init_explicit: job_id is empty");
    railcoll::rt::Bootstrap b = railcoll::rt::settings_from_env();
    b.rank = rank;
    b.size = size;
    b.store = store ? store : "";
    if (size > 1) railcoll::rt::split_host_port(b.store);  // a bad address fails here, as ARG
    b.job_id = job_id;
    b.source = "railcoll_comm_init_explicit";
    auto c = std::make_unique<railcoll_comm>();
    c->selector = railcoll::Selector::from_environment();
    c->comm = std::make_unique<railcoll::rt::Comm>(b);
    *out = c.release();
    return RAILCOLL_OK;
  });
}

railcoll_status_t railcoll_comm_destroy(railcoll_comm_t comm) {
  return guarded([&]() -> railcoll_status_t {
    delete comm;
    return RAILCOLL_OK;
  });
}

int railcoll_comm_rank(railcoll_comm_t c) { return c && c->comm ? c->comm->rank() : -1; }
int railcoll_comm_size(railcoll_comm_t c) { return c && c->comm ? c->comm->size() : -1; }
int railcoll_comm_nodes(railcoll_comm_t c) { return c && c->comm ? c->comm->topo().nnodes() : -1; }
int railcoll_comm_rails(railcoll_comm_t c) { return c && c->comm ? c->comm->rails() : -1; }
int railcoll_comm_rails_up(railcoll_comm_t c) { return c && c->comm ? c->comm->rails_up() : -1; }

railcoll_status_t railcoll_allgather(railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t bytes,
                                     const railcoll_call_opts_t* opts) {
  return guarded([&]() -> railcoll_status_t {
    if (!comm || !comm->comm) return fail(RAILCOLL_ERR_ARG, "communicator is NULL");
    return gather_call(comm, sendbuf, recvbuf, std::vector<uint64_t>(comm->comm->size(), bytes), opts);
  });
}

railcoll_status_t railcoll_allgatherv(railcoll_comm_t comm, const void* sendbuf, void* recvbuf, const size_t* counts,
                                      const railcoll_call_opts_t* opts) {
  return guarded([&]() -> railcoll_status_t {
    if (!comm || !comm->comm) return fail(RAILCOLL_ERR_ARG, "communicator is NULL");
    if (!counts) return fail(RAILCOLL_ERR_ARG, "counts is NULL");
    return gather_call(comm, sendbuf, recvbuf, std::vector<uint64_t>(counts, counts + comm->comm->size()), opts);
  });
}

railcoll_status_t railcoll_barrier(railcoll_comm_t comm) {
  return guarded([&]() -> railcoll_status_t {
    if (!comm || !comm->comm) return fail(RAILCOLL_ERR_ARG, "communicator is NULL");
    return run(comm, railcoll::Collective::Barrier, nullptr, nullptr, std::vector<uint64_t>(comm->comm->size(), 0), nullptr);
  });
}

railcoll_status_t railcoll_bcast(railcoll_comm_t comm, void* buf, size_t bytes, int root,
                                 const railcoll_call_opts_t* opts) {
  return guarded([&]() -> railcoll_status_t {
    if (!comm || !comm->comm) return fail(RAILCOLL_ERR_ARG, "communicator is NULL");
    if (railcoll_status_t st = check_root(comm, root)) return st;
    if (bytes > 0 && !buf) return fail(RAILCOLL_ERR_ARG, "buf is NULL with a non-zero size");
    railcoll::AlgoOptions args;
    args.root = root;
    bool at_root = comm->comm->rank() == root;
    return run(comm, railcoll::Collective::Bcast, at_root ? buf : nullptr, at_root ? nullptr : buf,
               std::vector<uint64_t>(comm->comm->size(), bytes), opts, args);
  });
}

railcoll_status_t railcoll_gather(railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t bytes,
                                  int root, const railcoll_call_opts_t* opts) {
  return guarded([&]() -> railcoll_status_t {
    if (!comm || !comm->comm) return fail(RAILCOLL_ERR_ARG, "communicator is NULL");
    if (railcoll_status_t st = check_root(comm, root)) return st;
    int me = comm->comm->rank(), n = comm->comm->size();
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
    return run(comm, railcoll::Collective::Gather, sendbuf, at_root ? recvbuf : nullptr, std::vector<uint64_t>(n, bytes), opts, args);
  });
}

railcoll_status_t railcoll_allreduce(railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                                     railcoll_datatype_t type, railcoll_op_t op, const railcoll_call_opts_t* opts) {
  return guarded([&]() -> railcoll_status_t {
    using railcoll::DataType;
    using railcoll::ReduceOp;
    if (!comm || !comm->comm) return fail(RAILCOLL_ERR_ARG, "communicator is NULL");
    railcoll::AlgoOptions args;
    // A C caller may pass any int: read the enums' bytes as ints, since loading
    // an enum holding a value outside its range is undefined in C++.
    int type_value, op_value;
    memcpy(&type_value, &type, sizeof type_value);
    memcpy(&op_value, &op, sizeof op_value);
    switch (type_value) {
      case RAILCOLL_INT32: args.dtype = DataType::Int32; break;
      case RAILCOLL_INT64: args.dtype = DataType::Int64; break;
      case RAILCOLL_FLOAT: args.dtype = DataType::Float32; break;
      case RAILCOLL_DOUBLE: args.dtype = DataType::Float64; break;
      default: return fail(RAILCOLL_ERR_ARG, "allreduce: unknown data type " + std::to_string(type_value));
    }
    switch (op_value) {
      case RAILCOLL_SUM: args.redop = ReduceOp::Sum; break;
      case RAILCOLL_MIN: args.redop = ReduceOp::Min; break;
      case RAILCOLL_MAX: args.redop = ReduceOp::Max; break;
      default: return fail(RAILCOLL_ERR_ARG, "allreduce: unknown operation " + std::to_string(op_value));
    }
    size_t elem = railcoll::dtype_size(args.dtype);
    if (count > railcoll::kMaxBytesPerRank / elem) return fail(RAILCOLL_ERR_ARG, "allreduce: count is too large");
    uint64_t bytes = count * elem;
    bool in_place = opts && (opts->flags & RAILCOLL_IN_PLACE);
    if (bytes > 0 && !recvbuf) return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL with a non-zero count");
    if (bytes > 0 && !sendbuf && !in_place) return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with a non-zero count");
    std::vector<char> input;
    if (in_place) {
      sendbuf = input_copy(recvbuf, 0, bytes, &input);
    } else if (overlap(sendbuf, bytes, recvbuf, bytes)) {
      return fail(RAILCOLL_ERR_ARG, "sendbuf and recvbuf overlap (use RAILCOLL_IN_PLACE for an in-place call)");
    }
    return run(comm, railcoll::Collective::Allreduce, sendbuf, recvbuf, std::vector<uint64_t>(comm->comm->size(), bytes), opts, args);
  });
}

const char* railcoll_algorithm_for(railcoll_comm_t comm, const char* collective, size_t bytes,
                                   const railcoll_call_opts_t* opts) {
  if (!comm || !comm->comm || !collective) {
    fail(RAILCOLL_ERR_ARG, "railcoll_algorithm_for: communicator or collective is NULL");
    return nullptr;
  }
  try {
    railcoll::Collective coll = railcoll::collective_from_name(collective);
    // The registry's own copy of the name: valid for the life of the library.
    return railcoll::find_algorithm(coll, choose(comm, coll, bytes, opts))->name;
  } catch (const std::exception& e) {
    fail(RAILCOLL_ERR_ARG, e.what());
    return nullptr;
  }
}

}  // extern "C"
