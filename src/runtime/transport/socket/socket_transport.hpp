// The transport of real processes: one TCP socket per (peer, rail) between
// nodes, each bound to its rail's address; one Unix socket per local peer; the
// node's POSIX shared-memory segment. Rail failover lives inside it: the
// executor above never learns that a rail went down.
//
// Its members are defined by topic:
//   socket_transport.cpp  set-up (listeners, connections, the node segment),
//                         sending, probes, aborts and the goodbye at the end
//   stream.cpp            frames on one connection: writing the queue,
//                         reading headers and payloads, the transport's own frames
//   progress.cpp          one round over the epoll set of every socket, and
//                         sleeping: in epoll, or on a futex in the node segment
//   failover.cpp          rails given up, their frames resent, reconnected,
//                         held down after their link was lost (link_monitor.hpp)
//   door.cpp              (class Door) admitting connections that prove the job key
#pragma once
#include <poll.h>
#include <sys/epoll.h>
#include <sys/uio.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "core/topology.hpp"
#include "runtime/transport/transport_settings.hpp"
#include "runtime/transport/socket/door.hpp"
#include "runtime/transport/socket/link_monitor.hpp"
#include "runtime/transport/transport.hpp"

namespace railcoll::rt {

class OutOfBand;

class SocketTransport final : public ProcessTransport {
 public:
  // Opens this rank's rail listeners (one per rail address, bound to it).
  // local_only: connects only the ranks of this node (another transport, the
  // libfabric one, carries the rest and owns this one for its node part).
  SocketTransport(const TransportSettings& settings, int me, int nranks, std::vector<std::string> rail_addr,
                  bool local_only = false);
  ~SocketTransport() override;
  SocketTransport(const SocketTransport&) = delete;
  SocketTransport& operator=(const SocketTransport&) = delete;

  // What a peer needs to connect to this rank (opaque bytes for the set-up
  // exchange, as Gloo's Pair::address()): the rail listeners and a fresh nonce.
  std::string contact() const override;
  // After the exchange: connections to every peer (the lower rank of a pair
  // connects, the higher accepts through the door), then the node's segment.
  // job and tag (hex, unique per communicator) name the local sockets and the
  // segment; contacts: every rank's contact(); oob: the exchange, for the node
  // segment's barriers.
  void connect(const Topology& topo, uint64_t comm_id, const std::string& job, const std::string& tag,
               const std::vector<std::string>& contacts, OutOfBand& oob, double deadline) override;
  std::string describe() const override { return "tcp"; }
  // Another file descriptor whose readiness ends a sleep in progress() (the
  // libfabric transport's completion queues); what it says is read by its owner.
  void also_watch(int fd);

  // ---- Transport
  void attach(FrameSink* sink) override { sink_ = sink; }
  NodeSegment node() const override { return seg_; }
  void wake_node_sleepers() override;
  void send(int peer, int rail, const FrameHeader& h, const iovec* payload, size_t n) override;
  bool sends_pending() const override;
  void hand_over_sends() override;
  void begin_call() override;
  void end_call() override;
  void progress(double wait_s, const NodeWait* sleep_on) override;
  int rails_up() const override;
  void probe_peers() override;
  bool answered_probe(int peer) const override { return answered_[peer] != 0; }
  void abort_peers(uint64_t call, const std::string& why) override;
  void close(double deadline) override;

 private:
  struct SendItem {
    FrameHeader hdr;
    std::vector<iovec> iov;  // payload pieces, read in place (valid until the call ends)
    std::string owned;       // payload the item owns (copied when the call ended)
    size_t done = 0;         // bytes of header + payload written
    uint64_t end = 0;        // TCP: the connection's byte count once it is all written
    size_t total() const {
      size_t n = sizeof hdr + owned.size();
      for (auto& v : iov) n += v.iov_len;
      return n;
    }
  };

  struct Conn {
    int fd = -1;
    int peer = -1;
    int rail = -1;  // -1: the Unix socket to a local peer
    bool closed = false, bye = false;
    std::deque<SendItem> out;
    // Receiving: a header, then its payload into `dst`.
    FrameHeader hdr{};
    size_t hdr_got = 0;
    bool in_payload = false;
    enum { Place, Hold, Text, Drop } mode = Place;
    std::vector<iovec> dst;
    size_t payload_got = 0;
    std::vector<char> buffer;  // held, text or dropped payloads
    // Rail failover (TCP only): Data and Notify frames stay in `unacked` after
    // they are written until the peer's kernel has acknowledged their last byte
    // (written - SIOCOUTQ >= end), so they can be sent again on another rail if
    // this one breaks or stalls. No acknowledgement frames: the kernel's do.
    bool down = false;  // given up: nothing more is sent on it
    std::deque<SendItem> unacked;
    uint64_t written = 0, nread = 0;  // bytes through this connection each way
    bool told = false;                // our RailDown for it went to the peer
    int64_t drain_to = -1;            // the peer's RailDown: read this many bytes, then close
    double quiet_since = 0;           // last sign the rail moves our bytes (SIOCOUTQ dropped)
    double heard_at = 0;              // last byte received on it
    int outq = -1;                    // bytes in the kernel's send queue at the last look
    bool probed = false;              // other rails pinged for evidence the peer is alive
    double probe_at = 0;
    double down_at = 0;
    uint32_t generation = 1;  // connections made for this (peer, rail); the Hello's seq
    double retry_at = 0;      // the lower rank reconnects a down rail from then
    bool connecting = false;
    double connect_until = 0;
    // The epoll set (progress.cpp): the fd registered for it (edge-triggered),
    // and what its last events said: bytes may be there to read (until a
    // read says EAGAIN), the socket takes more (until a write says EAGAIN).
    int ep_fd = -1;
    bool can_read = false, can_write = true;
    bool unsent_unlimited = false;  // hand_over_sends lifted the unsent limit until the next call
    bool peer_held = false;  // the peer holds this rail down (RailHold): do not reconnect it
    uint64_t hold_seq = 0;   // the peer's last RailHold notice for this rail
    std::string name() const { return link_name(peer, rail); }
  };

