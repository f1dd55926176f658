// Deliberately broken schedules: the verifier must reject each one, and say why.
#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "core/registry.hpp"
#include "verify/verifier.hpp"

using namespace railcoll;

namespace {

Schedule build(const std::string& algo, const Topology& t, uint64_t bytes = 4) {
  return build_schedule(Collective::Allgather, algo, t, std::vector<uint64_t>(t.nranks(), bytes), {});
}

// The first error, or "" when the schedule verifies.
std::string first_error(const Schedule& s) {
  VerifyResult v = verify_schedule(s);
  return v.ok() ? "" : v.errors[0];
}

int find_op(const Schedule& s, int rank, OpKind kind, int nth = 0) {
  for (size_t i = 0; i < s.programs[rank].size(); ++i)
    if (s.programs[rank][i].kind == kind && nth-- == 0) return static_cast<int>(i);
  return -1;
}

// Programs are stored encoded (core/schedule.hpp, Program): an edit changes a
// copy of a rank's ops and stores them again.
template <class F>
void edit(Schedule& s, int rank, F f) {
  std::vector<Op> ops = s.programs[rank].ops();
  f(ops);
  s.programs[rank] = Program(ops);
}
template <class F>
void edit_op(Schedule& s, int rank, int index, F f) {
  edit(s, rank, [&](std::vector<Op>& ops) { f(ops[index]); });
}
void erase_op(Schedule& s, int rank, int index) {
  edit(s, rank, [&](std::vector<Op>& ops) { ops.erase(ops.begin() + index); });
}

#define EXPECT_ERROR(schedule, text)                                           \
  do {                                                                         \
    std::string e_ = first_error(schedule);                                    \
    EXPECT_NE(e_.find(text), std::string::npos) << "error was: '" << e_ << "'"; \
  } while (0)

}  // namespace

TEST(Broken, ValidSchedulesPass) {
  Topology t = Topology::from_ppn(12, 3, 2);
  for (auto& a : all_algorithms())
    EXPECT_EQ(first_error(build_schedule(a.collective, a.name, t, std::vector<uint64_t>(12, 4), call_defaults(a.collective))), "") << a.name;
}

TEST(Broken, MissingWaitIsARace) {
  Schedule s = build("bruck", Topology::from_ppn(9, 1, 2));
  erase_op(s, 4, find_op(s, 4, OpKind::Wait, 0));
  // Rank 4 forwards step-0 data it was never told had arrived: in the verifier's
  // order the data is not there yet; in another it would be a race.
  std::string e = first_error(s);
  EXPECT_NE(e.find("rank 4 op #3 (step 1: put"), std::string::npos) << e;
  EXPECT_TRUE(e.find("before anything is written there") != std::string::npos ||
              e.find("may still be writing it") != std::string::npos)
      << e;
}

TEST(Broken, WaitThatCanNeverBeSatisfied) {
  Schedule s = build("direct", Topology::from_ppn(5, 1, 1));
  edit_op(s, 2, find_op(s, 2, OpKind::Wait), [](Op& op) { op.value = 5; });  // only 4 peers
  EXPECT_ERROR(s, "rank 2 op #");
  EXPECT_ERROR(s, "to reach 5 but it can never pass 4");
}

TEST(Broken, DeadlockOfTwoWaits) {
  Schedule s = build("ring", Topology::from_ppn(2, 1, 1));
  // Make both ranks wait before they put: nobody ever sends.
  for (int r = 0; r < 2; ++r) {
    int w = find_op(s, r, OpKind::Wait);
    edit(s, r, [&](std::vector<Op>& ops) {
      Op wait = ops[w];
      ops.erase(ops.begin() + w);
      ops.insert(ops.begin(), wait);
    });
  }
  EXPECT_ERROR(s, "can never pass 0");
}

TEST(Broken, WrongDestinationOffsetGivesWrongResult) {
  Schedule s = build("direct", Topology::from_ppn(4, 1, 1));
  // rank 1's block written where rank 0's belongs
  edit_op(s, 1, find_op(s, 1, OpKind::Put), [](Op& put) { put.segs[0].dst.offset = 0; });
  EXPECT_NE(first_error(s), "");
  std::string e = first_error(s);
  EXPECT_TRUE(e.find("expected bytes from offset 0 of rank") != std::string::npos ||
              e.find("may still be writing") != std::string::npos)
      << e;
}

