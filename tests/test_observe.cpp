// Planted faults, ranks as threads of one process (docs/observability.md): a
// rank that skips a call, sleeps outside the library, passes another size,
// dies; a rail that stops carrying. Each must end within the deadline with a
// message naming the rank, the call, the op and step, the peer and rail
// waited for, and the likely cause; the flight recorders of every rank must
// let `railcoll doctor` name the rank behind. The rails layer runs over fake
// links (fake_links.hpp, 3 nodes x 2 ranks, 2 rails) except for the death,
// which the fake transport plants.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "core/errors.hpp"
#include "runtime/bootstrap/net.hpp"
#include "runtime/engine/executor.hpp"
#include "runtime/engine/plan.hpp"
#include "runtime/observe/flight_recorder.hpp"
#include "runtime/observe/trace_sink.hpp"
#include "runtime/transport/fake/fake_links.hpp"
#include "runtime/transport/fake/fake_transport.hpp"
#include "runtime/transport/transport_settings.hpp"
#include "rank_threads.hpp"

using namespace railcoll;
using namespace railcoll::rt;
using namespace railcoll::rt::test;

namespace {

constexpr double kTimeout = 1.5;

const Topology& three_by_two() {
  static const Topology t = Topology::from_node_map({0, 0, 1, 1, 2, 2}, 2);
  return t;
}

std::string temp_dir() {
  char tmpl[] = "/tmp/railcoll-observe-XXXXXX";
  return mkdtemp(tmpl);
}

// `railcoll doctor DIR`'s output.
std::string doctor(const std::string& dir) {
  std::string out;
  FILE* p = popen((std::string(RAILCOLL_BIN) + " doctor " + dir + " 2>&1").c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

// Executors with a flight recorder each, over the rails layer on fake links.
struct Ranks {
  explicit Ranks(double rail_timeout = 0) : dir(temp_dir()), net(three_by_two(), links(rail_timeout)) {
    for (int r = 0; r < 6; ++r) {
      exec.push_back(std::make_unique<Executor>(net.transport(r), topo(), r, FakeRails::kCommId, settings(kTimeout)));
      rec.push_back(std::make_unique<FlightRecorder>(r, 6, topo().node_of(r), FakeRails::kCommId, 16, dir));
      exec[r]->set_observer(rec[r].get());
    }
  }
  ~Ranks() { std::filesystem::remove_all(dir); }
  static TransportSettings links(double rail_timeout) {
    TransportSettings t = TransportSettings::from(Settings());
    t.timeout = kTimeout;
    if (rail_timeout > 0) t.rail_timeout = rail_timeout;
    return t;
  }
  const Topology& topo() const { return net.topo(); }
  // Every rank's record written, as at the end with RAILCOLL_FLIGHT_DIR.
  void dump_all() {
    for (auto& r : rec) r->dump("exit");
  }

  std::string dir;
  FakeRails net;
  std::vector<std::unique_ptr<Executor>> exec;
  std::vector<std::unique_ptr<FlightRecorder>> rec;
};

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Call 1 on every rank, validated.
void warm_up(Ranks& ranks) {
  CallOnEveryRank c(ranks.topo(), Collective::Allgather, "direct", 3000, 1);
  auto out = each_rank(6, [&](int r) { c.run(*ranks.exec[r], r); });
  for (int r = 0; r < 6; ++r) ASSERT_EQ(out[r].status, Status::Ok) << r << ": " << out[r].error;
}

// The ranks that timed out themselves (the others fail with the abort of the first).
std::vector<int> timed_out(const std::vector<Outcome>& out) {
  std::vector<int> v;
  for (size_t r = 0; r < out.size(); ++r)
    if (out[r].status == Status::Timeout) v.push_back(static_cast<int>(r));
  return v;
}

// Rank 3 sleeps outside the library (its thread runs no progress) before call 2.
TEST(PlantedFaults, ARankAsleepOutsideTheLibraryIsNamed) {
  Ranks ranks;
  warm_up(ranks);
  CallOnEveryRank c(ranks.topo(), Collective::Allgather, "direct", 3000, 2);
  const double start = now_seconds();
  std::vector<double> ended(6, 0);
  auto out = each_rank(6, [&](int r) {
    if (r == 3) std::this_thread::sleep_for(std::chrono::duration<double>(kTimeout * 2.5));
    try {
      c.run(*ranks.exec[r], r);
    } catch (...) {
      ended[r] = now_seconds();
      throw;
    }
  });
  for (int r : {0, 1, 2, 4, 5}) {
    EXPECT_LT(ended[r] - start, kTimeout * 2.2) << "rank " << r << " should fail soon after its deadline";
    EXPECT_TRUE(has(out[r].error, "in call 2 of communicator")) << out[r].error;
  }
  auto t = timed_out(out);
  ASSERT_FALSE(t.empty());
  for (int r : t) {
    const std::string& e = out[r].error;
    EXPECT_TRUE(has(e, "rank " + std::to_string(r) + " timed out after")) << e;
    EXPECT_TRUE(has(e, "(wait, step ")) << e;
    EXPECT_TRUE(has(e, "waiting for rank 3 on ")) << e;
    EXPECT_TRUE(has(e, "rank 3 did not answer a liveness probe")) << e;
    EXPECT_TRUE(has(e, "likely cause: rank 3 is gone, stopped or hung, or busy outside railcoll")) << e;
  }
  ranks.dump_all();
  const std::string d = doctor(ranks.dir);
  EXPECT_TRUE(has(d, "rank 3 entered call 2 late")) << d;
  EXPECT_TRUE(has(d, "likely culprit: rank 3")) << d;
  std::printf("--- a rank asleep: rank %d's message\n%s\n--- railcoll doctor\n%s", t[0], out[t[0]].error.c_str(),
              d.c_str());
}

// Rank 3 skips call 2: it stays between calls, answering probes (as a rank
// whose progress thread runs while it does something else).
TEST(PlantedFaults, ARankThatSkipsACallIsNamed) {
  Ranks ranks;
  warm_up(ranks);
  CallOnEveryRank c(ranks.topo(), Collective::Allgather, "direct", 3000, 2);
  std::atomic<int> failed{0};
  auto out = each_rank(6, [&](int r) {
    if (r != 3) {
      try {
        c.run(*ranks.exec[r], r);
      } catch (...) {
        ++failed;
        throw;
      }
      return;
    }
    const double until = now_seconds() + kTimeout * 4;
    while (failed < 5 && now_seconds() < until) ranks.exec[3]->idle(0.01);
  });
  auto t = timed_out(out);
  ASSERT_FALSE(t.empty());
  for (int r : t) {
    const std::string& e = out[r].error;
    EXPECT_TRUE(has(e, "waiting for rank 3 on ")) << e;
    EXPECT_TRUE(has(e, "rank 3 answered between calls, before call 2")) << e;
    EXPECT_TRUE(has(e, "likely cause: rank 3 has not entered call 2")) << e;
  }
  ranks.dump_all();
  const std::string d = doctor(ranks.dir);
  EXPECT_TRUE(has(d, "rank 3 is behind: its last call is 1 (done")) << d;
  EXPECT_TRUE(has(d, "likely culprit: rank 3")) << d;
  std::printf("--- a rank skips a call: rank %d's message\n%s\n--- railcoll doctor\n%s", t[0], out[t[0]].error.c_str(),
              d.c_str());
}

// Rank 3 passes 2000 bytes where the others pass 3000.
TEST(PlantedFaults, ARankThatPassesAnotherSizeIsNamed) {
  Ranks ranks;
  warm_up(ranks);
  CallOnEveryRank c(ranks.topo(), Collective::Allgather, "direct", 3000, 2), odd(ranks.topo(), Collective::Allgather, "direct", 2000, 2);
  auto out = each_rank(6, [&](int r) { (r == 3 ? odd : c).run(*ranks.exec[r], r); });
  for (int r = 0; r < 6; ++r) {
    EXPECT_TRUE(out[r].status == Status::Mismatch || out[r].status == Status::Peer) << r << ": " << out[r].error;
    EXPECT_TRUE(has(out[r].error, "in a different call")) << out[r].error;
    EXPECT_TRUE(has(out[r].error, "in call 2 of communicator")) << out[r].error;
  }
  ranks.dump_all();
  const std::string d = doctor(ranks.dir);
  EXPECT_TRUE(has(d, "call 2: the ranks disagree")) << d;
  EXPECT_TRUE(has(d, "likely culprit: rank 3 (called allgather/direct with 2000 B")) << d;
  std::printf("--- another size: rank 0's message\n%s\n--- railcoll doctor\n%s", out[0].error.c_str(), d.c_str());
}

// Rail 0 of node 1 stops carrying, silently, for longer than the deadline (the
// rails layer would give it up after RAILCOLL_RAIL_TIMEOUT; here that is 30 s).
// Blocks of 512 bytes are not striped (call_defaults: above 1 KiB): each
// message has its rail.
TEST(PlantedFaults, ARailThatStopsCarryingIsNamed) {
  Ranks ranks(30);
  warm_up(ranks);
  ranks.net.cut(1, 0, true);
  CallOnEveryRank c(ranks.topo(), Collective::Allgather, "direct", 512, 2);
  const double start = now_seconds();
  auto out = each_rank(6, [&](int r) { c.run(*ranks.exec[r], r); });
  EXPECT_LT(now_seconds() - start, kTimeout * 3);
  auto t = timed_out(out);
  ASSERT_FALSE(t.empty());
  int named = 0;
  std::string example;
  for (int r : t) {
    const std::string& e = out[r].error;
    if (has(e, "likely cause: rail 0 between this rank and rank ") && has(e, "stopped carrying")) {
      ++named;
      example = e;
    }
  }
  EXPECT_GE(named, 1) << out[t[0]].error;
  ranks.dump_all();
  const std::string d = doctor(ranks.dir);
  EXPECT_TRUE(has(d, "on rail 0")) << d;
  EXPECT_TRUE(has(d, "the timeouts' likely cause: rail 0 between this rank and rank")) << d;
  std::printf("--- a rail stops carrying\n%s\n--- railcoll doctor\n%s", example.c_str(), d.c_str());
}

// Rank 3 dies (its connections close without a goodbye) before call 2.
TEST(PlantedFaults, ARankThatDiesIsNamed) {
  const Topology topo = Topology::from_node_map({0, 0, 1, 1}, 1);
  FakeFabric fabric(topo);
  const std::string dir = temp_dir();
  std::vector<std::unique_ptr<Executor>> exec;
  std::vector<std::unique_ptr<FlightRecorder>> rec;
  for (int r = 0; r < 4; ++r) {
    exec.push_back(std::make_unique<Executor>(fabric.transport(r), topo, r, FakeFabric::kCommId, settings(kTimeout)));
    rec.push_back(std::make_unique<FlightRecorder>(r, 4, topo.node_of(r), FakeFabric::kCommId, 16, dir));
    exec[r]->set_observer(rec[r].get());
  }
  CallOnEveryRank warm(topo, Collective::Allgather, "direct", 3000, 1);
  auto ok = each_rank(4, [&](int r) { warm.run(*exec[r], r); });
  for (int r = 0; r < 4; ++r) ASSERT_EQ(ok[r].status, Status::Ok) << ok[r].error;
  fabric.kill(3);
  std::filesystem::remove(flight_path(dir, FakeFabric::kCommId, 3));  // a dead rank writes nothing
  rec[3].reset();
  CallOnEveryRank c(topo, Collective::Allgather, "direct", 3000, 2);
  auto out = each_rank(4, [&](int r) { c.run(*exec[r], r); }, {3});
  for (int r : {0, 1, 2}) {
    EXPECT_EQ(out[r].status, Status::Peer) << out[r].error;
    EXPECT_TRUE(has(out[r].error, "rank 3")) << out[r].error;
    EXPECT_TRUE(has(out[r].error, "died")) << out[r].error;
    EXPECT_TRUE(has(out[r].error, "in call 2 of communicator")) << out[r].error;
  }
  const std::string d = doctor(dir);
  EXPECT_TRUE(has(d, "none from rank 3")) << d;
  EXPECT_TRUE(has(d, "likely culprit: rank 3")) << d;
  std::printf("--- a rank dies: rank 0's message\n%s\n--- railcoll doctor\n%s", out[0].error.c_str(), d.c_str());
  std::filesystem::remove_all(dir);
}

// Two ranks of a node disagree about call 3 before the others have entered it
// (1 against 1, as on the cluster when the skipping rank's node peer finds it
// at once): the group the finder named ("local rank 5 is in a different call")
// is the odd one, whatever the two calls' names sort as. Records written by
// hand, in the recorder's format, as the cluster run left them.
TEST(Doctor, ATieIsBrokenByWhomTheFinderNamed) {
  const std::string dir = temp_dir();
  const char* header = "call\tstate\tstart\tend\tsend_bytes\trecv_bytes\top\tnops\tkind\tstep\tpeer\trail\twhat\tdetail\tcause\n";
  auto write = [&](int rank, const std::string& rows) {
    std::ofstream f(dir + "/flight-00000000000000aa-rank" + std::to_string(rank) + ".txt");
    f << "railcoll-flight 1\nrank " << rank << " size 6 node " << rank / 2
      << " comm 00000000000000aa pid 1 reason error written 10\n"
      << header << rows;
  };
  const std::string done2 = "2\tdone\t1.0\t1.1\t64\t384\t10\t11\tcopy\t2\t-1\t-1\tallgather/smp_multileader with 65536 B per rank\t\t\n";
  for (int r = 0; r < 4; ++r) write(r, done2);
  write(4, done2 + "3\tfailed\t2.0\t2.0\t64\t384\t2\t11\twait\t0\t-1\t-1\tallgather/smp_multileader with 65536 B per rank\t"
                   "local rank 5 is in a different call than this rank (allgather/smp_multileader with 65536 B per rank)\t\n");
  write(5, done2 + "3\tfailed\t2.0\t3.5\t0\t0\t1\t4\twait\t3\t4\t-1\tbarrier/smp with 0 B per rank\t"
                   "rank 5 timed out after 1.5 s waiting in barrier/smp\t\n");
  const std::string d = doctor(dir);
  EXPECT_TRUE(has(d, "call 3: the ranks disagree")) << d;
  EXPECT_TRUE(has(d, "likely culprit: rank 5 (called barrier/")) << d;
  std::filesystem::remove_all(dir);
}

// The recorder keeps the last N calls in its ring, oldest first.
TEST(FlightRecorder, KeepsTheLastCallsInAFixedRing) {
  const Topology topo = Topology::from_node_map({0, 1}, 1);
  FakeFabric fabric(topo);
  const std::string dir = temp_dir();
  std::vector<std::unique_ptr<Executor>> exec;
  std::vector<std::unique_ptr<FlightRecorder>> rec;
  for (int r = 0; r < 2; ++r) {
    exec.push_back(std::make_unique<Executor>(fabric.transport(r), topo, r, FakeFabric::kCommId, settings(5)));
    rec.push_back(std::make_unique<FlightRecorder>(r, 2, r, FakeFabric::kCommId, 4, dir));
    exec[r]->set_observer(rec[r].get());
  }
  for (int call = 1; call <= 6; ++call) {
    CallOnEveryRank c(topo, Collective::Allgather, "direct", 100 * call, call);
    auto out = each_rank(2, [&](int r) { c.run(*exec[r], r); });
    ASSERT_EQ(out[0].status, Status::Ok) << out[0].error;
  }
  auto e = rec[0]->entries();
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e.front().call, 3u);
  EXPECT_EQ(e.back().call, 6u);
  EXPECT_EQ(e.back().state, FlightEntry::Done);
  EXPECT_TRUE(has(e.back().what, "600 B")) << e.back().what;
  EXPECT_GE(e.back().end, e.back().start);
  ASSERT_TRUE(rec[0]->dump("exit"));
  ASSERT_TRUE(rec[1]->dump("exit"));
  const std::string d = doctor(dir);
  EXPECT_TRUE(has(d, "no rank is behind")) << d;
  std::filesystem::remove_all(dir);
}

}  // namespace

// RAILCOLL_RAILS in NCCL's socket/HCA grammar (net.hpp, choose_rails).
namespace {

const std::vector<Interface> kIfs = {{"docker0", "172.17.0.1"}, {"eth0", "10.0.0.5"}, {"eth1", "10.0.1.5"},
                                     {"ib0", "192.168.0.5"},    {"lo", "127.0.0.1"},  {"rail0", "198.18.0.5"},
                                     {"rail1", "198.19.0.5"},   {"rail10", "198.20.0.5"}};

std::string names(const std::vector<ChosenRail>& rails) {
  std::string s;
  for (auto& r : rails) s += (s.empty() ? "" : ",") + r.name;
  return s;
}

TEST(RailsSpec, UnsetTakesEveryInterfaceButLoopback) {
  EXPECT_EQ(names(choose_rails("", kIfs)), "docker0,eth0,eth1,ib0,rail0,rail1,rail10");
  EXPECT_EQ(choose_rails("", {{"lo", "127.0.0.1"}})[0].addr, "127.0.0.1");
}

TEST(RailsSpec, PrefixesTakeEveryInterfaceThatBeginsSoInTheListsOrder) {
  EXPECT_EQ(names(choose_rails("ib,eth", kIfs)), "ib0,eth0,eth1");
  auto r = choose_rails("eth", kIfs);
  EXPECT_EQ(r[1].addr, "10.0.1.5");
  EXPECT_EQ(r[1].why, "prefix 'eth'");
}

TEST(RailsSpec, AnExactNameMatchesItselfAlone) {
  EXPECT_EQ(names(choose_rails("rail1", kIfs)), "rail1");  // not rail10
  EXPECT_EQ(names(choose_rails("=rail0,rail1", kIfs)), "rail0,rail1");
  EXPECT_THROW(choose_rails("=rail", kIfs), RuntimeError);  // = takes no prefixes
}

TEST(RailsSpec, ExclusionsTakeEveryOtherInterfaceButLoopback) {
  EXPECT_EQ(names(choose_rails("^docker,eth", kIfs)), "ib0,rail0,rail1,rail10");
  EXPECT_EQ(names(choose_rails("^=rail1", kIfs)), "docker0,eth0,eth1,ib0,rail0,rail10");
  EXPECT_THROW(choose_rails("^d,e,i,r", kIfs), RuntimeError);
}

TEST(RailsSpec, SubnetsAndAddressesAsBefore) {
  auto r = choose_rails("10.0.1.0/24,127.0.0.2", kIfs);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].name, "eth1");
  EXPECT_EQ(r[0].why, "subnet 10.0.1.0/24");
  EXPECT_EQ(r[1].addr, "127.0.0.2");
  EXPECT_THROW(choose_rails("10.9.0.0/16", kIfs), RuntimeError);
}

TEST(RailsSpec, AnEntryThatMatchesNothingSaysWhatTheHostHas) {
  try {
    choose_rails("myri", kIfs);
    FAIL() << "no error";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("this host has: docker0, eth0"), std::string::npos) << e.what();
  }
}

}  // namespace
