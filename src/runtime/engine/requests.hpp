// Calls in the background: requests and the engine that runs them (the
// architecture page, "Nonblocking and persistent calls").
//
// A Request is one collective call as the C API built it: one or more steps
// (a plan on buffers; alltoallv's count exchange, or the broadcast of the
// counts a scatterv's or gatherv's root alone has, then the call planned from
// its result), what each step does first (copy an in-place input) and
// after (unpack an output), and the buffers it owns. A persistent request runs
// again at every start with nothing rebuilt.
//
// The RequestQueue runs a communicator's requests one after another in the order
// they were posted, which is the order every rank issues them (MPI's rule for
// collectives on a communicator), on the communicator's one Executor: a call
// that starts later than a peer's next one finds its early frames held and
// applied on entry, as between blocking calls, so frames of different calls
// never mix. Who drives it: any railcoll call on the communicator (test, wait,
// post, a blocking call) and, unless RAILCOLL_PROGRESS_THREAD=0, the
// communicator's progress thread, made at the first post. A waiter drives its
// call itself; the thread drives only calls nobody waits for, woken by a timer
// a post arms (wake_thread_after) and asleep in the transport's epoll or
// futex while its call waits for the network or a local peer. One thread
// drives at a time (drive_mu_); a waiter that finds the thread driving sleeps
// until it lets go.
//
// A failure breaks the communicator (Executor) and completes the failing
// request and every one posted behind it with the failure's status, on every
// rank (the executor tells the peers); later posts fail at once with Broken.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/errors.hpp"
#include "core/settings.hpp"
#include "runtime/engine/executor.hpp"
#include "runtime/engine/thread_priority.hpp"

namespace railcoll::rt {

struct Step {
  std::shared_ptr<const Plan> plan;  // none once before() ran: the step has nothing to do this time
  Buffers bufs;
  // When the step begins (may set plan and bufs from an earlier step's
  // result, e.g. counts only the root had: each step begins when the one
  // before ended, so no call blocks to learn them); an exception fails the
  // call before this rank joins it (its peers are told).
  std::function<void(Step&)> before;
  // When the step has ended.
  std::function<void()> after;
};

class Request {
 public:
  enum class State : int { Inactive, Queued, Done };

  std::vector<Step> steps;
  bool persistent = false;
  // A point-to-point send or receive (mailbox.hpp) instead of steps: it runs
  // beside the collectives, not in their order (RequestQueue::post_message).
  std::optional<Message> p2p;

  // A buffer that lives as long as the request (stable address).
  std::vector<char>& keep(size_t bytes = 0) {
    kept_.emplace_back(bytes, 0);
    return kept_.back();
  }

  State state() const { return state_.load(std::memory_order_acquire); }
  // A Done call whose outcome was reported: a persistent request becomes
  // inactive (startable, and complete to every later test).
  void set_inactive() {
    State done = State::Done;
    state_.compare_exchange_strong(done, State::Inactive);
  }
  // The call's outcome, once Done.
  Status status() const { return status_; }
  const std::string& message() const { return message_; }

 private:
  friend class RequestQueue;
  std::atomic<State> state_{State::Inactive};
  Status status_ = Status::Ok;
  std::string message_;
  size_t step_ = 0;  // the step running while Queued at the head of the engine
  std::list<std::vector<char>> kept_;  // a list: no allocation while empty (every blocking call has a Request)
};

// What the engine reads of the settings (core/settings.hpp).
struct ProgressSettings {
  bool thread = true;   // RAILCOLL_PROGRESS_THREAD: drive posted requests on a thread too
  int nice = 0;         // RAILCOLL_PROGRESS_NICE: the thread's nice value,
  bool nice_given = false;  // when given (else the process's)
  ProgressPriority priority = ProgressPriority::Normal;  // RAILCOLL_PROGRESS_PRIORITY (thread_priority.hpp)

  static ProgressSettings from(const Settings& s);
};

class RequestQueue {
 public:
  // rank: this rank (for messages); settings: whether a thread drives posted
  // requests too, and at which nice value.
  RequestQueue(Executor& exec, int rank, const ProgressSettings& settings);
  ~RequestQueue();  // stops the thread; outstanding requests: see drain()
  RequestQueue(const RequestQueue&) = delete;
  RequestQueue& operator=(const RequestQueue&) = delete;

  // Queues an Inactive request and gets it going without blocking. Throws
  // InputError for one already started whose completion was not reported yet.
  void post(const std::shared_ptr<Request>& r);
  // A send or receive (r->p2p) to the mailbox at once, outside the
  // collectives' queue; test and wait complete it as any request. Throws
  // InputError for a bad peer or tag, RuntimeError(Broken) on a broken communicator.
  void post_message(const std::shared_ptr<Request>& r);
  // A posted receive no message has matched yet matches none any more: it
  // completes with Status::Arg ("withdrawn"). Anything else goes on.
  void withdraw(const std::shared_ptr<Request>& r);
  // Advances without blocking (a no-op while another thread drives); true
  // when r is done.
  bool test(Request& r);
  void poll();
  // Until r is done (each of its waits has the executor's deadline).
  void wait(Request& r);
  // A blocking call: runs at once when nothing is outstanding, else after
  // what is (posted and waited for). Throws what the call failed with.
  void run(const Plan& plan, const Buffers& b);
  // Every outstanding request completed (at the end of the communicator).
  void drain();
  // The executor's abandon() and broken(), taken with the drive lock (the
  // progress thread may be driving): abandoning also fails what is outstanding.
  void abandon(const std::string& why);
  std::string broken();
  bool outstanding();

 private:
  bool drive(double sleep_s, bool waiter = false);
  void released();
  std::shared_ptr<Request> front();
  void pop_front();
  void begin_step();
  void step_ended();
  void complete(Request& r, Status st, const std::string& msg);
  void fail_all(Status st, const std::string& msg);
  void thread_main();
  void wake_thread_after(std::chrono::nanoseconds delay);

  Executor& exec_;
  const int rank_;
  const bool use_thread_;
  const int nice_;        // the thread's nice value
  const bool nice_given_;
  const ProgressPriority priority_;  // what the thread asks for
  std::mutex drive_mu_;                   // held by whoever runs the executor
  std::mutex queue_mu_;                   // guards queue_, stop_ and completions
  std::condition_variable done_cv_;       // waiters: a request completed
  std::deque<std::shared_ptr<Request>> queue_;  // front: the running call
  bool running_ = false;                  // the front's step is in the executor (drive_mu_)
  bool stop_ = false;
  // Threads in wait(): the progress thread leaves them the driving. Changed
  // under queue_mu_ (the thread's condition), read without it by poll().
  std::atomic<int> waiters_{0};
  uint64_t releases_ = 0;                 // times drive_mu_ was let go with a waiter there (queue_mu_)
  std::thread thread_;
  int timer_fd_ = -1;                     // the thread sleeps on it (wake_thread_after)
};

}  // namespace railcoll::rt
