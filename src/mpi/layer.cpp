// The layer's life: MPI_Init / MPI_Init_thread (the ranks agree on what may be
// served and learn their node), MPI_Finalize (the verbose report, outstanding
// requests let go and every railcoll communicator destroyed before MPI goes),
// and the names of calls and reasons.
#include <dlfcn.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "mpi/layer.hpp"

namespace railcoll::mpi {

namespace {

struct CollName {
  const char* mpi;
  const char* env;
};
constexpr CollName kCollNames[kColls] = {
    {"MPI_Allgather", "allgather"},
    {"MPI_Allgatherv", "allgatherv"},
    {"MPI_Bcast", "bcast"},
    {"MPI_Gather", "gather"},
    {"MPI_Allreduce", "allreduce"},
    {"MPI_Barrier", "barrier"},
    {"MPI_Reduce_scatter_block", "reduce_scatter_block"},
    {"MPI_Reduce_scatter", "reduce_scatter"},
    {"MPI_Reduce", "reduce"},
    {"MPI_Alltoall", "alltoall"},
    {"MPI_Alltoallv", "alltoallv"},
    {"MPI_Scatter", "scatter"},
    {"MPI_Scatterv", "scatterv"},
    {"MPI_Gatherv", "gatherv"},
    {"MPI_Scan", "scan"},
    {"MPI_Exscan", "exscan"},
    {"MPI_Alltoallw", "alltoallw"},
};

constexpr const char* kReasonTexts[kReasons] = {
    "not in RAILCOLL_MPI_COLLS", "invalid argument", "intercommunicator",
    "one rank", "datatype railcoll does not reduce", "operator",
    "railcoll set-up failed"};

constexpr unsigned kAllColls = (1u << kColls) - 1;

// "MPI_Allgather" -> "MPI_Iallgather", "MPI_Allgather_init".
struct ModeNames {
  std::string name[kModes][kColls];
  ModeNames() {
    for (int c = 0; c < kColls; ++c) {
      const std::string blocking = kCollNames[c].mpi;
      std::string rest = blocking.substr(4);
      rest[0] = static_cast<char>(tolower(rest[0]));
      name[0][c] = blocking;
      name[1][c] = "MPI_I" + rest;
      name[2][c] = blocking + "_init";
    }
  }
};
const ModeNames& mode_names() {
  static const ModeNames names;
  return names;
}

// A bad setting ends the process in MPI_Init, before MPI starts (a launcher
// then ends the job, and nothing of MPI's can lose the message).
[[noreturn]] void refuse(const std::string& msg) {
  std::string line = "railcoll-mpi: " + msg + "\n";
  if (write(2, line.data(), line.size()) < 0) {
  }
  exit(2);
}

// RAILCOLL_MPI_COLLS: a comma-separated list of collectives, "all" (the
// default) or "none". A wrong name ends the process at MPI_Init with a message.
unsigned selected_colls() {
  const char* v = getenv("RAILCOLL_MPI_COLLS");
  if (!v || !*v) return kAllColls;
  unsigned mask = 0;
  std::stringstream list(v);
  for (std::string name; std::getline(list, name, ',');) {
    if (name == "all") {
      mask = kAllColls;
      continue;
    }
    if (name == "none") continue;
    int c = 0;
    while (c < kColls && name != kCollNames[c].env) ++c;
    if (c == kColls) {
      std::string known;
      for (auto& n : kCollNames) known += std::string(n.env) + ", ";
      refuse("RAILCOLL_MPI_COLLS=" + std::string(v) + ": unknown collective '" + name + "' (" + known +
             "all or none)");
    }
    mask |= 1u << c;
  }
  return mask;
}

int verbosity() {
  const char* v = getenv("RAILCOLL_MPI_VERBOSE");
  if (!v || !*v) return 0;
  char* end = nullptr;
  long n = strtol(v, &end, 10);
  if (*end || n < 0 || n > 2) refuse("RAILCOLL_MPI_VERBOSE=" + std::string(v) + ": expected 0, 1 or 2");
  return static_cast<int>(n);
}

// A preloaded library built for the other MPI ABI would pass its handles to
// functions that read them differently: say so before anything else runs.
// (MPI_Get_library_version may be called before MPI_Init, and takes no handle.)
void check_abi() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  PMPI_Get_library_version(version, &len);
#ifdef OPEN_MPI
  const bool ours = strstr(version, "Open MPI") != nullptr;
  const char* built = "Open MPI", *other = "lib/mpich/librailcoll_mpi.so (the MPICH ABI)";
#else
  const bool ours = strstr(version, "Open MPI") == nullptr;
  const char* built = "the MPICH ABI (MPICH, Intel MPI, MVAPICH)", *other = "lib/librailcoll_mpi.so (Open MPI)";
#endif
  if (ours) return;
  Dl_info self{};
  dladdr(reinterpret_cast<void*>(&check_abi), &self);
  std::string first_line(version, strcspn(version, "\n"));
  for (char& ch : first_line)
    if (ch == '\t') ch = ' ';
  std::string msg = std::string("railcoll-mpi: ") + (self.dli_fname ? self.dli_fname : "this library") +
                    " was built for " + built + " but the program runs " + first_line + "; use " + other +
                    " of the same railcoll (docs/mpi.md)\n";
  if (write(2, msg.data(), msg.size()) < 0) {
  }
  abort();
}

// This rank's node as MPI sees it (MPI_COMM_TYPE_SHARED), and what railcoll's
// waits need to know of it.
struct Node {
  std::string id;
  int ranks = 1;            // the job's ranks on this node
  int local = 0;            // this rank among them
  bool one_session = true;  // all of them in one session (so one autogroup)
};

// Node identity: the ranks of one MPI_COMM_TYPE_SHARED group share a random
// token drawn by the group's first rank, so two communicators of different
// jobs (spawned, merged) never mistake each other's nodes for one.
// RAILCOLL_NODE, when set, splits a node further (pretend nodes, as with
// `railcoll run --ppn`), never joins two.
Node this_node() {
  MPI_Comm group;
  PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &group);
  Node node;
  PMPI_Comm_rank(group, &node.local);
  PMPI_Comm_size(group, &node.ranks);
  uint64_t token = 0;
  if (node.local == 0) {
    std::random_device rd;
    token = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }
  PMPI_Bcast(&token, 8, MPI_BYTE, 0, group);
  const long long session = getsid(0);
  std::vector<long long> sessions(static_cast<size_t>(node.ranks));
  PMPI_Allgather(&session, 1, MPI_LONG_LONG, sessions.data(), 1, MPI_LONG_LONG, group);
  for (long long s : sessions) node.one_session = node.one_session && s == session;
  PMPI_Comm_free(&group);
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(token));
  node.id = std::string("mpi-") + hex;
  if (const char* pretend = getenv("RAILCOLL_NODE"); pretend && *pretend) node.id += std::string("/") + pretend;
  return node;
}

