// What a benchmark row is judged against and how both sides are made alike:
// nccl-tests' bus bandwidth per collective, the rail and compute bounds and
// which binds, the calls per size both sides time, the pooling of interleaved
// rounds, the peers' command line, and the results table (src/bench/bounds,
// report, peer, results_table).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <sys/stat.h>

#include "bench/bounds.hpp"
#include "bench/call_buffers.hpp"
#include "bench/peer.hpp"
#include "bench/records.hpp"
#include "bench/report.hpp"
#include "bench/results_table.hpp"
#include "core/errors.hpp"

namespace railcoll::bench {
namespace {

// 16 ranks on 4 nodes of 4, 2 rails of 1 Gbit/s, and a machine that copies at
// 10 GB/s and adds at 2 GB/s with all its cores.
BenchContext cluster(const std::string& collective) {
  BenchContext c;
  c.collective = collective;
  c.ranks = 16, c.nodes = 4, c.rails = 2, c.max_ppn = 4;
  c.ranks_per_node = {4, 4, 4, 4};
  c.rail_bits_per_s = 1e9;
  c.copy_Bps = 10e9, c.reduce_Bps = 2e9, c.cores = 2;
  return c;
}

BenchRecord row(const std::string& collective, const std::string& algorithm, uint64_t bytes, double p50_us) {
  BenchRecord r;
  r.collective = collective, r.algorithm = algorithm, r.bytes = bytes;
  r.ranks = 16, r.nodes = 4, r.rails = 2, r.ppn = 4, r.iterations = 10;
  r.p50_us = r.avg_us = p50_us;
  return r;
}

TEST(BusBandwidth, FactorsAreNcclTestsOnes) {
  EXPECT_DOUBLE_EQ(bus_factor(Collective::Allreduce, 16), 2.0 * 15 / 16);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::Allgather, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::ReduceScatterBlock, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::Alltoall, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::Bcast, 16), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::Reduce, 16), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::Gather, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::Barrier, 16), 0.0);
  // S: the whole buffer. An all-gather of 1 MiB per rank gathers 16 MiB; an allreduce's is its vector.
  EXPECT_DOUBLE_EQ(algbw_bytes(Collective::Allgather, 16, 1 << 20), 16.0 * (1 << 20));
  EXPECT_DOUBLE_EQ(algbw_bytes(Collective::Allreduce, 16, 1 << 20), 1.0 * (1 << 20));
}

TEST(BusBandwidth, AtTheRailBoundAnAllGathersBusbwIsWhatTheNodesRailsCarryScaledByNcclsFactor) {
  const BenchContext c = cluster("allgather");
  // Each node takes in 12 blocks of 1 MiB over 2 x 1 Gbit/s: 50.3 ms.
  const double bound = rail_bound_us(c, 1 << 20);
  EXPECT_NEAR(bound, 12.0 * (1 << 20) * 8 / 2e9 * 1e6, 1e-6);
  BenchRecord r = row("allgather", "auto", 1 << 20, bound);
  set_bandwidths(&r, c);
  EXPECT_NEAR(r.algbw_GBps, 16.0 * (1 << 20) / bound * 1e-3, 1e-9);
  EXPECT_NEAR(r.busbw_GBps, r.algbw_GBps * 15 / 16, 1e-9);
  // busbw against one node's 2 x 1 Gbit/s = 0.25 GB/s: (16/12) x (15/16) = 125% at the bound.
  EXPECT_NEAR(r.busbw_pct, 125.0, 1e-6);
  EXPECT_DOUBLE_EQ(r.rail_bits_per_s, 1e9);
  EXPECT_NEAR(r.rail_bound_us, bound, 1e-9);
  BenchRecord barrier = row("barrier", "auto", 0, 50);
  set_bandwidths(&barrier, cluster("barrier"));
  EXPECT_LT(barrier.busbw_GBps, 0);  // no bytes, no bandwidth
}

