// A modeled machine (a preset): nodes with processes and a memory system, k NICs
// (rails) per node with DMA engines, per-message overheads and a host bus, and
// the network between them (a crossbar or a k-ary n-tree of switches). Presets
// live in presets/NAME.preset, one `key = value  # source:` line per parameter
// (presets/README.md lists every value and where it comes from;
// docs/simulator.md says how the engine uses each one).
#pragma once
#include <map>
#include <string>
#include <vector>

namespace railcoll::sim {

struct Machine {
  std::string name, description;
  int nodes = 0, ppn = 0, rails = 0;
  std::string topology = "crossbar";  // crossbar | fattree
  int fattree_arity = 0, switch_ports = 0;
  bool adaptive_up = true;      // fat tree: routing = adaptive (Elite) | dmodk (static tables)
  double wire_latency_us = 0;   // 0-byte remote put through one switch, no host overheads, no DMA start-up
  double hop_latency_us = 0;    // per extra switch hop
  double send_overhead_us = 0;  // host time to issue a put (o_s)
  double recv_overhead_us = 0;  // host time to complete one (o_r)
  // recv_cpu = loggp: LogGP's o at the receiver, the host's CPU is busy for
  // recv_overhead_us per message, one message after another and after its own
  // work (message passing: the host takes every message off the network).
  // recv_cpu = event: the NIC completes the message and sets an event, and
  // recv_overhead_us is the host noticing it, a delay that keeps no CPU busy
  // (RDMA with completion events). Default: loggp for a TCP stack
  // (kernel_ns_per_byte > 0), event otherwise. With contended cores receive
  // work is always CPU work.
  bool recv_on_cpu = false;
  // overhead_shared = f: of a message's send and receive overheads, the part
  // the messages in flight share (a kernel's interrupts, softirq passes and
  // wake-ups serve every message pending at that moment): with n messages in
  // flight in its core pool a message pays o x (1 - f + f / n). o_s and o_r
  // are the costs of a lone message. 0: every message pays o. CPU work only
  // (recv_cpu = loggp or contended cores).
  double overhead_shared = 0;
  double gap_us = 0;            // minimum time between two injections on a NIC (g)
  double link_MBps = 0;         // per link (NIC-switch and switch-switch), per direction (1 MB/s = 1 byte/us)
  // A token bucket on each NIC's link, both directions (0: none): up to this
  // many bytes pass without waiting for the link rate after the link was idle,
  // as through the emulated cluster's tbf shapers (docs/cluster.md).
  double link_burst_bytes = 0;
  double pci_MBps = 0;          // the host bus a NIC sits on
  bool pci_half_duplex = false;  // pci_duplex = half: reads (sends) and writes (receives) share pci_MBps
  bool pci_per_node = false;     // pci_shared_by = node: one bus for all of a node's NICs
  int dma_engines = 1;           // DMAs a NIC works on at once
  double dma_startup_us = 0;     // engine time per DMA that moves no data (descriptor, first read, completion)
  double copy_MBps = 0;          // memcpy of one process
  double membus_MBps = 0;        // memory bandwidth of a node, shared by its copies
  bool membus_machine_wide = false;  // membus_shared_by = machine: one memory for all nodes (an emulated cluster)
  double flag_latency_us = 0;    // a shared-memory flag from one process to another
  // nic (RDMA loopback: crosses the NIC's bus twice) | shm (copied in and out of
  // shared memory) | socket (a local socket: the kernel copies on both ends)
  std::string intranode_put = "shm";
  double socket_ns_per_byte = 0;     // intranode_put = socket: host CPU per byte on each end
  // The Quadrics hardware collectives (puts flagged HwAssist::Multicast or
  // ::Combine need them) and the largest packet payload, at which their packets
  // interleave with other traffic (0: unknown, they queue behind whole messages).
  bool hw_multicast = false, hw_barrier = false;
  double hw_packet_bytes = 0;
  // The NIC's thread processor (the Elan's): the time from the event that
  // wakes its thread to the DMA it issues. Charged before the operations a run
  // names in SimOptions::nic_thread_ops (the library calls that run an Elan
  // thread, src/sim/reproduce.cpp); 0: no thread, or no published figure.
  double nic_thread_us = 0;
  // CPU contention (optional; by default every process has a core): with fewer
  // `cores` than processes, per node or for the whole machine (an emulated
  // cluster on one host), every core runs the processes placed on it round
  // robin (docs/simulator.md, "Cores"): a working process keeps its core until
  // it waits; a waiting one spins, a turn of spin_turn_us each time its core
  // comes back to it, taking what arrived for it, for spin_us, then sleeps
  // until its wait is over or a message comes (wakeup_us when it next runs).
  int cores = 0;                     // 0: ppn per node
  bool cores_machine_wide = false;   // cores_shared_by = machine
  double wakeup_us = 0;              // CPU time to wake a process blocked in a wait
  double kernel_ns_per_byte = 0;     // host CPU per byte on each end (a TCP stack); 0 for RDMA NICs
  double spin_us = 0;
  double spin_turn_us = 0;
  // The share of a pool's processes on its busiest core when a call starts
  // (0: spread evenly); the others are spread evenly over the other cores.
  // Which processes, and their order on each core, are drawn from the run's
  // seed: the kernel places them anew after they slept (docs/calibration.md).
  double busiest_core_share = 0;
  // The host CPU of a call apart from its operations, per rank (the runtime's
  // entry and exit: the plan's lookup, the banks, the call words), paid when
  // the rank starts its call; 0: none.
  double call_overhead_us = 0;
  // intranode_put = socket: the host CPU of one message through a local
  // socket, both ends together (split evenly); < 0: send + receive overhead.
  double socket_overhead_us = -1;
  // Operating-system noise (keys noise_1, noise_2, ...: `PERIOD DURATION
  // [EVERY]`, in us): every source takes a node's host for duration_us once
  // every period_us, at a phase of its own on each node (the nodes' clocks
  // are not synchronized: drawn from the run's seed); with every = k only
  // every k-th node has it (a daemon on one node of a group). Host work
  // (overheads, copies, marking itself ready, noticing a completed wait) does
  // not run during it; the NICs and the network go on.
  struct NoiseSource {
    double period_us = 0, duration_us = 0;
    int every = 1;
  };
  std::vector<NoiseSource> noise;
  std::map<std::string, std::string> sources;  // key -> "# source:" text

  // The slowest stage of an unloaded inter-node transfer.
  double nic_MBps() const { return link_MBps < pci_MBps ? link_MBps : pci_MBps; }
  // Switch hops between two nodes (1 on a crossbar).
  int hops(int a, int b) const;
  // Levels of the fat tree that holds `nodes` nodes (1 for a crossbar).
  int tree_levels() const;
};

// Parses a preset; throws railcoll::InputError naming the file, line and field.
Machine parse_machine(const std::string& text, const std::string& origin);
// A preset by name (searched in $RAILCOLL_PRESETS, the source tree next to the
// binary, and share/railcoll/presets) or by path to a .preset file.
Machine load_machine(const std::string& name_or_path);
std::string preset_dirs_text();

}  // namespace railcoll::sim
