// The algorithm table that the algorithm files fill themselves: every file's
// registrar ran (a linker that dropped one would shorten the list), the order
// is the documented one, and build_schedule stamps what the builders no longer
// write.
#include <gtest/gtest.h>

#include <set>

#include "core/errors.hpp"
#include "core/registry.hpp"

using namespace railcoll;

TEST(Registry, EveryAlgorithmRegisteredInOrder) {
  // By collective in enum order, then each algorithm's `order`: what `railcoll
  // algos` prints. A new algorithm adds its line here.
  const std::vector<std::string> expected = {
      "allgather/direct", "allgather/stdex", "allgather/bruck", "allgather/ring",
      "allgather/recursive_doubling", "allgather/gather_bcast", "allgather/concurrent_exchange",
      "allgather/concurrent_exchange_split", "allgather/smp_gather_bcast", "allgather/smp_direct",
      "allgather/smp_bruck", "allgather/smp_multileader", "allgather/smp_multileader_paced",
      "barrier/dissemination", "barrier/smp", "barrier/tree", "barrier/hw_combining",
      "bcast/binomial", "bcast/scatter_allgather", "bcast/pipelined_chain", "bcast/smp", "bcast/hw_multicast",
      "gather/tree", "gather/direct", "gather/smp",
      "allreduce/recursive_doubling", "allreduce/ring", "allreduce/rabenseifner", "allreduce/smp",
      "allreduce/smp_leader",
      "reduce_scatter_block/ring", "reduce_scatter_block/recursive_halving", "reduce_scatter_block/direct",
      "reduce_scatter_block/smp", "reduce_scatter_block/smp_pipelined", "reduce_scatter_block/smp_ring",
      "reduce_scatter/ring", "reduce_scatter/recursive_halving", "reduce_scatter/direct", "reduce_scatter/smp",
      "reduce_scatter/smp_pipelined", "reduce_scatter/smp_ring",
      "reduce/binomial", "reduce/rabenseifner", "reduce/smp", "reduce/smp_chain",
      "alltoall/direct", "alltoall/bruck", "alltoall/concurrent_exchange", "alltoall/smp_multileader",
      "alltoallv/direct", "alltoallv/bruck", "alltoallv/concurrent_exchange", "alltoallv/smp_multileader",
      "scatter/binomial", "scatter/direct", "scatter/smp", "scatterv/binomial", "scatterv/direct", "scatterv/smp",
      "gatherv/direct", "gatherv/smp",
      "scan/linear", "scan/recursive_doubling", "scan/smp", "exscan/linear", "exscan/recursive_doubling",
      "exscan/smp"};
  std::vector<std::string> got;
  for (auto& a : all_algorithms()) got.push_back(std::string(collective_name(a.collective)) + "/" + a.name);
  EXPECT_EQ(got.size(), 68u);
  EXPECT_EQ(got, expected);
}

TEST(Registry, OrderIsUniqueWithinACollective) {
  std::set<std::pair<Collective, int>> seen;
  for (auto& a : all_algorithms()) {
    EXPECT_TRUE(seen.insert({a.collective, a.order}).second) << a.name << " shares its order " << a.order;
    EXPECT_TRUE(traits(a.collective).user_facing) << a.name;
    EXPECT_TRUE(a.summary && *a.summary && a.cost && *a.cost && a.source && *a.source) << a.name;
    EXPECT_NE(a.build, nullptr) << a.name;
  }
}

TEST(Registry, BuildStampsCollectiveAndName) {
  const Topology t = Topology::from_ppn(6, 2, 2);
  for (auto& a : all_algorithms()) {
    Schedule s = build_schedule(a.collective, a.name, t, std::vector<uint64_t>(6, 8), call_defaults(a.collective));
    EXPECT_EQ(s.collective, a.collective) << a.name;
    EXPECT_EQ(s.algorithm, a.name);
    EXPECT_EQ(s.programs.size(), 6u) << a.name;
  }
}

TEST(Registry, LookupAndNames) {
  EXPECT_NE(find_algorithm(Collective::Bcast, "binomial"), nullptr);
  EXPECT_EQ(find_algorithm(Collective::Gather, "binomial"), nullptr);  // names are per collective
  EXPECT_EQ(algorithm_names(Collective::Gather), "tree, direct, smp");
  EXPECT_THROW(AlgorithmRegistrar({Collective::Gather, 9, "tree", "x", "x", "x", {}, nullptr}), std::logic_error);
  EXPECT_EQ(algorithm_names(Collective::Gather), "tree, direct, smp");  // the duplicate was refused
}
