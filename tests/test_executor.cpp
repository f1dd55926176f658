// The real executor on the fake transport (src/runtime/transport/fake/fake_transport.hpp): N
// ranks in one process, a thread each. Every registered algorithm of every
// collective runs on several topologies and sizes, its result checked with the
// collective's traits (fill/check); then faults a real network makes rare: a
// duplicated frame, a frame of the wrong length or offset, a silent peer, a
// peer that aborts or dies, frames of the next call arriving early.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "core/errors.hpp"
#include "core/registry.hpp"
#include "runtime/engine/executor.hpp"
#include "runtime/bootstrap/net.hpp"
#include "runtime/transport/fake/fake_transport.hpp"
#include "runtime/engine/plan.hpp"
#include "runtime/transport/transport_settings.hpp"
#include "rank_threads.hpp"

using namespace railcoll;
using namespace railcoll::rt;
using namespace railcoll::rt::test;

namespace {

// The ranks of a topology: a fabric and an executor each.
struct Ranks {
  explicit Ranks(const Topology& t, const ExecutorSettings& s = settings()) : topo(t), fabric(t) {
    for (int r = 0; r < t.nranks(); ++r)
      exec.push_back(std::make_unique<Executor>(fabric.transport(r), t, r, FakeFabric::kCommId, s));
  }
  Topology topo;
  FakeFabric fabric;
  std::vector<std::unique_ptr<Executor>> exec;
};

struct Shape {
  const char* name;
  std::vector<int> node_of;
  int rails;
};

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> v = {
      {"1_rank", {0}, 1},
      {"1_node_x3", {0, 0, 0}, 1},
      {"2_nodes_x1_2_rails", {0, 1}, 2},
      {"2_nodes_x2_2_rails", {0, 0, 1, 1}, 2},
      {"4_nodes_x2_1_rail", {0, 0, 1, 1, 2, 2, 3, 3}, 1},
      {"3_nodes_x3_3_rails", {0, 0, 0, 1, 1, 1, 2, 2, 2}, 3},
      {"uneven_3_1_2_interleaved_2_rails", {0, 1, 0, 2, 0, 2}, 2},
  };
  return v;
}

// Bytes per rank: none, one, odd, and above the 1 KiB striping threshold
// (whole elements for reductions).
std::vector<uint64_t> sizes(Collective c) {
  uint64_t e = traits(c).reducing ? dtype_size(call_defaults(c).dtype) : 1;
  return {0, 1 * e, 7 * e, (3001 / e) * e};
}

// ---------------------------------------------------------------- every algorithm

class EveryAlgorithm : public ::testing::TestWithParam<size_t> {};

TEST_P(EveryAlgorithm, RunsCorrectlyOnTheFakeTransport) {
  const AlgoSpec& spec = all_algorithms()[GetParam()];
  const CollectiveTraits& tr = traits(spec.collective);
  for (const Shape& s : shapes()) {
    Topology t = Topology::from_node_map(s.node_of, s.rails);
    Ranks ranks(t);
    int call = 0;
    for (uint64_t bytes : sizes(spec.collective)) {
      ++call;
      const int root = tr.rooted ? (call * 5) % t.nranks() : 0;  // roots other than 0 too
      CallOnEveryRank c(t, spec.collective, spec.name, bytes, call, root);
      auto out = each_rank(t.nranks(), [&](int r) { c.run(*ranks.exec[r], r); });
      for (int r = 0; r < t.nranks(); ++r) {
        ASSERT_EQ(out[r].status, Status::Ok) << s.name << ", " << bytes << " B, rank " << r << ": " << out[r].error;
        EXPECT_EQ(c.check(r), "") << s.name << ", " << bytes << " B, root " << root << ", rank " << r;
      }
    }
  }
}

std::vector<size_t> user_algorithms() {
  std::vector<size_t> v;
  for (size_t i = 0; i < all_algorithms().size(); ++i)
    if (traits(all_algorithms()[i].collective).user_facing) v.push_back(i);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Executor, EveryAlgorithm, ::testing::ValuesIn(user_algorithms()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           const AlgoSpec& a = all_algorithms()[info.param];
                           return std::string(collective_name(a.collective)) + "_" + a.name;
                         });

// ---------------------------------------------------------------- faults

