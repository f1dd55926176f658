// A job on one node: the SMP algorithms' flat schedules (algos/common/one_node.hpp,
// and the one-node cases of smp_direct and the smp barrier). Every rank copies
// in, waits once for the node (nobody relays: no leader, no chain) and takes
// its result; nothing goes through a local socket. Checked on the schedules,
// for the sizes `auto` runs them at, and verified.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/registry.hpp"
#include "select/select.hpp"
#include "verify/verifier.hpp"

using namespace railcoll;

namespace {

struct Case {
  Collective coll;
  const char* algorithm;
  uint64_t bytes;
  int root;
};

Schedule build(const Case& c, const Topology& t) {
  AlgoOptions o;
  o.root = std::min(c.root, t.nranks() - 1);
  if (traits(c.coll).reducing) o.dtype = DataType::Float32;
  return build_schedule(c.coll, c.algorithm, t, std::vector<uint64_t>(t.nranks(), c.bytes), o);
}

}  // namespace

TEST(OneNode, EveryRankWaitsOnceForTheWholeNodeAndNoFrameIsSent) {
  const Case cases[] = {
      {Collective::Allgather, "smp_direct", 8, 0},
      {Collective::Barrier, "smp", 0, 0},
      {Collective::Allreduce, "smp_leader", 64, 0},
      {Collective::Reduce, "smp", 4096, 3},
      {Collective::ReduceScatterBlock, "smp_pipelined", 512, 0},
      {Collective::Alltoall, "smp_multileader", 4096, 0},
  };
  for (int P : {2, 5, 8}) {
    const Topology t = Topology::from_ppn(P, P, 2);
    for (const Case& c : cases) {
      const std::string what = std::string(collective_name(c.coll)) + "/" + c.algorithm + " on " + std::to_string(P);
      const Schedule s = build(c, t);
      EXPECT_TRUE(verify_schedule(s).ok()) << what;
      for (int r = 0; r < P; ++r) {
        int waits = 0;
        for (const Op& op : s.programs[r]) {
          EXPECT_NE(op.kind, OpKind::Put) << what << ": rank " << r << " sends a frame";
          if (op.kind != OpKind::Wait) continue;
          ++waits;
          EXPECT_TRUE(op.counter.on_node) << what;
          EXPECT_EQ(op.value, static_cast<uint64_t>(P)) << what << ": rank " << r << " waits for a relay";
        }
        // A reduce's ranks but the root leave once their input is in.
        const int expected = c.coll == Collective::Reduce && r != std::min(c.root, P - 1) ? 0 : 1;
        EXPECT_EQ(waits, expected) << what << ": rank " << r;
      }
    }
  }
}

TEST(OneNode, AutoReducesThroughSharedMemoryOnOneNodeOnly) {
  EXPECT_EQ(select_algorithm(Collective::Reduce, Topology::from_ppn(8, 8, 2), 8), "smp");
  EXPECT_EQ(select_algorithm(Collective::Reduce, Topology::from_ppn(8, 8, 2), 4096), "smp");
  EXPECT_EQ(select_algorithm(Collective::Reduce, Topology::from_ppn(8, 8, 2), 8192), "binomial");
  EXPECT_EQ(select_algorithm(Collective::Reduce, Topology::from_ppn(8, 4, 2), 8), "binomial");
}

// Above the flat form's sizes the algorithms keep their own (relayed) form.
TEST(OneNode, LargeCallsKeepTheirOwnForm) {
  const Topology t = Topology::from_ppn(8, 8, 2);
  const Schedule s = build({Collective::Allreduce, "smp_leader", 64 * 1024, 0}, t);
  EXPECT_TRUE(verify_schedule(s).ok());
  int waits_for_one = 0;
  for (int r = 1; r < 8; ++r)
    for (const Op& op : s.programs[r])
      if (op.kind == OpKind::Wait && op.value == 1) ++waits_for_one;
  EXPECT_EQ(waits_for_one, 7);  // the leader's result
}
