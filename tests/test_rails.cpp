// The rails layer (src/runtime/transport/rails/) in one process: real
// executors, a thread per rank, over fake links whose rails are cut and
// mended while the calls run (src/runtime/transport/fake/fake_links.hpp).
// 3 nodes x 2 ranks, 2 rails; validated all-gathers striped over both rails:
//  * a rail lost mid-call (its node told at once, as netlink tells): no call
//    fails, every byte is right, the rail is given up and taken back;
//  * a rail that goes silent (nobody told): given up after RAILCOLL_RAIL_TIMEOUT
//    of silence while the other rail answers, no call fails, it comes back;
//  * a flapping rail: given up once on every rank, held down while it flaps,
//    taken back only after it has been up for the hold-down time;
//  * every rail to one node lost: every rank fails with an error by its
//    deadline, none hangs.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <regex>
#include <thread>

#include "rank_threads.hpp"
#include "runtime/bootstrap/net.hpp"
#include "runtime/transport/fake/fake_links.hpp"
#include "runtime/transport/rails/link_monitor.hpp"

using namespace railcoll;
using namespace railcoll::rt;
using namespace railcoll::rt::test;

namespace {

const Topology& three_by_two() {
  static const Topology t = Topology::from_node_map({0, 0, 1, 1, 2, 2}, 2);
  return t;
}

// The transport's settings: the table's defaults, with the deadline and the
// rail timeout of the test.
TransportSettings links(double timeout, double rail_timeout = 0) {
  TransportSettings t = TransportSettings::from(Settings());
  t.timeout = timeout;
  if (rail_timeout > 0) t.rail_timeout = rail_timeout;
  return t;
}

struct Rails {
  Rails(const ExecutorSettings& e, const TransportSettings& t) : net(three_by_two(), t) {
    for (int r = 0; r < topo().nranks(); ++r)
      exec.push_back(std::make_unique<Executor>(net.transport(r), topo(), r, FakeRails::kCommId, e));
  }
  explicit Rails(double timeout) : Rails(settings(timeout), links(timeout)) {}
  const Topology& topo() const { return net.topo(); }
  int rails_up(int r) { return net.transport(r).rails_up(); }

