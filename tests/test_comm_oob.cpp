// Communicators set up through the caller's out-of-band exchange (rt::Comm's
// OutOfBand constructor), as the MPI interposition layer will make them: here
// the ranks are threads of one process and the exchange is a barrier between
// them, so several real communicators (sockets, shared memory) live in one
// process at once, with node identities the caller gives.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>

#include "core/errors.hpp"
#include "core/registry.hpp"
#include "runtime/comm.hpp"
#include "process_holdings.hpp"

using namespace railcoll;
using namespace railcoll::rt;

namespace {

// An all-gather among threads: the last to arrive publishes everyone's bytes.
class ThreadExchange {
 public:
  explicit ThreadExchange(int n) : n_(n), slots_(n) {}
  void allgather(int rank, const void* mine, size_t bytes, void* all) {
    std::unique_lock<std::mutex> lock(m_);
    const uint64_t round = round_;
    slots_[rank].assign(static_cast<const char*>(mine), bytes);
    if (++arrived_ == n_) {
      result_ = slots_;
      arrived_ = 0;
      ++round_;
      cv_.notify_all();
    } else if (!cv_.wait_for(lock, std::chrono::seconds(60), [&] { return round_ != round; })) {
      throw RuntimeError(Status::Timeout, "the test's exchange: a rank did not come");
    }
    for (int r = 0; r < n_; ++r) {
      if (result_[r].size() != bytes) throw RuntimeError(Status::Protocol, "the test's exchange: sizes differ");
      memcpy(static_cast<char*>(all) + r * bytes, result_[r].data(), bytes);
    }
  }

 private:
  const int n_;
  std::mutex m_;
  std::condition_variable cv_;
  uint64_t round_ = 0;
  int arrived_ = 0;
  std::vector<std::string> slots_, result_;
};

class ThreadOutOfBand final : public OutOfBand {
 public:
  ThreadOutOfBand(ThreadExchange& x, int rank, int size) : x_(x), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void allgather(const void* mine, size_t bytes, void* all) override { x_.allgather(rank_, mine, bytes, all); }

 private:
  ThreadExchange& x_;
  int rank_, size_;
};

Bootstrap settings(const std::string& node) {
  Bootstrap b;
  b.node_id = node;
  b.rails_spec = "127.0.0.1,127.0.0.2";
  b.job_id = "oobtest";
  b.job_key = "a key for the test";
  b.timeout = 30;
  b.shm_bytes = 1 << 20;
  return b;
}

// Runs fn(rank) on a thread per rank; each rank's error ("" if none) and status.
std::vector<std::pair<Status, std::string>> each_rank(int n, const std::function<void(int)>& fn) {
  std::vector<std::pair<Status, std::string>> out(n, {Status::Ok, ""});
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (const Error& e) {
        out[r] = {e.status, e.what()};
      }
    });
  for (auto& t : threads) t.join();
  return out;
}

// A validated all-gather of `bytes` per rank on c.
std::string allgather_checked(Comm& c, uint64_t bytes, int call) {
  const CollectiveTraits& t = traits(Collective::Allgather);
  CallShape shape{c.rank(), c.size(), 0, bytes, DataType::Byte, ReduceOp::Sum};
  std::vector<unsigned char> send(t.send_length(shape)), recv(t.recv_length(shape));
  t.fill(shape, call, send.data(), recv.data());
  c.run(Collective::Allgather, "smp_direct", std::vector<uint64_t>(c.size(), bytes), {}, {send.data(), recv.data()});
  return t.check(shape, call, recv.data());
}

TEST(CommOutOfBand, SeveralCommunicatorsInOneProcess) {
  const ProcessHoldings before = ProcessHoldings::now();
  const std::vector<std::string> node = {"host-a", "host-a", "host-b", "host-b"};
  ThreadExchange first(4), second(4);
  auto out = each_rank(4, [&](int r) {
    ThreadOutOfBand oob1(first, r, 4), oob2(second, r, 4);
    Comm a(settings(node[r]), oob1);
    Comm b(settings("solo-" + std::to_string(r)), oob2);  // another node grouping: every rank alone
    EXPECT_EQ(a.topo().nnodes(), 2);
    EXPECT_EQ(b.topo().nnodes(), 4);
    EXPECT_NE(a.unique_name(), b.unique_name());
    for (int call = 1; call <= 6; ++call) {
      EXPECT_EQ(allgather_checked(a, 100 * call + 3, call), "") << "rank " << r << " call " << call;
      EXPECT_EQ(allgather_checked(b, 1000 * call + 1, call), "") << "rank " << r << " call " << call;
    }
  });
  for (int r = 0; r < 4; ++r) EXPECT_EQ(out[r].second, "") << "rank " << r;
  const ProcessHoldings after = ProcessHoldings::now();
  EXPECT_TRUE(after == before) << "left behind: " << after.since(before);
}

TEST(CommOutOfBand, ARankThatCannotStartFailsEveryRank) {
  ThreadExchange x(3);
  auto out = each_rank(3, [&](int r) {
    ThreadOutOfBand oob(x, r, 3);
    Bootstrap s = settings("host-" + std::to_string(r));
    if (r == 1) s.rails_spec = "198.51.100.7";  // not an address of this host: it cannot listen there
    Comm c(s, oob);
  });
  EXPECT_EQ(out[1].first, Status::Network) << out[1].second;
  for (int r : {0, 2}) {
    EXPECT_EQ(out[r].first, Status::Bootstrap) << out[r].second;
    EXPECT_NE(out[r].second.find("rank 1 could not start: cannot listen on 198.51.100.7"), std::string::npos)
        << out[r].second;
  }
}

}  // namespace
