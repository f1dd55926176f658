// Making and ending the communicator's connections: at set-up the lower rank of
// each pair connects (one TCP socket per rail, or a Unix socket inside a node)
// and the higher one accepts; the door, which admits a connection only after
// its Hello proves the job key (at set-up and when a rail reconnects); and the
// goodbye on close. Apart from comm.cpp (the progress engine and a call) and
// from failover.cpp (what happens when a rail breaks). Declared in transport.hpp.
#include "runtime/transport.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/auth.hpp"
#include "runtime/net.hpp"

namespace railcoll::rt {

// Whatever set-up or a call left open (the normal path closes in goodbye).
Transport::~Transport() {
  for (int fd : listen_fds) close(fd);
  for (auto& q : pending) refuse(q, "the communicator is closing");
  for (auto& c : conns) close(c.fd);
}

// Connections: the lower rank connects, the higher accepts; one TCP socket per
// rail to every rank on another node, one Unix socket to every local rank.
// fields: every rank's store entry (node, rails, "host:port" per rail, nonce).
void Transport::connect_peers(const std::vector<std::vector<std::string>>& fields, const std::string& uds_prefix,
                              double deadline) {
  int rails_n = static_cast<int>(rail_addr.size());
  conn_of.assign(N, std::vector<int>(rails_n, -1));
  if (topo.node_size(node) > 1) listen_fds.push_back(unix_listen(uds_prefix + std::to_string(me)));
  auto hello = [&](int fd, int peer, int rail, const std::string& nonce) {
    std::string frame = hello_frame(peer, rail, 1, nonce);
    write_all(fd, frame.data(), frame.size(), deadline,
              "rank " + std::to_string(peer) + (rail >= 0 ? " rail " + std::to_string(rail) : ""));
  };
  peer_addr.assign(N, {});
  peer_nonce.assign(N, "");
  for (int j = 0; j < N && N > 1; ++j) {
    peer_nonce[j] = from_hex(fields[j].back());
    for (int r = 0; r < rails_n; ++r) peer_addr[j].push_back(fields[j][2 + r]);
  }
  rail_down_count.assign(rails_n, 0);
  int expected = 0;
  for (int j = 0; j < N; ++j) {
    if (j == me) continue;
    bool local = topo.same_node(j, me);
    if (j < me) {
      expected += local ? 1 : rails_n;
      continue;
    }
    std::string nonce = from_hex(fields[j].back());
    if (local) {
      int fd = unix_connect(uds_prefix + std::to_string(j), deadline);
      add_conn(fd, j, -1);
      hello(fd, j, -1, nonce);
    } else {
      for (int r = 0; r < rails_n; ++r) {
        auto hp = split_host_port(fields[j][2 + r]);
        int fd = tcp_connect(rail_addr[r], hp.first, hp.second, deadline);
        add_conn(fd, j, r);
        hello(fd, j, r, nonce);
      }
    }
  }
  accept_peers(expected, deadline);
  // The rail listeners stay open: a rail that failed is reconnected there.
  if (listen_fds.size() > rail_addr.size()) close(listen_fds.back()), listen_fds.pop_back();
  if (N == 1 || topo.nnodes() == 1) {
    for (int fd : listen_fds) close(fd);
    listen_fds.clear();
  }
}

// ------------------------------------------------------------ the door
// Connections of lower ranks: at set-up, and later when a rail reconnects.
// Each must begin with a Hello for this communicator whose proof shows the
// job key; anything else (a stranger, a wrong key, another job, garbage,
// silence, an old Hello replayed) is closed and logged in one line.

void Transport::refuse(Pending& q, const std::string& why) {
  fprintf(stderr, "railcoll: rank %d refused a connection from %s: %s\n", me, describe_peer(q.fd).c_str(),
          why.c_str());
  close(q.fd);
  q.fd = -1;
}

// "" when the complete header in q may be a peer's Hello, else why not.
std::string Transport::hello_problem(const Pending& q, FrameHeader& h) {
  memcpy(&h, q.in.data(), sizeof h);
  if (h.magic != kWireMagic) return "it does not speak the railcoll protocol";
  if (h.version != kWireVersion)
    return "wire version " + std::to_string(h.version) + ", this rank speaks " + std::to_string(kWireVersion);
  if (h.type != static_cast<uint16_t>(Frame::Hello) || h.length != kHelloProof) return "its first frame is not a hello";
  if (h.comm != comm_id) return "it belongs to another job or communicator";
  if (h.sender < 0 || h.sender >= me) return "it claims to be rank " + std::to_string(h.sender);
  bool local = topo.same_node(h.sender, me);
  if (local == q.tcp || (q.tcp && (h.op < 0 || h.op >= topo.rails())) || (!q.tcp && h.op != -1))
    return "rank " + std::to_string(h.sender) + " cannot connect on this socket as rail " + std::to_string(h.op);
  return "";
}

// Reads what q has sent; makes it a connection (true) or refuses it once it is
// clear it is not one. `last`: set-up is over, refuse what is not yet a peer.
bool Transport::examine(Pending& q, double now, bool last) {
  const size_t full = sizeof(FrameHeader) + kHelloProof;
  char buf[sizeof(FrameHeader) + kHelloProof];
  ssize_t r = recv(q.fd, buf, full - q.in.size(), MSG_DONTWAIT);
  if (r > 0) q.in.append(buf, static_cast<size_t>(r));
  FrameHeader h{};
  std::string why = q.in.size() >= sizeof h ? hello_problem(q, h) : "";
  if (why.empty() && q.in.size() == full) {
    std::string proof = hello_proof(boot.job_key, h, me, listen_nonce);
    if (!equal_constant_time(proof.data(), q.in.data() + sizeof h, kHelloProof)) {
      why = "wrong job key (RAILCOLL_JOB_KEY)";
    } else {
      int ci = conn_of[h.sender][std::max(0, h.op)];
      // Every connection of a (rank, rail) has a higher generation than the last.
      if (ci >= 0 && h.seq <= conns[ci].generation) {
        refuse(q, "an old hello of rank " + std::to_string(h.sender) + " rail " + std::to_string(h.op) +
                      " (a replay)");
        return false;
      }
      if (ci < 0)
        add_conn(q.fd, h.sender, h.op);
      else
        reconnected(conns[ci], q.fd, now);
      conns[conn_of[h.sender][std::max(0, h.op)]].generation = static_cast<uint32_t>(h.seq);
      q.fd = -1;
      return true;
    }
  }
  if (why.empty() && (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)))
    why = "it closed the connection before it said hello";
  if (why.empty() && now > q.until) why = "it sent no complete hello in time";
  if (why.empty() && last) why = "every peer of this communicator is already connected";
  if (!why.empty()) refuse(q, why);
  return false;
}

