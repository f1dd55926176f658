// The executor: runs the calling rank's program of a schedule (put, copy,
// reduce, signal, wait, flush; the architecture page, "Schedule") over a
// Transport (transport.hpp). It owns everything that is about calls: the call
// sequence, counters, the scratch buffer, which parts of which messages have
// arrived, frames held for a call not yet entered, mismatch detection between
// ranks, deadlines, and whether the communicator is broken. It knows nothing
// of sockets, rails or how the node's memory was made, so the same executor
// runs on real processes (RailTransport) and on N ranks in one process
// (FakeTransport, for tests).
#pragma once
#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/topology.hpp"
#include "core/settings.hpp"
#include "runtime/engine/mailbox.hpp"
#include "runtime/engine/observer.hpp"
#include "runtime/engine/plan.hpp"
#include "runtime/engine/reduce.hpp"
#include "runtime/engine/thread_priority.hpp"
#include "runtime/transport/transport.hpp"

namespace railcoll::rt {

// The user's buffers of one call, and its reduction function when the
// schedule's operator is ReduceOp::User (the plan is shared between calls; the
// function is the call's).
struct Buffers {
  const void* send = nullptr;
  void* recv = nullptr;
  std::shared_ptr<const UserOp> op = nullptr;
};

// What the executor reads of the settings (core/settings.hpp).
struct ExecutorSettings {
  double timeout = 0;         // RAILCOLL_TIMEOUT: every wait of a call
  double spin_seconds = -1;   // RAILCOLL_SPIN_US; below 0: not given (spin_budget decides)
  uint64_t replay_call = 0;   // RAILCOLL_TEST_REPLAY_CALL (tests): call n's data frame again in call n+2
  uint64_t stripe_bytes = 16 << 10;  // RAILCOLL_STRIPE_BYTES: point-to-point messages above it go over every rail
  ProgressPriority sleep_boost = ProgressPriority::Normal;  // RAILCOLL_PROGRESS_PRIORITY: a caller asleep in a call (BoostWhileAsleep)

  static ExecutorSettings from(const Settings& s);
};

// How long this rank's waits in a call spin before they sleep: RAILCOLL_SPIN_US
// when given; else kOwnCoreSpin where each of the node's `node_ranks` ranks has
// a core of its own. Where they outnumber the cores this process may run on, a
// spinning waiter holds the core that the rank it waits for needs, so waits
// sleep at once, except in a short call (this rank sends and receives at most
// kShortCallBytes by wait_bytes: a barrier, a small broadcast, an all-gather of
// small blocks), whose waits mostly end within a scheduling round: they spin
// kShortCallSpin seconds first, which costs less than a wake-up (docs/runtime.md,
// "Tails", has the measurements).
constexpr double kOwnCoreSpin = 2e-3;
constexpr uint64_t kShortCallBytes = 16 << 10;
constexpr double kShortCallSpin = 200e-6;
// A spinning wait that expects no frame (nothing of the call still to arrive or
// to send, no point-to-point message) looks at the sockets at most this often:
// only an abort, a probe or the next call's early frames can be there, and a
// look is an epoll_wait per yield, as many system calls as the yields
// themselves (docs/runtime.md, "Spinning without the sockets").
constexpr double kSpinLookEvery = 1e-3;
// `cores`: the cores this process may run on (its affinity mask; 0 if unknown),
// read once per communicator: a syscall per call showed in the small-call cost.
double spin_budget(const ExecutorSettings& settings, int node_ranks, uint64_t call_bytes, int cores);
double spin_budget(const ExecutorSettings& settings, int node_ranks, uint64_t call_bytes);
// The bytes rank `me` sends or waits for in a call of `s`: its send or receive
// buffer, its node's ranks' share of it where the result is every rank's block
// (all-gather, gather).
uint64_t wait_bytes(const Schedule& s, int me);

class Executor final : private FrameSink {
 public:
  // Attaches itself to `transport` as its frame sink. comm_id: the id every
  // frame of this communicator carries (agreed at set-up). Reads the timeout,
  // spin budget and test hooks from `settings`.
  Executor(Transport& transport, const Topology& topo, int me, uint64_t comm_id, const ExecutorSettings& settings);
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs this rank's program of `plan` on `b`. Throws RuntimeError; after a
  // failure inside the call the executor is broken (later calls throw Broken)
  // and every peer has been told. A call the node's memory cannot hold throws
  // Unsupported before anything happens and breaks nothing.
  void run(const Plan& plan, const Buffers& b);