// 2 nodes x 2 ranks, 2 rails; a Direct all-gather of 3000 B per rank (striped).
const Topology& two_by_two() {
  static const Topology t = Topology::from_node_map({0, 0, 1, 1}, 2);
  return t;
}

// Alters the first Data frame rank 0 sends to rank 2 (change may also add
// frames to send after it).
void alter_first_frame_to_2(Ranks& ranks, std::function<void(FakeFrame*, std::vector<FakeFrame>*)> change) {
  auto seen = std::make_shared<bool>(false);  // only rank 0's thread reads it
  ranks.fabric.set_tamper([seen, change](int to, FakeFrame* f, std::vector<FakeFrame>* extra) {
    if (f->hdr.sender == 0 && to == 2 && f->hdr.type == static_cast<uint16_t>(Frame::Data) && !*seen) {
      *seen = true;
      change(f, extra);
    }
    return true;
  });
}

// Rank 2 refuses the frame with `expect` in its error and writes none of it;
// every other rank gets the abort, in this call or (if it had finished) the next.
void expect_refused_by_rank_2(Ranks& ranks, const std::string& expect) {
  CallOnEveryRank first(ranks.topo, Collective::Allgather, "direct", 3000, 1);
  auto out = each_rank(4, [&](int r) { first.run(*ranks.exec[r], r); });
  EXPECT_EQ(out[2].status, Status::Protocol) << out[2].error;
  EXPECT_NE(out[2].error.find(expect), std::string::npos) << out[2].error;
  EXPECT_NE(out[2].error.find("rejected a frame from rank 0 (rail"), std::string::npos) << out[2].error;
  CallOnEveryRank second(ranks.topo, Collective::Allgather, "direct", 3000, 2);
  for (int r : {0, 1, 3}) {
    if (out[r].status == Status::Ok) {
      try {
        second.run(*ranks.exec[r], r);
        ADD_FAILURE() << "rank " << r << " ran a call after rank 2 refused a frame";
      } catch (const Error& e) {
        out[r] = {e.status, e.what()};
      }
    }
    EXPECT_EQ(out[r].status, Status::Peer) << "rank " << r << ": " << out[r].error;
    EXPECT_NE(out[r].error.find("rank 2 aborted the collective"), std::string::npos) << out[r].error;
  }
  // Broken for good: the next call says so at once.
  try {
    second.run(*ranks.exec[2], 2);
    ADD_FAILURE() << "a broken executor ran a call";
  } catch (const Error& e) {
    EXPECT_EQ(e.status, Status::Broken);
  }
}

TEST(SpinBudget, WaitsSleepAtOnceWhereTheNodesRanksOutnumberTheCoresUnlessTheCallIsShort) {
  ExecutorSettings b = ExecutorSettings::from(Settings());  // RAILCOLL_SPIN_US not given: 2 ms where it fits
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  ASSERT_GT(cores, 0);
  const uint64_t large = kShortCallBytes + 1;
  EXPECT_DOUBLE_EQ(spin_budget(b, 1, large), 0.002);
  EXPECT_DOUBLE_EQ(spin_budget(b, 1, 0), 0.002);
  EXPECT_DOUBLE_EQ(spin_budget(b, 4 * cores + 1, large), 0.0);
  EXPECT_DOUBLE_EQ(spin_budget(b, 4 * cores + 1, kShortCallBytes), kShortCallSpin);  // a small call spins briefly
  EXPECT_DOUBLE_EQ(spin_budget(b, 4 * cores + 1, 0), kShortCallSpin);                // a barrier too
  b.spin_seconds = 0.0005;  // the user's word stands
  EXPECT_DOUBLE_EQ(spin_budget(b, 4 * cores + 1, large), 0.0005);
  EXPECT_DOUBLE_EQ(spin_budget(b, 4 * cores + 1, 0), 0.0005);
  b.spin_seconds = 0;
  EXPECT_DOUBLE_EQ(spin_budget(b, 1, 0), 0.0);
  EXPECT_DOUBLE_EQ(spin_budget(b, 4 * cores + 1, 0), 0.0);
}

