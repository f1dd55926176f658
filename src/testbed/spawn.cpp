#include "testbed/spawn.hpp"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

extern char** environ;

namespace railcoll::testbed {

double monotonic_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string ExitStatus::text() const {
  if (exited) return "exited with status " + std::to_string(code);
  const char* name = sigabbrev_np(signal);
  return "killed by signal " + std::to_string(signal) + (name ? std::string(" (SIG") + name + ")" : "");
}

namespace {

void close_fd(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

std::string errno_text(const std::string& what) { return what + ": " + strerror(errno); }

// Everything exec needs, built before fork: the child only calls
// async-signal-safe functions.
struct ExecImage {
  std::vector<std::string> env_strings;
  std::vector<char*> argv, envp;
  explicit ExecImage(const SpawnOptions& o) {
    if (o.argv.empty()) throw SpawnError("no program to run");
    for (char** e = environ; e && *e; ++e) {
      const char* eq = strchr(*e, '=');
      std::string name = eq ? std::string(*e, static_cast<size_t>(eq - *e)) : *e;
      if (!o.env.count(name)) env_strings.push_back(*e);
    }
    for (auto& [k, v] : o.env) env_strings.push_back(k + "=" + v);
    for (auto& a : o.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (auto& s : env_strings) envp.push_back(const_cast<char*>(s.c_str()));
    envp.push_back(nullptr);
  }
};

// The child's end of one standard stream and, for a pipe, the parent's end.
struct Plumbing {
  int child = -1, parent = -1;
  void close_both() {
    close_fd(&child);
    close_fd(&parent);
  }
};

Plumbing plumb(Stream s, const std::string& file, bool input) {
  Plumbing p;
  switch (s) {
    case Stream::Inherit: break;
    case Stream::Null:
      p.child = open("/dev/null", (input ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
      if (p.child < 0) throw SpawnError(errno_text("/dev/null"));
      break;
    case Stream::File:
      p.child = input ? open(file.c_str(), O_RDONLY | O_CLOEXEC)
                      : open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (p.child < 0) throw SpawnError(errno_text(file));
      break;
    case Stream::Pipe: {
      int fds[2];
      if (pipe2(fds, O_CLOEXEC) != 0) throw SpawnError(errno_text("pipe"));
      p.child = input ? fds[0] : fds[1];
      p.parent = input ? fds[1] : fds[0];
      fcntl(p.parent, F_SETFL, fcntl(p.parent, F_GETFL) | O_NONBLOCK);
      break;
    }
  }
  return p;
}

}  // namespace

Process::Process(const SpawnOptions& o) : own_group_(o.own_group) {
  ExecImage image(o);
  Plumbing in, out, err;
  try {
    in = plumb(o.in, o.in_file, true);
    out = plumb(o.out, o.out_file, false);
    if (!o.err_to_out) err = plumb(o.err, o.err_file, false);
  } catch (...) {
    in.close_both(), out.close_both(), err.close_both();
    throw;
  }
  const bool err_follows = o.err_to_out;
  const int in_child = in.child, out_child = out.child, err_child = err.child;
  const bool group = o.own_group;
  pid_t pid = fork();
  if (pid == 0) {
    // The child: async-signal-safe calls only.
    if (group) setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGPIPE, &dfl, nullptr);  // a launcher may ignore it; its children must not
    if (in_child >= 0) dup2(in_child, 0);
    if (out_child >= 0) dup2(out_child, 1);
    if (err_follows) dup2(1, 2);
    else if (err_child >= 0) dup2(err_child, 2);
    execvpe(image.argv[0], image.argv.data(), image.envp.data());
    const char* why = strerror(errno);
    const char* parts[] = {"railcoll: cannot start '", image.argv[0], "': ", why, "\n"};
    for (const char* p : parts) (void)!write(2, p, strlen(p));
    _exit(127);
  }
  int fork_errno = errno;
  close_fd(&in.child), close_fd(&out.child), close_fd(&err.child);
  if (pid < 0) {
    in.close_both(), out.close_both(), err.close_both();
    errno = fork_errno;
    throw SpawnError(errno_text("fork"));
  }
  if (group) setpgid(pid, pid);  // also here: a signal right after fork must find the group
  pid_ = pid;
  in_fd_ = in.parent, out_fd_ = out.parent, err_fd_ = err.parent;
  exit_fd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
}

Process::Process(Process&& o) noexcept { *this = std::move(o); }

Process& Process::operator=(Process&& o) noexcept {
  if (this == &o) return *this;
  release();
  pid_ = o.pid_, reaped_ = o.reaped_, own_group_ = o.own_group_;
  out_fd_ = o.out_fd_, err_fd_ = o.err_fd_, in_fd_ = o.in_fd_, exit_fd_ = o.exit_fd_;
  status_ = o.status_;
  o.pid_ = -1;
  o.out_fd_ = o.err_fd_ = o.in_fd_ = o.exit_fd_ = -1;
  return *this;
}

Process::~Process() { release(); }

void Process::release() {
  if (running()) {
    signal_group(SIGKILL);
    wait_until(0);
  }
  close_fd(&out_fd_), close_fd(&err_fd_), close_fd(&in_fd_), close_fd(&exit_fd_);
  pid_ = -1;
}

void Process::close_stdout() { close_fd(&out_fd_); }
void Process::close_stderr() { close_fd(&err_fd_); }
void Process::close_stdin() { close_fd(&in_fd_); }

bool Process::try_reap() {
  if (pid_ <= 0 || reaped_) return reaped_;
  int st = 0;
  pid_t r = waitpid(pid_, &st, WNOHANG);
  if (r != pid_) return false;
  reaped_ = true;
  status_.exited = WIFEXITED(st);
  status_.code = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
  status_.signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  close_fd(&exit_fd_);
  return true;
}

bool Process::wait_until(double deadline) {
  while (!try_reap()) {
    double left = deadline > 0 ? deadline - monotonic_seconds() : 1.0;
    if (left <= 0) return false;
    int ms = static_cast<int>(std::min(left, 1.0) * 1000) + 1;
    if (exit_fd_ >= 0) {
      pollfd p{exit_fd_, POLLIN, 0};
      poll(&p, 1, ms);
    } else {
      usleep(static_cast<useconds_t>(std::min(ms, 5) * 1000));
    }
  }
  return true;
}

void Process::signal_group(int sig) {
  if (!running()) return;
  if (own_group_) kill(-pid_, sig);
  kill(pid_, sig);
}

bool read_available(int fd, std::string* to) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      to->append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

RunResult run(const std::vector<std::string>& argv, const RunOptions& ro) {
  SpawnOptions o;
  o.argv = argv;
  o.env = ro.env;
  o.in = Stream::Null;
  o.out = ro.capture_out ? Stream::Pipe : Stream::Inherit;
  o.err = ro.capture_err ? Stream::Pipe : Stream::Inherit;
  Process p(o);
  RunResult r;
  const double deadline = ro.timeout_s > 0 ? monotonic_seconds() + ro.timeout_s : 0;
  auto drain = [&](bool out_pipe) {
    int fd = out_pipe ? p.stdout_fd() : p.stderr_fd();
    if (fd < 0) return;
    if (!read_available(fd, out_pipe ? &r.out : &r.err) || !p.running()) {
      if (out_pipe) p.close_stdout(); else p.close_stderr();
    }
  };
  // Until both pipes close, or the child has exited and they are drained (a
  // daemon it left behind may hold them open); without pipes, until it exits.
  while (p.stdout_fd() >= 0 || p.stderr_fd() >= 0 || p.running()) {
    std::vector<pollfd> fds;
    for (int fd : {p.stdout_fd(), p.stderr_fd(), p.exit_fd()})
      if (fd >= 0) fds.push_back({fd, POLLIN, 0});
    int ms = 100;
    if (deadline > 0) ms = std::max(0, std::min(ms, static_cast<int>((deadline - monotonic_seconds()) * 1000) + 1));
    poll(fds.data(), fds.size(), ms);
    p.try_reap();
    drain(true);
    drain(false);
    if (deadline > 0 && p.running() && monotonic_seconds() >= deadline) {
      r.timed_out = true;
      p.signal_group(SIGKILL);
    }
  }
  p.wait_until(0);
  r.status = p.status();
  return r;
}

std::string self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "railcoll";
}

}  // namespace railcoll::testbed
