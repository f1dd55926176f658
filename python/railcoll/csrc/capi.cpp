#include "capi.hpp"

#include <c10/util/Exception.h>

#include <cstring>
#include <exception>

namespace railcoll_torch {

namespace {
const railcoll_call_opts_t kInPlace{nullptr, RAILCOLL_IN_PLACE};
}

std::string call_failed(const char* op, int rank, Status st) {
  return std::string("railcoll: ") + op + " failed on rank " + std::to_string(rank) + ": " + railcoll_strerror(st) +
         ": " + railcoll_last_error();
}

Status wait_all(std::vector<Request>& reqs) {
  return reqs.empty() ? kOk : railcoll_waitall(static_cast<int>(reqs.size()), reqs.data());
}

Status test_all(std::vector<Request>& reqs, bool* done) {
  if (reqs.empty()) {
    *done = true;
    return kOk;
  }
  int d = 0;
  Status st = railcoll_testall(static_cast<int>(reqs.size()), reqs.data(), &d);
  *done = d != 0;
  return st;
}

bool all_done(const std::vector<Request>& reqs) {
  for (auto r : reqs) {
    Status st;
    if (!railcoll_request_done(r, &st)) return false;
  }
  return true;
}

void wait_one(Request* req) {
  if (*req != kNoRequest) railcoll_wait(req);
}

void withdraw(Request* req) {
  if (*req != kNoRequest) railcoll_request_free(req);
}

// ---- the Store as the C API's out-of-band all-gather (railcoll_oob_t)
//
// Each round waits for every rank's key, so it is a barrier as the C API requires.
struct Comm::Exchange {
  c10::intrusive_ptr<c10d::Store> store;
  std::string prefix;
  int rank = 0, size = 0, round = 0;
  std::string error;  // the Store's exception, kept for the message

  struct Pending {
    int round;
    void* recvbuf;
    size_t bytes;
  };

  std::string key(int r, int peer) const { return prefix + "/" + std::to_string(r) + "/" + std::to_string(peer); }

  static int allgather(const void* sendbuf, void* recvbuf, size_t bytes, void* ctx, void** request) {
    auto* self = static_cast<Exchange*>(ctx);
    try {
      const auto* p = static_cast<const uint8_t*>(sendbuf);
      self->store->set(self->key(self->round, self->rank), std::vector<uint8_t>(p, p + bytes));
      *request = new Pending{self->round++, recvbuf, bytes};
      return 0;
    } catch (const std::exception& e) {
      self->error = e.what();
      return 1;
    }
  }

  static int test(void* request, void* ctx) {
    auto* self = static_cast<Exchange*>(ctx);
    auto* req = static_cast<Pending*>(request);
    try {
      std::vector<std::string> keys;
      for (int peer = 0; peer < self->size; ++peer) keys.push_back(self->key(req->round, peer));
      if (!self->store->check(keys)) return 0;
      auto* out = static_cast<uint8_t*>(req->recvbuf);
      for (int peer = 0; peer < self->size; ++peer) {
        std::vector<uint8_t> v = self->store->get(keys[peer]);
        if (v.size() != req->bytes) {
          self->error = "rank " + std::to_string(peer) + " sent " + std::to_string(v.size()) + " bytes in set-up round " +
                        std::to_string(req->round) + ", expected " + std::to_string(req->bytes);
          return -1;
        }
        std::memcpy(out + peer * req->bytes, v.data(), v.size());
      }
      return 1;
    } catch (const std::exception& e) {
      self->error = e.what();
      return -1;
    }
  }

