// Jobs on the emulated cluster (`railcoll cluster run`, `mpirun` and `torchrun`,
// and the benchmark's drivers): where the ranks go, the environment they get,
// and the MPI launchers' command lines for the same nodes (docs/cluster.md),
// with railcoll's MPI interposition library or without (docs/mpi.md).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "testbed/cluster.hpp"
#include "testbed/job.hpp"

namespace railcoll::testbed {

struct ClusterJobRequest {
  std::vector<std::string> program;  // PROG ARGS; PROG is looked up in PATH here
  std::vector<int> layout;           // ranks per node from node 0; empty: ppn on every node
  int ppn = 0;                       // with an empty layout; 0: the cluster's
  int rails = 0;                     // the first K rails; 0: all of the cluster's
};

struct ClusterJob {
  cluster::Config cfg;
  std::vector<int> layout;
  int rails = 0;
  std::vector<std::string> program;  // PROG as an absolute path
  int ranks() const { return layout_ranks(layout); }
};

// Checks the request against the cluster that is up. Throws InputError (not
// root, no cluster, a layout that does not fit, more rails than it has, no
// such program: the caller's mistake) or cluster::CommandError (the cluster is
// damaged).
ClusterJob prepare_cluster_job(const ClusterJobRequest& request);

// The ranks of a railcoll job: node-major, each started in its node's network
// and UTS namespaces with the RAILCOLL_* environment plus RAILCOLL_CLUSTER=1
// and RAILCOLL_RAIL_RATE (bit/s).
std::vector<RankProcess> cluster_ranks(const ClusterJob& job);
JobResult run_cluster_job(const ClusterJob& job, const JobOptions& options);

// ---- MPI programs (`railcoll cluster mpirun`, the benchmark's MPI rows)

// Which MPI starts a program: Open MPI's mpirun, or MPICH's Hydra
// (mpiexec.mpich; the MPICH ABI: MPICH, Intel MPI, MVAPICH).
enum class MpiFlavor { Auto, OpenMpi, Mpich };
// "openmpi" or "mpich"; InputError otherwise.
MpiFlavor parse_mpi_flavor(const std::string& name);
const char* mpi_flavor_name(MpiFlavor flavor);
// The MPI a program was built with: MPICH when the executable needs libmpich,
// else Open MPI (also for scripts: Debian's mpi4py is built on Open MPI).
MpiFlavor program_mpi(const std::string& program);
// The interposition library for that MPI's ABI (docs/mpi.md), as built or
// installed beside this program: ../lib/librailcoll_mpi.so (Open MPI) or
// ../lib/mpich/librailcoll_mpi.so. InputError when it is not there.
std::string mpi_layer_library(MpiFlavor flavor);
// What the ranks of an MPI program get with railcoll's collectives: every
// RAILCOLL_* variable of this process's environment, and RAILCOLL_JOB_KEY (a
// new one when this process has none). LD_PRELOAD is the launcher's to pass.
std::map<std::string, std::string> railcoll_mpi_env();

struct MpirunOptions {
  MpiFlavor mpi = MpiFlavor::Auto;  // Auto: program_mpi(the job's program)
  bool han = false;       // Open MPI's hierarchical collectives (coll_han_priority 100)
  bool railcoll = false;  // railcoll's collectives: the interposition library preloaded, railcoll_mpi_env()
  bool verbose = false;   // the launcher's command line on stderr
  // More variables for the ranks (a peer library's settings, e.g. oneCCL's
  // CCL_*), set by the launcher on every node.
  std::map<std::string, std::string> env;
};

// The MPI launcher across the same nodes and rails (the baseline, or an MPI
// program on railcoll's collectives), as one process in the root namespace:
// Open MPI's mpirun, or MPICH's Hydra with the same rsh agent. Throws
// InputError when that launcher or the library is missing, or for HAN under MPICH.
JobResult run_cluster_mpirun(const ClusterJob& job, const MpirunOptions& how, const JobOptions& options);

// ---- torch programs (`railcoll cluster torchrun`, docs/torch.md)

// One torchrun agent per node of the job, in the node's network and UTS
// namespaces (so its hostname is the node's), each starting the job's
// ranks-per-node processes of the Python program `program` (its first word is
// the script). Static rendezvous at node 0's rail-0 address; RAILCOLL_* of
// this process, a job key and the cluster's rails are forwarded. `torchrun`:
// the torchrun executable.
std::vector<RankProcess> cluster_torchrun_agents(const ClusterJob& job, const std::string& torchrun,
                                                 const std::vector<std::string>& program);

}  // namespace railcoll::testbed
