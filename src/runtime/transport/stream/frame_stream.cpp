// Frames over one stream socket (frame_stream.hpp).
#include "runtime/transport/stream/frame_stream.hpp"

#include <poll.h>
#include <sys/epoll.h>
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

void FrameStream::note_ready(uint32_t ev) {
  if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) can_read = true;
  if (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) hung_up = true;
  if (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR)) can_write = true;
}

// n payload bytes read ahead go where the payload goes, after what is there.
void FrameStream::place(const char* from, size_t n) {
  size_t skip = payload_got_;
  for (auto& d : dst_) {
    if (n == 0) break;
    if (skip >= d.iov_len) {
      skip -= d.iov_len;
      continue;
    }
    const size_t len = std::min(n, d.iov_len - skip);
    memcpy(static_cast<char*>(d.iov_base) + skip, from, len);
    from += len;
    n -= len;
    payload_got_ += len;
    skip = 0;
  }
}

// Hands up the frames (and pieces of payload) read ahead, until what is left
// is less than a header. false: the stream ended here (a goodbye, or closed).
bool FrameStream::hand_up_read_ahead(LinkEvents& ev) {
  for (;;) {
    const size_t have = ahead_end_ - ahead_at_;
    if (in_payload_) {
      if (have == 0) break;
      const size_t n = std::min<uint64_t>(have, hdr_.length - payload_got_);
      place(ahead_.data() + ahead_at_, n);
      ahead_at_ += n;
      if (payload_got_ == hdr_.length) on_payload_done(ev);
    } else {
      if (have < sizeof hdr_) break;
      memcpy(&hdr_, ahead_.data() + ahead_at_, sizeof hdr_);
      ahead_at_ += sizeof hdr_;
      on_header(ev);
    }
    if (bye || closed) return false;
  }
  if (ahead_at_ > 0) {  // the start of a header moves to the front
    memmove(ahead_.data(), ahead_.data() + ahead_at_, ahead_end_ - ahead_at_);
    ahead_end_ -= ahead_at_;
    ahead_at_ = 0;
  }
  return true;
}

// What a read of up to `want` bytes returned: true for bytes; false when there
// is nothing more now, or the stream ended (ended_, *error set). A short read
// emptied the socket: no read until epoll says more came.
bool FrameStream::took(ssize_t r, size_t want, std::string* error) {
  if (r > 0) {
    nread += static_cast<uint64_t>(r);
    heard_at = now_seconds();
    if (static_cast<size_t>(r) < want && !hung_up) can_read = false;
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
  // Made at the first read, not with the stream: a link never read (a rail
  // to a peer this job never talks to) holds no buffer.
  if (ahead_.size() != kReadAhead) ahead_.resize(kReadAhead);
  for (int rounds = 0; rounds < 64; ++rounds) {
    if (!hand_up_read_ahead(ev)) return Read::Idle;
    // A given-up connection is read only up to where the peer says it ends.
    if (read_limit >= 0 && static_cast<int64_t>(nread) >= read_limit) return Read::Limit;
    size_t limit = read_limit >= 0 ? static_cast<size_t>(read_limit - static_cast<int64_t>(nread)) : SIZE_MAX;
    if (rounds > 0 && !can_read) return Read::Idle;  // a short read emptied the socket
    // The payload's rest straight into its destination (scatter), skipping
    // what arrived; then the read-ahead buffer (when the payload's rest fits
    // in the read: the buffer's bytes must follow it).
    iovec v[65];
    int n = 0;
    size_t skip = in_payload_ ? payload_got_ : 0, want = 0, payload_want = 0;
    bool whole = true;
    if (in_payload_)
      for (auto& d : dst_) {
        if (skip >= d.iov_len) {
          skip -= d.iov_len;
          continue;
        }
        if (n >= 64 || limit == 0) {
          whole = false;
          break;
        }
        const size_t len = std::min(limit, d.iov_len - skip);
        v[n++] = {static_cast<char*>(d.iov_base) + skip, len};
        limit -= len;
        payload_want += len;
        skip = 0;
      }
    want = payload_want;
    if (whole && limit > 0) {
      const size_t room = std::min(limit, ahead_.size() - ahead_end_);
      v[n++] = {ahead_.data() + ahead_end_, room};
      want += room;
    }
    msghdr m{};
    m.msg_iov = v;
    m.msg_iovlen = static_cast<size_t>(n);
    const ssize_t r = recvmsg(fd, &m, MSG_DONTWAIT);
    if (!took(r, want, error)) return ended_ ? Read::Closed : Read::Idle;
    const size_t got = static_cast<size_t>(r);
    payload_got_ += std::min(got, payload_want);
    ahead_end_ += got - std::min(got, payload_want);
    if (in_payload_ && payload_got_ == hdr_.length) on_payload_done(ev);
    if (bye || closed) return Read::Idle;
  }
  // Read ahead and not yet handed up: handed up now, so the stream holds no
  // whole frame when it waits for epoll again.
  hand_up_read_ahead(ev);
  return Read::Idle;
}

void FrameStream::restart(int new_fd, double now) {
  fd = new_fd;
  ahead_at_ = ahead_end_ = 0;
  in_payload_ = false;
  dst_.clear();
  written = nread = 0;
  read_limit = -1;
  heard_at = now;
  closed = bye = false;
  can_read = false, can_write = true;
  hung_up = false;
}

void FrameStream::keep_payloads() {
  if (out.empty() && unacked.empty()) return;  // most calls, on every stream: cheap
  for (auto* q : {&out, &unacked})
    for (auto& it : *q) it.f.keep();
}

std::string FrameStream::read_ahead() const {
  if (in_payload_) return "";
  return std::string(ahead_.data() + ahead_at_, ahead_end_ - ahead_at_);
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
  for (size_t i = 0; i < streams.size(); ++i) partial[i] = streams[i]->read_ahead();
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
