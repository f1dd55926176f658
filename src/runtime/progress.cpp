// One round of progress of the SocketTransport (socket_transport.hpp) over all
// of a rank's sockets: poll, read what arrived, write what can go, the door
// (reconnecting rails, strangers), and the rails' health. And sleeping: a rank
// that waits on a node counter raises its wake flag in the node segment before
// it sleeps in poll, so that a local peer that raises the counter sends it a
// Wake frame (wake_node_sleepers). An epoll set, or a futex on the counter,
// would replace exactly this file.
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/net.hpp"
#include "runtime/socket_transport.hpp"

namespace railcoll::rt {

void SocketTransport::progress(double wait_s, const NodeWait* sleep_on) {
  if (!sink_) throw RuntimeError(Status::Internal, "transport: progress before the executor attached");
  std::atomic<uint32_t>* flag = nullptr;
  if (sleep_on && wait_s > 0) {
    flag = &seg_.shm->waiting[topo_.local_rank(me_)];
    flag->store(1, std::memory_order_seq_cst);
    if (sleep_on->counter->load(std::memory_order_seq_cst) >= sleep_on->target) wait_s = 0;  // raised meanwhile
  }
  pollfds_.clear();
  for (auto& c : conns_)
    pollfds_.push_back(
        {c.fd, static_cast<short>(c.connecting ? POLLOUT : c.closed ? 0 : (POLLIN | (c.out.empty() ? 0 : POLLOUT))), 0});
  const size_t door_fds = door_.poll_set(&pollfds_);
  const size_t link_fd = pollfds_.size();  // the link monitor's netlink socket (failover.cpp)
  if (links_.fd() >= 0) pollfds_.push_back({links_.fd(), POLLIN, 0});
  const int timeout_ms = wait_s <= 0 ? 0 : std::max(1, static_cast<int>(wait_s * 1000));
  const int r = poll(pollfds_.data(), pollfds_.size(), timeout_ms);
  if (flag) flag->store(0, std::memory_order_release);
  if (r < 0 && errno != EINTR) throw RuntimeError(Status::Network, std::string("poll: ") + strerror(errno));
  const double now = now_seconds();
  if (link_fd < pollfds_.size() && pollfds_[link_fd].revents) link_events(now);
  for (size_t i = 0; i < conns_.size(); ++i) {
    Conn& c = conns_[i];
    if (c.connecting) {
      if (pollfds_[i].revents) finish_connect(c, now);
      continue;
    }
    if (c.closed) continue;
    if (pollfds_[i].revents & (POLLIN | POLLHUP | POLLERR)) drive_recv(c);
    if (!c.out.empty() && !c.closed) drive_sends(c);
  }
  if (door_fds > 0) {
    admitted_.clear();
    door_.serve(&pollfds_[conns_.size()], now, &admitted_);
    for (auto& a : admitted_) admit(a, now);
  }
  check_rails(now);
}

}  // namespace railcoll::rt
