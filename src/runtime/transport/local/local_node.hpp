// The node's room: what a rank shares with the other ranks of its node,
// whichever kind of network link carries the rest (tcp/, ofi/).
//   * the node's POSIX shared-memory segment (node_shm.hpp: counters, call
//     words, the shared buffer), which the executor reads and writes directly;
//   * one Unix socket per local peer (abstract names, admitted through the door
//     with the job key), carrying the frames between ranks of the node: the
//     local links (rail -1) of the rails layer;
//   * the rank's one wait: an epoll set holding the local sockets and every fd
//     a network link or the link monitor joins to it (Waits), and sleeping:
//       - on the network (a wait for frames, or for sends to drain): in epoll_wait;
//       - on a node counter while frames are still expected: in epoll_wait too,
//         having said in the node segment which counter and value it waits for
//         (NodeSleeper::want), so the local rank that raises it that far sends
//         it one Wake frame (wake_node_sleepers);
//       - on a node counter with nothing expected from the network (most ranks
//         of an SMP algorithm most of the time): on a futex in the node segment,
//         woken by exactly the rank whose increment ends the wait; every
//         kQuietSleep s the sockets are looked at anyway (an abort, a ping, a
//         peer gone).
// Measured against the poll() round this replaced: docs/runtime.md, "The
// latency path".
#pragma once
#include <sys/epoll.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/topology.hpp"
#include "runtime/transport/transport_settings.hpp"
#include "runtime/transport/link.hpp"
#include "runtime/transport/stream/door.hpp"
#include "runtime/transport/stream/frame_stream.hpp"

namespace railcoll::rt {

class LocalNode final : public NodeRoom, private FdWatcher {
 public:
  LocalNode(const TransportSettings& settings, int me, int nranks);
  ~LocalNode() override;
  LocalNode(const LocalNode&) = delete;
  LocalNode& operator=(const LocalNode&) = delete;

  // ---- Links (rail -1)
  void attach(LinkEvents* ev) override { ev_ = ev; }
  std::string contact() const override;
  // The lower rank of a pair connects, the higher accepts through the door;
  // then the node's segment is mapped (two exchanges on the set-up's oob).
  void connect(const LinkSetup& s, double deadline) override;
  std::string describe() const override { return "local"; }
  void send(int peer, int rail, OutFrame f) override;
  void send_urgent(int peer, int rail, const OutFrame& f) override;
  bool sends_pending() const override;
  void end_call() override;
  void drive(double now) override;
  // Local links never fail over: nothing to give up or reconnect.
  LinkSigns signs(int, int) override { return {}; }
  GivenUp give_up(int, int) override { return {}; }
  void peer_gave_up(int, int, uint64_t) override {}
  bool closed(int peer, int) const override;
  bool reconnect(int, int, double) override { return false; }
  bool reconnecting(int, int) const override { return false; }
  void stop_reconnect(int, int) override {}
  void goodbye(double deadline) override;

  // ---- NodeRoom
  NodeSegment node() const override { return seg_; }
  void wake_node_sleepers() override;
  void wait(double wait_s, const NodeWait* sleep_on, bool futex) override;
  void unmap() override;
  void watch(int fd, uint32_t events, FdWatcher* w, uint32_t token) override;
  void unwatch(int fd) override;

 private:
  void fd_ready(uint32_t token, uint32_t events) override;
  void poll_once(double wait_s);
  void sleep_on_bell(double wait_s, const NodeWait& w);
  void write(FrameStream& c);
  static uint64_t want_of(const NodeWait& w, bool futex);

  const std::string job_key_;
  const uint64_t shm_bytes_;
  const int me_, n_;
  const std::string nonce_;  // proves a Hello is for this communicator
  Door door_;
  Topology topo_;
  uint64_t comm_id_ = 0;
  LinkEvents* ev_ = nullptr;
  std::vector<FrameStream> conns_;    // one per local peer
  std::vector<int> conn_of_;          // [rank] -> index in conns_, -1
  std::vector<std::pair<int, int>> local_peers_;  // (rank, local rank) of the other ranks of this node
  NodeSegment seg_;
  int epoll_fd_ = -1;
  std::vector<FdWatcher*> watchers_;  // epoll data: (index here << 32) | token
  std::vector<epoll_event> events_;
};

}  // namespace railcoll::rt