TEST(ComputeBound, ReductionsHaveOneAndItBindsWhenTheCoresAreSlowerThanTheRails) {
  BenchContext c = cluster("reduce_scatter_block");
  ScheduleWork w;
  ASSERT_TRUE(work_of(c, "auto", 1 << 20, &w));  // a peer's name: the least work of any railcoll schedule
  // Every rank's block is the sum of 16 contributions: at least 15 x 1 MiB combined per block.
  EXPECT_GE(w.reduce_bytes, 16ull * 15 * (1 << 20));
  ScheduleWork ag;
  ASSERT_TRUE(work_of(cluster("allgather"), "direct", 1 << 20, &ag));
  EXPECT_EQ(ag.reduce_bytes, 0u);
  EXPECT_GT(ag.copy_bytes, 0u);

  std::vector<BenchRecord> recs = {row("reduce_scatter_block", "mpi:tuned", 1 << 20, 200000)};
  c.reduce_Bps = 1e9;  // slow cores: 240 MiB to add at 1 GB/s is 250 ms, more than the rails' 50 ms
  set_bounds(&recs, c);
  EXPECT_EQ(recs[0].binding, "compute");
  EXPECT_GT(recs[0].compute_bound_us, recs[0].rail_bound_us);
  EXPECT_NEAR(recs[0].bound_pct, 100 * recs[0].compute_bound_us / 200000, 1e-6);
  c.reduce_Bps = 1e12;  // fast cores: the rails bind
  recs[0].binding.clear();
  set_bounds(&recs, c);
  EXPECT_EQ(recs[0].binding, "rail");
  EXPECT_NEAR(recs[0].bound_pct, 100 * recs[0].rail_bound_us / 200000, 1e-6);
  // Without measured rates there is no compute bound.
  c.copy_Bps = c.reduce_Bps = 0;
  EXPECT_EQ(compute_bound_us(w, c), 0);
}

TEST(LikeForLike, BothSidesTimeAsManyCallsAndRoundsSplitThem) {
  // 1 MiB per rank on 16 ranks: 128 MiB / 16 MiB = 8, at least 10.
  EXPECT_EQ(calls_for(1 << 20, 16, 100, 10).timed, kMinCalls);
  EXPECT_EQ(calls_for(8, 16, 100, 10).timed, 100);
  EXPECT_EQ(calls_for(8, 16, 100, 10).untimed, 10);
  EXPECT_EQ(calls_for(8, 16, 100, 10, 3).timed, 34);  // rounded up: 102 in all
  EXPECT_EQ(calls_for(1 << 20, 16, 100, 10, 2).timed, 5);
  EXPECT_EQ(calls_for(1 << 20, 16, 100, 10, 2).untimed, 1);
  EXPECT_EQ(calls_for(0, 16, 2000, 50).timed, 2000);  // barrier
}

BenchRecord round_of(std::vector<std::vector<double>> own, std::vector<double> span) {
  BenchRecord r = row("allgather", "mpi:tuned", 64, 0);
  r.raw.ranks = static_cast<int>(own.size());
  r.raw.calls = static_cast<int>(own[0].size());
  for (auto& rank : own) r.raw.own.insert(r.raw.own.end(), rank.begin(), rank.end());
  r.raw.span = span;
  r.validated = true;
  set_figures(&r, stats_of(r.raw), false);
  r.iterations = r.raw.calls;
  return r;
}

TEST(LikeForLike, RoundsArePooledIntoOneRecordOverEveryCall) {
  // Two ranks; round 1 calls take 10/12 and 11/30 us, round 2 20/22 and 21/23.
  BenchRecord a = round_of({{10, 11}, {12, 30}}, {13, 31});
  BenchRecord b = round_of({{20, 21}, {22, 23}}, {23, 24});
  // Through the JSON codec, as the driver reads them from the programs.
  BenchRecord a2, b2;
  ASSERT_TRUE(from_json_line(to_json_line(a), &a2));
  ASSERT_TRUE(from_json_line(to_json_line(b), &b2));
  EXPECT_EQ(a2.raw.own, a.raw.own);
  BenchRecord p = pooled_record({a2, b2});
  EXPECT_EQ(p.iterations, 4);
  EXPECT_EQ(p.rounds, 2);
  // Slowest rank per call: 12, 30, 22, 23 -> sorted 12 22 23 30, p50 = element 2.
  EXPECT_DOUBLE_EQ(p.p50_us, 23);
  EXPECT_DOUBLE_EQ(p.p99_us, 30);
  EXPECT_DOUBLE_EQ(p.span_p50_us, 24);  // spans 13 31 23 24 -> 13 23 24 31
  EXPECT_DOUBLE_EQ(p.avg_us, (10 + 11 + 20 + 21 + 12 + 30 + 22 + 23) / 8.0);
  EXPECT_EQ(p.raw.calls, 0);  // the raw times stay between the programs and the driver
  EXPECT_EQ(to_json_line(p).find("raw_own_us"), std::string::npos);
  BenchRecord other = round_of({{1, 1}, {1, 1}}, {1, 1});
  other.algorithm = "auto";
  EXPECT_THROW(pooled_record({a, other}), InputError);
  BenchRecord no_raw = a;
  no_raw.raw = RawTimes{};
  EXPECT_THROW(pooled_record({a, no_raw}), InputError);
}

