#include "testbed/job.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <glob.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <optional>
#include <stdexcept>

#include "core/errors.hpp"

namespace railcoll::testbed {

namespace {

volatile sig_atomic_t forwarded_signal = 0;
void on_signal(int sig) { forwarded_signal = sig; }

// How long ended ranks get between SIGTERM and SIGKILL.
constexpr double kKillAfter = 3.0;
// How long ranks asked for their flight records get to write them.
constexpr double kRecordsAfter = 0.5;
// A line longer than this is forwarded in pieces (a rank printing without
// newlines must not grow the launcher without bound).
constexpr size_t kMaxLine = 1 << 16;

// Writes all of `text` to fd; gives up on errors (a closed pipe: the reader is gone).
void write_fully(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n > 0) done += static_cast<size_t>(n);
    else if (n < 0 && errno == EINTR) continue;
    else return;
  }
}

// Whether process pid has a handler for sig (its SigCgt mask in /proc).
bool catches(pid_t pid, int sig) {
  FILE* f = fopen(("/proc/" + std::to_string(pid) + "/status").c_str(), "r");
  if (!f) return false;
  char line[256];
  unsigned long long mask = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "SigCgt: %llx", &mask) == 1) break;
  fclose(f);
  return (mask >> (sig - 1)) & 1;
}

// One rank being watched: its process, and the unfinished lines of its output.
struct Watched {
  Process proc;
  RankStatus st;
  std::string pending[2];  // stdout, stderr
};

class Launcher {
 public:
  Launcher(const std::vector<RankProcess>& ranks, const JobOptions& o) : ranks_(ranks), o_(o) {}