  FakeRails net;
  std::vector<std::unique_ptr<Executor>> exec;
};

// What the calls saw: every call's outcome checked, the fewest rails any rank
// had up after a call, and when each rank last had fewer than 2.
struct Calls {
  int calls = 0, failed = 0, wrong = 0;
  std::string first_error;
  std::vector<int> fewest;
};

// Validated all-gathers of 64 KiB a rank (striped: both rails), back to back,
// until `until` (steady seconds from now_seconds()) and then until every rank
// has both rails up again or `give_up_at` passes. after_call(now) is called
// between calls, with the ranks' threads joined.
Calls all_gathers(Rails& rails, double until, double give_up_at, const std::function<void(double)>& after_call = {}) {
  Calls run;
  run.fewest.assign(rails.topo().nranks(), rails.topo().rails());
  for (;;) {
    const double now = now_seconds();
    bool all_up = true;
    for (int r = 0; r < rails.topo().nranks(); ++r) all_up &= rails.rails_up(r) == rails.topo().rails();
    if (now > give_up_at || (now > until && all_up)) break;
    CallOnEveryRank c(rails.topo(), Collective::Allgather, "direct", 64 << 10, ++run.calls);
    auto out = each_rank(rails.topo().nranks(), [&](int r) { c.run(*rails.exec[r], r); });
    for (int r = 0; r < rails.topo().nranks(); ++r) {
      if (out[r].status != Status::Ok) {
        if (run.failed++ == 0) run.first_error = "rank " + std::to_string(r) + ": " + out[r].error;
        continue;
      }
      run.wrong += !c.check(r).empty();
      run.fewest[r] = std::min(run.fewest[r], rails.rails_up(r));
    }
    if (run.failed) break;
    if (after_call) after_call(now_seconds());
  }
  return run;
}

// How many times each rank logged rail `rail` down, and up again.
std::vector<int> count_lines(const std::string& log, int ranks, int rail, const std::string& what) {
  std::vector<int> n(ranks, 0);
  for (int r = 0; r < ranks; ++r) {
    const std::regex line("rank " + std::to_string(r) + ": rail " + std::to_string(rail) + " \\([^)]*\\) " + what);
    n[r] = static_cast<int>(std::distance(std::sregex_iterator(log.begin(), log.end(), line), std::sregex_iterator()));
  }
  return n;
}

TEST(RailsOverFakeLinks, ARailLostMidCallMovesItsFramesAndComesBack) {
  Rails rails(20);
  const double start = now_seconds();
  std::thread fault([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    rails.net.cut(1, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    rails.net.mend(1, 1);
  });
  ::testing::internal::CaptureStderr();
  Calls run = all_gathers(rails, start + 1.0, start + 15);
  fault.join();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(run.failed, 0) << run.first_error;
  EXPECT_EQ(run.wrong, 0);
  EXPECT_GT(run.calls, 3);
  for (int r : {2, 3}) EXPECT_EQ(run.fewest[r], 1) << "rank " << r << " (node 1) never gave rail 1 up";
  const auto down = count_lines(log, 6, 1, "is down"), up = count_lines(log, 6, 1, "is up again");
  for (int r = 0; r < 6; ++r) {
    EXPECT_LE(down[r], 1) << "rank " << r << " logged the outage more than once\n" << log;
    EXPECT_EQ(down[r], up[r]) << "rank " << r << "\n" << log;
    EXPECT_EQ(rails.rails_up(r), 2) << "rank " << r << " did not take rail 1 back\n" << log;
  }
  for (int r : {2, 3}) EXPECT_EQ(down[r], 1) << log;
}

TEST(RailsOverFakeLinks, ASilentRailIsGivenUpWhenTheOtherRailAnswers) {
  Rails rails(settings(20), links(20, 0.4));
  const double start = now_seconds();
  std::thread fault([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    rails.net.cut(1, 0, true);  // nobody is told: only silence shows it
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    rails.net.mend(1, 0);
  });
  ::testing::internal::CaptureStderr();
  Calls run = all_gathers(rails, start + 2.0, start + 20);
  fault.join();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(run.failed, 0) << run.first_error;
  EXPECT_EQ(run.wrong, 0);
  EXPECT_NE(log.find("carried nothing for"), std::string::npos) << log;
  int saw = 0;
  for (int r = 0; r < 6; ++r) saw += run.fewest[r] == 1;
  EXPECT_GE(saw, 2) << log;
  for (int r = 0; r < 6; ++r) EXPECT_EQ(rails.rails_up(r), 2) << "rank " << r << "\n" << log;
}

TEST(RailsOverFakeLinks, AFlappingRailIsHeldDownUntilItIsStable) {
  Rails rails(20);
  const double start = now_seconds();
  std::atomic<double> last_up{0};
  std::thread fault([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    for (int i = 0; i < 10; ++i) {  // down, up, ... every 0.1 s for 2 s
      rails.net.cut(1, 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      rails.net.mend(1, 1);
      last_up = now_seconds();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  // When each of node 1's ranks was first seen with both rails after the flapping.
  std::vector<double> back(6, 0);
  ::testing::internal::CaptureStderr();
  Calls run = all_gathers(rails, start + 2.5, start + 20, [&](double now) {
    if (last_up == 0 || now < last_up + 0.05) return;
    for (int r : {2, 3})
      if (back[r] == 0 && rails.rails_up(r) == 2) back[r] = now;
  });
  fault.join();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(run.failed, 0) << run.first_error;
  EXPECT_EQ(run.wrong, 0);
  const auto down = count_lines(log, 6, 1, "is down");
  for (int r = 0; r < 6; ++r) EXPECT_LE(down[r], 1) << "rank " << r << " moved the rail's traffic more than once\n" << log;
  for (int r : {2, 3}) {
    EXPECT_EQ(down[r], 1) << log;
    ASSERT_GT(back[r], 0) << "rank " << r << " never took rail 1 back\n" << log;
    // Taken back only after the link was up for the hold-down time.
    EXPECT_GE(back[r] - last_up, HoldDown::kFirst * 0.9) << "rank " << r << "\n" << log;
  }
}

TEST(RailsOverFakeLinks, EveryRailToANodeLostFailsEveryRankByItsDeadline) {
  Rails rails(2.0);
  CallOnEveryRank warm(rails.topo(), Collective::Allgather, "direct", 64 << 10, 1);
  auto ok = each_rank(6, [&](int r) { warm.run(*rails.exec[r], r); });
  for (int r = 0; r < 6; ++r) ASSERT_EQ(ok[r].status, Status::Ok) << ok[r].error;
  rails.net.cut(1, 0);
  rails.net.cut(1, 1);
  CallOnEveryRank c(rails.topo(), Collective::Allgather, "direct", 64 << 10, 2);
  const double start = now_seconds();
  auto out = each_rank(6, [&](int r) { c.run(*rails.exec[r], r); });
  const double took = now_seconds() - start;
  for (int r = 0; r < 6; ++r) {
    EXPECT_TRUE(out[r].status == Status::Timeout || out[r].status == Status::Peer)
        << "rank " << r << ": " << static_cast<int>(out[r].status) << " " << out[r].error;
    EXPECT_FALSE(out[r].error.empty());
  }
  EXPECT_LT(took, 10.0) << "every rank should fail soon after its 2 s deadline";
}

}  // namespace
