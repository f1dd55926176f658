// Shapes of the broadcast, gather and barrier schedules that the seeds and the
// algorithms' definitions fix, checked on the schedules (as test_paper_figures
// does for the all-gathers), and the selection rules around them.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/registry.hpp"
#include "select/select.hpp"
#include "verify/verifier.hpp"

using namespace railcoll;

namespace {

Schedule build(Collective coll, const std::string& algo, const Topology& t, uint64_t bytes, int root = 0,
               uint64_t stripe_threshold = 1024) {
  AlgoOptions o;
  o.root = root;
  o.stripe_threshold = stripe_threshold;
  return build_schedule(coll, algo, t, std::vector<uint64_t>(t.nranks(), bytes), o);
}

std::vector<Op> puts_of(const Schedule& s, int rank) {
  std::vector<Op> out;
  for (auto& op : s.programs[rank])
    if (op.kind == OpKind::Put) out.push_back(op);
  return out;
}

// Bytes that puts write into each rank's recv, over all senders.
std::map<int, uint64_t> received(const Schedule& s) {
  std::map<int, uint64_t> out;
  for (auto& prog : s.programs)
    for (auto& op : prog)
      if (op.kind == OpKind::Put)
        for (auto& sg : op.segs)
          if (sg.dst.region == Region::Recv) out[sg.dst.owner] += sg.dst.length;
  return out;
}

}  // namespace

// Binomial broadcast on 8 ranks: 3 steps, 7 messages, the root sends 3 (to
// relative ranks 4, 2, 1 in that order), whatever the root.
TEST(Bcast, Binomial8Ranks) {
  for (int root : {0, 3}) {
    Schedule s = build(Collective::Bcast, "binomial", Topology::from_ppn(8, 1, 2), 64, root);
    auto st = s.stats();
    EXPECT_EQ(st.comm_steps, 3);
    EXPECT_EQ(st.messages, 7u);
    auto p = puts_of(s, root);
    ASSERT_EQ(p.size(), 3u);
    EXPECT_EQ(p[0].peer, (root + 4) % 8);
    EXPECT_EQ(p[1].peer, (root + 2) % 8);
    EXPECT_EQ(p[2].peer, (root + 1) % 8);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(p[i].rail, i % 2);  // step s on rail s mod k
    EXPECT_TRUE(verify_schedule(s).ok());
  }
}

// van de Geijn: no rank receives a byte twice or a byte of the message it
// already has: every non-root rank receives exactly m, the root nothing.
TEST(Bcast, ScatterAllgatherReceivesEachByteOnce) {
  for (int N : {2, 5, 8, 13}) {
    Schedule s = build(Collective::Bcast, "scatter_allgather", Topology::from_ppn(N, 1, 2), 1000, N - 1);
    auto got = received(s);
    for (int r = 0; r < N; ++r) EXPECT_EQ(got[r], r == N - 1 ? 0u : 1000u) << "N " << N << " rank " << r;
    // Scatter: the root sends ceil(log2 N) subtrees, halving.
    auto root_puts = puts_of(s, N - 1);
    EXPECT_GE(root_puts.size(), 1u);
    EXPECT_TRUE(verify_schedule(s).ok());
  }
}

