// The seam under the rails layer (rails/rail_transport.hpp): links.
//
// A *link* is one way to one peer: (peer, rail) for a network rail, (peer, -1)
// for a rank of this node. A `Links` object holds every link of one kind that a
// rank has (one class per folder: tcp/, ofi/, fake/; local/ for the node's
// ranks) and does only the mechanics: connect and accept, carry frames, hand
// arriving headers and payloads up, say what it knows of delivery, close. What
// to do about a link that fails, stalls, flaps or says goodbye — routing,
// moving frames to another rail, liveness, aborts, hold-down, reconnecting —
// is the rails layer's, written once above every kind of link. This is the
// split of Open MPI's BML (per-peer arrays of BTL endpoints, the policy) over
// its BTLs (the mechanics), and of libfabric's mrail over its rail providers.
//
// What a new kind of link implements (docs/runtime.md, "Transport map"):
//   contact/connect     set-up: what a peer needs to reach this rank, then
//                       every link to every peer ready (or an error naming one)
//   send                queue one frame on (peer, rail); `send_urgent` puts a
//                       small frame out at once, best effort (aborts)
//   arriving frames     every header to LinkEvents::frame_header (it says where
//                       the payload goes), then frame_done; link_broken when the
//                       link cannot carry on
//   delivery            signs(): whether frames are still undelivered, when the
//                       link last showed it delivers, when it last heard; give_up:
//                       the frames not surely delivered, to be moved
//   reconnect           bring a given-up link back (either side may; the other
//                       asks LinkEvents::may_restore), link_restored when it works
//   goodbye             byes out on the live links, the peers' awaited, closed
#pragma once
#include <sys/uio.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/topology.hpp"
#include "runtime/transport/transport.hpp"

namespace railcoll::rt {

class OutOfBand;
class Waits;

// A frame on its way out: the header and its payload, read in place from the
// caller's memory until the call ends (then copied into `owned` by keep()).
struct OutFrame {
  FrameHeader hdr{};
  std::vector<iovec> iov;
  std::string owned;
  // The link's own: its name for the frame and where in the frame's payload
  // `owned` starts (a piece of it sent again); a moved frame keeps them, so
  // the receiving link of the same kind can tell a second copy.
  uint64_t link_id = 0, link_offset = 0;

  size_t payload_bytes() const {
    size_t n = owned.size();
    for (auto& v : iov) n += v.iov_len;
    return n;
  }
  // The call returns: the payload stops pointing into its memory.
  void keep() {
    for (auto& v : iov) owned.append(static_cast<const char*>(v.iov_base), v.iov_len);
    iov.clear();
  }
};

// Frames that go again on another rail when theirs fails before they were
// surely delivered (the others — pings, goodbyes, aborts — are not worth it).
inline bool moves_with_rail(uint16_t type) {
  return type == static_cast<uint16_t>(Frame::Data) || type == static_cast<uint16_t>(Frame::Notify) ||
         type == static_cast<uint16_t>(Frame::RailHold);
}

// What links tell the rails layer. Calls come from inside Links calls (send,
// drive, the waits), on the rank's own thread.
class LinkEvents {
 public:
  // A frame's header arrived on (peer, rail). Place: *place is filled with the
  // payload's destination pieces; Hold: the payload goes into a buffer of the
  // link's, handed to frame_done; Drop: read and thrown away. Throws to refuse
  // the frame (no payload byte is read then).
  virtual Landing frame_header(int peer, int rail, const FrameHeader& h, std::vector<iovec>* place) = 0;
  // Its payload is all there (Place: in place, held null; Hold: in *held).
  virtual void frame_done(int peer, int rail, const FrameHeader& h, std::vector<char>* held) = 0;
  // The link cannot carry on (a send refused, closed by the network, its peer
  // unreachable). whole_peer: the peer itself is gone or closing (every link
  // to it ends), not this rail alone.
  virtual void link_broken(int peer, int rail, const std::string& why, bool whole_peer) = 0;
  // A link given up is closed now (what the peer delivered on it is read).
  virtual void link_closed(int peer, int rail) = 0;
  // A given-up link carries frames again (reconnected by either side).
  virtual void link_restored(int peer, int rail) = 0;
  // The peer wants a given-up link back: false while this side holds the rail
  // down (the link refuses, and the rails layer tells the peer why).
  virtual bool may_restore(int peer, int rail) = 0;
  // This node's interface of `rail` lost its link or has it again, as a link
  // kind saw it (the fake; real interfaces are watched by the link monitor).
  virtual void interface_changed(int rail, bool running) = 0;

