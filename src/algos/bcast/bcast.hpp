// Builders of the broadcast algorithms, one file each. The root (AlgoOptions::root)
// sends `send`; every other rank ends with it in `recv`; the root has no recv.
#pragma once
#include "core/schedule.hpp"

namespace railcoll::bcast {
Schedule build_binomial(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_scatter_allgather(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_pipelined_chain(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_smp(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_hw_multicast(const Topology&, const BlockLayout&, const AlgoOptions&);
}  // namespace railcoll::bcast
