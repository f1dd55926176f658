// A modeled machine (a preset): nodes with processes and a memory system, k NICs
// (rails) per node with LogP-style overheads and a bandwidth, and the network
// between them. Presets live in presets/NAME.preset, one `key = value  # source:`
// line per parameter (presets/README.md lists every value and where it comes from).
#pragma once
#include <map>
#include <string>

namespace railcoll::sim {

struct Machine {
  std::string name, description;
  int nodes = 0, ppn = 0, rails = 0;
  std::string topology = "crossbar";  // crossbar | fattree
  int fattree_arity = 0, switch_ports = 0;
  double wire_latency_us = 0;   // 0-byte remote put through one switch, no host overheads
  double hop_latency_us = 0;    // per extra switch hop
  double send_overhead_us = 0;  // host time to issue a put (o_s)
  double recv_overhead_us = 0;  // host time to complete one (o_r)
  double gap_us = 0;            // minimum time between two injections on a NIC (g)
  double link_MBps = 0;         // per rail, per direction (1 MB/s = 1 byte/us)
  double pci_MBps = 0;          // host bus available to one NIC
  int dma_engines = 1;
  double copy_MBps = 0;         // memcpy of one process
  double membus_MBps = 0;       // memory bandwidth of a node, shared by its copies
  double flag_latency_us = 0;   // a shared-memory flag from one process to another
  std::string intranode_put = "shm";  // nic (RDMA loopback) | shm
  double nic_loopback_MBps = 0;
  bool hw_multicast = false, hw_barrier = false;
  // CPU contention (optional; by default every process has a core): host work
  // (copies, send and receive overheads, wake-ups) queues for `cores` cores,
  // per node or shared by the whole machine (an emulated cluster on one host).
  int cores = 0;                     // 0: ppn per node
  bool cores_machine_wide = false;   // cores_shared_by = machine
  double wakeup_us = 0;              // CPU time to wake a process blocked in a wait
  double kernel_ns_per_byte = 0;     // host CPU per byte on each end (a TCP stack); 0 for RDMA NICs
  std::map<std::string, std::string> sources;  // key -> "# source:" text

  double nic_MBps() const { return link_MBps < pci_MBps ? link_MBps : pci_MBps; }
  // Switch hops between two nodes (1 on a crossbar).
  int hops(int a, int b) const;
};

// Parses a preset; throws railcoll::InputError naming the file, line and field.
Machine parse_machine(const std::string& text, const std::string& origin);
// A preset by name (searched in $RAILCOLL_PRESETS, the source tree next to the
// binary, and share/railcoll/presets) or by path to a .preset file.
Machine load_machine(const std::string& name_or_path);
std::string preset_dirs_text();

}  // namespace railcoll::sim
