// GOAL (LogGOPSim) export and import: the expected sends of Bruck, round trips,
// message counts, a handwritten ping-pong, and malformed inputs.
#include <gtest/gtest.h>

#include <sstream>

#include "core/errors.hpp"
#include "core/registry.hpp"
#include "sim/engine.hpp"
#include "sim/goal.hpp"

using namespace railcoll;
using namespace railcoll::sim;

namespace {

Schedule allgather(const std::string& algo, const Topology& t, uint64_t bytes) {
  return build_schedule(Collective::Allgather, algo, t, std::vector<uint64_t>(t.nranks(), bytes), AlgoOptions{});
}

// The GOAL body without the comment header (which names the algorithm, and an
// imported schedule is "goal/imported").
std::string body(const std::string& goal) {
  std::istringstream in(goal);
  std::string out;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("//", 0) != 0) out += line + "\n";
  return out;
}

std::string rank_block(const std::string& goal, int r) {
  auto b = goal.find("rank " + std::to_string(r) + " {");
  return goal.substr(b, goal.find("}", b) - b);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// A machine big enough for any imported test schedule (one rank per node).
Machine big_machine(int rails) {
  Machine m = load_machine("ib-128");
  m.rails = rails;
  return m;
}

std::string error_of(const std::string& text) {
  try {
    from_goal(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(Goal, BruckExportHasTheExpectedSends) {
  std::string g = to_goal(allgather("bruck", Topology::from_ppn(9, 1, 2), 1));
  EXPECT_EQ(g.find("num_ranks 9\n") != std::string::npos, true);
  std::string r0 = rank_block(g, 0);
  // Step 0: 1 block to 8 (rail 0) and 7 (rail 1); step 1: 3 blocks to 6 and 3.
  auto at = [&](const std::string& s) { return r0.find(s); };
  ASSERT_NE(at("send 1b to 8 tag 1 nic 0"), std::string::npos) << r0;
  ASSERT_NE(at("send 1b to 7 tag 2 nic 1"), std::string::npos) << r0;
  ASSERT_NE(at("send 3b to 6 "), std::string::npos) << r0;
  ASSERT_NE(at("send 3b to 3 "), std::string::npos) << r0;
  EXPECT_LT(at("to 7 "), at("recv 1b from"));  // step 0's sends come before its recvs
  EXPECT_LT(at("recv 1b from"), at("to 6 "));
  EXPECT_EQ(count(r0, "send "), 4u);
  EXPECT_EQ(count(r0, "recv "), 4u);
  // Rank 1 sends its block to 0 with tag 1, rank 0 receives it with the same tag.
  EXPECT_NE(r0.find("recv 1b from 1 tag 1 nic 0"), std::string::npos) << r0;
  // The step-1 sends wait for both step-0 recvs.
  EXPECT_NE(r0.find("l5 requires l3\nl5 requires l4\n"), std::string::npos) << r0;
}

// The export grows linearly with the schedule: in Direct every send requires
// only the send before it (which requires the one before, ...) and every recv
// the rank's last send, so 2 N (N-1) requires lines, where requiring every
// earlier send made N^3/2 of them.
TEST(Goal, ExportIsLinearInTheMessages) {
  for (int n : {8, 32}) {
    std::string g = to_goal(allgather("direct", Topology::from_ppn(n, 1, 1), 8));
    EXPECT_EQ(count(g, " requires "), static_cast<size_t>(2 * n * (n - 1))) << n;
    EXPECT_EQ(count(g, ": send "), static_cast<size_t>(n * (n - 1)));
    std::string r1 = rank_block(g, 1);
    EXPECT_NE(r1.find("l3: send 8b to 4 tag 3\nl3 requires l2\n"), std::string::npos) << r1;
  }
}

// write_goal streams the same text; a deadlocked schedule is refused before a
// line is written.
TEST(Goal, WriteGoalStreamsAndRefusesUpFront) {
  Schedule s = allgather("bruck", Topology::from_ppn(9, 1, 2), 3);
  std::ostringstream out;
  write_goal(s, out);
  EXPECT_EQ(out.str(), to_goal(s));
  Schedule stuck = s;
  std::vector<Op> ops = stuck.programs[4].ops();
  Op w;
  w.kind = OpKind::Wait;
  w.counter = {false, 4, 0};
  w.value = 1000;
  ops.insert(ops.begin(), w);
  stuck.programs[4] = Program(ops);
  std::ostringstream none;
  EXPECT_THROW(write_goal(stuck, none), InputError);
  EXPECT_TRUE(none.str().empty());
}

TEST(Goal, RoundTripIsAFixpoint) {
  struct Case { std::string algo; Topology topo; uint64_t bytes; };
  std::vector<Case> cases = {
      {"bruck", Topology::from_ppn(9, 1, 2), 1},
      {"ring", Topology::from_ppn(6, 1, 1), 100},
      {"recursive_doubling", Topology::from_ppn(8, 1, 2), 4096},
      {"direct", Topology::from_ppn(5, 1, 3), 0},
      {"smp_bruck", Topology::from_ppn(12, 4, 2), 8},
      {"smp_direct", Topology::from_node_sizes({3, 1, 4}, 2), 16},
      {"smp_gather_bcast", Topology::from_ppn(8, 2, 1), 7},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.algo + " " + c.topo.describe());
    std::string g1 = to_goal(allgather(c.algo, c.topo, c.bytes));
    Schedule imported = from_goal(g1, c.topo.rails());
    std::string g2 = to_goal(imported);
    EXPECT_EQ(body(g1), body(g2));
  }
  // Every algorithm of every collective over uneven and non-consecutive layouts.
  std::vector<Topology> topos = {Topology::from_ppn(7, 1, 1), Topology::from_ppn(10, 3, 2),
                                 Topology::from_node_sizes({3, 1, 4, 2}, 3),
                                 Topology::from_node_map({0, 1, 0, 2, 1, 2}, 2), Topology::from_node_sizes({1, 3}, 1)};
  for (auto& spec : all_algorithms())
    for (auto& t : topos)
      for (uint64_t bytes : {0, 1, 5, 2000}) {
        SCOPED_TRACE(std::string(collective_name(spec.collective)) + "/" + spec.name + " " + t.describe() + " " + std::to_string(bytes));
        Schedule s = build_schedule(spec.collective, spec.name, t, std::vector<uint64_t>(t.nranks(), bytes * 4), call_defaults(spec.collective));
        std::string g1 = to_goal(s);
        EXPECT_EQ(body(g1), body(to_goal(from_goal(g1, t.rails()))));
      }
}

// `wait; signal; wait` where the signal only tells other ranks of the node
// exports as two runs of recvs, the second requiring the first. The importer
// once made them one run of waits, whose export required the front before both.
TEST(Goal, DependentRunsOfWaitsRoundTrip) {
  Topology t = Topology::from_node_sizes({1, 3}, 1);
  Schedule s = build_schedule(Collective::Allreduce, "smp", t, std::vector<uint64_t>(4, 4), call_defaults(Collective::Allreduce));
  std::string g1 = to_goal(s);
  Schedule imported = from_goal(g1, 1);
  EXPECT_EQ(body(g1), body(to_goal(imported)));
  EXPECT_GT(simulate(imported, big_machine(1)).max_us, 0);
}

TEST(Goal, ImportKeepsTheMessagesAndSimulates) {
  for (auto& spec : all_algorithms()) {
    if (spec.collective != Collective::Allgather) continue;
    Topology t = Topology::from_ppn(8, 2, 2);
    Schedule s = allgather(spec.name, t, 64);
    std::string g = to_goal(s);
    Schedule imp = from_goal(g, 2);
    SCOPED_TRACE(spec.name);
    // Every GOAL send is one put; without node counters or signals a GOAL send
    // is exactly one of the original puts.
    EXPECT_EQ(imp.stats().messages, count(g, ": send "));
    bool plain = s.node_counters == 0;
    for (auto& prog : s.programs)
      for (auto& op : prog) plain = plain && op.kind != OpKind::Signal;
    if (plain) EXPECT_EQ(imp.stats().messages, s.stats().messages);
    else EXPECT_GE(imp.stats().messages, s.stats().messages);
    SimResult r = simulate(imp, big_machine(2));
    EXPECT_GT(r.max_us, 0);
    EXPECT_GT(r.events, 0u);
    for (double f : r.finish_us) EXPECT_GE(f, 0);  // every rank finished: no deadlock from serializing
  }
}

TEST(Goal, HandwrittenPingPongImportsAndSimulates) {
  const char* text = R"(// ping-pong, written as LogGOPSim's examples are
num_ranks 2

rank 0 {
l1: send 8b to 1 tag 0
l2: recv 8b from 1 tag 0
l2 requires l1
}

rank 1 {
l1: recv 8b from 0 tag 0
l2: send 8b to 0 tag 0 cpu 0 nic 0
l2 requires l1
/* a calc of 100 (bytes here) after the reply */
l3: calc 100
l3 irequires l2
}
)";
  Schedule s = from_goal(text);
  EXPECT_EQ(s.collective, Collective::Goal);
  EXPECT_EQ(s.algorithm, "imported");
  ASSERT_EQ(s.programs.size(), 2u);
  // Rank 0: put, flush (the recv requires the send), wait.
  ASSERT_EQ(s.programs[0].size(), 3u);
  EXPECT_EQ(s.programs[0][0].kind, OpKind::Put);
  EXPECT_EQ(s.programs[0][1].kind, OpKind::Flush);
  EXPECT_EQ(s.programs[0][2].kind, OpKind::Wait);
  // Rank 1: wait, put, copy.
  ASSERT_EQ(s.programs[1].size(), 3u);
  EXPECT_EQ(s.programs[1][0].kind, OpKind::Wait);
  EXPECT_EQ(s.programs[1][1].kind, OpKind::Put);
  EXPECT_EQ(s.programs[1][2].kind, OpKind::Copy);
  EXPECT_EQ(s.programs[1][2].bytes(), 100u);
  SimResult r = simulate(s, big_machine(1));
  // Rank 0 finishes after a round trip, rank 1 after one message.
  EXPECT_GT(r.finish_us[0], r.finish_us[1] - 1e-9);
  EXPECT_GT(r.finish_us[1], 0);
}

// Comments may span lines and end before a statement; labels need not be lN.
TEST(Goal, CommentsAcrossLinesAndNamedLabels) {
  const char* text = "num_ranks 2 /* two\nranks */ rank 0 {\nfirst: send 4b to 1 // done\n}\n"
                     "rank 1 { a_b: recv 4b from 0\nc: calc 4\nc requires a_b }\n";
  Schedule s = from_goal(text);
  ASSERT_EQ(s.programs[1].size(), 2u);
  EXPECT_EQ(s.programs[1][0].kind, OpKind::Wait);
  EXPECT_EQ(s.programs[1][1].kind, OpKind::Copy);
  // An unclosed comment runs to the end of the text.
  EXPECT_TRUE(from_goal("num_ranks 1 /* open\nrank 0 {\nl0: calc 1\n}\n").programs[0].empty());
}

TEST(Goal, MalformedInputNamesTheLine) {
  auto has = [](const std::string& err, const std::string& what) {
    return err.find(what) != std::string::npos;
  };
  std::string e;
  e = error_of("num_ranks 1\nrank 0 {\nl1: bcast 8b to 0\n}\n");
  EXPECT_TRUE(has(e, "line 3") && has(e, "unknown operation")) << e;
  e = error_of("num_ranks 2\nrank 0 {\n}\nrank 1 {\nl1: recv 8b from 0 tag 4\n}\n");
  EXPECT_TRUE(has(e, "line 5") && has(e, "no matching send")) << e;
  e = error_of("num_ranks 1\nrank 0 {\na: calc 1\nb: calc 2\na requires b\nb requires a\n}\n");
  EXPECT_TRUE(has(e, "line 5") && has(e, "cycle")) << e;
  e = error_of("num_ranks 1\nrank 0 {\na: calc 1\na: calc 2\n}\n");
  EXPECT_TRUE(has(e, "line 4") && has(e, "used twice")) << e;
  e = error_of("// no header\nrank 0 {\n}\n");
  EXPECT_TRUE(has(e, "line 2") && has(e, "num_ranks")) << e;
  e = error_of("");
  EXPECT_TRUE(has(e, "missing num_ranks")) << e;
  e = error_of("num_ranks 2\nrank 0 {\nl1: send 8b to 2\n}\n");
  EXPECT_TRUE(has(e, "line 3")) << e;
  e = error_of("num_ranks 1\nrank 0 {\nl1: calc 1\nl1 requires l9\n}\n");
  EXPECT_TRUE(has(e, "line 4") && has(e, "unknown label")) << e;
  e = error_of("num_ranks 1\nrank 0 {\nl1: calc 1\n");
  EXPECT_TRUE(has(e, "line 2") && has(e, "not closed")) << e;
  e = error_of("num_ranks 2\nrank 0 {\nl1: send 8b to 1 nic 1\n}\nrank 1 {\nl1: recv 8b from 0\n}\n");
  EXPECT_TRUE(has(e, "line 3") && has(e, "nic 1")) << e;
}
