// The communicator part of the C API over rt::Comm.
#include <algorithm>
#include <cstdio>
#include <functional>
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
#include "runtime/bootstrap/launcher_exchange.hpp"
#include "runtime/comm.hpp"
#include "runtime/bootstrap/net.hpp"
#include "select/select.hpp"

namespace railcoll::capi {

railcoll_status_t make_handle(railcoll_comm_t* out, const char* fn, const MakeComm& make) {
  return guarded([&]() -> railcoll_status_t {
    if (!out) return fail(RAILCOLL_ERR_ARG, std::string(fn) + ": output pointer is NULL");
    *out = nullptr;
    auto c = std::make_unique<railcoll_comm>();
    railcoll_comm* shell = c.get();
    c->comm = make([shell] { shell->selector = Selector::from_environment(); });
    c->front = std::make_unique<rt::FrontEnd>(*c->comm, std::move(c->selector));
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
  c->comm = std::move(comm);
  c->front = std::make_unique<railcoll::rt::FrontEnd>(*c->comm, std::move(selector));
  return c.release();
}

namespace {

using railcoll::capi::fail;
using railcoll::capi::guarded;
using railcoll::capi::live;

}  // namespace

namespace {

int query(railcoll_comm_t handle, const char* fn, int (*what)(const railcoll::rt::Comm&)) {
  railcoll::capi::clear_error();
  railcoll_comm* c = live(handle, fn);
  return c ? what(*c->comm) : -1;
}

// A communicator's check when its settings come from the environment: a wrong
// RAILCOLL_* setting (kept by Settings::from_environment) fails set-up on every rank,
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
    // Under srun --mpi=pmix|pmi2, mpirun or prterun: the launcher's own
    // exchange, no store (src/runtime/bootstrap/launcher_exchange.hpp).
    railcoll::Settings settings = railcoll::Settings::from_environment(&bad_setting);
    const double deadline = railcoll::rt::now_seconds() + settings.seconds(railcoll::Setting::Timeout);
    if (auto x = railcoll::rt::launcher_exchange(settings, deadline)) {
      const railcoll::rt::Identity who = railcoll::rt::launcher_identity(*x, &settings);
      return std::make_unique<Comm>(who, settings, *x, settings_then(bad_setting, check));
    }
    return std::make_unique<Comm>(railcoll::rt::identity_from_env(settings), settings,
                                  settings_then(bad_setting, check));
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
    const railcoll::Settings settings = railcoll::Settings::from_environment(&bad_setting);
    railcoll::rt::Identity who = railcoll::rt::local_identity(settings);
    who.rank = rank;
    who.size = size;
    who.store = store ? store : "";
    if (size > 1) railcoll::rt::split_host_port(who.store);  // a bad address fails here, as ARG
    who.job_id = job_id;
    who.source = fn;
    return std::make_unique<Comm>(who, settings, settings_then(bad_setting, check));
  });
}

railcoll_status_t railcoll_comm_destroy(railcoll_comm_t comm) {
  return guarded([&]() -> railcoll_status_t {
    railcoll_comm* c = live(comm, "railcoll_comm_destroy");
    if (!c) return RAILCOLL_ERR_ARG;
    c->comm.reset();  // the shell stays: see railcoll_comm (the end may still plan a queued call's step)
    c->front.reset();
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

railcoll_status_t railcoll_comm_set_wait_hook(railcoll_comm_t comm, void (*hook)(void* arg), void* arg,
                                              unsigned every_us) {
  return guarded([&]() -> railcoll_status_t {
    railcoll_comm* c = live(comm, "railcoll_comm_set_wait_hook");
    if (!c) return RAILCOLL_ERR_ARG;
    std::function<void()> call;
    if (hook) call = [hook, arg] { hook(arg); };
    c->comm->set_wait_hook(std::move(call), (every_us ? every_us : 1000) * 1e-6);
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
    const railcoll::rt::Decision d = c->front->decide(coll, std::vector<uint64_t>(c->comm->size(), bytes),
                                                     railcoll::call_defaults(coll), opts ? opts->algorithm : nullptr);
    name = railcoll::find_algorithm(coll, d.algorithm)->name;
    return RAILCOLL_OK;
  });
  return name;
}

}  // extern "C"
