// Communicators set up through the caller's out-of-band exchange (rt::Comm's
// OutOfBand constructor), as the MPI interposition layer will make them: here
// the ranks are threads of one process and the exchange is a barrier between
// them, so several real communicators (sockets, shared memory) live in one
// process at once, with node identities the caller gives.
#include <gtest/gtest.h>

#include <atomic>
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

// What a communicator is made with here: who (the node the caller gives) and the settings.
struct CommSetup {
  Identity who;
  Settings settings;
};
CommSetup settings(const std::string& node) {
  CommSetup s;
  s.who.node_id = node;
  s.who.job_id = "oobtest";
  s.settings.set(Setting::Rails, "127.0.0.1,127.0.0.2");
  s.settings.set(Setting::JobKey, "a key for the test");
  s.settings.set(Setting::Timeout, "30");
  s.settings.set(Setting::ShmMib, "1");
  return s;
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
    const CommSetup one = settings(node[r]), other = settings("solo-" + std::to_string(r));
    Comm a(one.who, one.settings, oob1);
    Comm b(other.who, other.settings, oob2);  // another node grouping: every rank alone
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
    CommSetup s = settings("host-" + std::to_string(r));
    if (r == 1) s.settings.set(Setting::Rails, "198.51.100.7");  // not an address of this host: it cannot listen there
    Comm c(s.who, s.settings, oob);
  });
  EXPECT_EQ(out[1].first, Status::Network) << out[1].second;
  for (int r : {0, 2}) {
    EXPECT_EQ(out[r].first, Status::Bootstrap) << out[r].second;
    EXPECT_NE(out[r].second.find("rank 1 could not start: cannot listen on 198.51.100.7"), std::string::npos)
        << out[r].second;
  }
}

// A rank whose RAILCOLL_JOB_KEY differs: every rank fails set-up at the
// records exchange with the hint, not at the deadline (30 s here).
TEST(CommOutOfBand, ARankWithAnotherKeyFailsEveryRankAtOnce) {
  ThreadExchange x(3);
  const auto start = std::chrono::steady_clock::now();
  auto out = each_rank(3, [&](int r) {
    ThreadOutOfBand oob(x, r, 3);
    CommSetup s = settings("host-" + std::to_string(r));
    if (r == 2) s.settings.set(Setting::JobKey, "another key");
    Comm c(s.who, s.settings, oob);
  });
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(out[r].first, Status::Bootstrap) << out[r].second;
    EXPECT_NE(out[r].second.find("the ranks' RAILCOLL_JOB_KEY differ"), std::string::npos) << out[r].second;
    EXPECT_EQ(out[r].second.find("a key for the test"), std::string::npos) << "the key leaked: " << out[r].second;
  }
  EXPECT_NE(out[0].second.find("rank 2's does not match"), std::string::npos) << out[0].second;
  EXPECT_LT(took, 5.0);
  printf("every rank failed after %.3f s\n", took);
}

// A rank's own check before it joins (the C API: its RAILCOLL_<COLL>_ALGO)
// fails it with its error and every other rank with one naming it.
TEST(CommOutOfBand, ALocalCheckFailsEveryRankAtOnce) {
  ThreadExchange x(3);
  auto out = each_rank(3, [&](int r) {
    ThreadOutOfBand oob(x, r, 3);
    const CommSetup s = settings("host-" + std::to_string(r));
    Comm c(s.who, s.settings, oob, [r] {
      if (r == 1) throw InputError("RAILCOLL_BCAST_ALGO names no algorithm");
    });
  });
  EXPECT_EQ(out[1].first, Status::Arg) << out[1].second;
  EXPECT_EQ(out[1].second, "RAILCOLL_BCAST_ALGO names no algorithm");
  for (int r : {0, 2}) {
    EXPECT_EQ(out[r].first, Status::Bootstrap) << out[r].second;
    EXPECT_NE(out[r].second.find("rank 1 could not start: RAILCOLL_BCAST_ALGO names no algorithm"), std::string::npos)
        << out[r].second;
  }
}

// A rank that does not join a call (its arguments were wrong): the peers in
// the call, waiting on shared-memory counters or on frames, and a peer that
// enters it late, all fail with Peer naming it, at once; then the
// communicator is broken on every rank.
TEST(CommOutOfBand, AnAbandonedCallFailsEveryPeerAtOnce) {
  const std::vector<std::string> node = {"host-a", "host-a", "host-b", "host-b"};
  ThreadExchange x(4);
  std::vector<double> took(4, -1);
  std::vector<std::string> next(4);
  auto out = each_rank(4, [&](int r) {
    ThreadOutOfBand oob(x, r, 4);
    const CommSetup s = settings(node[r]);
    Comm c(s.who, s.settings, oob);
    EXPECT_EQ(allgather_checked(c, 64, 1), "");
    const auto start = std::chrono::steady_clock::now();
    if (r == 1) {  // once the others wait in the call (rank 0 on its node's counters)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      c.abandon("rank 1's railcoll_allgather failed before it began (invalid argument: sendbuf is NULL)");
      EXPECT_NE(c.broken(), "");
      EXPECT_THROW(allgather_checked(c, 64, 3), Error);
      return;
    }
    try {
      if (r == 3) std::this_thread::sleep_for(std::chrono::milliseconds(400));  // enters after the abort came
      allgather_checked(c, 64, 2);
    } catch (...) {
      // From the abort (rank 1, after 0.2 s) or from entering (rank 3, after 0.4 s).
      took[r] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() - (r == 3 ? 0.4 : 0.2);
      try {
        allgather_checked(c, 64, 3);
      } catch (const Error& e) {
        next[r] = std::string(e.status == Status::Broken ? "broken: " : "other: ") + e.what();
      }
      throw;
    }
    ADD_FAILURE() << "rank " << r << ": the call did not fail";
  });
  EXPECT_EQ(out[1].first, Status::Ok) << "abandoning itself does not throw: " << out[1].second;
  for (int r : {0, 2, 3}) {
    EXPECT_EQ(out[r].first, Status::Peer) << out[r].second;
    EXPECT_NE(out[r].second.find("rank 1 aborted the collective: rank 1's railcoll_allgather failed before it began"),
              std::string::npos)
        << out[r].second;
    EXPECT_LT(took[r], 5.0) << "rank " << r;
    EXPECT_EQ(next[r].rfind("broken: ", 0), 0u) << "rank " << r << ": " << next[r];
    printf("rank %d failed after %.3f s in the call\n", r, took[r]);
  }
}

