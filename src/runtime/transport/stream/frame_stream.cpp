// Frames over one stream socket (frame_stream.hpp).
#include "runtime/transport/stream/frame_stream.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/bootstrap/auth.hpp"
#include "runtime/bootstrap/net.hpp"

namespace railcoll::rt {

std::string FrameStream::name() const { return link_name(peer, rail); }

bool FrameStream::write(std::string* error) {
  while (!out.empty()) {
    StreamFrame& it = out.front();
    iovec v[64];
    int n = 0;
    size_t skip = it.done;
    auto add = [&](const void* base, size_t len) {
      if (n >= 64) return;
      if (skip >= len) {
        skip -= len;
        return;
      }
      v[n++] = {const_cast<char*>(static_cast<const char*>(base)) + skip, len - skip};
      skip = 0;
    };
    add(&it.f.hdr, sizeof it.f.hdr);
    for (auto& p : it.f.iov) add(p.iov_base, p.iov_len);
    if (!it.f.owned.empty()) add(it.f.owned.data(), it.f.owned.size());
    msghdr m{};
    m.msg_iov = v;
    m.msg_iovlen = static_cast<size_t>(n);
    const ssize_t w = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EAGAIN) can_write = false;  // until epoll says it takes more
      if (errno == EAGAIN || errno == EINTR) return true;
      *error = strerror(errno);
      return false;
    }
    it.done += static_cast<size_t>(w);
    written += static_cast<uint64_t>(w);
    if (it.done < it.total()) return true;
    it.end = written;
    if (keep_written && moves_with_rail(it.f.hdr.type)) unacked.push_back(std::move(it));
    out.pop_front();
  }
  return true;
}

void FrameStream::on_header(LinkEvents& ev) {
  payload_got_ = 0;
  dst_.clear();
  mode_ = ev.frame_header(peer, rail, hdr_, &dst_);
  if (mode_ != Landing::Place) {
    buffer_.assign(hdr_.length, 0);
    dst_.assign(1, iovec{buffer_.data(), buffer_.size()});
  }
  in_payload_ = hdr_.length > 0;
  if (!in_payload_) on_payload_done(ev);
}

void FrameStream::on_payload_done(LinkEvents& ev) {
  in_payload_ = false;
  if (hdr_.type == static_cast<uint16_t>(Frame::Bye)) bye = true;
  switch (mode_) {
    case Landing::Drop:
      buffer_.clear();
      return;
    case Landing::Hold:
      ev.frame_done(peer, rail, hdr_, &buffer_);
      buffer_.clear();
      return;
    case Landing::Place:
      ev.frame_done(peer, rail, hdr_, nullptr);
      return;
  }
}

// What a read of up to `want` bytes returned: true for bytes; false when there
// is nothing more now, or the stream ended (ended_, *error set). A short read
// emptied the socket: no read until epoll says more came.
bool FrameStream::took(ssize_t r, size_t want, std::string* error) {
  if (r > 0) {
    nread += static_cast<uint64_t>(r);
    heard_at = now_seconds();
    if (static_cast<size_t>(r) < want) can_read = false;
    return true;
  }
  if (r < 0 && errno == EAGAIN) can_read = false;  // until epoll says more came
  if (r < 0 && (errno == EAGAIN || errno == EINTR)) return false;
  ended_ = true;
  *error = r == 0 ? "" : strerror(errno);
  return false;
}

