// The simulator: runs a schedule (the same object the verifier proves and the
// runtime executes) in virtual time on a modeled machine.
//
// Model (deterministic for a given seed; documented in docs/simulator.md):
//  * every operation is an event at its rank's local time, taken from one
//    min-heap (ties by insertion order), so shared resources are claimed in time
//    order;
//  * a put costs its issuer send_overhead; each part (one per rail when striped)
//    is a transfer through the network (sim/network.hpp: a DMA engine of the
//    NIC, the host bus, the links of a crossbar or fat tree, the receiver's bus);
//    the put is delivered when its last part is, plus recv_overhead; a put to a
//    rank of the same node goes through the NIC loopback (intranode_put = nic)
//    or is a shared-memory copy (shm);
//  * a copy runs at copy_MBps but the node's copies share membus_MBps;
//  * a signal inside a node takes flag_latency; elsewhere it is a 0-byte put;
//  * a wait releases its rank when the counter reaches the value; a flush when
//    the rank's puts have left its memory;
//  * with fewer cores than processes, host work queues for cores, a waiting
//    process spins (and must get its turn to notice) or sleeps (and must wake up);
//  * optional background traffic: every node's NICs keep messages of a fixed
//    size in flight to a complement, uniformly random or hot-spot destination
//    while the collective runs.
//  * the Quadrics hardware collectives, on machines with hw_multicast /
//    hw_barrier: a run of puts flagged HwAssist::Multicast is one injection
//    replicated by the switches to a contiguous range of nodes; puts flagged
//    HwAssist::Combine are answered by one test-and-set multicast whose
//    acknowledgements the switches combine (sim/network.hpp, multicast).
// Not modeled: link-level flow control (a stage queues without bound instead
// of blocking the stages behind it), packets of ordinary transfers (a message
// holds a stage for all its bytes; only the hardware collectives' packets
// interleave with other traffic).
#pragma once
#include <string>
#include <vector>

#include "core/schedule.hpp"
#include "sim/machine.hpp"

namespace railcoll::sim {

// What a traced run tells (`railcoll sim --trace`, which writes it in the
// runtime's trace format, core/trace_format.hpp): every op of every rank with
// its span, an op lasting until the rank's next op begins (a wait until it is
// released), and every transfer a put makes with its rail (-1: within the
// node) from when it is handed over to when its last byte is in.
class SimTrace {
 public:
  virtual ~SimTrace() = default;
  virtual void op(int rank, int index, const Op& op, double start_us, double end_us) = 0;
  virtual void transfer(int from, int to, int rail, int op, uint64_t bytes, double start_us, double arrive_us) = 0;
};

struct SimOptions {
  std::string background = "none";  // none | complement | uniform | hotspot
  uint64_t background_bytes = 65536;  // size of every background message
  uint64_t seed = 1;                  // uniform background destinations
  // The collective's ranks start at start_us while the background traffic runs
  // from 0, so they meet a loaded network in its running state; the results
  // are measured from start_us.
  double start_us = 0;
  // The collective's buffers are in NIC memory (seed 004 §3.1.2: the Elan
  // memory allocator; its best broadcast, §6.2.2): its transfers cross no host
  // bus. Background traffic still uses main memory.
  bool nic_memory = false;
  // Operations issued by the NIC's thread processor, not by the host: (rank,
  // index in its program). Each starts Machine::nic_thread_us after its rank
  // reaches it (the thread is woken by an event and then issues the DMA; seed
  // 004 §6.1: an Elan thread adds 3.3 us to a message, 5.5 us for MPI against
  // 2.2 us for Elan3lib).
  std::vector<std::pair<int, size_t>> nic_thread_ops;
  SimTrace* trace = nullptr;  // not owned; null: no trace (no cost)
};

struct SimResult {
  std::vector<double> finish_us;  // per rank, all ranks start at 0
  double max_us = 0, avg_us = 0, min_us = 0;
  uint64_t events = 0;
  uint64_t background_messages = 0;
};

// Throws InputError when the topology does not fit the machine (more nodes,
// ranks per node or rails than it has) or the options make no sense.
void check_fits(const Topology& t, const Machine& m);
// The fit, and every operation of the schedule one the machine model can run.
void check_runs(const Schedule& s, const Machine& m);
void check_options(const SimOptions& o);
// Sample i of a run under background traffic: seed o.seed + i, and a start
// after (2 + u) times one background message's time through a NIC (u uniform in
// [0, 1) from that seed): every sample meets the traffic running, at another
// phase, so a deterministic model still gives a distribution (barrier, seed
// 004 Figs. 11-12).
SimOptions loaded_sample(const SimOptions& o, const Machine& m, int i);
// Checks the fit, then runs.
SimResult simulate(const Schedule& s, const Machine& m, const SimOptions& o = {});
// Whether a run of `t` on `m` depends on its seed without background traffic:
// on contended cores with busiest_core_share the processes' cores and turn
// order are drawn from it (docs/simulator.md, "Cores"), so a quiet call has a
// distribution over seeds, as a benchmark's calls have over runs.
bool placement_drawn(const Topology& t, const Machine& m);

}  // namespace railcoll::sim
