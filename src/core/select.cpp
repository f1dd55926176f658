#include "core/select.hpp"

namespace railcoll {

// The rules follow what was measured on the emulated cluster (4 nodes x 4 ranks,
// 2 rails x 1 Gbit/s; docs/results.md) and the papers' findings: shared memory
// inside a node always pays; small messages want few network steps (SMP Bruck,
// seed 001 §7: SMP Gather+Bcast best up to 256 B, SMP Bruck from 512 B to 8 KiB);
// large ones want every rail driven at once (one leader per rail).
std::string select_algorithm(Collective collective, const Topology& t, uint64_t bytes) {
  if (collective == Collective::Barrier) return t.nnodes() < t.nranks() ? "smp" : "dissemination";
  if (collective == Collective::Allreduce) {
    // Ranks that share a node combine in shared memory first; one rank per node
    // wants latency (recursive doubling) for short vectors and bandwidth
    // (reduce-scatter + all-gather) for long ones.
    if (t.nnodes() < t.nranks()) return bytes <= 64 * 1024 ? "smp_leader" : "smp";
    return bytes <= 16 * 1024 ? "recursive_doubling" : "rabenseifner";
  }
  // bcast and gather: the simulator on the calibrated testbed and on the seeds'
  // machines (QsNetII 4x4 dual rail, Elan3 64x4, Elan4 and InfiniBand 128x1):
  // smp is fastest wherever nodes hold several ranks, at every size (bcast at
  // 1 MiB on the testbed: 5.1 ms, against 7.8 for pipelined_chain and 15.8 for
  // binomial; the rail bound is 4.5). With one rank per node it is the k-port
  // tree, or the striped chain for long messages; scatter_allgather beats both
  // only from 128 KiB on large flat machines (InfiniBand 128x1: 1.3 against
  // 1.6 ms at 256 KiB). Gather: direct's one network step beats the binomial
  // tree at every size in the model, and smp adds the node's shared memory.
  if (collective == Collective::Bcast)
    return t.nnodes() == t.nranks() && t.nranks() >= 32 && bytes >= 128 * 1024 ? "scatter_allgather" : "smp";
  if (collective == Collective::Gather) return t.nnodes() < t.nranks() ? "smp" : "direct";
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
         "allreduce: several ranks per node -> <= 64 KiB smp_leader, else smp; else <= 16 KiB -> recursive_doubling, else rabenseifner\n"
         "bcast: one rank per node, >= 32 ranks and >= 128 KiB -> scatter_allgather; else smp\n"
         "gather: several ranks per node -> smp; else direct\n"
         "hw_multicast and hw_combining are never chosen; the runtime runs smp (bcast) and tree (barrier) "
         "in their place\n";
}

// The seeds' own software forms of the hardware collectives: elan_hbcast falls
// back to elan_bcast, a software tree with shared-memory copies inside a node
// (seed 004 §4.2: smp), and elan_hgsync's software twin is elan_gsync's tree of
// 'ready' and 'go' messages (seed 004 §4.1: tree).
std::string software_equivalent(Collective collective, const std::string& algorithm) {
  if (collective == Collective::Bcast && algorithm == "hw_multicast") return "smp";
  if (collective == Collective::Barrier && algorithm == "hw_combining") return "tree";
  return algorithm;
}

}  // namespace railcoll