  JobResult run() {
    struct sigaction sa {}, old_int{}, old_term{}, ign{}, old_pipe{};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    ign.sa_handler = SIG_IGN;  // a closed stdout must not kill the launcher and orphan the job
    sigaction(SIGPIPE, &ign, &old_pipe);
    forwarded_signal = 0;
    // Read the terminal only in the foreground: a launcher started with & must
    // not be stopped by SIGTTIN (rank 0 then reads /dev/null).
    forwarding_stdin_ = fcntl(0, F_GETFD) != -1 && (!isatty(0) || tcgetpgrp(0) == getpgrp());
    start_ = monotonic_seconds();
    start_all();
    watch();
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGPIPE, &old_pipe, nullptr);
    for (auto& w : watched_) res_.ranks.push_back(w.st);
    return res_;
  }

 private:
  void start_all() {
    watched_.resize(ranks_.size());
    for (size_t i = 0; i < ranks_.size(); ++i) {
      Watched& w = watched_[i];
      w.st.where = ranks_[i].where;
      SpawnOptions so;
      so.argv = ranks_[i].argv;
      so.env = ranks_[i].env;
      // stdin goes to rank 0 only, through the launcher (forward_stdin): a rank
      // in a process group of its own may not read the terminal itself.
      so.in = i == 0 && forwarding_stdin_ ? Stream::Pipe : Stream::Null;
      so.out = so.err = Stream::Pipe;
      try {
        w.proc = Process(so);
        w.st.started = true;
      } catch (const SpawnError& e) {
        fail(static_cast<int>(i), 1, "cannot start rank " + std::to_string(i) + ": " + e.what());
        break;
      }
    }
  }

  // Records the cause of the job's failure (the first one only) and ends the
  // other ranks, now or after the grace period.
  void fail(int rank, int status, const std::string& why) {
    if (!res_.failure.empty()) return;
    res_.failure = why;
    res_.exit_status = status;
    res_.first_failed_rank = rank;
    end_at_ = monotonic_seconds() + (rank >= 0 ? o_.grace_seconds : 0);
  }

  // Forwards the whole lines read so far; with `all`, the rest too, ended as
  // a line so the next rank's output starts on a line of its own. A piece of
  // an overlong line is likewise ended as a line on the launcher's output; an
  // on_line callback gets it as it is, without a '\n', and the rest of the line
  // in the calls after: what it joins is the rank's output, however long the
  // line (one JSON record of 10,000 samples is ~90 KB). To the launcher's
  // stdout/stderr all lines of one read go in one write: the launcher is their
  // only writer, so they cannot interleave with another rank's.
  void forward(int rank, int stream, bool all) {
    std::string& buf = watched_[rank].pending[stream];
    size_t end = buf.rfind('\n');
    end = end == std::string::npos ? 0 : end + 1;  // [0, end) holds whole lines
    if (buf.size() > end && (all || buf.size() - end >= kMaxLine)) {
      if (all || !o_.on_line) buf += '\n';
      end = buf.size();
    }
    if (end == 0) return;
    if (o_.on_line) {
      for (size_t from = 0, nl; from < end; from = nl + 1) {
        nl = std::min(buf.find('\n', from), end - 1);  // the last piece may hold no '\n'
        o_.on_line(rank, stream == 1, buf.substr(from, nl + 1 - from));
      }
    } else if (!o_.tag_output) {
      write_fully(stream == 0 ? 1 : 2, buf.substr(0, end));
    } else {
      const std::string tag = "[" + std::to_string(rank) + "] ";
      std::string out;
      out.reserve(end + 16 * tag.size());
      for (size_t from = 0, nl; from < end; from = nl + 1) {
        nl = buf.find('\n', from);
        out.append(tag).append(buf, from, nl + 1 - from);
      }
      write_fully(stream == 0 ? 1 : 2, out);
    }
    buf.erase(0, end);
  }

  void drain(int rank, bool final) {
    Watched& w = watched_[rank];
    int fds[2] = {w.proc.stdout_fd(), w.proc.stderr_fd()};
    for (int s = 0; s < 2; ++s) {
      if (fds[s] < 0) continue;
      bool open = read_available(fds[s], &w.pending[s]);
      forward(rank, s, !open || final);
      // After the rank's exit nothing more is read: a process it left behind
      // may hold the pipe open forever.
      if (!open || final) s == 0 ? w.proc.close_stdout() : w.proc.close_stderr();
    }
  }

  // The launcher's stdin -> rank 0, as rank 0 takes it; end of file closes
  // rank 0's stdin. Nothing is read ahead while rank 0 has not taken the last piece.
  void forward_stdin(bool stdin_readable) {
    Process& p = watched_[0].proc;
    if (!forwarding_stdin_ || p.stdin_fd() < 0) return;
    if (stdin_pending_.empty() && stdin_readable) {
      char buf[65536];
      ssize_t n = read(0, buf, sizeof buf);
      if (n > 0) stdin_pending_.assign(buf, static_cast<size_t>(n));
      else if (n == 0 || errno != EINTR) stdin_eof_ = true;
    }
    while (!stdin_pending_.empty()) {
      ssize_t n = write(p.stdin_fd(), stdin_pending_.data(), stdin_pending_.size());
      if (n > 0) {
        stdin_pending_.erase(0, static_cast<size_t>(n));
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        if (n < 0 && errno != EAGAIN) stdin_pending_.clear(), stdin_eof_ = true;  // rank 0 closed its stdin
        break;
      }
    }
    if (stdin_eof_ && stdin_pending_.empty()) p.close_stdin();
  }

  void reaped(int rank) {
    Watched& w = watched_[rank];
    w.st.status = w.proc.status();
    w.st.seconds = monotonic_seconds() - start_;
    drain(rank, true);
    if (!w.st.status.ok() && !w.st.ended_by_launcher)
      fail(rank, w.st.status.shell_code(), "rank " + std::to_string(rank) + " " + w.st.status.text());
  }

  void signal_running(int sig) {
    for (auto& w : watched_)
      if (w.proc.running()) {
        w.st.ended_by_launcher = true;
        w.proc.signal_group(sig);
      }
  }

  // SIGUSR1 to each running rank that handles it (railcoll's recorder does,
  // unless the program took the signal; an MPI launcher passes it on); to
  // others it would be a kill, so they are not sent it.
  void ask_for_records() {
    for (auto& w : watched_)
      if (w.proc.running() && catches(w.proc.pid(), SIGUSR1)) kill(w.proc.pid(), SIGUSR1);
  }

  size_t running() const {
    size_t n = 0;
    for (auto& w : watched_) n += w.proc.running();
    return n;
  }

  void watch() {
    int stage = 0;  // 0 running, 1 SIGTERM sent, 2 SIGKILL sent
    bool asked_for_records = false;
    double term_at = 0;
    while (running() > 0) {
      std::vector<pollfd> fds;
      const int rank0_in = watched_.empty() ? -1 : watched_[0].proc.stdin_fd();
      const bool want_stdin = rank0_in >= 0 && stdin_pending_.empty() && !stdin_eof_;
      if (want_stdin) fds.push_back({0, POLLIN, 0});
      if (rank0_in >= 0 && !stdin_pending_.empty()) fds.push_back({rank0_in, POLLOUT, 0});
      for (auto& w : watched_)
        for (int fd : {w.proc.stdout_fd(), w.proc.stderr_fd(), w.proc.exit_fd()})
          if (fd >= 0) fds.push_back({fd, POLLIN, 0});
      double now = monotonic_seconds(), next = now + 0.1;
      if (stage == 0 && !res_.failure.empty()) next = std::min(next, end_at_);
      if (stage == 0 && o_.timeout_seconds > 0) next = std::min(next, start_ + o_.timeout_seconds);
      if (stage == 1) next = std::min(next, term_at + kKillAfter);
      poll(fds.data(), fds.size(), std::max(0, static_cast<int>((next - now) * 1000) + 1));
      forward_stdin(want_stdin && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)));
      // Exits first, in rank order; then output.
      for (size_t i = 0; i < watched_.size(); ++i)
        if (watched_[i].proc.running() && watched_[i].proc.try_reap()) reaped(static_cast<int>(i));
      for (size_t i = 0; i < watched_.size(); ++i)
        if (watched_[i].proc.running()) drain(static_cast<int>(i), false);

      now = monotonic_seconds();
      if (forwarded_signal && stage == 0) {
        int sig = forwarded_signal;
        fail(-1, 128 + sig, "interrupted by signal " + std::to_string(sig));
        signal_running(sig);
        stage = 1, term_at = now;
        continue;
      }
      if (stage == 0 && o_.timeout_seconds > 0 && now - start_ >= o_.timeout_seconds) {
        fail(-1, 124, "the job exceeded its time limit of " + std::to_string(static_cast<int>(o_.timeout_seconds)) +
                          " s");
        end_at_ = now;
      }
      if (stage == 0 && !res_.failure.empty() && now >= end_at_ && o_.ask_for_flight_records && !asked_for_records) {
        asked_for_records = true;
        ask_for_records();
        end_at_ = now + kRecordsAfter;
      } else if (stage == 0 && !res_.failure.empty() && now >= end_at_) {
        signal_running(SIGTERM);
        stage = 1, term_at = now;
      } else if (stage == 1 && now - term_at >= kKillAfter) {
        signal_running(SIGKILL);
        stage = 2;
      }
    }
  }

  const std::vector<RankProcess>& ranks_;
  const JobOptions& o_;
  std::vector<Watched> watched_;
  JobResult res_;
  double start_ = 0, end_at_ = 0;
  bool forwarding_stdin_ = false, stdin_eof_ = false;
  std::string stdin_pending_;  // read from the launcher's stdin, not yet taken by rank 0
};

}  // namespace

