// The door of one rank's listeners: a connection becomes a peer's only after
// its first frame, a Hello for this communicator, proves the job key
// (HMAC over the header, the receiver and the receiver's nonce: wire.hpp).
// Anything else (a stranger, a wrong key, another job, garbage, silence) is
// closed and logged in one line. Used at set-up and, for the rail listeners,
// while the communicator runs (a failed rail reconnects there).
#pragma once
#include <poll.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/topology.hpp"
#include "runtime/transport/wire.hpp"

namespace railcoll::rt {

class Door {
 public:
  // A connection whose Hello passed: who, on which rail (-1: the local
  // socket), and its generation (the Hello's seq; a reconnect has a higher one).
  struct Admitted {
    int fd, peer, rail;
    uint32_t generation;
  };

  Door(int me, std::string job_key, double hello_timeout) : me_(me), key_(std::move(job_key)), hello_s_(hello_timeout) {}
  ~Door();
  Door(const Door&) = delete;
  Door& operator=(const Door&) = delete;

  // What a Hello must match: set before the first one is examined.
  void expect(const Topology& topo, uint64_t comm_id, std::string nonce);
  // A listener (owned by the door from now on); tcp: a rail's, else the local socket's.
  void add_listener(int fd, bool tcp);
  void close_local_listener();
  void close_listeners();
  bool listening() const { return !listeners_.empty(); }

  // Appends the fds to poll (listeners, then half-open connections) and
  // returns how many; serve() then reads their results from p.
  size_t poll_set(std::vector<pollfd>* p) const;
  // Accepts and examines; admitted connections are appended to *out.
  void serve(const pollfd* p, double now, std::vector<Admitted>* out);
  // End of set-up: whoever else knocked is examined once more and told no
  // unless already a complete Hello.
  void close_the_backlog(double now, std::vector<Admitted>* out);
  // Closes fd and logs why, in one line.
  void refuse(int fd, const std::string& why) const;
  // Set-up: serves the door until `expected` connections were admitted
  // (admit(a, now) says whether one counts) or throws at the deadline; then
  // whoever else knocked is told no (and logged), rather than left in the backlog.
  void accept(int expected, double deadline, const std::function<bool(const Admitted&, double)>& admit);

 private:
  struct Listener {
    int fd;
    bool tcp;
  };
  struct Pending {
    int fd;
    bool tcp;
    double until;
    std::string in;
  };
  std::string hello_problem(const Pending& q, FrameHeader* h) const;
  bool accept_one(const Listener& l, double now);
  void examine(Pending& q, double now, bool last, std::vector<Admitted>* out);

  const int me_;
  const std::string key_;
  const double hello_s_;
  const Topology* topo_ = nullptr;
  uint64_t comm_id_ = 0;
  std::string nonce_;
  std::vector<Listener> listeners_;
  std::vector<Pending> pending_;
};

}  // namespace railcoll::rt
