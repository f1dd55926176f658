// TCP links (tcp_links.hpp): set-up, frames, delivery from the kernel's send
// queue, giving up, reconnecting through the door, the goodbye.
#include "runtime/transport/tcp/tcp_links.hpp"

#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/bootstrap/auth.hpp"
#include "runtime/bootstrap/net.hpp"
#include "runtime/bootstrap/oob.hpp"

namespace railcoll::rt {

TcpLinks::TcpLinks(const TransportSettings& settings, int me, int nranks, std::vector<std::string> rail_addr)
    : job_key_(settings.job_key),
      notsent_lowat_(settings.notsent_lowat),
      tcp_congestion_(settings.tcp_congestion),
      me_(me),
      n_(nranks),
      rail_addr_(std::move(rail_addr)),
      listen_nonce_(random_bytes(kListenNonce)),
      door_(me, settings.job_key, std::min(5.0, settings.timeout)) {
  for (auto& a : rail_addr_) {
    int port = 0;
    door_.add_listener(tcp_listen(a, 0, &port, tcp_congestion_), true);
    rail_port_.push_back(port);
  }
}

// Whatever set-up or a call left open (the normal path closes in goodbye()).
TcpLinks::~TcpLinks() {
  for (auto& c : conns_)
    if (c.fd >= 0) ::close(c.fd);
}

std::string TcpLinks::contact() const {
  std::vector<std::string> fields{listen_nonce_};
  for (size_t r = 0; r < rail_addr_.size(); ++r) fields.push_back(rail_addr_[r] + ":" + std::to_string(rail_port_[r]));
  return pack_fields(fields);
}

// A rail socket's unsent limit (RAILCOLL_NOTSENT_LOWAT); its congestion
// control is set before it connects (tcp_listen, tcp_connect).
void TcpLinks::tune(int fd) const { limit_unsent(fd, notsent_lowat_); }

// The lower rank connects, the higher accepts; one TCP socket per rail to
// every rank on another node.
void TcpLinks::connect(const LinkSetup& s, double deadline) {
  topo_ = *s.topo;
  comm_id_ = s.comm_id;
  waits_ = s.waits;
  door_.expect(topo_, comm_id_, listen_nonce_);
  const int rails_n = static_cast<int>(rail_addr_.size());
  peer_addr_.assign(n_, {});
  peer_nonce_.assign(n_, "");
  for (int r = 0; r < n_; ++r) {
    std::vector<std::string> f;
    if (!unpack_fields(s.contacts[r], &f) || f.size() != 1 + rail_addr_.size() || f[0].size() != kListenNonce)
      throw RuntimeError(Status::Protocol, "malformed contact of rank " + std::to_string(r) + " in the set-up exchange");
    peer_nonce_[r] = f[0];
    peer_addr_[r].assign(f.begin() + 1, f.end());
  }
  conn_of_.assign(n_, std::vector<int>(rails_n, -1));
  for (int j = 0; j < n_; ++j) {
    if (j == me_ || topo_.same_node(j, me_)) continue;
    for (int r = 0; r < rails_n; ++r) {
      conn_of_[j][r] = static_cast<int>(conns_.size());
      conns_.emplace_back();
      conns_.back().peer = j;
      conns_.back().rail = r;
      conns_.back().keep_written = true;
    }
  }
  std::exception_ptr failed;
  try {
    int expected = 0;
    for (auto& c : conns_) {
      if (c.peer < me_) {
        ++expected;
        continue;
      }
      auto hp = split_host_port(peer_addr_[c.peer][c.rail]);
      c.fd = tcp_connect(rail_addr_[c.rail], hp.first, hp.second, deadline, tcp_congestion_);
      set_nonblocking(c.fd);
      tune(c.fd);
      const std::string hello = hello_frame(job_key_, comm_id_, me_, c.peer, c.rail, 1, peer_nonce_[c.peer]);
      write_all(c.fd, hello.data(), hello.size(), deadline, c.name());
    }
    door_.accept(expected, deadline, [&](const Door::Admitted& a, double now) { return admit(a, now); });
  } catch (...) {
    failed = std::current_exception();
  }
  all_or_none(*s.oob, failed, "connect to its peers");
  // The rail listeners stay open: a rail that failed is reconnected there.
  if (conns_.empty()) door_.close_listeners();
}

// A connection the door admitted: a new link at set-up, or a reconnected one.
// Every connection of a (rank, rail) has a higher generation than the last, so
// an old Hello cannot open one again.
bool TcpLinks::admit(const Door::Admitted& a, double now) {
  const int ci = a.rail >= 0 && a.peer >= 0 && a.peer < n_ ? conn_of_[a.peer][a.rail] : -1;
  if (ci < 0) {
    door_.refuse(a.fd, "an unexpected connection of rank " + std::to_string(a.peer));
    return false;
  }
  Conn& c = conns_[ci];
  if (c.fd < 0 && !c.closed) {  // set-up
    c.fd = a.fd;
    set_nonblocking(c.fd);
    tune(c.fd);
    c.generation = a.generation;
    return true;
  }
  if (a.generation <= c.generation) {
    door_.refuse(a.fd, "an old hello of rank " + std::to_string(a.peer) + " rail " + std::to_string(a.rail) +
                           " (a replay)");
    return false;
  }
  if (!ev_->may_restore(a.peer, a.rail)) {
    door_.refuse(a.fd, "rail " + std::to_string(a.rail) + " is held down here: its link is not stable yet");
    return false;
  }
  reconnected(c, a.fd, now);
  c.generation = a.generation;
  return true;
}

// ------------------------------------------------------------------ frames

void TcpLinks::write(Conn& c) {
  std::string error;
  if (!c.write(&error)) ev_->link_broken(c.peer, c.rail, "refused a send: " + error, false);
}

void TcpLinks::send(int peer, int rail, OutFrame f) {
  Conn& c = conn(peer, rail);
  c.out.push_back({std::move(f)});
  if (c.out.size() == 1 && c.can_write && c.ep_fd >= 0) write(c);  // at once: no round trip through progress
}

void TcpLinks::send_urgent(int peer, int rail, const OutFrame& f) { conn(peer, rail).send_now(f); }

bool TcpLinks::sends_pending() const {
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
void TcpLinks::hand_over_sends() {
  if (notsent_lowat_ <= 0) return;
  for (auto& c : conns_) {
    if (c.closed || c.down || c.out.empty() || c.unsent_unlimited) continue;
    unlimit_unsent(c.fd);
    c.unsent_unlimited = true;
    c.can_write = true;
    write(c);
  }
}

void TcpLinks::begin_call() {
  for (auto& c : conns_) {
    if (c.unsent_unlimited && !c.closed) limit_unsent(c.fd, notsent_lowat_);
    c.unsent_unlimited = false;
  }
}

// When a call returns, frames the peer has not acknowledged stop pointing
// into the user's buffers: they are copied, in case they must go again. Asking
// the kernel what it confirmed (an ioctl) costs more than copying a few small
// frames, so it is asked only once the kept bytes pass kAskKernelBytes: a
// small call's end makes no syscall, and the kept queue stays bounded.
void TcpLinks::end_call() {
  constexpr uint64_t kAskKernelBytes = 64 << 10;
  for (auto& c : conns_) {
    if (c.closed) continue;
    if (!c.unacked.empty() && c.written - (c.unacked.front().end - c.unacked.front().total()) > kAskKernelBytes)
      release_confirmed(c);
    c.keep_payloads();
  }
}

// ------------------------------------------------------------------ the round

// Keeps the rank's wait watching the connections: a connection whose fd
// changed (failover closes, reconnects) leaves the set and joins again.
// Deletions come first, so a number closed by one connection and reused by
// another is never taken out of the set after it joined. A connection still
// connecting joins again every round (its number may have been closed and
// reused meanwhile). Fds change only while a link is down or being
// reconnected, or when the door admits a reconnected one (rewatch_).
double TcpLinks::before_wait(double wait_s) {
  bool settled = !rewatch_;
  for (auto& c : conns_) settled &= !c.down && !c.connecting;
  if (settled) return wait_s;
  rewatch_ = false;
  auto wanted = [](const Conn& c) { return c.fd >= 0 && (!c.closed || c.connecting) ? c.fd : -1; };
  bool changed = false;
  for (auto& c : conns_) {
    if (wanted(c) == c.ep_fd && !c.connecting) continue;
    changed = true;
    if (c.ep_fd >= 0) waits_->unwatch(c.ep_fd);
    c.ep_fd = -1;
  }
  if (!changed) return wait_s;
  for (size_t i = 0; i < conns_.size(); ++i) {
    Conn& c = conns_[i];
    const int fd = wanted(c);
    if (fd < 0 || c.ep_fd >= 0) continue;
    waits_->watch(fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, this, static_cast<uint32_t>(i));
    c.ep_fd = fd;
    c.can_read = c.can_write = true;  // whatever happened before it joined: try once
  }
  return wait_s;
}

void TcpLinks::fd_ready(uint32_t token, uint32_t ev) {
  Conn& c = conns_[token];
  if (c.connecting) return finish_connect(c, now_seconds());
  c.note_ready(ev);
}

void TcpLinks::drive(double now) {
  for (auto& c : conns_) {
    if (c.closed || c.connecting) continue;
    if (c.can_read) {
      std::string error;
      switch (c.read(*ev_, &error)) {
        case FrameStream::Read::Limit:
          close_if_drained(c);
          break;
        case FrameStream::Read::Closed:
          on_closed(c, error);
          break;
        case FrameStream::Read::Idle:
          break;
      }
    }
    if (!c.out.empty() && !c.closed && c.can_write) write(c);
  }
  for (auto& c : conns_)
    if (c.connecting && now > c.connect_until) abort_connect(c);
  if (now >= next_door_check_) serve_door(now);
}

// The door: rail listeners (a rail reconnecting) and half-open connections.
void TcpLinks::serve_door(double now) {
  next_door_check_ = now + kDoorEvery;
  door_fds_.clear();
  if (door_.poll_set(&door_fds_) == 0) return;
  if (::poll(door_fds_.data(), door_fds_.size(), 0) <= 0) return;
  admitted_.clear();
  door_.serve(door_fds_.data(), now, &admitted_);
  for (auto& a : admitted_) admit(a, now);
}

// The stream ended. A given-up connection the peer closed is done; one whose
// peer said goodbye closes quietly; one that closes while the peer's other
// rails stay open failed alone; else the peer is gone.
void TcpLinks::on_closed(Conn& c, const std::string& error) {
  if (c.closed) return;
  if (c.down) {
    c.drain_to = 0;
    return close_if_drained(c);
  }
  if (c.bye) {
    c.closed = true;
    return;
  }
  bool all_closing = true;
  for (int r = 0; r < topo_.rails(); ++r) {
    const Conn& d = conn(c.peer, r);
    if (&d == &c || d.down || d.closed) continue;
    pollfd p{d.fd, POLLRDHUP, 0};
    all_closing &= ::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
  }
  if (!all_closing)
    return ev_->link_broken(c.peer, c.rail, "was closed (reset by the other side or the network)", false);
  c.closed = true;
  ev_->link_broken(c.peer, c.rail,
                   error.empty() ? "closed its connection without saying goodbye: it exited or died"
                                 : "closed its connection without saying goodbye (" + error + "): it exited or died",
                   true);
}

// ------------------------------------------------------------------ delivery, giving up

// Bytes of c the peer's kernel has acknowledged; frames wholly inside are let go.
uint64_t TcpLinks::release_confirmed(Conn& c) {
  int q = 0;
  if (ioctl(c.fd, SIOCOUTQ, &q) != 0) q = static_cast<int>(std::min<uint64_t>(c.written, INT32_MAX));
  const uint64_t confirmed = c.written - static_cast<uint64_t>(q);
  while (!c.unacked.empty() && c.unacked.front().end <= confirmed) c.unacked.pop_front();
  return confirmed;
}

// The kernel's send queue shrinking means the rail carries our bytes.
LinkSigns TcpLinks::signs(int peer, int rail) {
  Conn& c = conn(peer, rail);
  const double now = now_seconds();
  LinkSigns s;
  s.heard_at = c.heard_at;
  if (c.closed || c.down || (c.unacked.empty() && c.out.empty())) {
    c.outq = -1;  // idle: the stall clock starts when it has something to carry
    s.moving_at = now;
    return s;
  }
  int q = 0;
  if (ioctl(c.fd, SIOCOUTQ, &q) == 0) {
    // Moving = the peer acknowledged bytes since the last look. Not "the
    // queue shrank": a writer that refills the queue to the kernel's limit
    // between looks keeps it at the same length while the rail carries it
    // at full rate (seen at 200 Mbit/s: a busy rail given up as silent).
    const uint64_t confirmed = c.written - static_cast<uint64_t>(q);
    if (q == 0 || c.outq < 0 || confirmed > c.confirmed_seen) c.moving_at = now;
    c.outq = q;
    c.confirmed_seen = confirmed;
    while (!c.unacked.empty() && c.unacked.front().end <= confirmed) c.unacked.pop_front();
  }
  s.busy = true;
  s.moving_at = c.moving_at;
  return s;
}

// What the peer's kernel acknowledged is where the link ends for the peer;
// the frames beyond go again elsewhere.
GivenUp TcpLinks::give_up(int peer, int rail) {
  Conn& c = conn(peer, rail);
  GivenUp g;
  g.end = release_confirmed(c);
  c.down = true;
  for (auto* q : {&c.unacked, &c.out})
    for (auto& it : *q)
      if (moves_with_rail(it.f.hdr.type)) g.frames.push_back(std::move(it.f));
  c.unacked.clear();
  c.out.clear();
  if (c.drain_to >= 0) c.read_limit = c.drain_to;
  close_if_drained(c);
  return g;
}

void TcpLinks::peer_gave_up(int peer, int rail, uint64_t end) {
  Conn& c = conn(peer, rail);
  if (c.closed) return;
  c.drain_to = static_cast<int64_t>(end);
  if (c.down) c.read_limit = c.drain_to;
  close_if_drained(c);
}

// A given-up connection is closed once what the peer's kernel acknowledged is read.
void TcpLinks::close_if_drained(Conn& c) {
  if (!c.down || c.closed || c.drain_to < 0 || c.nread < static_cast<uint64_t>(c.drain_to)) return;
  ::close(c.fd);
  c.fd = -1;
  c.closed = true;
  rewatch_ = true;
  ev_->link_closed(c.peer, c.rail);
}

// ------------------------------------------------------------------ reconnecting

// The peer opened a new connection for a rail: it replaces the old one, and
// whatever the old one had not delivered goes again on the new one.
void TcpLinks::reconnected(Conn& c, int fd, double now) {
  // What the peer's kernel acknowledged on the old connection is read first.
  for (uint64_t before = ~0ull; c.down && !c.closed && c.nread != before;) {
    before = c.nread;
    std::string error;
    if (c.read(*ev_, &error) != FrameStream::Read::Idle) break;
  }
  std::vector<StreamFrame> again;
  for (auto* q : {&c.unacked, &c.out})
    for (auto& it : *q)
      if (moves_with_rail(it.f.hdr.type)) {
        it.f.hdr.flags |= kFlagMoved;
        again.push_back({std::move(it.f)});
      }
  c.unacked.clear();
  c.out.clear();
  if (c.fd >= 0) ::close(c.fd);
  set_nonblocking(fd);
  c.ep_fd = -2;  // the new fd may reuse the number of one closed before: register it again
  for (auto& it : again) c.out.push_back(std::move(it));
  restored(c, fd, now);
}

// A new connection carries the link from now on, its stream from the start.
void TcpLinks::restored(Conn& c, int fd, double now) {
  tune(fd);
  c.restart(fd, now);
  c.unsent_unlimited = false;
  c.down = c.connecting = false;
  c.drain_to = -1;
  c.outq = -1;
  rewatch_ = true;
  ev_->link_restored(c.peer, c.rail);
}

bool TcpLinks::reconnect(int peer, int rail, double now) {
  Conn& c = conn(peer, rail);
  auto hp = split_host_port(peer_addr_[peer][rail]);
  c.fd = tcp_connect_start(rail_addr_[rail], hp.first, hp.second, tcp_congestion_);
  if (c.fd < 0) return false;
  c.connecting = true;
  c.connect_until = now + kConnectFor;
  rewatch_ = true;
  return true;
}

// A reconnect in progress is dropped (the rail is held down, or it took too long).
void TcpLinks::abort_connect(Conn& c) {
  ::close(c.fd);
  c.fd = -1;
  c.connecting = false;
  rewatch_ = true;
}

void TcpLinks::stop_reconnect(int peer, int rail) {
  Conn& c = conn(peer, rail);
  if (c.connecting) abort_connect(c);
}

void TcpLinks::finish_connect(Conn& c, double now) {
  int err = 0;
  socklen_t len = sizeof err;
  getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
  const std::string hello = hello_frame(job_key_, comm_id_, me_, c.peer, c.rail, c.generation + 1, peer_nonce_[c.peer]);
  if (err != 0 || ::send(c.fd, hello.data(), hello.size(), MSG_NOSIGNAL | MSG_DONTWAIT) != ssize_t(hello.size()))
    return abort_connect(c);
  ++c.generation;
  restored(c, c.fd, now);
}

// ------------------------------------------------------------------ the end

// Given-up links say no goodbye; the others say it and await the peers'.
void TcpLinks::goodbye(double deadline) {
  std::vector<FrameStream*> live;
  for (auto& c : conns_) {
    if (c.connecting) abort_connect(c);
    if (c.down && !c.closed) {
      ::close(c.fd);
      c.fd = -1;
      c.closed = true;
    }
    live.push_back(&c);
  }
  FrameHeader bye = make_header(Frame::Bye, comm_id_, me_);
  bye.op = -1;
  goodbye_streams(live, bye, deadline);
  door_.close_listeners();
}

}  // namespace railcoll::rt
