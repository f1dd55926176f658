// A communicator: the processes of one job or group, connected by per-rail TCP
// sockets between nodes and Unix sockets inside a node, sharing one POSIX
// shared-memory segment per node (RailTransport), and the executor that runs
// the calling rank's program of a schedule over it (the architecture page,
// ../shared/design/ARCHITECTURE.md, "Runtime"). This file's class only puts
// them together: set-up in order, a call, the end.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/schedule.hpp"
#include "core/settings.hpp"
#include "runtime/bootstrap/identity.hpp"
#include "runtime/engine/executor.hpp"
#include "runtime/bootstrap/net.hpp"  // split_host_port, for callers that check a store address
#include "runtime/bootstrap/oob.hpp"
#include "runtime/engine/requests.hpp"

namespace railcoll::rt {

class Comm {
 public:
  // This rank's own checks before it joins (e.g. the C API reading
  // RAILCOLL_<COLL>_ALGO): run at the start of set-up; if one throws, this rank
  // fails with its error and every other rank at the first exchange with
  // "rank r could not start: ...", not at the deadline.
  using Check = std::function<void()>;

  // Who this process is from the launcher's environment (identity_from_env)
  // or the caller: set up through the key-value store rank 0 serves at
  // who.store. A rank that fails set-up tells the store, so no rank waits for it.
  Comm(const Identity& who, const Settings& settings, const Check& check = {});
  // Set up through the caller's out-of-band exchange: rank and size are the
  // exchange's; of `who`, node_id (this rank's node identity: ranks with equal
  // ids share memory, e.g. derived from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED);
  // local_identity() fills it from RAILCOLL_NODE or the hostname) and job_id.
  // Every rank of `oob` calls it at once; several communicators may live in
  // one process.
  Comm(const Identity& who, const Settings& settings, OutOfBand& oob, const Check& check = {});
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  int rank() const;
  int size() const;
  const Topology& topo() const;
  int rails() const;
  // Rails this rank can use to every peer now (a rail with a connection given up does not count).
  int rails_up() const;
  // The transport between nodes: "tcp", or "ofi:<provider>" (RAILCOLL_TRANSPORT).
  std::string transport() const;
  double timeout() const;
  // The name that keeps this communicator's sockets and shared memory apart
  // from every other's ("<job id>-<16 hex digits rank 0 drew>").
  const std::string& unique_name() const;

  // The plan of one call on this communicator: the schedule for
  // (collective, algorithm, sizes, options) at this communicator's striping
  // threshold, with whether every node's shared memory holds it (Plan::unfit:
  // every rank knows every node's RAILCOLL_SHM_MIB from set-up, so all ranks
  // agree). Not cached: the call front end keeps the plans (front_end.hpp).
  // Throws InputError for a bad request.
  std::shared_ptr<const Plan> plan(Collective collective, const std::string& algorithm,
                                   const std::vector<uint64_t>& counts, const AlgoOptions& opts) const;
  // Runs one collective call. Throws RuntimeError (Unsupported, on every rank
  // alike, when the plan does not fit); after a failure in the call the
  // communicator is broken and every peer has been told.
  using Buffers = rt::Buffers;
  void run(const Plan& plan, const Buffers& b);
  // A call planned here and run (tests, tools: the C API goes through the front end).
  void run(Collective collective, const std::string& algorithm, const std::vector<uint64_t>& counts,
           const AlgoOptions& opts, const Buffers& b) {
    run(*plan(collective, algorithm, counts, opts), b);
  }
  // Calls in the background (requests.hpp): post queues a request behind
  // every call outstanding on this communicator and gets it going; test
  // advances without blocking (true once r is done); wait blocks until r is
  // done. A blocking run() waits for what is outstanding first.
  void post(const std::shared_ptr<Request>& r);
  // A point-to-point send or receive (r->message; mailbox.hpp): not in the
  // collectives' order; test and wait as above.
  void post_message(const std::shared_ptr<Request>& r);
  // A receive no message has matched yet is withdrawn (it completes, failed, and matches nothing).
  void withdraw(const std::shared_ptr<Request>& r);
  bool test(Request& r);
  void wait(Request& r);
  void progress();
  // Executor::set_wait_hook: another library's progress while this rank's threads wait here.
  void set_wait_hook(std::function<void()> hook, double every_s);
  // This rank does not join the call it was about to make (its arguments were
  // wrong): every peer's call, or its next one, fails with Status::Peer naming
  // this rank and `why`, and the communicator is broken on every rank. Nothing
  // happens if it is broken already.
  void abandon(const std::string& why);
  // "" while usable, else why not.
  std::string broken() const;

 private:
  struct Impl;
  void init(const Identity& who, OutOfBand& oob, double deadline, const Check& check);
  // The rails resolved and the transport opened (local work, before the set-up
  // deadline starts); a failure is kept and told to every rank in init.
  void open_transport(int me, int n);
  std::unique_ptr<Impl> impl_;
};

}  // namespace railcoll::rt
