// Starting and watching the processes of one job (used by `railcoll run` and
// `railcoll cluster run`). Every rank gets the RAILCOLL_* environment the
// runtime bootstraps from (see docs/runtime.md, "Environment").
#pragma once
#include <map>
#include <string>
#include <vector>

namespace railcoll::launch {

struct RankProcess {
  std::vector<std::string> argv;            // full command line (may start with a wrapper)
  std::map<std::string, std::string> env;   // added to the launcher's environment
};

struct JobResult {
  int exit_status = 0;        // 0 if every rank exited 0; else the first failure's status
  std::string failure;        // "rank 3 exited with status 1" / "rank 2 killed by signal 9"
};

// Starts every rank, waits for all. When one rank fails, the others get
// `grace_seconds` to finish on their own (they should see the failure and
// return an error), then SIGTERM, then SIGKILL. A wall-clock limit of
// `timeout_seconds` (0 = none) kills the whole job. SIGINT/SIGTERM to the
// launcher are forwarded to the ranks.
JobResult run_job(const std::vector<RankProcess>& ranks, double grace_seconds = 10, double timeout_seconds = 0);

// A random id for a job: 16 hex digits.
std::string new_job_id();
// A secret for a job (RAILCOLL_JOB_KEY): 32 hex digits from the kernel's random source.
std::string new_job_key();

// A port for the job's store: random below the kernel's ephemeral range (so no
// socket the job's ranks open themselves can take it before rank 0 binds it),
// and free on `address` now (best effort: checked with a bind).
int free_port(const std::string& address);

// The standard environment of rank `rank` of a job.
std::map<std::string, std::string> rank_env(int rank, int size, int local_rank, int local_size, int node,
                                            const std::string& store, const std::string& job_id,
                                            const std::string& job_key, const std::string& rails);

}  // namespace railcoll::launch
