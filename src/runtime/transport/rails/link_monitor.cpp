// The link monitor and the hold-down policy (link_monitor.hpp).
#include "runtime/transport/rails/link_monitor.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace railcoll::rt {

// ------------------------------------------------------------------ policy

bool HoldDown::link_down(double now) {
  if (!up_) return false;
  up_ = false;
  if (held_) return false;  // the stable clock starts again at the next up
  held_ = true;
  hold_ = now - restored_at_ < kFlapWindow ? std::min(2 * hold_, kMax) : kFirst;
  return true;
}

void HoldDown::link_up(double now) {
  if (up_) return;
  up_ = true;
  up_since_ = now;
}

bool HoldDown::expire(double now) {
  if (!held_ || !up_ || now - up_since_ < hold_) return false;
  held_ = false;
  restored_at_ = now;
  return true;
}

// ------------------------------------------------------------------ monitor

namespace {

// The interface that holds IPv4 address `addr`: (index, name), or (0, "").
std::pair<int, std::string> interface_of_address(const std::string& addr) {
  in_addr want{};
  if (inet_pton(AF_INET, addr.c_str(), &want) != 1) return {0, ""};
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) return {0, ""};
  std::pair<int, std::string> found{0, ""};
  for (ifaddrs* i = ifs; i && !found.first; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    if (reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr != want.s_addr) continue;
    found = {static_cast<int>(if_nametoindex(i->ifa_name)), i->ifa_name};
  }
  freeifaddrs(ifs);
  return found;
}

}  // namespace

LinkMonitor::LinkMonitor(const std::vector<std::string>& rail_addr, bool watch_interfaces) : rails_(rail_addr.size()) {
  if (!watch_interfaces) {  // named after the addresses, for the log lines
    for (size_t r = 0; r < rail_addr.size(); ++r) rails_[r].ifname = rail_addr[r];
    return;
  }
  for (size_t r = 0; r < rail_addr.size(); ++r) {
    auto [index, name] = interface_of_address(rail_addr[r]);
    if (index > 0) watch(static_cast<int>(r), index, name);
  }
  fd_ = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd_ < 0) return;
  sockaddr_nl sa{};
  sa.nl_family = AF_NETLINK;
  sa.nl_groups = RTMGRP_LINK;
  if (bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    close(fd_);
    fd_ = -1;
  }
}

LinkMonitor::~LinkMonitor() {
  if (fd_ >= 0) close(fd_);
}

void LinkMonitor::watch(int rail, int ifindex, const std::string& ifname) {
  rails_[rail].ifindex = ifindex;
  rails_[rail].ifname = ifname;
}

void LinkMonitor::read_events(double now, std::vector<Change>* out) {
  alignas(nlmsghdr) char buf[16384];
  while (fd_ >= 0) {
    sockaddr_nl from{};
    socklen_t len = sizeof from;
    ssize_t r = recvfrom(fd_, buf, sizeof buf, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &len);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno == ENOBUFS) {  // the kernel dropped messages: ask for the state instead
      resync(now, out);
      continue;
    }
    if (r <= 0) return;
    if (from.nl_pid != 0) continue;  // only the kernel speaks for the links
    on_messages(buf, static_cast<size_t>(r), now, out);
  }
}

void LinkMonitor::on_messages(const void* data, size_t len, double now, std::vector<Change>* out) {
  const char* p = static_cast<const char*>(data);
  while (len >= sizeof(nlmsghdr)) {
    nlmsghdr nh;
    memcpy(&nh, p, sizeof nh);
    if (nh.nlmsg_len < sizeof nh || nh.nlmsg_len > len) return;  // malformed: the rest is not trusted
    if ((nh.nlmsg_type == RTM_NEWLINK || nh.nlmsg_type == RTM_DELLINK) && nh.nlmsg_len >= NLMSG_LENGTH(sizeof(ifinfomsg))) {
      ifinfomsg ifi;
      memcpy(&ifi, p + NLMSG_HDRLEN, sizeof ifi);
      if (nh.nlmsg_type == RTM_NEWLINK) follow_new_index(p, nh.nlmsg_len, ifi.ifi_index);
      // Running, as a NIC with carrier: administratively up and IFF_RUNNING.
      const bool running = nh.nlmsg_type == RTM_NEWLINK && (ifi.ifi_flags & IFF_UP) && (ifi.ifi_flags & IFF_RUNNING);
      link_state(ifi.ifi_index, running, now, out);
    }
    size_t step = NLMSG_ALIGN(nh.nlmsg_len);
    if (step >= len) return;
    p += step;
    len -= step;
  }
}

// A watched interface made again (a driver reset, `ip link del` and add) has a
// new index: the rail follows its name, read from the IFLA_IFNAME attribute.
void LinkMonitor::follow_new_index(const char* msg, size_t len, int ifindex) {
  size_t at = NLMSG_LENGTH(sizeof(ifinfomsg));
  at = NLMSG_ALIGN(at);
  while (at + sizeof(rtattr) <= len) {
    rtattr a;
    memcpy(&a, msg + at, sizeof a);
    if (a.rta_len < sizeof a || at + a.rta_len > len) return;
    if (a.rta_type == IFLA_IFNAME) {
      std::string name(msg + at + RTA_LENGTH(0), strnlen(msg + at + RTA_LENGTH(0), a.rta_len - RTA_LENGTH(0)));
      for (auto& rail : rails_)
        if (rail.ifindex != 0 && rail.ifindex != ifindex && rail.ifname == name) rail.ifindex = ifindex;
      return;
    }
    at += RTA_ALIGN(a.rta_len);
  }
}

void LinkMonitor::link_state(int ifindex, bool running, double now, std::vector<Change>* out) {
  for (size_t r = 0; r < rails_.size(); ++r)
    if (rails_[r].ifindex != 0 && rails_[r].ifindex == ifindex) rail_state(r, running, now, out);
}

void LinkMonitor::rail_link(int rail, bool running, double now, std::vector<Change>* out) {
  if (rail >= 0 && static_cast<size_t>(rail) < rails_.size()) rail_state(static_cast<size_t>(rail), running, now, out);
}

void LinkMonitor::rail_state(size_t r, bool running, double now, std::vector<Change>* out) {
  Rail& rail = rails_[r];
  if (running) {
    rail.hold.link_up(now);
  } else if (rail.hold.link_down(now)) {
    const std::string where = rail.ifname.empty() ? std::string() : " (interface " + rail.ifname + " is down)";
    out->push_back({static_cast<int>(r), false, "lost its link" + where});
  }
}

void LinkMonitor::expire(double now, std::vector<Change>* out) {
  for (size_t r = 0; r < rails_.size(); ++r) {
    HoldDown& h = rails_[r].hold;
    if (!h.expire(now)) continue;
    char why[160];
    snprintf(why, sizeof why, "its interface %s has been up for %.1f s (the hold-down)", rails_[r].ifname.c_str(),
             h.hold());
    out->push_back({static_cast<int>(r), true, why});
  }
}

// The state of every watched interface, asked directly (SIOCGIFFLAGS).
void LinkMonitor::resync(double now, std::vector<Change>* out) {
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return;
  for (auto& rail : rails_) {
    if (rail.ifindex == 0) continue;
    ifreq ifr{};
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", rail.ifname.c_str());
    const bool running = ioctl(s, SIOCGIFFLAGS, &ifr) == 0 && (ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags & IFF_RUNNING);
    link_state(rail.ifindex, running, now, out);
  }
  close(s);
}

}  // namespace railcoll::rt
