// railcoll cluster slurm up|down|status, and `cluster up --slurm`: Debian's
// Slurm on the emulated cluster (src/testbed/slurm.hpp, docs/cluster.md).
#pragma once
#include <string>
#include <vector>

#include "testbed/cluster.hpp"

namespace railcoll::cli {

// `railcoll cluster slurm up|down|status`; exit status as the cluster's verbs.
int cluster_slurm(const std::vector<std::string>& argv);
// Starts Slurm on the cluster `c` just brought up, and says how to reach it;
// on failure says why (as `railcoll cluster VERB`) and returns 1.
int slurm_up_on(const cluster::Config& c, const std::string& verb);
// Takes Slurm down if it runs, saying so; throws CommandError if it cannot.
void slurm_down_said(const std::string& verb);

}  // namespace railcoll::cli
