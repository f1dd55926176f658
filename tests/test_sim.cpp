// The simulator's model, checked by hand: one message, two flows on one port,
// striping, copies, determinism, and preset parsing errors.
#include <gtest/gtest.h>

#include <sstream>

#include "core/registry.hpp"
#include "core/errors.hpp"
#include "sim/engine.hpp"

using namespace railcoll;
using namespace railcoll::sim;

namespace {

// Round numbers so every expected time can be worked out on paper.
const char* kTestPreset = R"(# a machine with round numbers
name = test   # source: test
nodes = 16   # source: test
ppn = 4   # source: test
rails = 2   # source: test
topology = crossbar   # source: test
wire_latency_us = 2   # source: test
send_overhead_us = 1   # source: test
recv_overhead_us = 0.5   # source: test
gap_us = 0.1   # source: test
link_MBps = 1000   # source: test
pci_MBps = 800   # source: test
dma_engines = 2   # source: test
copy_MBps = 2000   # source: test
membus_MBps = 3000   # source: test
flag_latency_us = 0.25   # source: test
intranode_put = shm   # source: test
)";

Machine test_machine() { return parse_machine(kTestPreset, "test.preset"); }

Schedule allgather(const std::string& algo, const Topology& t, uint64_t bytes, uint64_t stripe = 1024) {
  AlgoOptions o;
  o.stripe_threshold = stripe;
  return build_schedule("allgather", algo, t, std::vector<uint64_t>(t.nranks(), bytes), o);
}

}  // namespace

// Two ranks on two nodes, direct, 8000 B, one rail: copy 4 us (8000 B at 2000 MB/s,
// the bus allows 3000), put: overhead 1, wire 8000/800 = 10, latency 2, recv 0.5.
TEST(Sim, OneMessageByHand) {
  Machine m = test_machine();
  Schedule s = allgather("direct", Topology::from_ppn(2, 1, 1), 8000);
  SimResult r = simulate(s, m);
  // Rank 0: copy ends at 4; put issued at 4+1 = 5, leaves the port at 15, arrives
  // at 5 + 2 + 10 = 17, counted at 17.5; the rank is done at 17.5.
  EXPECT_DOUBLE_EQ(r.finish_us[0], 17.5);
  EXPECT_DOUBLE_EQ(r.max_us, 17.5);
}

// Two puts from one node on one rail share its sending port: the second waits.
TEST(Sim, TwoFlowsShareOnePort) {
  Machine m = test_machine();
  // Three ranks, one per node, direct with 1 rail: rank 0 sends to 1 and 2 in
  // steps 0 and 1 (flush between): the second put starts when the first has left.
  Schedule s = allgather("direct", Topology::from_ppn(3, 1, 1), 8000);
  SimResult r = simulate(s, m);
  // Rank 0: copy to 4, put A at 5 (port busy 5..15), flush until 15, put B issued
  // at 16, port free: 16..26, arrives at 16 + 2 + 10 = 28 -> 28.5 at rank 2.
  // Rank 0 itself waits for 2 puts, the later arriving at 28.5 too (symmetry).
  EXPECT_DOUBLE_EQ(r.max_us, 28.5);
}

// Striping halves the wire time: 16000 B over 2 rails is two 8000 B parts at once.
TEST(Sim, StripingUsesBothRails) {
  Machine m = test_machine();
  SimResult one = simulate(allgather("direct", Topology::from_ppn(2, 1, 1), 16000), m);
  SimResult two = simulate(allgather("direct", Topology::from_ppn(2, 1, 2), 16000), m);
  // One rail: copy 8, put at 9, wire 20, arrives 31, +0.5. Two rails: wire 10 -> 21.5.
  EXPECT_DOUBLE_EQ(one.max_us, 31.5);
  EXPECT_DOUBLE_EQ(two.max_us, 21.5);
}

// Receive-port contention: two senders into one node serialize on its port.
TEST(Sim, TwoSendersIntoOnePort) {
  Machine m = test_machine();
  // gather_bcast on 3 ranks: ranks 1 and 2 both send to rank 0 (at step 0 and 1)...
  // Simpler and exact: direct with 3 ranks and 2 rails, 500 B (not striped): rank 0
  // receives from 2 and 1 on rails 0 and 1 -> no contention; on 1 rail they share.
  SimResult shared = simulate(allgather("direct", Topology::from_ppn(3, 1, 1), 500), m);
  SimResult apart = simulate(allgather("direct", Topology::from_ppn(3, 1, 2), 500), m);
  EXPECT_GT(shared.max_us, apart.max_us);
}