TEST(Broken, DroppedPutLeavesBytesUnwritten) {
  Schedule s = build("direct", Topology::from_ppn(3, 1, 2));
  erase_op(s, 0, find_op(s, 0, OpKind::Put));  // rank 1 never gets block 0
  edit_op(s, 1, find_op(s, 1, OpKind::Wait), [](Op& op) { op.value = 1; });
  EXPECT_ERROR(s, "rank 1 ends with bytes never written at recv[0,4)");
}

TEST(Broken, SpanOutOfBounds) {
  Schedule s = build("direct", Topology::from_ppn(4, 1, 1));
  edit_op(s, 3, find_op(s, 3, OpKind::Put), [](Op& op) { op.segs[0].dst.offset = 14; });
  EXPECT_ERROR(s, "rank 3 op #");
  EXPECT_ERROR(s, "is out of bounds (size 16)");
}

TEST(Broken, SourceNotAddressable) {
  Schedule s = build("direct", Topology::from_ppn(4, 1, 1));
  // reads rank 2's send buffer
  edit_op(s, 3, find_op(s, 3, OpKind::Put), [](Op& op) { op.segs[0].src.owner = 2; });
  EXPECT_ERROR(s, "is not addressable by this rank");
}

TEST(Broken, WriteIntoSendBuffer) {
  Schedule s = build("direct", Topology::from_ppn(2, 1, 1));
  edit_op(s, 0, find_op(s, 0, OpKind::Put), [](Op& op) {
    op.segs[0].dst.region = Region::Send;
    op.segs[0].dst.offset = 0;
  });
  EXPECT_ERROR(s, "writes into a send buffer");
}

// One counter for all Bruck steps with cumulative waits: a faster peer's step-1
// message can satisfy the step-0 wait. The verifier must not accept it.
TEST(Broken, SharedCounterAcrossStepsIsAmbiguous) {
  Schedule s = build("bruck", Topology::from_ppn(9, 1, 2));
  for (int r = 0; r < s.topo.nranks(); ++r)
    edit(s, r, [](std::vector<Op>& ops) {
      uint64_t seen = 0;
      for (auto& op : ops) {
        if (op.kind == OpKind::Put) op.counter.index = 0;
        if (op.kind == OpKind::Wait) {
          op.counter.index = 0;
          seen += op.value;
          op.value = seen;
        }
      }
    });
  EXPECT_ERROR(s, "a message meant for a later wait could satisfy it early");
}

// The SMP algorithms end without a node-wide synchronization: a rank may return
// while a neighbour still copies out of the node's shared buffer, since the next
// call uses the other bank (docs/runtime.md, "Consecutive calls"). But a rank
// may not return while a message to it may still be landing there: its runtime
// receives it.
bool any_error(const Schedule& s, const std::string& a, const std::string& b) {
  for (const std::string& e : verify_schedule(s).errors)
    if (e.find(a) != std::string::npos && e.find(b) != std::string::npos) return true;
  return false;
}

TEST(Broken, SmpLeaderReturnsBeforeAMessageToItLands) {
  Schedule s = build("smp_direct", Topology::from_ppn(8, 4, 2), 64 * 1024);  // copy-out chunk by chunk
  EXPECT_EQ(first_error(s), "");
  edit(s, 0, [](std::vector<Op>& ops) {  // drop the leader's wait for node 1's chunk, and what follows
    while (ops.back().kind != OpKind::Wait) ops.pop_back();
    ops.pop_back();
  });
  EXPECT_TRUE(any_error(s, "rank 0 returns while rank 4", "(writing) may still write shared[")) << first_error(s);
}

// A leader's return ends its own puts' reads of the shared buffer (the runtime
// drains them before a call returns): no flush is needed for that.
TEST(Broken, SmpLeaderMayReturnWithItsPutsReading) {
  Schedule s = build("smp_direct", Topology::from_ppn(8, 4, 2));
  edit(s, 0, [](std::vector<Op>& ops) {
    for (size_t i = ops.size(); i-- > 0;)
      if (ops[i].kind == OpKind::Flush) ops.erase(ops.begin() + i);
  });
  EXPECT_EQ(first_error(s), "");
}

