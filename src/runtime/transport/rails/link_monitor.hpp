// The link state of the interfaces a rank's rails leave by, from the kernel's
// netlink link messages (NETLINK_ROUTE, group RTMGRP_LINK), and the hold-down
// of a rail whose link went down. Failover (failover.cpp) gives a rail up as
// soon as its link is lost, instead of after RAILCOLL_RAIL_TIMEOUT of silence,
// and takes it back only once its link has been up and stable for a while, so
// that a flapping link does not move the traffic back and forth at every up.
//
// Hold-down policy (HoldDown; docs/runtime.md, "Rail failover"):
//  * a rail whose link goes down is held down until its link has been up
//    without interruption for the hold time; every down meanwhile starts the
//    clock again (a link that flaps every 200 ms is never taken back while it
//    flaps);
//  * the hold time is kFirst (1 s) for a link that fails for the first time or
//    after carrying traffic for kFlapWindow (10 s) since it was last taken back;
//  * a link that fails again within kFlapWindow of being taken back was flapping
//    with up-times longer than the hold: the hold doubles, up to kMax (8 s).
//    While held, downs do not double it: a held rail carries nothing, so its
//    flaps cost nothing.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace railcoll::rt {

class HoldDown {
 public:
  // 1 s covers the bounces of a link coming up (autonegotiation, a loose
  // cable: a fraction of a second) and equals the reconnect period the runtime
  // used before (a rail was back 0-1 s after its link), so one clean outage
  // costs at most about as long on the other rails as before.
  static constexpr double kFirst = 1.0;
  // Doubling finds a hold longer than a flapping link's up-times in a few
  // failed returns, each costing one move of the frames in flight. 8 s bounds
  // the wait after the flapping stops; a link whose flaps are farther apart
  // than that is cheap to take back between them.
  static constexpr double kMax = 8.0;
  // A failure this soon after the rail was taken back counts as a flap.
  static constexpr double kFlapWindow = 10.0;

  // The link went down: true if the rail must be given up now (it was usable).
  bool link_down(double now);
  void link_up(double now);
  // True once, when the link has been up for the hold time: the rail may be
  // used again.
  bool expire(double now);
  bool usable() const { return !held_; }
  bool link_is_up() const { return up_; }
  double hold() const { return hold_; }

 private:
  bool up_ = true, held_ = false;
  double up_since_ = 0, hold_ = kFirst, restored_at_ = -1e300;
};

class LinkMonitor {
 public:
  // A rail that became unusable (its link went down) or usable again.
  struct Change {
    int rail;
    bool usable;
    std::string why;  // for the log line
  };

  // Finds each rail address's interface and opens the netlink socket. Rails
  // whose address is on no interface (127.0.0.2 ...) are not watched; without
  // a socket (fd() < 0) nothing is, and failover detects silence only.
  // watch_interfaces false: neither; the rails' link states come by rail_link().
  explicit LinkMonitor(const std::vector<std::string>& rail_addr, bool watch_interfaces = true);
  ~LinkMonitor();
  LinkMonitor(const LinkMonitor&) = delete;
  LinkMonitor& operator=(const LinkMonitor&) = delete;

  // Readable when the kernel has something to say; poll it with the sockets.
  int fd() const { return fd_; }
  // Reads every pending message; rails whose link went down are appended.
  void read_events(double now, std::vector<Change>* out);
  // Rails whose hold-down ended now are appended (usable again).
  void expire(double now, std::vector<Change>* out);
  // A rail may carry traffic from this side: not held down.
  bool usable(int rail) const { return rails_[rail].hold.usable(); }
  const std::string& interface_of(int rail) const { return rails_[rail].ifname; }

  // The parser, on a buffer of netlink messages (tests feed it made-up ones).
  void on_messages(const void* buf, size_t len, double now, std::vector<Change>* out);
  // A rail watched on interface `ifindex` (tests; the constructor finds them).
  void watch(int rail, int ifindex, const std::string& ifname);
  // The link state of a rail's interface, from another source than netlink
  // (the fake link's rails).
  void rail_link(int rail, bool running, double now, std::vector<Change>* out);

 private:
  struct Rail {
    int ifindex = 0;  // 0: not watched
    std::string ifname;
    HoldDown hold;
  };
  void follow_new_index(const char* msg, size_t len, int ifindex);
  void link_state(int ifindex, bool running, double now, std::vector<Change>* out);
  void rail_state(size_t r, bool running, double now, std::vector<Change>* out);
  void resync(double now, std::vector<Change>* out);

  int fd_ = -1;
  std::vector<Rail> rails_;
};

}  // namespace railcoll::rt
