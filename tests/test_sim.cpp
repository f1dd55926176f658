// The simulator's model, checked by hand: one message, two flows on one port,
// striping, copies, determinism, and preset parsing errors.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "core/registry.hpp"
#include "core/errors.hpp"
#include "sim/engine.hpp"
#include "sim/network.hpp"

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

// The test machine with `cores` cores for all its processes, waits that spin
// for spin_us in turns of turn_us.
Machine shared_cores(int cores, double spin_us, double turn_us) {
  Machine m = test_machine();
  m.cores = cores;
  m.cores_machine_wide = true;
  m.spin_us = spin_us;
  m.spin_turn_us = turn_us;
  return m;
}

// The error parsing `text` as bad.preset gives, or "no error".
std::string msg(const std::string& text) {
  try {
    parse_machine(text, "bad.preset");
  } catch (const InputError& e) {
    return std::string(e.what());
  }
  return std::string("no error");
}

// A hand-made schedule: each (sender, receiver, bytes) is a put on rail 0 issued
// back to back by the sender; every receiver waits for all of its puts.
struct Flow {
  int from, to;
  uint64_t bytes;
};
Schedule flows(const Topology& t, const std::vector<Flow>& fs) {
  BlockLayout L(std::vector<uint64_t>(t.nranks(), 1 << 20));
  ScheduleBuilder b(Collective::Goal, "flows", t, L, AlgoOptions{});
  std::vector<int> incoming(t.nranks(), 0);
  for (auto& f : fs) {
    b.put(f.from, 0, f.to, {{b.send(f.from, 0, f.bytes), b.recv(f.to, 0, f.bytes)}}, 0, b.rank_counter(f.to, 0));
    ++incoming[f.to];
  }
  for (int r = 0; r < t.nranks(); ++r)
    if (incoming[r]) b.wait(r, 0, b.rank_counter(r, 0), incoming[r]);
  return b.finish();
}