// Every rank knows every node's shared-buffer capacity, so all agree whether a
// call fits, even a rank whose own node would hold it.
TEST(CommOutOfBand, EveryRankAgreesWhetherACallFitsEveryNode) {
  const std::vector<std::string> node = {"host-a", "host-a", "host-b", "host-b"};
  ThreadExchange x(4);
  std::vector<std::string> unfit(4);
  auto out = each_rank(4, [&](int r) {
    ThreadOutOfBand oob(x, r, 4);
    CommSetup s = settings(node[r]);
    s.settings.set(Setting::ShmMib, node[r] == "host-a" ? "1" : "64");
    Comm c(s.who, s.settings, oob);
    auto big = c.plan(Collective::Allgather, "smp_direct", std::vector<uint64_t>(4, 1 << 20), {});
    auto small = c.plan(Collective::Allgather, "smp_direct", std::vector<uint64_t>(4, 1 << 10), {});
    EXPECT_EQ(small->unfit, "");
    unfit[r] = big->unfit;
    std::vector<char> send(1 << 20), recv(4 << 20);
    try {
      c.run(*big, {send.data(), recv.data()});
      ADD_FAILURE() << "rank " << r << ": a call too big for node 0 ran";
    } catch (const Error& e) {
      EXPECT_EQ(e.status, Status::Unsupported) << e.what();
    }
    EXPECT_EQ(allgather_checked(c, 1 << 10, 1), "") << "an unsupported call breaks nothing";
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(out[r].second, "") << "rank " << r;
    EXPECT_NE(unfit[r].find("on node 0; its RAILCOLL_SHM_MIB allows 1 MiB"), std::string::npos) << unfit[r];
  }
}

// A host library's progress (Comm::set_wait_hook, railcoll_comm_set_wait_hook;
// the MPI layer turns MPI's engine with it): a rank that waits inside
// railcoll for late peers, in a blocking call and in a wait on a posted
// request, calls the hook between its sleeps, always on its own thread, never
// on railcoll's progress thread.
TEST(CommOutOfBand, AWaitingThreadRunsTheWaitHook) {
  const std::vector<std::string> node = {"host-a", "host-a", "host-b", "host-b"};
  ThreadExchange x(4);
  std::atomic<int> blocking_calls{0}, waiting_calls{0}, elsewhere{0};
  auto out = each_rank(4, [&](int r) {
    ThreadOutOfBand oob(x, r, 4);
    const CommSetup s = settings(node[r]);
    const std::thread::id mine = std::this_thread::get_id();
    std::atomic<int>* counter = &blocking_calls;  // outlives the communicator
    Comm c(s.who, s.settings, oob);
    if (r == 0)
      c.set_wait_hook(
          [&] {
            if (std::this_thread::get_id() != mine) ++elsewhere;
            ++*counter;
          },
          1e-3);
    EXPECT_EQ(allgather_checked(c, 64, 1), "");  // every rank set up
    if (r != 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(allgather_checked(c, 64, 2), "") << "rank " << r;  // rank 0 waits 0.3 s in a blocking call
    counter = &waiting_calls;
    const CollectiveTraits& t = traits(Collective::Allgather);
    CallShape shape{c.rank(), c.size(), 0, 64, DataType::Byte, ReduceOp::Sum};
    std::vector<unsigned char> send(t.send_length(shape)), recv(t.recv_length(shape));
    t.fill(shape, 3, send.data(), recv.data());
    auto req = std::make_shared<Request>();
    req->steps.push_back(Step{c.plan(Collective::Allgather, "smp_direct", std::vector<uint64_t>(4, 64), {}),
                              {send.data(), recv.data()}, {}, {}});
    if (r != 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    c.post(req);
    c.wait(*req);  // rank 0 waits 0.3 s for a posted request
    EXPECT_EQ(req->status(), Status::Ok) << req->message();
    EXPECT_EQ(t.check(shape, 3, recv.data()), "") << "rank " << r;
  });
  for (int r = 0; r < 4; ++r) EXPECT_EQ(out[r].second, "") << "rank " << r;
  // About 300 each at 1 ms; a loaded machine sleeps longer between them.
  EXPECT_GE(blocking_calls.load(), 10);
  EXPECT_GE(waiting_calls.load(), 10);
  EXPECT_EQ(elsewhere.load(), 0) << "the hook ran on another thread than the waiting one";
  printf("wait hook: %d calls in a blocking call, %d in a wait\n", blocking_calls.load(), waiting_calls.load());
}

}  // namespace