std::string RankStatus::text() const {
  if (!started) return "not started";
  if (ended_by_launcher && !status.exited)
    return std::string("ended by the launcher (SIG") + (sigabbrev_np(status.signal) ? sigabbrev_np(status.signal) : "?") +
           ")";
  if (ended_by_launcher) return "ended by the launcher, then " + status.text();
  return status.text();
}

std::string JobResult::rank_report() const {
  std::ostringstream o;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const RankStatus& r = ranks[i];
    o << "  rank " << i;
    if (!r.where.empty()) o << " (" << r.where << ")";
    o << ": " << r.text();
    if (r.started) {
      char t[32];
      snprintf(t, sizeof t, " after %.2f s", r.seconds);
      o << t;
    }
    if (static_cast<int>(i) == first_failed_rank) o << "  <- first to fail";
    o << "\n";
  }
  return o.str();
}

JobResult run_job(const std::vector<RankProcess>& ranks, const JobOptions& options) {
  return Launcher(ranks, options).run();
}

std::string new_job_id() {
  std::random_device rd;
  std::mt19937_64 g((static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(getpid()) ^
                    static_cast<uint64_t>(monotonic_seconds() * 1e9));
  char buf[17];
  snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(g()));
  return buf;
}

std::string new_job_key() {
  unsigned char k[16];
  size_t got = 0;
  while (got < sizeof k) {
    ssize_t r = getrandom(k + got, sizeof k - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) throw std::runtime_error(std::string("cannot make a job key: getrandom: ") + strerror(errno));
    got += static_cast<size_t>(r);
  }
  char hex[33];
  for (size_t i = 0; i < sizeof k; ++i) snprintf(hex + 2 * i, 3, "%02x", k[i]);
  return hex;
}