// Overwriting a buffer that an earlier put may still be reading.
TEST(Broken, OverwriteWhilePeerReads) {
  Schedule s = build("ring", Topology::from_ppn(3, 1, 1));
  // Rank 0: after its step-1 put (which reads recv), copy its send block over that recv range.
  int put = find_op(s, 0, OpKind::Put, 1);
  edit(s, 0, [&](std::vector<Op>& ops) {
    Op copy;
    copy.kind = OpKind::Copy;
    copy.step = 1;
    Span src = {Region::Send, 0, 0, 4}, dst = ops[put].segs[0].src;
    copy.segs = {{src, dst}};
    ops.insert(ops.begin() + put + 1, copy);
  });
  EXPECT_ERROR(s, "overwrites recv[");
  EXPECT_ERROR(s, "(reading) may still be reading it");
}

// A barrier whose last step is dropped lets a rank leave before all arrived.
TEST(Broken, BarrierWithoutLastRound) {
  Topology t = Topology::from_ppn(8, 1, 1);
  Schedule s = build_schedule(Collective::Barrier, "dissemination", t, std::vector<uint64_t>(8, 0), {});
  for (int r = 0; r < 8; ++r)  // drop the last put and wait
    edit(s, r, [](std::vector<Op>& ops) { ops.resize(ops.size() - 2); });
  EXPECT_ERROR(s, "may leave the barrier before rank");
}

TEST(Broken, WaitOnSomeoneElsesCounter) {
  Schedule s = build("direct", Topology::from_ppn(3, 1, 1));
  edit_op(s, 1, find_op(s, 1, OpKind::Wait), [](Op& op) { op.counter.owner = 2; });
  EXPECT_ERROR(s, "waits on a counter of another rank or node");
}

namespace {
Schedule build_rooted(Collective coll, const std::string& algo, const Topology& t, uint64_t bytes, int root) {
  AlgoOptions o;
  o.root = root;
  return build_schedule(coll, algo, t, std::vector<uint64_t>(t.nranks(), bytes), o);
}
}  // namespace

// A broadcast that never sends one rank its copy: the root's last binomial put
// (to relative rank 1) and that rank's wait are gone.
TEST(Broken, BcastMissingARank) {
  Schedule s = build_rooted(Collective::Bcast, "binomial", Topology::from_ppn(8, 1, 2), 64, 3);
  erase_op(s, 3, find_op(s, 3, OpKind::Put, 2));
  erase_op(s, 4, find_op(s, 4, OpKind::Wait));
  EXPECT_ERROR(s, "rank 4 ends with bytes never written at recv[0,64); expected bytes from offset 0 of rank 3");
}

// A pipelined broadcast that writes one chunk over another: two puts of one
// rank write the same bytes with nothing ordering them.
TEST(Broken, BcastChunkAtWrongOffset) {
  AlgoOptions o;
  o.stripe_threshold = 1 << 30;
  Schedule s = build_schedule(Collective::Bcast, "pipelined_chain", Topology::from_ppn(12, 1, 2),
                              std::vector<uint64_t>(12, 64 * 1024), o);
  // rank 10 -> 11, chunk 1, over chunk 0
  edit_op(s, 10, find_op(s, 10, OpKind::Put, 1), [](Op& last) { last.segs[0].dst.offset = 0; });
  EXPECT_ERROR(s, "rank 10 op #3 (step 11: put -> 11, rail 1, 5461 B): writes recv[0,5461) of rank 11 while");
  EXPECT_ERROR(s, "may still be writing it");
}

// An SMP broadcast's leader that leaves before the last chunk to it has landed.
TEST(Broken, BcastSmpLeaderLeavesBeforeTheLastChunk) {
  // 1 MiB: the chunked chain through the node-shared buffers (short messages skip them)
  Schedule s = build_rooted(Collective::Bcast, "smp", Topology::from_ppn(8, 4, 2), 1 << 20, 1);
  EXPECT_EQ(first_error(s), "");
  edit(s, 4, [](std::vector<Op>& ops) {  // node 1's leader: drop its last wait and what follows
    while (ops.back().kind != OpKind::Wait) ops.pop_back();
    ops.pop_back();
  });
  EXPECT_TRUE(any_error(s, "rank 4 returns while rank 1", "(writing) may still write shared[")) << first_error(s);
}

