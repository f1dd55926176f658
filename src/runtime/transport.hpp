// The connections of a communicator: one TCP socket per (peer, rail) between
// nodes, one Unix socket per local peer; how they are made at set-up, the door
// that accepts and authenticates them (then and on reconnects), rail failover,
// and the goodbye at the end. Kept apart from comm.cpp, which is the progress
// engine and a call: this is what keeps the sockets there and usable. The
// members are defined in transport.cpp (set-up, the door, goodbye) and
// failover.cpp (rails given up, resent and reconnected).
#pragma once
#include <poll.h>
#include <sys/uio.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/topology.hpp"
#include "runtime/bootstrap.hpp"
#include "runtime/wire.hpp"

namespace railcoll::rt {

struct SendItem {
  FrameHeader hdr;
  std::vector<iovec> iov;  // payload pieces (memory stays valid until the call ends)
  std::string owned;       // payload owned by the item (Abort text)
  size_t done = 0;         // bytes of header+payload already written
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
  // receive state
  FrameHeader hdr{};
  size_t hdr_got = 0;
  bool in_payload = false;
  std::vector<iovec> dst;   // where the payload goes
  size_t payload_got = 0;
  std::vector<char> buffer;  // held, text or dropped payloads
  enum { Direct, Hold, Text, Drop } mode = Direct;
  // Rail failover (TCP only): Data and Notify frames stay in `unacked` after
  // they are written until the peer's kernel has acknowledged their last byte
  // (written - SIOCOUTQ >= end), so they can be sent again on another rail if
  // this one breaks or stalls. No acknowledgement frames: the kernel's do.
  bool down = false;               // given up: nothing more is sent on it; traffic on the other rails
  std::deque<SendItem> unacked;
  uint64_t written = 0, nread = 0;  // bytes through this connection each way
  bool told = false;               // our RailDown for it went to the peer
  int64_t drain_to = -1;           // the peer's RailDown: read this many bytes, then close
  double quiet_since = 0;          // last sign the rail moves our bytes (SIOCOUTQ dropped)
  double heard_at = 0;             // last byte received on it
  int outq = -1;                   // bytes in the kernel's send queue at the last look
  bool probed = false;             // other rails pinged for evidence the peer is alive
  double probe_at = 0;
  double down_at = 0;
  uint32_t generation = 1;         // connections made for this (peer, rail); in the Hello's seq
  double retry_at = 0;             // the lower rank reconnects a down rail from then
  bool connecting = false;
  double connect_until = 0;
  std::string name() const {
    return "rank " + std::to_string(peer) + (rail >= 0 ? " (rail " + std::to_string(rail) + ")" : " (same node)");
  }
};

// Frames that rail failover keeps until the peer's kernel has acknowledged them.
inline bool tracked(uint16_t type) {
  return type == static_cast<uint16_t>(Frame::Data) || type == static_cast<uint16_t>(Frame::Notify);
}

// The communicator's sockets and who is on the other end of each. The
// communicator (Comm::Impl in comm.cpp) derives from it and supplies the three
// hooks at the end: failing the call, the header of a frame of the current
// call, and reading what arrived on a connection.
struct Transport {
  // Who this rank is (filled in by the communicator's set-up), then its sockets.
  Bootstrap boot;
  Topology topo;
  int me = 0, N = 1, node = 0;
  std::vector<std::string> rail_addr;
  uint64_t comm_id = 0;
  std::vector<Conn> conns;                       // all connections
  std::vector<std::vector<int>> conn_of;         // [peer][rail or 0 for local] -> index in conns
  std::vector<int> listen_fds;  // one per rail, then the Unix one; open during set-up
  std::string listen_nonce;     // proves a Hello is for this communicator (in the store)
  std::vector<std::vector<std::string>> peer_addr;  // [peer][rail] "host:port" of its listener
  std::vector<std::string> peer_nonce;              // [peer] its listen nonce (for reconnect Hellos)
  std::vector<int> rail_down_count;                 // [rail] connections given up on it
  double next_rail_check = 0;

  Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;
  virtual ~Transport();

  // ------------------------------------------------------------ set-up (transport.cpp)
  void connect_peers(const std::vector<std::vector<std::string>>& fields, const std::string& uds_prefix,
                     double deadline);
  void add_conn(int fd, int peer, int rail);
  std::string hello_frame(int peer, int rail, uint32_t generation, const std::string& nonce) const;

  // ------------------------------------------------------------ the door (transport.cpp)
  struct Pending {
    int fd;
    bool tcp;
    double until;
    std::string in;
  };
  std::vector<Pending> pending;

  void refuse(Pending& q, const std::string& why);
  std::string hello_problem(const Pending& q, FrameHeader& h);
  bool examine(Pending& q, double now, bool last);
  bool accept_new(size_t i, double now);
  int serve_door(const std::vector<pollfd>& p, size_t at, double now);
  void accept_peers(int expected, double deadline);

  // ------------------------------------------------------------ rail failover (failover.cpp)
  static constexpr double kRailRetry = 1.0;

  std::vector<Conn*> other_rails(const Conn& c);
  void rail_state(int rail, int delta, const std::string& why);
  uint64_t release_confirmed(Conn& c);
  void keep_unconfirmed();
  std::vector<SendItem> take_frames(Conn& c);
  void reset_stream(Conn& c, double now);
  void rail_failed(Conn& c, const std::string& why);
  void close_if_drained(Conn& c);
  void reconnected(Conn& c, int fd, double now);
  Conn& route(int peer, int rail, bool* moved);
  void start_reconnect(Conn& c, double now);
  void finish_connect(Conn& c, double now);
  void check_rails(double now);

  // ------------------------------------------------------------ the end (transport.cpp)
  void goodbye(double deadline);

  // ------------------------------------------------------------ supplied by the communicator
  // Marks the communicator broken, tells every peer (unless tell_peers is false) and throws.
  [[noreturn]] virtual void fail(Status code, const std::string& msg, bool tell_peers = true) = 0;
  // A frame header of this rank in the current call.
  virtual FrameHeader header(Frame type, int op) const = 0;
  // Reads what has arrived on c and acts on it.
  virtual void drive_recv(Conn& c) = 0;
};

}  // namespace railcoll::rt
