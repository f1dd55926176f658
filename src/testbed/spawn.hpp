// Starting processes: the one fork/exec of everything that runs other programs
// (the launchers, the emulated cluster's `ip` and `tc` calls, the benchmark's
// workers, Open MPI, the traffic job, the plot script). A child gets an
// environment built before fork (nothing but async-signal-safe calls between
// fork and exec, so threads in the parent are safe), its own process group so
// its children can be signalled with it, standard streams inherited, closed
// (/dev/null), piped to the parent or sent to a file, and a pidfd that a poll
// loop can wait on together with its pipes. Every wait takes a deadline.
#pragma once
#include <sys/types.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace railcoll::testbed {

// Seconds on CLOCK_MONOTONIC, the clock of every deadline here.
double monotonic_seconds();

// Could not start a process (fork, pipe, a file to write to); what() says why.
struct SpawnError : std::runtime_error {
  explicit SpawnError(const std::string& w) : std::runtime_error(w) {}
};

enum class Stream {
  Inherit,  // the parent's
  Null,     // /dev/null
  Pipe,     // a pipe to the parent (read end for stdout/stderr, write end for stdin)
  File,     // a file (stdout/stderr: created or truncated; stdin: read)
};

struct SpawnOptions {
  std::vector<std::string> argv;           // argv[0] is looked up in PATH unless it has a '/'
  std::map<std::string, std::string> env;  // set on top of the parent's environment
  Stream in = Stream::Inherit, out = Stream::Inherit, err = Stream::Inherit;
  std::string in_file, out_file, err_file;  // for Stream::File
  bool err_to_out = false;                  // stderr goes wherever stdout goes (err is ignored)
  bool own_group = true;                    // a process group of its own (signal_group reaches its children)
};

struct ExitStatus {
  bool exited = true;  // false: ended by a signal
  int code = 0;        // exit code when exited
  int signal = 0;      // the signal otherwise
  bool ok() const { return exited && code == 0; }
  // As a shell reports it: the code, or 128 + the signal.
  int shell_code() const { return exited ? code : 128 + signal; }
  // "exited with status 3", "killed by signal 9 (SIGKILL)".
  std::string text() const;
};

// A started child. Moving it moves the ownership; destroying one that still
// runs kills its group (SIGKILL) and reaps it, so no child outlives its owner
// by accident.
class Process {
 public:
  Process() = default;
  explicit Process(const SpawnOptions& o);  // throws SpawnError
  Process(Process&& o) noexcept;
  Process& operator=(Process&& o) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process();

  pid_t pid() const { return pid_; }
  // Pipe ends in the parent (-1 unless that stream is Stream::Pipe), all
  // non-blocking.
  int stdout_fd() const { return out_fd_; }
  int stderr_fd() const { return err_fd_; }
  int stdin_fd() const { return in_fd_; }
  // A pidfd: readable once the child has exited (-1 if the kernel has none).
  int exit_fd() const { return exit_fd_; }
  void close_stdout();
  void close_stderr();
  void close_stdin();

  bool running() const { return pid_ > 0 && !reaped_; }
  // Reaps the child if it has exited; true once it has (then status() holds).
  bool try_reap();
  // Waits until the child exits or the deadline (monotonic_seconds) passes;
  // true if it exited. A deadline of 0 waits without a limit.
  bool wait_until(double deadline);
  const ExitStatus& status() const { return status_; }
  // Sends `sig` to the child's process group (to the child alone without one).
  void signal_group(int sig);

 private:
  void release();
  pid_t pid_ = -1;
  bool reaped_ = false, own_group_ = true;
  int out_fd_ = -1, err_fd_ = -1, in_fd_ = -1, exit_fd_ = -1;
  ExitStatus status_;
};

struct RunOptions {
  double timeout_s = 0;  // then the child's group is killed; 0: no limit
  bool capture_out = true, capture_err = true;  // false: inherited
  std::map<std::string, std::string> env;
};

struct RunResult {
  ExitStatus status;
  std::string out, err;    // what it wrote on captured streams
  bool timed_out = false;  // killed at the deadline
  int code() const { return timed_out ? 124 : status.shell_code(); }
};

// Runs argv to completion with stdin from /dev/null. A program that cannot be
// started exits 127 with a line on stderr, as in a shell.
RunResult run(const std::vector<std::string>& argv, const RunOptions& options = {});
// The same with a time limit, both streams captured.
inline RunResult run(const std::vector<std::string>& argv, double timeout_s) {
  RunOptions o;
  o.timeout_s = timeout_s;
  return run(argv, o);
}

// Reads whatever `fd` (non-blocking) has now; appends it to `to`. false at
// end of file or on an error other than EAGAIN.
bool read_available(int fd, std::string* to);

// The absolute path of the running program (/proc/self/exe).
std::string self_exe();

}  // namespace railcoll::testbed
