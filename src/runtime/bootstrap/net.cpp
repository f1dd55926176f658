#include "runtime/bootstrap/net.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <sstream>
#include <thread>


namespace railcoll::rt {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string seconds_text(double s) {
  std::ostringstream o;
  o << s << " s";
  return o.str();
}

namespace {
[[noreturn]] void sys_fail(const std::string& what) {
  throw RuntimeError(Status::Network, what + ": " + strerror(errno));
}

sockaddr_in inet_addr_of(const std::string& address, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, address.c_str(), &a.sin_addr) != 1)
    throw RuntimeError(Status::Arg, "'" + address + "' is not an IPv4 address");
  return a;
}

sockaddr_un unix_addr_of(const std::string& name, socklen_t* len) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  size_t n = std::min(name.size(), sizeof(a.sun_path) - 2);
  memcpy(a.sun_path + 1, name.data(), n);  // abstract namespace: leading NUL
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  return a;
}

int wait_fd(int fd, short events, double deadline) {
  for (;;) {
    double left = deadline - now_seconds();
    if (left <= 0) return 0;
    pollfd p{fd, events, 0};
    int r = poll(&p, 1, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (r > 0) return 1;
    if (r < 0 && errno != EINTR) return -1;
  }
}
}  // namespace

std::pair<std::string, int> split_host_port(const std::string& hp) {
  auto colon = hp.rfind(':');
  if (colon == std::string::npos || colon == 0)
    throw RuntimeError(Status::Arg, "store address '" + hp + "' is not host:port");
  int port = 0;
  try {
    port = std::stoi(hp.substr(colon + 1));
  } catch (...) {
    port = -1;
  }
  if (port <= 0 || port > 65535) throw RuntimeError(Status::Arg, "store address '" + hp + "' has a bad port");
  return {hp.substr(0, colon), port};
}

std::string resolve_ipv4(const std::string& host, const std::string& what) {
  in_addr ip{};
  if (inet_pton(AF_INET, host.c_str(), &ip) == 1) return host;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0 || !found)
    throw RuntimeError(Status::Bootstrap, "cannot resolve " + what + " '" + host + "' to an IPv4 address: " +
                                              (rc ? gai_strerror(rc) : "no address"));
  char buf[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, buf, sizeof buf);
  freeaddrinfo(found);
  return buf;
}

void tune_socket(int fd, bool tcp) {
  int one = 1, buf = 4 << 20;
  if (tcp) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
}

void limit_unsent(int fd, int bytes) {
  if (bytes > 0) setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &bytes, sizeof bytes);
}

void unlimit_unsent(int fd) {
  int zero = 0;  // 0: the system's setting applies again
  setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &zero, sizeof zero);
}

std::string choose_congestion(int fd, const std::string& names) {
  size_t at = 0;
  while (at <= names.size()) {
    size_t comma = names.find(',', at);
    if (comma == std::string::npos) comma = names.size();
    const std::string name = names.substr(at, comma - at);
    at = comma + 1;
    // An unknown name fails with ENOENT, one the system does not allow to
    // unprivileged processes (net.ipv4.tcp_allowed_congestion_control) with EPERM.
    if (!name.empty() &&
        setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(), static_cast<socklen_t>(name.size())) == 0)
      return name;
  }
  return "";
}

std::string describe_peer(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "an unknown peer";
  if (ss.ss_family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    char buf[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
    return std::string(buf) + ":" + std::to_string(ntohs(a->sin_port));
  }
  ucred cred{};
  socklen_t clen = sizeof cred;
  if (ss.ss_family == AF_UNIX && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0)
    return "local process " + std::to_string(cred.pid);
  return "an unknown peer";
}

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

int tcp_listen(const std::string& address, int port, int* bound_port, const std::string& congestion) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) sys_fail("socket");
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  choose_congestion(fd, congestion);
  sockaddr_in a = inet_addr_of(address, port);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    sys_fail("cannot listen on " + address + ":" + std::to_string(port));
  }
  if (listen(fd, 1024) != 0) sys_fail("listen");
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  if (bound_port) *bound_port = ntohs(a.sin_port);
  return fd;
}