// The chunk rule: C = floor(sqrt((N-2) m / (k 2 KiB))), at most 64; chunk c on
// rail c mod k when not striped; N-2+C communication steps.
TEST(Bcast, PipelinedChainChunksAndRails) {
  Topology t = Topology::from_ppn(10, 1, 2);
  Schedule s = build(Collective::Bcast, "pipelined_chain", t, 256 * 1024, 0, 1ull << 30);
  auto p = puts_of(s, 0);
  int chunks = static_cast<int>(p.size());
  EXPECT_EQ(chunks, 22);  // floor(sqrt(8 * 262144 / (2 * 2048))) = floor(22.6)
  for (int c = 0; c < chunks; ++c) {
    EXPECT_EQ(p[c].rail, c % 2);
    EXPECT_EQ(p[c].peer, 1);
  }
  EXPECT_EQ(s.stats().comm_steps, 10 - 2 + chunks);
  EXPECT_EQ(s.stats().messages, static_cast<uint64_t>(9 * chunks));
  // Short messages: one chunk, a plain chain.
  EXPECT_EQ(puts_of(build(Collective::Bcast, "pipelined_chain", t, 64), 0).size(), 1u);
  // Node-major chain: from the root through its node, then node by node.
  Schedule n = build(Collective::Bcast, "pipelined_chain", Topology::from_node_map({0, 1, 0, 1, 0, 1}, 1), 8, 3);
  EXPECT_EQ(puts_of(n, 3)[0].peer, 1);  // root 3 is on node 1 with ranks 1 and 5
  EXPECT_EQ(puts_of(n, 1)[0].peer, 5);
  EXPECT_EQ(puts_of(n, 5)[0].peer, 0);  // then node 0: 0, 2, 4
  EXPECT_TRUE(verify_schedule(n).ok());
}

// SMP broadcast on four 4-way nodes, 2 rails (seed 001's cluster), root 5 on
// node 1: only the root and node leaders use the network, and every other node
// receives the message once, into its shared buffer. A short message takes the
// 3-nomial tree of nodes (the root sends to nodes 2 and 3 at once, one per rail,
// then to node 0); a long one a chain of nodes 1 -> 2 -> 3 -> 0 with chunks
// striped over both rails.
TEST(Bcast, SmpOnFour4WayNodes) {
  Topology t = Topology::from_ppn(16, 4, 2);
  for (uint64_t m : {256ull, 1ull << 20}) {
    Schedule s = build(Collective::Bcast, "smp", t, m, 5);
    EXPECT_EQ(s.stats().net_bytes, 3 * m) << m;
    EXPECT_TRUE(verify_schedule(s).ok());
  }
  // Short: a (k+1)-nomial tree of node leaders into the nodes' shared buffers,
  // which every local rank copies out of; no message to a local rank.
  Schedule small = build(Collective::Bcast, "smp", t, 256, 5);
  EXPECT_EQ(small.shared_bytes[1], 256u);
  auto p = puts_of(small, 5);
  ASSERT_EQ(p.size(), 3u);  // the tree edges: 8, 12 in round 0; 0 in round 1
  EXPECT_EQ(p[0].peer, 8);
  EXPECT_EQ(p[1].peer, 12);
  EXPECT_EQ(p[2].peer, 0);
  EXPECT_NE(p[0].rail, p[1].rail);
  EXPECT_EQ(p[1].step, 0);
  EXPECT_EQ(p[2].step, 1);
  for (int r = 0; r < 16; ++r)
    for (auto& op : puts_of(small, r)) EXPECT_FALSE(t.same_node(r, op.peer));
  // Long: a chain of nodes through the node-shared buffers, chunks striped.
  Schedule large = build(Collective::Bcast, "smp", t, 1 << 20, 5);
  for (int r = 0; r < 16; ++r)
    for (auto& op : puts_of(large, r)) EXPECT_EQ(op.segs[0].dst.region, Region::Shared);
  auto st = large.stats();
  EXPECT_LE(st.rail_bytes[0] - st.rail_bytes[1], 100u);  // striped: even up to a byte a part
  EXPECT_EQ(puts_of(large, 5).size(), 22u);  // floor(sqrt(2 * 1 MiB / (2 * 2 KiB))) chunks
  EXPECT_EQ(puts_of(large, 5)[0].peer, 8);
  EXPECT_EQ(puts_of(large, 8)[0].peer, 12);
  EXPECT_EQ(puts_of(large, 12)[0].peer, 0);
}

