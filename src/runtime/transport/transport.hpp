// The transport interface: everything the executor (executor.hpp) does that
// crosses a process boundary goes through it, and nothing else does. Behind it
// for real processes: RailTransport (rails/rail_transport.hpp), the multi-rail
// layer written once over the node's room (local/: Unix sockets to local
// peers, the node's POSIX shared memory, sleeping) and one kind of network
// link (tcp/, ofi/; link.hpp is that seam); for tests, FakeTransport
// (fake/fake_transport.hpp: N ranks in one process) and FakeRails (the rails
// layer over fake links). Other RDMA stacks (UCX, verbs) are one more kind of
// link; the architecture page (../shared/design/ARCHITECTURE.md, "Runtime")
// draws the seam, and Gloo's transport::Pair / UCC's TL split are the models.
//
// The contract, in the order a call uses it:
//  * Sending: send() queues one frame (a header and payload pieces) to a peer.
//    The payload is read from the caller's memory while the frame goes out, so
//    it must stay as it is until sends_pending() is false or end_call() returns
//    (after end_call the transport no longer points into it). For a peer on
//    another node `rail` is the schedule's rail; if that rail is down the
//    transport sends the frame on another and sets kFlagMoved in its header: the
//    executor never learns about rails going down.
//  * Receiving: inside progress() the transport hands every Data and Notify
//    frame to the FrameSink attached to it: the header first (so the sink says
//    where the payload goes, and the payload is received straight into its
//    final place), then "done" once the payload is all there. Aborts from peers
//    go to the sink too; everything else (hellos, pings, goodbyes, rail
//    notices) stays inside the transport.
//  * Node memory: node() is this rank's view of its node's shared segment
//    (counters, call words, the shared buffer; layout in node_segment.hpp). The
//    executor reads and writes it directly: memcpy puts into the shared buffer
//    and counter increments cost no call. After raising a node counter it calls
//    wake_node_sleepers(), and a wait on a node counter passes a NodeWait to
//    progress() so that the transport may sleep until a local peer raises it
//    (the node room: a futex when nothing else is awaited, else a Wake
//    frame into its epoll set; node_segment.hpp, NodeSleeper).
//  * Errors: a transport throws RuntimeError (Peer, Network, Protocol, Timeout)
//    from any call; the executor then marks the communicator broken and calls
//    abort_peers(), which never throws.
#pragma once
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "runtime/transport/node_segment.hpp"
#include "runtime/transport/wire.hpp"

namespace railcoll::rt {

// Where the payload of an arriving frame goes.
enum class Landing : uint8_t {
  Place,  // into the iovecs the sink filled in (its final place, no copy)
  Hold,   // into a buffer the transport owns; handed to frame_done (a frame of a later call)
  Drop,   // read and thrown away (a second copy of a frame sent again after a rail failed)
};

// The executor's side of receiving: narrow on purpose, so a transport knows
// nothing of plans, calls or counters.
class FrameSink {
 public:
  // A Data or Notify frame's header arrived from h.sender on `rail` (-1: from a
  // local peer). Decides where its h.length payload bytes go; for Place it fills
  // *place with the destination pieces (their lengths add up to h.length).
  // Throws RuntimeError to refuse the frame: no payload byte is read then.
  virtual Landing frame_header(const FrameHeader& h, int rail, std::vector<iovec>* place) = 0;
  // The frame's payload is all there: in place, or (Hold) in *held, which the
  // sink may take. Not called for Drop.
  virtual void frame_done(const FrameHeader& h, int rail, std::vector<char>* held) = 0;
  // A peer aborted its call number `call`; `why` is its reason. Throws, unless
  // the call is one this rank has not reached yet (the peer left this rank's
  // call and failed in the next): then this call goes on, and the next fails.
  virtual void peer_aborted(int peer, uint64_t call, const std::string& why) = 0;
  // Where this rank is, for the answer to a liveness probe (PeerSaid).
  virtual PeerSaid position() const { return {}; }

