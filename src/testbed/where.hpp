// Where a measurement runs, decided in one place for every command that
// measures (bench, calibrate, tune, bench --torch): on the emulated cluster,
// or on local processes only when the command line asked for them. Nothing
// falls back quietly to something other than what was asked: a run measured
// on local processes was once taken for one on the cluster.
#pragma once
#include <string>

namespace railcoll::testbed {

// True: the emulated cluster is up, healthy and usable by this process.
// False: `local` was asked for (--local). Otherwise an InputError that says
// why the cluster cannot be used and how to bring one up
// (`railcoll cluster up ...`) or ask for local processes (`--local`).
bool cluster_unless_local(bool local);

// An InputError unless `program` (a name searched in PATH, or a path) can be
// run: a peer a command was asked to measure against (Open MPI's mpirun, a
// benchmark binary) must be there, not its row left out. `what` says what the
// peer is for and `install` how to get it.
void require_peer(const std::string& program, const std::string& what, const std::string& install);

}  // namespace railcoll::testbed
