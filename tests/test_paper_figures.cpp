// The papers' figures and closed-form counts, checked on the schedules.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/registry.hpp"
#include "verify/verifier.hpp"

using namespace railcoll;

namespace {

Schedule build(const std::string& algo, const Topology& t, uint64_t bytes = 1, AlgoOptions o = {},
               std::vector<std::string> given = {}) {
  return build_schedule(Collective::Allgather, algo, t, std::vector<uint64_t>(t.nranks(), bytes), o, given);
}

// Destinations of rank p's puts at each step.
std::map<int, std::set<int>> destinations(const Schedule& s, int p) {
  std::map<int, std::set<int>> out;
  for (auto& op : s.programs[p])
    if (op.kind == OpKind::Put) out[op.step].insert(op.peer);
  return out;
}

int ceil_log(long base, long n) {
  int l = 0;
  for (long x = 1; x < n; x *= base) ++l;
  return l;
}

int mod(int a, int n) { return ((a % n) + n) % n; }

}  // namespace

// Seed 000 Figure 4: 2-port Bruck on 9 processes: step 0 to p-1, p-2; step 1 to p-3, p-6.
TEST(PaperFigures, Bruck9Processes2Ports) {
  Schedule s = build("bruck", Topology::from_ppn(9, 1, 2));
  for (int p = 0; p < 9; ++p) {
    auto d = destinations(s, p);
    ASSERT_EQ(d.size(), 2u);
    EXPECT_EQ(d[0], (std::set<int>{mod(p - 1, 9), mod(p - 2, 9)})) << "rank " << p;
    EXPECT_EQ(d[1], (std::set<int>{mod(p - 3, 9), mod(p - 6, 9)})) << "rank " << p;
  }
  // Step 1 carries 3 blocks per message; the shift is a local copy at step 2.
  for (auto& op : s.programs[4])
    if (op.kind == OpKind::Put && op.step == 1) EXPECT_EQ(op.bytes(), 3u);
  EXPECT_EQ(s.programs[4].back().kind, OpKind::Copy);
  EXPECT_EQ(s.programs[4].back().step, 2);
}

// Seed 000 Figure 3: 2-port Standard Exchange on 9 processes.
TEST(PaperFigures, StandardExchange9Processes2Ports) {
  Schedule s = build("stdex", Topology::from_ppn(9, 1, 2));
  for (int p = 0; p < 9; ++p) {
    auto d = destinations(s, p);
    ASSERT_EQ(d.size(), 2u);
    int g = p / 3 * 3;
    std::set<int> group{g, g + 1, g + 2};
    group.erase(p);
    EXPECT_EQ(d[0], group) << "rank " << p;
    EXPECT_EQ(d[1], (std::set<int>{mod(p + 3, 9), mod(p + 6, 9)})) << "rank " << p;
  }
}

TEST(ClosedForm, DirectSteps) {
  for (int N = 1; N <= 64; ++N)
    for (int k = 1; k <= 4; ++k) {
      Schedule s = build("direct", Topology::from_ppn(N, 1, k));
      auto st = s.stats();
      EXPECT_EQ(st.comm_steps, (N - 1 + k - 1) / k) << N << " " << k;
      EXPECT_EQ(st.messages, static_cast<uint64_t>(N) * (N - 1));
      EXPECT_EQ(st.max_messages_per_rank, static_cast<uint64_t>(N - 1));
    }
}

TEST(ClosedForm, BruckRounds) {
  for (int N = 1; N <= 64; ++N)
    for (int k = 1; k <= 4; ++k) {
      Schedule s = build("bruck", Topology::from_ppn(N, 1, k));
      EXPECT_EQ(s.stats().comm_steps, ceil_log(k + 1, N)) << N << " " << k;
      // Every rank sends N-1 blocks in all.
      uint64_t sent = 0;
      for (auto& op : s.programs[0])
        if (op.kind == OpKind::Put) sent += op.bytes();
      EXPECT_EQ(sent, static_cast<uint64_t>(N - 1));
    }
}

TEST(ClosedForm, StandardExchangeStepsForPowersOfKPlusOne) {
  for (int k = 1; k <= 4; ++k)
    for (int N = 1, L = 0; N <= 256; N *= (k + 1), ++L) {
      Schedule s = build("stdex", Topology::from_ppn(N, 1, k));
      EXPECT_EQ(s.stats().comm_steps, L) << N << " " << k;
      // At step i each rank sends (k+1)^i blocks to each of k others.
      long blocks = 1;
      for (int i = 0; i < L; ++i, blocks *= (k + 1))
        for (auto& op : s.programs[N - 1])
          if (op.kind == OpKind::Put && op.step == i) EXPECT_EQ(op.bytes(), static_cast<uint64_t>(blocks));
    }
}