 protected:
  ~FrameSink() = default;
};

// A wait on a node counter: the transport may sleep only while the counter is
// below target, and a local peer that raises it wakes the sleeper.
// counter_index: the counter's place in the node segment (NodeShm::counters),
// so a waker can tell whose wait it ends. net_idle: this rank expects no frame
// before the counter rises (none of its messages of the call is missing), so
// the transport may sleep without watching its connections for a while (a
// futex); it still looks at them now and then (aborts, pings, peers gone).
struct NodeWait {
  const std::atomic<uint64_t>* counter;
  uint64_t target;
  int counter_index = -1;
  bool net_idle = false;
};

class Transport {
 public:
  virtual ~Transport() = default;

  // The executor that receives frames; set once, before the first progress().
  virtual void attach(FrameSink* sink) = 0;

  // ---- the node's shared memory (valid for the transport's life)
  virtual NodeSegment node() const = 0;
  // Wakes the local ranks sleeping on a node counter (after this rank raised one).
  virtual void wake_node_sleepers() = 0;

  // ---- sending
  // Queues one frame to `peer`; payload: n pieces read in place (see above).
  virtual void send(int peer, int rail, const FrameHeader& h, const iovec* payload, size_t n) = 0;
  // Frames not yet handed over (to the kernel, or to the peer).
  virtual bool sends_pending() const = 0;
  // The call's program is over and only its last frames are left: hand them
  // over as fast as the transport can take them, past any limit that paced
  // them inside the call (the TCP links' unsent limit), so the rank can
  // leave instead of waiting for the network to carry them. Until begin_call.
  virtual void hand_over_sends() {}

  // ---- a call
  // Throws RuntimeError(Peer) if a peer is already known to be gone.
  virtual void begin_call() = 0;
  // The call returns: from now on the memory of its payloads may change.
  virtual void end_call() = 0;

  // ---- progress
  // Sends what can go, hands what arrived to the sink, answers what the
  // transport answers itself. Blocks up to wait_s seconds (0: not at all) when
  // nothing is there; with `sleep_on`, only while that node counter is below
  // its target.
  virtual void progress(double wait_s, const NodeWait* sleep_on) = 0;

  // ---- peers
  // Rails this rank can use to every peer now.
  virtual int rails_up() const = 0;
  // Asks every peer whether it is alive; answered_probe() says who answered
  // since the last probe (a rank in a railcoll call answers at once).
  virtual void probe_peers() = 0;
  virtual bool answered_probe(int peer) const = 0;
  // What `peer` said in its answer (answered false: none since the last probe).
  virtual PeerSaid peer_said(int peer) const = 0;
  // Tells every peer that call number `call` failed (best effort, never throws).
  virtual void abort_peers(uint64_t call, const std::string& why) = 0;
  // The end: goodbyes, connections closed, memory unmapped; until `deadline` at most.
  virtual void close(double deadline) = 0;
};

class OutOfBand;

// A transport between real processes: what communicator set-up does with it
// besides the calls (rt::Comm), whichever one RAILCOLL_TRANSPORT chose.
class ProcessTransport : public Transport {
 public:
  // What a peer needs to reach this rank (opaque bytes for the set-up exchange).
  virtual std::string contact() const = 0;
  // After the exchange: every peer reachable, the node's segment mapped. job and
  // tag (hex, unique per communicator) name local sockets and the segment;
  // contacts: every rank's contact(); oob: the exchange, for barriers.
  virtual void connect(const Topology& topo, uint64_t comm_id, const std::string& job, const std::string& tag,
                       const std::vector<std::string>& contacts, OutOfBand& oob, double deadline) = 0;
  // Which transport this is, for records and `railcoll info`: "tcp", "ofi:tcp;ofi_rxm".
  virtual std::string describe() const = 0;
};

}  // namespace railcoll::rt
