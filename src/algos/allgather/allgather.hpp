// Builders of the all-gather algorithms, one file each.
#pragma once
#include "core/schedule.hpp"

namespace railcoll::allgather {
Schedule build_direct(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_stdex(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_bruck(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_ring(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_recursive_doubling(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_gather_bcast(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_concurrent_exchange(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_concurrent_exchange_split(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_smp_gather_bcast(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_smp_direct(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_smp_bruck(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_smp_multileader(const Topology&, const BlockLayout&, const AlgoOptions&);
}  // namespace railcoll::allgather
