// Requests and the engine that runs them (requests.hpp).
#include "runtime/engine/requests.hpp"

#include <sched.h>
#include <poll.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "runtime/bootstrap/net.hpp"

namespace railcoll::rt {

namespace {
// How long a driver sleeps in the transport at a time; a sleep ends early as
// soon as what the call waits for may have happened.
constexpr double kDriveSleep = 0.05;
// How long the progress thread lets a call be after it was posted before it
// drives it (thread_main).
constexpr auto kThreadGrace = std::chrono::microseconds(200);

Status status_of(const std::exception& e) {
  auto* err = dynamic_cast<const Error*>(&e);
  return err ? err->status : Status::Internal;
}
}  // namespace

ProgressSettings ProgressSettings::from(const Settings& s) {
  ProgressSettings p;
  p.thread = s.flag(Setting::ProgressThread);
  p.nice_given = s.given(Setting::ProgressNice);
  if (p.nice_given) p.nice = static_cast<int>(s.integer(Setting::ProgressNice));
  parse_progress_priority(s.text(Setting::ProgressPriority), &p.priority);  // the table checked the choice
  return p;
}

RequestQueue::RequestQueue(Executor& exec, int rank, const ProgressSettings& settings)
    : exec_(exec), rank_(rank), use_thread_(settings.thread), nice_(settings.nice), nice_given_(settings.nice_given),
      priority_(settings.priority) {
  exec_.mailbox().on_complete([this](Request& r, Status st, const std::string& msg) { complete(r, st, msg); });
}

RequestQueue::~RequestQueue() {
  {
    std::lock_guard<std::mutex> q(queue_mu_);
    stop_ = true;
  }
  wake_thread_after(std::chrono::nanoseconds(1));
  if (thread_.joinable()) thread_.join();
  if (timer_fd_ >= 0) close(timer_fd_);
}

// The progress thread sleeps on a timer (timerfd): armed at a post for
// kThreadGrace, disarmed by a waiter that finished what was outstanding. So a
// caller that posts and waits at once never wakes the thread, while a caller
// gone computing has its calls driven from kThreadGrace after the post on
// (a condition variable notified at every post, or a timer due within about a
// millisecond, cost a large part of a short call: docs/runtime.md, "Calls in
// the background", has the measurements).
void RequestQueue::wake_thread_after(std::chrono::nanoseconds delay) {
  if (timer_fd_ < 0) return;
  itimerspec when{};
  when.it_value.tv_sec = static_cast<time_t>(delay.count() / 1000000000);
  when.it_value.tv_nsec = static_cast<long>(delay.count() % 1000000000);
  timerfd_settime(timer_fd_, 0, &when, nullptr);
}

bool RequestQueue::outstanding() {
  std::lock_guard<std::mutex> q(queue_mu_);
  return !queue_.empty();
}

void RequestQueue::complete(Request& r, Status st, const std::string& msg) {
  std::lock_guard<std::mutex> q(queue_mu_);
  r.status_ = st;
  r.message_ = msg;
  r.state_.store(Request::State::Done, std::memory_order_release);
  done_cv_.notify_all();
}

// The running call failed: the executor is broken (and has told the peers),
// so every call queued behind it fails the same way.
void RequestQueue::fail_all(Status st, const std::string& msg) {
  running_ = false;
  std::deque<std::shared_ptr<Request>> failed;
  {
    std::lock_guard<std::mutex> q(queue_mu_);
    failed.swap(queue_);
  }
  for (auto& r : failed) complete(*r, st, msg);
  exec_.mailbox().fail_all(st, msg);
}

std::shared_ptr<Request> RequestQueue::front() {
  std::lock_guard<std::mutex> q(queue_mu_);
  return queue_.empty() ? nullptr : queue_.front();
}

void RequestQueue::pop_front() {
  std::lock_guard<std::mutex> q(queue_mu_);
  queue_.pop_front();
}

// The front request's current step into the executor. A failure before the
// call began is this rank's own (its before() refused the call, or the node's
// memory cannot hold it): the former is told to the peers, as a blocking call
// that fails its checks does.
void RequestQueue::begin_step() {
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
  if (!s.plan) return step_ended();  // nothing to do this time (a persistent call's known counts)
  try {
    exec_.start(*s.plan, s.bufs);
    running_ = true;
  } catch (const std::exception& e) {
    if (!exec_.broken().empty()) return fail_all(status_of(e), e.what());
    complete(*r, status_of(e), e.what());  // Unsupported on every rank alike: nothing broke
    pop_front();
  }
}

void RequestQueue::step_ended() {
  running_ = false;
  std::shared_ptr<Request> r = front();
  Step& s = r->steps[r->step_];
  if (s.after) s.after();
  if (++r->step_ < r->steps.size()) return begin_step();
  pop_front();
  complete(*r, Status::Ok, "");
}

// Runs the executor on the outstanding calls until the front one must wait;
// then lets the transport take in what arrived, sleeping up to sleep_s for it
// (a waiter: wait_idle, which runs the executor's wait hook), and advances
// again. False when nothing is outstanding. drive_mu_ is held.
bool RequestQueue::drive(double sleep_s, bool waiter) {
  bool slept = false;
  for (;;) {
    exec_.mailbox().poll();
    if (!running_) {
      std::shared_ptr<Request> r = front();
      if (!r) {  // no collective: the network, for point-to-point messages alone
        if (slept || !exec_.mailbox().waiting()) return false;
        try {
          if (waiter) exec_.wait_idle(sleep_s);
          else exec_.idle(sleep_s);
        } catch (const std::exception& e) {
          fail_all(status_of(e), e.what());
        }
        slept = true;
        continue;
      }
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
      if (waiter) exec_.wait_idle(sleep_s);
      else exec_.idle(sleep_s);  // 0: one look at the network without blocking
    } catch (const std::exception& e) {
      fail_all(status_of(e), e.what());
      continue;
    }
    slept = true;
  }
}

void RequestQueue::post(const std::shared_ptr<Request>& r) {
  if (r->state() != Request::State::Inactive)  // Done counts as active until a wait or test reports it
    throw InputError("the request is already active (start it again once a wait or test has completed it)");
  r->status_ = Status::Ok;
  r->message_.clear();
  r->step_ = 0;
  r->state_.store(Request::State::Queued, std::memory_order_release);
  {
    std::lock_guard<std::mutex> q(queue_mu_);
    queue_.push_back(r);
    if (use_thread_ && !thread_.joinable()) {
      timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
      if (timer_fd_ < 0) throw RuntimeError(Status::Internal, std::string("timerfd_create: ") + strerror(errno));
      thread_ = std::thread([this] { thread_main(); });
    }
  }
  wake_thread_after(kThreadGrace);
  poll();  // gets the call going now (its first sends out)
}

void RequestQueue::post_message(const std::shared_ptr<Request>& r) {
  if (r->state() != Request::State::Inactive) throw InputError("the request is already active");
  r->status_ = Status::Ok;
  r->message_.clear();
  std::lock_guard<std::mutex> d(drive_mu_);
  if (!exec_.broken().empty()) throw RuntimeError(Status::Broken, "communicator is broken: " + exec_.broken());
  r->state_.store(Request::State::Queued, std::memory_order_release);
  try {
    exec_.mailbox().post(r);
  } catch (const InputError&) {
    r->state_.store(Request::State::Inactive, std::memory_order_release);
    throw;
  } catch (const std::exception& e) {  // the transport failed: the communicator is broken
    exec_.abandon(e.what());
    fail_all(status_of(e), e.what());
  }
}

void RequestQueue::withdraw(const std::shared_ptr<Request>& r) {
  std::lock_guard<std::mutex> d(drive_mu_);
  exec_.mailbox().withdraw(r);
}

void RequestQueue::poll() {
  if (!drive_mu_.try_lock()) return;  // another thread drives
  drive(0);
  drive_mu_.unlock();
  if (waiters_.load() > 0) released();
}

// drive_mu_ was let go: a waiter asleep because someone else drove may drive now.
void RequestQueue::released() {
  std::lock_guard<std::mutex> q(queue_mu_);
  ++releases_;
  done_cv_.notify_all();
}

bool RequestQueue::test(Request& r) {
  if (r.state() != Request::State::Done) poll();
  return r.state() == Request::State::Done;
}

// Drives while it can, keeping the drive lock until r is done. A waiter that
// finds the progress thread driving sleeps until the thread lets go, which it
// does after its current round (the next frame, or 50 ms) because a waiter is
// there: then the waiter drives the rest itself, and its wake-ups are the
// network's alone, as in a blocking call, not the thread's as well. Spins
// first (yielding) for the executor's spin budget, as a blocking call does.
void RequestQueue::wait(Request& r) {
  const double start = now_seconds(), spin = exec_.spin_seconds();
  BoostWhileAsleep boost(priority_);  // thread_priority.hpp
  {
    std::lock_guard<std::mutex> q(queue_mu_);
    ++waiters_;
  }
  // The thread's timer would go off in the middle of the call for nothing, a
  // wake-up per rank that costs the call as much as it lasts on a crowded node
  // (docs/results.md, "The measurements behind the runtime's defaults"): a
  // waiter disarms it.
  wake_thread_after(std::chrono::nanoseconds(0));
  while (r.state() != Request::State::Done) {
    // The releases seen before trying the lock: a driver that lets go between
    // a failed try and the nap below is seen, not slept through.
    uint64_t seen;
    {
      std::lock_guard<std::mutex> q(queue_mu_);
      seen = releases_;
    }
    if (drive_mu_.try_lock()) {
      std::lock_guard<std::mutex> d(drive_mu_, std::adopt_lock);
      while (r.state() != Request::State::Done) {
        const bool spinning = now_seconds() - start < spin;
        if (!spinning) boost.before_sleep();
        drive(spinning ? 0 : kDriveSleep, !spinning);
        if (spinning) sched_yield();
      }
      break;
    }
    {
      // Asleep while another thread drives: for at most the wait hook's interval.
      const auto nap = exec_.has_wait_hook()
                           ? std::chrono::duration_cast<std::chrono::microseconds>(
                                 std::chrono::duration<double>(exec_.wait_hook_every()))
                           : std::chrono::microseconds(50000);
      boost.before_sleep();
      std::unique_lock<std::mutex> q(queue_mu_);
      done_cv_.wait_for(q, nap, [&] { return r.state() == Request::State::Done || releases_ != seen; });
    }
    exec_.run_wait_hook_if_due();
  }
  std::lock_guard<std::mutex> q(queue_mu_);
  if (--waiters_ == 0 && !queue_.empty()) wake_thread_after(std::chrono::nanoseconds(1));  // the thread's again
}

void RequestQueue::run(const Plan& plan, const Buffers& b) {
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

void RequestQueue::drain() {
  while (outstanding()) {
    std::lock_guard<std::mutex> d(drive_mu_);
    drive(kDriveSleep);
  }
}

void RequestQueue::abandon(const std::string& why) {
  std::lock_guard<std::mutex> d(drive_mu_);
  exec_.abandon(why);
  fail_all(Status::Broken, "communicator is broken: " + exec_.broken());
}

std::string RequestQueue::broken() {
  std::lock_guard<std::mutex> d(drive_mu_);
  return exec_.broken();
}

// The progress thread drives while something is outstanding and nobody waits
// for it (a waiter drives itself, see wait()). RAILCOLL_PROGRESS_NICE and
// RAILCOLL_PROGRESS_PRIORITY give it another priority: where every core
// computes, its wake-ups must preempt the computation for the call to progress
// at the network's pace (thread_priority.hpp).
void RequestQueue::thread_main() {
  pthread_setname_np(pthread_self(), "railcoll-prog");  // for top, perf sched, /proc/*/task
  const id_t tid = static_cast<id_t>(syscall(SYS_gettid));
  if (nice_given_) setpriority(PRIO_PROCESS, tid, nice_);  // best effort
  errno = 0;
  int nice = getpriority(PRIO_PROCESS, tid);  // -1 is a nice value too: errno tells
  if (errno) nice = 0;
  RealtimeBudget budget(apply_progress_priority(priority_, nice) == ProgressPriority::Realtime, nice);
  pollfd timer{timer_fd_, POLLIN, 0};
  for (;;) {
    if (::poll(&timer, 1, -1) < 0 && errno != EINTR) return;
    uint64_t expirations;
    if (read(timer_fd_, &expirations, sizeof expirations) < 0) continue;  // disarmed meanwhile
    for (;;) {
      {
        std::lock_guard<std::mutex> q(queue_mu_);
        if (stop_) return;
        if (queue_.empty() || waiters_ > 0) break;  // a waiter drives (wait())
      }
      drive_mu_.lock();
      drive(kDriveSleep);
      drive_mu_.unlock();
      budget.after_round();
      if (waiters_.load() > 0) released();  // a waiter that came meanwhile takes over
    }
  }
}

}  // namespace railcoll::rt
