// Shapes of the reduce-scatter and reduce schedules that their definitions fix
// (what crosses the network, where), and the verifier's result for them: a
// schedule that leaves a rank the wrong slice, or a slice not reduced over
// every rank, is rejected.
#include <gtest/gtest.h>

#include "core/errors.hpp"
#include "core/registry.hpp"
#include "verify/verifier.hpp"

using namespace railcoll;

namespace {

Schedule build(Collective coll, const std::string& algo, const Topology& t, uint64_t bytes, int root = 0) {
  AlgoOptions o = call_defaults(coll);
  o.root = root;
  return build_schedule(coll, algo, t, std::vector<uint64_t>(t.nranks(), bytes), o);
}

// Network bytes each rank sends (puts to another node).
std::vector<uint64_t> net_sent(const Schedule& s) {
  std::vector<uint64_t> out(s.topo.nranks(), 0);
  for (int r = 0; r < s.topo.nranks(); ++r)
    for (const Op& op : s.programs[r])
      if (op.kind == OpKind::Put && !s.topo.same_node(r, op.peer)) out[r] += op.bytes();
  return out;
}

// 4 nodes x 4 ranks, 2 rails, blocks of m: every node takes in the other
// nodes' partials of its blocks once (3 x 4 m), both rails alike.
void expect_partials_once_4x4(const Schedule& s, uint64_t m) {
  const ScheduleStats st = s.stats();
  EXPECT_EQ(st.max_net_bytes_recv_per_node, 3u * 4 * m);
  EXPECT_EQ(st.net_bytes, 4u * 3 * 4 * m);
  ASSERT_EQ(st.rail_bytes.size(), 2u);
  EXPECT_EQ(st.rail_bytes[0], st.rail_bytes[1]);
}

}  // namespace

// Every node receives the other nodes' partials of its own blocks, once: the
// collective's rail bound, on both rails alike.
TEST(ReduceScatter, SmpMovesEachNodeItsPartialsOnce) {
  const Topology t = Topology::from_ppn(16, 4, 2);
  const uint64_t m = 4096;
  for (Collective c : {Collective::ReduceScatterBlock, Collective::ReduceScatter}) {
    const ScheduleStats st = build(c, "smp", t, m).stats();
    EXPECT_EQ(st.max_net_bytes_recv_per_node, 3u * 4 * m);
    EXPECT_EQ(st.net_bytes, 4u * 3 * 4 * m);
    ASSERT_EQ(st.rail_bytes.size(), 2u);
    EXPECT_EQ(st.rail_bytes[0], st.rail_bytes[1]);
    EXPECT_EQ(st.comm_steps, 3);  // one other node per step
  }
}

// The ring crosses nodes only where a rank's right neighbour lives elsewhere.
TEST(ReduceScatter, RingSendsOneBlockPerStep) {
  const Topology t = Topology::from_ppn(12, 4, 2);
  const Schedule s = build(Collective::ReduceScatterBlock, "ring", t, 512);
  const auto sent = net_sent(s);
  for (int r = 0; r < 12; ++r) EXPECT_EQ(sent[r], r % 4 == 3 ? 11u * 512 : 0u) << r;
  EXPECT_EQ(s.stats().comm_steps, 11);
}

// The pipelined smp moves what smp moves (each node its partials, once, both
// rails alike), but in pieces of at most 256 KiB that the last rank of each
// node's chain sends as it finishes them: 4 MiB per node pair, 16 pieces each.
TEST(ReduceScatter, SmpPipelinedSendsEachPieceOnceFromTheChainsEnd) {
  const Topology t = Topology::from_ppn(16, 4, 2);
  const uint64_t m = 1 << 20;
  const Schedule s = build(Collective::ReduceScatterBlock, "smp_pipelined", t, m);
  expect_partials_once_4x4(s, m);
  for (int r = 0; r < 16; ++r) {
    int puts = 0;
    for (const Op& op : s.programs[r])
      if (op.kind == OpKind::Put) {
        ++puts;
        EXPECT_LE(op.bytes(), 256u * 1024) << r;
      }
    EXPECT_EQ(puts, t.local_rank(r) == 3 ? 3 * 16 : 0) << r;
  }
  const VerifyResult v = verify_schedule(s);
  EXPECT_TRUE(v.ok()) << (v.errors.empty() ? "" : v.errors[0]);
}

