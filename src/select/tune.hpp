// Tuning from measurements: benchmark or simulator records -> the rules of a
// tuning file (`railcoll tune`, `railcoll sim tune`; docs/selection.md).
#pragma once
#include <string>
#include <vector>

#include "core/collective.hpp"
#include "select/rules.hpp"

namespace railcoll {

// One measured (or simulated) size of one algorithm on one topology.
struct Measurement {
  Collective collective = Collective::Allgather;
  int ranks = 0, nodes = 0, ppn = 0, rails = 0;  // ppn: ranks on the largest node
  uint64_t bytes = 0;                            // per rank
  std::string algorithm;
  double p50_us = 0;
};

// Per (collective, ranks, nodes, ppn, rails): at every measured size the
// algorithm with the lowest p50 wins; neighbouring sizes with the same winner
// become one rule. Between two measured sizes with different winners the
// boundary is their geometric mean (sizes double from one measurement to the
// next, so each winner keeps the half of the gap on its side in log scale);
// below the smallest and above the largest measured size nothing is written,
// so the defaults stay in force there. Records of algorithms that are not
// registered ("auto", "mpi:tuned") and non-finite times are ignored. Rules name
// the exact topology, so rules of different topologies never overlap.
std::vector<Rule> rules_from_measurements(const std::vector<Measurement>& records);


}  // namespace railcoll
