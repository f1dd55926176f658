// One round of progress of the SocketTransport (socket_transport.hpp): what
// the epoll set says arrived is read, what is queued is written, the door
// (reconnecting rails, strangers) is looked at every kDoorEvery s, and the
// rails' health. And sleeping, three ways:
//  * on the network (a wait for frames, or for sends to drain): in epoll_wait;
//  * on a node counter while frames are still expected: in epoll_wait too,
//    having said in the node segment which counter and value it waits for
//    (NodeSleeper::want), so the local rank that raises it that far sends it
//    one Wake frame (wake_node_sleepers);
//  * on a node counter with nothing expected from the network (most ranks of
//    an SMP algorithm most of the time): on a futex in the node segment, woken
//    by exactly the rank whose increment ends the wait; every kQuietSleep s the
//    connections are looked at anyway (an abort, a ping, a peer gone).
// The link monitor's netlink socket (failover.cpp) joins the set when it is made.
// Measured against the poll() round this replaced: docs/runtime.md, "The
// latency path".
#include <linux/futex.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>

#include "runtime/bootstrap/net.hpp"
#include "runtime/transport/socket/socket_transport.hpp"

namespace railcoll::rt {

namespace {

constexpr double kDoorEvery = 0.01;   // the door's fds: looked at every 10 ms
constexpr double kQuietSleep = 0.02;  // a futex sleep looks at the connections every 20 ms
constexpr int kMaxEvents = 64;
constexpr uint32_t kLinkMonitorEvent = UINT32_MAX;  // epoll data of the netlink socket
constexpr uint32_t kAlsoWatchedEvent = UINT32_MAX - 1;  // of an also_watch() fd: only ends the sleep

timespec timespec_of(double s) {
  s = std::max(0.0, s);
  timespec ts;
  ts.tv_sec = static_cast<time_t>(s);
  ts.tv_nsec = static_cast<long>((s - static_cast<double>(ts.tv_sec)) * 1e9);
  return ts;
}

}  // namespace

// What a sleeper on w says in the node segment.
uint64_t SocketTransport::want_of(const NodeWait& w, bool futex) {
  uint64_t target = std::min<uint64_t>(w.target, kWantAnyTarget);
  uint64_t index = w.counter_index < 0 ? 0 : static_cast<uint64_t>(w.counter_index);
  if (w.counter_index < 0) target = kWantAnyTarget;
  return kWantSet | (futex ? kWantFutex : 0) | (index << kWantTargetBits) | target;
}

// Wakes the local ranks whose wait on a node counter is over now; each one
// once (the waker that clears its want wakes it).
void SocketTransport::wake_node_sleepers() {
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
    Conn& c = conns_[conn_of_[rank][0]];
    if (c.closed) continue;
    queue(c, Frame::Wake);
    if (c.can_write) drive_sends(c);
  }
}

// Keeps the epoll set equal to the connections: a connection whose fd changed
// (failover closes, reconnects) leaves it and joins again. Deletions come
// first, so a number closed by one connection and reused by another is never
// taken out of the set after it joined. A connection still connecting joins
// again every round (its number may have been closed and reused meanwhile).
// Fds change only while a rail is down (failover.cpp) or when the door admits
// a reconnected rail (admit sets rewatch_): otherwise nothing to look at.
void SocketTransport::watch_connections() {
  if (!rewatch_ && rails_up() == static_cast<int>(rail_addr_.size())) return;
  rewatch_ = false;
  if (epoll_fd_ < 0) {
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) throw RuntimeError(Status::Network, std::string("epoll_create1: ") + strerror(errno));
    if (links_.fd() >= 0) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u32 = kLinkMonitorEvent;
      if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, links_.fd(), &ev) != 0)
        throw RuntimeError(Status::Network, std::string("epoll_ctl on the link monitor: ") + strerror(errno));
    }
    for (int fd : also_watched_) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u32 = kAlsoWatchedEvent;
      if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0)
        throw RuntimeError(Status::Network, std::string("epoll_ctl on a watched fd: ") + strerror(errno));
    }
  }
  // A reconnecting rail stays closed until its connect completes: it is watched for that.
  auto wanted = [](const Conn& c) { return c.fd >= 0 && (!c.closed || c.connecting) ? c.fd : -1; };
  bool changed = false;
  for (auto& c : conns_) {
    if (wanted(c) == c.ep_fd && !c.connecting) continue;
    changed = true;
    if (c.ep_fd >= 0) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.ep_fd, nullptr);  // ENOENT, EBADF: it left when closed
    c.ep_fd = -1;
  }
  if (!changed) return;
  for (size_t i = 0; i < conns_.size(); ++i) {
    Conn& c = conns_[i];
    const int fd = wanted(c);
    if (fd < 0 || c.ep_fd >= 0) continue;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.u32 = static_cast<uint32_t>(i);
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0)
      throw RuntimeError(Status::Network, "epoll_ctl on the connection to " + c.name() + ": " + strerror(errno));
    c.ep_fd = fd;
    c.can_read = c.can_write = true;  // whatever happened before it joined: try once
  }
}

