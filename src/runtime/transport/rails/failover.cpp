// Rail failover in the rails layer (rail_transport.hpp): the executor above
// never learns of it, and the links below only carry out what is decided
// here. Seed 000's second reason for several rails is fault tolerance; this is it.
//
// A link that breaks, or stalls while another rail to the same peer answers,
// is given up. Both sides then stop sending on it and tell the other with a
// RailDown frame on a surviving rail, carrying where the link ends for the
// peer (tcp: the bytes the peer's kernel acknowledged: those are read, the
// rest is not); every frame the link had not surely delivered goes again
// (flagged kFlagMoved) on the other rail, after the notice. Later sends avoid
// the rail; the lower rank reconnects it every kRailRetry s and when that
// works it is used again. A call fails only when no rail to a peer is left.
//
// Silence takes RAILCOLL_RAIL_TIMEOUT to be sure of; a lost link is known at
// once: the link monitor (link_monitor.hpp) reads the kernel's netlink link
// messages in the progress round (or a link kind reports its rails, as the
// fake does), and a rail whose interface lost its link is given up on every
// link within that round. Its peers learn it from the RailDown notice, as
// always, and from a RailHold notice that says the rail is held down on this
// side: nobody reconnects it until this side says, with a second RailHold,
// that its link has been up and stable for the hold-down time (which grows
// while the link keeps flapping; see HoldDown).
#include <algorithm>
#include <cstdio>

#include "runtime/bootstrap/net.hpp"
#include "runtime/transport/rails/rail_transport.hpp"

