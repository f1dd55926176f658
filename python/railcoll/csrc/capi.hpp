// The one place the backend calls railcoll's C API (railcoll/railcoll.h): the
// communicator made over the group's Store, every nonblocking call the
// operations post, and the requests' completion. Everything above speaks in
// tensors' raw pointers, byte or element counts and this file's types.
#pragma once
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <railcoll/railcoll.h>

#include <string>
#include <vector>

#include "capi_features.h"

namespace railcoll_torch {

using Request = railcoll_request_t;
constexpr Request kNoRequest = RAILCOLL_REQUEST_NULL;
constexpr int kAnySource = RAILCOLL_ANY_SOURCE;

// An element type and operator of a reduction as the C API names them.
struct Reduction {
  railcoll_datatype_t type;
  railcoll_op_t op;
};

// railcoll's message for a failed call, naming the operation and the rank.
std::string call_failed(const char* op, int rank, railcoll_status_t st);

// A request's status, or the post's: RAILCOLL_OK or why not.
using Status = railcoll_status_t;
constexpr Status kOk = RAILCOLL_OK;

// Requests of one operation.
Status wait_all(std::vector<Request>& reqs);
// done: every request complete (then the status is theirs).
Status test_all(std::vector<Request>& reqs, bool* done);
// Whether every request is complete, without advancing or completing any.
bool all_done(const std::vector<Request>& reqs);
void wait_one(Request* req);
// A point-to-point receive no message has matched yet matches none any more;
// the request is freed either way.
void withdraw(Request* req);

// Set up through the Store: round n of the set-up is a key
// <prefix>/<n>/<rank> per rank, complete when every rank's is there (polled
// with Store::check, so the C API's RAILCOLL_TIMEOUT deadline applies).
class Comm {
 public:
  Comm(const c10::intrusive_ptr<c10d::Store>& store, const std::string& prefix, int rank, int size,
       const std::string& group_id);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  void destroy();  // every rank calls it (once; the destructor does it otherwise)

  // Posts; each returns the C API's status, *req set when it is RAILCOLL_OK.
  // Counts in elements for reductions, in bytes otherwise.
  Status allreduce(const void* in, void* out, size_t count, Reduction r, Request* req);
  Status reduce(const void* in, void* out, size_t count, Reduction r, int root, Request* req);
  Status reduce_scatter_block(const void* in, void* out, size_t count, Reduction r, Request* req);
  Status bcast(void* buf, size_t bytes, int root, Request* req);
  // in nullptr: in place (this rank's block is already at its place in out).
  Status allgather(const void* in, void* out, size_t bytes, Request* req);
  Status allgatherv(const void* in, void* out, const std::vector<size_t>& counts, Request* req);
  Status gather(const void* in, void* out, size_t bytes, int root, Request* req);
  Status scatter(const void* in, void* out, size_t bytes, int root, Request* req);
  Status alltoall(const void* in, void* out, size_t bytes, Request* req);
  Status alltoallv(const void* in, const std::vector<size_t>& scount, const std::vector<size_t>& sdispl, void* out,
                   const std::vector<size_t>& rcount, const std::vector<size_t>& rdispl, Request* req);
  Status barrier(Request* req);
  // Point to point: beside the collectives, not in their order. peer
  // kAnySource receives from any rank; *source is the sender once complete.
  Status send(const void* buf, size_t bytes, int peer, int tag, Request* req);
  Status recv(void* buf, size_t bytes, int peer, int tag, int* source, Request* req);

  // The C API call alone, for --call-cost: mean microseconds of `iters`
  // railcoll_allreduce (or railcoll_iallreduce + railcoll_wait) in place.
  double allreduce_us(void* buf, size_t count, Reduction r, int iters, bool nonblocking);

 private:
  struct Exchange;
  Exchange* exchange_ = nullptr;
  railcoll_comm_t comm_ = nullptr;
};

std::string library_version();
// The optional C API parts this build uses (setup.py's probes).
std::vector<std::string> features();

}  // namespace railcoll_torch
