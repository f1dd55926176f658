// Symbolic executor of schedules (the architecture page, ../shared/design/ARCHITECTURE.md, "Verifier").
//
// Every byte carries (origin rank, origin offset). The verifier runs all
// programs with maximal progress (a put is delivered as soon as it is issued)
// and tracks happens-before with vector clocks:
//   * a copy is an instant on its rank; a put reads its source and writes its
//     destination at any time between its issue and its delivery;
//   * a wait that sees its counter reach v learns of the first v increments,
//     and this is only sound if exactly v increments can come before it: a
//     wait that a later step's message could satisfy early is an error;
//   * a put's source may be read until it is delivered and known to be so (a
//     wait on its counter), or until its issuer flushes (or returns);
//   * when a rank returns, nothing may still read or write its buffers, and no
//     one may still touch its node's shared buffer: the next call reuses them.
// It reports, with algorithm, topology, rank and operation: wrong final recv,
// reads of unwritten bytes, races (read or write not ordered with a write),
// waits that can never be satisfied, ambiguous waits, spans out of bounds or
// not addressable by the rank.
#pragma once
#include <string>
#include <vector>

#include "core/schedule.hpp"
#include "core/schedule_io.hpp"  // schedule_title, describe_op: the messages name them

namespace railcoll {

struct VerifyResult {
  bool ok() const { return errors.empty(); }
  std::vector<std::string> errors;  // first error first; capped
  size_t ops = 0;                   // operations executed
};

// in_place: each rank's send and recv are one buffer (where their sizes are
// equal), as in an in-place call whose input the runtime does not copy: a
// read of send sees what has landed in recv by then (AlgoSpec::in_place_ok).
VerifyResult verify_schedule(const Schedule& s, bool in_place = false);


}  // namespace railcoll
