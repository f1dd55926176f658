// The test bed's process spawning and launcher, with small shell programs as
// the jobs: captured output, exit codes, deadlines, whole lines from every
// rank, stdin to rank 0 only, the first failure in time order, every rank's
// status, the grace period; and the layouts.
#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "core/errors.hpp"
#include "testbed/job.hpp"
#include "testbed/spawn.hpp"

namespace railcoll::testbed {
namespace {

TEST(Spawn, RunCapturesBothStreamsAndTheStatus) {
  RunOptions o;
  o.env = {{"RC_TEST_WORD", "hello"}};
  RunResult r = run({"sh", "-c", "echo $RC_TEST_WORD; echo oops >&2; exit 3"}, o);
  EXPECT_EQ(r.out, "hello\n");
  EXPECT_EQ(r.err, "oops\n");
  EXPECT_EQ(r.code(), 3);
  EXPECT_EQ(r.status.text(), "exited with status 3");
}

TEST(Spawn, AMissingProgramExits127WithAReason) {
  RunResult r = run({"/nonexistent/program"}, 10);
  EXPECT_EQ(r.code(), 127);
  EXPECT_NE(r.err.find("cannot start '/nonexistent/program'"), std::string::npos) << r.err;
}

TEST(Spawn, TheDeadlineKillsTheWholeGroup) {
  double t0 = monotonic_seconds();
  // The shell's child sleeps too: killing only the shell would leave it
  // holding the pipe, and the call would wait for it.
  RunResult r = run({"sh", "-c", "sleep 30 & sleep 30; echo never"}, 0.5);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.code(), 124);
  EXPECT_LT(monotonic_seconds() - t0, 10);
  EXPECT_EQ(r.out, "");
}

TEST(Spawn, ASignalIsReportedByName) {
  RunResult r = run({"sh", "-c", "kill -9 $$"}, 10);
  EXPECT_FALSE(r.status.exited);
  EXPECT_EQ(r.code(), 128 + 9);
  EXPECT_EQ(r.status.text(), "killed by signal 9 (SIGKILL)");
}

struct Captured {
  std::mutex m;
  std::map<int, std::vector<std::string>> out, err;
};

JobOptions capture(Captured* c) {
  JobOptions o;
  o.on_line = [c](int rank, bool is_stderr, const std::string& line) {
    std::lock_guard<std::mutex> g(c->m);
    (is_stderr ? c->err : c->out)[rank].push_back(line);
  };
  return o;
}

std::vector<RankProcess> ranks_of(int n, const std::string& script) {
  std::vector<RankProcess> v(n);
  for (int r = 0; r < n; ++r) {
    v[r].argv = {"sh", "-c", script};
    v[r].env = {{"RANK_FOR_TEST", std::to_string(r)}};
  }
  return v;
}

TEST(Launcher, LinesArriveWholeAndAPartialLastLineEndsAsALine) {
  Captured c;
  // Each rank writes a long line in many small pieces, then a line without a newline.
  auto ranks = ranks_of(3, "for i in $(seq 200); do printf 'x%s' $RANK_FOR_TEST; done; echo; printf tail$RANK_FOR_TEST");
  JobResult r = run_job(ranks, capture(&c));
  EXPECT_EQ(r.exit_status, 0) << r.failure;
  for (int rank = 0; rank < 3; ++rank) {
    std::string want;
    for (int i = 0; i < 200; ++i) want += "x" + std::to_string(rank);
    ASSERT_EQ(c.out[rank].size(), 2u);
    EXPECT_EQ(c.out[rank][0], want + "\n");
    EXPECT_EQ(c.out[rank][1], "tail" + std::to_string(rank) + "\n");
  }
}

TEST(Launcher, ALineLongerThanAPieceJoinsBackWholeFromItsPieces) {
  Captured c;
  // 300,000 characters in 30 writes with pauses (so across many reads), then a short line.
  auto ranks = ranks_of(2, "for i in $(seq 30); do head -c 10000 /dev/zero | tr '\\0' y; sleep 0.01; done; echo; echo end");
  JobResult r = run_job(ranks, capture(&c));
  EXPECT_EQ(r.exit_status, 0) << r.failure;
  for (int rank = 0; rank < 2; ++rank) {
    std::string joined;
    for (auto& piece : c.out[rank]) joined += piece;
    EXPECT_EQ(joined, std::string(300000, 'y') + "\nend\n");
    EXPECT_GE(c.out[rank].size(), 3u);  // it did come in pieces
    EXPECT_EQ(c.out[rank].back(), "end\n");
  }
}

TEST(Launcher, OnlyRankZeroReadsTheLaunchersStdin) {
  Captured c;
  // Rank 0 inherits stdin (the test's, which has nothing); the others read
  // /dev/null: an immediate end of file, never a share of someone's input.
  auto ranks = ranks_of(3, "if [ -r /proc/self/fd/0 ]; then readlink /proc/self/fd/0; fi");
  JobResult r = run_job(ranks, capture(&c));
  EXPECT_EQ(r.exit_status, 0);
  EXPECT_EQ(c.out[1], (std::vector<std::string>{"/dev/null\n"}));
  EXPECT_EQ(c.out[2], (std::vector<std::string>{"/dev/null\n"}));
}

TEST(Launcher, AFailedRankEndsTheOthersAtOnceAndIsNamedAsTheCause) {
  Captured c;
  auto ranks = ranks_of(4, "if [ $RANK_FOR_TEST = 2 ]; then sleep 0.2; exit 3; fi; sleep 30");
  double t0 = monotonic_seconds();
  JobResult r = run_job(ranks, capture(&c));
  EXPECT_LT(monotonic_seconds() - t0, 5);
  EXPECT_EQ(r.exit_status, 3);
  EXPECT_EQ(r.failure, "rank 2 exited with status 3");
  EXPECT_EQ(r.first_failed_rank, 2);
  ASSERT_EQ(r.ranks.size(), 4u);
  for (int i : {0, 1, 3}) {
    EXPECT_TRUE(r.ranks[i].ended_by_launcher);
    EXPECT_EQ(r.ranks[i].text(), "ended by the launcher (SIGTERM)");
  }
  std::string report = r.rank_report();
  EXPECT_NE(report.find("rank 2: exited with status 3 after"), std::string::npos) << report;
  EXPECT_NE(report.find("<- first to fail"), std::string::npos);
}

TEST(Launcher, TheCauseIsTheFirstFailureInTimeNotTheLowestRank) {
  Captured c;
  // Rank 3 fails first; rank 0 fails later within the grace period.
  auto ranks = ranks_of(4,
                        "case $RANK_FOR_TEST in 3) sleep 0.1; exit 4;; 0) sleep 0.8; exit 5;; *) sleep 1.2;; esac");
  JobOptions o = capture(&c);
  o.grace_seconds = 10;
  JobResult r = run_job(ranks, o);
  EXPECT_EQ(r.exit_status, 4);
  EXPECT_EQ(r.first_failed_rank, 3);
  EXPECT_EQ(r.ranks[0].text(), "exited with status 5");
  EXPECT_EQ(r.ranks[1].text(), "exited with status 0");  // finished on its own within the grace period
}

TEST(Launcher, TheTimeLimitEndsTheJobWith124) {
  Captured c;
  JobOptions o = capture(&c);
  o.timeout_seconds = 0.5;
  JobResult r = run_job(ranks_of(2, "sleep 30"), o);
  EXPECT_EQ(r.exit_status, 124);
  EXPECT_NE(r.failure.find("time limit"), std::string::npos);
  EXPECT_EQ(r.first_failed_rank, -1);
}

TEST(Launcher, LayoutsPutTheRestOnALastSmallerNode) {
  EXPECT_EQ(layout_of(13, 5), (std::vector<int>{5, 5, 3}));
  EXPECT_EQ(layout_of(8, 4), (std::vector<int>{4, 4}));
  EXPECT_EQ(layout_of(3, 8), (std::vector<int>{3}));
  EXPECT_EQ(parse_layout("5,5,3"), (std::vector<int>{5, 5, 3}));
  EXPECT_EQ(layout_text({2, 3, 1}), "2,3,1");
  EXPECT_EQ(layout_ranks({2, 3, 1}), 6);
  for (const char* bad : {"", "5,,3", "5,0", "x", "5,3,", "-1"}) EXPECT_THROW(parse_layout(bad), InputError) << bad;
}

TEST(Launcher, LocalJobsGetTheirRanksAndNodes) {
  Captured c;
  LocalJob job;
  job.layout = {2, 1};
  job.pretend_nodes = true;
  job.rails = 2;
  job.program = {"sh", "-c", "echo $RAILCOLL_RANK $RAILCOLL_SIZE $RAILCOLL_NODE $RAILCOLL_LOCAL_RANK "
                             "$RAILCOLL_LOCAL_SIZE $RAILCOLL_RAILS"};
  JobResult r = run_local_job(job, capture(&c));
  EXPECT_EQ(r.exit_status, 0);
  EXPECT_EQ(c.out[0], (std::vector<std::string>{"0 3 0 0 2 127.0.0.1,127.0.0.2\n"}));
  EXPECT_EQ(c.out[1], (std::vector<std::string>{"1 3 0 1 2 127.0.0.1,127.0.0.2\n"}));
  EXPECT_EQ(c.out[2], (std::vector<std::string>{"2 3 1 0 1 127.0.0.1,127.0.0.2\n"}));
}

}  // namespace
}  // namespace railcoll::testbed