FrameStream::Read FrameStream::read(LinkEvents& ev, std::string* error) {
  ended_ = false;
  for (int rounds = 0; rounds < 64; ++rounds) {
    // A given-up connection is read only up to where the peer says it ends.
    if (read_limit >= 0 && static_cast<int64_t>(nread) >= read_limit) return Read::Limit;
    size_t limit = read_limit >= 0 ? static_cast<size_t>(read_limit - static_cast<int64_t>(nread)) : SIZE_MAX;
    if (rounds > 0 && !can_read) return Read::Idle;  // a short read emptied the socket
    if (!in_payload_) {
      const size_t want = std::min(limit, sizeof hdr_ - hdr_got_);
      const ssize_t r = recv(fd, reinterpret_cast<char*>(&hdr_) + hdr_got_, want, MSG_DONTWAIT);
      if (!took(r, want, error)) return ended_ ? Read::Closed : Read::Idle;
      hdr_got_ += static_cast<size_t>(r);
      if (hdr_got_ < sizeof hdr_) continue;
      hdr_got_ = 0;
      on_header(ev);
      if (bye || closed) return Read::Idle;
      continue;
    }
    // Payload: straight into its destination (scatter), skipping what arrived.
    iovec v[64];
    int n = 0;
    size_t skip = payload_got_, want = 0;
    for (auto& d : dst_) {
      if (n >= 64 || limit == 0) break;
      if (skip >= d.iov_len) {
        skip -= d.iov_len;
        continue;
      }
      const size_t len = std::min(limit, d.iov_len - skip);
      v[n++] = {static_cast<char*>(d.iov_base) + skip, len};
      limit -= len;
      want += len;
      skip = 0;
    }
    msghdr m{};
    m.msg_iov = v;
    m.msg_iovlen = static_cast<size_t>(n);
    const ssize_t r = recvmsg(fd, &m, MSG_DONTWAIT);
    if (!took(r, want, error)) return ended_ ? Read::Closed : Read::Idle;
    payload_got_ += static_cast<size_t>(r);
    if (payload_got_ == hdr_.length) on_payload_done(ev);
    if (bye || closed) return Read::Idle;
  }
  return Read::Idle;
}

void FrameStream::restart(int new_fd, double now) {
  fd = new_fd;
  hdr_got_ = 0;
  in_payload_ = false;
  dst_.clear();
  written = nread = 0;
  read_limit = -1;
  heard_at = now;
  closed = bye = false;
  can_read = false, can_write = true;
}

void FrameStream::keep_payloads() {
  for (auto* q : {&out, &unacked})
    for (auto& it : *q) it.f.keep();
}

void FrameStream::send_now(const OutFrame& f) const {
  if (closed || fd < 0) return;
  std::string frame(reinterpret_cast<const char*>(&f.hdr), sizeof f.hdr);
  frame += f.owned;
  ::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

std::string hello_frame(const std::string& job_key, uint64_t comm, int me, int peer, int rail, uint32_t generation,
                        const std::string& nonce) {
  FrameHeader h = make_header(Frame::Hello, comm, me);
  h.op = rail;
  h.seq = generation;
  h.length = kHelloProof;
  std::string frame(reinterpret_cast<const char*>(&h), sizeof h);
  return frame + hello_proof(job_key, h, peer, nonce);
}

void goodbye_streams(const std::vector<FrameStream*>& streams, const FrameHeader& bye, double deadline) {
  for (FrameStream* c : streams) {
    if (c->closed) continue;
    ::send(c->fd, &bye, sizeof bye, MSG_NOSIGNAL | MSG_DONTWAIT);
    shutdown(c->fd, SHUT_WR);
  }
  std::vector<std::string> partial(streams.size());  // bytes of frames not yet whole
  std::vector<pollfd> p;
  while (now_seconds() < deadline) {
    bool open = false;
    for (FrameStream* c : streams) open |= !c->closed && !c->bye;
    if (!open) break;
    p.clear();
    for (FrameStream* c : streams) p.push_back({c->fd, static_cast<short>(c->closed || c->bye ? 0 : POLLIN), 0});
    poll(p.data(), p.size(), 50);
    for (size_t i = 0; i < p.size(); ++i) {
      FrameStream& c = *streams[i];
      if (c.closed || c.bye || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      const ssize_t r = recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
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
  for (FrameStream* c : streams) {
    if (c->fd >= 0) ::close(c->fd);
    c->fd = -1;
    c->closed = true;
  }
}

}  // namespace railcoll::rt
