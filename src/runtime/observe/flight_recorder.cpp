// The flight recorder (flight_recorder.hpp). The file it writes, one per rank
// and communicator (docs/observability.md has the format):
//
//   railcoll-flight 1
//   rank 3 size 4 node 1 comm 9c3e...  pid 4711 reason timeout written 1764371234.123456
//   call  state  start  end  send_bytes  recv_bytes  op  nops  kind  step  peer  rail  what  detail  cause
//   ...one tab-separated line per call, oldest first...
#include "runtime/observe/flight_recorder.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "runtime/engine/plan.hpp"

namespace railcoll::rt {

namespace {

double wall_seconds() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// A text field of the file: cut to fit, tabs and line ends made spaces.
void put_text(char* dst, size_t cap, const char* src) {
  size_t i = 0;
  for (; src[i] && i + 1 < cap; ++i) dst[i] = (src[i] == '\t' || src[i] == '\n' || src[i] == '\r') ? ' ' : src[i];
  dst[i] = 0;
}

const char* state_name(FlightEntry::State s) {
  switch (s) {
    case FlightEntry::Empty: return "empty";
    case FlightEntry::Entering: return "entering";
    case FlightEntry::Running: return "running";
    case FlightEntry::Waiting: return "waiting";
    case FlightEntry::Done: return "done";
    case FlightEntry::Failed: return "failed";
  }
  return "?";
}

// The recorders of this process, for SIGUSR1: a fixed table, read by the
// handler without a lock.
constexpr int kMaxRecorders = 64;
std::atomic<const FlightRecorder*> recorders[kMaxRecorders];
std::atomic<bool> handler_installed{false};

void on_sigusr1(int) {
  const int saved = errno;
  for (auto& r : recorders)
    if (const FlightRecorder* rec = r.load(std::memory_order_acquire)) rec->dump("SIGUSR1");
  errno = saved;
}

// SIGUSR1 writes the records out, unless the program handles it itself.
void install_handler() {
  if (handler_installed.exchange(true)) return;
  struct sigaction old {};
  if (sigaction(SIGUSR1, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) return;
  struct sigaction sa {};
  sa.sa_handler = on_sigusr1;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, nullptr);
}

void make_dirs(const std::string& dir) {
  for (size_t at = 1; at <= dir.size(); ++at)
    if (at == dir.size() || dir[at] == '/') mkdir(dir.substr(0, at).c_str(), 0777);
}

}  // namespace

std::string flight_path(const std::string& dir, uint64_t comm_id, int rank) {
  char name[64];
  snprintf(name, sizeof name, "/flight-%016llx-rank%d.txt", static_cast<unsigned long long>(comm_id), rank);
  return dir + name;
}

std::string default_flight_dir() {
  const char* tmp = getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/railcoll-flight-" + std::to_string(getuid());
}

FlightRecorder::FlightRecorder(int rank, int size, int node, uint64_t comm_id, size_t records, std::string dir)
    : rank_(rank), size_(size), node_(node), comm_id_(comm_id), dir_(std::move(dir)), ring_(records ? records : 1) {
  path_ = flight_path(dir_, comm_id_, rank_);
  tmp_path_ = path_ + ".part";
  install_handler();
  for (auto& r : recorders) {
    const FlightRecorder* none = nullptr;
    if (r.compare_exchange_strong(none, this)) break;
  }
}

FlightRecorder::~FlightRecorder() {
  for (auto& r : recorders) {
    const FlightRecorder* me = this;
    r.compare_exchange_strong(me, nullptr);
  }
}

void FlightRecorder::on_call_begin(uint64_t call, const Plan& plan) {
  ++count_;
  FlightEntry& e = current();
  e.state = FlightEntry::Empty;  // a SIGUSR1 now skips it rather than mixing two calls
  e.call = call;
  const Schedule& s = plan.sched;
  e.send_bytes = s.send_bytes.size() > static_cast<size_t>(rank_) ? s.send_bytes[rank_] : 0;
  e.recv_bytes = s.recv_bytes.size() > static_cast<size_t>(rank_) ? s.recv_bytes[rank_] : 0;
  e.start = wall_seconds();
  e.end = 0;
  e.op = -1;
  e.nops = static_cast<int32_t>(s.programs[rank_].size());
  e.kind = e.step = e.peer = e.rail = -1;
  // Copied as it is (every call pays this); the dump makes its tabs spaces.
  const size_t n = std::min(plan.what.size(), sizeof e.what - 1);
  std::memcpy(e.what, plan.what.data(), n);
  e.what[n] = 0;
  e.detail[0] = e.cause[0] = 0;
  e.state = FlightEntry::Entering;
}

void FlightRecorder::on_op(int index, const Op& op) {
  FlightEntry& e = current();
  e.op = index;
  e.kind = static_cast<int32_t>(op.kind);
  e.step = op.step;
  e.state = FlightEntry::Running;
}

void FlightRecorder::on_op_end(int, const Op&) { current().state = FlightEntry::Running; }

void FlightRecorder::on_wait(int index, int peer, int rail, const std::string& what) {
  FlightEntry& e = current();
  if (index >= e.nops) {  // past the program: its sends drain
    e.op = index;
    e.kind = -1;
  }
  e.peer = peer;
  e.rail = rail;
  put_text(e.detail, sizeof e.detail, what.c_str());
  e.state = FlightEntry::Waiting;
}

void FlightRecorder::on_call_end(uint64_t call, const std::string& error) {
  if (count_ == 0 || current().call != call) {  // refused before it began (the communicator is broken)
    if (!error.empty()) dump("error");
    return;
  }
  FlightEntry& e = current();
  e.end = wall_seconds();
  if (error.empty()) {
    e.state = FlightEntry::Done;
    return;
  }
  e.state = FlightEntry::Failed;
  put_text(e.detail, sizeof e.detail, error.c_str());
  const size_t cause = error.find("likely cause: ");
  if (cause != std::string::npos) put_text(e.cause, sizeof e.cause, error.c_str() + cause + 14);
  dump(error.find("timed out") != std::string::npos ? "timeout" : "error");
}

std::vector<FlightEntry> FlightRecorder::entries() const {
  std::vector<FlightEntry> out;
  const uint64_t n = ring_.size();
  for (uint64_t i = count_ > n ? count_ - n : 0; i < count_; ++i) out.push_back(ring_[i % n]);
  return out;
}

bool FlightRecorder::dump(const char* reason) const {
  if (strcmp(reason, "SIGUSR1") != 0)
    make_dirs(dir_);
  else
    mkdir(dir_.c_str(), 0777);  // no allocation in a signal handler
  const char* tmp = tmp_path_.c_str();
  const int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  char line[1024];
  bool ok = true;
  auto out = [&](int n) {
    if (n < 0) return;
    size_t len = static_cast<size_t>(n) < sizeof line ? static_cast<size_t>(n) : sizeof line - 1;
    ok &= write(fd, line, len) == static_cast<ssize_t>(len);
  };
  out(snprintf(line, sizeof line, "railcoll-flight 1\nrank %d size %d node %d comm %016llx pid %d reason %s written %.6f\n",
               rank_, size_, node_, static_cast<unsigned long long>(comm_id_), static_cast<int>(getpid()), reason,
               wall_seconds()));
  out(snprintf(line, sizeof line,
               "call\tstate\tstart\tend\tsend_bytes\trecv_bytes\top\tnops\tkind\tstep\tpeer\trail\twhat\tdetail\tcause\n"));
  const uint64_t n = ring_.size();
  for (uint64_t i = count_ > n ? count_ - n : 0; i < count_; ++i) {
    const FlightEntry& e = ring_[i % n];
    if (e.state == FlightEntry::Empty) continue;
    const char* kind = e.kind >= 0 ? op_name(static_cast<OpKind>(e.kind)) : "-";
    char what[sizeof e.what];
    put_text(what, sizeof what, e.what);
    out(snprintf(line, sizeof line, "%llu\t%s\t%.6f\t%.6f\t%llu\t%llu\t%d\t%d\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n",
                 static_cast<unsigned long long>(e.call), state_name(e.state), e.start, e.end,
                 static_cast<unsigned long long>(e.send_bytes), static_cast<unsigned long long>(e.recv_bytes), e.op,
                 e.nops, kind, e.step, e.peer, e.rail, what, e.detail, e.cause));
  }
  close(fd);
  if (!ok || rename(tmp, path_.c_str()) != 0) {
    unlink(tmp);
    return false;
  }
  return true;
}

}  // namespace railcoll::rt