TEST(Records, TheBoundsAndBandwidthsTravelInJsonAndCsv) {
  BenchRecord r = row("allreduce", "auto", 1024, 50);
  r.rail_bits_per_s = 4.1e8;
  r.algbw_GBps = 0.02, r.busbw_GBps = 0.0375, r.busbw_pct = 36.6;
  r.rail_bound_us = 20, r.compute_bound_us = 2, r.binding = "rail", r.bound_pct = 40;
  r.rounds = 2, r.warmup = 3;
  BenchRecord back;
  ASSERT_TRUE(from_json_line(to_json_line(r), &back));
  EXPECT_DOUBLE_EQ(back.rail_bits_per_s, 4.1e8);
  EXPECT_DOUBLE_EQ(back.busbw_GBps, 0.0375);
  EXPECT_DOUBLE_EQ(back.busbw_pct, 36.6);
  EXPECT_DOUBLE_EQ(back.compute_bound_us, 2);
  EXPECT_EQ(back.binding, "rail");
  EXPECT_DOUBLE_EQ(back.bound_pct, 40);
  EXPECT_EQ(back.rounds, 2);
  EXPECT_EQ(back.warmup, 3);
  char path[] = "/tmp/railcoll-test-bounds-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  write_csv(path, {r});
  std::ifstream in(path);
  std::string header, line;
  std::getline(in, header);
  std::getline(in, line);
  std::remove(path);
  EXPECT_NE(header.find(",rail_bits_per_s,algbw_GBps,busbw_GBps,busbw_pct,rail_bound_us,compute_bound_us,binding,"
                        "bound_pct,rounds,warmup"),
            std::string::npos);
  EXPECT_NE(line.find(",410000000,0.02,0.0375,36.6,20,2,rail,40,2,3"), std::string::npos) << line;
}

TEST(Peer, TheCommandLineIsCheckedBeforeAnythingRuns) {
  PeerOptions o;
  EXPECT_EQ(parse_peer_options({"--coll", "bcast", "-m", "8:64", "-c", "--rounds", "2", "--raw"}, "p", "mpi", &o), "");
  EXPECT_EQ(o.collective, Collective::Bcast);
  EXPECT_EQ(o.rounds, 2);
  EXPECT_TRUE(o.raw && o.validate);
  EXPECT_EQ(o.iters, 100);
  EXPECT_EQ(parse_peer_options({"--coll", "barrier"}, "p", "mpi", &o), "");
  EXPECT_EQ(o.iters, 10000);
  EXPECT_EQ(parse_peer_options({"-h"}, "p", "mpi", &o), "help");
  EXPECT_NE(parse_peer_options({"--coll", "nope"}, "p", "mpi", &o).find("--coll expects"), std::string::npos);
  EXPECT_NE(parse_peer_options({"-m", "0:8"}, "p", "mpi", &o).find("-m expects"), std::string::npos);
  EXPECT_NE(parse_peer_options({"-i"}, "p", "mpi", &o).find("needs a value"), std::string::npos);
  EXPECT_NE(parse_peer_options({"--nonblocking", "--skew", "5"}, "p", "mpi", &o).find("skew does not go"),
            std::string::npos);
  EXPECT_NE(parse_peer_options({"--bogus"}, "p", "mpi", &o).find("unknown option"), std::string::npos);
  EXPECT_NE(peer_usage("railcoll-mpi-bench", "MPI").find("--nonblocking"), std::string::npos);
}

