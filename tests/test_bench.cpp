// The bench library: the records' JSON codec (both file forms, old records,
// bad input), the statistics over ranks and calls (span), the summary's choice
// of time, the sizes; and the background patterns of src/core/background.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include <unistd.h>

#include "bench/busy_compute.h"
#include "bench/overlap.hpp"
#include "bench/records.hpp"
#include "bench/report.hpp"
#include "bench/stats.hpp"
#include "core/background.hpp"
#include "core/errors.hpp"
#include "testbed/job.hpp"

namespace railcoll::bench {
namespace {

BenchRecord sample() {
  BenchRecord r;
  r.collective = "bcast";
  r.algorithm = "smp";
  r.bytes = 4096;
  r.ranks = 16, r.nodes = 4, r.rails = 2, r.ppn = 4, r.iterations = 100;
  r.avg_us = 12.5, r.min_us = 10.25, r.max_us = 14.125, r.p50_us = 13.0, r.p90_us = 15.5, r.p99_us = 20.0;
  r.span_p50_us = 40.0, r.span_p90_us = 41.5, r.span_p99_us = 44.0;
  r.validated = true;
  return r;
}

TEST(Records, RoundTripKeepsEveryFieldAndTheFirstVersionsOrder) {
  BenchRecord r = sample();
  r.chosen = "smp";
  r.samples_us = {1.5, 2.25};
  std::string line = to_json_line(r);
  EXPECT_EQ(line.rfind("{\"collective\":\"bcast\",\"algorithm\":\"smp\",\"chosen\":\"smp\",\"bytes\":4096,\"ranks\":16,"
                       "\"nodes\":4,\"rails\":2,", 0),
            0u)
      << line;
  BenchRecord back;
  ASSERT_TRUE(from_json_line(line, &back));
  EXPECT_EQ(back.algorithm, "smp");
  EXPECT_EQ(back.chosen, "smp");
  EXPECT_EQ(back.bytes, 4096u);
  EXPECT_EQ(back.ppn, 4);
  EXPECT_DOUBLE_EQ(back.min_us, 10.25);
  EXPECT_DOUBLE_EQ(back.p99_us, 20.0);
  EXPECT_DOUBLE_EQ(back.span_p90_us, 41.5);
  EXPECT_EQ(back.samples_us, (std::vector<double>{1.5, 2.25}));
  EXPECT_TRUE(back.validated);
  EXPECT_FALSE(back.simulated);
}

TEST(Records, OptionalFieldsAreWrittenOnlyWhenSet) {
  BenchRecord r = sample();
  r.span_p50_us = r.span_p90_us = r.span_p99_us = -1;
  r.p90_us = r.p99_us = -1;
  std::string plain = to_json_line(r);
  for (const char* key : {"span_p50_us", "p99_us", "simulated", "preset", "chosen", "background", "samples_us"})
    EXPECT_EQ(plain.find(key), std::string::npos) << key << " in " << plain;
  r.simulated = true;
  r.preset = "elan3-64";
  std::string sim = to_json_line(r);
  EXPECT_NE(sim.find("\"simulated\":true"), std::string::npos);
  EXPECT_NE(sim.find("\"preset\":\"elan3-64\""), std::string::npos);
  BenchRecord back;
  ASSERT_TRUE(from_json_line(sim, &back));
  EXPECT_TRUE(back.simulated);
  EXPECT_EQ(back.preset, "elan3-64");
  EXPECT_FALSE(back.has_span());
}

TEST(Records, ReadsRecordsOfEarlierVersionsAndOfOtherTools) {
  // As the regex-era writer made them (6 significant digits, no span), and an
  // OSU-style line without a median: p50 is then the average.
  std::string text =
      "[\n"
      "  {\"collective\":\"allgather\",\"algorithm\":\"direct\",\"bytes\":8,\"ranks\":16,\"nodes\":4,\"rails\":2,"
      "\"avg_us\":430,\"min_us\":401.2,\"max_us\":455.1,\"p50_us\":429.5,\"p90_us\":480,\"p99_us\":510,"
      "\"iterations\":100,\"validated\":true},\n"
      "  {\"collective\":\"allgather\",\"algorithm\":\"osu\",\"bytes\":16,\"avg_us\":77.5}\n"
      "]\n";
  auto recs = parse_records(text);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_DOUBLE_EQ(recs[0].p50_us, 429.5);
  EXPECT_FALSE(recs[0].has_span());
  EXPECT_DOUBLE_EQ(recs[1].p50_us, 77.5);
  EXPECT_DOUBLE_EQ(recs[1].p99_us, -1);
}

TEST(Records, ReadsOneObjectPerLineAmongOtherOutput) {
  BenchContext c;
  c.collective = "gather";
  c.ranks = 13, c.nodes = 3, c.rails = 2;
  c.ranks_per_node = {5, 5, 3};
  c.shared_clock = true;
  c.empty_span_p50_us = 12.5;
  std::string text = "mpirun: some warning\n" + context_line(c) + "\n" + to_json_line(sample()) + ",\n" +
                     "#call t=1 us=2\n" + to_json_line(sample()) + "\n";
  BenchContext got;
  auto recs = parse_records(text, &got);
  EXPECT_EQ(recs.size(), 2u);
  EXPECT_EQ(got.collective, "gather");
  EXPECT_EQ(got.ranks_per_node, (std::vector<int>{5, 5, 3}));
  EXPECT_EQ(got.max_ppn, 5);
  EXPECT_TRUE(got.shared_clock);
  EXPECT_DOUBLE_EQ(got.empty_span_p50_us, 12.5);
}

TEST(Records, AMalformedRecordIsAnErrorNamingTheSourceAndTheField) {
  try {
    parse_records("[{\"collective\":\"bcast\",\"algorithm\":\"smp\",\"bytes\":\"many\"}]", nullptr, "x.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("x.json: record 1: \"bytes\" must be a whole number"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parse_records("[{\"collective\":\"bcast\",\"algorithm\":\"smp\",\"bytes\":-4}]"), InputError);
  EXPECT_THROW(parse_records("[{\"collective\":\"bcast\",\"algorithm\":\"\"}]"), InputError);
  EXPECT_THROW(read_records("/nonexistent/records.json"), InputError);
}

TEST(Records, FilesAreAJsonArrayWithOneRecordPerLine) {
  std::string path = testing::TempDir() + "/records.json";
  write_json(path, {sample(), sample()});
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines.front(), "[");
  EXPECT_EQ(lines.back(), "]");
  BenchRecord r;
  EXPECT_TRUE(from_json_line(lines[1], &r));
  EXPECT_EQ(read_records(path).size(), 2u);
  std::remove(path.c_str());
}

TEST(Records, CsvKeepsTheFirstColumnsAndAddsTheSpan) {
  std::string path = testing::TempDir() + "/records.csv";
  write_csv(path, {sample()});
  std::ifstream in(path);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  EXPECT_EQ(header.rfind("collective,algorithm,chosen,bytes,ranks,nodes,rails,avg_us,min_us,max_us,p50_us,p90_us,"
                         "p99_us,iterations,validated,span_p50_us",
                         0),
            0u);
  EXPECT_EQ(row.rfind("bcast,smp,,4096,16,4,2,12.5,10.25,14.125,13,15.5,20,100,true,40,", 0), 0u) << row;
  std::remove(path.c_str());
}

TEST(Stats, PercentilesTakeElementFloorQN) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  Percentiles p = percentiles(v);
  EXPECT_DOUBLE_EQ(p.p50, 51);
  EXPECT_DOUBLE_EQ(p.p90, 91);
  EXPECT_DOUBLE_EQ(p.p99, 100);
  EXPECT_DOUBLE_EQ(percentiles({7}).p99, 7);
  EXPECT_DOUBLE_EQ(percentile_of_sorted({}, 0.5), 0);
}

TEST(Stats, SpanIsLastRankOutMinusFirstRankIn) {
  // A broadcast as a per-rank time hides it: the root (rank 0) leaves after
  // 2 us, rank 2 enters late and the data reaches it at 30 us.
  CallTimes t;
  t.ranks = 3, t.calls = 2;
  t.entry = {0, 100, /* rank 1 */ 1, 101, /* rank 2 */ 20, 105};
  t.exit = {2, 103, 25, 120, 30, 140};
  SizeStats s = combine(t, true);
  EXPECT_EQ(s.span_us, (std::vector<double>{30, 40}));
  EXPECT_EQ(s.slowest_us, (std::vector<double>{24, 35}));  // rank 1's 24; rank 2's 35
  EXPECT_DOUBLE_EQ(s.min_us, 2.5);                          // rank 0's mean
  EXPECT_DOUBLE_EQ(s.max_us, 22.5);                         // rank 1 (24, 19) and 2 (10, 35) average 21.5, 22.5
  EXPECT_DOUBLE_EQ(s.avg_us, (2.5 + 21.5 + 22.5) / 3);
  EXPECT_TRUE(combine(t, false).span_us.empty());
}

TEST(Stats, OwnTimesAreEveryRanksTimeOfEveryCallAndCountTheSlowOnes) {
  CallTimes t;
  t.ranks = 2, t.calls = 4;
  // rank 0: 10, 10, 10, 10; rank 1: 10, 12, 31, 200 (own times, us)
  t.entry = {0, 100, 200, 300, /* rank 1 */ 0, 100, 200, 300};
  t.exit = {10, 110, 210, 310, 10, 112, 231, 500};
  SizeStats s = combine(t, true);
  EXPECT_DOUBLE_EQ(s.own.p50, 10);   // sorted: 10 x5, 12, 31, 200; element 4
  EXPECT_DOUBLE_EQ(s.own.p90, 200);  // element 7
  EXPECT_DOUBLE_EQ(s.own.max, 200);
  EXPECT_EQ(s.own.slow, 2);          // 31 and 200 exceed 3 x 10; 12 does not
  EXPECT_EQ(own_times({}).slow, 0);
  EXPECT_EQ(own_times({5, 5, 15}).slow, 0);  // exactly 3x is not slower
}

TEST(Records, OwnTimesAndHowTheCallsWereTimedRoundTrip) {
  BenchRecord r = sample();
  EXPECT_EQ(to_json_line(r).find("own_p50_us"), std::string::npos);
  OwnTimes own;
  own.p50 = 11, own.p90 = 12.5, own.p99 = 40, own.max = 95.25, own.slow = 3;
  set_own_times(&r, own);
  r.idle_us = 0, r.skew_us = 200;
  BenchRecord back;
  ASSERT_TRUE(from_json_line(to_json_line(r), &back));
  EXPECT_DOUBLE_EQ(back.own_p50_us, 11);
  EXPECT_DOUBLE_EQ(back.own_p90_us, 12.5);
  EXPECT_DOUBLE_EQ(back.own_p99_us, 40);
  EXPECT_DOUBLE_EQ(back.own_max_us, 95.25);
  EXPECT_EQ(back.slow_calls, 3);
  EXPECT_EQ(back.idle_us, 0);
  EXPECT_EQ(back.skew_us, 200);
}

// railcoll bench --mpi reads railcoll-mpi-bench's records from the launcher,
// one line at a time: a barrier record of 10,000 samples (~90 KB, longer than
// a launcher's piece) must come back whole (it used to be reported as "exited
// 0 but reported nothing", followed by the very record).
TEST(Records, ARecordOfTenThousandSamplesFromALaunchedRankIsReadWhole) {
  BenchRecord r = sample();
  r.collective = "barrier", r.bytes = 0, r.iterations = 10000;
  for (int i = 0; i < 10000; ++i) r.samples_us.push_back(100.125 + i % 997);
  const std::string line = to_json_line(r);
  ASSERT_GT(line.size(), 80000u);
  char path[] = "/tmp/railcoll-test-record-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, line.data(), line.size()), static_cast<ssize_t>(line.size()));
  close(fd);
  // Written in 4 KiB pieces with pauses, so the launcher reads it in many reads.
  testbed::RankProcess rank;
  const std::string blocks = std::to_string(line.size() / 4096);
  rank.argv = {"sh", "-c", std::string("echo 'mpirun: a warning'; for i in $(seq 0 ") + blocks + "); do dd if=" + path +
                               " bs=4096 skip=$i count=1 status=none; sleep 0.002; done; echo"};
  std::string out;
  testbed::JobOptions o;
  o.on_line = [&](int, bool is_stderr, const std::string& piece) {
    if (!is_stderr) out += piece;
  };
  testbed::JobResult res = testbed::run_job({rank}, o);
  std::remove(path);
  ASSERT_EQ(res.exit_status, 0) << res.failure;
  std::vector<BenchRecord> recs = parse_records(out, nullptr, "the test rank's output");
  ASSERT_EQ(recs.size(), 1u) << out.substr(0, 200);
  EXPECT_EQ(recs[0].samples_us.size(), 10000u);
  EXPECT_DOUBLE_EQ(recs[0].samples_us[9999], 100.125 + 9999 % 997);
}

TEST(Report, TheFieldsSummaryComparesMeansAndTails) {
  BenchContext c;
  c.collective = "allgather";
  std::vector<BenchRecord> recs;
  for (auto [name, mean, p99] : {std::tuple{"auto", 50.0, 80.0}, {"mpi:railcoll", 60.0, 90.0}, {"mpi:tuned", 120.0, 130.0},
                                 {"mpi:han", 100.0, 200.0}}) {
    BenchRecord r = sample();
    r.collective = "allgather", r.algorithm = name, r.avg_us = mean, r.idle_us = 0;
    OwnTimes own;
    own.p50 = 40, own.p90 = 50, own.p99 = p99, own.max = 2 * p99, own.slow = 1;
    set_own_times(&r, own);
    recs.push_back(r);
  }
  std::ostringstream out;
  print_field_summary(out, recs, c);
  const std::string text = out.str();
  EXPECT_NE(text.find("calls back to back"), std::string::npos) << text;
  // base = HAN's 100 (better than tuned's 120): 2.00x over auto, 1.67x over mpi:railcoll; tails 2.0, 2.2, 3.2, 5.0
  EXPECT_NE(text.find("50.0          60.0      120.0     100.0      2.00x        1.67x      80 (2.0)      90 (2.2)     130 (3.2)     200 (5.0)"),
            std::string::npos)
      << text;
  std::ostringstream none;
  print_field_summary(none, {sample()}, c);
  EXPECT_EQ(none.str(), "");
}

TEST(Report, RootedCollectivesAreSummarisedBySpanWhenEveryRecordHasOne) {
  std::vector<BenchRecord> recs = {sample(), sample()};
  EXPECT_TRUE(summary_metric("bcast", recs).span);
  EXPECT_DOUBLE_EQ(summary_metric("bcast", recs).p50(recs[0]), 40.0);
  EXPECT_TRUE(summary_metric("gather", recs).span);
  EXPECT_FALSE(summary_metric("allgather", recs).span);
  recs[1].span_p50_us = -1;  // e.g. Open MPI on hosts with other clocks
  EXPECT_FALSE(summary_metric("bcast", recs).span);
  std::ostringstream out;
  BenchContext c;
  c.collective = "bcast";
  print_summary(out, {sample()}, c);
  EXPECT_NE(out.str().find("median span in us (first rank in to last rank out)"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("40.0 smp"), std::string::npos) << out.str();
}

TEST(Report, SizesFollowTheCollectivesTraits) {
  EXPECT_EQ(bench_sizes(Collective::Barrier, 8, 1024), (std::vector<uint64_t>{0}));
  EXPECT_EQ(bench_sizes(Collective::Allreduce, 1, 16), (std::vector<uint64_t>{4, 8, 16}));
  EXPECT_EQ(bench_sizes(Collective::Allreduce, 6, 24), (std::vector<uint64_t>{8, 12, 24}));
  EXPECT_EQ(bench_sizes("allgather", 0, 4), (std::vector<uint64_t>{0, 1, 2, 4}));
  EXPECT_EQ(bench_sizes("scatter", 1, 4), (std::vector<uint64_t>{1, 2, 4}));
  EXPECT_THROW(bench_sizes("alltoallw", 1, 4), InputError);
}

// alltoall: a node of P ranks takes in P (N-P) blocks; scatter: the root's node
// sends out N-P.
TEST(Report, RailBoundOfThePersonalisedCollectives) {
  BenchContext c;
  c.ranks = 16, c.nodes = 4, c.rails = 2;
  c.ranks_per_node = {4, 4, 4, 4};
  c.rail_bits_per_s = 1e9;
  c.collective = "alltoall";
  EXPECT_NEAR(rail_bound_us(c, 1 << 20), 4 * 50331.6, 0.5);  // 48 blocks of 1 MiB over 2 Gbit/s
  c.collective = "scatter";
  EXPECT_NEAR(rail_bound_us(c, 1 << 20), 50331.6, 0.1);
}

TEST(Report, RailBoundIsWhatTheBusiestNodeReceivesOverItsRails) {
  BenchContext c;
  c.collective = "allgather";
  c.ranks = 16, c.nodes = 4, c.rails = 2;
  c.ranks_per_node = {4, 4, 4, 4};
  c.rail_bits_per_s = 1e9;
  // 12 x 1 MiB x 8 bits / 2 Gbit/s (docs/cluster.md)
  EXPECT_NEAR(rail_bound_us(c, 1 << 20), 50331.6, 0.1);
  c.collective = "barrier";
  EXPECT_EQ(rail_bound_us(c, 0), 0);
}

// Benchmark records become tuning measurements (select/tune.hpp).
TEST(Records, BecomeMeasurementsForTuning) {
  const std::string bench =
      "[\n"
      "  {\"collective\":\"bcast\",\"algorithm\":\"binomial\",\"bytes\":8,\"ranks\":8,\"nodes\":2,\"rails\":2,"
      "\"avg_us\":12,\"p50_us\":11,\"iterations\":10,\"validated\":true},\n"
      "  {\"collective\":\"bcast\",\"algorithm\":\"auto\",\"chosen\":\"smp\",\"bytes\":8,\"ranks\":8,\"nodes\":2,"
      "\"rails\":2,\"p50_us\":9},\n"
      "  {\"collective\":\"bcast\",\"algorithm\":\"smp\",\"background\":\"uniform\",\"bytes\":8,\"ranks\":8,"
      "\"nodes\":2,\"rails\":2,\"p50_us\":99}\n"
      "]\n";
  auto m = measurements(parse_records(bench, nullptr, "b.json"));
  ASSERT_EQ(m.size(), 2u);  // the loaded record is left out; auto stays (rules ignore it)
  EXPECT_EQ(m[0].collective, Collective::Bcast);
  EXPECT_EQ(m[0].ppn, 4);
  EXPECT_EQ(m[0].p50_us, 11);
  BenchRecord spanned = parse_records(bench)[0];
  spanned.span_p50_us = 30;
  spanned.ppn = 5;
  auto s = measurements({spanned});
  EXPECT_EQ(s[0].p50_us, 30);  // a broadcast is compared by its span
  EXPECT_EQ(s[0].ppn, 5);
  EXPECT_THROW(parse_records("{\"collective\":\"bcast\",\"algorithm\":\"smp\",\"bytes\":\"eight\"}\n", nullptr, "bad"),
               InputError);
}

// --nonblocking's figures: written only when measured, read back whole, and
// never taken as measurements of an algorithm for tuning.
TEST(Records, NonblockingFiguresRoundTripAndAreNotTuningMeasurements) {
  BenchRecord r = sample();
  EXPECT_EQ(to_json_line(r).find("overlap_pct"), std::string::npos);
  EXPECT_EQ(to_json_line(r).find("\"form\""), std::string::npos);
  r.form = "nonblocking";
  r.blocking_avg_us = 11, r.blocking_p50_us = 12.5, r.blocking_p99_us = 30;
  r.overall_avg_us = 20, r.overall_p50_us = 21, r.overall_p99_us = 35;
  r.compute_avg_us = 13, r.post_avg_us = 1.5, r.wait_avg_us = 5.5;
  r.overlap_pct = 44, r.overlap_p50_pct = 50.25;
  BenchRecord back;
  ASSERT_TRUE(from_json_line(to_json_line(r), &back));
  EXPECT_EQ(back.form, "nonblocking");
  EXPECT_DOUBLE_EQ(back.blocking_p50_us, 12.5);
  EXPECT_DOUBLE_EQ(back.blocking_p99_us, 30);
  EXPECT_DOUBLE_EQ(back.overall_avg_us, 20);
  EXPECT_DOUBLE_EQ(back.compute_avg_us, 13);
  EXPECT_DOUBLE_EQ(back.wait_avg_us, 5.5);
  EXPECT_DOUBLE_EQ(back.overlap_pct, 44);
  EXPECT_DOUBLE_EQ(back.overlap_p50_pct, 50.25);
  EXPECT_TRUE(measurements({back}).empty());
  EXPECT_EQ(measurements({sample()}).size(), 1u);
}

// OSU's overlap from every rank's times: 2 ranks, 2 calls; pure post + wait
// 10 us, blocking 9 us, the overlap run 14 us of which 10 us computing: 4 us
// of communication left of 10, 60%.
TEST(Overlap, FiguresFollowOsusFormulaFromEveryRanksTimes) {
  const int ranks = 2, calls = 2;
  std::vector<double> every;
  for (int k = 0; k < ranks; ++k) {
    OverlapTimes t(calls);
    for (int i = 0; i < calls; ++i) {
      const double at = 1000.0 * i + k;
      t.series(OverlapTimes::BlockingIn)[i] = at, t.series(OverlapTimes::BlockingOut)[i] = at + 9;
      t.series(OverlapTimes::PureIn)[i] = at + 100, t.series(OverlapTimes::PureOut)[i] = at + 110;
      t.series(OverlapTimes::OverlapIn)[i] = at + 200, t.series(OverlapTimes::OverlapOut)[i] = at + 214;
      t.series(OverlapTimes::Post)[i] = 1, t.series(OverlapTimes::Compute)[i] = 10, t.series(OverlapTimes::Wait)[i] = 3;
    }
    every.insert(every.end(), t.all.begin(), t.all.end());
  }
  BenchRecord r;
  SizeStats pure = overlap_figures(every, ranks, calls, true, &r);
  EXPECT_DOUBLE_EQ(pure.avg_us, 10);
  EXPECT_DOUBLE_EQ(r.blocking_p50_us, 9);
  EXPECT_DOUBLE_EQ(r.blocking_avg_us, 9);
  EXPECT_DOUBLE_EQ(r.overall_avg_us, 14);
  EXPECT_DOUBLE_EQ(r.compute_avg_us, 10);
  EXPECT_DOUBLE_EQ(r.post_avg_us, 1);
  EXPECT_DOUBLE_EQ(r.wait_avg_us, 3);
  EXPECT_NEAR(r.overlap_pct, 60, 1e-9);
  EXPECT_NEAR(r.overlap_p50_pct, 60, 1e-9);
  // Nothing overlapped: the overall time is compute + the whole latency; never below 0%.
  for (int k = 0; k < ranks; ++k)
    for (int i = 0; i < calls; ++i)
      every[(static_cast<size_t>(k) * OverlapTimes::kSeries + OverlapTimes::OverlapOut) * calls + i] += 10;
  overlap_figures(every, ranks, calls, true, &r);
  EXPECT_DOUBLE_EQ(r.overlap_pct, 0);
  EXPECT_DOUBLE_EQ(r.overlap_p50_pct, 0);
}

// How far apart the ranks posted: the median over calls of the last post
// minus the first, for the overlap run and the pure calls, where the ranks
// share a clock; not measured otherwise.
TEST(Overlap, EntrySkewIsTheSpreadOfTheRanksPostsPerCall) {
  const int ranks = 3, calls = 3;
  const double late[calls] = {7, 3, 5};  // rank 2 posts the overlap run's call i this late; rank 1 half as late
  std::vector<double> every;
  for (int k = 0; k < ranks; ++k) {
    OverlapTimes t(calls);
    for (int i = 0; i < calls; ++i) {
      const double at = 1000.0 * i;
      t.series(OverlapTimes::BlockingIn)[i] = at, t.series(OverlapTimes::BlockingOut)[i] = at + 9;
      t.series(OverlapTimes::PureIn)[i] = at + 100 + k, t.series(OverlapTimes::PureOut)[i] = at + 110;
      t.series(OverlapTimes::OverlapIn)[i] = at + 200 + late[i] * k / 2, t.series(OverlapTimes::OverlapOut)[i] = at + 230;
      t.series(OverlapTimes::Post)[i] = 1, t.series(OverlapTimes::Compute)[i] = 10, t.series(OverlapTimes::Wait)[i] = 3;
    }
    every.insert(every.end(), t.all.begin(), t.all.end());
  }
  BenchRecord r = sample();
  overlap_figures(every, ranks, calls, true, &r);
  EXPECT_DOUBLE_EQ(r.entry_skew_p50_us, 5);
  EXPECT_DOUBLE_EQ(r.pure_entry_skew_p50_us, 2);
  BenchRecord apart;
  overlap_figures(every, ranks, calls, false, &apart);
  EXPECT_DOUBLE_EQ(apart.entry_skew_p50_us, -1) << "clocks of different hosts cannot be compared";
  BenchRecord back;
  ASSERT_TRUE(from_json_line(to_json_line(r), &back));
  EXPECT_DOUBLE_EQ(back.entry_skew_p50_us, 5);
  EXPECT_DOUBLE_EQ(back.pure_entry_skew_p50_us, 2);
}

TEST(Overlap, TheBusyLoopComputesForTheTimeAsked) {
  const double t0 = monotonic_us();
  const double x = railcoll_busy_compute(2000);
  const double took = monotonic_us() - t0;
  EXPECT_GE(took, 2000);
  EXPECT_LT(took, 2000 + 50000);  // a loaded machine may take the core away for a while
  EXPECT_GT(x, 0.0);  // the work was done (x runs from 1 towards 0.1)
}

}  // namespace
}  // namespace railcoll::bench