// railcoll's waits spin a little (RAILCOLL_SPIN_US), yielding the core with
// sched_yield, before they sleep. sched_yield hands the core only to tasks of
// the caller's own scheduling group, and with the kernel's autogroup each
// session is a group: Hydra starts every rank in a session of its own (and a
// daemonized orted every node's ranks). On a node with more ranks than cores
// whose ranks are in different sessions, a spinning rank keeps the core its
// peers need (4 KiB all-gathers of 16 ranks on 2 cores took 10-20 ms instead
// of 1-3 ms): there railcoll's waits sleep at once (RAILCOLL_SPIN_US=0) unless
// the user chose, much as Open MPI stops busy-polling on a node it finds
// oversubscribed (mpi_yield_when_idle). docs/mpi.md, "Performance".
void sleep_if_spinning_hurts(const Node& node) {
  cpu_set_t cores;
  CPU_ZERO(&cores);
  const bool have_cores = sched_getaffinity(0, sizeof cores, &cores) == 0;
  // A wait over MPI's and railcoll's requests at once (requests.cpp) polls as
  // railcoll's waits spin: 2 ms where every rank has a core, else it sleeps
  // between polls at once; RAILCOLL_SPIN_US decides when set.
  const char* spin = getenv("RAILCOLL_SPIN_US");
  layer().spin_us = spin && *spin ? atoi(spin) : (have_cores && node.ranks <= CPU_COUNT(&cores) ? 2000 : 0);
  if (!have_cores || node.ranks <= CPU_COUNT(&cores)) return;
  std::ifstream autogroup("/proc/sys/kernel/sched_autogroup_enabled");
  int grouped = 0;
  if (node.one_session || !(autogroup >> grouped) || !grouped || getenv("RAILCOLL_SPIN_US")) return;
  setenv("RAILCOLL_SPIN_US", "0", 0);
  if (layer().verbose >= 2 && node.local == 0)
    fprintf(stderr, "railcoll-mpi: rank %d: %d ranks in several sessions on this node's %d cores: railcoll's waits "
                    "sleep at once (RAILCOLL_SPIN_US=0; set it to choose)\n",
            layer().world_rank, node.ranks, CPU_COUNT(&cores));
}