  static void release(void* request, int, void*) { delete static_cast<Pending*>(request); }
};

Comm::Comm(const c10::intrusive_ptr<c10d::Store>& store, const std::string& prefix, int rank, int size,
           const std::string& group_id)
    : exchange_(new Exchange) {
  exchange_->store = store;
  exchange_->prefix = prefix;
  exchange_->rank = rank;
  exchange_->size = size;
  railcoll_oob_t oob{};
  oob.allgather = &Exchange::allgather;
  oob.test = &Exchange::test;
  oob.release = &Exchange::release;
  oob.context = exchange_;
  oob.rank = rank;
  oob.size = size;
  oob.node = nullptr;     // RAILCOLL_NODE, else the hostname: ranks of one host share memory
  oob.job_key = nullptr;  // RAILCOLL_JOB_KEY, else rank 0 draws one and the Store carries it
  if (railcoll_comm_init_oob(&comm_, &oob) != RAILCOLL_OK) {
    std::string msg = std::string("setting up the communicator of group '") + group_id + "' failed: " +
                      railcoll_last_error();
    if (!exchange_->error.empty()) msg += " (the Store said: " + exchange_->error + ")";
    delete exchange_;
    exchange_ = nullptr;
    C10_THROW_ERROR(DistBackendError, "railcoll: " + msg);
  }
}

Comm::~Comm() {
  destroy();
  delete exchange_;
}

void Comm::destroy() {
  if (comm_) railcoll_comm_destroy(comm_);
  comm_ = nullptr;
}

Status Comm::allreduce(const void* in, void* out, size_t count, Reduction r, Request* req) {
  return railcoll_iallreduce(comm_, in, out, count, r.type, r.op, in ? nullptr : &kInPlace, req);
}
Status Comm::reduce(const void* in, void* out, size_t count, Reduction r, int root, Request* req) {
  return railcoll_ireduce(comm_, in, out, count, r.type, r.op, root, nullptr, req);
}
Status Comm::reduce_scatter_block(const void* in, void* out, size_t count, Reduction r, Request* req) {
  return railcoll_ireduce_scatter_block(comm_, in, out, count, r.type, r.op, nullptr, req);
}
Status Comm::bcast(void* buf, size_t bytes, int root, Request* req) {
  return railcoll_ibcast(comm_, buf, bytes, root, nullptr, req);
}
Status Comm::allgather(const void* in, void* out, size_t bytes, Request* req) {
  return railcoll_iallgather(comm_, in, out, bytes, in ? nullptr : &kInPlace, req);
}
Status Comm::allgatherv(const void* in, void* out, const std::vector<size_t>& counts, Request* req) {
  return railcoll_iallgatherv(comm_, in, out, counts.data(), nullptr, nullptr, req);
}
Status Comm::gather(const void* in, void* out, size_t bytes, int root, Request* req) {
  return railcoll_igather(comm_, in, out, bytes, root, nullptr, req);
}
Status Comm::scatter(const void* in, void* out, size_t bytes, int root, Request* req) {
  return railcoll_iscatter(comm_, in, out, bytes, root, nullptr, req);
}
Status Comm::alltoall(const void* in, void* out, size_t bytes, Request* req) {
  return railcoll_ialltoall(comm_, in, out, bytes, nullptr, req);
}
Status Comm::alltoallv(const void* in, const std::vector<size_t>& scount, const std::vector<size_t>& sdispl, void* out,
                       const std::vector<size_t>& rcount, const std::vector<size_t>& rdispl, Request* req) {
  return railcoll_ialltoallv(comm_, in, scount.data(), sdispl.data(), out, rcount.data(), rdispl.data(), nullptr, req);
}
Status Comm::barrier(Request* req) { return railcoll_ibarrier(comm_, req); }
Status Comm::send(const void* buf, size_t bytes, int peer, int tag, Request* req) {
  return railcoll_isend(comm_, buf, bytes, peer, tag, req);
}
Status Comm::recv(void* buf, size_t bytes, int peer, int tag, int* source, Request* req) {
  return railcoll_irecv(comm_, buf, bytes, peer, tag, source, req);
}

double Comm::allreduce_us(void* buf, size_t count, Reduction r, int iters, bool nonblocking) {
  auto check = [](Status st) {
    if (st != RAILCOLL_OK) C10_THROW_ERROR(DistBackendError, call_failed("all_reduce", -1, st));
  };
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    if (!nonblocking) {
      check(railcoll_allreduce(comm_, nullptr, buf, count, r.type, r.op, &kInPlace));
      continue;
    }
    Request req;
    check(railcoll_iallreduce(comm_, nullptr, buf, count, r.type, r.op, &kInPlace, &req));
    check(railcoll_wait(&req));
  }
  auto end = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(end - start).count() / iters;
}

std::string library_version() { return railcoll_version(); }

std::vector<std::string> features() {
  std::vector<std::string> f;
#define RAILCOLL_FEATURE(name, flag) \
  if (flag) f.push_back(name);
  RAILCOLL_FEATURE("prod", RAILCOLL_HAS_PROD)
  RAILCOLL_FEATURE("bitwise", RAILCOLL_HAS_BITWISE)
  RAILCOLL_FEATURE("int8", RAILCOLL_HAS_INT8)
  RAILCOLL_FEATURE("uint8", RAILCOLL_HAS_UINT8)
  RAILCOLL_FEATURE("int16", RAILCOLL_HAS_INT16)
  RAILCOLL_FEATURE("float16", RAILCOLL_HAS_FLOAT16)
  RAILCOLL_FEATURE("bfloat16", RAILCOLL_HAS_BFLOAT16)
#undef RAILCOLL_FEATURE
  return f;
}

}  // namespace railcoll_torch
