#include "testbed/traffic.hpp"

#include <poll.h>
#include <railcoll/railcoll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "core/errors.hpp"
#include "runtime/bootstrap/net.hpp"

namespace railcoll::testbed {

namespace {

std::atomic<bool> stop{false};
void on_term(int) { stop = true; }

constexpr int kMaxRails = 8;
constexpr size_t kChunk = 64 * 1024;

struct Endpoint {
  char addr[kMaxRails][16];  // rail addresses, dotted quad
  int port[kMaxRails];
};

// This node's rail addresses: RAILCOLL_RAILS (interfaces, subnets or addresses)
// resolved as the runtime does.
std::vector<std::string> rail_addresses() {
  const char* env = getenv("RAILCOLL_RAILS");
  auto out = rt::resolve_rails(env ? env : "");
  if (out.empty()) out.push_back("127.0.0.1");
  if (out.size() > kMaxRails) out.resize(kMaxRails);
  return out;
}

// Drains every connection that reaches this rank's listeners until stopped.
void sink(std::vector<int> listeners) {
  std::vector<pollfd> fds;
  for (int l : listeners) fds.push_back({l, POLLIN, 0});
  std::vector<char> buf(kChunk);
  while (!stop) {
    if (poll(fds.data(), fds.size(), 100) <= 0) continue;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & POLLIN)) continue;
      if (i < listeners.size()) {
        int c = accept(fds[i].fd, nullptr, nullptr);
        if (c >= 0) fds.push_back({c, POLLIN, 0});
      } else if (read(fds[i].fd, buf.data(), buf.size()) <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;  // poll ignores it
      }
    }
  }
  for (auto& p : fds)
    if (p.fd >= 0) close(p.fd);
}

}  // namespace

bool started_by_a_launcher() {
  for (const char* v : {"RAILCOLL_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID", "RANK"})
    if (getenv(v)) return true;
  return false;
}

TrafficResult run_traffic(BackgroundPattern pattern, double seconds) {
  if (!started_by_a_launcher())
    throw InputError("the generator runs as the ranks of a job, one per node: railcoll cluster run --ppn 1 -- "
                     "railcoll traffic --pattern P");
  signal(SIGTERM, on_term);
  signal(SIGINT, on_term);
  signal(SIGPIPE, SIG_IGN);
  railcoll_comm_t comm;
  if (railcoll_comm_init(&comm) != RAILCOLL_OK) throw RuntimeError(Status::Bootstrap, railcoll_last_error());
  TrafficResult res;
  const int me = railcoll_comm_rank(comm), n = railcoll_comm_size(comm);
  res.rank = me;
  res.nodes = n;
  if (const int nodes = railcoll_comm_nodes(comm); nodes != n) {  // the patterns say which node sends to which
    railcoll_comm_destroy(comm);
    throw InputError("the generator runs one rank per node (--ppn 1); this job has " + std::to_string(n) +
                     " ranks on " + std::to_string(nodes) + " nodes");
  }
  auto rails = rail_addresses();
  Endpoint mine{};
  std::vector<int> listeners;
  for (size_t r = 0; r < rails.size(); ++r) {
    snprintf(mine.addr[r], sizeof mine.addr[r], "%s", rails[r].c_str());
    listeners.push_back(rt::tcp_listen(rails[r], 0, &mine.port[r]));
  }
  std::vector<Endpoint> all(n);
  if (railcoll_allgather(comm, &mine, all.data(), sizeof mine, nullptr) != RAILCOLL_OK) {
    std::string why = railcoll_last_error();
    for (int l : listeners) close(l);
    railcoll_comm_destroy(comm);
    throw RuntimeError(Status::Peer, why);
  }
  std::thread receiver(sink, listeners);
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::atomic<uint64_t> sent{0};
  std::vector<std::thread> senders;
  for (size_t r = 0; r < rails.size(); ++r)
    senders.emplace_back([&, r] {
      std::vector<int> to(n, -1);  // connection to each peer on this rail
      std::mt19937_64 rng(1234u + 7u * static_cast<unsigned>(me) + static_cast<unsigned>(r));
      std::vector<char> chunk(kChunk, 'x');
      while (!stop && std::chrono::steady_clock::now() < until) {
        int p = background_destination(pattern, me, n, rng());
        if (p == kNoBackgroundDestination) break;  // this node only receives
        if (to[p] < 0) {
          try {
            to[p] = rt::tcp_connect(rails[r], all[p].addr[r], all[p].port[r], rt::now_seconds() + 5);
          } catch (const std::exception& e) {  // a generator that cannot reach a peer stops; the others go on
            fprintf(stderr, "railcoll traffic: rank %d: %s\n", me, e.what());
            break;
          }
        }
        ssize_t w = write(to[p], chunk.data(), chunk.size());
        if (w <= 0) break;
        sent += static_cast<uint64_t>(w);
      }
      for (int fd : to)
        if (fd >= 0) close(fd);
    });
  for (auto& t : senders) t.join();
  // Keep draining until told to stop or the time is up: peers may still send.
  while (!stop && std::chrono::steady_clock::now() < until) usleep(100000);
  stop = true;
  receiver.join();
  for (int l : listeners) close(l);
  // No collective after this: the others may be gone; leave without blocking.
  railcoll_comm_destroy(comm);
  res.sent_bytes = sent;
  return res;
}

}  // namespace railcoll::testbed