// One flagged injection: N-1 consecutive puts from the root, same source span.
TEST(Bcast, HwMulticastIsOneFlaggedInjection) {
  Schedule s = build(Collective::Bcast, "hw_multicast", Topology::from_ppn(12, 4, 2), 100, 7);
  const auto& prog = s.programs[7];
  ASSERT_EQ(prog.size(), 11u);
  for (auto& op : prog) {
    EXPECT_EQ(op.kind, OpKind::Put);
    EXPECT_EQ(op.hw, HwAssist::Multicast);
    EXPECT_EQ(op.rail, prog[0].rail);
    ASSERT_EQ(op.segs.size(), 1u);
    EXPECT_EQ(op.segs[0].src.region, Region::Send);
    EXPECT_EQ(op.segs[0].src.offset, 0u);
    EXPECT_EQ(op.segs[0].src.length, 100u);
  }
  EXPECT_TRUE(verify_schedule(s).ok());
}

// Binomial gather to root 5 of 8: 3 steps, 7 messages, the root receives 3,
// whose blocks land at their final offsets: relative rank 4's subtree (ranks
// 1..4) as one segment, relative rank 2's (ranks 7 and 0) as two, wrapping.
TEST(Gather, Tree8Ranks) {
  Schedule s = build(Collective::Gather, "tree", Topology::from_ppn(8, 1, 1), 10, 5);
  auto st = s.stats();
  EXPECT_EQ(st.comm_steps, 3);
  EXPECT_EQ(st.messages, 7u);
  EXPECT_EQ(received(s)[5], 70u);
  int into_root = 0;
  for (auto& prog : s.programs)
    for (auto& op : prog)
      if (op.kind == OpKind::Put && op.peer == 5) ++into_root;
  EXPECT_EQ(into_root, 3);
  // Relative rank 4 (rank 1) sends relative 4..7 = ranks 1..4: one segment at recv[10,50).
  auto p = puts_of(s, 1);
  ASSERT_EQ(p.size(), 1u);
  ASSERT_EQ(p[0].segs.size(), 1u);
  EXPECT_EQ(p[0].segs[0].dst.offset, 10u);
  EXPECT_EQ(p[0].segs[0].dst.length, 40u);
  // Relative rank 2 (rank 7) sends relative 2..3 = ranks 7, 0: two segments, wrapping.
  EXPECT_EQ(puts_of(s, 7)[0].segs.size(), 2u);
  EXPECT_TRUE(verify_schedule(s).ok());
}

// k-port Direct gather: every rank one put straight into the root's recv; the
// k senders of a step on k different rails.
TEST(Gather, DirectKPorts) {
  Schedule s = build(Collective::Gather, "direct", Topology::from_ppn(7, 1, 3), 8, 2);
  EXPECT_EQ(s.stats().comm_steps, 2);  // ceil(6 / 3)
  for (int r = 0; r < 7; ++r) {
    auto p = puts_of(s, r);
    if (r == 2) {
      EXPECT_TRUE(p.empty());
      continue;
    }
    ASSERT_EQ(p.size(), 1u);
    int v = (r - 2 + 7) % 7;
    EXPECT_EQ(p[0].peer, 2);
    EXPECT_EQ(p[0].step, (v - 1) / 3);
    EXPECT_EQ(p[0].rail, (v - 1) % 3);
    EXPECT_EQ(p[0].segs[0].dst.offset, 8u * r);
  }
}

// seed 001 §5.1 shm_gather: on four 4-way nodes, three network messages (one
// per other node, its four blocks), the root copies its node's blocks out.
TEST(Gather, SmpOnFour4WayNodes) {
  Schedule s = build(Collective::Gather, "smp", Topology::from_ppn(16, 4, 2), 256, 6);
  auto st = s.stats();
  EXPECT_EQ(st.messages, 3u);
  EXPECT_EQ(st.net_bytes, 3u * 1024);
  for (int leader : {0, 8, 12}) {
    auto p = puts_of(s, leader);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].peer, 6);
    EXPECT_EQ(p[0].segs[0].src.region, Region::Shared);
  }
  EXPECT_TRUE(verify_schedule(s).ok());
}

// elan_gsync's shape: 2 (N-1) messages for any N, 2 x depth steps.
TEST(Barrier, TreeMessages) {
  for (int N = 1; N <= 64; ++N) {
    Schedule s = build(Collective::Barrier, "tree", Topology::from_ppn(N, 1, 2), 0);
    EXPECT_EQ(s.stats().messages, 2u * (N - 1)) << N;
    int depth = 0;
    for (long reach = 1, level = 1; reach < N; level *= 4, reach += level) ++depth;
    EXPECT_EQ(s.stats().comm_steps, 2 * depth) << N;
  }
}

