// The rails layer: the one Transport the executor sees, over the node's room
// (local/: the node's ranks, its shared segment, the rank's wait) and one kind
// of network link (tcp/, ofi/, fake/; link.hpp). Multi-rail policy is written
// here once, whatever carries the frames:
//   routing     a frame to a local peer goes on its local link; to a peer on
//               another node on the schedule's rail, or (that link given up)
//               the next rail up, flagged kFlagMoved (the executor drops a
//               second copy). Striping is the schedules' (parts carry rails).
//   failover    a link that breaks, or stalls while another rail to the same
//               peer answers, is given up: a RailDown notice (with where the
//               link ends) and its frames not surely delivered go on another
//               rail; the peer does the same for its side. A call fails only
//               when no rail to a peer is left.
//   link monitor a rail whose interface loses its link is given up at once,
//               and held down while it flaps (link_monitor.hpp, HoldDown); its
//               peers are told (RailHold) so nobody reconnects it meanwhile.
//   reconnect   the lower rank of a pair brings a given-up link back every
//               kRailRetry s, unless either side holds the rail down.
//   liveness    pings: the executor's probes, stalled rails' evidence, and for
//               links that cannot see a peer vanish a heartbeat while waiting.
//   aborts, goodbyes: an abort to every peer at once; at the end byes on every
//               live link, awaited until the deadline (briefly after a failure).
// Files: rail_transport.cpp (frames, calls, progress, the end), failover.cpp
// (giving up, notices, reconnecting, the link monitor's changes, stalls).
//
// Left for the flight recorder and trace (issue 31): every per-rail event goes
// through rail_state() and links_changed(), and `heard_at` of the links says
// when a peer last said anything; a hook hangs off those two places.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/transport/transport_settings.hpp"
#include "runtime/transport/link.hpp"
#include "runtime/transport/rails/link_monitor.hpp"
#include "runtime/transport/transport.hpp"

namespace railcoll::rt {

class RailTransport final : public ProcessTransport, private LinkEvents, private FdWatcher {
 public:
  // rail_addr: this rank's rail addresses (the link monitor watches their
  // interfaces; watch_interfaces false: the links report them, as the fake does).
  RailTransport(const TransportSettings& settings, int me, int nranks, std::vector<std::string> rail_addr,
                std::unique_ptr<NodeRoom> node, std::unique_ptr<Links> net, bool watch_interfaces = true);
  ~RailTransport() override;
  RailTransport(const RailTransport&) = delete;
  RailTransport& operator=(const RailTransport&) = delete;

  // ---- ProcessTransport
  std::string contact() const override;
  void connect(const Topology& topo, uint64_t comm_id, const std::string& job, const std::string& tag,
               const std::vector<std::string>& contacts, OutOfBand& oob, double deadline) override;
  std::string describe() const override { return net_->describe(); }

  // ---- Transport
  void attach(FrameSink* sink) override { sink_ = sink; }
  NodeSegment node() const override { return node_->node(); }
  void wake_node_sleepers() override { node_->wake_node_sleepers(); }
  void send(int peer, int rail, const FrameHeader& h, const iovec* payload, size_t n) override;
  bool sends_pending() const override { return node_->sends_pending() || net_->sends_pending(); }
  void hand_over_sends() override { net_->hand_over_sends(); }
  void begin_call() override;
  void end_call() override;
  void progress(double wait_s, const NodeWait* sleep_on) override;
  int rails_up() const override;
  void probe_peers() override;
  bool answered_probe(int peer) const override { return said_[peer].answered; }
  PeerSaid peer_said(int peer) const override { return said_[peer]; }
  void abort_peers(uint64_t call, const std::string& why) override;
  void close(double deadline) override;

 private:
  static constexpr double kRailRetry = 1.0;   // a given-up link is reconnected this often
  static constexpr double kCheckEvery = 0.02;  // the rails' health is looked at this often
  static constexpr double kHeartbeat = 0.5;   // a silent peer is pinged this often (needs_heartbeat)
  static constexpr double kAbortFlush = 0.2;  // after a failure, goodbyes get this long

