#include "core/select.hpp"

namespace railcoll {

// The rules follow what was measured on the emulated cluster (4 nodes x 4 ranks,
// 2 rails x 1 Gbit/s; docs/results.md) and the papers' findings: shared memory
// inside a node always pays; small messages want few network steps (SMP Bruck,
// seed 001 §7: SMP Gather+Bcast best up to 256 B, SMP Bruck from 512 B to 8 KiB);
// large ones want every rail driven at once (one leader per rail).
std::string select_algorithm(const std::string& collective, const Topology& t, uint64_t bytes) {
  if (collective == "barrier") return t.nnodes() < t.nranks() ? "smp" : "dissemination";
  if (collective == "allreduce") {
    // Ranks that share a node combine in shared memory first; one rank per node
    // wants latency (recursive doubling) for short vectors and bandwidth
    // (reduce-scatter + all-gather) for long ones.
    if (t.nnodes() < t.nranks()) return bytes <= 1024 ? "smp_leader" : "smp";
    return bytes <= 16 * 1024 ? "recursive_doubling" : "rabenseifner";
  }
  if (t.nranks() == 1 || t.nnodes() == 1) return "smp_direct";
  uint64_t node_bytes = bytes * static_cast<uint64_t>(t.max_node_size());
  if (node_bytes <= 8 * 1024) return "smp_gather_bcast";
  if (node_bytes <= 16 * 1024) return "smp_bruck";
  return "smp_multileader";
}

std::string selection_rules() {
  return "allgather: one node -> smp_direct; bytes per node <= 8 KiB -> smp_gather_bcast; <= 16 KiB -> "
         "smp_bruck; else smp_multileader\n"
         "barrier: several ranks per node -> smp; else dissemination\n"
         "allreduce: several ranks per node -> <= 1 KiB smp_leader, else smp; else <= 16 KiB -> recursive_doubling, else rabenseifner\n";
}

}  // namespace railcoll
