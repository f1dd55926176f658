// A communicator: the processes of one job, connected by per-rail TCP sockets
// between nodes and Unix sockets inside a node, sharing one POSIX shared-memory
// segment per node; and the executor that runs the calling rank's program of a
// schedule for real (the architecture page, ../shared/design/ARCHITECTURE.md, "Runtime").
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/schedule.hpp"
#include "runtime/bootstrap.hpp"
#include "runtime/net.hpp"

namespace railcoll::rt {

class Comm {
 public:
  explicit Comm(const Bootstrap& b);
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

  // Runs one collective call: the schedule for (collective, algorithm, sizes)
  // is built once and cached. Throws RuntimeError (or InputError for a bad
  // request); after a failure in the call the communicator is broken.
  struct Buffers {
    const void* send = nullptr;
    void* recv = nullptr;
  };
  void run(Collective collective, const std::string& algorithm, const std::vector<uint64_t>& counts,
           const AlgoOptions& opts, const Buffers& b);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace railcoll::rt