// Seed 000 §7: at 16 processes and 2 ports, Standard Exchange needs correction
// steps (16 is not a power of 3): 2 exchange steps plus a fold and an unfold.
TEST(ClosedForm, StandardExchangeCorrectionAt16) {
  Schedule s = build("stdex", Topology::from_ppn(16, 1, 2));
  EXPECT_EQ(s.stats().comm_steps, 4);
  auto d = destinations(s, 9);  // an extra rank folds into rank 0
  EXPECT_EQ(d[0], (std::set<int>{0}));
  EXPECT_EQ(destinations(s, 0)[3], (std::set<int>{9}));
}

TEST(ClosedForm, RecursiveDoublingSteps) {
  for (int N : {1, 2, 4, 8, 16, 32, 64})
    EXPECT_EQ(build("recursive_doubling", Topology::from_ppn(N, 1, 1)).stats().comm_steps, ceil_log(2, N));
  // Not a power of two: fold + log2(P) + unfold.
  EXPECT_EQ(build("recursive_doubling", Topology::from_ppn(12, 1, 1)).stats().comm_steps, 5);
}

TEST(ClosedForm, RingAndGatherBcast) {
  EXPECT_EQ(build("ring", Topology::from_ppn(16, 1, 2)).stats().comm_steps, 15);
  // Binomial gather then broadcast: 2 * log2(16) steps, root sends 4 full messages.
  Schedule s = build("gather_bcast", Topology::from_ppn(16, 1, 2));
  EXPECT_EQ(s.stats().comm_steps, 8);
  EXPECT_EQ(destinations(s, 0).size(), 4u);
  EXPECT_EQ(destinations(s, 8)[3], (std::set<int>{0}));
}

// Seed 002 Figure 2 (left): 16 processes, C = 2: in step 1 process 0 sends to
// its pair 1 and to the peer of the pair in the other group, 9; before the loop
// it gives its block to its peer 8. log2(N/C) = 3 exchange steps.
TEST(PaperFigures, ConcurrentExchange16ProcessesC2) {
  AlgoOptions o;
  o.concurrency = 2;
  Schedule s = build("concurrent_exchange", Topology::from_ppn(16, 1, 2), 1, o, {"concurrency"});
  auto d = destinations(s, 0);
  EXPECT_EQ(d[0], (std::set<int>{8}));
  EXPECT_EQ(d[1], (std::set<int>{1, 9}));
  EXPECT_EQ(d[2], (std::set<int>{2, 10}));
  EXPECT_EQ(d[3], (std::set<int>{4, 12}));
  EXPECT_EQ(s.stats().comm_steps, 4);
  // C = 4 (Figure 2 right): four groups of 4, log2(4) = 2 exchange steps.
  o.concurrency = 4;
  Schedule s4 = build("concurrent_exchange", Topology::from_ppn(16, 1, 4), 1, o, {"concurrency"});
  EXPECT_EQ(destinations(s4, 0)[1], (std::set<int>{1, 5, 9, 13}));
  EXPECT_EQ(s4.stats().comm_steps, 3);
}

// Seed 002 Figure 4: splitting on 4 processes: first halves to the pair, second
// halves to the co-pair (same distance, opposite direction).
TEST(PaperFigures, ConcurrentExchangeSplit4Processes) {
  Schedule s = build("concurrent_exchange_split", Topology::from_ppn(4, 1, 2), 8);
  auto d0 = destinations(s, 0);
  EXPECT_EQ(d0[0], (std::set<int>{1, 3}));
  EXPECT_EQ(d0[1], (std::set<int>{2}));  // pair and co-pair coincide at distance N/2
  for (auto& op : s.programs[0])
    if (op.kind == OpKind::Put && op.step == 0) EXPECT_EQ(op.bytes(), 4u);  // half a block
}