void SocketTransport::progress(double wait_s, const NodeWait* sleep_on) {
  if (!sink_) throw RuntimeError(Status::Internal, "transport: progress before the executor attached");
  watch_connections();
  if (wait_s <= 0 || !sleep_on) return round(wait_s);
  if (sleep_on->net_idle && !sends_pending()) {
    sleep_on_bell(wait_s, *sleep_on);
    return round(0);
  }
  // Asleep in epoll: a local rank that raises the counter far enough sends a Wake frame.
  NodeSleeper& s = seg_.shm->sleepers[topo_.local_rank(me_)];
  s.want.store(want_of(*sleep_on, false), std::memory_order_seq_cst);
  if (sleep_on->counter->load(std::memory_order_seq_cst) >= sleep_on->target) wait_s = 0;  // raised meanwhile
  try {
    round(wait_s);
  } catch (...) {
    s.want.store(0, std::memory_order_seq_cst);
    throw;
  }
  s.want.store(0, std::memory_order_seq_cst);
}

void SocketTransport::also_watch(int fd) {
  if (epoll_fd_ >= 0) throw RuntimeError(Status::Internal, "also_watch after the first progress");
  also_watched_.push_back(fd);
}

// Sleeps on this rank's bell until the rank that raises the counter far
// enough rings it, or kQuietSleep (at most wait_s) has passed.
void SocketTransport::sleep_on_bell(double wait_s, const NodeWait& w) {
  NodeSleeper& s = seg_.shm->sleepers[topo_.local_rank(me_)];
  const uint32_t bell = s.bell.load(std::memory_order_seq_cst);
  s.want.store(want_of(w, true), std::memory_order_seq_cst);
  if (w.counter->load(std::memory_order_seq_cst) < w.target) {
    timespec ts = timespec_of(std::min(wait_s, kQuietSleep));
    syscall(SYS_futex, &s.bell, FUTEX_WAIT, bell, &ts, nullptr, 0);  // EAGAIN: rung meanwhile
  }
  s.want.store(0, std::memory_order_seq_cst);
}

// One round: waits up to wait_s for an event, then reads and writes what can go.
void SocketTransport::round(double wait_s) {
  if (events_.size() < static_cast<size_t>(kMaxEvents)) events_.resize(kMaxEvents);
  const int timeout_ms = wait_s <= 0 ? 0 : std::max(1, static_cast<int>(std::ceil(wait_s * 1000)));
  const int n = epoll_wait(epoll_fd_, events_.data(), kMaxEvents, timeout_ms);
  if (n < 0 && errno != EINTR) throw RuntimeError(Status::Network, std::string("epoll_wait: ") + strerror(errno));
  const double now = now_seconds();
  for (int e = 0; e < n; ++e) {
    if (events_[e].data.u32 == kLinkMonitorEvent) {
      link_events(now);
      continue;
    }
    if (events_[e].data.u32 == kAlsoWatchedEvent) continue;
    Conn& c = conns_[events_[e].data.u32];
    const uint32_t ev = events_[e].events;
    if (c.connecting) {
      finish_connect(c, now);
      continue;
    }
    if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) c.can_read = true;
    if (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR)) c.can_write = true;
  }
  for (auto& c : conns_) {
    if (c.closed || c.connecting) continue;
    if (c.can_read) drive_recv(c);
    if (!c.out.empty() && !c.closed && c.can_write) drive_sends(c);
  }
  if (now >= next_door_check_) serve_door(now);
  check_rails(now);
}

// The door: rail listeners (a rail reconnecting) and half-open connections.
void SocketTransport::serve_door(double now) {
  next_door_check_ = now + kDoorEvery;
  door_fds_.clear();
  if (door_.poll_set(&door_fds_) == 0) return;
  if (poll(door_fds_.data(), door_fds_.size(), 0) <= 0) return;
  admitted_.clear();
  door_.serve(door_fds_.data(), now, &admitted_);
  for (auto& a : admitted_) admit(a, now);
}

}  // namespace railcoll::rt
