// The flight recorder (docs/observability.md, "The flight recorder"): each
// rank keeps its last RAILCOLL_FLIGHT_RECORDS calls of a communicator in a
// fixed ring (no allocation per call): the collective, algorithm and sizes,
// start and end times, how far the call got (op index, kind, step) and what it
// waits for. It writes the ring out, one file per rank, when a call fails
// (a timeout, a peer's abort, a mismatch), on SIGUSR1, and at the end when
// RAILCOLL_FLIGHT_DIR was given; `railcoll doctor DIR` reads every rank's
// file. PyTorch's flight recorder for NCCL (torch/distributed/flight_recorder)
// is the model; this one is per communicator and knows the schedule's steps.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/engine/observer.hpp"

namespace railcoll::rt {

// One call, as recorded: plain data (the signal handler writes it out as is).
struct FlightEntry {
  enum State : uint8_t { Empty, Entering, Running, Waiting, Done, Failed };
  uint64_t call = 0;
  uint64_t send_bytes = 0, recv_bytes = 0;  // this rank's
  double start = 0, end = 0;                // seconds since the epoch; end 0: not over
  int32_t op = -1, nops = 0;                // the op it is at (or ended at), of how many
  int32_t kind = -1, step = -1;             // that op's OpKind and schedule step
  int32_t peer = -1, rail = -1;             // what the current wait waits for (observer.hpp, on_wait)
  State state = Empty;
  char what[112] = {};    // "allgather/direct with 4096 B per rank"
  char detail[240] = {};  // what it waits for, or why it failed (its start)
  char cause[200] = {};   // a failure's "likely cause: ..." (at the end of a long message)
};

class FlightRecorder final : public Observer {
 public:
  // records: the ring's size (> 0); dir: where files go (made if missing).
  FlightRecorder(int rank, int size, int node, uint64_t comm_id, size_t records, std::string dir);
  ~FlightRecorder() override;
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  void on_call_begin(uint64_t call, const Plan& plan) override;
  void on_op(int index, const Op& op) override;
  void on_op_end(int index, const Op& op) override;
  void on_wait(int index, int peer, int rail, const std::string& what) override;
  void on_send(int, int, int, uint64_t) override {}
  void on_arrival(int, int, int, uint64_t, bool) override {}
  void on_call_end(uint64_t call, const std::string& error) override;

  // Writes the ring to path() (replacing an older record): reason "timeout",
  // "error", "SIGUSR1", "exit". Uses only open/write/snprintf, so that the
  // SIGUSR1 handler may call it. Returns false if the file could not be written.
  bool dump(const char* reason) const;
  const std::string& path() const { return path_; }
  // The calls recorded, oldest first (for tests).
  std::vector<FlightEntry> entries() const;

 private:
  FlightEntry& current() { return ring_[(count_ - 1) % ring_.size()]; }

  const int rank_, size_, node_;
  const uint64_t comm_id_;
  std::string dir_, path_, tmp_path_;
  std::vector<FlightEntry> ring_;
  uint64_t count_ = 0;  // calls recorded since the start
};

// The file of `rank` of communicator comm_id in dir: "<dir>/flight-<comm>-rank<rank>.txt".
std::string flight_path(const std::string& dir, uint64_t comm_id, int rank);
// The directory records go to when RAILCOLL_FLIGHT_DIR is not given.
std::string default_flight_dir();

}  // namespace railcoll::rt
