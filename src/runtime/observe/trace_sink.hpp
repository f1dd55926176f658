// The trace sink (docs/observability.md, "Traces"): with RAILCOLL_TRACE=DIR
// each rank writes the Chrome / Perfetto trace-event JSON of every call of a
// communicator to DIR/trace-<comm>-rank<R>.json: the call's span, its
// program's ops (puts with their bytes, copies, reductions, waits with whom
// they wait for), and per rail the spans in which a frame's payload arrived
// (the receiver's view of the rail's time). Events are kept in a buffer
// allocated once and written out when it fills and at the end, so a call
// costs a few clock reads and no allocation. `railcoll trace DIR` merges the
// ranks' files, summarises them and draws them; `railcoll sim --trace DIR`
// writes the same format from the simulator's model.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/trace_format.hpp"
#include "runtime/engine/observer.hpp"

namespace railcoll::rt {

class TraceSink final : public Observer {
 public:
  TraceSink(int rank, int size, int node, int rails, uint64_t comm_id, const std::string& dir,
            size_t buffer_events = 1 << 16);
  ~TraceSink() override;  // writes what is left and ends the file

  void on_call_begin(uint64_t call, const Plan& plan) override;
  void on_op(int index, const Op& op) override;
  void on_op_end(int index, const Op& op) override;
  void on_wait(int index, int peer, int rail, const std::string& what) override;
  void on_send(int index, int peer, int rail, uint64_t bytes) override;
  void on_arrival(int peer, int rail, int op, uint64_t bytes, bool begin) override;
  void on_call_end(uint64_t call, const std::string& error) override;

  // Writes the buffered events out (done when the buffer is full and at the end).
  void flush();
  const std::string& path() const { return path_; }

 private:
  struct Pending {  // an event of the buffer; `what` indexes whats_ for call spans
    TraceEvent e;
    int what = -1;
  };
  void push(const TraceEvent& e, int what = -1);

  const int rank_, size_, rails_;
  std::string path_;
  TraceWriter out_;
  std::vector<Pending> buf_;  // capacity fixed at construction
  size_t used_ = 0;
  // The current call, its op and wait.
  uint64_t call_ = 0;
  double call_start_ = 0, op_start_ = 0;
  int what_ = -1;
  int wait_peer_ = -1, wait_rail_ = -2;
  uint64_t put_bytes_ = 0;
  const Plan* last_plan_ = nullptr;
  std::vector<std::string> whats_;    // call names seen (plans are few and cached)
  std::vector<double> arriving_;      // [peer * (rails + 1) + rail + 1]: when its frame's header came
};

// Microseconds since the epoch: the clock every rank's trace shares.
double trace_now_us();

}  // namespace railcoll::rt
