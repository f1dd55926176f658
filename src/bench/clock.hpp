// The clock every benchmark program times calls with, and whether two
// processes read the same one (bench/harness.hpp, bench/peer.hpp).
#pragma once
#include <cstdint>

namespace railcoll::bench {

// CLOCK_MONOTONIC in us.
double monotonic_us();
// Equal in two processes exactly when they read the same CLOCK_MONOTONIC: the
// kernel's boot id and the time namespace (network and UTS namespaces share it).
uint64_t clock_identity();

}  // namespace railcoll::bench
