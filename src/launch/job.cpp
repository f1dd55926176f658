#include "launch/job.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <thread>

namespace railcoll::launch {

namespace {
volatile sig_atomic_t forwarded_signal = 0;
void on_signal(int sig) { forwarded_signal = sig; }

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

std::string new_job_id() {
  std::random_device rd;
  std::mt19937_64 g((static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(getpid()) ^
                    static_cast<uint64_t>(now() * 1e9));
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
    int fd = socket(AF_INET, SOCK_STREAM, 0);
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

JobResult run_job(const std::vector<RankProcess>& ranks, double grace_seconds, double timeout_seconds) {
  JobResult res;
  std::vector<pid_t> pids(ranks.size(), -1);
  struct sigaction sa {}, old_int{}, old_term{};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  forwarded_signal = 0;

  for (size_t i = 0; i < ranks.size(); ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);  // own group: a terminal ^C reaches the launcher, which forwards it
      for (auto& kv : ranks[i].env) setenv(kv.first.c_str(), kv.second.c_str(), 1);
      std::vector<char*> argv;
      for (auto& a : ranks[i].argv) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execvp(argv[0], argv.data());
      fprintf(stderr, "railcoll: cannot start '%s': %s\n", argv[0], strerror(errno));
      _exit(127);
    }
    if (pid < 0) {
      res.exit_status = 1;
      res.failure = "cannot fork rank " + std::to_string(i) + ": " + strerror(errno);
      break;
    }
    setpgid(pid, pid);  // also here: a signal right after fork must reach the group
    pids[i] = pid;
  }

  size_t running = 0;
  for (pid_t p : pids) running += p > 0;
  double start = now(), failed_at = res.failure.empty() ? -1 : now();
  int stage = 0;  // 0 running, 1 SIGTERM sent, 2 SIGKILL sent
  auto signal_all = [&](int sig) {
    for (pid_t p : pids)
      if (p > 0) kill(-p, sig), kill(p, sig);
  };
  while (running > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (size_t i = 0; i < pids.size(); ++i) {
        if (pids[i] != pid) continue;
        pids[i] = -1;
        --running;
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (code != 0 && res.failure.empty()) {
          res.exit_status = code;
          res.failure = WIFEXITED(status) ? "rank " + std::to_string(i) + " exited with status " + std::to_string(code)
                                          : "rank " + std::to_string(i) + " killed by signal " +
                                                std::to_string(WTERMSIG(status));
          failed_at = now();
        }
      }
      continue;
    }
    if (forwarded_signal && stage == 0) {
      signal_all(forwarded_signal);
      if (res.failure.empty()) {
        res.exit_status = 128 + forwarded_signal;
        res.failure = "interrupted by signal " + std::to_string(forwarded_signal);
      }
      failed_at = now() - grace_seconds;
      forwarded_signal = 0;
    }
    double t = now();
    bool timed_out = timeout_seconds > 0 && t - start > timeout_seconds;
    if (timed_out && res.failure.empty()) {
      res.exit_status = 124;
      res.failure = "the job exceeded its time limit of " + std::to_string(static_cast<int>(timeout_seconds)) + " s";
      failed_at = t - grace_seconds;
    }
    if (failed_at >= 0 && stage == 0 && t - failed_at >= grace_seconds) signal_all(SIGTERM), stage = 1;
    if (stage == 1 && t - failed_at >= grace_seconds + 3) signal_all(SIGKILL), stage = 2;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  return res;
}

}  // namespace railcoll::launch
