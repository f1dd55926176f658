// railcoll as a torch.distributed backend for CPU tensors (docs/torch.md).
//
// Built against the installed torch and railcoll's public C API only
// (railcoll/railcoll.h, librailcoll.so). The communicator is set up through the
// Store torch hands the backend (railcoll_comm_init_oob). Every operation is
// posted on the calling thread, in issue order, as railcoll's nonblocking call
// (railcoll_iCOLL): the communicator's progress thread advances it while
// Python computes, and its Work completes when the request does (wait() is
// railcoll_wait on the caller's thread; futures nobody waits for are completed
// by one thread per group, see FutureThread).
//
// Datatypes and operators the linked C API does not have are probed at build
// time (setup.py writes capi_features.h): the backend then carries the tensor
// in a wider type or names the operator as missing at the call.
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/extension.h>

#include <railcoll/railcoll.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "capi_features.h"

namespace railcoll_torch {

using c10d::OpType;
using c10d::ReduceOp;

[[noreturn]] void fail(const std::string& msg) { TORCH_CHECK(false, "railcoll: ", msg); }

// ---------------------------------------------------------------- the Store as out-of-band all-gather
//
// Round n of the set-up: every rank sets <prefix>/<n>/<rank> and the round is
// done when every rank's key is there (Store::check, non-blocking, so the C
// API's RAILCOLL_TIMEOUT deadline applies). Each round waits for every rank's
// key, so it is a barrier as the C API requires.
struct StoreExchange {
  c10::intrusive_ptr<c10d::Store> store;
  std::string prefix;
  int rank = 0, size = 0, round = 0;
  std::string error;  // the Store's exception, kept for the message

  struct Request {
    int round;
    void* recvbuf;
    size_t bytes;
  };

  std::string key(int r, int peer) const { return prefix + "/" + std::to_string(r) + "/" + std::to_string(peer); }

  static int allgather(const void* sendbuf, void* recvbuf, size_t bytes, void* ctx, void** request) {
    auto* self = static_cast<StoreExchange*>(ctx);
    try {
      const auto* p = static_cast<const uint8_t*>(sendbuf);
      self->store->set(self->key(self->round, self->rank), std::vector<uint8_t>(p, p + bytes));
      *request = new Request{self->round++, recvbuf, bytes};
      return 0;
    } catch (const std::exception& e) {
      self->error = e.what();
      return 1;
    }
  }

  static int test(void* request, void* ctx) {
    auto* self = static_cast<StoreExchange*>(ctx);
    auto* req = static_cast<Request*>(request);
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

  static void release(void* request, int, void*) { delete static_cast<Request*>(request); }
};

// ---------------------------------------------------------------- Work

// A failed call's message: railcoll's own, naming the operation and the rank.
std::string call_failed(const char* op, int rank, railcoll_status_t st) {
  return std::string("railcoll: ") + op + " failed on rank " + std::to_string(rank) + ": " + railcoll_strerror(st) +
         ": " + railcoll_last_error();
}

// One operation posted to the C API: its requests (most operations have one),
// the staged tensors the library writes until they complete, and what is then
// done to the caller's tensors (copy back, AVG's division, unpacking).
//
// Whoever completes it runs that and completes the future (DDP's hooks chain
// on it) and then the base class's state. Exactly one thread completes a Work:
// the first to claim it (wait(), isCompleted(), the group's future thread, or
// the backend reaping finished Works at the next post); a second waiter sleeps
// on the base class's condition variable until the first has finished.
class RailcollWork : public c10d::Work {
 public:
  RailcollWork(int rank, OpType type, const char* op, std::vector<at::Tensor> outputs)
      : c10d::Work(rank, type, (std::string("railcoll:") + op).c_str()), op_(op), outputs_(std::move(outputs)),
        future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

  ~RailcollWork() override {
    // The backend holds every Work until it completed; should one still hold
    // requests, the library writes into kept_ until they end: wait for them.
    for (auto& r : requests_)
      if (r != RAILCOLL_REQUEST_NULL) railcoll_wait(&r);
  }

  // ---- posting (the backend, on the calling thread)

  // A slot for one more request of this operation.
  railcoll_request_t* next_request() {
    requests_.push_back(RAILCOLL_REQUEST_NULL);
    return &requests_.back();
  }
  // Keeps a buffer the library uses alive until the operation completes.
  void keep(at::Tensor t) { kept_.push_back(std::move(t)); }
  // What to do once every request completed successfully.
  void then(std::function<void()> after) { after_ = std::move(after); }
  const std::string& op() const { return op_; }

  // ---- completing

  bool isCompleted() override {
    if (done_.load(std::memory_order_acquire)) return true;
    if (!claim()) return false;
    int done = 0;
    railcoll_status_t st = requests_.empty() ? RAILCOLL_OK : railcoll_testall(size(), requests_.data(), &done);
    if (!requests_.empty() && !done) {
      unclaim();
      return false;
    }
    complete(st);
    return true;
  }

  // Completes the Work if every request is done, without advancing anything
  // (the backend reaps finished Works this way at each post).
  bool reap() {
    if (done_.load(std::memory_order_acquire)) return true;
    if (!claim()) return false;
    for (auto r : requests_) {
      railcoll_status_t st;
      if (!railcoll_request_done(r, &st)) {
        unclaim();
        return false;
      }
    }
    complete(requests_.empty() ? RAILCOLL_OK : railcoll_waitall(size(), requests_.data()));
    return true;
  }

