// The table of algorithms by (collective, name), as MPICH's and UCC's tables.
#pragma once
#include <string>
#include <vector>

#include "core/schedule.hpp"

namespace railcoll {

using BuildFn = Schedule (*)(const Topology&, const BlockLayout&, const AlgoOptions&);

struct AlgoSpec {
  Collective collective;
  const char* name;
  const char* summary;   // one line for `railcoll algos`
  const char* cost;      // Hockney-model cost, one line
  const char* source;    // where it comes from (seed section)
  std::vector<std::string> options;  // options it takes besides the common ones
  BuildFn build;
};

const std::vector<AlgoSpec>& all_algorithms();
// nullptr if unknown.
const AlgoSpec* find_algorithm(Collective collective, const std::string& name);

// Validates the request (known algorithm, options it takes, sizes) and builds
// the schedule. given_options names the options the user set explicitly.
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
