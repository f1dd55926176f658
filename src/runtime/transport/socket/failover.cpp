// Rail failover, inside the SocketTransport (socket_transport.hpp): the
// executor above never learns of it. The stream calls in here when a socket or
// a frame says a rail is in trouble, progress once per round (check_rails) to
// watch the rails and reconnect the ones given up, and send() to route a frame
// around a rail that is down. Seed 000's second reason for several rails is
// fault tolerance; this is it.
//
// A TCP connection that breaks, or stalls while another rail to the same peer
// answers, is given up. Both sides then stop sending on it and tell the other
// with a RailDown frame on a surviving rail carrying how many bytes of the
// connection the peer's kernel has acknowledged (those are safe in its socket
// and are still read, up to that count, then the connection is closed);
// every frame beyond that goes again (flagged kFlagMoved) on the other rails.
// Later puts avoid the rail; the lower rank reconnects it every kRailRetry s
// and when that works it is used again. A call fails only when no rail to a
// peer is left. The fast path pays a SIOCOUTQ per connection and call, and a
// copy of what the peer's kernel has not acknowledged when the call returns.
//
// Silence takes RAILCOLL_RAIL_TIMEOUT to be sure of; a lost link is known at
// once: the link monitor (link_monitor.hpp) reads the kernel's netlink link
// messages in the progress round, and a rail whose interface lost its link is
// given up on every connection within that round. Its peers learn it from the
// RailDown notice, as always, and from a RailHold notice that says the rail is
// held down on this side: nobody reconnects it until this side says, with a
// second RailHold, that its link has been up and stable for the hold-down time
// (which grows while the link keeps flapping; see HoldDown).
#include "runtime/transport/socket/socket_transport.hpp"

#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "runtime/bootstrap/net.hpp"

