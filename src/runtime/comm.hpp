// A communicator: the processes of one job or group, connected by per-rail TCP
// sockets between nodes and Unix sockets inside a node, sharing one POSIX
// shared-memory segment per node (SocketTransport), and the executor that runs
// the calling rank's program of a schedule over it (the architecture page,
// ../shared/design/ARCHITECTURE.md, "Runtime"). This file's class only puts
// them together: set-up in order, a call, the end.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/schedule.hpp"
#include "runtime/bootstrap.hpp"
#include "runtime/executor.hpp"
#include "runtime/net.hpp"  // split_host_port, for callers that check a store address
#include "runtime/oob.hpp"

namespace railcoll::rt {

class Comm {
 public:
  // From the launcher's environment (bootstrap_from_env) or explicit settings:
  // set up through the key-value store rank 0 serves at b.store.
  explicit Comm(const Bootstrap& b);
  // Set up through the caller's out-of-band exchange: rank and size are the
  // exchange's; settings give the rest (key, rails, timeouts, and node_id, this
  // rank's node identity: ranks with equal ids share memory, e.g. derived from
  // MPI_Comm_split_type(MPI_COMM_TYPE_SHARED); settings_from_env() fills it
  // from RAILCOLL_NODE or the hostname). Every rank of `oob` calls it at once;
  // several communicators may live in one process.
  Comm(const Bootstrap& settings, OutOfBand& oob);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  int rank() const;
  int size() const;
  const Topology& topo() const;
  int rails() const;
  // Rails this rank can use to every peer now (a rail with a connection given up does not count).
  int rails_up() const;
  double timeout() const;
  // The name that keeps this communicator's sockets and shared memory apart
  // from every other's ("<job id>-<16 hex digits rank 0 drew>").
  const std::string& unique_name() const;

  // Runs one collective call: the schedule for (collective, algorithm, sizes)
  // is built once and cached. Throws RuntimeError (or InputError for a bad
  // request); after a failure in the call the communicator is broken.
  using Buffers = rt::Buffers;
  void run(Collective collective, const std::string& algorithm, const std::vector<uint64_t>& counts,
           const AlgoOptions& opts, const Buffers& b);

 private:
  struct Impl;
  void init(const Bootstrap& settings, OutOfBand& oob, double deadline);
  std::unique_ptr<Impl> impl_;
};

}  // namespace railcoll::rt