namespace railcoll {
namespace {

TEST(Background, ComplementOfAPowerOfTwoIsTheBitwiseComplement) {
  for (int nodes : {2, 4, 8, 64})
    for (int i = 0; i < nodes; ++i)
      EXPECT_EQ(background_destination(BackgroundPattern::Complement, i, nodes), (~i) & (nodes - 1));
}

TEST(Background, ComplementIsAPermutationAndTheMiddleOfAnOddCountSendsNothing) {
  for (int nodes = 2; nodes <= 9; ++nodes) {
    std::set<int> receivers;
    int silent = 0;
    for (int i = 0; i < nodes; ++i) {
      int d = background_destination(BackgroundPattern::Complement, i, nodes);
      if (d == kNoBackgroundDestination) {
        ++silent;
        EXPECT_EQ(2 * i + 1, nodes);
        continue;
      }
      EXPECT_NE(d, i);
      receivers.insert(d);
    }
    EXPECT_EQ(silent, nodes % 2);
    EXPECT_EQ(static_cast<int>(receivers.size()), nodes - silent);  // nobody receives twice
  }
}

TEST(Background, UniformReachesEveryOtherNodeAndNeverItself) {
  const int nodes = 5;
  for (int i = 0; i < nodes; ++i) {
    std::set<int> seen;
    for (uint64_t draw = 0; draw < 40; ++draw) {
      int d = background_destination(BackgroundPattern::Uniform, i, nodes, draw * 0x9E3779B97F4A7C15ull);
      EXPECT_NE(d, i);
      EXPECT_GE(d, 0);
      EXPECT_LT(d, nodes);
      seen.insert(d);
    }
    EXPECT_EQ(static_cast<int>(seen.size()), nodes - 1);
  }
}

TEST(Background, HotspotSendsToNodeZeroAndNamesParse) {
  EXPECT_EQ(background_destination(BackgroundPattern::Hotspot, 0, 4), kNoBackgroundDestination);
  EXPECT_EQ(background_destination(BackgroundPattern::Hotspot, 3, 4), 0);
  EXPECT_EQ(background_destination(BackgroundPattern::Uniform, 0, 1, 7), kNoBackgroundDestination);
  EXPECT_EQ(background_destination(BackgroundPattern::None, 1, 4), kNoBackgroundDestination);
  BackgroundPattern p;
  ASSERT_TRUE(parse_background("hotspot", &p));
  EXPECT_EQ(p, BackgroundPattern::Hotspot);
  EXPECT_FALSE(parse_background("random", &p));
  EXPECT_STREQ(background_name(BackgroundPattern::Complement), "complement");
}

}  // namespace
}  // namespace railcoll
