// The background-traffic generator (seed 004 §5): run as one rank per node by
// a launcher (`railcoll cluster run --ppn 1 -- railcoll traffic ...`, which
// `railcoll bench --background P` does), every rank streams 64 KiB writes at
// full speed over every rail to the destinations core/background.hpp defines
// for the pattern, while a measured collective runs. Listeners bind the rail
// addresses (RAILCOLL_RAILS); the ranks exchange their ports through railcoll
// itself. It stops after `seconds` or on SIGTERM/SIGINT, whichever comes first.
#pragma once
#include <cstdint>
#include <ostream>

#include "core/background.hpp"

namespace railcoll::testbed {

struct TrafficResult {
  int rank = 0, nodes = 0;
  uint64_t sent_bytes = 0;
};

// One rank of the generator. Throws RuntimeError when it cannot join the job
// (no launcher environment: the message says how to start it).
TrafficResult run_traffic(BackgroundPattern pattern, double seconds);

// Whether this process was started as a rank of a job (a launcher's rank variable is set).
bool started_by_a_launcher();

}  // namespace railcoll::testbed
