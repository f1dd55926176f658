// The call front end: the one way into a collective call, between the adapters
// (the C API; the MPI layer and the torch backend through it) and the runtime.
// It builds a call from its arguments and checks them through the collective
// traits (root, counts, NULL buffers, overlap, in place: the traits say which
// buffer holds what, so no adapter checks them again), asks selection for its
// ranked candidates and plans the first whose schedule every node's shared
// memory holds, keeps the one plan cache (keyed by the call), and composes a
// multi-step call (alltoallv: the counts, then the exchange; gatherv and
// scatterv whose counts only the root has: its counts, then the call) as the
// steps of one request. The blocking, nonblocking and persistent forms differ only in
// when the built request runs (requests.hpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/collective.hpp"
#include "runtime/comm.hpp"
#include "runtime/engine/plan_cache.hpp"
#include "runtime/engine/reduce.hpp"
#include "select/select.hpp"

namespace railcoll::rt {

// Where the blocks of a v-form lie in a caller's buffer, one per rank: counts
// (elements of the call's type where it reduces, else bytes) and where each
// block starts (bytes; null: packed in rank order).
struct Blocks {
  const size_t* counts = nullptr;
  const size_t* displs = nullptr;
};

// A collective call as an adapter hands it over. Where every rank passes the
// same count, `count`; else `blocks` (allgatherv, gatherv: the gathered side;
// scatterv: the root's side; reduce_scatter: every rank's result; alltoallv:
// the receiving side, `send_blocks` the sending one).
struct CallArgs {
  const char* fn = "";  // the caller, for messages: "railcoll_allgather"
  Collective collective = Collective::Barrier;
  const void* send = nullptr;
  void* recv = nullptr;  // bcast: the one buffer (the root's input, the others' output)
  size_t count = 0;
  bool per_rank = false;  // a v-form: the sizes are blocks.counts (and send_blocks.counts), not count
  Blocks blocks, send_blocks;
  int root = 0;
  DataType dtype = DataType::Byte;
  ReduceOp op = ReduceOp::Sum;
  // op User: the program's operator (dtype Byte, count in its elements), held
  // by the call until it is over.
  std::shared_ptr<const UserOp> user_op;
  bool in_place = false;
  // gatherv, scatterv: blocks.counts is read at the root alone (MPI's rule);
  // the others read their own entry, and the root's counts reach them as the
  // first step of the call (RAILCOLL_ROOT_COUNTS).
  bool root_counts = false;
  const char* algorithm = nullptr;  // null, "" or "auto": selection decides
};

class FrontEnd {
 public:
  // Calls on `comm`, whose algorithms `selector` ranks (checked when the
  // communicator was made: RAILCOLL_<COLL>_ALGO, RAILCOLL_TUNING).
  FrontEnd(Comm& comm, Selector selector);
  FrontEnd(const FrontEnd&) = delete;
  FrontEnd& operator=(const FrontEnd&) = delete;

  Comm& comm() { return comm_; }

  // A blocking call: built, checked and run here. A failure before the call
  // began (a wrong argument, a call the nodes' memory cannot hold) is this
  // rank's alone: it tells its peers it does not join (their call, or their
  // next, fails naming it) and throws; after any failure the communicator is
  // broken on every rank.
  void run(const CallArgs& a);
  // A nonblocking (persistent false: posted now) or persistent (started by
  // the caller) call: built and checked, failures as run().
  std::shared_ptr<Request> start(const CallArgs& a, bool persistent);

  // This rank does not join the call `fn` it was about to make (it failed
  // before it began, with `e`): the peers are told (rt::Comm::abandon).
  void abandon(const char* fn, const std::exception& e);

  // The algorithm and plan of one step: the one the call or a variable names,
  // else selection's first candidate that fits every node; the cache keeps
  // the decision for every later call like it. Throws InputError for an
  // unknown algorithm.
  Decision decide(Collective collective, const std::vector<uint64_t>& counts, const AlgoOptions& opts,
                  const char* requested);

 private:
  void build(const CallArgs& a, Request& req);
  // The steps of a call whose counts only the root has (CallArgs::root_counts).
  template <class Steps>
  void counts_from_root(Steps& steps, const CallArgs& a, const AlgoOptions& opts, const std::vector<uint64_t>& counts,
                        const void* send, void* recv);
  const Decision& decided(Collective collective, const std::vector<uint64_t>& counts, const AlgoOptions& opts,
                          const char* requested);
  Decision decide_anew(Collective collective, const std::vector<uint64_t>& counts, const AlgoOptions& opts,
                       const std::string& requested);
  void report_once(const std::string& key, const std::string& what);

  Comm& comm_;
  const Selector selector_;
  std::mutex mu_;  // plans_, reported_: a caller and the progress thread (alltoallv's exchange) decide
  PlanCache plans_;
  std::set<std::string> reported_;  // substitutions said once on stderr
};

}  // namespace railcoll::rt