// A node counter per piece, yet within the runtime's 256 a call however long the
// blocks or many the nodes: long blocks get longer pieces.
TEST(ReduceScatter, SmpPipelinedStaysWithinTheNodeCounters) {
  for (auto [t, m] : {std::pair{Topology::from_ppn(16, 4, 2), uint64_t{16} << 20},
                      std::pair{Topology::from_ppn(64, 1, 2), uint64_t{4} << 20},
                      std::pair{Topology::from_ppn(96, 3, 2), uint64_t{1} << 20}}) {
    const Schedule s = build(Collective::ReduceScatterBlock, "smp_pipelined", t, m);
    EXPECT_LE(s.node_counters, 256) << t.nranks();
    EXPECT_EQ(s.stats().max_net_bytes_recv_per_node, uint64_t(t.nnodes() - 1) * t.node_size(0) * m) << t.nranks();
  }
}

// Pieces that span blocks, blocks that span pieces, empty blocks and nodes.
TEST(ReduceScatter, SmpPipelinedVerifiesWithPiecesAcrossBlocks) {
  const Topology t = Topology::from_node_sizes({3, 1, 4, 2}, 2);
  const std::vector<uint64_t> counts = {300000, 0, 4, 600004, 0, 0, 4, 262144, 262148, 40};
  AlgoOptions o = call_defaults(Collective::ReduceScatter);
  o.dtype = DataType::Int32;
  const Schedule s = build_schedule(Collective::ReduceScatter, "smp_pipelined", t, counts, o);
  EXPECT_EQ(s.recv_bytes, counts);
  const VerifyResult v = verify_schedule(s);
  EXPECT_TRUE(v.ok()) << (v.errors.empty() ? "" : v.errors[0]);
  const VerifyResult one_node = verify_schedule(
      build_schedule(Collective::ReduceScatter, "smp_pipelined", Topology::from_node_sizes({3}, 1), {4, 700000, 8}, o));
  EXPECT_TRUE(one_node.ok()) << (one_node.errors.empty() ? "" : one_node.errors[0]);
}

// smp_ring moves what smp_pipelined moves ((M-1) P m into and out of every
// node, both rails alike), but every node's puts go to the next node only, and
// after the first step each node's pieces leave from its ranks in turn.
TEST(ReduceScatter, SmpRingSendsOnlyToTheNextNode) {
  const Topology t = Topology::from_ppn(16, 4, 2);
  const uint64_t m = 1 << 20;
  const Schedule s = build(Collective::ReduceScatterBlock, "smp_ring", t, m);
  expect_partials_once_4x4(s, m);
  for (int r = 0; r < 16; ++r) {
    for (const Op& op : s.programs[r])
      if (op.kind == OpKind::Put) {
        EXPECT_EQ(t.node_of(op.peer), (t.node_of(r) + 1) % 4) << r;
        EXPECT_LE(op.bytes(), 256u * 1024) << r;
      }
    // The chain's last rank sends step 1 (16 pieces), every rank a quarter of steps 2-3.
    EXPECT_EQ(net_sent(s)[r], (t.local_rank(r) == 3 ? 4 * m : 0) + 2 * m) << r;
  }
  EXPECT_LE(s.node_counters, 256);
  const VerifyResult v = verify_schedule(s);
  EXPECT_TRUE(v.ok()) << (v.errors.empty() ? "" : v.errors[0]);
}

// Pieces across blocks, empty blocks and nodes, uneven nodes, ranks of a node
// not consecutive, one node, two nodes (the ring is then one step).
TEST(ReduceScatter, SmpRingVerifiesOnUnevenLayouts) {
  AlgoOptions o = call_defaults(Collective::ReduceScatter);
  o.dtype = DataType::Int32;
  const std::vector<std::pair<Topology, std::vector<uint64_t>>> cases = {
      {Topology::from_node_sizes({3, 1, 4, 2}, 2), {300000, 0, 4, 600004, 0, 0, 4, 262144, 262148, 40}},
      {Topology::from_node_map({0, 1, 0, 1, 2}, 3), {8, 1000000, 0, 12, 4}},
      {Topology::from_node_sizes({3}, 1), {4, 700000, 8}},
      {Topology::from_node_sizes({2, 2}, 2), {524288, 4, 0, 1048576}},
      {Topology::from_ppn(64, 1, 2), std::vector<uint64_t>(64, 4096)}};
  for (const auto& [t, counts] : cases) {
    const Schedule s = build_schedule(Collective::ReduceScatter, "smp_ring", t, counts, o);
    EXPECT_EQ(s.recv_bytes, counts) << t.describe();
    EXPECT_LE(s.node_counters, 256) << t.describe();
    const VerifyResult v = verify_schedule(s);
    EXPECT_TRUE(v.ok()) << t.describe() << ": " << (v.errors.empty() ? "" : v.errors[0]);
  }
}