// elan_hgsync: N-1 combined readies into rank 0, then one multicast 'go'.
TEST(Barrier, HwCombiningFlags) {
  Schedule s = build(Collective::Barrier, "hw_combining", Topology::from_ppn(9, 3, 1), 0);
  for (int r = 1; r < 9; ++r) {
    auto p = puts_of(s, r);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].hw, HwAssist::Combine);
    EXPECT_EQ(p[0].peer, 0);
  }
  const auto& prog = s.programs[0];
  ASSERT_EQ(prog.size(), 9u);
  EXPECT_EQ(prog[0].kind, OpKind::Wait);
  for (size_t i = 1; i < prog.size(); ++i) {
    EXPECT_EQ(prog[i].kind, OpKind::Put);
    EXPECT_EQ(prog[i].hw, HwAssist::Multicast);
  }
  EXPECT_TRUE(verify_schedule(s).ok());
}

// The hardware algorithms are never chosen automatically, and their software
// substitutes are registered algorithms of the same collective.
TEST(Selection, NeverHardwareAndSubstitutesExist) {
  for (int N : {1, 2, 8, 16, 64, 128})
    for (int ppn : {1, 4})
      for (uint64_t bytes : {0ull, 1ull, 4096ull, 1ull << 20}) {
        Topology t = Topology::from_ppn(N, ppn, 2);
        for (Collective coll : {Collective::Bcast, Collective::Gather, Collective::Barrier}) {
          std::string a = select_algorithm(coll, t, bytes);
          EXPECT_NE(a.rfind("hw_", 0), 0u) << collective_name(coll) << " " << a;
          EXPECT_NE(find_algorithm(coll, a), nullptr) << collective_name(coll) << " " << a;
        }
      }
  EXPECT_EQ(software_equivalent(Collective::Bcast, "hw_multicast"), "smp");
  EXPECT_EQ(software_equivalent(Collective::Barrier, "hw_combining"), "tree");
  EXPECT_EQ(software_equivalent(Collective::Bcast, "binomial"), "binomial");
  EXPECT_NE(find_algorithm(Collective::Bcast, software_equivalent(Collective::Bcast, "hw_multicast")), nullptr);
  EXPECT_NE(find_algorithm(Collective::Barrier, software_equivalent(Collective::Barrier, "hw_combining")), nullptr);
  EXPECT_EQ(select_algorithm(Collective::Bcast, Topology::from_ppn(64, 1, 1), 1 << 20), "scatter_allgather");
  EXPECT_EQ(select_algorithm(Collective::Bcast, Topology::from_ppn(16, 4, 2), 1 << 20), "smp");
}

// The sweep's sizes (at most 1500 B) keep smp broadcasting with one chunk down
// its tree of nodes; its chunked chain of nodes needs long messages. Verify the
// chain on the sweep's kinds of layout: uneven, non-consecutive, any root.
TEST(Bcast, SmpChainVerifiesOnManyLayouts) {
  std::vector<Topology> layouts = {Topology::from_ppn(13, 3, 2), Topology::from_ppn(9, 1, 1),
                                   Topology::from_node_sizes({3, 1, 4, 2, 5, 3}, 3),
                                   Topology::from_node_map({0, 1, 2, 0, 1, 2, 3, 3, 0, 4}, 2)};
  for (const Topology& t : layouts)
    for (int root : {0, t.nranks() / 2, t.nranks() - 1})
      for (uint64_t m : {200 * 1024ull, 1000 * 1000ull + 7}) {
        Schedule s = build(Collective::Bcast, "smp", t, m, root);
        EXPECT_GT(s.stats().messages, static_cast<uint64_t>(t.nnodes() - 1)) << t.describe() << " is not chunked";
        VerifyResult v = verify_schedule(s);
        EXPECT_TRUE(v.ok()) << (v.ok() ? "" : v.errors[0]);
      }
}
