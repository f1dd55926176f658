// The Work of one operation and how it completes (docs/torch.md,
// "Asynchronous, as Gloo").
#pragma once
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "capi.hpp"

namespace railcoll_torch {

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
  RailcollWork(int rank, c10d::OpType type, const char* op, std::vector<at::Tensor> outputs);
  ~RailcollWork() override;

  // ---- posting (the backend, on the calling thread)
  Request* next_request();                  // a slot for one more request of this operation
  void keep(at::Tensor t) { kept_.push_back(std::move(t)); }  // alive until the operation completes
  void then(std::function<void()> after);   // once every request completed successfully (runs after earlier ones)
  const std::string& op() const { return op_; }
  // Completes with these Works (the coalescing manager's: one Work for the operations in between).
  void join(std::vector<c10::intrusive_ptr<RailcollWork>> parts) { parts_ = std::move(parts); }
  // A point-to-point receive from any source: the rank it came from, once complete.
  void source_from(std::function<int()> f) { source_ = std::move(f); }
  // Anything else the library writes into until the operation completes.
  void keep_alive(std::shared_ptr<void> p) { alive_.push_back(std::move(p)); }

  // ---- completing
  bool isCompleted() override;
  // Completes the Work if every request is done, without advancing anything
  // (the backend reaps finished Works this way at each post).
  bool reap();
  // Without a timeout, railcoll_wait's deadline applies (RAILCOLL_TIMEOUT, the
  // group's timeout): a dead peer fails the call within milliseconds, a hung
  // one at the deadline. With one, the requests are tested until it passes.
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::vector<at::Tensor> result() override { return outputs_; }
  int sourceRank() const override;

  // Called (once) by getFuture() of a Work not yet complete: the backend's
  // future thread then completes it even if nobody waits for the Work.
  void on_future(std::function<void(RailcollWork*)> f) { on_future_ = std::move(f); }
  // The post failed (the C API's status, or torch's exception): what was posted
  // before it is completed, then the Work fails with this error.
  void fail_post(std::exception_ptr error);
  // A receive given up on (its wait timed out): withdrawn unless a message
  // matched it, then the Work fails with `why` (if it did not complete first).
  void abandon(const std::string& why);

 private:
  bool claim();
  void unclaim();
  bool parts_done();
  void complete(Status st);
  std::exception_ptr status_error(Status st) const;

  std::string op_;
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::vector<Request> requests_;
  std::vector<at::Tensor> kept_;
  std::vector<std::shared_ptr<void>> alive_;
  std::vector<std::function<void()>> after_;
  std::vector<c10::intrusive_ptr<RailcollWork>> parts_;
  std::function<int()> source_;
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
  void add(c10::intrusive_ptr<RailcollWork> work);
  // Completes what is queued, then ends the thread.
  void stop();

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<c10::intrusive_ptr<RailcollWork>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace railcoll_torch
