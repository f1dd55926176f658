// Builders of the barrier algorithms, one file each.
#pragma once
#include "core/schedule.hpp"

namespace railcoll::barrier {
Schedule build_dissemination(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_smp(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_tree(const Topology&, const BlockLayout&, const AlgoOptions&);
Schedule build_hw_combining(const Topology&, const BlockLayout&, const AlgoOptions&);
// The first phase of `tree` alone: the 'ready' messages up to rank 0, which
// ends having heard from every rank. Not a barrier by itself (not registered):
// elan_gsync follows it with a hardware 'go' and elan_bcast with the data's
// hardware broadcast (seed 004 §4.1-4.2; railcoll sim reproduce seed004).
Schedule build_tree_ready(const Topology&, const BlockLayout&, const AlgoOptions&);
}  // namespace railcoll::barrier
