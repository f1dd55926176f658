// A fake transport: N ranks in one process, each driven by its own thread
// through the real executor. Frames go through in-memory queues (copied at
// send, as if the kernel's buffers were endless), and the ranks of a pretend
// node share a fake node segment: plain memory with the node segment's layout
// (node_shm.hpp). Tests use it to run every algorithm through the executor
// without processes or sockets, and to inject faults the real network makes
// rare: a frame duplicated, altered or held back, a peer that aborts or dies.
//
//   FakeFabric fabric(topo);
//   Executor exec(fabric.transport(r), topo, r, FakeFabric::kCommId, settings);  // one per rank
//   ... each rank's thread: exec.run(plan_r, {send_r, recv_r});
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/topology.hpp"
#include "runtime/transport/transport.hpp"

namespace railcoll::rt {

// A frame on its way: header, the rail it goes on (-1: between local ranks) and its payload.
struct FakeFrame {
  FrameHeader hdr;
  int rail;
  std::vector<char> payload;
};

class FakeTransport;

// A pretend node's segment: plain zeroed memory laid out as the node segment
// (node_shm.hpp), owned by *mem.
NodeSegment fake_node_segment(uint64_t shm_bytes, std::unique_ptr<char, void (*)(void*)>* mem);

class FakeFabric {
 public:
  static constexpr uint64_t kCommId = 0x5241494c46414b45ull;  // "RAILFAKE"
  // shm_bytes: each pretend node's shared buffer.
  explicit FakeFabric(const Topology& topo, uint64_t shm_bytes = 4u << 20);
  ~FakeFabric();
  FakeFabric(const FakeFabric&) = delete;
  FakeFabric& operator=(const FakeFabric&) = delete;

  Transport& transport(int rank);
  const Topology& topo() const { return topo_; }

  // Faults. A tamper sees every frame a rank sends to `to` before it is queued:
  // it may change it, add frames to *extra (sent after it), or return false to
  // drop it. Set before the ranks run.
  using Tamper = std::function<bool(int to, FakeFrame* f, std::vector<FakeFrame>* extra)>;
  void set_tamper(Tamper t) { tamper_ = std::move(t); }
  // Frames to `rank` for which `hold` is true wait in the fabric until
  // open_gate(rank); the others go through.
  void close_gate(int rank, std::function<bool(const FrameHeader&)> hold);
  void open_gate(int rank);
  // The rank's process died: its peers see its connections close without a goodbye.
  void kill(int rank);
  // Frames queued for `rank` and not yet taken by it.
  size_t queued(int rank);

 private:
  friend class FakeTransport;
  struct Inbox {
    std::mutex m;
    std::condition_variable cv;
    std::deque<FakeFrame> frames, gated;
    std::function<bool(const FrameHeader&)> hold;
    bool poked = false;
  };
  void deliver(int to, FakeFrame f);
  void poke(int rank);

  const Topology topo_;
  std::vector<std::unique_ptr<Inbox>> inbox_;
  std::vector<std::unique_ptr<char, void (*)(void*)>> node_mem_;  // per node: header + shared buffer
  std::vector<NodeSegment> segs_;
  std::vector<std::unique_ptr<FakeTransport>> transports_;
  std::unique_ptr<std::atomic<bool>[]> dead_;
  Tamper tamper_;
};

class FakeTransport final : public Transport {
 public:
  FakeTransport(FakeFabric& fabric, int rank);
  void attach(FrameSink* sink) override { sink_ = sink; }
  NodeSegment node() const override;
  void wake_node_sleepers() override;
  void send(int peer, int rail, const FrameHeader& h, const iovec* payload, size_t n) override;
  bool sends_pending() const override { return false; }  // queued means delivered
  void begin_call() override { check_alive(); }
  void end_call() override {}
  void progress(double wait_s, const NodeWait* sleep_on) override;
  int rails_up() const override { return fabric_.topo().rails(); }
  void probe_peers() override;
  bool answered_probe(int peer) const override { return said_[peer].answered; }
  PeerSaid peer_said(int peer) const override { return said_[peer]; }
  void abort_peers(uint64_t call, const std::string& why) override;
  void close(double) override {}

 private:
  void post(int to, Frame type, std::string payload = {}, uint64_t seq = 0);
  void post_pong(int to);
  void receive(FakeFrame& f);
  void check_alive() const;

  FakeFabric& fabric_;
  const int me_;
  FrameSink* sink_ = nullptr;
  std::vector<PeerSaid> said_;  // [peer] its answer to the last probe
  std::deque<FakeFrame> taken_;
  std::vector<iovec> place_;
};

}  // namespace railcoll::rt
