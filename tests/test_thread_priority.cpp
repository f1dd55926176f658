// The progress thread's priority (RAILCOLL_PROGRESS_PRIORITY,
// runtime/engine/thread_priority.hpp): what each choice asks the kernel for,
// read back from the kernel, the fallback without the privilege, and the
// realtime budget that keeps the application from starving.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "runtime/engine/thread_priority.hpp"

using namespace railcoll::rt;

namespace {

// Runs f on a thread of its own (the test's thread keeps its scheduling).
template <class F>
void on_a_thread(F f) {
  std::thread t(f);
  t.join();
}

// The calling thread's nice value: a thread may not lower it without privilege
// (ctest may run under nice).
int own_nice() { return getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid))); }

// Does this kernel keep a custom slice for a SCHED_OTHER thread (Linux 6.12+)?
bool kernel_has_custom_slices() {
  bool has = false;
  on_a_thread([&] { has = apply_progress_priority(ProgressPriority::Short, own_nice()) == ProgressPriority::Short; });
  return has;
}

}  // namespace

TEST(ProgressPriority, NamesParseBothWays) {
  for (ProgressPriority p : {ProgressPriority::Normal, ProgressPriority::Short, ProgressPriority::Realtime}) {
    ProgressPriority back = ProgressPriority::Normal;
    EXPECT_TRUE(parse_progress_priority(progress_priority_name(p), &back));
    EXPECT_EQ(back, p);
  }
  ProgressPriority out = ProgressPriority::Short;
  EXPECT_FALSE(parse_progress_priority("fifo", &out));
  EXPECT_FALSE(parse_progress_priority("", &out));
  EXPECT_EQ(out, ProgressPriority::Short) << "a refused name leaves the value alone";
}

TEST(ProgressPriority, NormalChangesNothing) {
  on_a_thread([] {
    EXPECT_EQ(apply_progress_priority(ProgressPriority::Normal, 0), ProgressPriority::Normal);
    EXPECT_EQ(current_progress_priority(), ProgressPriority::Normal);
  });
}

TEST(ProgressPriority, ShortAsksTheKernelForAShortSlice) {
  if (!kernel_has_custom_slices()) GTEST_SKIP() << "this kernel has no custom slices (Linux 6.12+)";
  on_a_thread([] {
    const int nice = std::max(own_nice(), 3);  // raising it needs no privilege
    ASSERT_EQ(apply_progress_priority(ProgressPriority::Short, nice), ProgressPriority::Short);
    uint64_t slice = 0;
    EXPECT_EQ(current_progress_priority(&slice), ProgressPriority::Short);
    EXPECT_EQ(slice, kShortSliceNs);
    EXPECT_EQ(own_nice(), nice) << "the nice value kept";
  });
  EXPECT_EQ(current_progress_priority(), ProgressPriority::Normal) << "only the thread that asked";
}

TEST(ProgressPriority, RealtimeWhereAllowedElseShort) {
  on_a_thread([] {
    const ProgressPriority got = apply_progress_priority(ProgressPriority::Realtime, own_nice());
    EXPECT_EQ(current_progress_priority(), got);
    if (geteuid() == 0) EXPECT_EQ(got, ProgressPriority::Realtime) << "root may use SCHED_RR";
  });
  if (geteuid() != 0) return;
  // Without the privilege (another user, no RLIMIT_RTPRIO): short, not a failure.
  const bool slices = kernel_has_custom_slices();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    rlimit none{0, 0};
    if (setrlimit(RLIMIT_RTPRIO, &none) != 0 || setresuid(65534, 65534, 65534) != 0) _exit(3);
    const ProgressPriority got = apply_progress_priority(ProgressPriority::Realtime, own_nice());
    if (got == ProgressPriority::Realtime) _exit(4);
    _exit(got == (slices ? ProgressPriority::Short : ProgressPriority::Normal) ? 0 : 5);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: could not drop the privilege; 4: still realtime; 5: wrong fallback";
}

