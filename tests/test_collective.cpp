// The collective traits table: names round-trip, region sizes follow the
// result each collective must leave, and the benchmark's fill/check accept a
// correct result and name a wrong byte.
#include <gtest/gtest.h>

#include <cstring>

#include "core/collective.hpp"
#include "core/errors.hpp"
#include "core/schedule.hpp"

using namespace railcoll;

TEST(Collective, NamesRoundTrip) {
  for (Collective c : user_collectives()) {
    Collective back;
    ASSERT_TRUE(parse_collective(collective_name(c), &back));
    EXPECT_EQ(back, c);
    EXPECT_EQ(traits(c).id, c);
  }
  Collective x;
  EXPECT_FALSE(parse_collective("goal", &x));  // imported schedules are not callable
  EXPECT_THROW(collective_from_name("alltoallw"), InputError);
}

TEST(Collective, RegionSizes) {
  BlockLayout L({3, 5, 7});
  std::vector<uint64_t> send, recv;
  traits(Collective::Allgather).region_sizes(L, 0, &send, &recv);
  EXPECT_EQ(send, (std::vector<uint64_t>{3, 5, 7}));
  EXPECT_EQ(recv, (std::vector<uint64_t>{15, 15, 15}));
  traits(Collective::Gather).region_sizes(L, 1, &send, &recv);
  EXPECT_EQ(recv, (std::vector<uint64_t>{0, 15, 0}));
  BlockLayout E({4, 4, 4});
  traits(Collective::Bcast).region_sizes(E, 2, &send, &recv);
  EXPECT_EQ(send, (std::vector<uint64_t>{0, 0, 4}));
  EXPECT_EQ(recv, (std::vector<uint64_t>{4, 4, 0}));
  traits(Collective::Allreduce).region_sizes(E, 0, &send, &recv);
  EXPECT_EQ(recv, (std::vector<uint64_t>{4, 4, 4}));
  // scan and exscan: every rank's vector in, its prefix out (exscan's rank 0 too: left untouched).
  for (Collective c : {Collective::Scan, Collective::Exscan}) {
    traits(c).region_sizes(E, 0, &send, &recv);
    EXPECT_EQ(send, (std::vector<uint64_t>{4, 4, 4}));
    EXPECT_EQ(recv, (std::vector<uint64_t>{4, 4, 4}));
    EXPECT_TRUE(traits(c).reducing && !traits(c).rooted && traits(c).equal_counts);
  }
  traits(Collective::Reduce).region_sizes(E, 2, &send, &recv);  // the result at the root only
  EXPECT_EQ(send, (std::vector<uint64_t>{4, 4, 4}));
  EXPECT_EQ(recv, (std::vector<uint64_t>{0, 0, 4}));
  traits(Collective::ReduceScatter).region_sizes(L, 0, &send, &recv);  // every block in, one block out
  EXPECT_EQ(send, (std::vector<uint64_t>{15, 15, 15}));
  EXPECT_EQ(recv, (std::vector<uint64_t>{3, 5, 7}));
}

