// Fake links with rails: N ranks in one process, each a real RailTransport
// (the rails layer, rails/rail_transport.hpp) over a fake node room and fake
// network links, driven by its own thread through the real executor. Rails
// can be cut and mended while calls run, so failover is tested in one process:
// a rail lost mid-call, a flapping rail (held down), every rail to a peer lost.
//
// What a link does here, as TCP would: a frame goes into the peer's inbox
// (its kernel) when both ends' interfaces of the rail are up; otherwise it
// waits in the sender's queue, showing no sign of delivery (a stall). Taken
// from the inbox is delivered; give_up takes back what the peer has not taken.
// A cut tells the ranks of the node (their link monitor's news, at once)
// unless it is silent: then only the silence shows it (RAILCOLL_RAIL_TIMEOUT).
// The lower rank reconnects a given-up link with a hello the peer answers.
//
//   FakeRails net(topo, settings);
//   Executor exec(net.transport(r), topo, r, FakeRails::kCommId, settings);  // one per rank
//   net.cut(1, 1);  ...  net.mend(1, 1);                                    // any thread
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/topology.hpp"
#include "runtime/transport/transport_settings.hpp"
#include "runtime/transport/transport.hpp"

namespace railcoll::rt {

class RailTransport;

class FakeRails {
 public:
  static constexpr uint64_t kCommId = 0x5241494c52414c53ull;  // "RAILRALS"
  FakeRails(const Topology& topo, const TransportSettings& settings, uint64_t shm_bytes = 4u << 20);
  ~FakeRails();
  FakeRails(const FakeRails&) = delete;
  FakeRails& operator=(const FakeRails&) = delete;

  Transport& transport(int rank);
  const Topology& topo() const { return topo_; }

  // Faults, from any thread. Node `node`'s interface of `rail` loses its link
  // (nothing crosses it either way) and its ranks are told, or not (silent).
  void cut(int node, int rail, bool silent = false);
  void mend(int node, int rail);

  // ---- for the links (fake_links.cpp)
  struct Item {
    enum Kind : uint8_t { Frame, Hello, HelloAck, Interface } kind = Frame;
    int from = -1, rail = -1;
    FrameHeader hdr{};
    std::vector<char> payload;
    bool running = false;  // Interface
  };
  struct Box {  // one rank's inbox: frames of local peers, of the network
    std::mutex m;
    std::condition_variable cv;
    std::deque<Item> local, net;
    bool poked = false;
  };
  Box& box(int rank) { return *boxes_[rank]; }
  void post(int to, Item item, bool local);
  void poke(int rank);
  // Whether rail `rail` carries frames between the nodes of a and b now.
  bool carries(int a, int b, int rail) const;
  // Frames from `from` to `to` on `rail` in to's inbox, and taken from it (so
  // delivered), as counters the sender reads for its signs.
  std::atomic<uint64_t>& in_box(int from, int to, int rail) { return counters_[index(from, to, rail)].in_box; }
  std::atomic<uint64_t>& taken(int from, int to, int rail) { return counters_[index(from, to, rail)].taken; }
  NodeSegment segment(int node) const { return segs_[node]; }

 private:
  struct Counters {
    std::atomic<uint64_t> in_box{0}, taken{0};
  };
  void tell_interface(int node, int rail, bool running);
  size_t index(int from, int to, int rail) const {
    return (static_cast<size_t>(from) * topo_.nranks() + to) * topo_.rails() + rail;
  }

  const Topology topo_;
  std::vector<std::unique_ptr<Box>> boxes_;
  std::unique_ptr<Counters[]> counters_;
  std::unique_ptr<std::atomic<bool>[]> up_;  // [node * rails + rail] its interface has its link
  std::vector<std::unique_ptr<char, void (*)(void*)>> node_mem_;
  std::vector<NodeSegment> segs_;
  std::vector<std::unique_ptr<RailTransport>> transports_;
};

}  // namespace railcoll::rt
