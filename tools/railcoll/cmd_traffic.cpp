// railcoll traffic --pattern complement|uniform|hotspot [--seconds T]
//
// Background traffic (seed 004 §5): started as one rank per node by a launcher
// (`railcoll bench --background P` does it on the emulated cluster), every rank
// streams data at full load over every rail while a measured collective runs:
//   complement  node i sends to node M-1-i (the bit-complement partner);
//   uniform     every 64 KiB chunk goes to a node drawn at random;
//   hotspot     every node sends to node 0.
// Listeners bind the rail addresses (RAILCOLL_RAILS); the ranks exchange their
// ports through railcoll itself. It stops after T seconds (default 60) or on
// SIGTERM, whichever comes first, and prints the bytes it moved.
#include <poll.h>
#include <railcoll/railcoll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>

#include "args.hpp"
#include "commands.hpp"
#include "runtime/net.hpp"

namespace railcoll::cli {

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

int cmd_traffic(const std::vector<std::string>& argv) {
  Args a(argv, {}, {"pattern", "seconds"});
  std::string pattern = a.str("pattern", "uniform");
  if (pattern != "complement" && pattern != "uniform" && pattern != "hotspot")
    throw UsageError("--pattern must be complement, uniform or hotspot");
  double seconds = static_cast<double>(a.integer("seconds", 60, 1, 3600));
  signal(SIGTERM, on_term);
  signal(SIGINT, on_term);
  signal(SIGPIPE, SIG_IGN);
  railcoll_comm_t comm;
  if (railcoll_comm_init(&comm) != RAILCOLL_OK) {
    std::cerr << "railcoll traffic: " << railcoll_last_error() << "\n";
    return 1;
  }
  const int me = railcoll_comm_rank(comm), n = railcoll_comm_size(comm);
  auto rails = rail_addresses();
  Endpoint mine{};
  std::vector<int> listeners;
  for (size_t r = 0; r < rails.size(); ++r) {
    snprintf(mine.addr[r], sizeof mine.addr[r], "%s", rails[r].c_str());
    listeners.push_back(rt::tcp_listen(rails[r], 0, &mine.port[r]));
  }
  std::vector<Endpoint> all(n);
  if (railcoll_allgather(comm, &mine, all.data(), sizeof mine, nullptr) != RAILCOLL_OK) {
    std::cerr << "railcoll traffic: " << railcoll_last_error() << "\n";
    return 1;
  }
  std::thread receiver(sink, listeners);
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::atomic<uint64_t> sent{0};
  std::vector<std::thread> senders;
  for (size_t r = 0; r < rails.size(); ++r)
    senders.emplace_back([&, r] {
      std::vector<int> to(n, -1);  // connection to each peer on this rail
      std::vector<int> peers;
      if (pattern == "complement") peers.push_back(n - 1 - me == me ? (me + 1) % n : n - 1 - me);
      if (pattern == "hotspot") peers.push_back(0);
      if (pattern == "uniform")
        for (int p = 0; p < n; ++p)
          if (p != me) peers.push_back(p);
      std::mt19937 rng(1234u + 7u * me + static_cast<unsigned>(r));
      std::vector<char> chunk(kChunk, 'x');
      while (!stop && std::chrono::steady_clock::now() < until && !peers.empty()) {
        int p = peers[rng() % peers.size()];
        if (p == me) break;  // hotspot: node 0 only receives
        if (to[p] < 0) {
          try {
            to[p] = rt::tcp_connect(rails[r], all[p].addr[r], all[p].port[r], rt::now_seconds() + 5);
          } catch (const std::exception& e) {  // a generator that cannot reach a peer stops; the others go on
            std::cerr << "railcoll traffic: rank " << me << ": " << e.what() << "\n";
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
  std::cout << "railcoll traffic: rank " << me << " (" << pattern << ") sent " << sent / (1 << 20) << " MiB\n";
  // No collective after this: the others may be gone; leave without blocking.
  railcoll_comm_destroy(comm);
  return 0;
}

}  // namespace railcoll::cli
