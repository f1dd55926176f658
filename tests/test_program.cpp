// A Program stores its ops encoded (core/schedule.hpp): every op must come back
// exactly as it went in, also with values no algorithm emits (the verifier and
// the tests that break schedules rely on that).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "core/schedule.hpp"

using namespace railcoll;

namespace {

void expect_same(const Op& a, const Op& b) {
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.peer, b.peer);
  EXPECT_EQ(a.rail, b.rail);
  EXPECT_EQ(a.hw, b.hw);
  EXPECT_TRUE(a.counter == b.counter);
  EXPECT_EQ(a.value, b.value);
  ASSERT_EQ(a.segs.size(), b.segs.size());
  for (size_t i = 0; i < a.segs.size(); ++i)
    for (auto [x, y] : {std::pair{a.segs[i].src, b.segs[i].src}, std::pair{a.segs[i].dst, b.segs[i].dst}}) {
      EXPECT_EQ(x.region, y.region);
      EXPECT_EQ(x.owner, y.owner);
      EXPECT_EQ(x.offset, y.offset);
      EXPECT_EQ(x.length, y.length);
    }
}

std::vector<Op> unusual_ops() {
  const int32_t imin = std::numeric_limits<int32_t>::min(), imax = std::numeric_limits<int32_t>::max();
  const uint64_t umax = std::numeric_limits<uint64_t>::max();
  std::vector<Op> ops(1);  // all defaults
  Op put;
  put.kind = OpKind::Put;
  put.step = imax;
  put.peer = 5;
  put.rail = kStripe;
  put.hw = HwAssist::Multicast;
  put.counter = {true, imin, imax};
  put.segs.push_back({{Region::Shared, -3, uint64_t{1} << 48, umax}, {Region::Recv, 5, 0, 7}});  // dst at the peer
  put.segs.push_back({{Region::Scratch, 9, 127, 128}, {Region::Scratch, 9, 16383, 128}});      // dst at the source
  put.segs.push_back({{static_cast<Region>(200), 1, 0, 0}, {Region::Send, imin, umax, 1}});    // regions unpacked
  ops.push_back(put);
  put.counter = {false, 5, 0};  // at the peer
  put.segs = {};
  ops.push_back(put);
  Op wait;
  wait.kind = OpKind::Wait;
  wait.step = imin;
  wait.counter = {false, 0, -1};
  wait.value = umax;
  ops.push_back(wait);
  Op odd;
  odd.kind = static_cast<OpKind>(42);  // a kind this build does not know
  odd.hw = static_cast<HwAssist>(255);
  odd.peer = imin;
  odd.rail = imax;
  ops.push_back(odd);
  return ops;
}

}  // namespace

TEST(Program, EveryFieldRoundTrips) {
  const std::vector<Op> ops = unusual_ops();
  Program p(ops);
  ASSERT_EQ(p.size(), ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    SCOPED_TRACE(i);
    expect_same(p[i], ops[i]);
    EXPECT_EQ(p.kind(i), ops[i].kind);
    EXPECT_EQ(p.hw(i), ops[i].hw);
  }
  std::vector<Op> again = p.ops();
  ASSERT_EQ(again.size(), ops.size());
  for (size_t i = 0; i < ops.size(); ++i) expect_same(again[i], ops[i]);
}

// The simulator reads a program by place: each op ends where the next begins.
TEST(Program, ReadingInOrderMatchesTheIndex) {
  std::vector<Op> ops = unusual_ops();
  Program p;
  for (int n = 0; n < 1000; ++n)  // enough to grow the storage several times
    for (const Op& op : ops) p.push_back(op);
  const uint8_t* at = p.at(0);
  Op op;
  for (size_t i = 0; i < p.size(); ++i) {
    ASSERT_EQ(at, p.at(i));
    EXPECT_EQ(Program::kind(at), p.kind(i));
    at = Program::decode(at, &op);
  }
  EXPECT_EQ(at, p.at(p.size()));
  size_t i = 0;
  for (const Op& x : p) expect_same(x, ops[i++ % ops.size()]);
  EXPECT_EQ(i, p.size());
}
