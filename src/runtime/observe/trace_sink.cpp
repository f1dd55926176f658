// The trace sink and the trace-event writer (trace_sink.hpp). The format is
// Chrome's JSON object format ({"traceEvents": [...]}), which Perfetto and
// chrome://tracing open: a rank is a process (pid = rank), its tracks are
// threads; spans are complete events ("ph": "X", ts and dur in microseconds).
#include "runtime/observe/trace_sink.hpp"

#include <sys/stat.h>
#include <time.h>

#include <algorithm>

#include "runtime/engine/plan.hpp"

namespace railcoll::rt {

double trace_now_us() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

static void json_text(FILE* f, const char* s) {
  fputc('"', f);
  for (; *s; ++s) {
    if (*s == '"' || *s == '\\')
      fprintf(f, "\\%c", *s);
    else if (static_cast<unsigned char>(*s) < 0x20)
      fputc(' ', f);
    else
      fputc(*s, f);
  }
  fputc('"', f);
}

TraceWriter::TraceWriter(const std::string& path, int rank, int node, int rails, const std::string& source)
    : pid_(rank) {
  const size_t slash = path.rfind('/');
  if (slash != std::string::npos)
    for (size_t at = 1; at <= slash; ++at)
      if (at == slash || path[at] == '/') mkdir(path.substr(0, at).c_str(), 0777);
  f_ = fopen(path.c_str(), "w");
  if (!f_) return;
  fprintf(f_, "{\"otherData\": {\"railcoll_trace\": 1, \"source\": ");
  json_text(f_, source.c_str());
  fprintf(f_, ", \"rank\": %d, \"node\": %d, \"rails\": %d},\n\"displayTimeUnit\": \"ns\",\n\"traceEvents\": [\n", rank,
          node, rails);
  auto meta = [&](const char* what, int tid, const std::string& name) {
    fprintf(f_, "%s{\"name\": \"%s\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"args\": {\"name\": ", first_ ? "" : ",\n",
            what, pid_, tid);
    json_text(f_, name.c_str());
    fprintf(f_, "}}");
    first_ = false;
  };
  meta("process_name", 0, "rank " + std::to_string(rank) + " (node " + std::to_string(node) + ")");
  fprintf(f_, ",\n{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": %d, \"args\": {\"sort_index\": %d}}", pid_,
          rank);
  meta("thread_name", kTraceCallTrack, "calls");
  meta("thread_name", kTraceProgramTrack, "program");
  meta("thread_name", kTraceLocalTrack, "from this node");
  for (int r = 0; r < rails; ++r) meta("thread_name", kTraceRailTrack + r, "rail " + std::to_string(r));
}

TraceWriter::~TraceWriter() {
  if (!f_) return;
  fprintf(f_, "\n]}\n");
  fclose(f_);
}

void TraceWriter::event(const TraceEvent& e, const std::string* name) {
  if (!f_) return;
  fprintf(f_, "%s{\"name\": ", first_ ? "" : ",\n");
  first_ = false;
  json_text(f_, name ? name->c_str() : e.name);
  fprintf(f_, ", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": %d, \"tid\": %d, \"args\": {",
          e.cat, e.ts, e.dur, pid_, e.tid);
  fprintf(f_, "\"call\": %llu", static_cast<unsigned long long>(e.call));
  if (e.op >= 0) fprintf(f_, ", \"op\": %d", e.op);
  if (e.step >= 0) fprintf(f_, ", \"step\": %d", e.step);
  if (e.peer >= 0) fprintf(f_, ", \"peer\": %d", e.peer);
  if (e.rail >= -1) fprintf(f_, ", \"rail\": %d", e.rail);
  if (e.bytes) fprintf(f_, ", \"bytes\": %llu", static_cast<unsigned long long>(e.bytes));
  fprintf(f_, "}}");
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
