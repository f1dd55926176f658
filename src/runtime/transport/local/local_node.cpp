// The node's room (local_node.hpp): local peers' Unix sockets, the node
// segment, the rank's wait and its sleeping.
#include "runtime/transport/local/local_node.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>

#include "runtime/bootstrap/auth.hpp"
#include "runtime/bootstrap/net.hpp"
#include "runtime/bootstrap/oob.hpp"
#include "runtime/transport/local/node_shm.hpp"

namespace railcoll::rt {

namespace {

constexpr double kQuietSleep = 0.02;  // a futex sleep looks at the sockets every 20 ms
constexpr int kMaxEvents = 64;
constexpr uint32_t kNoWatcher = UINT32_MAX;  // an fd that only ends a sleep

timespec timespec_of(double s) {
  s = std::max(0.0, s);
  timespec ts;
  ts.tv_sec = static_cast<time_t>(s);
  ts.tv_nsec = static_cast<long>((s - static_cast<double>(ts.tv_sec)) * 1e9);
  return ts;
}

}  // namespace

LocalNode::LocalNode(const TransportSettings& settings, int me, int nranks)
    : job_key_(settings.job_key),
      shm_bytes_(settings.shm_bytes),
      me_(me),
      n_(nranks),
      nonce_(random_bytes(kListenNonce)),
      door_(me, settings.job_key, std::min(5.0, settings.timeout)) {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) throw RuntimeError(Status::Network, std::string("epoll_create1: ") + strerror(errno));
}

// Whatever set-up or a call left open (the normal path closes in goodbye and unmap).
LocalNode::~LocalNode() {
  for (auto& c : conns_)
    if (c.fd >= 0) ::close(c.fd);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  unmap_node_shm(seg_);
}

std::string LocalNode::contact() const { return pack_fields({nonce_}); }

void LocalNode::connect(const LinkSetup& s, double deadline) {
  topo_ = *s.topo;
  comm_id_ = s.comm_id;
  door_.expect(topo_, comm_id_, nonce_);
  std::vector<std::string> nonce(n_);
  for (int r = 0; r < n_; ++r) {
    std::vector<std::string> f;
    if (!unpack_fields(s.contacts[r], &f) || f.size() != 1 || f[0].size() != kListenNonce)
      throw RuntimeError(Status::Protocol, "malformed contact of rank " + std::to_string(r) + " in the set-up exchange");
    nonce[r] = f[0];
  }
  const int node = topo_.node_of(me_);
  conn_of_.assign(n_, -1);
  for (int r : topo_.ranks_of(node))
    if (r != me_) {
      conn_of_[r] = static_cast<int>(conns_.size());
      conns_.emplace_back();
      conns_.back().peer = r;
      local_peers_.push_back({r, topo_.local_rank(r)});
    }
  // Abstract names are cut at 107 bytes: the tag and rank, which make the name
  // unique, come before the job id, which is there to be read (ss -xl).
  auto uds_name = [&](int rank) { return "railcoll/" + s.tag + "/" + std::to_string(rank) + "/" + s.job; };
  std::exception_ptr failed;
  try {
    if (!conns_.empty()) door_.add_listener(unix_listen(uds_name(me_)), false);
    int expected = 0;
    for (auto& c : conns_) {
      if (c.peer < me_) {
        ++expected;
        continue;
      }
      c.fd = unix_connect(uds_name(c.peer), deadline);
      set_nonblocking(c.fd);
      const std::string hello = hello_frame(job_key_, comm_id_, me_, c.peer, -1, 1, nonce[c.peer]);
      write_all(c.fd, hello.data(), hello.size(), deadline, c.name());
    }
    door_.accept(expected, deadline, [&](const Door::Admitted& a, double) {
      if (a.rail >= 0 || a.peer < 0 || a.peer >= n_ || conn_of_[a.peer] < 0 || conns_[conn_of_[a.peer]].fd >= 0) {
        door_.refuse(a.fd, "an unexpected connection of rank " + std::to_string(a.peer));
        return false;
      }
      FrameStream& c = conns_[conn_of_[a.peer]];
      c.fd = a.fd;
      set_nonblocking(c.fd);
      return true;
    });
    door_.close_listeners();
  } catch (...) {
    failed = std::current_exception();
  }
  all_or_none(*s.oob, failed, "connect to its peers");
  map_node_shm(seg_, *s.oob, s.job + "-" + s.tag, topo_, me_, shm_bytes_);
  for (size_t i = 0; i < conns_.size(); ++i) {
    watch(conns_[i].fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, this, static_cast<uint32_t>(i));
    conns_[i].ep_fd = conns_[i].fd;
    conns_[i].can_read = conns_[i].can_write = true;  // whatever happened before it joined: try once
  }
}

