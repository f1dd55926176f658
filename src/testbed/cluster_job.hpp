// Jobs on the emulated cluster (`railcoll cluster run` and `cluster mpirun`,
// and the benchmark's drivers): where the ranks go, the environment they get,
// and Open MPI's command line for the same nodes (docs/cluster.md).
#pragma once
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

// Open MPI's mpirun across the same nodes and rails (the baseline), as one
// process in the root namespace; `verbose` prints its command line on stderr.
// Throws InputError when there is no mpirun.
JobResult run_cluster_mpirun(const ClusterJob& job, bool han, bool verbose, const JobOptions& options);

}  // namespace railcoll::testbed