// Seed 001 Figures 3 and 4: four 4-way SMP nodes; only masters 0,4,8,12 use the network.
TEST(PaperFigures, SmpPhasesOnFour4WayNodes) {
  Topology t = Topology::from_ppn(16, 4, 2);
  for (const char* algo : {"smp_gather_bcast", "smp_direct", "smp_bruck"}) {
    Schedule s = build(algo, t, 256);
    for (int r = 0; r < 16; ++r) {
      bool puts = !destinations(s, r).empty();
      EXPECT_EQ(puts, r % 4 == 0) << algo << " rank " << r;
      // Phase 1: every process copies its block into the node's shared buffer at step 0.
      EXPECT_EQ(s.programs[r][0].kind, OpKind::Copy) << algo;
      EXPECT_EQ(s.programs[r][0].segs[0].dst.region, Region::Shared) << algo;
    }
  }
  // Gather+Bcast: Phase 2 is a Direct gather of masters 4, 8, 12 into node 0;
  // a 4-process node's 256 B blocks travel as one 1 KiB message (seed 001 §6.2.1).
  Schedule g = build("smp_gather_bcast", t, 256);
  for (int m : {4, 8, 12}) {
    EXPECT_EQ(destinations(g, m)[1], (std::set<int>{0}));
    for (auto& op : g.programs[m])
      if (op.kind == OpKind::Put && op.step == 1) EXPECT_EQ(op.bytes(), 1024u);
  }
  // SMP Direct, 2 ports: step 1 to the next two nodes, step 2 to the last.
  Schedule d = build("smp_direct", t, 256);
  EXPECT_EQ(destinations(d, 4)[1], (std::set<int>{8, 12}));
  EXPECT_EQ(destinations(d, 4)[2], (std::set<int>{0}));
  // SMP Bruck, 2 ports, 4 nodes: node n -> n-1, n-2, then n-3 with the last chunk.
  Schedule b = build("smp_bruck", t, 256);
  EXPECT_EQ(destinations(b, 8)[1], (std::set<int>{4, 0}));
  EXPECT_EQ(destinations(b, 8)[2], (std::set<int>{12}));
}

TEST(Striping, AboveThresholdOnlyAndEven) {
  Topology t = Topology::from_ppn(4, 1, 2);
  Schedule small = build("direct", t, 1024);
  Schedule large = build("direct", t, 1025);
  for (auto& op : small.programs[0])
    if (op.kind == OpKind::Put) EXPECT_NE(op.rail, kStripe);
  for (auto& op : large.programs[0])
    if (op.kind == OpKind::Put) EXPECT_EQ(op.rail, kStripe);
  auto parts = large.rail_parts(kStripe, 1025);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].second, 513u);
  EXPECT_EQ(parts[1].second, 512u);
  auto st = large.stats();
  EXPECT_EQ(st.rail_bytes[0] + st.rail_bytes[1], st.net_bytes);
  EXPECT_LE(st.rail_bytes[0] - st.rail_bytes[1], 12u);
  AlgoOptions o;
  o.stripe_threshold = 4096;
  Schedule raised = build("direct", t, 1025, o);
  for (auto& op : raised.programs[0])
    if (op.kind == OpKind::Put) EXPECT_NE(op.rail, kStripe);
}

TEST(MultiLeader, EveryRailDrivenByItsOwnProcess) {
  Schedule s = build("smp_multileader", Topology::from_ppn(16, 4, 2), 4096);
  for (int r = 0; r < 16; ++r) {
    std::set<int> rails;
    for (auto& op : s.programs[r])
      if (op.kind == OpKind::Put) rails.insert(op.rail);
    EXPECT_EQ(rails, (std::set<int>{r % 4 % 2})) << "rank " << r;  // local rank l drives rail l mod k
  }
  EXPECT_TRUE(verify_schedule(s).ok());
}

TEST(BadInput, RegistryNamesTheProblem) {
  Topology t = Topology::from_ppn(4, 1, 1);
  auto msg = [&](auto f) {
    try {
      f();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::vector<uint64_t> c(4, 1);
  EXPECT_EQ(msg([&] { build_schedule(Collective::Allgather, "nope", t, c, {}); }),
            "unknown allgather algorithm 'nope' (railcoll algos lists them)");
  // The choices are the table's user-facing rows, in order.
  EXPECT_EQ(msg([&] { collective_from_name("nope"); }),
            "unknown collective 'nope' (one of: allgather, barrier, bcast, gather, allreduce, "
            "reduce_scatter_block, reduce_scatter, reduce, alltoall, alltoallv, scatter, scatterv, gatherv, scan, exscan)");
  EXPECT_EQ(msg([&] { build_schedule(Collective::Allgather, "bruck", t, c, {}, {"concurrency"}); }),
            "allgather algorithm 'bruck' does not take the option --concurrency");
  EXPECT_EQ(msg([&] { build_schedule(Collective::Allgather, "bruck", t, {1, 2}, {}); }), "got 2 block sizes for 4 ranks");
  EXPECT_EQ(msg([&] { build_schedule(Collective::Allgather, "bruck", t, std::vector<uint64_t>(4, 1ull << 41), {}); }),
            "bytes per rank 2199023255552 is above the limit of 2^40");
}
