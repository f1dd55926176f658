// The request half of the C API: starting persistent calls and completing
// any call (railcoll.h, "nonblocking and persistent calls"). The calls
// themselves are built in collectives_c.cpp and run by the communicator's
// engine (runtime/requests.hpp).
#include <sched.h>
#include <time.h>

#include <memory>
#include <string>

#include "capi/capi_internal.hpp"
#include "railcoll/railcoll.h"
#include "runtime/comm.hpp"
#include "runtime/bootstrap/net.hpp"

namespace railcoll::capi {

railcoll_request_t make_request(railcoll_comm* c, std::shared_ptr<rt::Request> call) {
  return new railcoll_request{c, std::move(call)};
}

}  // namespace railcoll::capi

namespace {

using railcoll::capi::fail;
using railcoll::capi::guarded;
using railcoll::capi::live;
using State = railcoll::rt::Request::State;

// Nothing to wait for: a NULL handle, or a persistent call not started (or
// whose completion was already reported).
bool inactive(railcoll_request_t r) { return !r || r->call->state() == State::Inactive; }

// A call that is done, reported once: a nonblocking request is freed and its
// handle cleared; a persistent one becomes inactive.
railcoll_status_t complete(railcoll_request_t* h) {
  railcoll_request_t r = *h;
  const auto st = static_cast<railcoll_status_t>(r->call->status());
  const std::string msg = r->call->message();
  if (r->call->persistent) {
    r->call->set_inactive();
  } else {
    delete r;
    *h = RAILCOLL_REQUEST_NULL;
  }
  return st == RAILCOLL_OK ? RAILCOLL_OK : fail(st, msg);
}

// The request's communicator, which must be alive while its call is outstanding.
railcoll::rt::Comm* comm_of(railcoll_request_t r, const char* fn) {
  railcoll_comm* c = live(r->comm, fn);
  return c ? c->comm.get() : nullptr;
}

railcoll_status_t test_one(railcoll_request_t* h, int* done) {
  if (inactive(*h)) return *done = 1, RAILCOLL_OK;
  railcoll_request_t r = *h;
  if (r->call->state() != State::Done) {
    railcoll::rt::Comm* comm = comm_of(r, "railcoll_test");
    if (!comm) return RAILCOLL_ERR_ARG;
    if (!comm->test(*r->call)) return *done = 0, RAILCOLL_OK;
  }
  *done = 1;
  return complete(h);
}

railcoll_status_t wait_one(railcoll_request_t* h) {
  if (inactive(*h)) return RAILCOLL_OK;
  railcoll_request_t r = *h;
  if (r->call->state() != State::Done) {
    railcoll::rt::Comm* comm = comm_of(r, "railcoll_wait");
    if (!comm) return RAILCOLL_ERR_ARG;
    comm->wait(*r->call);
  }
  return complete(h);
}

railcoll_status_t check_array(int n, const railcoll_request_t* reqs, const char* fn) {
  if (n < 0 || (n > 0 && !reqs)) return fail(RAILCOLL_ERR_ARG, std::string(fn) + ": no array of " + std::to_string(n) + " requests");
  return RAILCOLL_OK;
}

// One pass over the array: the first complete request, completed.
railcoll_status_t test_any(int n, railcoll_request_t* reqs, int* index, int* done) {
  bool any_active = false;
  for (int i = 0; i < n; ++i) {
    if (inactive(reqs[i])) continue;
    any_active = true;
    int d = 0;
    railcoll_status_t st = test_one(&reqs[i], &d);
    if (d || st != RAILCOLL_OK) return *index = i, *done = 1, st;
  }
  *index = -1;
  *done = any_active ? 0 : 1;
  return RAILCOLL_OK;
}

}  // namespace

