// A real Slurm on the emulated cluster (docs/cluster.md, "Slurm"): Debian's
// slurmctld in the root namespace (the cluster's "login node", reached by the
// nodes at 198.18.0.254, rail 0's bridge), one slurmd in every node's network
// and UTS namespace, a private munged, and a slurm.conf generated from the
// cluster: one Slurm node per emulated node with its ppn as CPUs and its rails
// as features, the mpi/pmix and mpi/pmi2 plugins Debian ships. Everything lives
// in /run/railcoll/slurm (configuration, keys, state, spools, logs); users and
// tests reach it with SLURM_CONF=/run/railcoll/slurm/slurm.conf and the usual
// srun / sbatch. Daemons are found again by their pid files, so `slurm_down`
// works from any process (a test's cleanup after a failure).
#pragma once
#include <string>

#include "testbed/cluster.hpp"

namespace railcoll::cluster {

std::string slurm_dir();        // /run/railcoll/slurm
std::string slurm_conf_path();  // what SLURM_CONF must name

// The slurm.conf of a cluster of `cfg`, its controller called `controller`.
std::string slurm_conf_text(const Config& cfg, const std::string& controller);

// Starts munged, slurmctld and one slurmd per node of the cluster `cfg` (which
// is up) and waits until every node is idle. Throws ClusterInputError when
// Slurm is missing or already running, CommandError when a daemon fails (after
// stopping what it started; the message ends with the daemon's last log lines).
void slurm_up(const Config& cfg);
// Stops the job steps still running in the nodes, the slurmds, slurmctld and
// munged (SIGTERM, 10 s, SIGKILL) and removes slurm_dir(). Returns how many
// processes it stopped; 0 when nothing was running.
int slurm_down();
// True when slurm_dir() holds a Slurm whose controller still runs.
bool slurm_running();

}  // namespace railcoll::cluster