// A gather missing one rank's block: rank 0's put is gone and the root waits
// for one arrival fewer.
TEST(Broken, GatherMissingABlock) {
  Schedule s = build_rooted(Collective::Gather, "direct", Topology::from_ppn(4, 1, 2), 4, 2);
  erase_op(s, 0, find_op(s, 0, OpKind::Put));
  edit_op(s, 2, find_op(s, 2, OpKind::Wait), [](Op& op) { op.value = 2; });
  EXPECT_ERROR(s, "rank 2 ends with bytes never written at recv[0,4); expected bytes from offset 0 of rank 0");
}

// A gather tree whose inner rank forwards its subtree before its children's
// blocks are in.
TEST(Broken, GatherTreeForwardsBeforeChildren) {
  Schedule s = build_rooted(Collective::Gather, "tree", Topology::from_ppn(8, 1, 1), 4, 0);
  erase_op(s, 4, find_op(s, 4, OpKind::Wait));  // rank 4 collects ranks 5..7
  std::string e = first_error(s);
  EXPECT_NE(e.find("rank 4 op #"), std::string::npos) << e;
  EXPECT_TRUE(e.find("before anything is written there") != std::string::npos ||
              e.find("may still be writing it") != std::string::npos)
      << e;
}

namespace {
Schedule build_allreduce(const std::string& algo, const Topology& t, uint64_t bytes) {
  AlgoOptions o;
  o.dtype = DataType::Int32;
  return build_schedule(Collective::Allreduce, algo, t, std::vector<uint64_t>(t.nranks(), bytes), o);
}
}  // namespace

// A rank that combines the same partner data twice would double its share of the sum.
TEST(Broken, AllreduceCountsARankTwice) {
  Schedule s = build_allreduce("recursive_doubling", Topology::from_ppn(4, 1, 1), 16);
  int i = find_op(s, 1, OpKind::Reduce);
  edit(s, 1, [&](std::vector<Op>& ops) { ops.insert(ops.begin() + i + 1, ops[i]); });
  EXPECT_ERROR(s, "rank 1 op #");
  EXPECT_ERROR(s, "a rank's contribution counted twice");
}

// A missing combine leaves a rank with a partial result.
TEST(Broken, AllreduceMissingACombine) {
  Schedule s = build_allreduce("recursive_doubling", Topology::from_ppn(4, 1, 1), 16);
  erase_op(s, 2, find_op(s, 2, OpKind::ReduceBefore, 0));  // the combine with rank 0's pair
  EXPECT_ERROR(s, "expected the reduction over all 4 ranks of elements from offset 0");
}

// Combining element i of one vector with element j of another is wrong even if
// every rank is counted once.
TEST(Broken, AllreduceCombinesDifferentElements) {
  Schedule s = build_allreduce("recursive_doubling", Topology::from_ppn(2, 1, 1), 16);
  edit_op(s, 0, find_op(s, 0, OpKind::Reduce), [](Op& r) {
    r.segs[0].src.offset += 4;
    r.segs[0].src.length -= 4;
    r.segs[0].dst.length -= 4;
  });
  EXPECT_ERROR(s, "combines elements at offset 0 with elements at offset 4");
}

// alltoall(v): a block delivered to the right rank at the wrong place (the
// source order of recv), or taken from the wrong block of the sender's send.
TEST(Broken, AlltoallBlockFromTheWrongPlace) {
  const Topology t = Topology::from_ppn(4, 2, 2);
  Schedule s = build_schedule(Collective::Alltoallv, "direct", t, std::vector<uint64_t>(4, 8), {});
  // Rank 0's first put (to rank 1): read its block for rank 2 instead.
  edit_op(s, 0, find_op(s, 0, OpKind::Put, 0), [](Op& op) { op.segs[0].src.offset = 16; });
  EXPECT_ERROR(s, "expected bytes from offset 8 of rank 0");
  Schedule m = build_schedule(Collective::Alltoall, "bruck", t, std::vector<uint64_t>(4, 8), {});
  // A put of the last stage lands one block later in its destination's recv.
  const int last = find_op(m, 1, OpKind::Put, 1);
  edit_op(m, 1, last, [](Op& op) { op.segs[0].dst.offset = (op.segs[0].dst.offset + 8) % 32; });
  EXPECT_NE(first_error(m), "");
}

// scatter(v): rank r must end with block r of the root's send, not another's.
TEST(Broken, ScatterWrongBlock) {
  const Topology t = Topology::from_ppn(5, 1, 1);
  AlgoOptions o;
  o.root = 2;
  Schedule s = build_schedule(Collective::Scatterv, "direct", t, {3, 4, 5, 6, 7}, o);
  const int put = find_op(s, 2, OpKind::Put, 0);  // to rank 3: 6 bytes at offset 12
  edit_op(s, 2, put, [](Op& op) { op.segs[0].src.offset = 0; });
  EXPECT_ERROR(s, "expected bytes from offset 12 of rank 2");
}