  // Without a timeout, railcoll_wait's deadline applies (RAILCOLL_TIMEOUT, the
  // group's timeout): a dead peer fails the call within milliseconds, a hung
  // one at the deadline. With one, the requests are tested until it passes.
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    const bool bounded = timeout != kNoTimeout;
    while (!done_.load(std::memory_order_acquire)) {
      if (claim()) {
        if (!bounded) {
          complete(requests_.empty() ? RAILCOLL_OK : railcoll_waitall(size(), requests_.data()));
          break;
        }
        int done = 0;
        railcoll_status_t st = requests_.empty() ? RAILCOLL_OK : railcoll_testall(size(), requests_.data(), &done);
        if (requests_.empty() || done) {
          complete(st);
          break;
        }
        unclaim();
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      } else {
        // Another thread completes it (or only tests it: then claim again).
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait_for(lock, std::chrono::milliseconds(1), [this] { return completed_; });
      }
      if (bounded && std::chrono::steady_clock::now() >= deadline)
        C10_THROW_ERROR(DistBackendError,
                        "railcoll: " + op_ + ": wait() timed out after " + std::to_string(timeout.count()) + " ms");
    }
    // The base class rethrows the operation's error.
    return c10d::Work::wait(timeout);
  }

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override {
    if (!done_.load(std::memory_order_acquire) && on_future_ && !future_asked_.exchange(true)) on_future_(this);
    return future_;
  }
  std::vector<at::Tensor> result() override { return outputs_; }

  // Called (once) by getFuture() of a Work not yet complete: the backend's
  // future thread then completes it even if nobody waits for the Work.
  void on_future(std::function<void(RailcollWork*)> f) { on_future_ = std::move(f); }

  // The post failed (the C API's status, or torch's exception): what was posted
  // before it is completed, then the Work fails with this error.
  void fail_post(std::exception_ptr error) {
    post_error_ = error;
    claim();
    complete(requests_.empty() ? RAILCOLL_OK : railcoll_waitall(size(), requests_.data()));
  }

 private:
  int size() const { return static_cast<int>(requests_.size()); }
  bool claim() {
    bool expected = false;
    return claimed_.compare_exchange_strong(expected, true, std::memory_order_acq_rel);
  }
  void unclaim() {
    claimed_.store(false, std::memory_order_release);
    cv_.notify_all();
  }

  void complete(railcoll_status_t st) {
    std::exception_ptr error = post_error_;
    if (!error && st != RAILCOLL_OK) error = status_error(st);
    if (!error && after_) {
      try {
        after_();
      } catch (...) {
        error = std::current_exception();
      }
    }
    kept_.clear();
    after_ = nullptr;
    if (error)
      future_->setError(error);
    else
      future_->markCompleted(c10::IValue(outputs_));
    finish(error);
    done_.store(true, std::memory_order_release);
  }

  std::exception_ptr status_error(railcoll_status_t st) const {
    try {
      C10_THROW_ERROR(DistBackendError, call_failed(op_.c_str(), rank_, st));
    } catch (...) {
      return std::current_exception();
    }
  }

  std::string op_;
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::vector<railcoll_request_t> requests_;
  std::vector<at::Tensor> kept_;
  std::function<void()> after_;
  std::function<void(RailcollWork*)> on_future_;
  std::exception_ptr post_error_;
  std::atomic<bool> claimed_{false}, future_asked_{false};
  std::atomic<bool> done_{false};
};

// Completes, in the order asked, the Works whose future was asked for (DDP's
// hooks chain on futures and never call wait()): one thread per process group,
// started at the first such Work, asleep in railcoll_wait or on its queue.
class FutureThread {
 public:
  ~FutureThread() { stop(); }