bool Transport::accept_new(size_t i, double now) {
  int fd = accept4(listen_fds[i], nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) return false;
  bool tcp = i < rail_addr.size();
  tune_socket(fd, tcp);
  pending.push_back({fd, tcp, now + std::min(5.0, boot.timeout), ""});
  return true;
}

// One look at the listeners and the half-open connections; p holds their
// poll results from index `at` on (listeners first).
int Transport::serve_door(const std::vector<pollfd>& p, size_t at, double now) {
  int got = 0;
  for (size_t i = 0; i < pending.size(); ++i)
    if (p[at + listen_fds.size() + i].revents || now > pending[i].until) got += examine(pending[i], now, false);
  pending.erase(std::remove_if(pending.begin(), pending.end(), [](const Pending& q) { return q.fd < 0; }),
                pending.end());
  for (size_t i = 0; i < listen_fds.size(); ++i)
    if (p[at + i].revents & POLLIN) accept_new(i, now);
  return got;
}

void Transport::accept_peers(int expected, double deadline) {
  for (int fd : listen_fds) set_nonblocking(fd);
  for (int got = 0; got < expected;) {
    double now = now_seconds();
    if (now > deadline)
      throw RuntimeError(Status::Timeout, "timed out waiting for peers to connect (" + std::to_string(got) +
                                                   " of " + std::to_string(expected) + " connections made)");
    std::vector<pollfd> p;
    for (int fd : listen_fds) p.push_back({fd, POLLIN, 0});
    for (auto& q : pending) p.push_back({q.fd, POLLIN, 0});
    poll(p.data(), p.size(), 100);
    got += serve_door(p, 0, now);
  }
  // Whoever else knocked during set-up is told no (and logged), rather than
  // left in the backlog.
  double now = now_seconds();
  for (size_t i = 0; i < listen_fds.size(); ++i)
    while (accept_new(i, now)) {
    }
  for (auto& q : pending) examine(q, now, true);
  pending.clear();
}