// Recursive halving sends (p2-1)/p2 of the input in log2 p2 steps, then the blocks of
// the ranks folded in; with 16 ranks every rank sends 8 + 4 + 2 + 1 blocks.
TEST(ReduceScatter, RecursiveHalvingHalvesTheBlocks) {
  const Topology t = Topology::from_ppn(16, 1, 1);
  const Schedule s = build(Collective::ReduceScatterBlock, "recursive_halving", t, 100 * 4);
  for (int r = 0; r < 16; ++r) EXPECT_EQ(net_sent(s)[r], 15u * 400) << r;
  const Schedule odd = build(Collective::ReduceScatterBlock, "recursive_halving", Topology::from_ppn(6, 1, 1), 8);
  EXPECT_EQ(net_sent(odd)[0], 6u * 8);  // rank 0 folds its whole input into rank 1
  EXPECT_TRUE(verify_schedule(odd).ok());
}

// Direct: every partial straight to its owner, in one network step per k.
TEST(ReduceScatter, DirectPutsEveryPartialToItsOwner) {
  const Topology t = Topology::from_ppn(9, 1, 3);
  const Schedule s = build(Collective::ReduceScatterBlock, "direct", t, 64);
  EXPECT_EQ(s.stats().comm_steps, 3);  // 8 partials over 3 rails
  for (int r = 0; r < 9; ++r) EXPECT_EQ(net_sent(s)[r], 8u * 64);
}

// Per-rank counts, some zero, in every algorithm: each rank ends with its own slice.
TEST(ReduceScatter, UnevenCountsVerify) {
  const Topology t = Topology::from_node_sizes({3, 1, 4, 2}, 2);
  const std::vector<uint64_t> counts = {8, 0, 4, 12, 0, 0, 4, 40, 8, 4};
  for (const char* algo : {"ring", "recursive_halving", "direct", "smp", "smp_pipelined"}) {
    AlgoOptions o = call_defaults(Collective::ReduceScatter);
    o.dtype = DataType::Int32;
    const Schedule s = build_schedule(Collective::ReduceScatter, algo, t, counts, o);
    EXPECT_EQ(s.recv_bytes, counts) << algo;
    EXPECT_EQ(s.send_bytes, std::vector<uint64_t>(10, 80)) << algo;
    const VerifyResult v = verify_schedule(s);
    EXPECT_TRUE(v.ok()) << algo << ": " << (v.errors.empty() ? "" : v.errors[0]);
  }
  AlgoOptions o = call_defaults(Collective::ReduceScatter);
  o.dtype = DataType::Int32;
  EXPECT_THROW(build_schedule(Collective::ReduceScatter, "ring", t, {8, 0, 4, 12, 0, 0, 4, 40, 8, 6}, o),
               InputError);  // 6 bytes are not whole int32s
}

// The verifier's ReducedSlice: each rank's own slice, reduced over every rank.
TEST(ReduceScatter, VerifierRejectsAWrongSliceOrAMissingRank) {
  const Topology t = Topology::from_ppn(2, 1, 1);
  auto schedule = [&](bool swap_slices, bool reduce) {
    AlgoOptions o = call_defaults(Collective::ReduceScatterBlock);
    ScheduleBuilder b(Collective::ReduceScatterBlock, "hand", t, BlockLayout({4, 4}), o);
    for (int r = 0; r < 2; ++r) {
      const int mine = swap_slices ? 1 - r : r, peer = 1 - r;
      b.set_scratch(r, 4);
      b.copy(r, 0, {{b.send(r, 4 * mine, 4), b.recv(r, 0, 4)}});
      b.put(r, 0, peer, {{b.send(r, 4 * (swap_slices ? r : peer), 4), b.scratch(peer, 0, 4)}}, 0,
            b.rank_counter(peer, 0));
      b.wait(r, 0, b.rank_counter(r, 0), 1);
      if (reduce) b.reduce(r, 0, {{b.scratch(r, 0, 4), b.recv(r, 0, 4)}});
    }
    return b.finish();
  };
  EXPECT_TRUE(verify_schedule(schedule(false, true)).ok());
  const VerifyResult unreduced = verify_schedule(schedule(false, false));
  ASSERT_FALSE(unreduced.ok());
  EXPECT_NE(unreduced.errors[0].find("expected the reduction over all 2 ranks"), std::string::npos)
      << unreduced.errors[0];
  const VerifyResult swapped = verify_schedule(schedule(true, true));
  ASSERT_FALSE(swapped.ok());
  EXPECT_NE(swapped.errors[0].find("of elements from offset"), std::string::npos) << swapped.errors[0];
}