  void add(c10::intrusive_ptr<RailcollWork> work) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
      queue_.push_back(std::move(work));
      if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    }
    cv_.notify_one();
  }

  // Completes what is queued, then ends the thread.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    for (;;) {
      c10::intrusive_ptr<RailcollWork> work;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        work = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        work->wait();
      } catch (...) {
        // The error is the future's (and the Work's) already.
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<c10::intrusive_ptr<RailcollWork>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

// ---------------------------------------------------------------- helpers

size_t bytes_of(const at::Tensor& t) { return t.numel() * t.element_size(); }

void check_cpu(const at::Tensor& t, const char* op) {
  if (!t.device().is_cpu())
    fail(std::string(op) + " got a tensor on " + t.device().str() +
         ": the railcoll backend serves CPU tensors (register another backend for other devices, e.g. "
         "init_process_group(\"cpu:railcoll,cuda:nccl\"))");
  if (t.is_sparse()) fail(std::string(op) + " got a sparse tensor: the railcoll backend serves dense ones");
}

at::Tensor single(std::vector<at::Tensor>& tensors, const char* op) {
  if (tensors.size() != 1)
    fail(std::string(op) + " takes one tensor per call (got " + std::to_string(tensors.size()) + ")");
  check_cpu(tensors[0], op);
  return tensors[0];
}

// The C type a reduction runs in, and the dtype the tensor is carried in for
// it: the tensor's own when the library reduces that type, else a wider one
// whose result casts back exactly (docs/torch.md, "Datatypes").
struct ReduceType {
  railcoll_datatype_t type;
  at::ScalarType carried;
};

// The C type of a dtype the linked library reduces as itself, if any.
std::optional<railcoll_datatype_t> native_type(at::ScalarType s) {
  switch (s) {
    case at::kFloat: return RAILCOLL_FLOAT;
    case at::kDouble: return RAILCOLL_DOUBLE;
    case at::kInt: return RAILCOLL_INT32;
    case at::kLong: return RAILCOLL_INT64;
#if RAILCOLL_HAS_INT8
    case at::kChar: return RAILCOLL_INT8;
#endif
#if RAILCOLL_HAS_UINT8
    case at::kByte: return RAILCOLL_UINT8;
#endif
#if RAILCOLL_HAS_INT16
    case at::kShort: return RAILCOLL_INT16;
#endif
#if RAILCOLL_HAS_FLOAT16
    case at::kHalf: return RAILCOLL_FLOAT16;
#endif
#if RAILCOLL_HAS_BFLOAT16
    case at::kBFloat16: return RAILCOLL_BFLOAT16;
#endif
    default: return std::nullopt;
  }
}

ReduceType reduce_type(at::ScalarType s, const char* op) {
  if (auto t = native_type(s)) return {*t, s};
  switch (s) {
    case at::kChar:
    case at::kByte:
    case at::kShort:
    case at::kBool: return {RAILCOLL_INT32, at::kInt};
    case at::kHalf:
    case at::kBFloat16: return {RAILCOLL_FLOAT, at::kFloat};
    default: fail(std::string(op) + " cannot reduce " + std::string(c10::toString(s)) + " tensors");
  }
}

// How a torch reduce op runs: the C operator, and what is done to the result.
enum class After { Nothing, Average, NonZero, Parity };
struct ReducePlan {
  ReduceType type;
  railcoll_op_t op;
  After after = After::Nothing;
};

ReducePlan reduce_plan(at::ScalarType s, const ReduceOp& rop, const char* opname) {
  const std::string op = opname;
  ReducePlan p{reduce_type(s, opname), RAILCOLL_SUM};
  const bool is_bool = s == at::kBool, is_float = at::isFloatingType(s);
  [[maybe_unused]] auto need = [&](const char* coll_op) -> railcoll_op_t {
    fail(op + " with " + std::string(coll_op) + " needs railcoll's " + coll_op +
         " operator (this library has none): use gloo for it, e.g. a dist.new_group(backend=\"gloo\")");
  };
  switch (rop.op_) {
    case ReduceOp::SUM:
      p.op = RAILCOLL_SUM;
      if (is_bool) p.after = After::NonZero;  // logical or, as the other backends do
      return p;
    case ReduceOp::AVG:
      if (!is_float) fail(op + " with AVG takes floating-point tensors (got " + std::string(c10::toString(s)) + ")");
      p.op = RAILCOLL_SUM;
      p.after = After::Average;
      return p;
    case ReduceOp::MIN: p.op = RAILCOLL_MIN; return p;
    case ReduceOp::MAX: p.op = RAILCOLL_MAX; return p;
    case ReduceOp::PRODUCT:
      if (is_bool) { p.op = RAILCOLL_MIN; return p; }  // and
#if RAILCOLL_HAS_PROD
      p.op = RAILCOLL_PROD;
      return p;
#else
      need("PRODUCT");
#endif
    case ReduceOp::BAND:
    case ReduceOp::BOR:
    case ReduceOp::BXOR:
      if (is_float) fail(op + " with a bitwise operator takes integer or bool tensors");
      if (is_bool) {  // on 0/1 values: and = min, or = max, xor = parity of the sum
        p.op = rop.op_ == ReduceOp::BAND ? RAILCOLL_MIN : rop.op_ == ReduceOp::BOR ? RAILCOLL_MAX : RAILCOLL_SUM;
        if (rop.op_ == ReduceOp::BXOR) p.after = After::Parity;
        return p;
      }
#if RAILCOLL_HAS_BITWISE
      p.op = rop.op_ == ReduceOp::BAND ? RAILCOLL_BAND : rop.op_ == ReduceOp::BOR ? RAILCOLL_BOR : RAILCOLL_BXOR;
      return p;
#else
      need(rop.op_ == ReduceOp::BAND ? "BAND" : rop.op_ == ReduceOp::BOR ? "BOR" : "BXOR");
#endif
    default: fail(op + ": this reduce op is not supported by the railcoll backend (SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR are)");
  }
}

// The tensor the C call works on: `t` itself when it is contiguous and of the
// carried dtype, else a contiguous copy of it (copied back by finish()).
at::Tensor staged(const at::Tensor& t, at::ScalarType carried) {
  // (Tensor::to keeps a strided layout when the dtype stays: contiguous() apart.)
  return t.scalar_type() == carried ? t.contiguous() : t.to(carried).contiguous();
}
at::Tensor staged(const at::Tensor& t) { return staged(t, t.scalar_type()); }

void apply_after(at::Tensor& x, After after, int size) {
  switch (after) {
    case After::Nothing: break;
    case After::Average: x.div_(size); break;
    case After::NonZero: x.ne_(0); break;
    case After::Parity: x.remainder_(2); break;
  }
}

void copy_back(at::Tensor& dst, const at::Tensor& src) {
  if (!dst.is_same(src)) dst.copy_(src);
}

// ---------------------------------------------------------------- the backend

// Sets an environment variable for the life of this object unless it is set.
// (Set-up runs under the GIL-free creator, but process groups are made one at
// a time by torch, so no other set-up reads the environment meanwhile.)
class EnvDefault {
 public:
  EnvDefault(const char* name, const std::string& value) : name_(name) {
    if (std::getenv(name)) return;
    setenv(name, value.c_str(), 0);
    set_ = true;
  }
  ~EnvDefault() {
    if (set_) unsetenv(name_);
  }

 private:
  const char* name_;
  bool set_ = false;
};

class BackendRailcoll : public c10d::Backend {
 public:
  BackendRailcoll(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, double timeout_s,
                  const std::string& group_id)
      : c10d::Backend(rank, size) {
    // The C API reads these at set-up; the caller's own settings win.
    // RAILCOLL_TIMEOUT: the group's timeout is the deadline of every wait.
    // RAILCOLL_SPIN_US: 0, a waiting thread sleeps at once: the ranks' Python
    // threads need the cores to issue their calls (an 8 B all_reduce on 4 ranks
    // sharing 2 loaded cores: ~4 ms with the C API's 2 ms spin, ~0.3 ms without).
    EnvDefault timeout("RAILCOLL_TIMEOUT", std::to_string(std::max(1L, static_cast<long>(timeout_s))));
    EnvDefault spin("RAILCOLL_SPIN_US", "0");
    // All-reduces in chunks posted back to back (docs/torch.md, "Large
    // all-reduces"): on the default cluster 4 MiB chunks took a 64 MiB
    // all_reduce from 3.2 s to 0.87 s and 16 MiB from 306 to 245 ms.
    if (const char* c = std::getenv("RAILCOLL_TORCH_CHUNK_MIB")) {
      char* end = nullptr;
      const double mib = std::strtod(c, &end);
      if (end == c || *end || !(mib >= 0) || mib > 1 << 20)
        C10_THROW_ERROR(DistBackendError, std::string("railcoll: RAILCOLL_TORCH_CHUNK_MIB='") + c +
                                              "' is not a size in MiB (0: no chunks)");
      chunk_bytes_ = static_cast<int64_t>(mib * (1 << 20));
    }
    exchange_.store = store;
    exchange_.prefix = "railcoll/" + group_id + "/" + std::to_string(generation(group_id));
    exchange_.rank = rank;
    exchange_.size = size;
    railcoll_oob_t oob{};
    oob.allgather = &StoreExchange::allgather;
    oob.test = &StoreExchange::test;
    oob.release = &StoreExchange::release;
    oob.context = &exchange_;
    oob.rank = rank;
    oob.size = size;
    oob.node = nullptr;     // RAILCOLL_NODE, else the hostname: ranks of one host share memory
    oob.job_key = nullptr;  // RAILCOLL_JOB_KEY, else rank 0 draws one and the Store carries it
    railcoll_status_t st = railcoll_comm_init_oob(&comm_, &oob);
    if (st != RAILCOLL_OK) {
      std::string msg = std::string("setting up the communicator of group '") + group_id + "' failed: " +
                        railcoll_last_error();
      if (!exchange_.error.empty()) msg += " (the Store said: " + exchange_.error + ")";
      C10_THROW_ERROR(DistBackendError, "railcoll: " + msg);
    }
  }

  ~BackendRailcoll() override { shutdown(); }

  const std::string getBackendName() const override { return "railcoll"; }

  // Completes the outstanding operations, then ends the communicator (every rank does).
  void shutdown() override {
    std::deque<c10::intrusive_ptr<RailcollWork>> left;
    {
      std::lock_guard<std::recursive_mutex> lock(post_mutex_);
      if (stopping_) return;
      stopping_ = true;
      left.swap(outstanding_);
    }
    for (auto& w : left) {
      try {
        w->wait();
      } catch (...) {
        // Its error is the Work's; the communicator goes either way.
      }
    }
    futures_.stop();
    if (comm_) railcoll_comm_destroy(comm_);
    comm_ = nullptr;
  }

  // ---- operations: checked, staged and posted on the calling thread, in issue order

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override {
    at::Tensor t = single(tensors, "broadcast");
    const int root = static_cast<int>(opts.rootRank);
    return post(OpType::BROADCAST, "broadcast", {t}, [&](RailcollWork& w) {
      at::Tensor x = stage(w, t, t.scalar_type());
      check(railcoll_ibcast(comm_, x.data_ptr(), bytes_of(x), root, nullptr, w.next_request()), "broadcast");
      w.then([t, x]() mutable { copy_back(t, x); });
    });
  }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override {
    at::Tensor t = single(tensors, "all_reduce");
    ReducePlan plan = reduce_plan(t.scalar_type(), opts.reduceOp, "all_reduce");
    return post(OpType::ALLREDUCE, "all_reduce", {t}, [&](RailcollWork& w) {
      at::Tensor x = stage(w, t, plan.type.carried);
      post_allreduce(w, x, plan, "all_reduce");
      w.then([this, t, x, plan]() mutable {
        apply_after(x, plan.after, size_);
        copy_back(t, x);
      });
    });
  }

  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override {
    // One call over the tensors flattened, when they share a dtype (as DDP's buckets do).
    if (tensors.empty()) fail("all_reduce_coalesced got no tensors");
    for (auto& t : tensors) {
      check_cpu(t, "all_reduce_coalesced");
      if (t.scalar_type() != tensors[0].scalar_type()) fail("all_reduce_coalesced takes tensors of one dtype");
    }
    ReducePlan plan = reduce_plan(tensors[0].scalar_type(), opts.reduceOp, "all_reduce_coalesced");
    return post(OpType::ALLREDUCE_COALESCED, "all_reduce_coalesced", tensors, [&](RailcollWork& w) {
      at::Tensor flat = at::cat(flatten_each(tensors)).to(plan.type.carried);
      w.keep(flat);
      post_allreduce(w, flat, plan, "all_reduce_coalesced");
      std::vector<at::Tensor> outs = tensors;
      w.then([this, outs, flat, plan]() mutable {
        apply_after(flat, plan.after, size_);
        int64_t at = 0;
        for (auto& t : outs) {
          t.copy_(flat.narrow(0, at, t.numel()).view(t.sizes()));
          at += t.numel();
        }
      });
    });
  }

  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override {
    at::Tensor t = single(tensors, "reduce");
    ReducePlan plan = reduce_plan(t.scalar_type(), opts.reduceOp, "reduce");
    const int root = static_cast<int>(opts.rootRank);
    return post(OpType::REDUCE, "reduce", {t}, [&](RailcollWork& w) {
      at::Tensor x = stage(w, t, plan.type.carried);
      // The result into a buffer of its own on the root (the others' tensors stay as they were).
      at::Tensor out = rank_ == root ? at::empty_like(x) : at::Tensor();
      if (out.defined()) w.keep(out);
      check(railcoll_ireduce(comm_, x.data_ptr(), out.defined() ? out.data_ptr() : nullptr, x.numel(), plan.type.type,
                             plan.op, root, nullptr, w.next_request()),
            "reduce");
      if (out.defined())
        w.then([this, t, out, plan]() mutable {
          apply_after(out, plan.after, size_);
          t.copy_(out);
        });
    });
  }

  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions&) override {
    at::Tensor in = single(inputs, "all_gather");
    if (outputs.size() != 1 || static_cast<int>(outputs[0].size()) != size_)
      fail("all_gather needs one list of " + std::to_string(size_) + " output tensors");
    std::vector<at::Tensor> outs = outputs[0];
    std::vector<size_t> counts;
    bool equal = true;
    size_t total = 0;
    for (auto& o : outs) {
      check_cpu(o, "all_gather");
      if (o.scalar_type() != in.scalar_type()) fail("all_gather: output and input dtypes differ");
      counts.push_back(bytes_of(o));
      total += bytes_of(o);
      equal = equal && o.numel() == in.numel();
    }
    if (outs[rank_].numel() != in.numel()) fail("all_gather: this rank's output and its input differ in size");
    return post(OpType::ALLGATHER, "all_gather", outs, [&](RailcollWork& w) {
      at::Tensor x = stage(w, in, in.scalar_type());
      at::Tensor flat = at::empty({static_cast<int64_t>(total)}, in.options().dtype(at::kByte));
      w.keep(flat);
      if (equal)
        check(railcoll_iallgather(comm_, x.data_ptr(), flat.data_ptr(), bytes_of(x), nullptr, w.next_request()),
              "all_gather");
      else
        check(railcoll_iallgatherv(comm_, x.data_ptr(), flat.data_ptr(), counts.data(), nullptr, nullptr,
                                   w.next_request()),
              "all_gather");
      w.then([flat, outs, counts]() mutable { unpack_bytes(flat, outs, counts); });
    });
  }

  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions&) override {
    check_cpu(output, "all_gather_into_tensor");
    check_cpu(input, "all_gather_into_tensor");
    if (output.numel() != input.numel() * size_ || output.scalar_type() != input.scalar_type())
      fail("all_gather_into_tensor: the output must hold world size times the input, of its dtype");
    return post(OpType::_ALLGATHER_BASE, "all_gather_into_tensor", {output}, [&](RailcollWork& w) {
      w.then(post_allgather(w, output, input, "all_gather_into_tensor"));
    });
  }

  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) override {
    if (outputs.size() != inputs.size()) fail("all_gather_into_tensor_coalesced: as many outputs as inputs");
    for (size_t i = 0; i < outputs.size(); ++i) {
      check_cpu(outputs[i], "all_gather_into_tensor_coalesced");
      check_cpu(inputs[i], "all_gather_into_tensor_coalesced");
      if (outputs[i].numel() != inputs[i].numel() * size_ || outputs[i].scalar_type() != inputs[i].scalar_type())
        fail("all_gather_into_tensor_coalesced: each output must hold world size times its input, of its dtype");
    }
    return post(OpType::COALESCED, "all_gather_into_tensor_coalesced", outputs, [&](RailcollWork& w) {
      std::vector<std::function<void()>> afters;
      for (size_t i = 0; i < outputs.size(); ++i)
        afters.push_back(post_allgather(w, outputs[i], inputs[i], "all_gather_into_tensor_coalesced"));
      w.then([afters]() {
        for (auto& a : afters) a();
      });
    });
  }

  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override {
    at::Tensor in = single(inputs, "gather");
    const int root = static_cast<int>(opts.rootRank);
    std::vector<at::Tensor> outs;
    if (rank_ == root) outs = per_rank_list(outputs, in, "gather", "output tensors on the root");
    return post(OpType::GATHER, "gather", outs, [&](RailcollWork& w) {
      at::Tensor x = stage(w, in, in.scalar_type());
      at::Tensor flat;
      if (rank_ == root) {
        flat = at::empty({static_cast<int64_t>(bytes_of(x) * size_)}, in.options().dtype(at::kByte));
        w.keep(flat);
      }
      check(railcoll_igather(comm_, x.data_ptr(), flat.defined() ? flat.data_ptr() : nullptr, bytes_of(x), root,
                             nullptr, w.next_request()),
            "gather");
      if (flat.defined()) {
        std::vector<size_t> counts(size_, bytes_of(x));
        w.then([flat, outs, counts]() mutable { unpack_bytes(flat, outs, counts); });
      }
    });
  }

  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override {
    at::Tensor out = single(outputs, "scatter");
    const int root = static_cast<int>(opts.rootRank);
    std::vector<at::Tensor> ins;
    if (rank_ == root) ins = per_rank_list(inputs, out, "scatter", "input tensors on the root");
    return post(OpType::SCATTER, "scatter", {out}, [&](RailcollWork& w) {
      at::Tensor y = stage(w, out, out.scalar_type());
      at::Tensor flat;
      if (rank_ == root) {
        flat = at::cat(flatten_each(ins));
        w.keep(flat);
      }
      check(railcoll_iscatter(comm_, flat.defined() ? flat.data_ptr() : nullptr, y.data_ptr(), bytes_of(y), root,
                              nullptr, w.next_request()),
            "scatter");
      w.then([out, y]() mutable { copy_back(out, y); });
    });
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override {
    at::Tensor out = single(outputs, "reduce_scatter");
    std::vector<at::Tensor> ins = per_rank_list(inputs, out, "reduce_scatter", "input tensors");
    ReducePlan plan = reduce_plan(out.scalar_type(), opts.reduceOp, "reduce_scatter");
    return post(OpType::REDUCE_SCATTER, "reduce_scatter", {out}, [&](RailcollWork& w) {
      post_reduce_scatter(w, at::cat(flatten_each(ins)).to(plan.type.carried), out, plan, "reduce_scatter");
    });
  }

  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override {
    check_cpu(output, "reduce_scatter_tensor");
    check_cpu(input, "reduce_scatter_tensor");
    if (input.numel() != output.numel() * size_ || output.scalar_type() != input.scalar_type())
      fail("reduce_scatter_tensor: the input must hold world size times the output, of its dtype");
    ReducePlan plan = reduce_plan(output.scalar_type(), opts.reduceOp, "reduce_scatter_tensor");
    return post(OpType::_REDUCE_SCATTER_BASE, "reduce_scatter_tensor", {output}, [&](RailcollWork& w) {
      // The input as given when it is contiguous and of the carried dtype (the
      // library only reads it), else a contiguous copy.
      post_reduce_scatter(w, staged(input, plan.type.carried), output, plan, "reduce_scatter_tensor");
    });
  }

  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& out_splits, std::vector<int64_t>& in_splits,
                                               const c10d::AllToAllOptions&) override {
    check_cpu(output, "all_to_all_single");
    check_cpu(input, "all_to_all_single");
    if (output.scalar_type() != input.scalar_type()) fail("all_to_all_single: output and input dtypes differ");
    // Bytes per row of dimension 0: splits count rows.
    const int64_t row_in = input.dim() ? bytes_of(input) / std::max<int64_t>(1, input.size(0)) : 0;
    const int64_t row_out = output.dim() ? bytes_of(output) / std::max<int64_t>(1, output.size(0)) : 0;
    std::vector<size_t> scount(size_), sdispl(size_), rcount(size_), rdispl(size_);
    const bool even = out_splits.empty() && in_splits.empty();
    if (even) {
      if (input.numel() % size_ || output.numel() != input.numel())
        fail("all_to_all_single without splits needs input and output of equal size divisible by the world size");
    } else {
      auto fill = [&](const std::vector<int64_t>& splits, const at::Tensor& t, int64_t row, std::vector<size_t>& c,
                      std::vector<size_t>& d, const char* what) {
        if (!splits.empty() && static_cast<int>(splits.size()) != size_)
          fail(std::string("all_to_all_single: ") + what + " split sizes need one entry per rank");
        size_t at = 0;
        for (int r = 0; r < size_; ++r) {
          int64_t rows = splits.empty() ? t.size(0) / size_ : splits[r];
          c[r] = static_cast<size_t>(rows * row);
          d[r] = at;
          at += c[r];
        }
        if (at != bytes_of(t)) fail(std::string("all_to_all_single: the ") + what + " split sizes do not add up to its tensor");
      };
      fill(in_splits, input, row_in, scount, sdispl, "input");
      fill(out_splits, output, row_out, rcount, rdispl, "output");
    }
    return post(OpType::ALLTOALL_BASE, "all_to_all_single", {output}, [&](RailcollWork& w) {
      at::Tensor x = stage(w, input, input.scalar_type()), y = stage(w, output, output.scalar_type());
      if (even)
        check(railcoll_ialltoall(comm_, x.data_ptr(), y.data_ptr(), bytes_of(x) / size_, nullptr, w.next_request()),
              "all_to_all_single");
      else
        check(railcoll_ialltoallv(comm_, x.data_ptr(), scount.data(), sdispl.data(), y.data_ptr(), rcount.data(),
                                  rdispl.data(), nullptr, w.next_request()),
              "all_to_all_single");
      at::Tensor out = output;
      w.then([out, y]() mutable { copy_back(out, y); });
    });
  }

  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions&) override {
    if (static_cast<int>(outputs.size()) != size_ || static_cast<int>(inputs.size()) != size_)
      fail("all_to_all needs " + std::to_string(size_) + " input and output tensors");
    std::vector<size_t> scount(size_), sdispl(size_), rcount(size_), rdispl(size_);
    size_t s = 0, r = 0;
    for (int i = 0; i < size_; ++i) {
      check_cpu(inputs[i], "all_to_all");
      check_cpu(outputs[i], "all_to_all");
      scount[i] = bytes_of(inputs[i]);
      sdispl[i] = s;
      s += scount[i];
      rcount[i] = bytes_of(outputs[i]);
      rdispl[i] = r;
      r += rcount[i];
    }
    return post(OpType::ALLTOALL, "all_to_all", outputs, [&](RailcollWork& w) {
      at::Tensor x = at::cat(flatten_bytes(inputs));
      at::Tensor y = at::empty({static_cast<int64_t>(r)}, x.options());
      w.keep(x);
      w.keep(y);
      check(railcoll_ialltoallv(comm_, x.data_ptr(), scount.data(), sdispl.data(), y.data_ptr(), rcount.data(),
                                rdispl.data(), nullptr, w.next_request()),
            "all_to_all");
      std::vector<at::Tensor> outs = outputs;
      w.then([y, outs, rcount]() mutable { unpack_bytes(y, outs, rcount); });
    });
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions&) override {
    return post(OpType::BARRIER, "barrier", {},
                [&](RailcollWork& w) { check(railcoll_ibarrier(comm_, w.next_request()), "barrier"); });
  }

  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>&, int, int) override { no_p2p("send"); }
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>&, int, int) override { no_p2p("recv"); }
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>&, int) override { no_p2p("recv"); }

  // The C API call alone, on the caller's thread, after the outstanding
  // operations: what the backend adds per call is the torch call's time minus
  // this. Blocking (railcoll_allreduce) or nonblocking (railcoll_iallreduce and
  // railcoll_wait at once, what the backend does for a synchronous call).
  double capi_allreduce_us(at::Tensor t, int iters, bool nonblocking) {
    barrier(c10d::BarrierOptions())->wait();
    ReducePlan plan = reduce_plan(t.scalar_type(), ReduceOp(ReduceOp::SUM), "all_reduce");
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
      if (!nonblocking) {
        check(railcoll_allreduce(comm_, nullptr, t.data_ptr(), t.numel(), plan.type.type, plan.op, &kInPlace),
              "all_reduce");
        continue;
      }
      railcoll_request_t req;
      check(railcoll_iallreduce(comm_, nullptr, t.data_ptr(), t.numel(), plan.type.type, plan.op, &kInPlace, &req),
            "all_reduce");
      check(railcoll_wait(&req), "all_reduce");
    }
    auto end = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::micro>(end - start).count() / iters;
  }

 private:
  static constexpr railcoll_call_opts_t kInPlace{nullptr, RAILCOLL_IN_PLACE};

  // How many communicators of this group name this process has made before: a
  // name comes back after destroy_process_group, and its Store may still hold
  // the earlier set-up's keys. Every member makes them in the same order.
  static int generation(const std::string& group_id) {
    static std::mutex m;
    static std::map<std::string, int> made;
    std::lock_guard<std::mutex> lock(m);
    return made[group_id]++;
  }

  [[noreturn]] static void no_p2p(const char* op) {
    fail(std::string(op) +
         ": railcoll has no point-to-point operations: use gloo for them, e.g. init_process_group(\"cpu:gloo\") "
         "or a dist.new_group(backend=\"gloo\")");
  }

  // A post the C API refused: its message, raised from the Work (post() turns
  // the exception into the Work's error, as a failure in the call would be).
  void check(railcoll_status_t st, const char* op) {
    if (st != RAILCOLL_OK) C10_THROW_ERROR(DistBackendError, call_failed(op, rank_, st));
  }

  // The tensor the library works on for `t` (see staged()), kept for it.
  static at::Tensor stage(RailcollWork& w, const at::Tensor& t, at::ScalarType carried) {
    at::Tensor x = staged(t, carried);
    w.keep(x);
    return x;
  }

  // The one list of world-size tensors a rooted or scattering call takes, each
  // of the size and dtype of `like`.
  std::vector<at::Tensor> per_rank_list(const std::vector<std::vector<at::Tensor>>& lists, const at::Tensor& like,
                                        const std::string& op, const std::string& what) const {
    if (lists.size() != 1 || static_cast<int>(lists[0].size()) != size_)
      fail(op + " needs one list of " + std::to_string(size_) + " " + what);
    for (auto& t : lists[0]) {
      check_cpu(t, op.c_str());
      if (t.numel() != like.numel() || t.scalar_type() != like.scalar_type())
        fail(op + ": every tensor of the list must have the size and dtype of the " +
             (what.rfind("input", 0) == 0 ? "output" : "input"));
    }
    return lists[0];
  }

  static std::vector<at::Tensor> flatten_each(const std::vector<at::Tensor>& ts) {
    std::vector<at::Tensor> flat;
    for (auto& t : ts) flat.push_back(t.reshape({-1}));
    return flat;
  }
  static std::vector<at::Tensor> flatten_bytes(const std::vector<at::Tensor>& ts) {
    std::vector<at::Tensor> flat;
    for (auto& t : ts) flat.push_back(t.contiguous().reshape({-1}).view(at::kByte));
    return flat;
  }
  // Copies consecutive byte blocks of `flat` into `outs`.
  static void unpack_bytes(const at::Tensor& flat, std::vector<at::Tensor>& outs, const std::vector<size_t>& counts) {
    int64_t at = 0;
    for (size_t i = 0; i < outs.size(); ++i) {
      const auto n = static_cast<int64_t>(counts[i]);
      if (n) outs[i].copy_(flat.narrow(0, at, n).view(outs[i].scalar_type()).view(outs[i].sizes()));
      at += n;
    }
  }

  // Posts the all-reduce of `x` in place: one call, or one per chunk of
  // chunk_bytes_ (RAILCOLL_TORCH_CHUNK_MIB) posted back to back.
  void post_allreduce(RailcollWork& w, const at::Tensor& x, const ReducePlan& plan, const char* op) {
    const int64_t n = x.numel(), per = chunk_bytes_ ? std::max<int64_t>(1, chunk_bytes_ / x.element_size()) : n;
    for (int64_t at = 0; at < n || at == 0; at += per) {
      const int64_t len = std::min(per, n - at);
      check(railcoll_iallreduce(comm_, nullptr, static_cast<char*>(x.data_ptr()) + at * x.element_size(), len,
                                plan.type.type, plan.op, &kInPlace, w.next_request()),
            op);
      if (n == 0) break;
    }
  }

  // Posts an all-gather of `in` into `out`; returns what copies the result
  // back when `out` had to be staged.
  std::function<void()> post_allgather(RailcollWork& w, const at::Tensor& out, const at::Tensor& in, const char* op) {
    at::Tensor x = stage(w, in, in.scalar_type()), y = stage(w, out, out.scalar_type());
    check(railcoll_iallgather(comm_, x.data_ptr(), y.data_ptr(), bytes_of(x), nullptr, w.next_request()), op);
    at::Tensor o = out;
    return [o, y]() mutable { copy_back(o, y); };
  }

  // Posts the reduce-scatter of `flat` (world size blocks, in the carried
  // dtype, only read); this rank's block lands in `out`.
  void post_reduce_scatter(RailcollWork& w, const at::Tensor& flat, const at::Tensor& out, const ReducePlan& plan,
                           const char* op) {
    const int64_t n = out.numel();
    at::Tensor block = at::empty({n}, flat.options());
    w.keep(flat);
    w.keep(block);
    check(railcoll_ireduce_scatter_block(comm_, flat.data_ptr(), block.data_ptr(), n, plan.type.type, plan.op, nullptr,
                                         w.next_request()),
          op);
    at::Tensor o = out;
    w.then([this, o, block, plan]() mutable {
      apply_after(block, plan.after, size_);
      o.copy_(block.view(o.sizes()));
    });
  }

  // Makes the Work of one operation and posts it (start() stages the tensors
  // and calls railcoll_iCOLL) under the post lock, so the C API sees the
  // group's operations in issue order. A failed post fails the Work, not the
  // call: its error comes from wait() and the future, as a failure in the
  // collective would. Works that finished meanwhile are completed first.
  template <class Start>
  c10::intrusive_ptr<c10d::Work> post(OpType type, const char* op, std::vector<at::Tensor> outputs, Start&& start) {
    auto work = c10::make_intrusive<RailcollWork>(rank_, type, op, std::move(outputs));
    work->on_future([this](RailcollWork* w) {
      futures_.add(c10::intrusive_ptr<RailcollWork>::unsafe_reclaim_from_nonowning(w));
    });
    // Recursive: a future's callback run by reaping may post again.
    std::lock_guard<std::recursive_mutex> lock(post_mutex_);
    if (stopping_) fail(std::string(op) + ": the process group was destroyed");
    while (!outstanding_.empty() && outstanding_.front()->reap()) outstanding_.pop_front();
    try {
      start(*work);
    } catch (...) {
      work->fail_post(std::current_exception());
      return work;
    }
    outstanding_.push_back(work);
    return work;
  }

  railcoll_comm_t comm_ = nullptr;
  int64_t chunk_bytes_ = 4 << 20;  // 0: one call per all-reduce
  StoreExchange exchange_;
  std::recursive_mutex post_mutex_;
  // Every posted operation until it completed (the caller may drop its Work):
  // the buffers stay alive and shutdown() completes them.
  std::deque<c10::intrusive_ptr<RailcollWork>> outstanding_;
  bool stopping_ = false;
  FutureThread futures_;
};