// Before PMPI_Init: the right ABI, the settings readable (RAILCOLL_MPI_*).
// Returns the collectives this rank's RAILCOLL_MPI_COLLS selects.
unsigned before_init() {
  check_abi();
  layer().verbose = verbosity();
  return selected_colls();
}

// After PMPI_Init: every rank's choices combined, so that a collective is
// served on all ranks or on none (one MPI_Allreduce over MPI_COMM_WORLD).
void start(unsigned selected) {
  Layer& L = layer();
  PMPI_Comm_rank(MPI_COMM_WORLD, &L.world_rank);
  // Every thread level is served: MPI_THREAD_MULTIPLE programs order the
  // calls on one communicator themselves (MPI requires it), and the layer
  // keeps its shared state locked (docs/mpi.md, "Threads").
  unsigned both[2] = {selected, ~selected}, agreed[2] = {0, 0};
  PMPI_Allreduce(both, agreed, 2, MPI_UNSIGNED, MPI_BAND, MPI_COMM_WORLD);
  const unsigned all = agreed[0], any = ~agreed[1];
  L.colls = all & kAllColls;
  if (L.world_rank == 0 && (any & kAllColls) != (all & kAllColls))
    fprintf(stderr, "railcoll-mpi: the ranks' RAILCOLL_MPI_COLLS differ; railcoll serves only what every rank "
                    "selected\n");
  const Node node = this_node();
  L.node = node.id;
  PMPI_Comm_dup(MPI_COMM_WORLD, &L.poke);
  sleep_if_spinning_hurts(node);
  L.started = true;
}

// A line per blocking collective, and per nonblocking or persistent form the
// program made (a persistent call counts once, at its MPI_*_init).
void report() {
  Layer& L = layer();
  for (int m = 0; m < kModes; ++m)
    for (int c = 0; c < kColls; ++c) {
      uint64_t to_mpi = 0;
      std::string why;
      for (int r = 0; r < kReasons; ++r) {
        uint64_t n = L.passed[m][c][r].load();
        if (!n) continue;
        to_mpi += n;
        why += std::string(why.empty() ? " (" : ", ") + kReasonTexts[r] + " " + std::to_string(n);
      }
      const uint64_t served = L.served[m][c].load();
      if (m != 0 && !served && !to_mpi) continue;
      const std::string line = "railcoll-mpi: rank " + std::to_string(L.world_rank) + ": " +
                               mode_names().name[m][c] + " railcoll=" + std::to_string(served) +
                               " mpi=" + std::to_string(to_mpi) + (why.empty() ? "" : why + ")") + "\n";
      // One write a line: a write to a pipe is atomic only up to PIPE_BUF
      // (4 KiB), which the whole report passes, so the ranks' reports would
      // interleave inside lines.
      if (write(2, line.data(), line.size()) < 0) {
      }
    }
}

}  // namespace

Layer& layer() {
  static Layer L;
  return L;
}
const char* mpi_name(Coll c, Mode m) {
  return mode_names().name[static_cast<int>(m)][static_cast<int>(c)].c_str();
}
const char* env_name(Coll c) { return kCollNames[static_cast<int>(c)].env; }
const char* reason_text(Reason r) { return kReasonTexts[static_cast<int>(r)]; }

}  // namespace railcoll::mpi

using namespace railcoll::mpi;

extern "C" {

int MPI_Init(int* argc, char*** argv) {
  const unsigned selected = before_init();
  int rc = PMPI_Init(argc, argv);
  if (rc != MPI_SUCCESS) return rc;
  start(selected);
  return rc;
}

int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  const unsigned selected = before_init();
  int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc != MPI_SUCCESS) return rc;
  start(selected);
  return rc;
}

int MPI_Finalize(void) {
  Layer& L = layer();
  if (L.started) {
    if (L.verbose) report();
    requests_finalize();
    comms_finalize();
    requests_forget();
    datatypes_finalize();
    ops_finalize();
    thread_stage().release();
    if (L.poke != MPI_COMM_NULL) PMPI_Comm_free(&L.poke);
    L.started = false;
  }
  return PMPI_Finalize();
}

}  // extern "C"
