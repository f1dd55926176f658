// How the progress thread gets a core from the application's computing
// threads (RAILCOLL_PROGRESS_PRIORITY, docs/runtime.md "Calls in the
// background"). A nonblocking call's schedule advances one dependent step per
// wake-up of the thread; where every core computes, each wake-up waits for the
// scheduler to take a core from a busy loop, so a schedule of many steps
// advances at the scheduler's pace, not the network's.
//   normal    the process's scheduling (RAILCOLL_PROGRESS_NICE still applies);
//   short     a short time slice (EEVDF's custom slice, sched_setattr's
//             sched_runtime for SCHED_OTHER, Linux 6.12+): a waking thread
//             with a shorter slice than the running one preempts it at once,
//             and its share of the core is unchanged; no privilege needed;
//   realtime  SCHED_RR at the lowest real-time priority: it always preempts
//             a normal thread. Bounded (RealtimeBudget): a thread that used
//             more than half of a window's time drops to `short` for the rest
//             of it, so the application keeps at least half a core from it.
#pragma once
#include <cstdint>
#include <string>

namespace railcoll::rt {

enum class ProgressPriority { Normal, Short, Realtime };

// "normal", "short", "realtime" (the setting's choices); false for anything else.
bool parse_progress_priority(const std::string& text, ProgressPriority* out);
const char* progress_priority_name(ProgressPriority p);

// The slice `short` asks for: EEVDF's shortest (0.1 ms).
constexpr uint64_t kShortSliceNs = 100 * 1000;

// Applies `want` to the calling thread; returns what took effect (realtime
// without the privilege falls back to short, short on a kernel without custom
// slices to normal). `nice` is the thread's nice value, which a SCHED_OTHER
// policy set by sched_setattr carries.
ProgressPriority apply_progress_priority(ProgressPriority want, int nice);

// The calling thread's scheduling as the kernel reports it: its policy's
// ProgressPriority (Short when its slice is kShortSliceNs or less) and its slice.
ProgressPriority current_progress_priority(uint64_t* slice_ns = nullptr);

// Keeps a realtime thread from starving the application: call after every
// round of work; it drops the thread to `short` once it used more than half
// of the current window's time and raises it again at the next window.
class RealtimeBudget {
 public:
  static constexpr double kWindowSeconds = 0.01;

  explicit RealtimeBudget(bool active, int nice) : active_(active), nice_(nice) {}
  void after_round();
  bool demoted() const { return demoted_; }

 private:
  bool active_;
  int nice_;
  bool demoted_ = false;
  double window_start_ = -1, cpu_at_start_ = 0;
};

// A caller asleep inside a railcoll call (a blocking call's wait, a wait on a
// request) wakes when a peer's frame or counter comes; on a core where other
// threads compute it then waits for the scheduler like the progress thread,
// and every rank that leaves a call late enters the next one late. With
// short or realtime, such a caller sleeps with the progress thread's
// scheduling from its first sleep (after any spin: a realtime thread never
// spins) to the end of the call, then gets its own back (SCHED_OTHER, the
// kernel's default slice); a thread of another policy is left alone. A
// realtime caller has the progress thread's budget. One per call;
// before_sleep, called before every sleep, is cheap once engaged.
class BoostWhileAsleep {
 public:
  explicit BoostWhileAsleep(ProgressPriority boost) : boost_(boost) {}
  ~BoostWhileAsleep();
  BoostWhileAsleep(const BoostWhileAsleep&) = delete;
  BoostWhileAsleep& operator=(const BoostWhileAsleep&) = delete;
  void before_sleep();

 private:
  ProgressPriority boost_;
  bool changed_ = false;
  int nice_ = 0;
  RealtimeBudget budget_{false, 0};
};

}  // namespace railcoll::rt
