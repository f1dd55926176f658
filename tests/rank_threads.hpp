// Helpers of the tests that run the real executor with ranks as threads of
// one process (test_executor.cpp on the fake transport, test_rails.cpp on the
// rails layer over fake links): settings, a thread per rank, one call of a
// collective on every rank with its buffers filled and checked by the traits.
#pragma once
#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/errors.hpp"
#include "core/registry.hpp"
#include "runtime/engine/executor.hpp"
#include "runtime/engine/plan.hpp"

namespace railcoll::rt::test {

inline ExecutorSettings settings(double timeout = 30) {
  ExecutorSettings b;
  b.timeout = timeout;
  b.spin_seconds = 0.0002;  // up to 12 threads share 2 cores: sleep soon
  return b;
}

struct Outcome {
  Status status = Status::Ok;
  std::string error;
};

// Runs fn(rank) on a thread per rank (except `idle` ones); each rank's outcome.
inline std::vector<Outcome> each_rank(int n, const std::function<void(int)>& fn, const std::vector<int>& idle = {}) {
  std::vector<Outcome> out(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    if (std::find(idle.begin(), idle.end(), r) != idle.end()) continue;
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (const Error& e) {
        out[r] = {e.status, e.what()};
      } catch (const std::exception& e) {
        out[r] = {Status::Internal, e.what()};
      }
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

// One call of a collective on every rank: plans, buffers filled by the traits.
struct CallOnEveryRank {
  CallOnEveryRank(const Topology& t, Collective c, const std::string& algo, uint64_t bytes, int call_no, int root = 0)
      : coll(c), number(call_no) {
    const CollectiveTraits& tr = traits(c);
    AlgoOptions opts = call_defaults(c);
    opts.root = root;
    std::vector<uint64_t> counts(t.nranks(), bytes);
    std::string key = std::string(tr.name) + "/" + algo + "/" + std::to_string(bytes) + "/" + std::to_string(root);
    for (int r = 0; r < t.nranks(); ++r) {
      plans.push_back(make_plan(t, r, c, algo, counts, opts, key));
      shapes.push_back({r, t.nranks(), root, bytes, opts.dtype, opts.redop});
      send.emplace_back(tr.send_length(shapes[r]));
      recv.emplace_back(tr.recv_length(shapes[r]));
      tr.fill(shapes[r], call_no, send[r].data(), recv[r].data());
    }
  }
  void run(Executor& e, int r) { e.run(*plans[r], {send[r].data(), recv[r].data()}); }
  std::string check(int r) const { return traits(coll).check(shapes[r], number, recv[r].data()); }

  Collective coll;
  int number;
  std::vector<std::unique_ptr<Plan>> plans;
  std::vector<CallShape> shapes;
  std::vector<std::vector<unsigned char>> send, recv;
};

}  // namespace railcoll::rt::test