// Reduce: the root's node gets one slice per child of the tree's root; only the root's recv counts.
TEST(Reduce, SmpReducesSlicesAlongTheNodeTree) {
  const Topology t = Topology::from_ppn(16, 4, 2);
  const uint64_t m = 1 << 16;
  const Schedule s = build(Collective::Reduce, "smp", t, m, 6);
  EXPECT_EQ(s.stats().max_net_bytes_recv_per_node, 2 * m);  // 4 nodes: the root node has 2 children
  std::vector<uint64_t> recv(16, 0);
  recv[6] = m;
  EXPECT_EQ(s.recv_bytes, recv);
  for (const char* algo : {"binomial", "rabenseifner", "smp"})
    for (int root : {0, 5, 15}) {
      const VerifyResult v = verify_schedule(build(Collective::Reduce, algo, t, 4 * 1000 + 4, root));
      EXPECT_TRUE(v.ok()) << algo << " root " << root << ": " << (v.errors.empty() ? "" : v.errors[0]);
    }
}

// smp_chain: the rail bound's traffic. No node takes in more than the vector
// (the trees' root node takes in one per child), every node but the root's
// sends it once, in several pieces, and the pieces load both rails alike.
TEST(Reduce, SmpChainTakesInOneVectorPerNodeOnBothRails) {
  const Topology t = Topology::from_ppn(16, 4, 2);
  const uint64_t m = 1 << 20;
  for (int root : {0, 6, 15}) {
    const Schedule s = build(Collective::Reduce, "smp_chain", t, m, root);
    const ScheduleStats st = s.stats();
    EXPECT_LE(st.max_net_bytes_recv_per_node, m) << "root " << root;
    EXPECT_EQ(st.net_bytes, 3 * m) << "root " << root;  // 3 hops, the vector once each
    ASSERT_EQ(st.rail_bytes.size(), 2u);
    EXPECT_EQ(st.rail_bytes[0], st.rail_bytes[1]) << "root " << root;
    std::vector<uint64_t> node_sent(4, 0);
    uint64_t pieces = 0;
    for (int r = 0; r < 16; ++r)
      for (const Op& op : s.programs[r])
        if (op.kind == OpKind::Put && !t.same_node(r, op.peer)) node_sent[t.node_of(r)] += op.bytes(), ++pieces;
    for (int n = 0; n < 4; ++n) EXPECT_EQ(node_sent[n], n == t.node_of(root) ? 0 : m) << "node " << n;
    EXPECT_GT(pieces, 3u * 4) << "root " << root;  // pipelined: several pieces per hop
  }
  for (int root : {0, 5, 15}) {
    const VerifyResult v = verify_schedule(build(Collective::Reduce, "smp_chain", t, 4 * 1000 + 4, root));
    EXPECT_TRUE(v.ok()) << "root " << root << ": " << (v.errors.empty() ? "" : v.errors[0]);
  }
}

// Rabenseifner: every rank's chunk goes straight into the root's recv.
TEST(Reduce, RabenseifnerGathersChunksIntoTheRoot) {
  const Topology t = Topology::from_ppn(8, 1, 2);
  const Schedule s = build(Collective::Reduce, "rabenseifner", t, 8 * 4 * 10, 3);
  uint64_t into_root = 0;
  for (int r = 0; r < 8; ++r)
    for (const Op& op : s.programs[r])
      if (op.kind == OpKind::Put)
        for (auto& sg : op.segs)
          if (sg.dst.region == Region::Recv) {
            EXPECT_EQ(sg.dst.owner, 3);
            into_root += sg.dst.length;
          }
  EXPECT_EQ(into_root, 7u * 40);  // all chunks but the root's own
}

// In place (AlgoSpec::in_place_ok): the verifier run with send and recv as one
// buffer passes every algorithm that claims it, and catches the scans, which
// read their input after a partial result has landed on it, or while one lands
// (they are not marked, so an in-place scan's input is copied first).
TEST(InPlace, VerifierTellsSafeAlgorithmsFromUnsafeOnes) {
  int claimed = 0, caught = 0;
  for (const Topology& t : {Topology::from_ppn(8, 4, 2), Topology::from_node_sizes({3, 1, 2}, 2)})
    for (const auto& a : all_algorithms()) {
      const CollectiveTraits& c = traits(a.collective);
      if (c.result != Result::Reduction && c.result != Result::Prefix && c.result != Result::ExclusivePrefix) continue;
      const VerifyResult v = verify_schedule(build(a.collective, a.name, t, 4 * 1000), true);
      if (a.in_place_ok) {
        ++claimed;
        EXPECT_TRUE(v.ok()) << v.errors[0];
      } else if (c.result != Result::Reduction) {
        ++caught;
        ASSERT_FALSE(v.ok()) << c.name << "/" << a.name;
        const bool why = v.errors[0].find(" counted twice") != std::string::npos ||
                         v.errors[0].find("may still be reading it") != std::string::npos;
        EXPECT_TRUE(why) << v.errors[0];
      }
    }
  EXPECT_EQ(claimed, 2 * 9);  // every allreduce and reduce
  EXPECT_EQ(caught, 2 * 6);
}
