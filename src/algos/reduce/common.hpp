// Pieces shared by the reduce builders.
#pragma once
#include <functional>
#include <vector>

#include "core/schedule.hpp"

namespace railcoll::reduce {

// A unit of a tree reduction (a rank, or a node's leader for a slice): the rank
// that acts for it, the span its partial starts in, and whether that span may
// be written (a send buffer may not: the first child's partial is then
// combined in the child's slot, which becomes the accumulator).
struct TreeUnit {
  int rank;
  Span acc;
  bool writable;
};

// Binomial reduction to unit 0 over units (trees::BinomialTree's shape,
// MPICH's binomial reduce): unit v combines its children's partials, smallest
// subtree first, each on the right of its own (units in rank order keep rank
// order), and at step step0 + low(v) puts its partial into its parent's
// slot(parent, low(v)) (acc's length). Unit 0's partial ends in its acc,
// which must be writable. rail_of(bytes, step) picks a put's rail. Rank
// counters counter0 .. counter0 + ceil(log2 U) - 1. Returns the step after the last.
int binomial_reduce(ScheduleBuilder& b, const std::vector<TreeUnit>& units,
                    const std::function<Span(int unit, int low)>& slot, int step0,
                    const std::function<int(uint64_t bytes, int step)>& rail_of, int counter0);

}  // namespace railcoll::reduce