TEST(Sim, Deterministic) {
  Machine m = test_machine();
  Topology t = Topology::from_ppn(16, 4, 2);
  for (auto& a : all_algorithms()) {
    if (std::string(a.collective) != "allgather") continue;
    Schedule s = allgather(a.name, t, 3000);
    SimResult x = simulate(s, m), y = simulate(s, m);
    EXPECT_EQ(x.finish_us, y.finish_us) << a.name;
    EXPECT_EQ(x.events, y.events) << a.name;
    EXPECT_GT(x.max_us, 0) << a.name;
  }
}

TEST(Sim, MachineLimits) {
  Machine m = test_machine();
  EXPECT_THROW(simulate(allgather("direct", Topology::from_ppn(17, 1, 1), 8), m), InputError);  // 17 nodes
  EXPECT_THROW(simulate(allgather("direct", Topology::from_ppn(10, 5, 1), 8), m), InputError);  // 5 per node
  EXPECT_THROW(simulate(allgather("direct", Topology::from_ppn(2, 1, 3), 8), m), InputError);   // 3 rails
}

TEST(Sim, PresetErrorsNameTheField) {
  auto msg = [](const std::string& text) {
    try {
      parse_machine(text, "bad.preset");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string good = kTestPreset;
  auto without = [&](const std::string& key) {
    std::string out, line;
    std::istringstream in(good);
    while (std::getline(in, line))
      if (line.rfind(key + " ", 0) != 0) out += line + "\n";
    return out;
  };
  EXPECT_EQ(msg(without("link_MBps")), "bad.preset: missing parameter 'link_MBps'");
  EXPECT_NE(msg(good + "link_MBps = 5   # source: x\n").find("given twice"), std::string::npos);
  std::string negative = without("link_MBps") + "link_MBps = -5   # source: x\n";
  EXPECT_NE(msg(negative).find("parameter 'link_MBps' = -5 is out of range"), std::string::npos);
  std::string zero = without("rails") + "rails = 0   # source: x\n";
  EXPECT_NE(msg(zero).find("parameter 'rails' = 0 is out of range"), std::string::npos);
  EXPECT_NE(msg(good + "frobs = 3   # source: x\n").find("unknown parameter 'frobs'"), std::string::npos);
  EXPECT_NE(msg(good + "hop_latency_us = 3\n").find("has no '# source: ...'"), std::string::npos);
  EXPECT_EQ(msg(good), "no error");
}

TEST(Sim, FatTreeHops) {
  Machine m = test_machine();
  m.topology = "fattree";
  m.fattree_arity = 4;
  EXPECT_EQ(m.hops(0, 3), 1);   // same first-level switch
  EXPECT_EQ(m.hops(0, 4), 3);   // up one level and down
  EXPECT_EQ(m.hops(0, 16), 5);  // two levels
}

// Cores as a contended resource: with one core for the whole machine the host
// work of all ranks (copies, overheads, wake-ups) queues, so a collective takes
// longer than with a core per process; a wake-up cost is paid by a rank that
// slept in a wait.
TEST(Sim, CpuContention) {
  Machine free = test_machine();
  Machine one = free, waking = free;
  one.cores = 1;
  one.cores_machine_wide = true;
  waking = one;
  waking.wakeup_us = 100;
  Topology t = Topology::from_ppn(8, 4, 2);
  Schedule s = allgather("smp_direct", t, 4096);
  double f = simulate(s, free).max_us, o = simulate(s, one).max_us, w = simulate(s, waking).max_us;
  EXPECT_GT(o, f);
  EXPECT_GE(w, o + 100);  // at least one wake-up on the critical path
  // Without contention the keys change nothing: cores >= ranks per pool.
  Machine plenty = free;
  plenty.cores = 8;
  plenty.cores_machine_wide = true;
  plenty.wakeup_us = 100;
  EXPECT_DOUBLE_EQ(simulate(s, plenty).max_us, f);
}

// A TCP stack's per-byte work on both ends, by hand: the one-message case of
// OneMessageByHand with 1 ns per byte adds 8 us before the bytes reach the port
// and 8 us after they arrive: 17.5 + 16 = 33.5 us.
TEST(Sim, KernelWorkPerByte) {
  Machine m = test_machine();
  m.kernel_ns_per_byte = 1;
  Schedule s = allgather("direct", Topology::from_ppn(2, 1, 1), 8000);
  EXPECT_DOUBLE_EQ(simulate(s, m).max_us, 33.5);
}