// A peer that is a single rank doing a correct (or a wrong) all-gather.
class OneRank : public SideChannel {
 public:
  int rank() override { return 0; }
  int size() override { return 1; }
  int nodes() override { return 1; }
  int max_ppn() override { return 1; }
  void gather(const std::vector<double>& mine, std::vector<double>* all) override { *all = mine; }
  uint64_t sum(uint64_t mine) override { return mine; }
  bool all_equal(uint64_t) override { return true; }
};
class CopyingAllgather : public PeerCollectives {
 public:
  bool wrong = false;
  int calls = 0;
  std::string lacks(Collective, bool) override { return ""; }
  void barrier() override {}
  void call(Collective, CallBuffers& b) override {
    ++calls;
    std::copy(b.send(), b.send() + b.bytes(), b.recv());
    if (wrong) b.recv()[0] ^= 1;
  }
  void post(Collective c, CallBuffers& b) override { call(c, b); }
  void wait() override {}
};

TEST(Peer, TheLoopValidatesEveryCallWithTheTraitsAndSaysWhenOneIsWrong) {
  OneRank side;
  CopyingAllgather lib;
  PeerOptions o;
  ASSERT_EQ(parse_peer_options({"-m", "8:16", "-c", "-i", "4", "-x", "1", "--raw"}, "test-peer", "peer", &o), "");
  std::ostringstream out, err;
  EXPECT_EQ(run_peer_bench(side, lib, o, out, err), 0) << err.str();
  std::vector<BenchRecord> recs = parse_records(out.str());
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_TRUE(recs[0].validated);
  EXPECT_EQ(recs[0].algorithm, "peer");
  EXPECT_EQ(recs[0].iterations, 4);
  EXPECT_EQ(recs[0].raw.calls, 4);
  EXPECT_EQ(lib.calls, 2 * (4 + 1));
  lib.wrong = true;
  std::ostringstream out2, err2;
  EXPECT_EQ(run_peer_bench(side, lib, o, out2, err2), 1);
  EXPECT_NE(err2.str().find("validation FAILED"), std::string::npos) << err2.str();
  EXPECT_FALSE(parse_records(out2.str())[0].validated);
}

TEST(ResultsTable, OneRowPerCollectiveAndSizeWithEveryPeerAndTheRatio) {
  char dir[] = "/tmp/railcoll-test-results-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  BenchContext c = cluster("allgather");
  c.rate_source = "auto", c.ceiling_pct = 96;
  std::vector<BenchRecord> recs = {row("allgather", "auto", 1 << 20, 60000), row("allgather", "mpi:han", 1 << 20, 90000),
                                   row("allgather", "oneccl", 1 << 20, 120000)};
  set_bounds(&recs, c);
  write_json(std::string(dir) + "/allgather.json", recs);
  std::ofstream(std::string(dir) + "/NOTE") << "measured by a test";
  ResultRegime g = read_regime(dir);
  std::ostringstream md;
  write_results_table(md, {g});
  const std::string t = md.str();
  EXPECT_NE(t.find("the faithful cluster"), std::string::npos) << t;
  EXPECT_NE(t.find("96% of the rail bound"), std::string::npos) << t;
  EXPECT_NE(t.find("measured by a test"), std::string::npos) << t;
  EXPECT_NE(t.find("| collective | bytes | binds | railcoll busbw | % rail | % binding | p99/p50 | mpi:han | oneccl |"
                   " best peer / railcoll |"),
            std::string::npos)
      << t;
  // 1 MiB a rank: a node takes in 12 MiB over 2 x 1 Gbit/s, 50.3 ms; auto took 60 ms, HAN 90 ms.
  EXPECT_NE(t.find("| allgather | 1048576 | rail | 0.262 | 84% | 84% | - |"), std::string::npos) << t;
  EXPECT_NE(t.find("(56%) |"), std::string::npos) << t;
  EXPECT_NE(t.find("Samples per row: 10 calls."), std::string::npos) << t;
  EXPECT_NE(t.find("| 1.50 (mpi:han) |"), std::string::npos) << t;
  std::remove((std::string(dir) + "/allgather.json").c_str());
  std::remove((std::string(dir) + "/NOTE").c_str());
  rmdir(dir);
  EXPECT_THROW(read_regime("/nonexistent-railcoll-dir"), InputError);
}

}  // namespace
}  // namespace railcoll::bench