TEST(Collective, PersonalisedRegionSizes) {
  // alltoallv: rank s sends pairs[s][d] to d; send holds the row, recv the column.
  BlockLayout P = BlockLayout::per_pair(3, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  std::vector<uint64_t> send, recv;
  traits(Collective::Alltoallv).region_sizes(P, 0, &send, &recv);
  EXPECT_EQ(send, (std::vector<uint64_t>{3, 12, 21}));
  EXPECT_EQ(recv, (std::vector<uint64_t>{9, 12, 15}));
  EXPECT_EQ(P.send_offset(1, 2), 3u + 4u);
  EXPECT_EQ(P.recv_offset(2, 1), 2u);
  EXPECT_EQ(P.recv_offset(2, 2), 2u + 5u);
  BlockLayout U = BlockLayout::per_pair(3, {4, 4, 4});  // one count per rank: the same to every rank
  traits(Collective::Alltoall).region_sizes(U, 0, &send, &recv);
  EXPECT_EQ(send, (std::vector<uint64_t>{12, 12, 12}));
  EXPECT_EQ(recv, (std::vector<uint64_t>{12, 12, 12}));
  // scatter(v): the root sends every block, rank r receives its own.
  BlockLayout L({3, 5, 7});
  traits(Collective::Scatterv).region_sizes(L, 1, &send, &recv);
  EXPECT_EQ(send, (std::vector<uint64_t>{0, 15, 0}));
  EXPECT_EQ(recv, (std::vector<uint64_t>{3, 5, 7}));
  traits(Collective::Gatherv).region_sizes(L, 2, &send, &recv);
  EXPECT_EQ(recv, (std::vector<uint64_t>{0, 0, 15}));
}

// Makes the correct result of every rank from the inputs the traits fill in,
// as a collective would, and checks that check() agrees; then breaks one byte.
TEST(Collective, FillAndCheck) {
  const int N = 3;
  for (Collective c : {Collective::Allgather, Collective::Gather, Collective::Bcast, Collective::Allreduce,
                       Collective::ReduceScatterBlock, Collective::Reduce, Collective::Alltoall,
                       Collective::Alltoallv, Collective::Scatter, Collective::Scatterv, Collective::Gatherv,
                       Collective::Scan, Collective::Exscan}) {
    const CollectiveTraits& t = traits(c);
    for (DataType dt : {DataType::Int32, DataType::Float64}) {
      if (!t.reducing && dt != DataType::Int32) continue;
      CallShape base;
      base.nranks = N;
      base.root = 1;
      base.bytes = 64;
      base.dtype = t.reducing ? dt : DataType::Byte;
      std::vector<std::vector<unsigned char>> send(N), recv(N);
      for (int r = 0; r < N; ++r) {
        CallShape s = base;
        s.rank = r;
        send[r].assign(t.send_length(s) + 1, 0);
        recv[r].assign(t.recv_length(s) + 1, 0);
        t.fill(s, 7, send[r].data(), recv[r].data());
      }
      // Each rank's correct result, assembled from the inputs.
      for (int r = 0; r < N; ++r) {
        CallShape s = base;
        s.rank = r;
        if (t.result == Result::Blocks && (!t.result_at_root_only || r == base.root))
          for (int q = 0; q < N; ++q) memcpy(recv[r].data() + q * base.bytes, send[q].data(), base.bytes);
        if (t.result == Result::RootBlock) memcpy(recv[r].data(), send[base.root].data(), base.bytes);
        if (t.result == Result::RootBlocks) memcpy(recv[r].data(), send[base.root].data() + r * base.bytes, base.bytes);
        if (t.result == Result::BlocksByDest)
          for (int q = 0; q < N; ++q)
            memcpy(recv[r].data() + q * base.bytes, send[q].data() + r * base.bytes, base.bytes);
        const bool reduced = t.result == Result::ReducedSlice ||
                             (t.result == Result::Reduction && (!t.result_at_root_only || r == base.root)) ||
                             t.result == Result::Prefix || (t.result == Result::ExclusivePrefix && r > 0);
        const uint64_t at = t.result == Result::ReducedSlice ? r * base.bytes : 0;  // this rank's slice
        // The ranks whose inputs the result combines: all, or a prefix (scan: 0..r, exscan: 0..r-1).
        const int upto = t.result == Result::Prefix ? r + 1 : t.result == Result::ExclusivePrefix ? r : N;
        if (reduced) {
          for (size_t i = 0; i < base.bytes / 8 && dt == DataType::Float64; ++i) {
            double sum = 0, v;
            for (int q = 0; q < upto; ++q) memcpy(&v, send[q].data() + at + 8 * i, 8), sum += v;
            memcpy(recv[r].data() + 8 * i, &sum, 8);
          }
          for (size_t i = 0; i < base.bytes / 4 && dt == DataType::Int32; ++i) {
            int32_t sum = 0, v;
            for (int q = 0; q < upto; ++q) memcpy(&v, send[q].data() + at + 4 * i, 4), sum += v;
            memcpy(recv[r].data() + 4 * i, &sum, 4);
          }
        }
        EXPECT_EQ(t.check(s, 7, recv[r].data()), "") << t.name << " rank " << r;
        if (t.recv_length(s) == 0) continue;
        recv[r][5] ^= 0x40;
        EXPECT_NE(t.check(s, 7, recv[r].data()), "") << t.name << " rank " << r << " corrupted";
        if (upto == 0) continue;  // exscan's rank 0: nothing but the untouched guard to check
        EXPECT_NE(t.check(s, 8, recv[r].data()), "") << t.name << " rank " << r << " another call's data";
      }
    }
  }
}