 protected:
  ~LinkEvents() = default;
};

// What a link shows of its health (LinkEvents-free: the rails layer asks).
struct LinkSigns {
  bool busy = false;      // frames queued or not yet surely delivered
  double moving_at = 0;   // the last sign it delivers (bytes acknowledged, sends completed)
  double heard_at = 0;    // the last byte received on it
};

// The set-up exchange as a kind of link sees it.
struct LinkSetup {
  const Topology* topo = nullptr;
  uint64_t comm_id = 0;
  int me = 0;
  std::string job, tag;               // name local sockets and segments
  std::vector<std::string> contacts;  // every rank's contact() of this kind
  OutOfBand* oob = nullptr;
  Waits* waits = nullptr;             // where the link's fds join the rank's wait
  NodeSegment segment;                // the node's shared segment (mapped before the network links connect)
};

// The frames of a given-up link that go again on another rail (flagged
// kFlagMoved), and where the link ends for the peer (tcp: the bytes its kernel
// acknowledged; the peer reads that far; others: 0).
struct GivenUp {
  std::vector<OutFrame> frames;
  uint64_t end = 0;
};

// One file descriptor's readiness, dispatched by the node room's wait.
class FdWatcher {
 public:
  virtual void fd_ready(uint32_t token, uint32_t events) = 0;

 protected:
  ~FdWatcher() = default;
};

// Where a rank sleeps: the node room (local/) watches every fd of every link
// kind in one set, so one wait covers the node's ranks and the network.
class Waits {
 public:
  // fd joins the set (epoll events); w->fd_ready(token, events) when ready
  // (w null: it only ends a sleep).
  virtual void watch(int fd, uint32_t events, FdWatcher* w, uint32_t token) = 0;
  virtual void unwatch(int fd) = 0;

 protected:
  ~Waits() = default;
};

class Links {
 public:
  virtual ~Links() = default;

  virtual void attach(LinkEvents* events) = 0;
  // ---- set-up
  // What a peer needs to reach this rank's links (opaque bytes).
  virtual std::string contact() const = 0;
  virtual void connect(const LinkSetup& s, double deadline) = 0;
  // For records: "tcp", "ofi:tcp;ofi_rxm".
  virtual std::string describe() const = 0;

  // ---- frames
  virtual void send(int peer, int rail, OutFrame f) = 0;
  // At once, past every queue, best effort; never throws (an abort).
  virtual void send_urgent(int peer, int rail, const OutFrame& f) = 0;
  // Gives urgent frames until `until` to go out (links that queue them).
  virtual void flush_urgent(double until) { (void)until; }
  virtual bool sends_pending() const = 0;
  // Past any pacing limit, for the call's last frames (Transport::hand_over_sends).
  virtual void hand_over_sends() {}
  virtual void begin_call() {}
  // The call returns: nothing held may point into its memory afterwards.
  virtual void end_call() = 0;
  // A call failed and returned without end_call: frames that read its memory
  // are dropped (nobody waits for them any more).
  virtual void forget_call_memory() {}

  // ---- progress (the rails layer's round: poll, the node room's wait, drive)
  // Work that needs no wait (completion queues); *progressed if any was done.
  virtual void poll(bool* progressed) { (void)progressed; }
  // Before the wait: the link's fds are in the set; returns how long the rank
  // may sleep, given it would sleep wait_s.
  virtual double before_wait(double wait_s) { return wait_s; }
  // After the wait: reads and writes what the ready fds allow.
  virtual void drive(double now) = 0;
  // Links that cannot see a peer vanish (no connection to close) want their
  // silent peers pinged while the rank waits in a call.
  virtual bool needs_heartbeat() const { return false; }

  // ---- failover mechanics (the rails layer decides)
  virtual LinkSigns signs(int peer, int rail) = 0;
  // Stop sending on the link; its frames not surely delivered come back.
  virtual GivenUp give_up(int peer, int rail) = 0;
  // The peer gave it up: what it delivered is read up to `end`, then closed.
  virtual void peer_gave_up(int peer, int rail, uint64_t end) = 0;
  virtual bool closed(int peer, int rail) const = 0;
  // Starts bringing a closed link back (false: cannot now); link_restored follows.
  virtual bool reconnect(int peer, int rail, double now) = 0;
  virtual bool reconnecting(int peer, int rail) const = 0;
  virtual void stop_reconnect(int peer, int rail) = 0;

  // ---- the end: byes on the live links (given-up ones just close), the
  // peers' awaited until `deadline`, everything closed.
  virtual void goodbye(double deadline) = 0;
};

// The node's room (local/): the links to this node's ranks (rail -1), the
// node's shared segment, and the rank's one wait, in which every kind of
// link's fds are watched and a rank sleeps on a node counter.
class NodeRoom : public Links, public Waits {
 public:
  virtual NodeSegment node() const = 0;
  // Wakes the local ranks sleeping on a node counter this rank raised.
  virtual void wake_node_sleepers() = 0;
  // Waits up to wait_s for a watched fd (or, with sleep_on, only while that
  // counter is below its target); futex: nothing but the counter is awaited,
  // so the rank may sleep where only a local peer's raise wakes it.
  virtual void wait(double wait_s, const NodeWait* sleep_on, bool futex) = 0;
  // After goodbye: the segment unmapped.
  virtual void unmap() = 0;
};

}  // namespace railcoll::rt