// ------------------------------------------------------------------ frames

void LocalNode::write(FrameStream& c) {
  std::string error;
  if (c.write(&error)) return;
  c.closed = true;
  ev_->link_broken(c.peer, -1, "lost its connection: " + error, true);
}

void LocalNode::send(int peer, int, OutFrame f) {
  FrameStream& c = conns_[conn_of_[peer]];
  c.out.push_back({std::move(f)});
  if (c.out.size() == 1 && c.can_write && c.ep_fd >= 0) write(c);  // at once: no round trip through progress
}

void LocalNode::send_urgent(int peer, int, const OutFrame& f) { conns_[conn_of_[peer]].send_now(f); }

bool LocalNode::sends_pending() const {
  for (auto& c : conns_)
    if (!c.out.empty()) return true;
  return false;
}

void LocalNode::end_call() {
  for (auto& c : conns_) c.keep_payloads();
}

bool LocalNode::closed(int peer, int) const { return conns_[conn_of_[peer]].closed; }

void LocalNode::drive(double) {
  for (auto& c : conns_) {
    if (c.closed) continue;
    if (c.can_read) {
      std::string error;
      if (c.read(*ev_, &error) == FrameStream::Read::Closed && !c.closed) {
        c.closed = true;
        ev_->link_broken(c.peer, -1, "closed its connection without saying goodbye: it exited or died", true);
      }
    }
    if (!c.out.empty() && !c.closed && c.can_write) write(c);
  }
}

void LocalNode::goodbye(double deadline) {
  std::vector<FrameStream*> all;
  for (auto& c : conns_) all.push_back(&c);
  goodbye_streams(all, make_header(Frame::Bye, comm_id_, me_), deadline);
}

// ------------------------------------------------------------------ the wait

void LocalNode::watch(int fd, uint32_t events, FdWatcher* w, uint32_t token) {
  uint64_t index = kNoWatcher;
  if (w) {
    auto it = std::find(watchers_.begin(), watchers_.end(), w);
    index = static_cast<uint64_t>(it - watchers_.begin());
    if (it == watchers_.end()) watchers_.push_back(w);
  }
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = (index << 32) | token;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0)
    throw RuntimeError(Status::Network, std::string("epoll_ctl: ") + strerror(errno));
}

// ENOENT, EBADF: it left the set when it was closed.
void LocalNode::unwatch(int fd) { epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr); }

void LocalNode::fd_ready(uint32_t token, uint32_t ev) {
  conns_[token].note_ready(ev);
}

// Waits up to wait_s for an event, and tells each watcher what its fd says.
void LocalNode::poll_once(double wait_s) {
  if (events_.size() < static_cast<size_t>(kMaxEvents)) events_.resize(kMaxEvents);
  const int timeout_ms = wait_s <= 0 ? 0 : std::max(1, static_cast<int>(std::ceil(wait_s * 1000)));
  const int n = epoll_wait(epoll_fd_, events_.data(), kMaxEvents, timeout_ms);
  if (n < 0 && errno != EINTR) throw RuntimeError(Status::Network, std::string("epoll_wait: ") + strerror(errno));
  for (int e = 0; e < n; ++e) {
    const uint64_t index = events_[e].data.u64 >> 32;
    if (index == kNoWatcher) continue;
    watchers_[index]->fd_ready(static_cast<uint32_t>(events_[e].data.u64), events_[e].events);
  }
}

