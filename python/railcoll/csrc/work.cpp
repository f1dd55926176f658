#include "work.hpp"

#include <c10/util/Exception.h>

namespace railcoll_torch {

RailcollWork::RailcollWork(int rank, c10d::OpType type, const char* op, std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type, (std::string("railcoll:") + op).c_str()), op_(op), outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

RailcollWork::~RailcollWork() {
  // The backend holds every Work until it completed; should one still hold
  // requests, the library writes into kept_ until they end: wait for them.
  for (auto& r : requests_) wait_one(&r);
}

Request* RailcollWork::next_request() {
  requests_.push_back(kNoRequest);
  return &requests_.back();
}

void RailcollWork::then(std::function<void()> after) { after_.push_back(std::move(after)); }

int RailcollWork::sourceRank() const {
  if (!source_) return c10d::Work::sourceRank();
  return source_();
}

bool RailcollWork::parts_done() {
  for (auto& p : parts_)
    if (!p->isCompleted()) return false;
  return true;
}

bool RailcollWork::isCompleted() {
  if (done_.load(std::memory_order_acquire)) return true;
  if (!parts_done() || !claim()) return false;
  bool done = false;
  Status st = test_all(requests_, &done);
  if (!done) {
    unclaim();
    return false;
  }
  complete(st);
  return true;
}

bool RailcollWork::reap() {
  if (done_.load(std::memory_order_acquire)) return true;
  if (!parts_.empty() || !claim()) return false;
  if (!all_done(requests_)) {
    unclaim();
    return false;
  }
  complete(wait_all(requests_));
  return true;
}

bool RailcollWork::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const bool bounded = timeout != kNoTimeout;
  for (auto& p : parts_) {
    try {
      p->wait(bounded ? std::max(std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                                     deadline - std::chrono::steady_clock::now()))
                      : kNoTimeout);
    } catch (...) {
      if (bounded && !p->isCompleted()) throw;  // timed out: this Work stays outstanding
      // Failed: complete() takes its error.
    }
  }
  while (!done_.load(std::memory_order_acquire)) {
    if (claim()) {
      if (!bounded) {
        complete(wait_all(requests_));
        break;
      }
      bool done = false;
      Status st = test_all(requests_, &done);
      if (done) {
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

c10::intrusive_ptr<c10::ivalue::Future> RailcollWork::getFuture() {
  if (!done_.load(std::memory_order_acquire) && on_future_ && !future_asked_.exchange(true)) on_future_(this);
  return future_;
}

void RailcollWork::fail_post(std::exception_ptr error) {
  post_error_ = error;
  claim();
  complete(wait_all(requests_));
}

void RailcollWork::abandon(const std::string& why) {
  if (!claim()) return;  // another thread completes it
  for (auto& r : requests_) withdraw(&r);  // matched ones complete in the library, unseen
  try {
    C10_THROW_ERROR(DistBackendError, "railcoll: " + op_ + ": " + why);
  } catch (...) {
    post_error_ = std::current_exception();
  }
  complete(kOk);
}

bool RailcollWork::claim() {
  bool expected = false;
  return claimed_.compare_exchange_strong(expected, true, std::memory_order_acq_rel);
}

void RailcollWork::unclaim() {
  claimed_.store(false, std::memory_order_release);
  cv_.notify_all();
}

void RailcollWork::complete(Status st) {
  std::exception_ptr error = post_error_;
  if (!error && st != kOk) error = status_error(st);
  for (auto& p : parts_)
    if (!error && p->exception()) error = p->exception();
  if (!error) {
    try {
      for (auto& a : after_) a();
    } catch (...) {
      error = std::current_exception();
    }
  }
  kept_.clear();
  alive_.clear();
  after_.clear();
  parts_.clear();
  if (error)
    future_->setError(error);
  else
    future_->markCompleted(c10::IValue(outputs_));
  finish(error);
  done_.store(true, std::memory_order_release);
}

std::exception_ptr RailcollWork::status_error(Status st) const {
  try {
    C10_THROW_ERROR(DistBackendError, call_failed(op_.c_str(), rank_, st));
  } catch (...) {
    return std::current_exception();
  }
}

// ---- FutureThread

void FutureThread::add(c10::intrusive_ptr<RailcollWork> work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    queue_.push_back(std::move(work));
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  }
  cv_.notify_one();
}

void FutureThread::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void FutureThread::run() {
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

}  // namespace railcoll_torch