int tcp_connect(const std::string& from, const std::string& address, int port, double deadline,
                const std::string& congestion) {
  sockaddr_in to = inet_addr_of(address, port);
  int last_errno = 0;
  for (double backoff = 0.001;; backoff = std::min(backoff * 2, 0.1)) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) sys_fail("socket");
    tune_socket(fd, true);
    choose_congestion(fd, congestion);
    if (!from.empty()) {
      sockaddr_in me = inet_addr_of(from, 0);
      if (bind(fd, reinterpret_cast<sockaddr*>(&me), sizeof me) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        sys_fail("cannot bind to rail address " + from);
      }
    }
    if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0) return fd;
    last_errno = errno;
    close(fd);
    if (now_seconds() + backoff > deadline) break;
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
  }
  errno = last_errno;
  sys_fail("cannot connect to " + address + ":" + std::to_string(port) + (from.empty() ? "" : " from " + from) +
           " before the deadline");
}

int tcp_connect_start(const std::string& from, const std::string& address, int port, const std::string& congestion) {
  sockaddr_in to = inet_addr_of(address, port), me = inet_addr_of(from, 0);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  tune_socket(fd, true);
  choose_congestion(fd, congestion);
  if (bind(fd, reinterpret_cast<sockaddr*>(&me), sizeof me) != 0 ||
      (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0 && errno != EINPROGRESS)) {
    close(fd);
    return -1;
  }
  return fd;
}

int unix_listen(const std::string& name) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) sys_fail("socket");
  socklen_t len;
  sockaddr_un a = unix_addr_of(name, &len);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), len) != 0) sys_fail("cannot listen on unix socket @" + name);
  if (listen(fd, 1024) != 0) sys_fail("listen");
  return fd;
}

int unix_connect(const std::string& name, double deadline) {
  socklen_t len;
  sockaddr_un a = unix_addr_of(name, &len);
  int last_errno = 0;
  for (double backoff = 0.001;; backoff = std::min(backoff * 2, 0.1)) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) sys_fail("socket");
    tune_socket(fd, false);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), len) == 0) return fd;
    last_errno = errno;
    close(fd);
    if (now_seconds() + backoff > deadline) break;
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
  }
  errno = last_errno;
  sys_fail("cannot connect to local peer @" + name);
}

int accept_until(int listen_fd, double deadline) {
  int r = wait_fd(listen_fd, POLLIN, deadline);
  if (r == 0) throw RuntimeError(Status::Timeout, "timed out waiting for peers to connect");
  if (r < 0) sys_fail("poll");
  int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) sys_fail("accept");
  return fd;
}

void write_all(int fd, const void* data, size_t n, double deadline, const std::string& what) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      p += w;
      n -= static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno != EAGAIN && errno != EINTR) sys_fail("sending to " + what);
    int r = wait_fd(fd, POLLOUT, deadline);
    if (r == 0) throw RuntimeError(Status::Timeout, "timed out sending to " + what);
    if (r < 0) sys_fail("poll");
  }
}

void read_all(int fd, void* data, size_t n, double deadline, const std::string& what) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = recv(fd, p, n, MSG_DONTWAIT);
    if (r > 0) {
      p += r;
      n -= static_cast<size_t>(r);
      continue;
    }
    if (r == 0) throw RuntimeError(Status::Peer, what + " closed the connection");
    if (errno != EAGAIN && errno != EINTR) sys_fail("receiving from " + what);
    int w = wait_fd(fd, POLLIN, deadline);
    if (w == 0) throw RuntimeError(Status::Timeout, "timed out receiving from " + what);
    if (w < 0) sys_fail("poll");
  }
}

std::vector<Interface> host_interfaces() {
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) sys_fail("getifaddrs");
  std::map<std::string, std::string> by_name;  // interface -> first IPv4 address
  for (ifaddrs* i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
    char buf[INET_ADDRSTRLEN];
    auto* sin = reinterpret_cast<sockaddr_in*>(i->ifa_addr);
    inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof buf);
    by_name.emplace(i->ifa_name, buf);
  }
  freeifaddrs(ifs);
  std::vector<Interface> out;
  for (auto& kv : by_name) out.push_back({kv.first, kv.second});
  return out;
}

