// Hardware-multicast broadcast (seed 004 §4.2 elan_hbcast, §2.3.1; seed 003
// §4.1, §4.4): the root injects the message once; the switches replicate it to
// every destination through the top switch of the fat tree.
//
// In the schedule: one put per destination rank, all flagged HwAssist::Multicast,
// consecutive in the root's program, with the same source span (`send`) and the
// same rail. The simulator charges them as one injection on presets that have
// the hardware; the verifier sees plain puts (the runtime refuses it and names
// the software equivalent, select.hpp software_equivalent). Every other
// rank waits for its one arrival. The hardware needs a contiguous set of nodes
// and one destination buffer per node (seed 004 §4.2); that is the simulator's
// model to enforce, not the schedule's.
// Hockney with the hardware: T = ts + m tau + (levels of the fat tree) hop
// latency; as plain puts: (N-1) (ts + m tau) from the root.

#include "core/registry.hpp"

namespace railcoll::bcast {

namespace {

void build_hw_multicast(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions& o) {
  const int N = t.nranks(), root = o.root;
  const uint64_t m = L.count[root];
  for (int q = 0; q < N; ++q) {
    if (q == root) continue;
    b.put(root, 0, q, {{b.send(root, 0, m), b.recv(q, 0, m)}}, b.rail_for(m, 0), b.rank_counter(q, 0),
          HwAssist::Multicast);
    b.wait(q, 0, b.rank_counter(q, 0), 1);
  }
}

const AlgorithmRegistrar registered{{Collective::Bcast, 5, "hw_multicast",
    "hardware multicast: one flagged put per destination, one injection",
    "ts + m tau (hardware); (N-1) (ts + m tau) as plain puts",
    "seed 004 §4.2, seed 003 §4.1", {}, build_hw_multicast}};

}  // namespace

}  // namespace railcoll::bcast
