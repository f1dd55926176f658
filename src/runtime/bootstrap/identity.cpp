// The identity sources (identity.hpp): which launcher started this process,
// and what its variables say.
#include "runtime/bootstrap/identity.hpp"

#include <unistd.h>

#include <cstdlib>

#include "core/errors.hpp"

namespace railcoll::rt {

namespace {

const char* env(const char* name) {
  const char* v = getenv(name);
  return v && *v ? v : nullptr;
}

int env_int(const char* name) {
  const char* v = env(name);
  char* end = nullptr;
  const long x = strtol(v, &end, 10);
  if (*end || x < 0 || x > (1 << 24))
    throw RuntimeError(Status::Bootstrap, std::string(name) + "='" + v + "' is not a valid number");
  return static_cast<int>(x);
}

// A launcher that says rank and size in two variables of its own.
template <const char* kRank, const char* kSize>
bool from_variables(const Settings&, Identity* out) {
  if (!env(kRank) || !env(kSize)) return false;
  out->rank = env_int(kRank);
  out->size = env_int(kSize);
  return true;
}

bool from_railcoll(const Settings& s, Identity* out) {
  if (!s.given(Setting::Rank) || !s.given(Setting::Size)) return false;
  out->rank = static_cast<int>(s.integer(Setting::Rank));
  out->size = static_cast<int>(s.integer(Setting::Size));
  return true;
}

constexpr char kOmpiRank[] = "OMPI_COMM_WORLD_RANK", kOmpiSize[] = "OMPI_COMM_WORLD_SIZE";
constexpr char kPmiRank[] = "PMI_RANK", kPmiSize[] = "PMI_SIZE";
constexpr char kSlurmRank[] = "SLURM_PROCID", kSlurmSize[] = "SLURM_NTASKS";
constexpr char kTorchRank[] = "RANK", kTorchSize[] = "WORLD_SIZE";

}  // namespace

const std::vector<IdentitySource>& identity_sources() {
  static const std::vector<IdentitySource> sources = {
      {"railcoll", from_railcoll},
      {"Open MPI", from_variables<kOmpiRank, kOmpiSize>},
      {"Hydra", from_variables<kPmiRank, kPmiSize>},
      {"Slurm", from_variables<kSlurmRank, kSlurmSize>},
      {"torchrun", from_variables<kTorchRank, kTorchSize>},
  };
  return sources;
}

Identity local_identity(const Settings& s) {
  Identity id;
  id.job_id = s.text(Setting::JobId);
  if (s.given(Setting::Node)) {
    id.node_id = "node:" + s.text(Setting::Node);
  } else {
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    id.node_id = std::string("host:") + host;
  }
  return id;
}

Identity identity_from_env(const Settings& s) {
  Identity id = local_identity(s);
  id.source = "none (a single process)";
  for (const IdentitySource& source : identity_sources()) {
    if (!source.read(s, &id)) continue;
    id.source = source.name;
    break;
  }
  if (id.size < 1 || id.rank >= id.size)
    throw RuntimeError(Status::Bootstrap, "rank " + std::to_string(id.rank) + " is not below size " +
                                              std::to_string(id.size) + " (from " + id.source + " variables)");
  if (s.given(Setting::Store))
    id.store = s.text(Setting::Store);
  else if (env("MASTER_ADDR") && env("MASTER_PORT"))
    id.store = std::string(env("MASTER_ADDR")) + ":" + env("MASTER_PORT");
  if (id.size > 1 && id.store.empty())
    throw RuntimeError(Status::Bootstrap,
                       "no store address: set RAILCOLL_STORE=host:port (rank 0 listens there) or MASTER_ADDR and "
                       "MASTER_PORT; railcoll run and railcoll cluster run set it, and under srun --mpi=pmix (or "
                       "pmi2), mpirun or prterun none is needed");
  return id;
}

}  // namespace railcoll::rt