// ---- rank order: non-commutative operators and prefix reductions ----

namespace {
AlgoOptions ordered_user_op(uint32_t elem) {
  AlgoOptions o;
  o.redop = ReduceOp::User;
  o.elem_bytes = elem;
  o.commutative = false;
  return o;
}
Schedule build_ordered(Collective c, const std::string& algo, const Topology& t, uint64_t elems = 3) {
  return build_schedule(c, algo, t, std::vector<uint64_t>(t.nranks(), elems * 12), ordered_user_op(12));
}
// Every combination on `rank` with its operands swapped.
void flip_combines(Schedule& s, int rank) {
  edit(s, rank, [](std::vector<Op>& ops) {
    for (Op& op : ops)
      if (op.kind == OpKind::Reduce || op.kind == OpKind::ReduceBefore)
        op.kind = op.kind == OpKind::Reduce ? OpKind::ReduceBefore : OpKind::Reduce;
  });
}
}  // namespace

// With a non-commutative operator, combining the right operands on the wrong
// side is wrong even though every rank is counted once; with a commutative
// one the same schedule is right.
TEST(Broken, NonCommutativeOperandsOnTheWrongSide) {
  const Topology t = Topology::from_ppn(5, 1, 1);
  for (auto [c, algo] : std::vector<std::pair<Collective, std::string>>{
           {Collective::Allreduce, "recursive_doubling"}, {Collective::Scan, "recursive_doubling"},
           {Collective::Exscan, "smp"}, {Collective::ReduceScatterBlock, "direct"}, {Collective::Reduce, "binomial"},
           {Collective::Scan, "linear"}}) {
    Schedule s = build_ordered(c, algo, t);
    EXPECT_EQ(first_error(s), "") << algo;
    flip_combines(s, 2);
    EXPECT_ERROR(s, "in rank order");
    s.commutative = true;
    EXPECT_EQ(first_error(s), "") << collective_name(c) << "/" << algo << " commutative";
  }
}

// An algorithm that does not keep rank order cannot be built for a
// non-commutative operator: selection passes over it, a named one fails.
TEST(Broken, NonCommutativeNeedsAnOrderKeepingAlgorithm) {
  const Topology t = Topology::from_ppn(6, 2, 2);
  for (auto [c, algo] : std::vector<std::pair<Collective, std::string>>{
           {Collective::Allreduce, "ring"}, {Collective::Allreduce, "smp_leader"},
           {Collective::ReduceScatter, "recursive_halving"}, {Collective::Reduce, "smp"}}) {
    try {
      build_ordered(c, algo, t);
      ADD_FAILURE() << algo << " was built";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("does not combine in rank order"), std::string::npos) << e.what();
    }
  }
}

// exscan: rank 0 receives nothing; a schedule that writes its recv is wrong.
TEST(Broken, ExscanWritesRankZero) {
  const Topology t = Topology::from_ppn(4, 2, 1);
  AlgoOptions o = call_defaults(Collective::Exscan);
  Schedule s = build_schedule(Collective::Exscan, "linear", t, std::vector<uint64_t>(4, 8), o);
  EXPECT_EQ(first_error(s), "");
  edit(s, 0, [](std::vector<Op>& ops) {
    Op copy;
    copy.kind = OpKind::Copy;
    copy.segs = {{Span{Region::Send, 0, 0, 8}, Span{Region::Recv, 0, 0, 8}}};
    ops.insert(ops.begin(), copy);
  });
  EXPECT_ERROR(s, "rank 0 writes its recv");
}

// scan: a rank that misses a lower rank's vector holds a wrong prefix.
TEST(Broken, ScanMissesARank) {
  const Topology t = Topology::from_ppn(4, 1, 1);
  Schedule s = build_schedule(Collective::Scan, "linear", t, std::vector<uint64_t>(4, 8), call_defaults(Collective::Scan));
  erase_op(s, 2, find_op(s, 2, OpKind::Reduce, 0));  // rank 2 never adds its own: holds 0..1
  EXPECT_ERROR(s, "expected the reduction over ranks 0..2");
}
