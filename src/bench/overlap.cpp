#include "bench/overlap.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include "bench/busy_compute.h"

namespace railcoll::bench {

namespace {

// Keeps the busy loop's result, so the compiler keeps the loop.
volatile double compute_sink = 0;

// One collective call of any form, its request kept for persistent calls.
class Caller {
 public:
  Caller(railcoll_comm_t comm, BenchCall& call, CallForm form, const railcoll_call_opts_t* opts)
      : comm_(comm), call_(call), form_(form), opts_(opts) {}
  ~Caller() {
    if (persistent_ != RAILCOLL_REQUEST_NULL) railcoll_request_free(&persistent_);
  }
  // The persistent request, built once (plan, checks) before any timed call.
  railcoll_status_t init() {
    return form_ == CallForm::Persistent ? call_.post(CallForm::Persistent, comm_, opts_, &persistent_) : RAILCOLL_OK;
  }
  railcoll_status_t blocking() { return call_.run(comm_, opts_); }
  // railcoll_iCOLL, or railcoll_start of the persistent request.
  railcoll_status_t post() {
    if (form_ == CallForm::Persistent) return railcoll_start(persistent_);
    request_ = RAILCOLL_REQUEST_NULL;
    return call_.post(CallForm::Nonblocking, comm_, opts_, &request_);
  }
  railcoll_status_t wait() { return railcoll_wait(form_ == CallForm::Persistent ? &persistent_ : &request_); }

 private:
  railcoll_comm_t comm_;
  BenchCall& call_;
  CallForm form_;
  const railcoll_call_opts_t* opts_;
  railcoll_request_t persistent_ = RAILCOLL_REQUEST_NULL, request_ = RAILCOLL_REQUEST_NULL;
};

std::string failed(const std::string& what, railcoll_status_t st) {
  return what + ": " + railcoll_strerror(st) + ": " + railcoll_last_error();
}

}  // namespace

std::string time_overlap(railcoll_comm_t comm, BenchCall& call, CallForm form, const railcoll_call_opts_t* opts,
                         int calls, int warmup, bool validate, int idle_us, OverlapTimes* mine, std::string* wrong) {
  Caller caller(comm, call, form, opts);
  if (railcoll_status_t st = caller.init(); st != RAILCOLL_OK) return failed("the persistent request", st);
  int sequence = 0;  // every call's number, the same on every rank: its input and expected result
  // Before each call: its input, the rest, the barrier (each call timed alone).
  auto before = [&]() -> std::string {
    if (validate) call.prepare(sequence);
    if (idle_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(idle_us));
    railcoll_status_t st = railcoll_barrier(comm);
    return st == RAILCOLL_OK ? "" : failed("barrier", st);
  };
  // After it: checked once every rank has left it (bench/harness.cpp says why).
  auto after = [&](const char* kind) -> std::string {
    if (validate) {
      if (railcoll_status_t st = railcoll_barrier(comm); st != RAILCOLL_OK) return failed("barrier", st);
      std::string w = call.check(sequence);
      if (!w.empty() && wrong->empty()) *wrong = std::string(kind) + " call " + std::to_string(sequence) + ": " + w;
    }
    ++sequence;
    return "";
  };
  std::string err;
  // Blocking and pure nonblocking calls alternate, which one first changing
  // every round, so that both see the same machine.
  auto blocking = [&](int i) -> std::string {
    if (!(err = before()).empty()) return err;
    const double t0 = monotonic_us();
    if (railcoll_status_t st = caller.blocking(); st != RAILCOLL_OK) return failed("the blocking call", st);
    const double t1 = monotonic_us();
    if (i >= 0) mine->series(OverlapTimes::BlockingIn)[i] = t0, mine->series(OverlapTimes::BlockingOut)[i] = t1;
    return after("blocking");
  };
  auto pure = [&](int i) -> std::string {
    if (!(err = before()).empty()) return err;
    const double t0 = monotonic_us();
    if (railcoll_status_t st = caller.post(); st != RAILCOLL_OK) return failed("post", st);
    if (railcoll_status_t st = caller.wait(); st != RAILCOLL_OK) return failed("wait", st);
    const double t1 = monotonic_us();
    if (i >= 0) mine->series(OverlapTimes::PureIn)[i] = t0, mine->series(OverlapTimes::PureOut)[i] = t1;
    return after(call_form_name(form));
  };
  for (int i = -warmup; i < calls; ++i) {
    const bool blocking_first = (i & 1) == 0;
    if (!(err = blocking_first ? blocking(i) : pure(i)).empty()) return err;
    if (!(err = blocking_first ? pure(i) : blocking(i)).empty()) return err;
  }
  // Each rank computes for its own mean nonblocking latency (OSU's latency_in_secs).
  double target = 0;
  for (int i = 0; i < calls; ++i)
    target += mine->series(OverlapTimes::PureOut)[i] - mine->series(OverlapTimes::PureIn)[i];
  target /= std::max(1, calls);
  for (int i = -warmup; i < calls; ++i) {
    if (!(err = before()).empty()) return err;
    const double t0 = monotonic_us();
    if (railcoll_status_t st = caller.post(); st != RAILCOLL_OK) return failed("post", st);
    const double t1 = monotonic_us();
    compute_sink = railcoll_busy_compute(target);
    const double t2 = monotonic_us();
    if (railcoll_status_t st = caller.wait(); st != RAILCOLL_OK) return failed("wait after computing", st);
    const double t3 = monotonic_us();
    if (i >= 0) {
      mine->series(OverlapTimes::OverlapIn)[i] = t0, mine->series(OverlapTimes::OverlapOut)[i] = t3;
      mine->series(OverlapTimes::Post)[i] = t1 - t0;
      mine->series(OverlapTimes::Compute)[i] = t2 - t1;
      mine->series(OverlapTimes::Wait)[i] = t3 - t2;
    }
    if (!(err = after("overlapped")).empty()) return err;
  }
  return "";
}

}  // namespace railcoll::bench
