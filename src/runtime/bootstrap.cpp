// Reading the environment: which launcher started this process (railcoll's own,
// torchrun, Open MPI, Hydra, Slurm), where the store is, and the RAILCOLL_*
// settings. Separate from the communicator because it is plain parsing, run
// before any socket or segment exists, and callers use it on its own
// (railcoll_comm_init_explicit takes only the settings).
#include "runtime/bootstrap.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "runtime/net.hpp"

namespace railcoll::rt {

namespace {

const char* env(const char* name) {
  const char* v = getenv(name);
  return v && *v ? v : nullptr;
}

int env_int(const char* name, int dflt) {
  const char* v = env(name);
  if (!v) return dflt;
  char* end = nullptr;
  long x = strtol(v, &end, 10);
  if (*end || x < 0 || x > (1 << 24))
    throw RuntimeError(Status::Bootstrap, std::string(name) + "='" + v + "' is not a valid number");
  return static_cast<int>(x);
}

}  // namespace

Bootstrap settings_from_env(std::exception_ptr* bad) {
  Bootstrap b;
  // A wrong value throws at once, or (bad given) is kept in *bad, the first
  // one, and leaves the default, so the rank can still take part in set-up.
  auto read = [&](auto parse) {
    try {
      parse();
    } catch (...) {
      if (!bad) throw;
      if (!*bad) *bad = std::current_exception();
    }
  };
  if (env("RAILCOLL_JOB_ID")) b.job_id = env("RAILCOLL_JOB_ID");
  if (env("RAILCOLL_JOB_KEY")) b.job_key = env("RAILCOLL_JOB_KEY");
  if (env("RAILCOLL_NODE")) {
    b.node_id = std::string("node:") + env("RAILCOLL_NODE");
  } else {
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    b.node_id = std::string("host:") + host;
  }
  if (env("RAILCOLL_RAILS")) b.rails_spec = env("RAILCOLL_RAILS");
  read([&] {
    if (const char* t = env("RAILCOLL_TIMEOUT")) {
      char* end = nullptr;
      double x = strtod(t, &end);
      if (*end || !(x > 0) || x > 86400 * 7)
        throw RuntimeError(Status::Bootstrap, std::string("RAILCOLL_TIMEOUT='") + t + "' is not a number of seconds");
      b.timeout = x;
    }
  });
  read([&] {
    if (const char* t = env("RAILCOLL_RAIL_TIMEOUT")) {
      char* end = nullptr;
      double x = strtod(t, &end);
      if (*end || !(x > 0) || x > 3600)
        throw RuntimeError(Status::Bootstrap,
                           std::string("RAILCOLL_RAIL_TIMEOUT='") + t + "' is not a number of seconds");
      b.rail_timeout = x;
    }
  });
  read([&] {
    const int x = env_int("RAILCOLL_STRIPE_BYTES", static_cast<int>(b.stripe_bytes));
    if (x < 1) throw RuntimeError(Status::Bootstrap, "RAILCOLL_STRIPE_BYTES must be at least 1");
    b.stripe_bytes = static_cast<uint64_t>(x);
  });
  read([&] {
    if (env("RAILCOLL_NOTSENT_LOWAT")) b.notsent_lowat = env_int("RAILCOLL_NOTSENT_LOWAT", 0);
  });
  read([&] {
    if (const char* t = env("RAILCOLL_TCP_CONGESTION")) b.tcp_congestion = t;
  });
  read([&] {
    if (env("RAILCOLL_SPIN_US")) b.spin_seconds = env_int("RAILCOLL_SPIN_US", 0) * 1e-6, b.spin_given = true;
  });
  read([&] {
    if (env("RAILCOLL_PROGRESS_THREAD")) b.progress_thread = env_int("RAILCOLL_PROGRESS_THREAD", 1) != 0;
  });
  read([&] {
    const char* t = env("RAILCOLL_PROGRESS_NICE");
    if (!t) return;
    char* end = nullptr;
    const long v = strtol(t, &end, 10);
    if (!*t || *end || v < -20 || v > 19)
      throw RuntimeError(Status::Bootstrap,
                         std::string("RAILCOLL_PROGRESS_NICE='") + t + "' is not a nice value (-20 to 19)");
    b.progress_nice = static_cast<int>(v);
    b.progress_nice_given = true;
  });
  read([&] {
    if (env("RAILCOLL_SHM_MIB"))
      b.shm_bytes = static_cast<uint64_t>(std::max(1, env_int("RAILCOLL_SHM_MIB", 256))) << 20;
  });
  read([&] {
    if (const char* t = env("RAILCOLL_TRANSPORT")) {
      b.transport = t;
      if (b.transport != "tcp" && b.transport != "ofi")
        throw RuntimeError(Status::Bootstrap, std::string("RAILCOLL_TRANSPORT='") + t + "': say tcp or ofi");
    }
  });
  if (env("RAILCOLL_OFI_PROVIDER")) b.ofi_provider = env("RAILCOLL_OFI_PROVIDER");
  read([&] { b.ofi_strict_mr = env_int("RAILCOLL_OFI_STRICT_MR", 0) != 0; });
  read([&] { b.ofi_verbose = env_int("RAILCOLL_OFI_VERBOSE", 0) != 0; });
  read([&] {
    if (env("RAILCOLL_OFI_RMA_BYTES")) b.ofi_rma_bytes = std::max(0, env_int("RAILCOLL_OFI_RMA_BYTES", 0));
  });
  read([&] {
    if (env("RAILCOLL_TEST_REPLAY_CALL"))
      b.replay_call = static_cast<uint64_t>(env_int("RAILCOLL_TEST_REPLAY_CALL", 0));
  });
  return b;
}

Bootstrap bootstrap_from_env(std::exception_ptr* bad) {
  Bootstrap b = settings_from_env(bad);
  struct Source {
    const char *rank, *size, *name;
  };
  const Source sources[] = {{"RAILCOLL_RANK", "RAILCOLL_SIZE", "railcoll"},
                            {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI"},
                            {"PMI_RANK", "PMI_SIZE", "Hydra"},
                            {"SLURM_PROCID", "SLURM_NTASKS", "Slurm"},
                            {"RANK", "WORLD_SIZE", "torchrun"}};
  b.source = "none (a single process)";
  for (auto& s : sources) {
    if (!env(s.rank) || !env(s.size)) continue;
    b.rank = env_int(s.rank, 0);
    b.size = env_int(s.size, 1);
    b.source = s.name;
    break;
  }
  if (b.size < 1 || b.rank >= b.size)
    throw RuntimeError(Status::Bootstrap, "rank " + std::to_string(b.rank) + " is not below size " +
                                                   std::to_string(b.size) + " (from " + b.source + " variables)");
  if (env("RAILCOLL_STORE"))
    b.store = env("RAILCOLL_STORE");
  else if (env("MASTER_ADDR") && env("MASTER_PORT"))
    b.store = std::string(env("MASTER_ADDR")) + ":" + env("MASTER_PORT");
  if (b.size > 1 && b.store.empty())
    throw RuntimeError(Status::Bootstrap,
                       "no store address: set RAILCOLL_STORE=host:port (rank 0 listens there) or MASTER_ADDR and "
                       "MASTER_PORT; railcoll run and railcoll cluster run set it, and under srun --mpi=pmix (or "
                       "pmi2), mpirun or prterun none is needed");
  return b;
}

}  // namespace railcoll::rt