TEST(SpinBudget, AnAllGathersResultCountsOnceForAllOfANodesRanks) {
  const Topology t = Topology::from_ppn(16, 4, 2);
  const std::vector<uint64_t> four_k(16, 4096), eight_k(16, 8192), big(16, 64 << 10);
  const AlgoOptions o = call_defaults(Collective::Allgather);
  // 16 blocks of 4 KiB reach a node of 4 ranks once: a short call, unlike a 64 KiB broadcast.
  EXPECT_EQ(wait_bytes(build_schedule(Collective::Allgather, "smp_direct", t, four_k, o), 5), 16u << 10);
  EXPECT_EQ(wait_bytes(build_schedule(Collective::Allgather, "smp_direct", t, eight_k, o), 5), 32u << 10);
  EXPECT_EQ(wait_bytes(build_schedule(Collective::Allgather, "smp_bruck", t, big, o), 5), 256u << 10);
  const std::vector<uint64_t> bcast(16, 32 << 10);
  EXPECT_EQ(wait_bytes(build_schedule(Collective::Bcast, "smp", t, bcast, call_defaults(Collective::Bcast)), 5),
            32u << 10);
  EXPECT_EQ(wait_bytes(build_schedule(Collective::Allreduce, "smp", t, big, call_defaults(Collective::Allreduce)), 0),
            64u << 10);
}

// A TCP socket's congestion control, as the kernel reports it.
std::string congestion_of(int fd) {
  char name[16] = {};
  socklen_t len = sizeof name;
  if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0) return "?";
  return std::string(name, strnlen(name, sizeof name));
}

TEST(RailSockets, TakeTheFirstCongestionControlTheKernelAllows) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  const std::string system = congestion_of(fd);
  EXPECT_EQ(choose_congestion(fd, ""), "");  // an empty list keeps the system's
  EXPECT_EQ(congestion_of(fd), system);
  EXPECT_EQ(choose_congestion(fd, "no-such-control"), "");
  EXPECT_EQ(congestion_of(fd), system);
  EXPECT_EQ(choose_congestion(fd, "no-such-control,,reno"), "reno");  // reno is always built in and allowed
  EXPECT_EQ(congestion_of(fd), "reno");
  // The default list never leaves a rail on BBR, whatever the system's default.
  const std::string chosen = choose_congestion(fd, TransportSettings::from(Settings()).tcp_congestion);
  EXPECT_TRUE(chosen == "cubic" || chosen == "reno") << chosen;
  EXPECT_EQ(congestion_of(fd), chosen);
  close(fd);
}

// Set before the connection exists, so the system's default (often BBR) never
// initialises it: BBR leaves the kernel pacing a socket switched away from it.
TEST(RailSockets, BothEndsAreBornWithTheChosenCongestionControl) {
  int port = 0;
  const int listener = tcp_listen("127.0.0.1", 0, &port, "no-such-control,reno");
  const int connected = tcp_connect("", "127.0.0.1", port, now_seconds() + 5, "reno");
  const int accepted = accept_until(listener, now_seconds() + 5);
  ASSERT_GE(accepted, 0);
  EXPECT_EQ(congestion_of(connected), "reno");
  EXPECT_EQ(congestion_of(accepted), "reno");  // inherited from the listener
  close(accepted), close(connected), close(listener);
}

TEST(RailSockets, TheUnsentLimitIsLiftedAndSetAgain) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  auto lowat = [&] {
    int v = -1;
    socklen_t len = sizeof v;
    getsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &v, &len);
    return v;
  };
  limit_unsent(fd, 32768);  // inside a call (TransportSettings::notsent_lowat)
  EXPECT_EQ(lowat(), 32768);
  unlimit_unsent(fd);  // its last frames (hand_over_sends): the system's setting
  EXPECT_EQ(lowat(), 0);
  limit_unsent(fd, 32768);  // the next call
  EXPECT_EQ(lowat(), 32768);
  close(fd);
}

TEST(ExecutorFaults, ADuplicatedFrameIsRefused) {
  Ranks ranks(two_by_two());
  alter_first_frame_to_2(ranks, [](FakeFrame* f, std::vector<FakeFrame>* extra) { extra->push_back(*f); });
  expect_refused_by_rank_2(ranks, "arrived twice in call 1 (a replayed frame)");
}

TEST(ExecutorFaults, AFrameAtAWrongOffsetIsAProtocolError) {
  Ranks ranks(two_by_two());
  alter_first_frame_to_2(ranks, [](FakeFrame* f, std::vector<FakeFrame>*) { f->hdr.offset += 8; });
  expect_refused_by_rank_2(ranks, "does not match the schedule");
}

