// RailTransport (rail_transport.hpp): set-up, frames out and in, calls, the
// progress round, probes, aborts and the end. Failover is in failover.cpp.
#include "runtime/transport/rails/rail_transport.hpp"

#include <sys/epoll.h>

#include <algorithm>
#include <cstdio>

#include "runtime/bootstrap/net.hpp"
#include "runtime/bootstrap/oob.hpp"

namespace railcoll::rt {

RailTransport::RailTransport(const TransportSettings& settings, int me, int nranks, std::vector<std::string> rail_addr,
                             std::unique_ptr<NodeRoom> node, std::unique_ptr<Links> net, bool watch_interfaces)
    : timeout_(settings.timeout),
      rail_timeout_(settings.rail_timeout),
      me_(me),
      n_(nranks),
      rail_addr_(std::move(rail_addr)),
      node_(std::move(node)),
      net_(std::move(net)),
      said_(nranks),
      links_(rail_addr_, watch_interfaces),
      hold_seq_(rail_addr_.size(), 0) {
  node_->attach(this);
  net_->attach(this);
}

RailTransport::~RailTransport() = default;

std::string RailTransport::contact() const { return pack_fields({node_->contact(), net_->contact()}); }

void RailTransport::connect(const Topology& topo, uint64_t comm_id, const std::string& job, const std::string& tag,
                            const std::vector<std::string>& contacts, OutOfBand& oob, double deadline) {
  topo_ = topo;
  comm_id_ = comm_id;
  paths_.assign(n_, std::vector<Path>(std::max(1, topo.rails())));
  rail_down_count_.assign(rail_addr_.size(), 0);
  LinkSetup node_setup;
  node_setup.topo = &topo_;
  node_setup.comm_id = comm_id;
  node_setup.me = me_;
  node_setup.job = job;
  node_setup.tag = tag;
  node_setup.oob = &oob;
  node_setup.waits = node_.get();
  LinkSetup net_setup = node_setup;
  for (int r = 0; r < n_; ++r) {
    std::vector<std::string> f;
    if (!unpack_fields(contacts[r], &f) || f.size() != 2)
      throw RuntimeError(Status::Protocol, "malformed contact of rank " + std::to_string(r) + " in the set-up exchange");
    node_setup.contacts.push_back(f[0]);
    net_setup.contacts.push_back(f[1]);
  }
  node_->connect(node_setup, deadline);
  net_setup.segment = node_->node();
  net_->connect(net_setup, deadline);
  if (links_.fd() >= 0) node_->watch(links_.fd(), EPOLLIN, this, 0);
}

// ------------------------------------------------------------------ frames out

// The schedule's rail to `peer`, or the next one up (then *moved).
int RailTransport::route(int peer, int rail, bool* moved) {
  const int R = topo_.rails();
  rail = std::max(0, rail);
  for (int k = 0; k < R; ++k) {
    const int r = (rail + k) % R;
    const Path& p = paths_[peer][r];
    if (p.down || p.gone) continue;
    *moved = k > 0;
    return r;
  }
  throw RuntimeError(Status::Peer, "no rail to rank " + std::to_string(peer) + " is left: cannot send to it");
}

void RailTransport::send(int peer, int rail, const FrameHeader& h, const iovec* payload, size_t n) {
  OutFrame f;
  f.hdr = h;
  f.iov.assign(payload, payload + n);
  if (same_node(peer)) {
    if (path(peer, -1).gone) throw RuntimeError(Status::Peer, link_name(peer, -1) + " is gone: cannot send to it");
    return node_->send(peer, -1, std::move(f));
  }
  bool moved = false;
  const int r = route(peer, rail, &moved);
  if (moved) f.hdr.flags |= kFlagMoved;
  net_->send(peer, r, std::move(f));
}

// A frame of the rails layer's own: on the local link, or on `rail` if it is
// up, else on the next rail up (a peer with none left is not told).
void RailTransport::send_control(int peer, int rail, Frame type, uint64_t seq, int op, uint64_t offset) {
  OutFrame f;
  f.hdr = make_header(type, comm_id_, me_);
  f.hdr.seq = seq;
  f.hdr.op = op;
  f.hdr.offset = offset;
  if (same_node(peer)) return node_->send(peer, -1, std::move(f));
  bool moved = false;
  try {
    rail = route(peer, rail, &moved);
  } catch (const RuntimeError&) {
    return;
  }
  net_->send(peer, rail, std::move(f));
}

// ------------------------------------------------------------------ frames in

[[noreturn]] void RailTransport::protocol_error(int peer, int rail, const std::string& what) const {
  throw RuntimeError(Status::Protocol, "rejected a frame from " + link_name(peer, rail) + ": " + what);
}

Landing RailTransport::frame_header(int peer, int rail, const FrameHeader& h, std::vector<iovec>* place) {
  if (std::string why = header_problem(h, comm_id_, peer); !why.empty()) protocol_error(peer, rail, why);
  place->clear();
  switch (static_cast<Frame>(h.type)) {
    case Frame::Data:
    case Frame::Notify:
      // Closing, or the communicator failed (the executor gave up its call):
      // no call is left to take it.
      if (closing_ || broken_) return Landing::Drop;
      if (!sink_) protocol_error(peer, rail, "a data frame before set-up ended");
      return sink_->frame_header(h, rail, place);
    case Frame::Abort:
      if (h.length > kMaxAbortText) protocol_error(peer, rail, "abort text too long");
      return Landing::Hold;
    case Frame::Ping:
    case Frame::Pong:
    case Frame::Bye:
    case Frame::Wake:
    case Frame::RailDown:
    case Frame::RailHold:
      if (h.length) protocol_error(peer, rail, "frame type " + std::to_string(h.type) + " with a payload");
      return Landing::Hold;
    default:
      protocol_error(peer, rail, "unknown frame type " + std::to_string(h.type));
  }
}

void RailTransport::frame_done(int peer, int rail, const FrameHeader& h, std::vector<char>* held) {
  if (h.type == static_cast<uint16_t>(Frame::Data) || h.type == static_cast<uint16_t>(Frame::Notify)) {
    // A frame begun before the call was given up and finished while the abort
    // is flushed (its last write lands then): the executor has no call for it.
    if (closing_ || broken_) return;
    return sink_->frame_done(h, rail, held);
  }
  control_done(peer, rail, h, held);
}

// The frames the rails layer answers itself; aborts go to the executor.
void RailTransport::control_done(int peer, int rail, const FrameHeader& h, std::vector<char>* text) {
  switch (static_cast<Frame>(h.type)) {
    case Frame::Ping:  // answered whatever this rank is waiting for
      if (!path(peer, rail).bye) {
        FrameHeader where{};
        pong_header(sink_ ? sink_->position() : PeerSaid{}, &where);
        send_control(peer, rail, Frame::Pong, where.seq, where.op, where.offset);
      }
      return;
    case Frame::Pong:
    {
      const uint32_t rails = said_[peer].rails | (rail < 0 ? 1u << 31 : 1u << std::min(rail, 30));
      said_[peer] = said_in(h);
      said_[peer].rails = rails;
      return;
    }
    case Frame::Bye:
      path(peer, rail).bye = true;
      return;
    case Frame::Abort:
      if (closing_) return;  // the communicator is being taken down anyway
      if (!sink_) throw RuntimeError(Status::Peer, "rank " + std::to_string(peer) + " failed during set-up");
      sink_->peer_aborted(peer, h.seq, text ? std::string(text->begin(), text->end()) : std::string());
      return;
    case Frame::RailDown:
      return rail_down_notice(peer, rail, h);
    case Frame::RailHold:
      return rail_hold_notice(peer, rail, h);
    default:
      return;  // Wake: it only ended a sleep
  }
}

// ------------------------------------------------------------------ a call

void RailTransport::begin_call() {
  if (broken_) throw RuntimeError(Status::Peer, "the communicator failed before");
  for (int p = 0; p < n_; ++p) {
    if (p == me_) continue;
    if (same_node(p)) {
      const Path& s = path(p, -1);
      if (s.gone && !s.bye) throw RuntimeError(Status::Peer, link_name(p, -1) + " is gone");
      continue;
    }
    bool moved;
    route(p, 0, &moved);  // throws for a peer lost on every rail
  }
  node_->begin_call();
  net_->begin_call();
  in_call_ = true;
}

void RailTransport::end_call() {
  node_->end_call();
  net_->end_call();
  in_call_ = false;
}

// ------------------------------------------------------------------ progress

// Whatever a call of the transport throws breaks the communicator (the
// executor's contract): from then on close() waits for nobody.
void RailTransport::progress(double wait_s, const NodeWait* sleep_on) {
  if (!sink_) throw RuntimeError(Status::Internal, "transport: progress before the executor attached");
  try {
    advance(wait_s, sleep_on);
  } catch (...) {
    broken_ = true;
    throw;
  }
}

// One round: the links' own work, one wait in the node room (every link's
// fds, or a futex when only a local peer can end it), the links driven, the
// rails looked at.
void RailTransport::advance(double wait_s, const NodeWait* sleep_on) {
  bool progressed = false;
  net_->poll(&progressed);
  if (in_call_ && wait_s > 0 && net_->needs_heartbeat()) heartbeat(now_seconds());
  if (progressed) wait_s = 0;
  wait_s = net_->before_wait(node_->before_wait(wait_s));
  const bool futex = sleep_on && sleep_on->net_idle && !sends_pending();
  node_->wait(wait_s, sleep_on, futex);
  const double now = now_seconds();
  node_->drive(now);
  net_->drive(now);
  check_rails(now);
}

// A rank waiting in a call pings the remote peers it has not heard from for
// kHeartbeat s, on every rail: a link that cannot see a peer vanish learns it
// from the sends the dead peer's side refuses.
void RailTransport::heartbeat(double now) {
  if (now < next_heartbeat_) return;
  next_heartbeat_ = now + kHeartbeat;
  const int R = topo_.rails();
  for (int p = 0; p < n_; ++p) {
    if (p == me_ || same_node(p)) continue;
    double heard = 0;
    bool bye = false;
    for (int r = 0; r < R; ++r) {
      heard = std::max(heard, net_->signs(p, r).heard_at);
      bye |= paths_[p][r].bye;
    }
    if (bye || now - heard < kHeartbeat) continue;
    for (int r = 0; r < R; ++r)
      if (!paths_[p][r].down && !paths_[p][r].gone && !net_->signs(p, r).busy) send_control(p, r, Frame::Ping);
  }
}

// ------------------------------------------------------------------ peers

int RailTransport::rails_up() const {
  if (rail_down_count_.empty()) return static_cast<int>(rail_addr_.size());
  int up = 0;
  for (int n : rail_down_count_) up += n == 0;
  return up;
}

// Every rail up to a peer of another node is asked, so that an answer that
// comes on one rail and not on another says which rail stopped carrying.
void RailTransport::probe_peers() {
  std::fill(said_.begin(), said_.end(), PeerSaid{});
  for (int p = 0; p < n_; ++p) {
    if (p == me_) continue;
    if (same_node(p)) {
      if (!path(p, -1).gone) send_control(p, -1, Frame::Ping);
      continue;
    }
    for (int r = 0; r < topo_.rails(); ++r)
      if (!paths_[p][r].down && !paths_[p][r].gone) send_control(p, r, Frame::Ping);
  }
}

// Best effort, never throws: an abort to every peer on every link still up,
// past the queues; the links get kAbortFlush to put it out.
void RailTransport::abort_peers(uint64_t call, const std::string& why) {
  broken_ = true;
  OutFrame f;
  f.hdr = make_header(Frame::Abort, comm_id_, me_);
  f.hdr.seq = call;
  f.hdr.op = -1;
  f.owned = why.substr(0, 2000);
  f.hdr.length = f.owned.size();
  for (int p = 0; p < n_; ++p) {
    if (p == me_) continue;
    if (same_node(p)) {
      if (!path(p, -1).gone) node_->send_urgent(p, -1, f);
      continue;
    }
    for (int r = 0; r < topo_.rails(); ++r)
      if (!paths_[p][r].gone && !paths_[p][r].bye && !net_->closed(p, r)) net_->send_urgent(p, r, f);
  }
  net_->flush_urgent(now_seconds() + kAbortFlush);
}

// ------------------------------------------------------------------ the end

// Byes on every link, the peers' awaited until `deadline`; after a failure
// nobody is waited for long (a dead peer would hold this rank to the deadline
// while the live ones, which wait for nobody, go on): kAbortFlush.
void RailTransport::close(double deadline) {
  closing_ = true;
  if (broken_) {
    net_->forget_call_memory();
    node_->forget_call_memory();
  }
  auto until = [&] { return broken_ ? std::min(deadline, now_seconds() + kAbortFlush) : deadline; };
  try {
    net_->goodbye(until());
  } catch (...) {  // a peer gone at the end: nothing left to tell it
  }
  try {
    node_->goodbye(until());
  } catch (...) {
  }
  node_->unmap();
}

}  // namespace railcoll::rt
