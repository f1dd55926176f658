// The verifier sweep: every algorithm over a wide set of topologies and sizes
// (N = 1..64 and larger N, k = 1..4, ppn 1,2,3,4,8, uneven and non-consecutive
// nodes, 0, 1, odd, above-the-stripe-threshold, per-rank-varying and per-pair-
// varying (alltoallv) sizes, every root of small N). Reductions cycle through
// every (type, operator) pair; a third of their cases take a commutative user
// operator on 12- or 32-byte elements, and an algorithm that keeps rank order
// another third a non-commutative one, checked for order.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/registry.hpp"

namespace railcoll {

struct SweepCase {
  Collective collective = Collective::Allgather;
  std::string algorithm;
  Topology topo;
  std::vector<uint64_t> counts;
  AlgoOptions opts;
  std::vector<std::string> given;  // options set explicitly
  bool in_place = false;            // send and recv one buffer (AlgoSpec::in_place_ok)
  std::string label() const;
};

std::vector<SweepCase> sweep_cases(Collective collective, const std::string& algorithm);

struct SweepOutcome {
  size_t passed = 0, failed = 0;
  std::vector<std::string> failures;  // first error of each failing case, capped
};

// Builds and verifies the cases on all cores.
SweepOutcome run_sweep(const std::vector<SweepCase>& cases);

}  // namespace railcoll