TEST(ExecutorFaults, AFrameOfAWrongLengthIsAProtocolError) {
  Ranks ranks(two_by_two());
  alter_first_frame_to_2(ranks, [](FakeFrame* f, std::vector<FakeFrame>*) {
    f->payload.push_back('x');
    ++f->hdr.length;
  });
  expect_refused_by_rank_2(ranks, "does not match the schedule");
}

TEST(ExecutorFaults, ARefusedFrameWritesNothing) {
  // Rank 2's block from rank 0 is refused: rank 2's recv keeps its guard bytes there.
  Ranks ranks(two_by_two());
  alter_first_frame_to_2(ranks, [](FakeFrame* f, std::vector<FakeFrame>*) { f->hdr.total += 1; });
  CallOnEveryRank c(ranks.topo, Collective::Allgather, "direct", 3000, 1);
  std::vector<unsigned char> before = c.recv[2];
  auto out = each_rank(4, [&](int r) { c.run(*ranks.exec[r], r); });
  EXPECT_EQ(out[2].status, Status::Protocol) << out[2].error;
  for (size_t i = 0; i < 3000; ++i) ASSERT_EQ(c.recv[2][i], before[i]) << "byte " << i << " of rank 0's block";
}

TEST(ExecutorFaults, ASilentPeerIsNamedAtTheDeadline) {
  Ranks ranks(two_by_two(), settings(1.0));
  CallOnEveryRank c(ranks.topo, Collective::Allgather, "direct", 3000, 1);
  auto start = std::chrono::steady_clock::now();
  auto out = each_rank(4, [&](int r) { c.run(*ranks.exec[r], r); }, {3});  // rank 3 never enters the call
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int timeouts = 0;
  for (int r : {0, 1, 2}) {
    EXPECT_TRUE(out[r].status == Status::Timeout || out[r].status == Status::Peer) << r << ": " << out[r].error;
    timeouts += out[r].status == Status::Timeout;
    EXPECT_NE(out[r].error.find("rank 3 did not answer a liveness probe"), std::string::npos) << out[r].error;
  }
  EXPECT_GE(timeouts, 1);
  EXPECT_LT(took, 10.0) << "every rank should fail soon after the 1 s deadline";
}

TEST(ExecutorFaults, APeerThatAbortsFailsEveryRank) {
  Ranks ranks(two_by_two());
  CallOnEveryRank c(ranks.topo, Collective::Allgather, "direct", 3000, 1);
  auto out = each_rank(4, [&](int r) {
    if (r == 1)
      ranks.fabric.transport(1).abort_peers(1, "rank 1 gave up");
    else
      c.run(*ranks.exec[r], r);
  });
  for (int r : {0, 2, 3}) {
    EXPECT_EQ(out[r].status, Status::Peer) << r << ": " << out[r].error;
    EXPECT_NE(out[r].error.find("rank 1 aborted the collective: rank 1 gave up"), std::string::npos) << out[r].error;
  }
}