void LocalNode::wait(double wait_s, const NodeWait* sleep_on, bool futex) {
  if (wait_s <= 0 || !sleep_on) return poll_once(wait_s);
  if (futex) {
    sleep_on_bell(wait_s, *sleep_on);
    return poll_once(0);
  }
  // Asleep in epoll: a local rank that raises the counter far enough sends a Wake frame.
  NodeSleeper& s = seg_.shm->sleepers[topo_.local_rank(me_)];
  s.want.store(want_of(*sleep_on, false), std::memory_order_seq_cst);
  if (sleep_on->counter->load(std::memory_order_seq_cst) >= sleep_on->target) wait_s = 0;  // raised meanwhile
  try {
    poll_once(wait_s);
  } catch (...) {
    s.want.store(0, std::memory_order_seq_cst);
    throw;
  }
  s.want.store(0, std::memory_order_seq_cst);
}

// What a sleeper on w says in the node segment.
uint64_t LocalNode::want_of(const NodeWait& w, bool futex) {
  uint64_t target = std::min<uint64_t>(w.target, kWantAnyTarget);
  const uint64_t index = w.counter_index < 0 ? 0 : static_cast<uint64_t>(w.counter_index);
  if (w.counter_index < 0) target = kWantAnyTarget;
  return kWantSet | (futex ? kWantFutex : 0) | (index << kWantTargetBits) | target;
}

// Sleeps on this rank's bell until the rank that raises the counter far
// enough rings it, or kQuietSleep (at most wait_s) has passed.
void LocalNode::sleep_on_bell(double wait_s, const NodeWait& w) {
  NodeSleeper& s = seg_.shm->sleepers[topo_.local_rank(me_)];
  const uint32_t bell = s.bell.load(std::memory_order_seq_cst);
  s.want.store(want_of(w, true), std::memory_order_seq_cst);
  if (w.counter->load(std::memory_order_seq_cst) < w.target) {
    timespec ts = timespec_of(std::min(wait_s, kQuietSleep));
    syscall(SYS_futex, &s.bell, FUTEX_WAIT, bell, &ts, nullptr, 0);  // EAGAIN: rung meanwhile
  }
  s.want.store(0, std::memory_order_seq_cst);
}

// Wakes the local ranks whose wait on a node counter is over now; each one
// once (the waker that clears its want wakes it).
void LocalNode::wake_node_sleepers() {
  for (auto& [rank, local] : local_peers_) {
    NodeSleeper& s = seg_.shm->sleepers[local];
    uint64_t w = s.want.load(std::memory_order_seq_cst);
    if (!w) continue;
    const uint64_t target = w & kWantAnyTarget;
    const int index = static_cast<int>((w & ~(kWantSet | kWantFutex)) >> kWantTargetBits);
    if (target != kWantAnyTarget && seg_.shm->counters[index].load(std::memory_order_seq_cst) < target) continue;
    if (!s.want.compare_exchange_strong(w, 0, std::memory_order_seq_cst)) continue;
    if (w & kWantFutex) {
      s.bell.fetch_add(1, std::memory_order_seq_cst);
      syscall(SYS_futex, &s.bell, FUTEX_WAKE, 1, nullptr, nullptr, 0);
      continue;
    }
    FrameStream& c = conns_[conn_of_[rank]];
    if (c.closed) continue;
    OutFrame wake;
    wake.hdr = make_header(Frame::Wake, comm_id_, me_);
    wake.hdr.op = -1;
    c.out.push_back({std::move(wake)});
    if (c.can_write) write(c);
  }
}

void LocalNode::unmap() { unmap_node_shm(seg_); }

}  // namespace railcoll::rt
