// Builders of the barrier algorithms, one file each.
#pragma once
#include "core/schedule.hpp"

namespace railcoll::barrier {
Schedule build_dissemination(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_smp(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_tree(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_hw_combining(const Topology&, const BlockLayout&, const AlgoOptions&);
}  // namespace railcoll::barrier
