// railcoll bench allgather --fault rail-down@T[:D] | flap@T:D[:P] | kill@T:
// all-gathers of one size on the emulated cluster while the last rail of node 1
// goes down T seconds in (and up again D seconds later), or flaps for D seconds
// (its link down, up, down, ... every P seconds), or while the last rank is
// killed; every call validated; throughput before, during and after, and the
// calls of every second (docs/runtime.md, "Faults").
#pragma once
#include <cstdint>
#include <string>

#include "bench/driver.hpp"

namespace railcoll::bench {

struct FaultSpec {
  enum Kind { RailDown, Flap, Kill } kind = RailDown;
  double at = 0, length = 0;  // seconds after the first timed call; rail-down, flap: how long
  double period = 0.2;        // flap: seconds between two changes of the link's state
  std::string text;
};
// "rail-down@3", "rail-down@3:4" (down for 4 s; default: as long as T),
// "flap@3:10" (10 s of down, up, ... every 0.2 s), "flap@3:10:0.5", "kill@3".
// Throws InputError on anything else.
FaultSpec parse_fault(const std::string& text);

// A rank of the fault run (started by a launcher): `marker` is a path prefix
// the driver watches (.start: rank 0's clock at the first timed call; .pid:
// the last rank's pid); rank 0 appends "#call t=S us=U" records.
int fault_worker(const FaultSpec& f, const std::string& algo, uint64_t bytes, double duration,
                 const std::string& marker, const std::string& records);

// The driver: starts the workers on the cluster (`where` must be the
// cluster), injects the fault, reports, and writes the phases as JSON to
// `json` when given. Returns the exit status.
int fault_driver(const FaultSpec& f, const std::string& algo, uint64_t bytes, const Placement& where,
                 const std::string& json);

}  // namespace railcoll::bench