  // The same call in steps, for calls that run in the background
  // (request.hpp): start() enters it (plan and buffers must live until it
  // ends); advance() runs the program on until an op must wait for other ranks
  // (false) or the call has ended (true), never blocking; idle() sleeps in the
  // transport up to max_s seconds, or until what the call waits for may have
  // happened. Failures as run(); a wait that makes no progress for the timeout
  // throws Timeout from advance().
  void start(const Plan& plan, const Buffers& b);
  bool advance();
  void idle(double max_s);
  // How long a wait of the current (or last) call spins before it sleeps (spin_budget).
  double spin_seconds() const { return spin_seconds_.load(std::memory_order_relaxed); }
  // Another library's progress, for a thread that waits for a call of this
  // communicator (a blocking call, a wait on a request) and sleeps: the MPI
  // layer drives MPI's with it, so that a peer waiting inside MPI for this
  // rank is not starved while this rank waits inside railcoll (docs/mpi.md,
  // "Progress"). wait_idle() is idle() for such a thread: its sleep ends by
  // the time the hook is due, and the hook runs then (about every `every_s`
  // seconds while the wait sleeps). railcoll's progress thread never runs it:
  // the other library may take calls from the program's threads alone.
  void set_wait_hook(std::function<void()> hook, double every_s);
  bool has_wait_hook() const { return static_cast<bool>(wait_hook_); }
  double wait_hook_every() const { return hook_every_; }
  void wait_idle(double max_s);
  void run_wait_hook_if_due();
  // Between start() and the end of the call.
  bool in_call() const { return phase_ != Phase::Idle; }
  // Waits (within the deadline) until this rank's frames are all handed over;
  // errors are swallowed (the communicator is closing).
  void finish();

  // "" while usable, else why not.
  const std::string& broken() const { return broken_; }
  // This rank does not join the call it was about to make (the caller found
  // it wrong before it began): every peer fails its call, or its next one,
  // with Status::Peer and `why`, and the communicator is broken. Nothing
  // happens when it is broken already.
  void abandon(const std::string& why) { break_and_tell(why); }
  // Frames that arrived before their call was entered (readable from any thread).
  uint64_t frames_held() const { return frames_held_.load(std::memory_order_relaxed); }
  // Point-to-point messages: their frames come through this executor, in a call or not.
  Mailbox& mailbox() { return mailbox_; }
  // Who watches the calls (observer.hpp); null: nobody. Set between calls.
  void set_observer(Observer* o) { obs_ = o; }
  uint64_t comm_id() const { return comm_id_; }
  int rank() const { return me_; }

 private:
  struct Held {
    FrameHeader hdr;
    int rail;
    std::vector<char> payload;
  };

  // FrameSink
  Landing frame_header(const FrameHeader& h, int rail, std::vector<iovec>* place) override;
  void frame_done(const FrameHeader& h, int rail, std::vector<char>* held) override;
  void peer_aborted(int peer, uint64_t call, const std::string& why) override;
  PeerSaid position() const override;

  // Whom a wait waits for: the first rank whose message is missing, and its rail.
  struct Awaited {
    int peer = -1;
    int rail = -1;  // -1: the node's memory; kStripe: every rail
  };

