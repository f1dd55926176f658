// What the C API files share: the communicator handle, the one way to make
// one, and the error plumbing (every call returns a status and leaves its
// detailed message for railcoll_last_error()).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "railcoll/railcoll.h"
#include "runtime/comm.hpp"
#include "runtime/front_end.hpp"
#include "select/select.hpp"

// A communicator handle. railcoll_comm_destroy frees the communicator but not
// this shell (a few dozen bytes, kept reachable in a list of every handle
// made), so a use after destroy finds `comm` empty and fails with
// RAILCOLL_ERR_ARG rather than reading freed memory, and no later handle can
// take its address.
struct railcoll_comm {
  std::unique_ptr<railcoll::rt::Comm> comm;
  // Its calls: checked, planned and built (runtime/front_end.hpp).
  std::unique_ptr<railcoll::rt::FrontEnd> front;
  // RAILCOLL_<COLL>_ALGO checked and RAILCOLL_TUNING read when the communicator
  // is made (a wrong name fails railcoll_comm_init, not the first call), then
  // handed to the front end.
  railcoll::Selector selector;
  std::string transport;  // railcoll_comm_transport's answer, kept for the caller
};

// A request handle: the call (shared with the communicator's engine, which
// keeps it until it completes, also once the handle is freed) and its
// communicator's shell.
struct railcoll_request {
  railcoll_comm* comm;
  std::shared_ptr<railcoll::rt::Request> call;
};

namespace railcoll::capi {

railcoll_status_t fail(railcoll_status_t st, const std::string& msg);
void clear_error();
const char* last_error_text();

template <class F>
railcoll_status_t guarded(F f) {
  try {
    clear_error();
    return f();
  } catch (const railcoll::Error& e) {
    return fail(static_cast<railcoll_status_t>(e.status), e.what());
  } catch (const std::bad_alloc&) {
    return fail(RAILCOLL_ERR_NOMEM, "out of memory");
  } catch (const std::exception& e) {
    return fail(RAILCOLL_ERR_INTERNAL, e.what());
  }
}

// Every constructor of the C API makes its handle here. `make` builds the
// rt::Comm and must pass it `check` (rt::Comm::Check): it reads this rank's
// RAILCOLL_<COLL>_ALGO and RAILCOLL_TUNING into the handle during set-up, so a
// rank whose variables are wrong fails with RAILCOLL_ERR_ARG and every other
// rank at once with "rank r could not start: ...". `fn` names the caller in
// messages ("railcoll_comm_init").
using MakeComm = std::function<std::unique_ptr<railcoll::rt::Comm>(const railcoll::rt::Comm::Check& check)>;
railcoll_status_t make_handle(railcoll_comm_t* out, const char* fn, const MakeComm& make);

// The user operator of a railcoll_op_t value, or null (ops_c.cpp).
std::shared_ptr<const rt::UserOp> find_user_op(int op);

// A new handle for `call` on c (requests_c.cpp).
railcoll_request_t make_request(railcoll_comm* c, std::shared_ptr<rt::Request> call);

// The handle's communicator when it is alive; else nullptr, with
// RAILCOLL_ERR_ARG and "communicator is NULL" / "... was destroyed" set.
railcoll_comm* live(railcoll_comm_t comm, const char* fn);

}  // namespace railcoll::capi
