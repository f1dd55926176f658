// The C API's point-to-point messages (railcoll.h, "point to point"): a send
// or receive becomes a request of the communicator's mailbox
// (runtime/mailbox.hpp), completed by railcoll_wait/test like any request.
#include <memory>
#include <string>

#include "capi/capi_internal.hpp"
#include "railcoll/railcoll.h"
#include "runtime/comm.hpp"

namespace {

using railcoll::capi::fail;
using railcoll::capi::guarded;
using railcoll::capi::live;

railcoll_status_t post_message(railcoll_comm_t comm, const char* fn, bool send, void* buf, size_t bytes, int peer,
                               int tag, int* source, railcoll_request_t* req) {
  return guarded([&]() -> railcoll_status_t {
    if (!req) return fail(RAILCOLL_ERR_ARG, std::string(fn) + ": the request pointer is NULL");
    *req = RAILCOLL_REQUEST_NULL;
    railcoll_comm* c = live(comm, fn);
    if (!c) return RAILCOLL_ERR_ARG;
    auto call = std::make_shared<railcoll::rt::Request>();
    railcoll::rt::Message& m = call->p2p.emplace();
    m.send = send;
    m.buf = static_cast<char*>(buf);
    m.bytes = bytes;
    m.peer = peer;
    m.tag = tag;
    m.source_out = source;
    try {
      c->comm->post_message(call);
    } catch (const railcoll::Error& e) {
      return fail(static_cast<railcoll_status_t>(e.status), std::string(fn) + ": " + e.what());
    }
    *req = railcoll::capi::make_request(c, call);
    return RAILCOLL_OK;
  });
}

}  // namespace

extern "C" {

railcoll_status_t railcoll_isend(railcoll_comm_t comm, const void* buf, size_t bytes, int peer, int tag,
                                 railcoll_request_t* req) {
  return post_message(comm, "railcoll_isend", true, const_cast<void*>(buf), bytes, peer, tag, nullptr, req);
}

railcoll_status_t railcoll_irecv(railcoll_comm_t comm, void* buf, size_t bytes, int peer, int tag, int* source,
                                 railcoll_request_t* req) {
  return post_message(comm, "railcoll_irecv", false, buf, bytes, peer, tag, source, req);
}

}  // extern "C"
