// Which algorithm `auto` picks for (collective, topology, bytes): a rule table,
// overridden by RAILCOLL_<COLL>_ALGO and by a per-call option.
#pragma once
#include <string>

#include "core/collective.hpp"
#include "core/topology.hpp"

namespace railcoll {

// bytes: per rank (all-gather: the largest block).
std::string select_algorithm(Collective collective, const Topology& t, uint64_t bytes);
// One line per rule, for `railcoll algos --rules` and the docs.
std::string selection_rules();
// The algorithm a runtime without network hardware support runs when asked for
// `algorithm`: hw_multicast -> smp, hw_combining -> tree; any other, itself.
// The runtime says so once on stderr.
std::string software_equivalent(Collective collective, const std::string& algorithm);

}  // namespace railcoll
