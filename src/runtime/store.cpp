#include "runtime/store.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <vector>

#include "railcoll/railcoll.h"
#include "runtime/net.hpp"

namespace railcoll::rt {

// Request: u32 length, then 'S' key '\0' value | 'G' key. Reply to G: u32 length, value.
namespace {
constexpr uint32_t kMaxStoreMessage = 1 << 20;

std::string frame(char op, const std::string& key, const std::string& value) {
  std::string body = std::string(1, op) + key + (op == 'S' ? std::string(1, '\0') + value : "");
  uint32_t n = static_cast<uint32_t>(body.size());
  return std::string(reinterpret_cast<char*>(&n), 4) + body;
}
}  // namespace

StoreServer::StoreServer(const std::string& address, int port) {
  listen_fd_ = tcp_listen(address, port, nullptr);
  if (pipe(wake_) != 0) throw RuntimeError(RAILCOLL_ERR_BOOTSTRAP, "pipe failed");
  thread_ = std::thread([this] { serve(); });
}

StoreServer::~StoreServer() { stop(); }

void StoreServer::stop() {
  if (thread_.joinable()) {
    char c = 0;
    (void)!write(wake_[1], &c, 1);
    thread_.join();
  }
  for (int* fd : {&listen_fd_, &wake_[0], &wake_[1]})
    if (*fd >= 0) close(*fd), *fd = -1;
}

void StoreServer::serve() {
  struct Client {
    int fd;
    std::string in;
  };
  std::vector<Client> clients;
  std::map<std::string, std::string> kv;
  std::multimap<std::string, int> waiting;  // key -> client fd
  auto reply = [](int fd, const std::string& v) {
    uint32_t n = static_cast<uint32_t>(v.size());
    std::string out = std::string(reinterpret_cast<char*>(&n), 4) + v;
    try {
      write_all(fd, out.data(), out.size(), now_seconds() + 10, "store client");
    } catch (...) {
    }
  };
  for (;;) {
    std::vector<pollfd> p{{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    for (auto& c : clients) p.push_back({c.fd, POLLIN, 0});
    if (poll(p.data(), p.size(), 1000) < 0 && errno != EINTR) return;
    if (p[0].revents) break;
    if (p[1].revents & POLLIN) {
      int fd = accept(listen_fd_, nullptr, nullptr);
      if (fd >= 0) clients.push_back({fd, {}});
    }
    for (size_t i = 2; i < p.size(); ++i) {
      if (!p[i].revents) continue;
      Client& c = clients[i - 2];
      char buf[65536];
      ssize_t r = read(c.fd, buf, sizeof buf);
      if (r <= 0) {
        close(c.fd);
        c.fd = -1;
        continue;
      }
      c.in.append(buf, static_cast<size_t>(r));
      while (c.in.size() >= 4) {
        uint32_t n;
        memcpy(&n, c.in.data(), 4);
        if (n == 0 || n > kMaxStoreMessage) {  // garbage: drop the client
          close(c.fd);
          c.fd = -1;
          break;
        }
        if (c.in.size() < 4 + n) break;
        std::string body = c.in.substr(4, n);
        c.in.erase(0, 4 + n);
        if (body[0] == 'S') {
          auto z = body.find('\0');
          std::string key = body.substr(1, z == std::string::npos ? std::string::npos : z - 1);
          std::string value = z == std::string::npos ? "" : body.substr(z + 1);
          kv[key] = value;
          auto range = waiting.equal_range(key);
          for (auto it = range.first; it != range.second; ++it) reply(it->second, value);
          waiting.erase(range.first, range.second);
        } else if (body[0] == 'G') {
          std::string key = body.substr(1);
          if (auto it = kv.find(key); it != kv.end())
            reply(c.fd, it->second);
          else
            waiting.emplace(key, c.fd);
        }
      }
    }
    for (size_t i = clients.size(); i-- > 0;)
      if (clients[i].fd < 0) {
        for (auto it = waiting.begin(); it != waiting.end();)
          it = it->second == clients[i].fd ? waiting.erase(it) : std::next(it);
        clients.erase(clients.begin() + static_cast<long>(i));
      }
  }
  for (auto& c : clients)
    if (c.fd >= 0) close(c.fd);
}

StoreClient::StoreClient(const std::string& address, int port, double deadline)
    : where_("the store at " + address + ":" + std::to_string(port)) {
  try {
    fd_ = tcp_connect("", address, port, deadline);
  } catch (const RuntimeError& e) {
    throw RuntimeError(RAILCOLL_ERR_BOOTSTRAP, "cannot reach " + where_ + " (is rank 0 running?): " + e.what());
  }
}

StoreClient::~StoreClient() {
  if (fd_ >= 0) close(fd_);
}

void StoreClient::set(const std::string& key, const std::string& value) {
  std::string f = frame('S', key, value);
  write_all(fd_, f.data(), f.size(), now_seconds() + 30, where_);
}

std::string StoreClient::get(const std::string& key, double deadline) {
  std::string f = frame('G', key, "");
  write_all(fd_, f.data(), f.size(), deadline, where_);
  uint32_t n = 0;
  try {
    read_all(fd_, &n, 4, deadline, where_);
    if (n > kMaxStoreMessage) throw RuntimeError(RAILCOLL_ERR_PROTOCOL, "malformed reply from " + where_);
    std::string v(n, '\0');
    read_all(fd_, v.data(), n, deadline, where_);
    return v;
  } catch (const RuntimeError& e) {
    if (e.code == RAILCOLL_ERR_TIMEOUT)
      throw RuntimeError(RAILCOLL_ERR_TIMEOUT, "timed out waiting for '" + key + "' in " + where_ +
                                                    " (a rank did not start or died during start-up)");
    throw;
  }
}

}  // namespace railcoll::rt