// The root of a broadcast leaves it while the others still receive, and fails
// in the next call: the broadcast ends on every rank, the next call fails.
TEST(ExecutorFaults, AnAbortOfTheNextCallLetsThisOneEnd) {
  Ranks ranks(two_by_two());
  CallOnEveryRank bcast(ranks.topo, Collective::Bcast, "hw_multicast", 1 << 16, 1, 1);  // calls 1 and 2 of the communicator
  CallOnEveryRank next(ranks.topo, Collective::Allgather, "direct", 64, 2);
  std::vector<int> bcast_ended(4, 0);
  auto out = each_rank(4, [&](int r) {
    if (r != 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the abort is there when they enter
    bcast.run(*ranks.exec[r], r);
    bcast_ended[r] = 1;
    if (r == 1)
      ranks.fabric.transport(1).abort_peers(2, "rank 1 failed in the next call");
    else
      next.run(*ranks.exec[r], r);
  });
  for (int r : {0, 2, 3}) {
    EXPECT_TRUE(bcast_ended[r]) << r << ": " << out[r].error;
    EXPECT_EQ(bcast.check(r), "") << r;
    EXPECT_EQ(out[r].status, Status::Peer) << r << ": " << out[r].error;
    EXPECT_NE(out[r].error.find("rank 1 failed in the next call"), std::string::npos) << out[r].error;
  }
}

TEST(ExecutorFaults, APeerThatDiesIsNamed) {
  Ranks ranks(two_by_two());
  ranks.fabric.kill(3);
  CallOnEveryRank c(ranks.topo, Collective::Allgather, "direct", 3000, 1);
  auto out = each_rank(4, [&](int r) { c.run(*ranks.exec[r], r); }, {3});
  for (int r : {0, 1, 2}) {
    EXPECT_EQ(out[r].status, Status::Peer) << r << ": " << out[r].error;
    EXPECT_NE(out[r].error.find("rank 3"), std::string::npos) << out[r].error;
  }
}

TEST(ExecutorFaults, RanksInDifferentCallsAreAMismatch) {
  Ranks ranks(two_by_two(), settings(5));
  CallOnEveryRank mine(ranks.topo, Collective::Allgather, "direct", 3000, 1), other(ranks.topo, Collective::Allgather, "direct", 2000, 1);
  auto out = each_rank(4, [&](int r) { (r == 0 ? other : mine).run(*ranks.exec[r], r); });
  int mismatches = 0;
  for (int r = 0; r < 4; ++r) {
    EXPECT_NE(out[r].status, Status::Ok) << r;
    mismatches += out[r].status == Status::Mismatch;
  }
  EXPECT_GE(mismatches, 1);
}

// Rank 1 runs ahead: its frames of call 2 reach rank 0 while rank 0 still waits
// in call 1 (rank 1's frames of call 1 are held back in the fabric). Rank 0
// holds them, then applies them when it enters call 2: both calls exact.
TEST(ExecutorFaults, FramesOfTheNextCallAreHeldThenApplied) {
  Topology t = Topology::from_node_map({0, 1}, 2);
  Ranks ranks(t);
  ranks.fabric.close_gate(0, [](const FrameHeader& h) { return h.sender == 1 && h.seq == 1; });
  CallOnEveryRank one(t, Collective::Allgather, "direct", 3000, 1), two(t, Collective::Allgather, "direct", 3000, 2);
  std::thread opener([&] {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (ranks.exec[0]->frames_held() == 0 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ranks.fabric.open_gate(0);
  });
  auto out = each_rank(2, [&](int r) {
    one.run(*ranks.exec[r], r);
    two.run(*ranks.exec[r], r);
  });
  opener.join();
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(out[r].status, Status::Ok) << out[r].error;
    EXPECT_EQ(one.check(r), "") << r;
    EXPECT_EQ(two.check(r), "") << r;
  }
  EXPECT_GE(ranks.exec[0]->frames_held(), 2u) << "rank 1's striped block of call 2 (2 parts) arrived early";
}

TEST(ExecutorFaults, ACallTooBigForTheNodeMemoryBreaksNothing) {
  Topology t = Topology::from_node_map({0, 0}, 1);
  FakeFabric fabric(t, 4096);  // a 4 KiB shared buffer
  std::vector<std::unique_ptr<Executor>> exec;
  for (int r = 0; r < 2; ++r) exec.push_back(std::make_unique<Executor>(fabric.transport(r), t, r, FakeFabric::kCommId, settings()));
  CallOnEveryRank big(t, Collective::Allgather, "smp_direct", 1 << 20, 1), small(t, Collective::Allgather, "smp_direct", 100, 1);
  auto out = each_rank(2, [&](int r) { big.run(*exec[r], r); });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(out[r].status, Status::Unsupported) << out[r].error;
    EXPECT_NE(out[r].error.find("RAILCOLL_SHM_MIB"), std::string::npos) << out[r].error;
  }
  out = each_rank(2, [&](int r) { small.run(*exec[r], r); });
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(out[r].status, Status::Ok) << out[r].error;
    EXPECT_EQ(small.check(r), "");
  }
}

}  // namespace

// ---------------------------------------------------------------- user operators