extern "C" {

railcoll_status_t railcoll_start(railcoll_request_t req) {
  return guarded([&]() -> railcoll_status_t {
    if (!req) return fail(RAILCOLL_ERR_ARG, "railcoll_start: the request is NULL");
    if (!req->call->persistent)
      return fail(RAILCOLL_ERR_ARG, "railcoll_start: not a persistent request (made by railcoll_COLL_init)");
    railcoll::rt::Comm* comm = comm_of(req, "railcoll_start");
    if (!comm) return RAILCOLL_ERR_ARG;
    comm->post(req->call);
    return RAILCOLL_OK;
  });
}

railcoll_status_t railcoll_startall(int n, railcoll_request_t* reqs) {
  if (railcoll_status_t st = check_array(n, reqs, "railcoll_startall")) return st;
  for (int i = 0; i < n; ++i)
    if (railcoll_status_t st = railcoll_start(reqs[i])) return st;
  return RAILCOLL_OK;
}

railcoll_status_t railcoll_test(railcoll_request_t* req, int* done) {
  return guarded([&]() -> railcoll_status_t {
    if (!req || !done) return fail(RAILCOLL_ERR_ARG, "railcoll_test: NULL argument");
    return test_one(req, done);
  });
}

railcoll_status_t railcoll_wait(railcoll_request_t* req) {
  return guarded([&]() -> railcoll_status_t {
    if (!req) return fail(RAILCOLL_ERR_ARG, "railcoll_wait: NULL argument");
    return wait_one(req);
  });
}

railcoll_status_t railcoll_waitall(int n, railcoll_request_t* reqs) {
  return guarded([&]() -> railcoll_status_t {
    if (railcoll_status_t st = check_array(n, reqs, "railcoll_waitall")) return st;
    railcoll_status_t first = RAILCOLL_OK;
    std::string why;
    for (int i = 0; i < n; ++i) {
      railcoll_status_t st = wait_one(&reqs[i]);
      if (st != RAILCOLL_OK && first == RAILCOLL_OK) first = st, why = railcoll::capi::last_error_text();
    }
    return first == RAILCOLL_OK ? RAILCOLL_OK : fail(first, why);
  });
}

railcoll_status_t railcoll_testall(int n, railcoll_request_t* reqs, int* done) {
  return guarded([&]() -> railcoll_status_t {
    if (railcoll_status_t st = check_array(n, reqs, "railcoll_testall")) return st;
    if (!done) return fail(RAILCOLL_ERR_ARG, "railcoll_testall: done is NULL");
    // MPI_Testall's rule: complete them all only when all are done.
    *done = 1;
    for (int i = 0; i < n; ++i) {
      if (inactive(reqs[i])) continue;
      if (reqs[i]->call->state() != State::Done) {
        railcoll::rt::Comm* comm = comm_of(reqs[i], "railcoll_testall");
        if (!comm) return RAILCOLL_ERR_ARG;
        if (!comm->test(*reqs[i]->call)) *done = 0;
      }
    }
    return *done ? railcoll_waitall(n, reqs) : RAILCOLL_OK;
  });
}

railcoll_status_t railcoll_testany(int n, railcoll_request_t* reqs, int* index, int* done) {
  return guarded([&]() -> railcoll_status_t {
    if (railcoll_status_t st = check_array(n, reqs, "railcoll_testany")) return st;
    if (!index || !done) return fail(RAILCOLL_ERR_ARG, "railcoll_testany: NULL argument");
    return test_any(n, reqs, index, done);
  });
}

// Tests the array until one completes: yielding at first, then in sleeps of
// 50 us (the requests may live on several communicators, whose progress
// threads, or these tests, drive them); each call's own deadline bounds it.
railcoll_status_t railcoll_waitany(int n, railcoll_request_t* reqs, int* index) {
  return guarded([&]() -> railcoll_status_t {
    if (railcoll_status_t st = check_array(n, reqs, "railcoll_waitany")) return st;
    if (!index) return fail(RAILCOLL_ERR_ARG, "railcoll_waitany: index is NULL");
    const double start = railcoll::rt::now_seconds();
    for (;;) {
      int done = 0;
      railcoll_status_t st = test_any(n, reqs, index, &done);
      if (done || st != RAILCOLL_OK) return st;
      if (railcoll::rt::now_seconds() - start < 0.002) {
        sched_yield();
      } else {
        timespec ts{0, 50000};
        nanosleep(&ts, nullptr);
      }
    }
  });
}

int railcoll_request_done(railcoll_request_t req, railcoll_status_t* status) {
  railcoll::capi::clear_error();
  railcoll_status_t st = RAILCOLL_OK;
  int done = 1;
  if (!inactive(req)) {
    if (req->call->state() != State::Done) {
      railcoll::rt::Comm* comm = comm_of(req, "railcoll_request_done");
      done = comm && comm->test(*req->call);
    }
    if (done) st = static_cast<railcoll_status_t>(req->call->status());
  }
  if (status) *status = st;
  return done;
}

railcoll_status_t railcoll_request_free(railcoll_request_t* req) {
  return guarded([&]() -> railcoll_status_t {
    if (!req) return fail(RAILCOLL_ERR_ARG, "railcoll_request_free: NULL argument");
    if (*req && (*req)->call->p2p && (*req)->call->state() == State::Queued)
      if (railcoll::rt::Comm* comm = comm_of(*req, "railcoll_request_free")) comm->withdraw((*req)->call);
    delete *req;  // an outstanding call stays with its engine until it completes
    *req = RAILCOLL_REQUEST_NULL;
    return RAILCOLL_OK;
  });
}

railcoll_status_t railcoll_progress(railcoll_comm_t comm) {
  return guarded([&]() -> railcoll_status_t {
    railcoll_comm* c = live(comm, "railcoll_progress");
    if (!c) return RAILCOLL_ERR_ARG;
    c->comm->progress();
    return RAILCOLL_OK;
  });
}

}  // extern "C"
