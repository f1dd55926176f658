// The trace-event format railcoll writes (docs/observability.md, "Traces"):
// Chrome's JSON object format ({"traceEvents": [...]}), which Perfetto and
// chrome://tracing open. A rank is a process (pid = rank), its tracks are
// threads; spans are complete events ("ph": "X", ts and dur in microseconds).
// The runtime's trace sink (RAILCOLL_TRACE) and the simulator (`railcoll sim
// --trace`) both write through it, so a model and a measurement of one
// schedule can be put side by side (`railcoll trace --compare`).
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

namespace railcoll {

// Threads (tracks) of a rank's process in the trace.
constexpr int kTraceCallTrack = 0;     // the calls' spans
constexpr int kTraceProgramTrack = 1;  // the ops of this rank's program
constexpr int kTraceLocalTrack = 2;    // frames from ranks of the same node
constexpr int kTraceRailTrack = 10;    // + rail: frames arriving on that rail

// One trace event written as JSON.
struct TraceEvent {
  double ts = 0, dur = 0;  // microseconds
  int tid = 0;
  const char* name = "";
  const char* cat = "";
  uint64_t call = 0;
  int op = -1, step = -1, peer = -1, rail = -2;
  uint64_t bytes = 0;
};

// Writes the file's beginning (the process and track names), events, and end.
class TraceWriter {
 public:
  TraceWriter(const std::string& path, int rank, int node, int rails, const std::string& source);
  ~TraceWriter();
  bool ok() const { return f_ != nullptr; }
  void event(const TraceEvent& e, const std::string* name = nullptr);

 private:
  FILE* f_ = nullptr;
  int pid_;
  bool first_ = true;
};

}  // namespace railcoll