int free_port(const std::string& address) {
  // The kernel hands out ephemeral ports from ip_local_port_range (32768 and up
  // by default); a port found by binding to 0 comes from there, and measured on
  // the emulated cluster 4 jobs in 70 lost it to one of their own sockets.
  int low = 32768, high = 60999;
  if (FILE* f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (fscanf(f, "%d %d", &low, &high) != 2) low = 32768;
    fclose(f);
  }
  int lo = 10000, hi = std::max(lo + 1000, low);
  std::random_device rd;
  for (int attempt = 0; attempt < 50; ++attempt) {
    int port = lo + static_cast<int>(rd() % static_cast<unsigned>(hi - lo));
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return port;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, address.c_str(), &a.sin_addr);
    bool free = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    close(fd);
    if (free) return port;
  }
  return 0;
}

std::map<std::string, std::string> rank_env(int rank, int size, int local_rank, int local_size, int node,
                                            const std::string& store, const std::string& job_id,
                                            const std::string& job_key, const std::string& rails) {
  std::map<std::string, std::string> env = {
      {"RAILCOLL_RANK", std::to_string(rank)},
      {"RAILCOLL_SIZE", std::to_string(size)},
      {"RAILCOLL_LOCAL_RANK", std::to_string(local_rank)},
      {"RAILCOLL_LOCAL_SIZE", std::to_string(local_size)},
      {"RAILCOLL_NODE", std::to_string(node)},
      {"RAILCOLL_STORE", store},
      {"RAILCOLL_JOB_ID", job_id},
      {"RAILCOLL_JOB_KEY", job_key},
  };
  if (!rails.empty()) env["RAILCOLL_RAILS"] = rails;
  return env;
}

// ---------------------------------------------------------------- flight records

JobFlightRecords::JobFlightRecords() : start_(time(nullptr) - 1) {
  if (const char* given = getenv("RAILCOLL_FLIGHT_DIR"); given && *given) {
    dir_ = given;
    return;
  }
  const char* tmp = getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/railcoll-records-XXXXXX";
  if (!mkdtemp(tmpl.data())) return;  // the ranks keep their default directory
  dir_ = tmpl;
  made_ = true;
  setenv("RAILCOLL_FLIGHT_DIR", dir_.c_str(), 1);
}

