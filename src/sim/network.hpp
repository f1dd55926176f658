// The network side of the simulator: every NIC's DMA engines, the host bus it
// sits on, its link to the switch, and the links of a fat tree (docs/simulator.md,
// "Transfers").
//
// A transfer is handed to its NIC at some time; it takes the NIC's first free DMA
// engine, pays the engine's start-up, then its bytes flow through a pipeline of
// resources: the sender's bus (a DMA read), its NIC's link to the first switch,
// the up and down links of a fat tree, the receiver's link, the receiver's bus (a
// DMA write). Each resource is busy for bytes / its own rate per transfer, in
// the order the transfers are handed to the network (a transfer whose bytes
// reach a resource later than it falls idle leaves a hole there, which later
// requests use first); a transfer's bytes leave a stage no earlier than
// they arrived from the previous one (cut-through), so the slowest stage sets the
// rate and a busy stage delays everything behind it. Nothing here is random.
#pragma once
#include <cstdint>
#include <vector>

#include "sim/machine.hpp"

namespace railcoll::sim {

// splitmix64: the same random stream on every platform for a seed.
inline uint64_t next_random(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
// Uniform in [0, 1).
inline double next_uniform(uint64_t& state) { return static_cast<double>(next_random(state) >> 11) * 0x1.0p-53; }

class Network {
 public:
  // `nodes` nodes (numbered as in the machine), `rails` NICs each; `seed`
  // draws where in another transfer's packet a hardware packet arrives.
  Network(const Machine& m, int nodes, int rails, uint64_t seed = 1);

  struct Times {
    double left;    // the sender's memory has been read (its source may be reused)
    double arrive;  // the last byte is in the receiver's memory
  };
  // A transfer of `bytes` from node a to node b on `rail`, handed to a's NIC at t.
  // a == b is a NIC loopback (it crosses a's bus twice).
  // `host_bus` false: the buffers are in NIC memory (seed 004 §3.1.2, the Elan
  // memory allocator), so the bytes cross no host bus on either end.
  Times transfer(int a, int b, int rail, double t, uint64_t bytes, bool host_bus = true);

  // The hardware multicast (seed 004 §2.3.1, seed 003 §4.1): a DMA of `bytes`
  // from node a's memory, one injection from its NIC on `rail`, up the fat
  // tree's fixed leftmost path to the switch whose subtree spans nodes [lo, hi]
  // (a among them), replicated down to every node of that range; node n's bus
  // takes writes[n - lo] DMA writes. The switches replicate in lockstep, so
  // every node has the bytes at `arrive`; the acknowledgements, combined by the
  // switches, are back at a's NIC at `acked`, and only then can the next
  // multicast on the rail pass the root switch (seed 004 §2.3.1: multicasts are
  // serialized there).
  struct MulticastTimes {
    double left;    // the source's memory has been read
    double arrive;  // the last byte is in the last destination's memory (or NIC)
    double acked;   // the combined acknowledgement is back at the source's NIC
  };
  MulticastTimes multicast(int a, int lo, int hi, int rail, double t, uint64_t bytes, const std::vector<int>& writes,
                           bool host_bus = true);
  // The hardware barrier's test-and-set (seed 004 §4.1): a packet node a's NIC
  // sends itself (no DMA, no source bus) over the same path; every node's NIC
  // reads the sequence number its processes wrote in host memory and answers;
  // `acked`: the combined answer is back at a's NIC.
  MulticastTimes test_and_set(int a, int lo, int hi, int rail, double t);

  // A resource: busy until `free`, and idle in [hole_from, hole_to) before that
  // (the latest gap a reservation left; keeping one is enough for the common
  // case, a send slipping in before a receive booked for a little later).
  struct Queue {
    double free = 0, hole_from = 0, hole_to = 0;
  };
  // A NIC link's token bucket (Machine::link_burst_bytes): `tokens` at time `at`.
  struct Bucket {
    double tokens = 0, at = 0;
  };
  struct Head {
    double start, end;  // when the first byte entered the current stage, and the last left it
  };

 private:
  int choose_up(long link0, double head) const;
  // The NIC's first free DMA engine.
  double* free_engine(long nic);
  // multicast() and test_and_set(): `dma` (the bytes come from host memory
  // through a DMA engine) or a packet of the NIC's own; `check_host`: every
  // node's NIC reads a word of host memory before it answers.
  MulticastTimes replicate(int a, int lo, int hi, int rail, double t, uint64_t bytes, const std::vector<int>& writes,
                           bool dma, bool check_host, bool host_bus);

  const Machine& m_;
  int nodes_, rails_, arity_ = 1, levels_ = 1;
  std::vector<double> engines_;          // per NIC x dma_engines: free from
  std::vector<Queue> bus_read_;          // per bus: reads (sends); the same queue as writes when half duplex
  std::vector<Queue> bus_write_own_;     // per bus: writes (receives), full duplex only
  std::vector<Queue>* bus_write_;        // bus_read_ (half duplex) or bus_write_own_
  std::vector<Queue> nic_up_, nic_down_;  // per NIC: its link to the switch, each direction
  std::vector<Bucket> up_bucket_, down_bucket_;  // per NIC, with link_burst_bytes only
  // The time `bytes` keep a NIC link whose head is ready at `ready`: the bytes
  // the bucket holds then pass at once, the rest at the link's rate.
  double link_time(Queue& q, std::vector<Bucket>& buckets, long nic, double ready, double bytes);
  std::vector<Queue> tree_up_, tree_down_;  // fat tree: per rail, level, lower switch, up port
  std::vector<long> span_;               // arity^l
  std::vector<long> level_first_;        // first link of level l (l >= 1) within a rail
  long links_per_rail_ = 0;
  // Per level l and node: node / arity^l, and the up port d-mod-k routing takes
  // at level l towards that node, (node / arity^(l-1)) % arity (no divisions per transfer).
  std::vector<int> group_, digit_;
  std::vector<double> multicast_root_;  // per rail: the root switch is free for the next multicast
  uint64_t random_;
};

}  // namespace railcoll::sim