void Transport::add_conn(int fd, int peer, int rail) {
  Conn c;
  c.fd = fd;
  c.peer = peer;
  c.rail = rail;
  set_nonblocking(fd);
  conns.push_back(std::move(c));
  conn_of[peer][rail < 0 ? 0 : rail] = static_cast<int>(conns.size()) - 1;
}

// The Hello that opens a connection to `peer` on `rail` (-1: local); its seq is
// the connection's generation, so an old Hello cannot open a new one.
std::string Transport::hello_frame(int peer, int rail, uint32_t generation, const std::string& nonce) const {
  FrameHeader h = header(Frame::Hello, rail);
  h.seq = generation;
  h.length = kHelloProof;
  std::string frame(reinterpret_cast<const char*>(&h), sizeof h);
  return frame + hello_proof(boot.job_key, h, peer, nonce);
}

// The end: a goodbye on every connection, then reading until the peers' goodbyes
// (until `deadline` at most), then every connection closed.
void Transport::goodbye(double deadline) {
  for (auto& c : conns) {
    if (c.down && !c.closed) close(c.fd), c.fd = -1, c.closed = true;  // a given-up rail says no goodbye
    if (c.closed) continue;
    FrameHeader h = header(Frame::Bye, -1);
    send(c.fd, &h, sizeof h, MSG_NOSIGNAL | MSG_DONTWAIT);
    shutdown(c.fd, SHUT_WR);
  }
  // Read until every peer said goodbye (or is gone), so no close resets a peer.
  std::vector<std::string> partial(conns.size());  // bytes of frames not yet whole
  while (now_seconds() < deadline) {
    bool open = false;
    for (auto& c : conns) open |= !c.closed && !c.bye;
    if (!open) break;
    std::vector<pollfd> p;
    for (auto& c : conns) p.push_back({c.fd, static_cast<short>(c.closed || c.bye ? 0 : POLLIN), 0});
    poll(p.data(), p.size(), 50);
    for (size_t i = 0; i < p.size(); ++i) {
      Conn& c = conns[i];
      if (c.closed || c.bye || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t r = recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) c.closed = true;
      if (r <= 0) continue;
      // Whole frames only: a goodbye, or anything else that is dropped now.
      std::string& in = partial[i];
      in.append(buf, static_cast<size_t>(r));
      while (in.size() >= sizeof(FrameHeader)) {
        FrameHeader h;
        memcpy(&h, in.data(), sizeof h);
        if (h.magic != kWireMagic || h.length > (1u << 30)) {
          c.closed = true;
          break;
        }
        if (in.size() < sizeof h + h.length) break;
        in.erase(0, sizeof h + h.length);
        if (h.type == static_cast<uint16_t>(Frame::Bye)) c.bye = true;
      }
    }
  }
  for (auto& c : conns) close(c.fd);
  conns.clear();
}

}  // namespace railcoll::rt
