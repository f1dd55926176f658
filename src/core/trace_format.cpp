// The trace-event writer (trace_format.hpp).
#include "core/trace_format.hpp"

#include <sys/stat.h>

namespace railcoll {

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

}  // namespace railcoll
