// The recorder and the trace sink of a communicator (observability.hpp).
#include "runtime/observe/observability.hpp"

namespace railcoll::rt {

Observability::Observability(const Settings& settings, int rank, int size, int node, int rails, uint64_t comm_id) {
  const int64_t records = settings.integer(Setting::FlightRecords);
  std::string dir = settings.text(Setting::FlightDir);
  dump_at_close_ = !dir.empty();
  if (dir.empty()) dir = default_flight_dir();
  if (records > 0)
    recorder_ = std::make_unique<FlightRecorder>(rank, size, node, comm_id, static_cast<size_t>(records), dir);
  const std::string trace_dir = settings.text(Setting::Trace);
  if (!trace_dir.empty()) trace_ = std::make_unique<TraceSink>(rank, size, node, rails, comm_id, trace_dir);
}

Observability::~Observability() = default;

Observer* Observability::observer() {
  if (recorder_ && trace_) return this;
  if (recorder_) return recorder_.get();
  return trace_.get();
}

void Observability::close() {
  if (recorder_ && dump_at_close_) recorder_->dump("exit");
  if (trace_) trace_->flush();
}

void Observability::on_call_begin(uint64_t call, const Plan& plan) {
  recorder_->on_call_begin(call, plan);
  trace_->on_call_begin(call, plan);
}
void Observability::on_op(int index, const Op& op) {
  recorder_->on_op(index, op);
  trace_->on_op(index, op);
}
void Observability::on_op_end(int index, const Op& op) {
  recorder_->on_op_end(index, op);
  trace_->on_op_end(index, op);
}
void Observability::on_wait(int index, int peer, int rail, const std::string& what) {
  recorder_->on_wait(index, peer, rail, what);
  trace_->on_wait(index, peer, rail, what);
}
void Observability::on_send(int index, int peer, int rail, uint64_t bytes) { trace_->on_send(index, peer, rail, bytes); }
void Observability::on_arrival(int peer, int rail, int op, uint64_t bytes, bool begin) {
  trace_->on_arrival(peer, rail, op, bytes, begin);
}
void Observability::on_call_end(uint64_t call, const std::string& error) {
  recorder_->on_call_end(call, error);
  trace_->on_call_end(call, error);
}

}  // namespace railcoll::rt