namespace {

// 2x2 integer matrices: associative, not commutative.
struct Mat2 {
  int64_t a, b, c, d;
  bool operator==(const Mat2& o) const { return a == o.a && b == o.b && c == o.c && d == o.d; }
};
Mat2 mat_mul(const Mat2& x, const Mat2& y) {
  auto m = [](int64_t p, int64_t q) { return static_cast<uint64_t>(p) * static_cast<uint64_t>(q); };
  return {static_cast<int64_t>(m(x.a, y.a) + m(x.b, y.c)), static_cast<int64_t>(m(x.a, y.b) + m(x.b, y.d)),
          static_cast<int64_t>(m(x.c, y.a) + m(x.d, y.c)), static_cast<int64_t>(m(x.c, y.b) + m(x.d, y.d))};
}
Mat2 mat_input(int r, size_t i) {
  const int64_t k = static_cast<int64_t>(i);
  return {1 + (r + k) % 3, (r * 7 + k) % 5 - 2, (r + 2 * k) % 4 - 1, 1 + (r * 3 + k) % 2};
}
// MPI's order: inout = in (op) inout.
void mat_fn(const void* in, void* inout, size_t n, void*) {
  const Mat2* x = static_cast<const Mat2*>(in);
  Mat2* y = static_cast<Mat2*>(inout);
  for (size_t i = 0; i < n; ++i) y[i] = mat_mul(x[i], y[i]);
}

class OrderKeeping : public ::testing::TestWithParam<size_t> {};

}  // namespace

// Every algorithm that keeps rank order, for real with a non-commutative user
// operator: every rank ends with the product of the ranks' matrices in rank
// order (the verifier proves the schedules; this runs the kernels too).
TEST_P(OrderKeeping, ANonCommutativeUserOperatorCombinesInRankOrder) {
  const AlgoSpec& spec = all_algorithms()[GetParam()];
  const CollectiveTraits& tr = traits(spec.collective);
  auto op = std::make_shared<UserOp>();
  op->fn = mat_fn;
  op->elem_bytes = sizeof(Mat2);
  op->commutative = false;
  for (const Shape& s : shapes()) {
    const Topology t = Topology::from_node_map(s.node_of, s.rails);
    const int N = t.nranks();
    Ranks ranks(t);
    for (size_t count : {size_t{1}, size_t{5}, size_t{40}}) {  // 40 x 32 B: striped over the rails
      AlgoOptions opts;
      opts.redop = ReduceOp::User;
      opts.elem_bytes = sizeof(Mat2);
      opts.commutative = false;
      opts.root = tr.rooted ? N - 1 : 0;
      const bool slices = tr.result == Result::ReducedSlice;
      const size_t in_count = slices ? count * N : count;
      std::vector<uint64_t> counts(N, count * sizeof(Mat2));
      std::vector<std::unique_ptr<Plan>> plans;
      std::vector<std::vector<Mat2>> send(N), recv(N);
      for (int r = 0; r < N; ++r) {
        plans.push_back(make_plan(t, r, spec.collective, spec.name, counts, opts, "user/" + std::to_string(count)));
        for (size_t i = 0; i < in_count; ++i) send[r].push_back(mat_input(r, i));
        recv[r].assign(count, Mat2{7, 7, 7, 7});
      }
      auto out = each_rank(N, [&](int r) { ranks.exec[r]->run(*plans[r], {send[r].data(), recv[r].data(), op}); });
      for (int r = 0; r < N; ++r) {
        ASSERT_EQ(out[r].status, Status::Ok) << s.name << ", rank " << r << ": " << out[r].error;
        if (tr.result_at_root_only && r != opts.root) continue;
        const int upto = tr.result == Result::Prefix ? r + 1 : tr.result == Result::ExclusivePrefix ? r : N;
        for (size_t i = 0; i < count; ++i) {
          Mat2 want{1, 0, 0, 1};
          for (int q = 0; q < upto; ++q) want = mat_mul(want, mat_input(q, slices ? r * count + i : i));
          if (upto == 0) want = Mat2{7, 7, 7, 7};  // exscan's rank 0: untouched
          ASSERT_TRUE(recv[r][i] == want) << s.name << ", " << count << " matrices, rank " << r << ", matrix " << i;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Executor, OrderKeeping, ::testing::ValuesIn([] {
                           std::vector<size_t> v;
                           for (size_t i = 0; i < all_algorithms().size(); ++i)
                             if (all_algorithms()[i].keeps_order && traits(all_algorithms()[i].collective).reducing)
                               v.push_back(i);
                           return v;
                         }()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           const AlgoSpec& a = all_algorithms()[info.param];
                           return std::string(collective_name(a.collective)) + "_" + a.name;
                         });
