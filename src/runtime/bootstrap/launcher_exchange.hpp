// The exchange a launcher hands every process it starts: PMIx (Slurm's
// `srun --mpi=pmix`, Open MPI's mpirun and prterun) or PMI-2 (`srun
// --mpi=pmi2`, MPICH's Hydra). It says who the process is (rank, size, node,
// job) and carries the set-up records between the ranks (put, commit, fence,
// get), so a communicator needs no store, no port and no variable set by hand
// (the "singleton" trap of a program under srun without PMIx, ompi#13523).
// A narrow interface over the two clients (pmix.cpp, pmi2.cpp), each loaded
// with dlopen when its launcher is there: a build that has their headers runs
// where their libraries are not installed.
#pragma once
#include <memory>
#include <string>

#include "core/errors.hpp"
#include "core/settings.hpp"
#include "runtime/bootstrap/identity.hpp"
#include "runtime/bootstrap/oob.hpp"

namespace railcoll::rt {

class LauncherExchange : public OutOfBand {
 public:
  virtual const char* name() const = 0;      // "PMIx", "PMI-2"
  virtual std::string node() const = 0;      // this process's host as the launcher names it
  virtual std::string job() const = 0;       // the launcher's name of the job (step), the same on every rank
};

// Which launcher exchange this process has: "PMIx" or "PMI-2" from its
// environment (PMIX_NAMESPACE and PMIX_RANK; PMI_FD and PMI_RANK), else "".
std::string launcher_exchange_offered();

// The launcher's exchange, when the process has one and is not told to use a
// store instead (RAILCOLL_RANK or RAILCOLL_STORE, or MASTER_ADDR as torchrun
// sets it: the ways that were there first still win); else null. Throws
// RuntimeError(Bootstrap) when the launcher is there but cannot be used (its
// library missing, this railcoll built without its client, a failed call):
// never a silent fall back to variables that would then lack a store.
// `deadline` (monotonic seconds, now_seconds()) bounds its waits.
std::unique_ptr<LauncherExchange> launcher_exchange(const Settings& settings, double deadline);

// Who this process is by the launcher: rank, size, node (unless RAILCOLL_NODE
// says) and job (unless RAILCOLL_JOB_ID says). Unless RAILCOLL_JOB_KEY gave
// one, the job key the ranks share goes into `settings`: rank 0's random one,
// sent through the launcher's exchange. Every rank calls it (it exchanges).
Identity launcher_identity(LauncherExchange& x, Settings* settings);

// A client's library (libpmix.so.2, libpmi2.so.0), loaded by a process its
// launcher started; the errors say that (`started`: "a PMIx server started
// this process (PMIX_NAMESPACE is set)") and which package has it.
void* load_client_library(const char* soname, const char* started, const char* package);
// `name` from it, or RuntimeError(Bootstrap).
void* client_symbol(void* library, const char* soname, const char* name);

// The clients, each in its own file; null when its launcher is not there.
std::unique_ptr<LauncherExchange> open_pmix(double deadline);
std::unique_ptr<LauncherExchange> open_pmi2(double deadline);

}  // namespace railcoll::rt