namespace railcoll::rt {

// The other usable rails to c's peer.
std::vector<SocketTransport::Conn*> SocketTransport::other_rails(const Conn& c) {
  std::vector<Conn*> v;
  for (int ci : conn_of_[c.peer])
    if (ci >= 0 && &conns_[ci] != &c && !conns_[ci].down && !conns_[ci].closed) v.push_back(&conns_[ci]);
  return v;
}

// One log line when a rail loses its first connection, one when its last comes back.
void SocketTransport::rail_state(int rail, int delta, const std::string& why) {
  int before = rail_down_count_[rail];
  rail_down_count_[rail] += delta;
  if (before == 0 && delta > 0)
    fprintf(stderr, "railcoll: rank %d: rail %d (%s) is down: %s; its traffic moves to the other rails\n", me_, rail,
            rail_addr_[rail].c_str(), why.c_str());
  if (before > 0 && rail_down_count_[rail] == 0)
    fprintf(stderr, "railcoll: rank %d: rail %d (%s) is up again\n", me_, rail, rail_addr_[rail].c_str());
}

// Bytes of c the peer's kernel has acknowledged; frames wholly inside are let go.
uint64_t SocketTransport::release_confirmed(Conn& c) {
  int q = 0;
  if (ioctl(c.fd, SIOCOUTQ, &q) != 0) q = static_cast<int>(std::min<uint64_t>(c.written, INT32_MAX));
  uint64_t confirmed = c.written - static_cast<uint64_t>(q);
  while (!c.unacked.empty() && c.unacked.front().end <= confirmed) c.unacked.pop_front();
  return confirmed;
}

// When a call returns, frames the peer has not acknowledged stop pointing
// into the user's buffers: they are copied, in case they must go again.
void SocketTransport::keep_unconfirmed() {
  for (auto& c : conns_) {
    if (c.rail < 0 || c.closed || c.unacked.empty()) continue;
    release_confirmed(c);
    for (auto& it : c.unacked) {
      for (auto& v : it.iov) it.owned.append(static_cast<char*>(v.iov_base), v.iov_len);
      it.iov.clear();
    }
  }
}

// Takes c's unsent and unconfirmed frames out of it, to be sent again.
std::vector<SocketTransport::SendItem> SocketTransport::take_frames(Conn& c) {
  std::vector<SendItem> v;
  for (auto* q : {&c.unacked, &c.out})
    for (auto& it : *q)
      if (tracked(it.hdr.type)) {
        it.done = 0;
        it.hdr.flags |= kFlagMoved;
        v.push_back(std::move(it));
      }
  c.unacked.clear();
  c.out.clear();
  return v;
}

void SocketTransport::reset_stream(Conn& c, double now) {
  c.hdr_got = 0;
  c.in_payload = false;
  c.dst.clear();
  c.written = c.nread = 0;
  c.told = false;
  c.drain_to = -1;
  c.heard_at = now;
  c.outq = -1;
  c.probed = false;
}

void SocketTransport::rail_failed(Conn& c, const std::string& why) {
  if (c.down || c.closed) return;
  auto alive = other_rails(c);
  if (alive.empty()) {
    c.closed = true;
    throw RuntimeError(Status::Peer,
                       c.name() + " " + why + ", and no other rail to rank " + std::to_string(c.peer) + " is left");
  }
  double now = now_seconds();
  uint64_t confirmed = release_confirmed(c);
  c.down = true;
  c.down_at = now;
  rail_state(c.rail, 1, "the connection to rank " + std::to_string(c.peer) + " " + why);
  // The notice goes first on the one connection that carries all the frames
  // sent again, so the peer knows where the old connection ends (and reads no
  // further in it) before it sees any of them.
  SendItem notice;
  notice.hdr = header(Frame::RailDown);
  notice.hdr.op = c.rail;
  notice.hdr.offset = confirmed;
  alive[0]->out.push_back(std::move(notice));
  c.told = true;
  for (auto& it : take_frames(c)) alive[0]->out.push_back(std::move(it));
  close_if_drained(c);
}

// The peer gave up its connection on rail h.op to this rank (notice on c): read
// the old one up to the bytes the peer's kernel confirmed, then close it.
void SocketTransport::rail_down_notice(Conn& c, const FrameHeader& h) {
  if (h.length || c.rail < 0 || h.op < 0 || h.op >= topo_.rails() || h.op == c.rail)
    protocol_error(c, "malformed rail-down notice");
  Conn& gone = conns_[conn_of_[c.peer][h.op]];
  if (gone.closed) return;
  gone.drain_to = static_cast<int64_t>(h.offset);
  if (!gone.down) rail_failed(gone, "was given up by rank " + std::to_string(c.peer));
  close_if_drained(gone);
}

// A given-up connection is closed once the peer's acknowledged bytes are read.
void SocketTransport::close_if_drained(Conn& c) {
  if (!c.down || c.closed || !c.told || c.drain_to < 0 || c.nread < static_cast<uint64_t>(c.drain_to)) return;
  ::close(c.fd);
  c.fd = -1;
  c.closed = true;
  c.retry_at = now_seconds() + kRailRetry;
}

// The peer opened a new connection for a rail: it replaces the old one, and
// whatever the old one had not delivered goes again on the new one.
void SocketTransport::reconnected(Conn& c, int fd, double now) {
  // What the peer's kernel acknowledged on the old connection is read first.
  for (uint64_t before = ~0ull; c.down && !c.closed && c.nread != before;) {
    before = c.nread;
    drive_recv(c);
  }
  std::vector<SendItem> again = take_frames(c);
  if (!c.closed) ::close(c.fd);
  if (c.down) rail_state(c.rail, -1, "");
  c.fd = fd;
  set_nonblocking(fd);
  tune_rail(fd);
  c.unsent_unlimited = false;
  c.down = c.closed = c.bye = c.connecting = false;
  reset_stream(c, now);
  for (auto& it : again) c.out.push_back(std::move(it));
}

// Puts and signals go on the schedule's rail, or the next usable one.
SocketTransport::Conn& SocketTransport::route(int peer, int rail, bool* moved) {
  *moved = false;
  if (topo_.same_node(peer, me_)) {
    Conn& c = conns_[conn_of_[peer][0]];
    if (c.closed) throw RuntimeError(Status::Peer, c.name() + " is gone: cannot send to it");
    return c;
  }
  int R = topo_.rails();
  for (int k = 0; k < R; ++k) {
    Conn& c = conns_[conn_of_[peer][(rail + k) % R]];
    if (c.down || c.closed) continue;
    *moved = k > 0;
    return c;
  }
  throw RuntimeError(Status::Peer, "no rail to rank " + std::to_string(peer) + " is left: cannot send to it");
}

void SocketTransport::start_reconnect(Conn& c, double now) {
  auto hp = split_host_port(peer_addr_[c.peer][c.rail]);
  c.fd = tcp_connect_start(rail_addr_[c.rail], hp.first, hp.second, tcp_congestion_);
  c.retry_at = now + kRailRetry;
  if (c.fd < 0) return;
  c.connecting = true;
  c.connect_until = now + kRailRetry;
}

// A reconnect in progress is dropped (the rail is held down, or it took too long).
void SocketTransport::abort_connect(Conn& c) {
  ::close(c.fd);
  c.fd = -1;
  c.connecting = false;
}

void SocketTransport::finish_connect(Conn& c, double now) {
  int err = 0;
  socklen_t len = sizeof err;
  getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
  std::string hello = hello_frame(c.peer, c.rail, c.generation + 1, peer_nonce_[c.peer]);
  if (err != 0 || ::send(c.fd, hello.data(), hello.size(), MSG_NOSIGNAL | MSG_DONTWAIT) != ssize_t(hello.size()))
    return abort_connect(c);
  ++c.generation;
  c.down = c.closed = c.bye = c.connecting = false;
  reset_stream(c, now);
  rail_state(c.rail, -1, "");
}

// ------------------------------------------------------------------ links

// The netlink socket is readable: rails whose link went down are given up.
void SocketTransport::link_events(double now) {
  link_changes_.clear();
  links_.read_events(now, &link_changes_);
  links_changed(now);
}

// Acts on link_changes_: a rail whose link was lost is given up on every
// connection at once and its peers are told to hold it down; a rail whose
// hold-down ended is taken back (the peers told, the lower rank reconnects).
void SocketTransport::links_changed(double now) {
  for (const auto& ch : link_changes_) {
    ++hold_seq_[ch.rail];
    if (ch.usable && rail_down_count_[ch.rail] > 0)
      fprintf(stderr, "railcoll: rank %d: rail %d (%s): %s: taking it back\n", me_, ch.rail,
              rail_addr_[ch.rail].c_str(), ch.why.c_str());
    for (auto& c : conns_) {
      if (c.rail != ch.rail) continue;
      if (!ch.usable) {
        if (c.connecting) abort_connect(c);
        // The last rail to a peer is kept: TCP outlives a short loss, and the
        // call's deadline decides.
        if (!c.down && !c.closed && !other_rails(c).empty()) rail_failed(c, ch.why);
      } else if (c.down && c.closed && !c.connecting && !c.peer_held && me_ < c.peer) {
        start_reconnect(c, now);
      }
      if (c.down) tell_hold(c, !ch.usable);
    }
  }
}

// Tells c's peer, on another rail, whether this side holds c's rail down.
void SocketTransport::tell_hold(Conn& c, bool held) {
  auto alive = other_rails(c);
  if (alive.empty()) return;  // nothing reaches the peer: the call's deadline decides
  SendItem notice;
  notice.hdr = header(Frame::RailHold);
  notice.hdr.op = c.rail;
  notice.hdr.seq = hold_seq_[c.rail];
  notice.hdr.offset = held ? 1 : 0;
  alive[0]->out.push_back(std::move(notice));
}

// The peer holds rail h.op down (or no longer): the lower rank reconnects it
// only when neither side holds it.
void SocketTransport::rail_hold_notice(Conn& c, const FrameHeader& h) {
  if (h.length || c.rail < 0 || h.op < 0 || h.op >= topo_.rails() || h.offset > 1)
    protocol_error(c, "malformed rail-hold notice");
  Conn& t = conns_[conn_of_[c.peer][h.op]];
  if (h.seq <= t.hold_seq) return;  // older than one applied already (a moved copy)
  t.hold_seq = h.seq;
  t.peer_held = h.offset == 1;
  if (t.peer_held && t.connecting) abort_connect(t);
  if (!t.peer_held) t.retry_at = 0;  // at once
}

// A peer reconnects a rail this side holds down (it had not heard yet): refused,
// and told again.
bool SocketTransport::held_here(const Door::Admitted& a) {
  if (a.rail < 0 || links_.usable(a.rail)) return false;
  door_.refuse(a.fd, "rail " + std::to_string(a.rail) + " is held down here: its link is not stable yet");
  tell_hold(conns_[conn_of_[a.peer][a.rail]], true);
  return true;
}

// ------------------------------------------------------------------ health

// Every 20 ms: confirmed frames let go, stalled rails given up, rails whose
// hold-down ended taken back, down rails reconnected (by the lower rank of the
// pair, when neither side holds the rail down).
void SocketTransport::check_rails(double now) {
  if (now < next_rail_check_) return;
  next_rail_check_ = now + 0.02;
  link_changes_.clear();
  links_.expire(now, &link_changes_);
  links_changed(now);
  for (auto& c : conns_) {
    if (c.rail < 0) continue;
    if (c.down) {
      if (!c.closed && now - c.down_at > 2 * kRailRetry) {  // the peer never said where to stop reading
        c.drain_to = 0;
        c.told = true;
        close_if_drained(c);
      }
      if (!c.closed) continue;
      if (c.connecting && now > c.connect_until) {
        abort_connect(c);
      } else if (!c.connecting && me_ < c.peer && now >= c.retry_at && !c.peer_held && links_.usable(c.rail)) {
        start_reconnect(c, now);
      }
      continue;
    }
    if (c.closed) continue;
    if (c.unacked.empty() && c.out.empty()) {
      c.outq = -1;  // idle: the stall clock starts when it has something to carry
      continue;
    }
    // The kernel's send queue shrinking means the rail carries our bytes.
    int q = 0;
    if (ioctl(c.fd, SIOCOUTQ, &q) == 0) {
      if (q == 0 || c.outq < 0 || q < c.outq) c.quiet_since = now, c.probed = false;
      c.outq = q;
      uint64_t confirmed = c.written - static_cast<uint64_t>(q);
      while (!c.unacked.empty() && c.unacked.front().end <= confirmed) c.unacked.pop_front();
    }
    double quiet = now - c.quiet_since;
    if (quiet > rail_timeout_ / 2 && !c.probed) {  // ask the other rails for evidence the peer is alive
      c.probed = true;
      c.probe_at = now;
      for (Conn* d : other_rails(c)) queue(*d, Frame::Ping);
    }
    if (quiet > rail_timeout_ && c.probed) {
      for (Conn* d : other_rails(c)) {
        if (d->heard_at < c.probe_at) continue;
        rail_failed(c, "carried nothing for " + seconds_text(quiet) + " while rail " + std::to_string(d->rail) +
                           " to the same rank answered");
        break;
      }
    }
  }
}

}  // namespace railcoll::rt
