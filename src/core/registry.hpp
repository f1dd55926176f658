// The table of algorithms by (collective, name), as MPICH's and UCC's tables.
// Every algorithm file registers itself once, at the bottom of the file, with an
// AlgorithmRegistrar (docs/extending.md, "How to add an algorithm"); this file
// knows no algorithm by name. The IR library is linked whole (CMakeLists.txt) so
// the linker keeps the registrars even though nothing references them.
#pragma once
#include <string>
#include <vector>

#include "core/schedule.hpp"

namespace railcoll {

// Writes every rank's program into `b`, which build_schedule made for the
// algorithm's collective and name (regions sized from the layout).
using BuildFn = void (*)(ScheduleBuilder& b, const Topology&, const BlockLayout&, const AlgoOptions&);

struct AlgoSpec {
  Collective collective;
  int order;             // place among its collective's algorithms (`railcoll algos` lists them so)
  const char* name;
  const char* summary;   // one line for `railcoll algos`
  const char* cost;      // Hockney-model cost, one line
  const char* source;    // where it comes from (seed section)
  std::vector<std::string> options;  // options it takes besides the common ones
  BuildFn build;
  // A reduction's: every rank's result combines its inputs in rank order, so
  // a non-commutative operator may run on it (the verifier checks the order).
  bool keeps_order = false;
  // Correct when each rank's send and recv are one buffer (an in-place call):
  // everything the schedule reads of send is read before anything lands on
  // those bytes of recv. The verifier checks it so (verify_schedule's
  // in_place), and the runtime then skips its copy of an in-place input.
  bool in_place_ok = false;
};

// Adds `spec` to the table when the program starts. One per algorithm file:
//   const AlgorithmRegistrar registered{{Collective::Bcast, 1, "binomial", ...}};
// A second algorithm of the same collective and name is a bug: it throws.
struct AlgorithmRegistrar {
  explicit AlgorithmRegistrar(AlgoSpec spec);
  // The same builder for a second collective whose layout it reads as well
  // (alltoall and alltoallv, scatter and scatterv, gather and gatherv).
  AlgorithmRegistrar(AlgoSpec spec, Collective also);
};

// Every registered algorithm, ordered by collective (enum order), then `order`,
// then name. Complete once main() runs: do not call it from a static initialiser.
const std::vector<AlgoSpec>& all_algorithms();
// nullptr if unknown.
const AlgoSpec* find_algorithm(Collective collective, const std::string& name);
// "direct, stdex, bruck, ..." for messages naming the choices.
std::string algorithm_names(Collective collective);
// The same for the algorithms that keep rank order (AlgoSpec::keeps_order).
std::string order_keeping_names(Collective collective);
// "unknown allgather algorithm 'x' (from SOURCE; one of: direct, ...)"; no
// "from" part when `source` is empty.
std::string unknown_algorithm_message(Collective collective, const std::string& name, const std::string& source);

// Validates the request (known algorithm, options it takes, sizes) and builds
// the schedule, stamped with the collective and the algorithm's name.
// given_options names the options the user set explicitly.
// Throws InputError with a one-line message on bad input.
Schedule build_schedule(Collective collective, const std::string& algorithm,
                        const Topology& topo, const std::vector<uint64_t>& counts,
                        const AlgoOptions& opts, const std::vector<std::string>& given_options = {});

// Call arguments that make every algorithm of `collective` buildable when the
// caller has none of its own (tests, `railcoll show`): allreduce of float sums.
AlgoOptions call_defaults(Collective collective);

// Largest bytes per rank accepted, and largest total (N x bytes).
constexpr uint64_t kMaxBytesPerRank = 1ull << 40;
constexpr uint64_t kMaxTotalBytes = 1ull << 48;

}  // namespace railcoll
