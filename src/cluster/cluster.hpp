// Moved to src/testbed/cluster.hpp (the test bed: emulated cluster, launchers,
// process spawning, traffic). Kept for code not yet switched over
// (tools/railcoll/cmd_calibrate.cpp); include "testbed/cluster.hpp" instead.
#pragma once
#include "testbed/cluster.hpp"