  // What the rails layer knows of one link (peer, rail) to a peer on another node.
  struct Path {
    bool down = false;       // given up: nothing more is sent on it
    double down_at = 0;
    double retry_at = 0;     // the lower rank reconnects it from then
    bool peer_held = false;  // the peer holds this rail down (RailHold): do not reconnect it
    uint64_t hold_seq = 0;   // the peer's last RailHold notice for this rail
    bool probed = false;     // other rails pinged for evidence the peer is alive (a stall)
    double probe_at = 0;
    double answered_at = 0;  // when another rail first heard from the peer after the probe (0: not yet)
    bool bye = false;        // the peer said goodbye on it
    bool gone = false;       // closed without a goodbye (the peer died), or the last rail lost
  };

  // Frames (rail_transport.cpp).
  Links& links_of(int peer) { return same_node(peer) ? static_cast<Links&>(*node_) : *net_; }
  bool same_node(int peer) const { return topo_.same_node(peer, me_); }
  Path& path(int peer, int rail) { return paths_[peer][rail < 0 ? 0 : rail]; }
  int route(int peer, int rail, bool* moved);
  void send_control(int peer, int rail, Frame type, uint64_t seq = 0, int op = -1, uint64_t offset = 0);
  void control_done(int peer, int rail, const FrameHeader& h, std::vector<char>* text);
  [[noreturn]] void protocol_error(int peer, int rail, const std::string& what) const;
  void advance(double wait_s, const NodeWait* sleep_on);
  void heartbeat(double now);

  // Failover (failover.cpp).
  std::vector<int> other_rails(int peer, int rail) const;
  void rail_state(int rail, int delta, const std::string& why);
  void give_up(int peer, int rail, const std::string& why);
  void rail_down_notice(int peer, int on, const FrameHeader& h);
  void rail_hold_notice(int peer, int on, const FrameHeader& h);
  void tell_hold(int peer, int rail, bool held);
  void start_reconnect(int peer, int rail, double now);
  void link_events(double now);
  void links_changed(double now);
  void check_rails(double now);
  void check_stall(int peer, int rail, double now);

  // LinkEvents (what the links say).
  Landing frame_header(int peer, int rail, const FrameHeader& h, std::vector<iovec>* place) override;
  void frame_done(int peer, int rail, const FrameHeader& h, std::vector<char>* held) override;
  void link_broken(int peer, int rail, const std::string& why, bool whole_peer) override;
  void link_closed(int peer, int rail) override;
  void link_restored(int peer, int rail) override;
  bool may_restore(int peer, int rail) override;
  void interface_changed(int rail, bool running) override;
  // FdWatcher: the link monitor's netlink socket.
  void fd_ready(uint32_t token, uint32_t events) override;

  const double timeout_, rail_timeout_;
  const int me_, n_;
  const std::vector<std::string> rail_addr_;
  std::unique_ptr<NodeRoom> node_;
  std::unique_ptr<Links> net_;
  Topology topo_;
  uint64_t comm_id_ = 0;
  FrameSink* sink_ = nullptr;
  std::vector<std::vector<Path>> paths_;  // [peer][rail] (local peers: [peer][0], their one link)
  std::vector<int> rail_down_count_;      // [rail] links given up on it
  std::vector<PeerSaid> said_;            // [peer] its answer to the last probe
  std::vector<double> heard_at_;          // [peer] last frame from it (heartbeat)
  LinkMonitor links_;                     // this rank's rails' interfaces, and their hold-down
  std::vector<uint64_t> hold_seq_;        // [rail] RailHold notices sent (their seq)
  std::vector<LinkMonitor::Change> link_changes_;  // reused
  double next_check_ = 0, next_heartbeat_ = 0;
  bool in_call_ = false;
  bool closing_ = false;  // close(): frames of calls and aborts are no longer looked at
  bool broken_ = false;   // a call threw, or abort_peers was called: close waits for nobody
};

}  // namespace railcoll::rt