  FrameHeader header(Frame type, int op) const;
  char* resolve(const Span& sp) const;
  void payload_iov(const Op& op, uint64_t off, uint64_t len, bool dst, std::vector<iovec>* out) const;
  std::atomic<uint64_t>& node_counter(int index) const { return seg_.shm->counters[counter_slot(bank_, index)]; }
  std::atomic<uint64_t>& node_counter_slot(int slot) const { return seg_.shm->counters[slot]; }
  void enter_bank();
  void bump(const CounterRef& c);
  void queue_put(const Op& op, int op_index);
  void signal(const CounterRef& c, int op_index, int via);
  const Op& check_frame(const FrameHeader& h, int rail) const;
  void part_arrived(const FrameHeader& h, int rail, const Op& op);
  void apply_held(const Held& f);
  [[noreturn]] void protocol_error(int peer, int rail, const std::string& what) const;
  template <class What, class Who>
  bool blocked(What what, Who who);  // who(): the Awaited, asked for only when needed
  template <class What>
  bool blocked(What what) {
    return blocked(what, [] { return Awaited{}; });
  }
  template <class F>
  void guard(F f);
  void finish_call();
  void spin_look();
  bool bank_free();
  void entered();
  bool run_program();
  void ended();
  std::string timeout_text(const std::string& what, const Awaited& culprit) const;
  std::string where_text() const;
  std::string peers_said(const Awaited& culprit, std::string* cause) const;
  std::string missing_senders(const CounterRef& cref) const;
  Awaited awaited(const CounterRef& cref) const;
  Awaited refine(Awaited a) const;
  int rail_gap(int peer) const;
  uint64_t call_word(const Plan& p) const { return (seq_ << 32) | (p.sig & 0xffffffffu); }
  void check_local_calls(const Plan& p) const;
  void break_and_tell(const std::string& why);

  Transport& t_;
  const Topology topo_;
  const int me_, node_;
  const uint64_t comm_id_;
  const double timeout_;
  const ExecutorSettings settings_;  // RAILCOLL_SPIN_US, for spin_budget at each call
  std::function<void()> wait_hook_;  // set_wait_hook
  double hook_every_ = 0;
  std::atomic<double> hook_ran_{0};  // when a waiter last ran it (several threads may wait)
  const int node_ranks_;
  const int cores_;  // the affinity mask's count at construction (spin_budget)
  // The current call's (spin_budget). Atomic: a thread waiting in
  // Engine::wait reads it while the progress thread starts the next step.
  std::atomic<double> spin_seconds_;
  const uint64_t replay_call_;  // RAILCOLL_TEST_REPLAY_CALL
  const NodeSegment seg_;
  Mailbox mailbox_;

  // Call state. Phases of a call: waiting for its bank (enter_bank), running
  // the program, flushing its sends at the end.
  enum class Phase : uint8_t { Idle, Entering, Running, Flushing };
  Phase phase_ = Phase::Idle;
  size_t pc_ = 0;            // the next op of this rank's program
  double wait_since_ = 0;    // when the current wait began (0: not waiting)
  bool probed_ = false;      // the current wait has probed the peers
  NodeWait sleep_on_{};      // the node counter the current wait is for (counter null: none)
  uint64_t seq_ = 1;
  bool in_call_ = false;     // entered: frames of call seq_ land in place
  const Plan* plan_ = nullptr;
  Buffers bufs_;
  std::vector<char> scratch_;
  std::vector<uint64_t> rank_counters_;
  std::vector<uint64_t> node_base_;  // per counter slot: node counters are cumulative, their value when this call began
  int bank_ = 0;                     // this call's bank of node counters and shared buffer (seq_ % 2)
  char* shared_ = nullptr;           // this call's bank of the shared buffer
  uint64_t entries_[kBanks] = {0, 0};  // entries into each bank's calls this node should have counted
  Arrivals arrivals_;                // (sender, op) parts in this call
  size_t messages_due_ = 0;          // messages (puts, notifies) of this call not yet complete
  double looked_ = 0;                // when a spinning wait last looked at the sockets (spin_look)
  std::deque<Held> held_;            // frames of calls not entered yet
  std::vector<iovec> send_iov_;      // reused for every put
  std::vector<char> reduce_tmp_;     // a user operator's right operand (reduce_user)
  std::string broken_;
  // An abort for a call this rank has not entered: this call goes on, that one fails.
  struct LaterAbort {
    uint64_t call;
    std::string why;
  };
  std::optional<LaterAbort> later_abort_;
  std::atomic<uint64_t> frames_held_{0};
  Observer* obs_ = nullptr;  // set_observer
  size_t op_told_ = SIZE_MAX;  // the op on_op was last called for
  bool wait_told_ = false;     // on_wait was given the current wait's text (kDescribeWaitAfter)

  // RAILCOLL_TEST_REPLAY_CALL: a data frame of call n, sent again in call n+2.
  struct Replay {
    FrameHeader hdr;
    int peer, rail;
    std::string payload;
  };
  std::unique_ptr<Replay> replay_;
  bool replayed_ = false;
};

}  // namespace railcoll::rt
