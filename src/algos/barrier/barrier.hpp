// The one barrier building block used outside its file. The barrier algorithms
// themselves register by name (core/registry.hpp) and have no header.
#pragma once
#include "core/schedule.hpp"

namespace railcoll::barrier {
// The first phase of `tree` alone: the 'ready' messages up to rank 0, which
// ends having heard from every rank. Not a barrier by itself (not registered):
// elan_gsync follows it with a hardware 'go' and elan_bcast with the data's
// hardware broadcast (seed 004 §4.1-4.2; railcoll sim reproduce seed004).
Schedule build_tree_ready(const Topology&, const BlockLayout&, const AlgoOptions&);
}  // namespace railcoll::barrier