static bool loopback(const Interface& i) { return i.name == "lo" || i.addr.rfind("127.", 0) == 0; }

static std::vector<std::string> spec_items(const std::string& list) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? list.size() + 1 : comma + 1;
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

std::vector<ChosenRail> choose_rails(const std::string& spec, const std::vector<Interface>& ifs) {
  std::vector<ChosenRail> rails;
  auto taken = [&](const Interface& i) {
    for (auto& r : rails)
      if (r.name == i.name) return true;
    return false;
  };
  if (spec.empty()) {
    for (auto& i : ifs)
      if (!loopback(i)) rails.push_back({i.addr, i.name, "discovered (up, not loopback)"});
    if (rails.empty()) rails.push_back({"127.0.0.1", "lo", "no other interface is up"});
    return rails;
  }
  if (spec[0] == '^') {  // exclusions: every other non-loopback interface
    const bool exact = spec.size() > 1 && spec[1] == '=';
    const auto items = spec_items(spec.substr(exact ? 2 : 1));
    for (auto& i : ifs) {
      if (loopback(i)) continue;
      bool out = false;
      for (auto& x : items) out |= exact ? i.name == x : i.name.rfind(x, 0) == 0;
      if (!out) rails.push_back({i.addr, i.name, "not excluded by '" + spec + "'"});
    }
    if (rails.empty()) throw RuntimeError(Status::Arg, "RAILCOLL_RAILS='" + spec + "' excludes every interface");
    return rails;
  }
  const bool exact = spec[0] == '=';
  for (auto& item : spec_items(spec.substr(exact ? 1 : 0))) {
    bool named = false;
    for (auto& i : ifs)
      if (i.name == item) {
        if (!taken(i)) rails.push_back({i.addr, i.name, exact ? "named exactly" : "named"});
        named = true;
      }
    if (named) continue;
    auto slash = item.find('/');
    in_addr ip{};
    if (inet_pton(AF_INET, item.substr(0, slash).c_str(), &ip) == 1) {
      if (slash == std::string::npos) {  // an address: loopback ones need not be configured
        std::string name;
        for (auto& i : ifs)
          if (i.addr == item) name = i.name;
        rails.push_back({item, name, "address " + item});
        continue;
      }
      int bits = std::atoi(item.c_str() + slash + 1);
      uint32_t mask = bits <= 0 ? 0 : bits >= 32 ? 0xffffffffu : ~((1u << (32 - bits)) - 1);
      uint32_t net = ntohl(ip.s_addr) & mask;
      bool found = false;
      for (auto& i : ifs) {
        in_addr a{};
        if (inet_pton(AF_INET, i.addr.c_str(), &a) == 1 && (ntohl(a.s_addr) & mask) == net) {
          rails.push_back({i.addr, i.name, "subnet " + item});
          found = true;
          break;
        }
      }
      if (!found) throw RuntimeError(Status::Arg, "RAILCOLL_RAILS subnet " + item + " has no address on this host");
      continue;
    }
    bool any = false;
    if (!exact)
      for (auto& i : ifs)
        if (i.name.rfind(item, 0) == 0 && !taken(i)) {
          rails.push_back({i.addr, i.name, "prefix '" + item + "'"});
          any = true;
        }
    if (!any) {
      std::string have;
      for (auto& i : ifs) have += (have.empty() ? "" : ", ") + i.name;
      throw RuntimeError(Status::Arg, "RAILCOLL_RAILS entry '" + item + "' is " +
                                          (exact ? "not an interface's exact name" : "neither a local interface (or prefix of one), a subnet nor an IPv4 address") +
                                          " (this host has: " + have + ")");
    }
  }
  if (rails.empty()) throw RuntimeError(Status::Arg, "RAILCOLL_RAILS='" + spec + "' names no rail");
  return rails;
}

std::vector<std::string> resolve_rails(const std::string& spec) {
  std::vector<std::string> out;
  for (auto& r : choose_rails(spec, host_interfaces())) out.push_back(r.addr);
  return out;
}

}  // namespace railcoll::rt
