// What watches a communicator's calls, made from the settings at set-up: the
// flight recorder (RAILCOLL_FLIGHT_RECORDS > 0, the default) and the trace
// sink (RAILCOLL_TRACE=DIR), behind the executor's one Observer pointer
// (engine/observer.hpp); observer() is null when both are off.
#pragma once
#include <memory>
#include <string>

#include "core/settings.hpp"
#include "runtime/engine/observer.hpp"
#include "runtime/observe/flight_recorder.hpp"
#include "runtime/observe/trace_sink.hpp"

namespace railcoll::rt {

class Observability final : public Observer {
 public:
  Observability(const Settings& settings, int rank, int size, int node, int rails, uint64_t comm_id);
  ~Observability() override;

  // What the executor calls: the recorder, the sink, this (both), or null.
  Observer* observer();
  FlightRecorder* recorder() { return recorder_.get(); }
  TraceSink* trace() { return trace_.get(); }
  // The communicator closes: the record is written when RAILCOLL_FLIGHT_DIR
  // was given ("at exit when asked"), the trace's buffer is written out.
  void close();

  // Both: each event to the recorder, then to the sink.
  void on_call_begin(uint64_t call, const Plan& plan) override;
  void on_op(int index, const Op& op) override;
  void on_op_end(int index, const Op& op) override;
  void on_wait(int index, int peer, int rail, const std::string& what) override;
  void on_send(int index, int peer, int rail, uint64_t bytes) override;
  void on_arrival(int peer, int rail, int op, uint64_t bytes, bool begin) override;
  void on_call_end(uint64_t call, const std::string& error) override;

 private:
  std::unique_ptr<FlightRecorder> recorder_;
  std::unique_ptr<TraceSink> trace_;
  bool dump_at_close_ = false;
};

}  // namespace railcoll::rt