c10::intrusive_ptr<c10d::Backend> create_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                 double timeout_s, const std::string& group_id) {
  // Set-up waits on the network: let other Python threads run meanwhile.
  pybind11::gil_scoped_release no_gil;
  return c10::make_intrusive<BackendRailcoll>(store, rank, size, timeout_s, group_id);
}

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

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  using namespace railcoll_torch;
  m.doc() = "railcoll's torch.distributed backend (CPU tensors)";
  m.def("create_backend", &create_backend, "the backend of one process group", pybind11::arg("store"),
        pybind11::arg("rank"), pybind11::arg("size"), pybind11::arg("timeout_s"), pybind11::arg("group_id"));
  m.def("features", &features, "the optional C API collectives, datatypes and operators this build uses");
  m.def("library_version", [] { return std::string(railcoll_version()); });
  m.def(
      "capi_allreduce_us",
      [](const c10::intrusive_ptr<c10d::Backend>& backend, at::Tensor t, int iters, bool nonblocking) {
        auto* b = dynamic_cast<BackendRailcoll*>(backend.get());
        if (!b) fail("capi_allreduce_us takes a railcoll backend");
        pybind11::gil_scoped_release no_gil;
        return b->capi_allreduce_us(t, iters, nonblocking);
      },
      "mean microseconds of railcoll_allreduce (or railcoll_iallreduce + railcoll_wait) itself on this "
      "backend's communicator (every rank calls it)",
      pybind11::arg("backend"), pybind11::arg("tensor"), pybind11::arg("iters"), pybind11::arg("nonblocking") = false);
}
