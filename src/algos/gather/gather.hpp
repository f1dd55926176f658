// Builders of the gather algorithms, one file each. Rank r's `send` block ends
// at offset displ[r] of the root's recv (blocks in rank order, sizes may differ);
// only the root has a recv.
#pragma once
#include "core/schedule.hpp"

namespace railcoll::gather {
Schedule build_tree(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_direct(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_smp(const Topology&, const BlockLayout&, const AlgoOptions&);
}  // namespace railcoll::gather