// A realtime thread that computes more than half of a window drops to short
// (the application gets the core back) and is raised again once it rests.
TEST(ProgressPriority, RealtimeBudgetDemotesAThreadThatComputes) {
  if (geteuid() != 0) GTEST_SKIP() << "SCHED_RR needs root here";
  if (!kernel_has_custom_slices()) GTEST_SKIP() << "the demoted state is short, which this kernel lacks";
  on_a_thread([] {
    const int nice = own_nice();
    ASSERT_EQ(apply_progress_priority(ProgressPriority::Realtime, nice), ProgressPriority::Realtime);
    RealtimeBudget budget(true, nice);
    budget.after_round();  // opens the window
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(8);
    volatile double x = 1;
    while (!budget.demoted() && std::chrono::steady_clock::now() < until) {
      for (int i = 0; i < 20000; ++i) x = x * 0.999999 + 1e-7;
      budget.after_round();
    }
    EXPECT_TRUE(budget.demoted()) << "8 ms of computing in a 10 ms window";
    EXPECT_EQ(current_progress_priority(), ProgressPriority::Short);
    std::this_thread::sleep_for(std::chrono::duration<double>(RealtimeBudget::kWindowSeconds * 1.5));
    budget.after_round();
    EXPECT_FALSE(budget.demoted());
    EXPECT_EQ(current_progress_priority(), ProgressPriority::Realtime);
  });
}

TEST(ProgressPriority, AnInactiveBudgetNeverTouchesTheThread) {
  on_a_thread([] {
    RealtimeBudget budget(false, 0);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(8);
    volatile double x = 1;
    while (std::chrono::steady_clock::now() < until) {
      for (int i = 0; i < 20000; ++i) x = x * 0.999999 + 1e-7;
      budget.after_round();
    }
    EXPECT_FALSE(budget.demoted());
    EXPECT_EQ(current_progress_priority(), ProgressPriority::Normal);
  });
}

// A caller asleep in a call gets the boost from its first sleep and its own
// scheduling back at the end of the call; nothing happens before a sleep.
TEST(ProgressPriority, ACallerIsBoostedOnlyFromItsFirstSleepToTheEndOfTheCall) {
  if (!kernel_has_custom_slices()) GTEST_SKIP() << "this kernel has no custom slices (Linux 6.12+)";
  for (ProgressPriority boost : {ProgressPriority::Short, ProgressPriority::Realtime}) {
    if (boost == ProgressPriority::Realtime && geteuid() != 0) continue;
    on_a_thread([&] {
      {
        BoostWhileAsleep call(boost);
        EXPECT_EQ(current_progress_priority(), ProgressPriority::Normal) << "no sleep yet";
        call.before_sleep();
        EXPECT_EQ(current_progress_priority(), boost) << progress_priority_name(boost);
        call.before_sleep();  // once per call
        EXPECT_EQ(current_progress_priority(), boost);
      }
      EXPECT_EQ(current_progress_priority(), ProgressPriority::Normal) << "given back at the call's end";
      {
        BoostWhileAsleep call(ProgressPriority::Normal);
        call.before_sleep();
        EXPECT_EQ(current_progress_priority(), ProgressPriority::Normal) << "normal boosts nothing";
      }
    });
  }
}

// A thread the application scheduled itself (here a short slice of its own) is left alone.
TEST(ProgressPriority, ACallerWithItsOwnSchedulingIsLeftAlone) {
  if (!kernel_has_custom_slices()) GTEST_SKIP() << "this kernel has no custom slices (Linux 6.12+)";
  on_a_thread([] {
    ASSERT_EQ(apply_progress_priority(ProgressPriority::Short, own_nice()), ProgressPriority::Short);
    {
      BoostWhileAsleep call(ProgressPriority::Realtime);
      call.before_sleep();
      EXPECT_EQ(current_progress_priority(), ProgressPriority::Short);
    }
    EXPECT_EQ(current_progress_priority(), ProgressPriority::Short) << "not reset to the default";
  });
}
