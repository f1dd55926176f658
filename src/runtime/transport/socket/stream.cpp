// Frames on one connection of the SocketTransport (socket_transport.hpp):
// writing its queue with sendmsg straight from the payloads' memory, reading a
// header, asking the executor (the FrameSink) where the payload goes and
// reading it there with scatter reads, and the frames the transport answers
// itself (pings, goodbyes, wake-ups, rail notices; aborts go to the sink).
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/bootstrap/net.hpp"
#include "runtime/transport/socket/socket_transport.hpp"

namespace railcoll::rt {

[[noreturn]] void SocketTransport::protocol_error(const Conn& c, const std::string& what) const {
  throw RuntimeError(Status::Protocol, "rejected a frame from " + c.name() + ": " + what);
}

void SocketTransport::drive_sends(Conn& c) {
  while (!c.out.empty()) {
    SendItem& it = c.out.front();
    iovec v[64];
    int n = 0;
    size_t skip = it.done;
    auto add = [&](void* base, size_t len) {
      if (n >= 64) return;
      if (skip >= len) {
        skip -= len;
        return;
      }
      v[n++] = {static_cast<char*>(base) + skip, len - skip};
      skip = 0;
    };
    add(&it.hdr, sizeof it.hdr);
    for (auto& p : it.iov) add(p.iov_base, p.iov_len);
    if (!it.owned.empty()) add(it.owned.data(), it.owned.size());
    msghdr m{};
    m.msg_iov = v;
    m.msg_iovlen = static_cast<size_t>(n);
    ssize_t w = sendmsg(c.fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EAGAIN) c.can_write = false;  // until epoll says it takes more
      if (errno == EAGAIN || errno == EINTR) return;
      if (c.rail >= 0) return rail_failed(c, std::string("refused a send: ") + strerror(errno));
      c.closed = true;
      throw RuntimeError(Status::Peer, "lost the connection to " + c.name() + ": " + strerror(errno));
    }
    it.done += static_cast<size_t>(w);
    c.written += static_cast<uint64_t>(w);
    if (it.done < it.total()) return;
    it.end = c.written;
    if (c.rail >= 0 && tracked(it.hdr.type)) c.unacked.push_back(std::move(it));
    c.out.pop_front();
  }
}

void SocketTransport::on_header(Conn& c) {
  const FrameHeader& h = c.hdr;
  if (std::string why = header_problem(h, comm_id_, c.peer); !why.empty()) protocol_error(c, why);
  c.payload_got = 0;
  c.dst.clear();
  switch (static_cast<Frame>(h.type)) {
    case Frame::RailDown:
      return rail_down_notice(c, h);
    case Frame::RailHold:
      return rail_hold_notice(c, h);
    case Frame::Bye:
      c.bye = true;
      return;
    case Frame::Wake:
      return;
    case Frame::Ping:  // answered whatever this rank is waiting for
      if (h.length) protocol_error(c, "ping with a payload");
      if (!c.down) queue(c, Frame::Pong);
      return;
    case Frame::Pong:
      if (h.length) protocol_error(c, "pong with a payload");
      answered_[h.sender] = 1;
      return;
    case Frame::Abort:
      if (h.length > kMaxAbortText) protocol_error(c, "abort text too long");
      c.mode = Conn::Text;
      break;
    case Frame::Data:
    case Frame::Notify:
      switch (sink_->frame_header(h, c.rail, &c.dst)) {
        case Landing::Place: c.mode = Conn::Place; break;
        case Landing::Hold: c.mode = Conn::Hold; break;
        case Landing::Drop: c.mode = Conn::Drop; break;
      }
      break;
    default:
      protocol_error(c, "unknown frame type " + std::to_string(h.type));
  }
  if (c.mode != Conn::Place) {
    c.buffer.assign(h.length, 0);
    c.dst.assign(1, iovec{c.buffer.data(), c.buffer.size()});
  }
  c.in_payload = h.length > 0;
  if (!c.in_payload) on_payload_done(c);
}

