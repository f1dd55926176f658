// Who this process is: its rank and the number of ranks, where the set-up
// store is, the job, and its node. Apart from the settings (core/settings.hpp)
// because it comes from whichever launcher started the process, each with its
// own variables: an identity source per launcher, tried in order, so that one
// more (PMIx) is one more entry in identity_sources().
#pragma once
#include <string>
#include <vector>

#include "core/settings.hpp"

namespace railcoll::rt {

struct Identity {
  int rank = 0, size = 1;
  std::string store;    // host:port of the store rank 0 serves ("" for one rank)
  std::string job_id;   // empty: rank 0 makes one
  std::string node_id;  // ranks with equal ids share memory ("node:X" from RAILCOLL_NODE, else "host:NAME")
  std::string source;   // which launcher said so ("Open MPI", "railcoll_comm_init_explicit", ...)
};

// A launcher whose variables may say who this process is.
struct IdentitySource {
  const char* name;  // "Open MPI"
  // Fills rank and size and returns true when this launcher started the
  // process; false when its variables are absent. Throws Error(Bootstrap) on
  // a wrong value.
  bool (*read)(const Settings& settings, Identity* out);
};
// In the order they are tried: railcoll's own, Open MPI, Hydra, Slurm, torchrun.
const std::vector<IdentitySource>& identity_sources();

// The node and job alone (RAILCOLL_NODE or the hostname, RAILCOLL_JOB_ID), for
// a communicator whose rank, size and exchange the caller gives.
Identity local_identity(const Settings& settings);
// Everything, from the first source whose variables are set (none: a single
// process), and the store from RAILCOLL_STORE or MASTER_ADDR:MASTER_PORT.
// Throws Error(Bootstrap) on a wrong or missing value: no peer can be told.
Identity identity_from_env(const Settings& settings);

}  // namespace railcoll::rt
