// SocketTransport (socket_transport.hpp): set-up, sending, probes, aborts and
// the end. At set-up the lower rank of each pair connects (one TCP socket per
// rail, or a Unix socket inside a node) and the higher one accepts through the
// door; then the node's segment is mapped. At the end a goodbye goes on every
// connection, so no peer mistakes a normal exit for a crash.
#include "runtime/transport/socket/socket_transport.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/bootstrap/auth.hpp"
#include "runtime/bootstrap/net.hpp"
#include "runtime/bootstrap/oob.hpp"

namespace railcoll::rt {

SocketTransport::SocketTransport(const TransportSettings& settings, int me, int nranks, std::vector<std::string> rail_addr,
                                 bool local_only)
    : job_key_(settings.job_key),
      timeout_(settings.timeout),
      rail_timeout_(settings.rail_timeout),
      shm_bytes_(settings.shm_bytes),
      notsent_lowat_(settings.notsent_lowat),
      tcp_congestion_(settings.tcp_congestion),
      me_(me),
      n_(nranks),
      local_only_(local_only),
      rail_addr_(std::move(rail_addr)),
      listen_nonce_(random_bytes(kListenNonce)),
      door_(me, settings.job_key, std::min(5.0, settings.timeout)),
      answered_(nranks, 0),
      links_(rail_addr_),
      hold_seq_(rail_addr_.size(), 0) {
  for (auto& a : rail_addr_) {
    int port = 0;
    door_.add_listener(tcp_listen(a, 0, &port, tcp_congestion_), true);
    rail_port_.push_back(port);
  }
}

// Whatever set-up or a call left open (the normal path closes in close()).
SocketTransport::~SocketTransport() {
  for (auto& c : conns_)
    if (c.fd >= 0) ::close(c.fd);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  unmap_node_shm(seg_);
}

std::string SocketTransport::contact() const {
  std::vector<std::string> fields{listen_nonce_};
  for (size_t r = 0; r < rail_addr_.size(); ++r) fields.push_back(rail_addr_[r] + ":" + std::to_string(rail_port_[r]));
  return pack_fields(fields);
}

void SocketTransport::connect(const Topology& topo, uint64_t comm_id, const std::string& job, const std::string& tag,
                              const std::vector<std::string>& contacts, OutOfBand& oob, double deadline) {
  topo_ = topo;
  node_ = topo.node_of(me_);
  comm_id_ = comm_id;
  door_.expect(topo_, comm_id_, listen_nonce_);
  std::vector<std::vector<std::string>> fields(n_);
  for (int r = 0; r < n_; ++r)
    if (!unpack_fields(contacts[r], &fields[r]) || fields[r].size() != 1 + rail_addr_.size() ||
        fields[r][0].size() != kListenNonce)
      throw RuntimeError(Status::Protocol, "malformed contact of rank " + std::to_string(r) + " in the set-up exchange");
  std::exception_ptr failed;
  try {
    connect_peers(fields, job, tag, deadline);
  } catch (...) {
    failed = std::current_exception();
  }
  all_or_none(oob, failed, "connect to its peers");
  map_node_shm(seg_, oob, job + "-" + tag, topo_, me_, shm_bytes_);
  for (int r : topo_.ranks_of(node_))
    if (r != me_) local_peers_.push_back({r, topo_.local_rank(r)});
}

// The lower rank connects, the higher accepts; one TCP socket per rail to every
// rank on another node, one Unix socket to every local rank.
void SocketTransport::connect_peers(const std::vector<std::vector<std::string>>& fields, const std::string& job,
                                    const std::string& tag, double deadline) {
  const int rails_n = static_cast<int>(rail_addr_.size());
  conn_of_.assign(n_, std::vector<int>(rails_n, -1));
  // Abstract names are cut at 107 bytes: the tag and rank, which make the name
  // unique, come before the job id, which is there to be read (ss -xl).
  auto uds_name = [&](int rank) { return "railcoll/" + tag + "/" + std::to_string(rank) + "/" + job; };
  if (topo_.node_size(node_) > 1) door_.add_listener(unix_listen(uds_name(me_)), false);
  peer_addr_.assign(n_, {});
  peer_nonce_.assign(n_, "");
  for (int j = 0; j < n_; ++j) {
    peer_nonce_[j] = fields[j][0];
    peer_addr_[j].assign(fields[j].begin() + 1, fields[j].end());
  }
  rail_down_count_.assign(rails_n, 0);
  auto hello = [&](int fd, int peer, int rail) {
    std::string frame = hello_frame(peer, rail, 1, peer_nonce_[peer]);
    write_all(fd, frame.data(), frame.size(), deadline, link_name(peer, rail));
  };
  int expected = 0;
  for (int j = 0; j < n_; ++j) {
    if (j == me_) continue;
    const bool local = topo_.same_node(j, me_);
    if (!local && local_only_) continue;
    if (j < me_) {
      expected += local ? 1 : rails_n;
      continue;
    }
    if (local) {
      int fd = unix_connect(uds_name(j), deadline);
      add_conn(fd, j, -1);
      hello(fd, j, -1);
    } else {
      for (int r = 0; r < rails_n; ++r) {
        auto hp = split_host_port(peer_addr_[j][r]);
        int fd = tcp_connect(rail_addr_[r], hp.first, hp.second, deadline, tcp_congestion_);
        add_conn(fd, j, r);
        hello(fd, j, r);
      }
    }
  }
  accept_peers(expected, deadline);
  // The rail listeners stay open: a rail that failed is reconnected there.
  door_.close_local_listener();
  if (n_ == 1 || topo_.nnodes() == 1 || local_only_) door_.close_listeners();
}

void SocketTransport::accept_peers(int expected, double deadline) {
  std::vector<pollfd> p;
  for (int got = 0; got < expected;) {
    double now = now_seconds();
    if (now > deadline)
      throw RuntimeError(Status::Timeout, "timed out waiting for peers to connect (" + std::to_string(got) + " of " +
                                              std::to_string(expected) + " connections made)");
    p.clear();
    door_.poll_set(&p);
    poll(p.data(), p.size(), 100);
    admitted_.clear();
    door_.serve(p.data(), now, &admitted_);
    for (auto& a : admitted_) got += admit(a, now);
  }
  // Whoever else knocked during set-up is told no (and logged), rather than
  // left in the backlog.
  admitted_.clear();
  double now = now_seconds();
  door_.close_the_backlog(now, &admitted_);
  for (auto& a : admitted_) admit(a, now);
}

// A connection the door admitted: a new peer connection, or a reconnected rail.
// Every connection of a (rank, rail) has a higher generation than the last, so
// an old Hello cannot open one again.
bool SocketTransport::admit(const Door::Admitted& a, double now) {
  int ci = conn_of_[a.peer][std::max(0, a.rail)];
  if (ci >= 0 && a.generation <= conns_[ci].generation) {
    door_.refuse(a.fd, "an old hello of rank " + std::to_string(a.peer) + " rail " + std::to_string(a.rail) +
                           " (a replay)");
    return false;
  }
  if (ci >= 0 && held_here(a)) return false;
  if (ci < 0) {
    add_conn(a.fd, a.peer, a.rail);
  } else {
    reconnected(conns_[ci], a.fd, now);
    forget_registration(conns_[ci]);  // the new fd may reuse the number of one closed before
  }
  conns_[conn_of_[a.peer][std::max(0, a.rail)]].generation = a.generation;
  return true;
}

void SocketTransport::add_conn(int fd, int peer, int rail) {
  Conn c;
  c.fd = fd;
  c.peer = peer;
  c.rail = rail;
  set_nonblocking(fd);
  if (rail >= 0) tune_rail(fd);
  conns_.push_back(std::move(c));
  conn_of_[peer][rail < 0 ? 0 : rail] = static_cast<int>(conns_.size()) - 1;
}

void SocketTransport::tune_rail(int fd) const { limit_unsent(fd, notsent_lowat_); }

// The Hello that opens a connection to `peer` on `rail` (-1: local); its seq is
// the connection's generation, so an old Hello cannot open a new one.
std::string SocketTransport::hello_frame(int peer, int rail, uint32_t generation, const std::string& nonce) const {
  FrameHeader h = header(Frame::Hello);
  h.op = rail;
  h.seq = generation;
  h.length = kHelloProof;
  std::string frame(reinterpret_cast<const char*>(&h), sizeof h);
  return frame + hello_proof(job_key_, h, peer, nonce);
}

// ------------------------------------------------------------------ sending

void SocketTransport::queue(Conn& c, Frame type, int op) {
  SendItem it;
  it.hdr = header(type);
  it.hdr.op = op;
  c.out.push_back(std::move(it));
}

void SocketTransport::send(int peer, int rail, const FrameHeader& h, const iovec* payload, size_t n) {
  bool moved;
  Conn& c = route(peer, rail, &moved);
  SendItem it;
  it.hdr = h;
  if (moved) it.hdr.flags |= kFlagMoved;
  it.iov.assign(payload, payload + n);
  c.out.push_back(std::move(it));
  if (c.out.size() == 1 && c.can_write && c.ep_fd >= 0) drive_sends(c);  // at once: no round trip through progress
}

bool SocketTransport::sends_pending() const {
  for (auto& c : conns_)
    if (!c.out.empty()) return true;
  return false;
}

// A rail's unsent limit keeps a rank's streams one after another inside a
// call; the last ones, at the end, need no such order, and a rank that waits
// for the network to carry them out of its own queue stays in the call for the
// transmission: a gather's node leader put 4 MiB to the root at 1 MiB a rank
// and left when nearly all of it had crossed the shared rails (docs/runtime.md,
// "Tails"). The kernel's default limit (none) lets the send buffer take it all.
void SocketTransport::hand_over_sends() {
  if (notsent_lowat_ <= 0) return;
  for (auto& c : conns_) {
    if (c.rail < 0 || c.closed || c.down || c.out.empty() || c.unsent_unlimited) continue;
    unlimit_unsent(c.fd);
    c.unsent_unlimited = true;
    c.can_write = true;
    drive_sends(c);
  }
}

void SocketTransport::begin_call() {
  for (auto& c : conns_) {
    if (c.closed && !c.bye && !c.down) throw RuntimeError(Status::Peer, c.name() + " is gone");
    if (c.unsent_unlimited && !c.closed) limit_unsent(c.fd, notsent_lowat_);
    c.unsent_unlimited = false;
  }
}

void SocketTransport::end_call() { keep_unconfirmed(); }

// ------------------------------------------------------------------ peers

int SocketTransport::rails_up() const {
  if (rail_down_count_.empty()) return static_cast<int>(rail_addr_.size());
  int up = 0;
  for (int n : rail_down_count_) up += n == 0;
  return up;
}

void SocketTransport::probe_peers() {
  std::fill(answered_.begin(), answered_.end(), 0);
  for (int p = 0; p < n_; ++p) {
    if (p == me_) continue;
    for (int ci : conn_of_[p]) {
      if (ci < 0 || conns_[ci].closed) continue;
      queue(conns_[ci], Frame::Ping);
      break;
    }
  }
}

// Straight to every socket, not through the queues: the call is over.
void SocketTransport::abort_peers(uint64_t call, const std::string& why) {
  FrameHeader h = header(Frame::Abort);
  h.seq = call;
  std::string text = why.substr(0, 2000);
  h.length = text.size();
  std::string frame(reinterpret_cast<const char*>(&h), sizeof h);
  frame += text;
  for (auto& c : conns_)
    if (!c.closed) ::send(c.fd, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

// ------------------------------------------------------------------ the end

void SocketTransport::close(double deadline) {
  goodbye(deadline);
  door_.close_listeners();
  unmap_node_shm(seg_);
}

// A goodbye on every connection, then reading until the peers' goodbyes (until
// `deadline` at most), then every connection closed.
void SocketTransport::goodbye(double deadline) {
  for (auto& c : conns_) {
    if (c.down && !c.closed) ::close(c.fd), c.fd = -1, c.closed = true;  // a given-up rail says no goodbye
    if (c.closed) continue;
    FrameHeader h = header(Frame::Bye);
    ::send(c.fd, &h, sizeof h, MSG_NOSIGNAL | MSG_DONTWAIT);
    shutdown(c.fd, SHUT_WR);
  }
  // Read until every peer said goodbye (or is gone), so no close resets a peer.
  std::vector<std::string> partial(conns_.size());  // bytes of frames not yet whole
  std::vector<pollfd> p;
  while (now_seconds() < deadline) {
    bool open = false;
    for (auto& c : conns_) open |= !c.closed && !c.bye;
    if (!open) break;
    p.clear();
    for (auto& c : conns_) p.push_back({c.fd, static_cast<short>(c.closed || c.bye ? 0 : POLLIN), 0});
    poll(p.data(), p.size(), 50);
    for (size_t i = 0; i < p.size(); ++i) {
      Conn& c = conns_[i];
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
  for (auto& c : conns_)
    if (c.fd >= 0) ::close(c.fd);
  conns_.clear();
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  epoll_fd_ = -1;
}

}  // namespace railcoll::rt