  // Set-up and the end (socket_transport.cpp).
  FrameHeader header(Frame type) const { return make_header(type, comm_id_, me_); }
  std::string hello_frame(int peer, int rail, uint32_t generation, const std::string& nonce) const;
  void connect_peers(const std::vector<std::vector<std::string>>& contact_fields, const std::string& job,
                     const std::string& tag, double deadline);
  void accept_peers(int expected, double deadline);
  bool admit(const Door::Admitted& a, double now);
  void add_conn(int fd, int peer, int rail);
  // A rail socket's unsent limit (TransportSettings); its congestion control is set
  // before it connects (tcp_listen, tcp_connect).
  void tune_rail(int fd) const;
  void queue(Conn& c, Frame type, int op = -1);
  void goodbye(double deadline);

  // The round and sleeping (progress.cpp).
  void watch_connections();
  void round(double wait_s);
  void serve_door(double now);
  void sleep_on_bell(double wait_s, const NodeWait& w);
  static uint64_t want_of(const NodeWait& w, bool futex);
  void forget_registration(Conn& c) { c.ep_fd = -2, rewatch_ = true; }  // its fd was replaced: register it again

  // Frames on one connection (stream.cpp).
  void drive_sends(Conn& c);
  void drive_recv(Conn& c);
  bool took(Conn& c, ssize_t r, size_t want);
  void on_header(Conn& c);
  void on_payload_done(Conn& c);
  void on_eof(Conn& c);
  [[noreturn]] void protocol_error(const Conn& c, const std::string& what) const;

  // Rail failover (failover.cpp).
  static constexpr double kRailRetry = 1.0;
  // Frames kept until acknowledged and moved when their rail fails.
  static bool tracked(uint16_t type) {
    return type == static_cast<uint16_t>(Frame::Data) || type == static_cast<uint16_t>(Frame::Notify) ||
           type == static_cast<uint16_t>(Frame::RailHold);
  }
  Conn& route(int peer, int rail, bool* moved);
  std::vector<Conn*> other_rails(const Conn& c);
  void rail_state(int rail, int delta, const std::string& why);
  uint64_t release_confirmed(Conn& c);
  void keep_unconfirmed();
  std::vector<SendItem> take_frames(Conn& c);
  void reset_stream(Conn& c, double now);
  void rail_failed(Conn& c, const std::string& why);
  void rail_down_notice(Conn& on, const FrameHeader& h);
  void close_if_drained(Conn& c);
  void reconnected(Conn& c, int fd, double now);
  void start_reconnect(Conn& c, double now);
  void finish_connect(Conn& c, double now);
  void check_rails(double now);
  void abort_connect(Conn& c);
  void link_events(double now);
  void links_changed(double now);
  void tell_hold(Conn& c, bool held);
  void rail_hold_notice(Conn& on, const FrameHeader& h);
  bool held_here(const Door::Admitted& a);

  const std::string job_key_;
  const double timeout_, rail_timeout_;
  const uint64_t shm_bytes_;
  const int notsent_lowat_;
  const std::string tcp_congestion_;
  const int me_, n_;
  const bool local_only_;
  const std::vector<std::string> rail_addr_;
  std::vector<int> rail_port_;
  const std::string listen_nonce_;  // proves a Hello is for this communicator
  Topology topo_;
  int node_ = 0;
  uint64_t comm_id_ = 0;
  Door door_;
  std::vector<Conn> conns_;                          // all connections
  std::vector<std::vector<int>> conn_of_;            // [peer][rail, or 0 for local] -> index in conns_
  std::vector<std::vector<std::string>> peer_addr_;  // [peer][rail] "host:port" of its listener
  std::vector<std::string> peer_nonce_;              // [peer] its nonce (for reconnect Hellos)
  std::vector<int> rail_down_count_;                 // [rail] connections given up on it
  double next_rail_check_ = 0;
  std::vector<char> answered_;  // [peer] answered the last liveness probe
  LinkMonitor links_;           // this rank's rails' links, and their hold-down
  std::vector<uint64_t> hold_seq_;                  // [rail] RailHold notices sent (their seq)
  std::vector<LinkMonitor::Change> link_changes_;  // reused
  NodeSegment seg_;
  FrameSink* sink_ = nullptr;
  int epoll_fd_ = -1;                     // every connection, edge-triggered (progress.cpp)
  std::vector<int> also_watched_;         // also_watch(): joined the set when it is made
  bool rewatch_ = true;                   // a connection's fd may have changed since the set was made
  std::vector<struct epoll_event> events_;  // reused by every progress round
  std::vector<pollfd> door_fds_;          // the door's listeners and half-open connections, looked at
  double next_door_check_ = 0;            //   every kDoorEvery s
  std::vector<Door::Admitted> admitted_;  // likewise reused
  std::vector<std::pair<int, int>> local_peers_;  // (rank, local rank) of the other ranks of this node
};

}  // namespace railcoll::rt
