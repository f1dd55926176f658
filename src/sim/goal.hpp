// Schedules in LogGOPSim's GOAL text format (the input of its txt2bin; see
// docs/goal.md): railcoll's algorithms can then run in LogGOPSim, and GOAL
// schedules (e.g. from LogGOPSim's schedgen) in railcoll's simulator.
#pragma once
#include <istream>
#include <ostream>
#include <string>

#include "core/schedule.hpp"

namespace railcoll::sim {

// put -> send/recv pair, copy -> `calc <bytes>` (unit: bytes, not time), a
// signal to another rank -> 0-byte send/recv; waits, flushes and signals that
// stay on the rank become `requires` lines (each op requires only what it does
// not already require through another: the text grows linearly with the
// schedule). Labels are l0, l1, ... per rank; the tag of a message is its
// send's label number. Throws InputError if the schedule deadlocks (a wait its
// counter can never satisfy), before writing anything.
void write_goal(const Schedule& s, std::ostream& out);
std::string to_goal(const Schedule& s);

// send -> put (scratch to the receiver's scratch, one rank counter per message),
// recv -> wait(counter, 1), calc -> copy of <n> bytes, requires -> program
// order (plus a flush before an op that requires a send of its rank). Every
// rank on its own node, `rails` rails (`nic n` picks rail n; no nic: striped
// when rails > 1). Collective "goal", algorithm "imported". Throws InputError
// naming the line on malformed input. Reads the text as a stream: only one
// rank block's labels are kept at a time.
Schedule read_goal(std::istream& in, int rails = 1);
Schedule from_goal(const std::string& text, int rails = 1);

}  // namespace railcoll::sim
