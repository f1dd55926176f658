// Running the processes of one job and watching them: the core of
// `railcoll run` and `railcoll cluster run` (and of the benchmark's drivers).
// Every rank gets the RAILCOLL_* environment the runtime bootstraps from
// (docs/runtime.md, "Environment").
//
// As mpirun does: each rank's stdout and stderr come through pipes and are
// forwarded a whole line at a time (optionally "[rank] "-prefixed), so lines of
// different ranks never interleave mid-line; a rank's unfinished last line is
// forwarded when it exits, ended with a newline (as is a piece of a line
// longer than 64 KiB). Only rank 0 reads the launcher's stdin, which the
// launcher copies into a pipe as rank 0 takes it (a rank in a process group of
// its own may not read the terminal; a launcher in the background of a
// terminal reads nothing and rank 0 gets end of file); the others get
// /dev/null. When a rank fails, the others are ended at once (SIGTERM, 3 s
// later SIGKILL) unless a grace period lets them finish on their own first
// (fault-tolerance jobs whose survivors recover), and the result names the
// first rank that failed, in time order, with every rank's status.
#pragma once
#include <ctime>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "testbed/spawn.hpp"

namespace railcoll::testbed {

struct RankProcess {
  std::vector<std::string> argv;           // full command line (may start with a wrapper)
  std::map<std::string, std::string> env;  // added to the launcher's environment
  std::string where;                       // for the status lines: "rc-n1", "" locally
};

struct JobOptions {
  // After the first failure the other ranks may run this long before they are
  // ended (0: at once).
  double grace_seconds = 0;
  double timeout_seconds = 0;  // the whole job; 0: no limit
  bool tag_output = false;     // "[rank] " before every forwarded line
  // On a failure, ask the ranks still running for their flight records
  // (SIGUSR1, which railcoll's recorder answers by writing them) a moment
  // before they are ended.
  bool ask_for_flight_records = false;
  // Where a rank's output goes, one line at a time, each with its '\n'; a line
  // longer than 64 KiB comes in pieces, each but the last without '\n' (join
  // them). Default: written to the launcher's stdout/stderr.
  std::function<void(int rank, bool is_stderr, const std::string& line)> on_line;
};

struct RankStatus {
  bool started = false;
  bool ended_by_launcher = false;  // still running when the launcher signalled it
  ExitStatus status;
  double seconds = 0;              // from the start of the job to its exit
  std::string where;
  // "exited with status 0", "killed by signal 9 (SIGKILL)", "ended by the
  // launcher (SIGTERM)", "not started".
  std::string text() const;
};

struct JobResult {
  int exit_status = 0;       // 0 if every rank exited 0; else the cause's status (124: time limit)
  std::string failure;       // the cause: "rank 3 exited with status 1", "the job exceeded ..."
  int first_failed_rank = -1;
  std::vector<RankStatus> ranks;
  // One line per rank ("  rank 3 (rc-n1): exited with status 1  <- first to fail").
  std::string rank_report() const;
};

// Starts every rank and waits for all. SIGINT/SIGTERM to the launcher are
// forwarded to the ranks.
JobResult run_job(const std::vector<RankProcess>& ranks, const JobOptions& options);

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

// ---- flight records (docs/observability.md, "Launchers gather them")

// Where the ranks of one job write their flight records, so that a failed
// job's records are in one place: RAILCOLL_FLIGHT_DIR when the launcher's
// environment has it, else a directory made for the job. It is set in this
// process's environment (every rank inherits it, through an MPI launcher too).
// A directory made here is removed after a job that succeeded.
class JobFlightRecords {
 public:
  JobFlightRecords();
  ~JobFlightRecords();
  JobFlightRecords(const JobFlightRecords&) = delete;
  JobFlightRecords& operator=(const JobFlightRecords&) = delete;
  // After the job: for a failed one, where its records are and how to read
  // them ("the flight records of ranks 0-4 (5 of 6) are in DIR; railcoll
  // doctor DIR reads them"); "" for one that succeeded or left no record.
  std::string report(const JobResult& result, int ranks);

 private:
  std::string dir_;
  bool made_ = false, keep_ = false;
  time_t start_ = 0;  // records older than the job are another job's
};

// The ranks with a record (flight-<comm>-rank<R>.txt) in dir written since
// `since` (seconds since the epoch), sorted.
std::vector<int> flight_record_ranks(const std::string& dir, time_t since = 0);

// ---- layouts: ranks per node, numbered node-major (node 0's ranks first)

// n ranks, ppn per node: full nodes, then one with the rest ("13, 5" -> 5,5,3).
std::vector<int> layout_of(int n, int ppn);
// "4,0,12" -> {4, 0, 12} when every item is a whole number in [min, max].
std::optional<std::vector<int>> parse_number_list(const std::string& text, int min, int max);
// "5,5,3" <-> {5, 5, 3}; parse_layout throws InputError on anything else.
std::vector<int> parse_layout(const std::string& text, const std::string& what = "--layout");
std::string layout_text(const std::vector<int>& layout);
int layout_ranks(const std::vector<int>& layout);

// ---- the local launcher (`railcoll run`)

struct LocalJob {
  std::vector<int> layout;     // ranks per node
  bool pretend_nodes = false;  // false: one real node (RAILCOLL_NODE unset: the hostname)
  int rails = 1;               // loopback addresses 127.0.0.1..K as rails
  std::vector<std::string> program;
};
// Runs it; the job's shared-memory segments are removed afterwards whatever happened.
JobResult run_local_job(const LocalJob& job, const JobOptions& options);

}  // namespace railcoll::testbed