void SocketTransport::on_payload_done(Conn& c) {
  const FrameHeader& h = c.hdr;
  c.in_payload = false;
  switch (c.mode) {
    case Conn::Drop:
      c.buffer.clear();
      return;
    case Conn::Text:
      sink_->peer_aborted(h.sender, h.seq, std::string(c.buffer.begin(), c.buffer.end()));
      c.buffer.clear();
      return;
    case Conn::Hold:
      sink_->frame_done(h, c.rail, &c.buffer);
      c.buffer.clear();
      return;
    case Conn::Place:
      sink_->frame_done(h, c.rail, nullptr);
      return;
  }
}

// What a read of up to `want` bytes on c returned: true for bytes; false when
// there is nothing more now, or the connection ended (then on_eof has dealt
// with it). A short read emptied the socket: no read until epoll says more came.
bool SocketTransport::took(Conn& c, ssize_t r, size_t want) {
  if (r > 0) {
    c.nread += static_cast<uint64_t>(r);
    c.heard_at = now_seconds();
    if (static_cast<size_t>(r) < want) c.can_read = false;
    return true;
  }
  if (r < 0 && errno == EAGAIN) c.can_read = false;  // until epoll says more came
  if (r < 0 && (errno == EAGAIN || errno == EINTR)) return false;
  on_eof(c);
  return false;
}

void SocketTransport::drive_recv(Conn& c) {
  for (int rounds = 0; rounds < 64; ++rounds) {
    // A given-up connection is read only up to what the peer says its kernel confirmed.
    size_t limit =
        c.down && c.drain_to >= 0 ? static_cast<size_t>(c.drain_to - static_cast<int64_t>(c.nread)) : SIZE_MAX;
    if (c.down && c.drain_to >= 0 && static_cast<int64_t>(c.nread) >= c.drain_to) return close_if_drained(c);
    if (rounds > 0 && !c.can_read) return;  // a short read emptied the socket
    if (!c.in_payload) {
      const size_t want = std::min(limit, sizeof c.hdr - c.hdr_got);
      ssize_t r = recv(c.fd, reinterpret_cast<char*>(&c.hdr) + c.hdr_got, want, MSG_DONTWAIT);
      if (!took(c, r, want)) return;
      c.hdr_got += static_cast<size_t>(r);
      if (c.hdr_got < sizeof c.hdr) continue;
      c.hdr_got = 0;
      on_header(c);
      if (c.bye || c.closed) return;
      continue;
    }
    // Payload: straight into its destination (scatter), skipping what arrived.
    iovec v[64];
    int n = 0;
    size_t skip = c.payload_got, want = 0;
    for (auto& d : c.dst) {
      if (n >= 64 || limit == 0) break;
      if (skip >= d.iov_len) {
        skip -= d.iov_len;
        continue;
      }
      size_t len = std::min(limit, d.iov_len - skip);
      v[n++] = {static_cast<char*>(d.iov_base) + skip, len};
      limit -= len;
      want += len;
      skip = 0;
    }
    msghdr m{};
    m.msg_iov = v;
    m.msg_iovlen = static_cast<size_t>(n);
    ssize_t r = recvmsg(c.fd, &m, MSG_DONTWAIT);
    if (!took(c, r, want)) return;
    c.payload_got += static_cast<size_t>(r);
    if (c.payload_got == c.hdr.length) on_payload_done(c);
    if (c.closed) return;
  }
}

void SocketTransport::on_eof(Conn& c) {
  if (c.closed) return;
  if (c.down) {  // a given-up connection that the peer closed
    c.drain_to = 0;
    c.told = true;
    return close_if_drained(c);
  }
  // A rail that closes while the peer's other rails stay open failed alone.
  if (c.rail >= 0 && !c.bye) {
    bool all_closing = true;
    for (Conn* d : other_rails(c)) {
      pollfd p{d->fd, POLLRDHUP, 0};
      all_closing &= poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
    }
    if (!all_closing) return rail_failed(c, "was closed (reset by the other side or the network)");
  }
  c.closed = true;
  if (!c.bye) throw RuntimeError(Status::Peer, c.name() + " closed its connection without saying goodbye: it exited or died");
}

}  // namespace railcoll::rt
