// Builders of the allreduce algorithms, one file each.
#pragma once
#include "core/schedule.hpp"

namespace railcoll::allreduce {
Schedule build_recursive_doubling(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_ring(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_rabenseifner(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_smp(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_smp_leader(const Topology&, const BlockLayout&, const AlgoOptions&);
}  // namespace railcoll::allreduce
