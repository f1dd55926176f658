// Requests and the engine that runs them (requests.hpp).
#include "runtime/requests.hpp"

#include <sched.h>

#include <chrono>

#include "runtime/net.hpp"

namespace railcoll::rt {

namespace {
// How long a driver sleeps in the transport at a time; a sleep ends early as
// soon as what the call waits for may have happened.
constexpr double kDriveSleep = 0.05;

Status status_of(const std::exception& e) {
  auto* err = dynamic_cast<const Error*>(&e);
  return err ? err->status : Status::Internal;
}
}  // namespace

Engine::Engine(Executor& exec, int rank, bool progress_thread)
    : exec_(exec), rank_(rank), use_thread_(progress_thread) {}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> q(queue_mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Engine::outstanding() {
  std::lock_guard<std::mutex> q(queue_mu_);
  return !queue_.empty();
}

void Engine::complete(Request& r, Status st, const std::string& msg) {
  std::lock_guard<std::mutex> q(queue_mu_);
  r.status_ = st;
  r.message_ = msg;
  r.state_.store(Request::State::Done, std::memory_order_release);
  done_cv_.notify_all();
}

// The running call failed: the executor is broken (and has told the peers),
// so every call queued behind it fails the same way.
void Engine::fail_all(Status st, const std::string& msg) {
  running_ = false;
  std::deque<std::shared_ptr<Request>> failed;
  {
    std::lock_guard<std::mutex> q(queue_mu_);
    failed.swap(queue_);
  }
  for (auto& r : failed) complete(*r, st, msg);
}

std::shared_ptr<Request> Engine::front() {
  std::lock_guard<std::mutex> q(queue_mu_);
  return queue_.empty() ? nullptr : queue_.front();
}

void Engine::pop_front() {
  std::lock_guard<std::mutex> q(queue_mu_);
  queue_.pop_front();
}

// The front request's current step into the executor. A failure before the
// call began is this rank's own (its before() refused the call, or the node's
// memory cannot hold it): the former is told to the peers, as a blocking call
// that fails its checks does.
void Engine::begin_step() {
  std::shared_ptr<Request> r = front();
  Step& s = r->steps[r->step_];
  try {
    if (s.before) s.before(s);
  } catch (const std::exception& e) {
    exec_.abandon("rank " + std::to_string(rank_) + "'s call failed before it began: " + e.what());
    complete(*r, status_of(e), e.what());
    pop_front();
    return fail_all(Status::Broken, "communicator is broken: " + exec_.broken());
  }
  try {
    exec_.start(*s.plan, s.bufs);
    running_ = true;
  } catch (const std::exception& e) {
    if (!exec_.broken().empty()) return fail_all(status_of(e), e.what());
    complete(*r, status_of(e), e.what());  // Unsupported on every rank alike: nothing broke
    pop_front();
  }
}

void Engine::step_ended() {
  running_ = false;
  std::shared_ptr<Request> r = front();
  Step& s = r->steps[r->step_];
  if (s.after) s.after();
  if (++r->step_ < r->steps.size()) return begin_step();
  pop_front();
  complete(*r, Status::Ok, "");
}

// Runs the executor on the outstanding calls until the front one must wait;
// then lets the transport take in what arrived, sleeping up to sleep_s for it,
// and advances again. False when nothing is outstanding. drive_mu_ is held.
bool Engine::drive(double sleep_s) {
  bool slept = false;
  for (;;) {
    if (!running_) {
      std::shared_ptr<Request> r = front();
      if (!r) return false;
      r->step_ = 0;
      begin_step();
      continue;
    }
    bool ended = false;
    try {
      ended = exec_.advance();
    } catch (const std::exception& e) {
      fail_all(status_of(e), e.what());
      continue;
    }
    if (ended) {
      step_ended();
      continue;
    }
    if (slept) return true;
    try {
      exec_.idle(sleep_s);  // 0: one look at the network without blocking
    } catch (const std::exception& e) {
      fail_all(status_of(e), e.what());
      continue;
    }
    slept = true;
  }
}

void Engine::post(const std::shared_ptr<Request>& r) {
  if (r->state() != Request::State::Inactive)  // Done counts as active until a wait or test reports it
    throw InputError("the request is already active (start it again once a wait or test has completed it)");
  r->status_ = Status::Ok;
  r->message_.clear();
  r->step_ = 0;
  r->state_.store(Request::State::Queued, std::memory_order_release);
  {
    std::lock_guard<std::mutex> q(queue_mu_);
    queue_.push_back(r);
    if (use_thread_ && !thread_.joinable()) thread_ = std::thread([this] { thread_main(); });
  }
  work_cv_.notify_one();
  poll();  // gets the call going now (its first sends out)
}

void Engine::poll() {
  if (!drive_mu_.try_lock()) return;  // another thread drives
  drive(0);
  drive_mu_.unlock();
}

bool Engine::test(Request& r) {
  if (r.state() != Request::State::Done) poll();
  return r.state() == Request::State::Done;
}

// Drives while it can; while another thread drives, sleeps until a request
// completes. Spins first (yielding) for the executor's spin budget, as a
// blocking call does.
void Engine::wait(Request& r) {
  const double start = now_seconds(), spin = exec_.spin_seconds();
  while (r.state() != Request::State::Done) {
    if (drive_mu_.try_lock()) {
      const bool spinning = now_seconds() - start < spin;
      drive(spinning ? 0 : kDriveSleep);
      drive_mu_.unlock();
      if (spinning) sched_yield();
      continue;
    }
    std::unique_lock<std::mutex> q(queue_mu_);
    done_cv_.wait_for(q, std::chrono::milliseconds(50), [&] { return r.state() == Request::State::Done; });
  }
}

void Engine::run(const Plan& plan, const Buffers& b) {
  if (!outstanding()) {  // the progress thread drives only while something is
    std::lock_guard<std::mutex> d(drive_mu_);
    if (!outstanding()) return exec_.run(plan, b);
  }
  // Behind calls still outstanding: in their order, as a request that does
  // not own its plan (the caller holds it until this returns).
  auto r = std::make_shared<Request>();
  r->steps.push_back(Step{std::shared_ptr<const Plan>(std::shared_ptr<const Plan>(), &plan), b, {}, {}});
  post(r);
  wait(*r);
  if (r->status() != Status::Ok) throw RuntimeError(r->status(), r->message());
}

void Engine::drain() {
  while (outstanding()) {
    std::lock_guard<std::mutex> d(drive_mu_);
    drive(kDriveSleep);
  }
}

void Engine::thread_main() {
  for (;;) {
    {
      std::unique_lock<std::mutex> q(queue_mu_);
      work_cv_.wait(q, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
    }
    std::lock_guard<std::mutex> d(drive_mu_);
    drive(kDriveSleep);
  }
}

}  // namespace railcoll::rt
