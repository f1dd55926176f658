// The trace sink (trace_sink.hpp); the format is core/trace_format.hpp's.
#include "runtime/observe/trace_sink.hpp"

#include <time.h>

#include <algorithm>

#include "runtime/engine/plan.hpp"

namespace railcoll::rt {

double trace_now_us() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

static std::string trace_path(const std::string& dir, uint64_t comm_id, int rank) {
  char name[64];
  snprintf(name, sizeof name, "/trace-%016llx-rank%d.json", static_cast<unsigned long long>(comm_id), rank);
  return dir + name;
}

TraceSink::TraceSink(int rank, int size, int node, int rails, uint64_t comm_id, const std::string& dir,
                     size_t buffer_events)
    : rank_(rank),
      size_(size),
      rails_(rails),
      path_(trace_path(dir, comm_id, rank)),
      out_(path_, rank, node, rails, "measured"),
      buf_(std::max<size_t>(buffer_events, 16)),
      arriving_(static_cast<size_t>(size) * static_cast<size_t>(rails + 1), 0) {}

TraceSink::~TraceSink() { flush(); }

void TraceSink::push(const TraceEvent& e, int what) {
  if (used_ == buf_.size()) flush();
  buf_[used_++] = Pending{e, what};
}

void TraceSink::flush() {
  for (size_t i = 0; i < used_; ++i) out_.event(buf_[i].e, buf_[i].what >= 0 ? &whats_[buf_[i].what] : nullptr);
  used_ = 0;
}

void TraceSink::on_call_begin(uint64_t call, const Plan& plan) {
  call_ = call;
  call_start_ = trace_now_us();
  if (&plan != last_plan_) {
    last_plan_ = &plan;
    auto it = std::find(whats_.begin(), whats_.end(), plan.what);
    what_ = static_cast<int>(it - whats_.begin());
    if (it == whats_.end()) whats_.push_back(plan.what);
  }
}

void TraceSink::on_op(int, const Op&) {
  op_start_ = trace_now_us();
  wait_peer_ = -1;
  wait_rail_ = -2;
  put_bytes_ = 0;
}

void TraceSink::on_op_end(int index, const Op& op) {
  TraceEvent e;
  e.ts = op_start_;
  e.dur = trace_now_us() - op_start_;
  e.tid = kTraceProgramTrack;
  e.name = op_name(op.kind);
  e.cat = "op";
  e.call = call_;
  e.op = index;
  e.step = op.step;
  if (op.kind == OpKind::Put) {
    e.peer = op.peer;
    e.bytes = put_bytes_ ? put_bytes_ : op.bytes();
  } else if (op.kind == OpKind::Wait) {
    e.peer = wait_peer_;
    e.rail = wait_rail_;
  } else if (op.kind == OpKind::Copy || op.kind == OpKind::Reduce) {
    e.bytes = op.bytes();
  }
  push(e);
}

void TraceSink::on_wait(int, int peer, int rail, const std::string&) {
  wait_peer_ = peer;
  wait_rail_ = rail;
}

void TraceSink::on_send(int, int, int, uint64_t bytes) { put_bytes_ += bytes; }

void TraceSink::on_arrival(int peer, int rail, int op, uint64_t bytes, bool begin) {
  if (peer < 0 || peer >= size_ || rail >= rails_) return;
  double& since = arriving_[static_cast<size_t>(peer) * static_cast<size_t>(rails_ + 1) + static_cast<size_t>(rail + 1)];
  const double now = trace_now_us();
  if (begin) {
    since = now;
    return;
  }
  TraceEvent e;
  e.ts = since > 0 ? since : now;
  e.dur = now - e.ts;
  e.tid = rail < 0 ? kTraceLocalTrack : kTraceRailTrack + rail;
  e.name = "recv";
  e.cat = "rail";
  e.call = call_;
  e.op = op;
  e.peer = peer;
  e.rail = rail;
  e.bytes = bytes;
  push(e);
  since = 0;
}

void TraceSink::on_call_end(uint64_t call, const std::string& error) {
  TraceEvent e;
  e.ts = call_start_;
  e.dur = trace_now_us() - call_start_;
  e.tid = kTraceCallTrack;
  e.cat = error.empty() ? "call" : "failed call";
  e.call = call;
  push(e, what_);
  if (!error.empty()) flush();
}

}  // namespace railcoll::rt
