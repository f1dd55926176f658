// TCP links: one socket per (peer, rail) to every rank on another node, each
// bound to its rail's address (RAILCOLL_RAILS), frames over it as a stream
// (stream/frame_stream.hpp). Only the mechanics; the rails layer above decides
// (rails/rail_transport.hpp).
//   set-up     the lower rank of a pair connects, the higher accepts through
//              the door (a Hello proving the job key); the rail listeners stay
//              open, so a given-up rail is reconnected there
//   delivery   frames that move with a rail stay after they are written until
//              the peer's kernel has acknowledged their last byte (written -
//              SIOCOUTQ >= end): no acknowledgement frames, the kernel's do;
//              the send queue shrinking is the sign a rail delivers
//   giving up  what the peer's kernel acknowledged is where the link ends for
//              the peer (the RailDown's offset): it reads that far and closes;
//              everything after goes again on another rail
//   reconnect  a new connection with a higher generation replaces the old one
//   pacing     RAILCOLL_NOTSENT_LOWAT (TCP_NOTSENT_LOWAT) per rail socket, lifted
//              for a call's last frames; RAILCOLL_TCP_CONGESTION before connecting
#pragma once
#include <poll.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/topology.hpp"
#include "runtime/transport/transport_settings.hpp"
#include "runtime/transport/link.hpp"
#include "runtime/transport/stream/door.hpp"
#include "runtime/transport/stream/frame_stream.hpp"

namespace railcoll::rt {

class TcpLinks final : public Links, private FdWatcher {
 public:
  // Opens this rank's rail listeners (one per rail address, bound to it).
  TcpLinks(const TransportSettings& settings, int me, int nranks, std::vector<std::string> rail_addr);
  ~TcpLinks() override;
  TcpLinks(const TcpLinks&) = delete;
  TcpLinks& operator=(const TcpLinks&) = delete;

  void attach(LinkEvents* ev) override { ev_ = ev; }
  // The rail listeners and a fresh nonce (Gloo's Pair::address()).
  std::string contact() const override;
  void connect(const LinkSetup& s, double deadline) override;
  std::string describe() const override { return "tcp"; }

  void send(int peer, int rail, OutFrame f) override;
  void send_urgent(int peer, int rail, const OutFrame& f) override;
  bool sends_pending() const override;
  void hand_over_sends() override;
  void begin_call() override;
  void end_call() override;

  double before_wait(double wait_s) override;
  void drive(double now) override;

  LinkSigns signs(int peer, int rail) override;
  GivenUp give_up(int peer, int rail) override;
  void peer_gave_up(int peer, int rail, uint64_t end) override;
  bool closed(int peer, int rail) const override { return conn(peer, rail).closed; }
  bool reconnect(int peer, int rail, double now) override;
  bool reconnecting(int peer, int rail) const override { return conn(peer, rail).connecting; }
  void stop_reconnect(int peer, int rail) override;
  void goodbye(double deadline) override;

 private:
  static constexpr double kConnectFor = 1.0;  // a reconnect not made by then is dropped
  static constexpr double kDoorEvery = 0.01;  // the door's fds: looked at every 10 ms

  struct Conn : FrameStream {
    bool down = false;        // given up here: nothing more is sent on it
    int64_t drain_to = -1;    // where the peer says it ends (its RailDown): read that far, then close
    uint32_t generation = 1;  // connections made for this (peer, rail); the Hello's seq
    bool connecting = false;
    double connect_until = 0;
    int outq = -1;            // bytes in the kernel's send queue at the last look (-1: idle)
    uint64_t confirmed_seen = 0;  // bytes the peer had acknowledged at the last look
    double moving_at = 0;     // last sign the rail moves our bytes (more acknowledged)
    bool unsent_unlimited = false;  // hand_over_sends lifted the unsent limit until the next call
  };

  Conn& conn(int peer, int rail) { return conns_[conn_of_[peer][rail]]; }
  const Conn& conn(int peer, int rail) const { return conns_[conn_of_[peer][rail]]; }
  void fd_ready(uint32_t token, uint32_t events) override;
  void watch_connections();
  void write(Conn& c);
  void on_closed(Conn& c, const std::string& error);
  uint64_t release_confirmed(Conn& c);
  void close_if_drained(Conn& c);
  bool admit(const Door::Admitted& a, double now);
  void reconnected(Conn& c, int fd, double now);
  void restored(Conn& c, int fd, double now);
  void finish_connect(Conn& c, double now);
  void abort_connect(Conn& c);
  void serve_door(double now);
  void tune(int fd) const;

  const std::string job_key_;
  const int notsent_lowat_;
  const std::string tcp_congestion_;
  const int me_, n_;
  const std::vector<std::string> rail_addr_;
  std::vector<int> rail_port_;
  const std::string listen_nonce_;  // proves a Hello is for this communicator
  Door door_;
  Topology topo_;
  uint64_t comm_id_ = 0;
  LinkEvents* ev_ = nullptr;
  Waits* waits_ = nullptr;
  std::vector<Conn> conns_;                          // every link
  std::vector<std::vector<int>> conn_of_;            // [peer][rail] -> index in conns_
  std::vector<std::vector<std::string>> peer_addr_;  // [peer][rail] "host:port" of its listener
  std::vector<std::string> peer_nonce_;              // [peer] its nonce (for reconnect Hellos)
  bool rewatch_ = true;  // a connection's fd may have changed since the set was made
  std::vector<pollfd> door_fds_;
  std::vector<Door::Admitted> admitted_;
  double next_door_check_ = 0;
};

}  // namespace railcoll::rt