JobFlightRecords::~JobFlightRecords() {
  if (!made_ || keep_) return;
  unsetenv("RAILCOLL_FLIGHT_DIR");
  glob_t g{};
  if (glob((dir_ + "/*").c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) unlink(g.gl_pathv[i]);
  globfree(&g);
  rmdir(dir_.c_str());
}

std::vector<int> flight_record_ranks(const std::string& dir, time_t since) {
  std::vector<int> ranks;
  glob_t g{};
  if (glob((dir + "/flight-*-rank*.txt").c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) {
      const std::string path = g.gl_pathv[i];
      struct stat st {};
      if (stat(path.c_str(), &st) != 0 || st.st_mtime < since) continue;
      const size_t at = path.rfind("-rank");
      const int r = atoi(path.c_str() + at + 5);
      if (std::find(ranks.begin(), ranks.end(), r) == ranks.end()) ranks.push_back(r);
    }
  globfree(&g);
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

std::string JobFlightRecords::report(const JobResult& result, int ranks) {
  if (result.exit_status == 0 || dir_.empty()) return "";
  const std::vector<int> have = flight_record_ranks(dir_, start_);
  if (have.empty()) return "";  // not a railcoll job, or it failed before any communicator
  keep_ = true;
  std::string list;  // "0-2, 4, 5"
  for (size_t i = 0; i < have.size();) {
    size_t j = i;
    while (j + 1 < have.size() && have[j + 1] == have[j] + 1) ++j;
    list += (list.empty() ? "" : ", ") + std::to_string(have[i]);
    if (j > i) list += (j == i + 1 ? ", " : "-") + std::to_string(have[j]);
    i = j + 1;
  }
  return "the flight records of rank" + std::string(have.size() > 1 ? "s " : " ") + list + " (" +
         std::to_string(have.size()) + " of " + std::to_string(ranks) + ") are in " + dir_ +
         "; railcoll doctor " + dir_ + " reads them";
}

// ---------------------------------------------------------------- layouts

std::vector<int> layout_of(int n, int ppn) {
  if (n < 1 || ppn < 1) throw InputError("a job needs at least 1 rank and 1 rank per node");
  std::vector<int> layout(static_cast<size_t>(n / ppn), ppn);
  if (n % ppn) layout.push_back(n % ppn);
  return layout;
}

std::optional<std::vector<int>> parse_number_list(const std::string& text, int min, int max) {
  std::vector<int> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t used = 0;
    long v = -1;
    try {
      v = std::stol(item, &used);
    } catch (...) {
      used = 0;
    }
    if (item.empty() || used != item.size() || v < min || v > max) return std::nullopt;
    out.push_back(static_cast<int>(v));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<int> parse_layout(const std::string& text, const std::string& what) {
  auto layout = parse_number_list(text, 1, 4096);
  if (!layout)
    throw InputError(what + " expects ranks per node, whole numbers from 1 separated by commas (like 5,5,3), got '" +
                     text + "'");
  return *layout;
}

std::string layout_text(const std::vector<int>& layout) {
  std::string s;
  for (int n : layout) s += (s.empty() ? "" : ",") + std::to_string(n);
  return s;
}

int layout_ranks(const std::vector<int>& layout) {
  int n = 0;
  for (int x : layout) n += x;
  return n;
}

// ---------------------------------------------------------------- local jobs

namespace {
// Belt and braces: the runtime unlinks its segments as soon as they are mapped.
void remove_job_shm(const std::string& job_id) {
  glob_t g{};
  std::string pattern = "/dev/shm/railcoll-" + job_id + "-*";
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) unlink(g.gl_pathv[i]);
  globfree(&g);
}
}  // namespace

JobResult run_local_job(const LocalJob& job, const JobOptions& options) {
  const std::string job_id = new_job_id(), key = new_job_key();
  const std::string store = "127.0.0.1:" + std::to_string(free_port("127.0.0.1"));
  std::string rail_list;
  for (int r = 0; r < job.rails; ++r) rail_list += (r ? ",127.0.0." : "127.0.0.") + std::to_string(r + 1);
  const int n = layout_ranks(job.layout);
  std::vector<RankProcess> ranks;
  for (int node = 0, rank = 0; node < static_cast<int>(job.layout.size()); ++node)
    for (int local = 0; local < job.layout[node]; ++local, ++rank) {
      RankProcess p;
      p.argv = job.program;
      p.env = rank_env(rank, n, local, job.layout[node], node, store, job_id, key, rail_list);
      if (!job.pretend_nodes) p.env.erase("RAILCOLL_NODE");  // one real node: its hostname
      if (job.pretend_nodes) p.where = "node " + std::to_string(node);
      ranks.push_back(std::move(p));
    }
  JobResult res = run_job(ranks, options);
  remove_job_shm(job_id);
  return res;
}

}  // namespace railcoll::testbed
