#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "core/topology.hpp"

using namespace railcoll;

TEST(Topology, PpnWithShortLastNode) {
  Topology t = Topology::from_ppn(10, 4, 2);
  EXPECT_EQ(t.nnodes(), 3);
  EXPECT_EQ(t.node_size(2), 2);
  EXPECT_EQ(t.node_of(9), 2);
  EXPECT_EQ(t.local_rank(9), 1);
  EXPECT_EQ(t.leader(1), 4);
  EXPECT_EQ(t.rails(), 2);
  EXPECT_FALSE(t.uniform());
  EXPECT_EQ(t.describe(), "10 ranks, nodes 4,4,2, 2 rails");
}

TEST(Topology, NodeSizes) {
  Topology t = Topology::from_node_sizes({4, 4, 5}, 1);
  EXPECT_EQ(t.nranks(), 13);
  EXPECT_EQ(t.ranks_of(2).front(), 8);
  EXPECT_EQ(t.ranks_of(2).back(), 12);
  EXPECT_EQ(t.node_sizes_string(), "4,4,5");
}

TEST(Topology, NodeMapRenumbersAndAllowsNonConsecutiveRanks) {
  Topology t = Topology::from_node_map({7, 3, 7, 3, 9}, 4);
  EXPECT_EQ(t.nnodes(), 3);
  EXPECT_EQ(t.node_of(0), 1);  // ids 3,7,9 -> 0,1,2
  EXPECT_EQ(t.node_of(1), 0);
  EXPECT_EQ(t.ranks_of(1), (std::vector<int>{0, 2}));
  EXPECT_EQ(t.local_rank(2), 1);
  EXPECT_TRUE(t.is_leader(1));
  EXPECT_FALSE(t.is_leader(3));
  EXPECT_EQ(t.closest_rail(3), 1);
  EXPECT_NE(t.describe().find("non-consecutive"), std::string::npos);
}

TEST(Topology, BadInputNamesTheProblem) {
  auto msg = [](auto f) {
    try {
      f();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(msg([] { Topology::from_ppn(0, 1, 1); }), "ranks must be at least 1 (got 0)");
  EXPECT_EQ(msg([] { Topology::from_ppn(4, 1, 0); }), "rails must be at least 1 (got 0)");
  EXPECT_EQ(msg([] { Topology::from_ppn(4, 0, 1); }), "ppn must be at least 1 (got 0)");
  EXPECT_EQ(msg([] { Topology::from_node_sizes({2, 0}, 1); }), "every node needs at least 1 rank (got 0)");
  EXPECT_EQ(msg([] { Topology::from_node_map({0, -1}, 1); }), "node ids must be non-negative (got -1)");
}
