// SMP multi-leader all-gather, paced (railcoll's own, beyond the papers).
//
// smp_multileader with one change: a leader puts its share to node n + d + 1
// only once every share of node n - d (step d) is in its own node. Every node
// then sends to exactly one node and receives from exactly one node at a time,
// per rail: the shift permutation of seed 000's Direct, one step after the
// other, as an RDMA NIC would serve one queue at a time. Without the pace every
// leader hands all M - 1 shares to the kernel at once and each rail carries
// M - 1 TCP streams into M - 1 receivers, each also fed by M - 2 other
// senders; the streams share both ends unevenly and some finish late while
// links idle. Raw TCP on the emulated cluster (scripts/tcp-alltoall.sh, 4 nodes
// x 1 process, 2 rails, 512 KiB per peer and rail): 70-77% of the rail bound
// all at once, 89-97% in such steps (docs/runtime.md, "Rails kept full").
// The price is a synchronisation per step: with many processes per core the
// slowest leader of the sending node paces the step (docs/selection.md).
// Hockney: T = P m c + (M-1) (ts + P m tau / k + w) + (N-P) m c, w the
// step's wake-up.
#include "algos/allgather/common.hpp"
#include "core/registry.hpp"

namespace railcoll::allgather {

namespace {

void build_smp_multileader_paced(ScheduleBuilder& b, const Topology& t, const BlockLayout& L, const AlgoOptions&) {
  smp_multileader_schedule(b, t, L, true);
}

const AlgorithmRegistrar registered{{Collective::Allgather, 13, "smp_multileader_paced",
    "smp_multileader, a node's next share leaves when the last step's have all arrived",
    "P m c + (M-1) (ts + P m tau / k + w) + (N-P) m c",
    "railcoll (beyond seed 001)", {}, build_smp_multileader_paced}};

}  // namespace

}  // namespace railcoll::allgather
