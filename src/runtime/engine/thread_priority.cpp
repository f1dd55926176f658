// The progress thread's scheduling (thread_priority.hpp).
#include "runtime/engine/thread_priority.hpp"

#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

namespace railcoll::rt {

namespace {

// The kernel's struct sched_attr (include/uapi/linux/sched/types.h), first
// version; named apart from the C library's, which only newer ones declare.
struct KernelSchedAttr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime;  // for SCHED_OTHER since Linux 6.12: the time slice
  uint64_t sched_deadline;
  uint64_t sched_period;
};

pid_t thread_id() { return static_cast<pid_t>(syscall(SYS_gettid)); }

bool set_attr(uint32_t policy, int nice, uint32_t rt_priority, uint64_t slice_ns) {
  KernelSchedAttr a{};
  a.size = sizeof a;
  a.sched_policy = policy;
  a.sched_nice = nice;
  a.sched_priority = rt_priority;
  a.sched_runtime = slice_ns;
  return syscall(SYS_sched_setattr, thread_id(), &a, 0u) == 0;
}

bool get_attr(KernelSchedAttr* a) {
  std::memset(a, 0, sizeof *a);
  return syscall(SYS_sched_getattr, thread_id(), a, static_cast<unsigned>(sizeof *a), 0u) == 0;
}

// The short slice, read back: a kernel without custom slices takes the call
// and ignores sched_runtime.
bool set_short(int nice) {
  if (!set_attr(SCHED_OTHER, nice, 0, kShortSliceNs)) return false;
  uint64_t slice = 0;
  return current_progress_priority(&slice) == ProgressPriority::Short;
}

double seconds_of(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

bool parse_progress_priority(const std::string& text, ProgressPriority* out) {
  for (ProgressPriority p : {ProgressPriority::Normal, ProgressPriority::Short, ProgressPriority::Realtime})
    if (text == progress_priority_name(p)) return *out = p, true;
  return false;
}

const char* progress_priority_name(ProgressPriority p) {
  switch (p) {
    case ProgressPriority::Normal: return "normal";
    case ProgressPriority::Short: return "short";
    case ProgressPriority::Realtime: return "realtime";
  }
  return "?";
}

ProgressPriority apply_progress_priority(ProgressPriority want, int nice) {
  if (want == ProgressPriority::Realtime) {
    if (set_attr(SCHED_RR, 0, 1, 0)) return ProgressPriority::Realtime;
    want = ProgressPriority::Short;  // EPERM: no CAP_SYS_NICE, no RLIMIT_RTPRIO
  }
  if (want == ProgressPriority::Short && set_short(nice)) return ProgressPriority::Short;
  return ProgressPriority::Normal;
}

ProgressPriority current_progress_priority(uint64_t* slice_ns) {
  KernelSchedAttr a;
  if (!get_attr(&a)) return ProgressPriority::Normal;
  if (slice_ns) *slice_ns = a.sched_runtime;
  if (a.sched_policy == SCHED_RR || a.sched_policy == SCHED_FIFO) return ProgressPriority::Realtime;
  return a.sched_runtime > 0 && a.sched_runtime <= kShortSliceNs ? ProgressPriority::Short : ProgressPriority::Normal;
}

void BoostWhileAsleep::before_sleep() {
  budget_.after_round();
  if (boost_ == ProgressPriority::Normal) return;
  const ProgressPriority boost = boost_;
  boost_ = ProgressPriority::Normal;  // one look per call
  KernelSchedAttr a;
  if (!get_attr(&a) || a.sched_policy != SCHED_OTHER || a.sched_runtime <= kShortSliceNs) return;
  nice_ = a.sched_nice;
  const ProgressPriority got = apply_progress_priority(boost, nice_);
  changed_ = got != ProgressPriority::Normal;
  budget_ = RealtimeBudget(got == ProgressPriority::Realtime, nice_);
}

BoostWhileAsleep::~BoostWhileAsleep() {
  if (changed_) set_attr(SCHED_OTHER, nice_, 0, 0);  // 0: the kernel's default slice
}

void RealtimeBudget::after_round() {
  if (!active_) return;
  const double now = seconds_of(CLOCK_MONOTONIC), cpu = seconds_of(CLOCK_THREAD_CPUTIME_ID);
  if (window_start_ < 0 || now - window_start_ >= kWindowSeconds) {
    if (demoted_ && set_attr(SCHED_RR, 0, 1, 0)) demoted_ = false;
    window_start_ = now, cpu_at_start_ = cpu;
    return;
  }
  if (!demoted_ && cpu - cpu_at_start_ > kWindowSeconds / 2) demoted_ = set_attr(SCHED_OTHER, nice_, 0, kShortSliceNs);
}

}  // namespace railcoll::rt
