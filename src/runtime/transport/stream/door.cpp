// The door (door.hpp): listeners, half-open connections, Hello checks.
#include "runtime/transport/stream/door.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/bootstrap/auth.hpp"
#include "runtime/bootstrap/net.hpp"
#include "runtime/transport/wire.hpp"

namespace railcoll::rt {

Door::~Door() {
  close_listeners();
  for (auto& q : pending_) refuse(q.fd, "the communicator is closing");
}

void Door::expect(const Topology& topo, uint64_t comm_id, std::string nonce) {
  topo_ = &topo;
  comm_id_ = comm_id;
  nonce_ = std::move(nonce);
}

void Door::add_listener(int fd, bool tcp) {
  set_nonblocking(fd);
  listeners_.push_back({fd, tcp});
}

void Door::close_local_listener() {
  for (auto it = listeners_.begin(); it != listeners_.end();) {
    if (it->tcp) {
      ++it;
      continue;
    }
    close(it->fd);
    it = listeners_.erase(it);
  }
}

void Door::close_listeners() {
  for (auto& l : listeners_) close(l.fd);
  listeners_.clear();
}

void Door::refuse(int fd, const std::string& why) const {
  fprintf(stderr, "railcoll: rank %d refused a connection from %s: %s\n", me_, describe_peer(fd).c_str(), why.c_str());
  close(fd);
}

// "" when the complete header in q may be a peer's Hello, else why not.
std::string Door::hello_problem(const Pending& q, FrameHeader* hp) const {
  FrameHeader& h = *hp;
  memcpy(&h, q.in.data(), sizeof h);
  if (h.magic != kWireMagic) return "it does not speak the railcoll protocol";
  if (h.version != kWireVersion)
    return "wire version " + std::to_string(h.version) + ", this rank speaks " + std::to_string(kWireVersion);
  if (h.type != static_cast<uint16_t>(Frame::Hello) || h.length != kHelloProof) return "its first frame is not a hello";
  if (h.comm != comm_id_) return "it belongs to another job or communicator";
  if (h.sender < 0 || h.sender >= me_) return "it claims to be rank " + std::to_string(h.sender);
  bool local = topo_->same_node(h.sender, me_);
  if (local == q.tcp || (q.tcp && (h.op < 0 || h.op >= topo_->rails())) || (!q.tcp && h.op != -1))
    return "rank " + std::to_string(h.sender) + " cannot connect on this socket as rail " + std::to_string(h.op);
  return "";
}

// Reads what q has sent; admits it (q.fd becomes -1) or refuses it once it is
// clear it is not a peer. `last`: set-up is over, refuse what is not yet one.
void Door::examine(Pending& q, double now, bool last, std::vector<Admitted>* out) {
  const size_t full = sizeof(FrameHeader) + kHelloProof;
  char buf[sizeof(FrameHeader) + kHelloProof];
  ssize_t r = recv(q.fd, buf, full - q.in.size(), MSG_DONTWAIT);
  if (r > 0) q.in.append(buf, static_cast<size_t>(r));
  FrameHeader h{};
  std::string why = q.in.size() >= sizeof h ? hello_problem(q, &h) : "";
  if (why.empty() && q.in.size() == full) {
    std::string proof = hello_proof(key_, h, me_, nonce_);
    if (equal_constant_time(proof.data(), q.in.data() + sizeof h, kHelloProof)) {
      out->push_back({q.fd, h.sender, h.op, static_cast<uint32_t>(h.seq)});
      q.fd = -1;
      return;
    }
    // The nonce is this communicator's: a hello meant for another communicator
    // of the same job fails here too.
    why = "wrong job key (RAILCOLL_JOB_KEY)";
  }
  if (why.empty() && (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)))
    why = "it closed the connection before it said hello";
  if (why.empty() && now > q.until) why = "it sent no complete hello in time";
  if (why.empty() && last) why = "every peer of this communicator is already connected";
  if (!why.empty()) {
    refuse(q.fd, why);
    q.fd = -1;
  }
}

bool Door::accept_one(const Listener& l, double now) {
  int fd = accept4(l.fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) return false;
  tune_socket(fd, l.tcp);
  pending_.push_back({fd, l.tcp, now + hello_s_, ""});
  return true;
}

size_t Door::poll_set(std::vector<pollfd>* p) const {
  for (auto& l : listeners_) p->push_back({l.fd, POLLIN, 0});
  for (auto& q : pending_) p->push_back({q.fd, POLLIN, 0});
  return listeners_.size() + pending_.size();
}

void Door::serve(const pollfd* p, double now, std::vector<Admitted>* out) {
  const size_t nl = listeners_.size(), np = pending_.size();
  for (size_t i = 0; i < np; ++i)
    if (p[nl + i].revents || now > pending_[i].until) examine(pending_[i], now, false, out);
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(), [](const Pending& q) { return q.fd < 0; }),
                 pending_.end());
  for (size_t i = 0; i < nl; ++i)
    if (p[i].revents & POLLIN) accept_one(listeners_[i], now);
}

void Door::close_the_backlog(double now, std::vector<Admitted>* out) {
  for (auto& l : listeners_)
    while (accept_one(l, now)) {
    }
  for (auto& q : pending_) examine(q, now, true, out);
  pending_.clear();
}

void Door::accept(int expected, double deadline, const std::function<bool(const Admitted&, double)>& admit) {
  std::vector<pollfd> p;
  std::vector<Admitted> admitted;
  for (int got = 0; got < expected;) {
    const double now = now_seconds();
    if (now > deadline)
      throw RuntimeError(Status::Timeout, "timed out waiting for peers to connect (" + std::to_string(got) + " of " +
                                              std::to_string(expected) + " connections made)");
    p.clear();
    poll_set(&p);
    poll(p.data(), p.size(), 100);
    admitted.clear();
    serve(p.data(), now, &admitted);
    for (auto& a : admitted) got += admit(a, now);
  }
  admitted.clear();
  const double now = now_seconds();
  close_the_backlog(now, &admitted);
  for (auto& a : admitted) admit(a, now);
}

}  // namespace railcoll::rt
