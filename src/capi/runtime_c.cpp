// The communicator part of the C API over rt::Comm.
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "capi/capi_internal.hpp"
#include "core/errors.hpp"
#include "core/registry.hpp"
#include "core/select.hpp"
#include "railcoll/railcoll.h"
#include "runtime/comm.hpp"

struct railcoll_comm {
  std::unique_ptr<railcoll::rt::Comm> comm;
  std::string last_algorithm;
};

namespace {

using railcoll::capi::fail;
using railcoll::capi::guarded;

// The algorithm for a call: the per-call option, else RAILCOLL_<COLL>_ALGO, else the rules.
std::string choose(railcoll_comm* c, const std::string& coll, uint64_t bytes, const railcoll_call_opts_t* opts) {
  std::string name, from = "the call's options";
  if (opts && opts->algorithm && *opts->algorithm) name = opts->algorithm;
  std::string var = "RAILCOLL_" + coll + "_ALGO";
  for (auto& ch : var) ch = static_cast<char>(toupper(static_cast<unsigned char>(ch)));
  if ((name.empty() || name == "auto") && getenv(var.c_str()) && *getenv(var.c_str())) {
    name = getenv(var.c_str());
    from = var;
  }
  if (name.empty() || name == "auto") return railcoll::select_algorithm(coll, c->comm->topo(), bytes);
  if (!railcoll::find_algorithm(coll, name))
    throw railcoll::InputError("unknown " + coll + " algorithm '" + name + "' (from " + from +
                               "; railcoll algos lists them)");
  return name;
}

railcoll_status_t run(railcoll_comm* c, const std::string& coll, const void* send, void* recv,
                      std::vector<uint64_t> counts, const railcoll_call_opts_t* opts) {
  uint64_t largest = 0;
  for (auto n : counts) largest = std::max(largest, n);
  std::string algo = choose(c, coll, largest, opts);
  c->last_algorithm = algo;
  c->comm->run(coll, algo, counts, {}, {send, recv});
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
  if (in_place) {  // the runtime reads the send block while it writes recv: copy it out
    own.assign(static_cast<char*>(recvbuf) + displ, static_cast<char*>(recvbuf) + displ + counts[me]);
    sendbuf = own.data();
  } else if (counts[me] > 0 && total > 0) {
    auto s = reinterpret_cast<uintptr_t>(sendbuf), r = reinterpret_cast<uintptr_t>(recvbuf);
    if (s < r + total && r < s + counts[me])
      return fail(RAILCOLL_ERR_ARG, "sendbuf and recvbuf overlap (use RAILCOLL_IN_PLACE for an in-place call)");
  }
  return run(comm, "allgather", sendbuf, recvbuf, std::move(counts), opts);
}

}  // namespace

extern "C" {

railcoll_status_t railcoll_comm_init(railcoll_comm_t* out) {
  return guarded([&]() -> railcoll_status_t {
    if (!out) return fail(RAILCOLL_ERR_ARG, "railcoll_comm_init: output pointer is NULL");
    *out = nullptr;
    auto c = std::make_unique<railcoll_comm>();
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
    return run(comm, "barrier", nullptr, nullptr, std::vector<uint64_t>(comm->comm->size(), 0), nullptr);
  });
}

const char* railcoll_algorithm_for(railcoll_comm_t comm, const char* collective, size_t bytes,
                                   const railcoll_call_opts_t* opts) {
  if (!comm || !comm->comm || !collective) return nullptr;
  try {
    comm->last_algorithm = choose(comm, collective, bytes, opts);
    return comm->last_algorithm.c_str();
  } catch (const std::exception& e) {
    fail(RAILCOLL_ERR_ARG, e.what());
    return nullptr;
  }
}

}  // extern "C"
