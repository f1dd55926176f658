// The simulator: runs a schedule (the same object the verifier proves and the
// runtime executes) in virtual time on a modeled machine.
//
// Model (deterministic; documented in docs/simulator.md):
//  * every operation is an event at its rank's local time, taken from one
//    min-heap (ties by insertion order), so shared resources are claimed in time
//    order;
//  * a put costs its issuer send_overhead; each part (one per rail when striped)
//    holds the sending NIC port of that rail for max(gap, bytes/bw), bw =
//    min(link, PCI), then the receiving NIC port of the destination node for
//    bytes/bw, cut-through, after wire_latency + hop_latency per extra switch;
//    the put is delivered when its last part is, plus recv_overhead; a put to a
//    rank of the same node goes through the NIC loopback (intranode_put = nic)
//    or is a shared-memory copy (shm);
//  * a copy runs at copy_MBps but the node's copies share membus_MBps;
//  * a signal inside a node takes flag_latency; elsewhere it is a 0-byte put;
//  * a wait releases its rank when the counter reaches the value; a flush when
//    the rank's puts have left its NIC ports.
// Not modeled yet: link contention inside a fat tree (only hop latency), DMA
// engine concurrency beyond the port's bandwidth, hardware multicast/barrier,
// background traffic.
#pragma once
#include <vector>

#include "core/schedule.hpp"
#include "sim/machine.hpp"

namespace railcoll::sim {

struct SimResult {
  std::vector<double> finish_us;  // per rank, all ranks start at 0
  double max_us = 0, avg_us = 0, min_us = 0;
  uint64_t events = 0;
};

// Throws InputError when the topology does not fit the machine (more nodes,
// ranks per node or rails than it has).
void check_fits(const Topology& t, const Machine& m);
// Checks the fit, then runs.
SimResult simulate(const Schedule& s, const Machine& m);

}  // namespace railcoll::sim