Schedule allgather(const std::string& algo, const Topology& t, uint64_t bytes, uint64_t stripe = 1024) {
  AlgoOptions o;
  o.stripe_threshold = stripe;
  return build_schedule(Collective::Allgather, algo, t, std::vector<uint64_t>(t.nranks(), bytes), o);
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
    if (a.collective != Collective::Allgather) continue;
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

// LogGP's receive overhead (recv_cpu = loggp): a contention-free Direct
// all-gather of 1000 B on 4 nodes, L = 5, o_s = 1, o_r = 3, g = 0.5, G = 1 ns/B
// (1000 MB/s), buses and copies free. Every rank issues its 3 puts at 1, 2, 3
// (o_s each); the NIC sends them back to back (1 us each, g < 1) and they
// arrive L + 1 later, at 7, 8, 9, one from each other rank. The receiver's CPU
// takes them one after another: 7-10, 10-13, 13-16, so the all-gather ends at
// 16 on every rank. With recv_cpu = event o_r is a delay: the last arrival at
// 9 is counted at 9 + 3 = 12.
TEST(Sim, LogGPReceiveOverheadByHand) {
  Machine m = test_machine();
  m.wire_latency_us = 5;
  m.send_overhead_us = 1;
  m.recv_overhead_us = 3;
  m.gap_us = 0.5;
  m.link_MBps = 1000;
  m.pci_MBps = m.copy_MBps = m.membus_MBps = 1e9;
  m.dma_engines = 1;
  m.recv_on_cpu = true;
  Schedule s = allgather("direct", Topology::from_ppn(4, 1, 1), 1000);
  SimResult loggp = simulate(s, m);
  EXPECT_NEAR(loggp.max_us, 16, 1e-3);
  EXPECT_NEAR(loggp.min_us, 16, 1e-3);
  m.recv_on_cpu = false;
  EXPECT_NEAR(simulate(s, m).max_us, 12, 1e-3);
  // The preset key, and its default: loggp for a TCP stack, event otherwise.
  std::string text = kTestPreset;
  EXPECT_FALSE(parse_machine(text, "t").recv_on_cpu);
  EXPECT_TRUE(parse_machine(text + "kernel_ns_per_byte = 1   # source: test\n", "t").recv_on_cpu);
  EXPECT_TRUE(parse_machine(text + "recv_cpu = loggp   # source: test\n", "t").recv_on_cpu);
  EXPECT_NE(msg(text + "recv_cpu = maybe   # source: test\n").find("'recv_cpu' = 'maybe' is not one of: event, loggp"),
            std::string::npos);
}

// Overheads shared by the messages in flight (overhead_shared = f): a message
// pays o (1 - f + f / n) with n in flight in its pool. Direct between 2 ranks
// on 2 nodes, one machine-wide pool (not contended), recv_cpu = loggp,
// o_s = o_r = 4, f = 0.5, L = 10, everything else free. Rank 0 issues first
// (n = 1: 4 us, sent at 4), rank 1 second (n = 2: 3 us, sent at 3). Rank 1's
// message arrives at 13 with 2 in flight: 3 us, done at 16; rank 0's at 14,
// alone by then: 4 us, done at 18. With f = 0 both end at 4 + 10 + 4 = 18.
TEST(Sim, OverheadsSharedInFlightByHand) {
  Machine m = test_machine();
  m.wire_latency_us = 10;
  m.send_overhead_us = m.recv_overhead_us = 4;
  m.link_MBps = m.pci_MBps = m.copy_MBps = m.membus_MBps = 1e9;
  m.cores = 4;
  m.cores_machine_wide = true;
  m.recv_on_cpu = true;
  m.overhead_shared = 0.5;
  Schedule s = allgather("direct", Topology::from_ppn(2, 1, 1), 8);
  SimResult r = simulate(s, m);
  EXPECT_NEAR(r.finish_us[0], 16, 1e-3);
  EXPECT_NEAR(r.finish_us[1], 18, 1e-3);
  m.overhead_shared = 0;
  r = simulate(s, m);
  EXPECT_NEAR(r.finish_us[0], 18, 1e-3);
  EXPECT_NEAR(r.finish_us[1], 18, 1e-3);
  // With o_r a delay (recv_cpu = event) nothing is CPU work: the key changes nothing.
  m.recv_on_cpu = false;
  double plain = simulate(s, m).max_us;
  m.overhead_shared = 0.5;
  EXPECT_DOUBLE_EQ(simulate(s, m).max_us, plain);
  std::string text = kTestPreset;
  EXPECT_NE(msg(text + "overhead_shared = 1.5   # source: test\n").find("'overhead_shared' = 1.5 is out of range"),
            std::string::npos);
}

// Operating-system noise: one source, PERIOD 2 us, DURATION 1.5 us, on every
// 2nd node (node 0 of 2). Rank 0 (node 0) puts 8000 B to rank 1 (node 1): its
// 1 us send overhead runs around node 0's detours, which start at the phase
// the run's seed draws, then every 2 us; rank 1 (no noise) gets the bytes that
// much later. The detours, walked here by hand, decide the delay.
TEST(Sim, NoiseDelaysHostWorkByHand) {
  Machine m = test_machine();
  Topology t = Topology::from_ppn(2, 1, 1);
  Schedule s = flows(t, {{0, 1, 8000}});
  const double quiet = simulate(s, m).finish_us[1];
  m.noise = {{2.0, 1.5, 2}};
  for (uint64_t seed : {1, 2, 3, 7}) {
    uint64_t state = seed ^ 0x6e6f697365ULL;  // the engine's noise stream (engine.cpp, add_noise)
    const double phase = next_uniform(state) * 2.0;
    // 1 us of work from 0 around detours [phase + 2k, phase + 2k + 1.5).
    double at = 0, left = 1;
    for (int k = -1; left > 0; ++k) {
      const double a = phase + 2 * k, b = a + 1.5;
      if (at >= b) continue;
      if (at >= a) at = b;                              // starts inside a detour
      const double next = phase + 2 * (k + 1);          // runs until the next one
      const double run = std::min(left, next - at);
      at += run, left -= run;
    }
    SimOptions o;
    o.seed = seed;
    SimResult r = simulate(s, m, o);
    EXPECT_NEAR(r.finish_us[1] - quiet, at - 1, 1e-9) << "seed " << seed << ", phase " << phase;
    EXPECT_DOUBLE_EQ(simulate(s, m, o).finish_us[1], r.finish_us[1]);  // deterministic for its seed
  }
  // Without detours nothing changes; the keys are checked.
  m.noise = {{2.0, 0, 1}};
  EXPECT_DOUBLE_EQ(simulate(s, m).finish_us[1], quiet);
  std::string text = kTestPreset;
  EXPECT_EQ(parse_machine(text + "noise_1 = 1000 25   # source: test\nnoise_2 = 5000 100 32   # source: test\n", "t")
                .noise.size(),
            2u);
  EXPECT_NE(msg(text + "noise_1 = 10 20   # source: test\n").find("needs 0 <= duration < period"), std::string::npos);
  EXPECT_NE(msg(text + "noise_1 = ten   # source: test\n").find("is not 'PERIOD_US DURATION_US [EVERY]'"),
            std::string::npos);
  EXPECT_NE(msg(text + "noise_2 = 10 1   # source: test\n").find("unknown parameter 'noise_2'"), std::string::npos);
}

// An operation the NIC's thread issues (SimOptions::nic_thread_ops) starts
// nic_thread_us after its rank reaches it: the OneMessageByHand case (17.5 us)
// with rank 0's put (op 1, after the copy) issued by a 3 us thread ends 3 us
// later on rank 1; rank 0's own copy and wait are not delayed beyond its put.
TEST(Sim, NicThreadOperations) {
  Machine m = test_machine();
  m.nic_thread_us = 3;
  Schedule s = allgather("direct", Topology::from_ppn(2, 1, 1), 8000);
  SimOptions o;
  double quiet = simulate(s, m, o).finish_us[1];
  o.nic_thread_ops = {{0, 1}};
  EXPECT_NEAR(simulate(s, m, o).finish_us[1], quiet + 3, 1e-9);
  o.nic_thread_ops = {{0, 99}};
  EXPECT_THROW(simulate(s, m, o), InputError);
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

// A half-duplex bus carries a NIC's sends and receives one after the other. Two
// ranks on two nodes exchange 8000 B (OneMessageByHand with a full-duplex bus:
// 17.5 us). Rank 0's put is handed over first: its bus reads 5..15, rank 1's bus
// takes its write 7..17. Rank 1's read (ready at 5) uses the 2 us still free
// before that write and the 8 us after it: done at 25, as if the two shared the
// bus. Its bytes reach rank 0 at 27 (the link and wire are not the limit; rank
// 0's bus has been free since 15): counted at 27.5.
TEST(Sim, HalfDuplexBusByHand) {
  Machine m = test_machine();
  Schedule s = allgather("direct", Topology::from_ppn(2, 1, 1), 8000);
  EXPECT_DOUBLE_EQ(simulate(s, m).max_us, 17.5);
  m.pci_half_duplex = true;
  EXPECT_DOUBLE_EQ(simulate(s, m).max_us, 27.5);
}

// DMA engines overlap each other's start-up. Rank 0 puts 1000 B to ranks 1 and 2
// back to back (issued at 1 and 2); a DMA spends 5 us before its bytes move.
// One engine: A ready at 6, bus 6..7.25, link 6..7 -> out at 7.25, arrives
// 7.25 + 2 + 0.5 = 9.75; B waits for the engine: ready 12.25, out at 13.5,
// arrives 16. Two engines: B ready at 7, behind A on the bus: 7.25..8.5,
// arrives 8.5 + 2 + 0.5 = 11.
TEST(Sim, DmaEnginesOverlapStartUp) {
  Machine m = test_machine();
  m.dma_startup_us = 5;
  Schedule s = flows(Topology::from_ppn(3, 1, 1), {{0, 1, 1000}, {0, 2, 1000}});
  m.dma_engines = 1;
  EXPECT_DOUBLE_EQ(simulate(s, m).max_us, 16.0);
  m.dma_engines = 2;
  EXPECT_DOUBLE_EQ(simulate(s, m).max_us, 11.0);
}

// A NIC loopback crosses its bus twice: at half duplex the intra-node put takes
// twice the bus time of a remote one.
TEST(Sim, LoopbackCrossesTheBusTwice) {
  Machine m = test_machine();
  m.intranode_put = "nic";
  m.pci_half_duplex = true;
  m.wire_latency_us = 0;
  // One put of 80000 B from rank 0 to rank 1 on the same node: issued at 1,
  // read 1..101, written back 101..201, counted at 201.5.
  EXPECT_DOUBLE_EQ(simulate(flows(Topology::from_ppn(2, 2, 1), {{0, 1, 80000}}), m).max_us, 201.5);
}

// Link contention in a 4-ary 2-tree (16 nodes): nodes 0 and 1 share their leaf
// switch. With static d-mod-k routing, flows to nodes 4 and 8 both leave on up
// port 0 and share that link; flows to 4 and 9 do not; adaptive routing moves the
// second flow to a free up link.
TEST(Sim, FatTreeLinkContention) {
  Machine m = test_machine();
  m.topology = "fattree";
  m.fattree_arity = 4;
  m.link_MBps = 800;  // the up link is as fast as the bus: two flows on it take twice as long
  Topology t = Topology::from_ppn(16, 1, 1);
  Schedule collide = flows(t, {{0, 4, 100000}, {1, 8, 100000}});
  Schedule apart = flows(t, {{0, 4, 100000}, {1, 9, 100000}});
  m.adaptive_up = false;
  double shared = simulate(collide, m).max_us, separate = simulate(apart, m).max_us;
  EXPECT_GT(shared, separate + 100);  // the second flow waits ~125 us for the link
  m.adaptive_up = true;
  EXPECT_DOUBLE_EQ(simulate(collide, m).max_us, separate);
}

// Background traffic slows a collective that needs the same links, is
// deterministic for a seed, and stops with the collective.
TEST(Sim, BackgroundTraffic) {
  Machine m = test_machine();
  m.topology = "fattree";
  m.fattree_arity = 4;
  Schedule s = allgather("direct", Topology::from_ppn(16, 1, 1), 16384);
  SimResult quiet = simulate(s, m);
  EXPECT_EQ(quiet.background_messages, 0u);
  for (const char* pattern : {"complement", "uniform", "hotspot"}) {
    SimOptions o;
    o.background = pattern;
    o.seed = 7;
    SimResult a = simulate(s, m, o), b = simulate(s, m, o);
    EXPECT_GT(a.max_us, quiet.max_us * 1.2) << pattern;
    EXPECT_EQ(a.finish_us, b.finish_us) << pattern;
    EXPECT_GT(a.background_messages, 16u) << pattern;
  }
  SimOptions bad;
  bad.background = "storm";
  EXPECT_THROW(simulate(s, m, bad), InputError);
}

TEST(Sim, TopologyKeysChecked) {
  std::string good = kTestPreset;
  EXPECT_NE(msg(good + "routing = dmodk   # source: x\n").find("'routing' is only used with topology = fattree"),
            std::string::npos);
  EXPECT_NE(msg(good + "switch_ports = 8   # source: x\n").find("'nodes' = 16 does not fit one crossbar"),
            std::string::npos);
  std::string tree = good;
  tree.replace(tree.find("topology = crossbar"), 19, "topology = fattree");
  EXPECT_NE(msg(tree + "fattree_arity = 5   # source: x\nswitch_ports = 8   # source: x\n")
                .find("needs switches of at least 10 ports"),
            std::string::npos);
  EXPECT_NE(msg(good + "pci_duplex = both   # source: x\n").find("'pci_duplex' = 'both' is not one of: full, half"),
            std::string::npos);
  EXPECT_EQ(msg(tree + "fattree_arity = 4   # source: x\nrouting = dmodk   # source: x\n"), "no error");
}

// Shared cores, by hand (docs/simulator.md, "Cores"). One core for the whole
// machine, three ranks on three nodes: rank 0 puts 1000 B to rank 1, rank 1
// waits, rank 2 has nothing to do. The core runs them round robin in rank
// order; every rank's clock starts when it first runs (out of the barrier
// before the call) and a rank's time is its own.
//  * Waits that sleep at once (spin_us = 0), spin_turn_us = 0: rank 0 starts
//    at 0, its 1 us send overhead ends at 1, the bytes leave its bus at 2.25
//    and arrive at 1 + 2 + 1.25 = 4.25; it sleeps until its sends have left
//    (2.25), rank 1 starts at 1 and sleeps, rank 2 starts and ends at 1.
//    Rank 0 wakes at 2.25 and holds the core for its 10 us wake-up until
//    12.25; rank 1, woken by its message at 4.25, runs at 12.25: a wake-up
//    (22.25) and its 0.5 us receive: 22.75, 21.75 after its start.
//  * Spinning (spin_us = 1000, turns of 2 us): rank 0's turn 0-2 (it starts
//    at 2), its send 2-3, then it spins; rank 1's turn 3-5 (starts at 5);
//    rank 2's 5-7 (starts and ends at 7); rank 0's 7-9: its sends left at
//    4.25, it ends at 9 (7 us); rank 1's 9-11 takes the message that came at
//    6.25: 11.5, 6.5 us after its start.
//  * A spin budget of 3 us: rank 1's turn at 9-11 takes the message first,
//    so its wait is over (6.5). With the message later (a wire of 20 us: it
//    comes at 24.25) that turn finds nothing after 6 us of waiting: rank 1
//    sleeps, and the message wakes it: 24.25-34.25, its receive: 34.75, 29.75
//    after its start.
TEST(Sim, SharedCoresAndSpinningWaits) {
  Machine m = shared_cores(1, 0, 0);
  m.wakeup_us = 10;
  Schedule s = flows(Topology::from_ppn(3, 1, 1), {{0, 1, 1000}});
  EXPECT_DOUBLE_EQ(simulate(s, m).finish_us[1], 21.75);
  m.spin_us = 1000;
  m.spin_turn_us = 2;
  SimResult spun = simulate(s, m);
  EXPECT_DOUBLE_EQ(spun.finish_us[0], 7);
  EXPECT_DOUBLE_EQ(spun.finish_us[1], 6.5);
  EXPECT_DOUBLE_EQ(spun.finish_us[2], 0);
  m.spin_us = 3;
  EXPECT_DOUBLE_EQ(simulate(s, m).finish_us[1], 6.5);
  m.wire_latency_us = 20;
  EXPECT_DOUBLE_EQ(simulate(s, m).finish_us[1], 29.75);
}

// The wait model on one core, by hand: ranks 0 and 1 on node 0, rank 2 on
// node 1. Rank 2 puts 1000 B to rank 0; rank 0 waits for it, then signals a
// node counter rank 1 waits on. Turns of 1 us, wake-ups of 10 us, the flag
// 0.25 us, turn order 0, 1, 2.
//  * Spinning: rank 0 runs 0-1 (starts at 1) and yields, rank 1 1-2 (starts
//    at 2), rank 2 2-3 (starts at 3), its send 3-4: the bytes arrive at
//    4 + 1.25 + 2 = 7.25, have left its bus at 5.25. Turns: rank 0 4-5,
//    rank 1 5-6, rank 2 6-7 (its sends have left: it ends, 4 us), rank 0
//    7-8: the message came at 7.25, during its turn: taken 8-8.5, its wait
//    is over, it signals (the counter rises at 8.75) and ends at 8.5 (7.5 us);
//    rank 1's turn 8.5-9.5 sees the counter: it ends at 9.5 (7.5 us).
//  * Sleeping at once: rank 2 sleeps until its sends have left (5.25), wakes
//    (5.25-15.25) and ends (12.25 us); rank 0, woken by its message at 7.25,
//    runs after it: wake-up 15.25-25.25, receive to 25.75, signal, end (24.75
//    us); rank 1 sleeps on the node counter and is woken once, by the signal
//    at 26 (the runtime's futex wake by the rank whose increment ends the
//    wait): 26-36, 34 us after its start at 2.
TEST(Sim, RoundRobinWaitsByHand) {
  Machine m = shared_cores(1, 1000, 1);
  m.wakeup_us = 10;
  Topology t = Topology::from_node_map({0, 0, 1}, 1);
  BlockLayout L(std::vector<uint64_t>(3, 1 << 20));
  ScheduleBuilder b(Collective::Goal, "by hand", t, L, AlgoOptions{});
  b.put(2, 0, 0, {{b.send(2, 0, 1000), b.recv(0, 0, 1000)}}, 0, b.rank_counter(0, 0));
  b.wait(0, 0, b.rank_counter(0, 0), 1);
  b.signal(0, 1, b.node_counter(0, 0));
  b.wait(1, 1, b.node_counter(0, 0), 1);
  Schedule s = b.finish();
  SimResult spun = simulate(s, m);
  EXPECT_DOUBLE_EQ(spun.finish_us[0], 7.5);
  EXPECT_DOUBLE_EQ(spun.finish_us[1], 7.5);
  EXPECT_DOUBLE_EQ(spun.finish_us[2], 4);
  m.spin_us = 0;
  SimResult slept = simulate(s, m);
  EXPECT_DOUBLE_EQ(slept.finish_us[0], 24.75);
  EXPECT_DOUBLE_EQ(slept.finish_us[1], 34);
  EXPECT_DOUBLE_EQ(slept.finish_us[2], 12.25);
}

// A working process keeps its core until it waits: with free turns and free
// wake-ups, a sender's second put (issued while ranks 1 and 2 wait) costs the
// same whether they spin or sleep.
TEST(Sim, SpinnersYieldToWorkers) {
  Machine m = shared_cores(1, 0, 0);
  Schedule s = flows(Topology::from_ppn(3, 1, 1), {{0, 1, 1000}, {0, 2, 1000}});
  std::vector<double> asleep = simulate(s, m).finish_us;
  m.spin_us = 1000;
  EXPECT_EQ(simulate(s, m).finish_us, asleep);
}

// Where the processes run (busiest_core_share): the busiest core holds that
// share of them, which ones and their turn order drawn from the seed. All on
// one of two cores is slower than spread evenly; the same seed gives the same
// time, and the seeds give a spread of times (a quiet call has a
// distribution, which `railcoll sim` samples: placement_drawn).
TEST(Sim, BusiestCoreShare) {
  Machine m = shared_cores(2, 1000, 1);
  Topology t = Topology::from_ppn(8, 2, 1);
  Schedule s = allgather("direct", t, 8);
  EXPECT_FALSE(placement_drawn(t, m));
  const double even = simulate(s, m).max_us;
  m.busiest_core_share = 1;
  EXPECT_TRUE(placement_drawn(t, m));
  SimOptions o;
  std::set<double> times;
  for (o.seed = 1; o.seed <= 8; ++o.seed) {
    double x = simulate(s, m, o).max_us;
    EXPECT_EQ(simulate(s, m, o).max_us, x);
    EXPECT_GT(x, even);
    times.insert(x);
  }
  EXPECT_GT(times.size(), 1u);
  // At most an even share is no imbalance: the same as spread evenly, but drawn.
  m.busiest_core_share = 0.25;
  EXPECT_TRUE(placement_drawn(t, m));
  m.cores = 8;  // a core per process: nothing to draw
  EXPECT_FALSE(placement_drawn(t, m));
  std::string text = kTestPreset;
  EXPECT_NE(msg(text + "busiest_core_share = 2   # source: test\n").find("'busiest_core_share' = 2 is out of range"),
            std::string::npos);
}

// A token bucket on the NIC links: after idle, a burst passes at once, the
// rest at the link's rate. OneMessageByHand's bus (10 us) is slower than the
// link, so a bucket changes nothing there; with a fast bus the link sets the
// pace: 8000 B at 1000 MB/s = 8 us, or 2 us with a 6000 B bucket (both links'
// buckets are full: each passes 6000 B at once).
TEST(Sim, LinkTokenBucket) {
  Machine m = test_machine();
  Schedule s = allgather("direct", Topology::from_ppn(2, 1, 1), 8000);
  m.link_burst_bytes = 6000;
  EXPECT_DOUBLE_EQ(simulate(s, m).max_us, 17.5);
  m.pci_MBps = 1e9;
  m.link_burst_bytes = 0;
  double paced = simulate(s, m).max_us;
  m.link_burst_bytes = 6000;
  EXPECT_NEAR(paced - simulate(s, m).max_us, 6.0, 1e-3);
  // A bucket larger than the message: the link adds nothing.
  m.link_burst_bytes = 1e6;
  EXPECT_NEAR(paced - simulate(s, m).max_us, 8.0, 1e-3);
}

// A put to a rank of the same node through a local socket: the kernel copies on
// both ends, no link. 8000 B at 1 ns per byte per end: issued at 1, copied in
// until 9, received (0.5 us) and copied out (8 us) until 17.5.
TEST(Sim, LocalSocketPut) {
  Machine m = test_machine();
  m.intranode_put = "socket";
  m.socket_ns_per_byte = 1;
  EXPECT_DOUBLE_EQ(simulate(flows(Topology::from_ppn(2, 2, 1), {{0, 1, 8000}}), m).finish_us[1], 17.5);
  // A local message's own overheads (socket_overhead_us, both ends, split
  // evenly): issued at 2, copied in until 10, received (2) and copied out: 20.
  m.socket_overhead_us = 4;
  EXPECT_DOUBLE_EQ(simulate(flows(Topology::from_ppn(2, 2, 1), {{0, 1, 8000}}), m).finish_us[1], 20);
}

// An operation the machine model does not know (a newer schedule format, say)
// is refused up front with an input error, not half simulated.
TEST(Sim, RefusesOperationsItDoesNotModel) {
  Machine m = test_machine();
  Schedule s = flows(Topology::from_ppn(2, 1, 1), {{0, 1, 8}});
  std::vector<Op> ops = s.programs[0].ops();
  ops[0].kind = static_cast<OpKind>(42);
  s.programs[0] = Program(ops);
  EXPECT_THROW(simulate(s, m), InputError);
}

// ---- the hardware collectives (seed 004 §2.3.1, §4.1-4.2; seed 003 §4.1, §4.3)

namespace {

// The test machine as a 4-ary fat tree (16 nodes: 2 levels) with the hardware
// collectives: a hop costs 0.25 us, a DMA 0.5 us of start-up.
Machine hw_machine() {
  Machine m = test_machine();
  m.topology = "fattree";
  m.fattree_arity = 4;
  m.hop_latency_us = 0.25;
  m.dma_startup_us = 0.5;
  m.hw_multicast = m.hw_barrier = true;
  return m;
}

// One hardware multicast per (root, destinations, bytes), issued by the root at
// once; every destination waits for it.
struct Mcast {
  int root;
  std::vector<int> to;
  uint64_t bytes;
};
Schedule multicasts(const Topology& t, const std::vector<Mcast>& ms) {
  BlockLayout L(std::vector<uint64_t>(t.nranks(), 1 << 20));
  ScheduleBuilder b(Collective::Goal, "multicasts", t, L, AlgoOptions{});
  for (auto& mc : ms)
    for (int q : mc.to) {
      b.put(mc.root, 0, q, {{b.send(mc.root, 0, mc.bytes), b.recv(q, 0, mc.bytes)}}, 0, b.rank_counter(q, 0),
            HwAssist::Multicast);
      b.wait(q, 0, b.rank_counter(q, 0), 1);
    }
  return b.finish();
}

Schedule algorithm(Collective coll, const std::string& algo, const Topology& t, uint64_t bytes) {
  return build_schedule(coll, algo, t, std::vector<uint64_t>(t.nranks(), bytes), call_defaults(coll));
}

}  // namespace

// One multicast of 8000 B from node 0 to all 16 nodes: send overhead to 1, DMA
// start-up 0.5, the bus reads 10 us (1.5..11.5); the NIC's link, the level-1 up
// link (+0.25) to the root switch at level 2, the level-1 down links (+0.25),
// every node's link (+2 wire) and bus (10 us): the head reaches the buses at
// 4.0, the last byte 11.5 + 0.5 + 2 = 14.0 everywhere (cut-through, lockstep);
// counted at 14.5. As seed 004 §4.2 says, "in the same time required to send
// a point-to-point message": a put from node 0 to node 15 takes as long.
TEST(SimHardware, MulticastByHand) {
  Machine m = hw_machine();
  Topology t = Topology::from_ppn(16, 1, 1);
  SimResult r = simulate(algorithm(Collective::Bcast, "hw_multicast", t, 8000), m);
  EXPECT_DOUBLE_EQ(r.max_us, 14.5);
  for (int q = 1; q < 16; ++q) EXPECT_DOUBLE_EQ(r.finish_us[q], 14.5) << q;
  EXPECT_DOUBLE_EQ(simulate(flows(t, {{0, 15, 8000}}), m).max_us, 14.5);
  // The switches write the whole range, the source's node too: on a half-duplex
  // bus the source's own copy follows its read (11.5..21.5), and since the
  // switches replicate in lockstep, everyone has the bytes at 21.5: 22.0.
  m.pci_half_duplex = true;
  EXPECT_DOUBLE_EQ(simulate(algorithm(Collective::Bcast, "hw_multicast", t, 8000), m).max_us, 22.0);
}

// The combining barrier on 16 nodes (2 levels), every rank there at 0:
// test-and-set: from node 0's NIC (no DMA), up and down (0.5), into every NIC
// (wire 2), a read of the sequence word in host memory (the DMA start-up,
// 0.5): 3.0; the combined acknowledgement back: wire 2 + 0.5 = 5.5; rank 0
// receives it once: 6.0. 'go': send overhead 1, start-up 0.5, wire 2, hops 0.5,
// receive 0.5: 10.5 - independent of the number of processes.
TEST(SimHardware, CombiningBarrierByHand) {
  Machine m = hw_machine();
  SimResult r = simulate(algorithm(Collective::Barrier, "hw_combining", Topology::from_ppn(16, 1, 1), 0), m);
  EXPECT_DOUBLE_EQ(r.max_us, 10.5);
  EXPECT_DOUBLE_EQ(r.finish_us[0], 7.5);  // rank 0 is done when its 'go' has left
  // 64 ranks on the same 16 nodes: the same two traversals.
  EXPECT_DOUBLE_EQ(simulate(algorithm(Collective::Barrier, "hw_combining", Topology::from_ppn(64, 4, 1), 0), m).max_us, 10.5);
}

// The root switch passes one multicast at a time (seed 004 §2.3.1): on a
// crossbar, rank 0's 0-byte multicast to ranks 1-3 is in at 1 + 2 = 3 and
// acknowledged at 3 + 2 = 5; rank 4's, issued at 1 as well, waits for that and
// is in at 5 + 2 = 7, counted at 7.5.
TEST(SimHardware, MulticastsSerializeAtTheRoot) {
  Machine m = test_machine();
  m.hw_multicast = true;
  Topology t = Topology::from_ppn(8, 1, 1);
  SimResult r = simulate(multicasts(t, {{0, {1, 2, 3}, 0}, {4, {5, 6, 7}, 0}}), m);
  EXPECT_DOUBLE_EQ(r.finish_us[1], 3.5);
  EXPECT_DOUBLE_EQ(r.finish_us[5], 7.5);
}

// The hardware collectives only run where the hardware is, over a contiguous
// range of nodes; anything else is an input error (exit status 2 in the CLI).
TEST(SimHardware, RefusedWithoutTheHardware) {
  Machine m = test_machine();  // hw_multicast = hw_barrier = no
  Topology t = Topology::from_ppn(8, 1, 1);
  auto error = [&](const Schedule& s, const Machine& mm) {
    try {
      simulate(s, mm);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error(algorithm(Collective::Bcast, "hw_multicast", t, 64), m).find("needs the hardware multicast"),
            std::string::npos);
  EXPECT_NE(error(algorithm(Collective::Barrier, "hw_combining", t, 0), m).find("needs the hardware barrier"),
            std::string::npos);
  m.hw_multicast = m.hw_barrier = true;
  EXPECT_EQ(error(algorithm(Collective::Barrier, "hw_combining", t, 0), m), "no error");
  // Nodes 1 and 3 without 2: the switches cannot deliver to that set.
  EXPECT_NE(error(multicasts(t, {{0, {1, 3}, 64}}), m).find("not a contiguous range"), std::string::npos);
  // The source inside the range is fine (root 5 broadcasting to all).
  EXPECT_EQ(error(multicasts(t, {{5, {0, 1, 2, 3, 4, 6, 7}, 64}}), m), "no error");
}

// Under background traffic the hardware collectives' packets wait for the
// packet in flight at each busy resource, not for whole messages
// (hw_packet_bytes); without a packet size they queue like everything else.
// Each sample is deterministic for its seed; samples differ.
TEST(SimHardware, PacketsInterleaveWithBackgroundTraffic) {
  Machine m = hw_machine();
  Topology t = Topology::from_ppn(16, 1, 1);
  Schedule s = algorithm(Collective::Barrier, "hw_combining", t, 0);
  SimOptions load;
  load.background = "uniform";
  double quiet = simulate(s, m).max_us, message_us = load.background_bytes / m.nic_MBps();
  m.hw_packet_bytes = 320;
  double lo = 1e300, hi = 0;
  for (int i = 0; i < 20; ++i) {
    SimOptions o = loaded_sample(load, m, i);
    double x = simulate(s, m, o).max_us;
    EXPECT_DOUBLE_EQ(x, simulate(s, m, o).max_us);
    EXPECT_GT(x, quiet);
    lo = std::min(lo, x), hi = std::max(hi, x);
  }
  EXPECT_LT(hi, quiet + 20 * 320 / m.pci_MBps);  // a packet's wait at each of fewer than 20 stages
  EXPECT_GT(hi, lo);
  m.hw_packet_bytes = 0;
  EXPECT_GT(simulate(s, m, loaded_sample(load, m, 0)).max_us, quiet + message_us / 2);
}

// Buffers in NIC memory (seed 004's Elan memory) skip the host bus: the
// multicast of MulticastByHand is link-bound, 8000 B / 1000 MB/s: the last byte
// leaves the NIC at 1.5 + 8 = 9.5 and is in at 9.5 + 0.5 + 2 = 12.0, counted at 12.5.
TEST(SimHardware, BuffersInNicMemory) {
  Machine m = hw_machine();
  SimOptions o;
  o.nic_memory = true;
  EXPECT_DOUBLE_EQ(simulate(algorithm(Collective::Bcast, "hw_multicast", Topology::from_ppn(16, 1, 1), 8000), m, o).max_us,
                   12.5);
}

// The personalised collectives run on the model like any schedule: every
// algorithm of alltoall(v), scatter(v) and gatherv ends on the test machine, and
// alltoall's Direct, striped, is no faster than the rail bound (what a node
// takes in over its rails) and uses both rails.
TEST(Sim, PersonalisedCollectivesRunAndAlltoallReachesTheRailBound) {
  Machine m = test_machine();
  const Topology t = Topology::from_ppn(16, 4, 2);
  for (auto& a : all_algorithms()) {
    if (a.collective != Collective::Alltoall && a.collective != Collective::Alltoallv &&
        a.collective != Collective::Scatter && a.collective != Collective::Scatterv &&
        a.collective != Collective::Gatherv)
      continue;
    AlgoOptions o;
    o.root = 5;
    SimResult r = simulate(build_schedule(a.collective, a.name, t, std::vector<uint64_t>(16, 4096), o), m);
    EXPECT_GT(r.max_us, 0) << collective_name(a.collective) << "/" << a.name;
  }
  const uint64_t block = 1 << 20;
  auto direct = [&](int rails) {
    return simulate(build_schedule(Collective::Alltoall, "direct", Topology::from_ppn(4, 1, rails),
                                   std::vector<uint64_t>(4, block), {}),
                    m)
        .max_us;
  };
  const double bound_us = 3.0 * block / (2 * 1000.0);  // 3 blocks in, 2 rails of 1000 MB/s
  EXPECT_GE(direct(2), bound_us);
  EXPECT_GT(direct(1), 1.5 * direct(2));  // the blocks are striped over both rails
}