namespace railcoll::rt {

// The other usable rails to `peer`.
std::vector<int> RailTransport::other_rails(int peer, int rail) const {
  std::vector<int> v;
  for (int r = 0; r < topo_.rails(); ++r) {
    const Path& p = paths_[peer][r];
    if (r != rail && !p.down && !p.gone && !p.bye) v.push_back(r);
  }
  return v;
}

// One log line when a rail loses its first link, one when its last comes back.
void RailTransport::rail_state(int rail, int delta, const std::string& why) {
  const int before = rail_down_count_[rail];
  rail_down_count_[rail] += delta;
  if (before == 0 && delta > 0)
    fprintf(stderr, "railcoll: rank %d: rail %d (%s) is down: %s; its traffic moves to the other rails\n", me_, rail,
            rail_addr_[rail].c_str(), why.c_str());
  if (before > 0 && rail_down_count_[rail] == 0)
    fprintf(stderr, "railcoll: rank %d: rail %d (%s) is up again\n", me_, rail, rail_addr_[rail].c_str());
}

// The notice goes first on the one link that carries all the frames sent
// again, so the peer knows where the old link ends (and reads no further in
// it) before it sees any of them.
void RailTransport::give_up(int peer, int rail, const std::string& why) {
  Path& p = path(peer, rail);
  if (p.down || p.gone) return;
  const std::vector<int> alive = other_rails(peer, rail);
  if (alive.empty()) {
    p.gone = true;
    throw RuntimeError(Status::Peer, link_name(peer, rail) + " " + why + ", and no other rail to rank " +
                                         std::to_string(peer) + " is left");
  }
  GivenUp g = net_->give_up(peer, rail);
  p.down = true;
  p.down_at = now_seconds();
  p.probed = false;
  rail_state(rail, 1, "the connection to rank " + std::to_string(peer) + " " + why);
  send_control(peer, alive[0], Frame::RailDown, 0, rail, g.end);
  for (auto& f : g.frames) {
    f.hdr.flags |= kFlagMoved;
    net_->send(peer, alive[0], std::move(f));
  }
}

// The peer gave up its link on rail h.op to this rank (notice on `on`): the
// old one is read up to where the peer says it ends, then closed.
void RailTransport::rail_down_notice(int peer, int on, const FrameHeader& h) {
  if (on < 0 || h.op < 0 || h.op >= topo_.rails() || h.op == on) protocol_error(peer, on, "malformed rail-down notice");
  if (net_->closed(peer, h.op)) return;
  net_->peer_gave_up(peer, h.op, h.offset);
  if (!paths_[peer][h.op].down) give_up(peer, h.op, "was given up by rank " + std::to_string(peer));
}

// The peer holds rail h.op down (or no longer): the lower rank reconnects it
// only when neither side holds it.
void RailTransport::rail_hold_notice(int peer, int on, const FrameHeader& h) {
  if (on < 0 || h.op < 0 || h.op >= topo_.rails() || h.offset > 1) protocol_error(peer, on, "malformed rail-hold notice");
  Path& t = paths_[peer][h.op];
  if (h.seq <= t.hold_seq) return;  // older than one applied already (a moved copy)
  t.hold_seq = h.seq;
  t.peer_held = h.offset == 1;
  if (t.peer_held && net_->reconnecting(peer, h.op)) net_->stop_reconnect(peer, h.op);
  if (!t.peer_held) t.retry_at = 0;  // at once
}

// Tells the peer, on another rail, whether this side holds `rail` down.
void RailTransport::tell_hold(int peer, int rail, bool held) {
  const std::vector<int> alive = other_rails(peer, rail);
  if (alive.empty()) return;  // nothing reaches the peer: the call's deadline decides
  send_control(peer, alive[0], Frame::RailHold, hold_seq_[rail], rail, held ? 1 : 0);
}

void RailTransport::start_reconnect(int peer, int rail, double now) {
  net_->reconnect(peer, rail, now);
  paths_[peer][rail].retry_at = now + kRailRetry;
}

// ------------------------------------------------------------------ what the links say

void RailTransport::link_broken(int peer, int rail, const std::string& why, bool whole_peer) {
  if (rail < 0 || whole_peer) {
    const bool bye = path(peer, rail).bye;
    if (whole_peer)
      for (auto& p : paths_[peer]) p.gone = true;
    path(peer, rail).gone = true;
    if (bye || closing_) return;
    throw RuntimeError(Status::Peer, link_name(peer, rail) + " " + why);
  }
  if (closing_) return;
  give_up(peer, rail, why);
}

void RailTransport::link_closed(int peer, int rail) {
  if (rail >= 0) paths_[peer][rail].retry_at = now_seconds() + kRailRetry;
}

void RailTransport::link_restored(int peer, int rail) {
  Path& p = path(peer, rail);
  if (p.down) rail_state(rail, -1, "");
  p.down = p.gone = p.probed = false;
}

// A peer reconnects a rail this side holds down (it had not heard yet):
// refused, and told again.
bool RailTransport::may_restore(int peer, int rail) {
  if (rail < 0 || links_.usable(rail)) return true;
  tell_hold(peer, rail, true);
  return false;
}

void RailTransport::interface_changed(int rail, bool running) {
  const double now = now_seconds();
  link_changes_.clear();
  links_.rail_link(rail, running, now, &link_changes_);
  links_changed(now);
}

void RailTransport::fd_ready(uint32_t, uint32_t) { link_events(now_seconds()); }

// ------------------------------------------------------------------ the link monitor

// The netlink socket is readable: rails whose link went down are given up.
void RailTransport::link_events(double now) {
  link_changes_.clear();
  links_.read_events(now, &link_changes_);
  links_changed(now);
}

// Acts on link_changes_: a rail whose link was lost is given up on every link
// at once and its peers are told to hold it down; a rail whose hold-down ended
// is taken back (the peers told, the lower rank reconnects).
void RailTransport::links_changed(double now) {
  for (const auto& ch : link_changes_) {
    const int r = ch.rail;
    ++hold_seq_[r];
    if (ch.usable && rail_down_count_[r] > 0)
      fprintf(stderr, "railcoll: rank %d: rail %d (%s): %s: taking it back\n", me_, r, rail_addr_[r].c_str(),
              ch.why.c_str());
    for (int p = 0; p < n_; ++p) {
      if (p == me_ || same_node(p)) continue;
      Path& s = paths_[p][r];
      if (s.gone) continue;
      if (!ch.usable) {
        if (net_->reconnecting(p, r)) net_->stop_reconnect(p, r);
        // The last rail to a peer is kept: a short loss may pass, and the
        // call's deadline decides.
        if (!s.down && !s.bye && !other_rails(p, r).empty()) give_up(p, r, ch.why);
      } else if (s.down && net_->closed(p, r) && !net_->reconnecting(p, r) && !s.peer_held && me_ < p) {
        start_reconnect(p, r, now);
      }
      if (s.down) tell_hold(p, r, !ch.usable);
    }
  }
}

// ------------------------------------------------------------------ health

// Every kCheckEvery s: rails whose hold-down ended taken back, given-up links
// closed that the peer never said where to stop reading, down links
// reconnected (by the lower rank of the pair, when neither side holds the
// rail down), stalled links given up.
void RailTransport::check_rails(double now) {
  if (now < next_check_ || paths_.empty()) return;
  next_check_ = now + kCheckEvery;
  link_changes_.clear();
  links_.expire(now, &link_changes_);
  links_changed(now);
  for (int p = 0; p < n_; ++p) {
    if (p == me_ || same_node(p)) continue;
    for (int r = 0; r < topo_.rails(); ++r) {
      Path& s = paths_[p][r];
      if (s.gone || s.bye) continue;
      if (!s.down) {
        check_stall(p, r, now);
        continue;
      }
      if (!net_->closed(p, r) && now - s.down_at > 2 * kRailRetry) net_->peer_gave_up(p, r, 0);
      if (!net_->closed(p, r) || net_->reconnecting(p, r)) continue;
      if (me_ < p && now >= s.retry_at && !s.peer_held && links_.usable(r)) start_reconnect(p, r, now);
    }
  }
}

// A link with frames to deliver that shows no sign of delivering them for
// half the rail timeout has the other rails ping the peer. It is given up
// once it has been quiet past the timeout and still stays quiet half the
// timeout after another rail heard the peer answer: a peer that was away
// from railcoll (late to the call, in another library) answers the moment
// it is back and then reads this link too, which is no failure.
void RailTransport::check_stall(int peer, int rail, double now) {
  Path& s = paths_[peer][rail];
  const LinkSigns g = net_->signs(peer, rail);
  const double quiet = now - g.moving_at;
  if (!g.busy || quiet <= rail_timeout_ / 2) {
    s.probed = false;
    return;
  }
  if (!s.probed) {
    s.probed = true;
    s.probe_at = now;
    s.answered_at = 0;
    for (int d : other_rails(peer, rail)) send_control(peer, d, Frame::Ping);
  }
  int answered_on = -1;
  for (int d : other_rails(peer, rail))
    if (net_->signs(peer, d).heard_at >= s.probe_at) answered_on = d;
  if (answered_on < 0) return;
  if (s.answered_at == 0) s.answered_at = now;
  if (quiet <= rail_timeout_ || now - s.answered_at <= rail_timeout_ / 2) return;
  give_up(peer, rail, "carried nothing for " + seconds_text(quiet) + " while rail " + std::to_string(answered_on) +
                          " to the same rank answered");
}

}  // namespace railcoll::rt
