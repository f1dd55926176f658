// librailcoll_mpi.so: railcoll's collectives for unmodified MPI programs
// (docs/mpi.md). It defines MPI_Allgather, MPI_Allgatherv, MPI_Bcast,
// MPI_Gather, MPI_Gatherv, MPI_Scatter, MPI_Scatterv, MPI_Alltoall,
// MPI_Alltoallv, MPI_Allreduce, MPI_Reduce, MPI_Reduce_scatter_block,
// MPI_Reduce_scatter and MPI_Barrier over MPI's profiling interface
// (PMPI_*), their nonblocking forms (MPI_Iallgather, ...) and, where the
// MPI library declares them, their persistent forms (MPI_Allgather_init, or
// Open MPI's MPIX_Allgather_init), serves what railcoll can through the public
// C API (a railcoll communicator per MPI communicator, made on its first
// served call through railcoll_comm_init_oob over that communicator), and
// passes everything else to the PMPI_ function unchanged. The requests of
// served calls are MPI requests the completion calls (MPI_Wait, ...,
// MPI_Start) know (requests.cpp). Under MPI_THREAD_MULTIPLE calls on
// different communicators may run at once: the shared tables are locked, each
// thread keeps its own latest handles and staging buffers.
//
// The one rule every part keeps, without exception: whether railcoll or MPI
// serves a call is decided from what MPI requires every rank of the call to
// agree on (the communicator, the type signature -- its size and basic type,
// never its layout --, count, root, operator) and from what the ranks agreed on
// at MPI_Init (thread level, RAILCOLL_MPI_COLLS); a rank on railcoll and
// another on MPI in the same call would wait for each other for ever. A
// rank's buffer layout is its own business: a non-contiguous one is packed
// into a staging buffer before the call and unpacked after it (pack.cpp).
//
// Built once per MPI ABI (Open MPI; MPICH and its derivatives): the same
// sources against each mpi.h.
#pragma once
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <railcoll/railcoll.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace railcoll::mpi {

// ---- the calls this library may serve (layer.cpp) ----
enum class Coll {
  Allgather, Allgatherv, Bcast, Gather, Allreduce, Barrier,
  ReduceScatterBlock, ReduceScatter, Reduce, Alltoall, Alltoallv, Scatter, Scatterv, Gatherv,
  Scan, Exscan, Alltoallw,
  Count
};
constexpr int kColls = static_cast<int>(Coll::Count);
// How the program made the call: MPI_Allgather, MPI_Iallgather, MPI_Allgather_init.
enum class Mode { Blocking, Nonblocking, Persistent, Count };
constexpr int kModes = static_cast<int>(Mode::Count);
const char* mpi_name(Coll c, Mode m = Mode::Blocking);  // "MPI_Allgather", "MPI_Iallgather", "MPI_Allgather_init"
const char* env_name(Coll c);  // "allgather", as RAILCOLL_MPI_COLLS names it

// Why a call went to MPI's own collective (the verbose report's words).
enum class Reason {
  NotSelected,     // left out by RAILCOLL_MPI_COLLS (on some rank)
  BadArgument,     // null communicator or datatype, negative count: MPI reports it
  Intercomm,       // an intercommunicator
  OneRank,         // a communicator of one rank: nothing to move
  ReduceType,      // a datatype railcoll does not reduce
  Operator,        // an operator railcoll does not run (MPI_REPLACE, MPI_NO_OP, a user function made elsewhere)
  SetupFailed,     // railcoll's set-up failed on this communicator earlier
  Count
};
constexpr int kReasons = static_cast<int>(Reason::Count);
const char* reason_text(Reason r);

// What the ranks agreed on at MPI_Init, and the counters of the report.
struct Layer {
  bool started = false;  // MPI_Init went through this library
  unsigned colls = 0;    // bit c: collective c may be served (every rank's RAILCOLL_MPI_COLLS)
  int world_rank = 0;
  int verbose = 0;       // RAILCOLL_MPI_VERBOSE
  int spin_us = 0;       // how long a wait over MPI's and railcoll's requests polls before it sleeps (requests.cpp)
  std::string node;      // this rank's node identity for railcoll (layer.cpp, "node identity")
  MPI_Comm poke = MPI_COMM_NULL;  // a duplicate of MPI_COMM_WORLD nothing is sent on (poke_mpi_progress)
  std::atomic<uint64_t> served[kModes][kColls] = {};
  std::atomic<uint64_t> passed[kModes][kColls][kReasons] = {};
};
Layer& layer();
inline void count_passed(Coll c, Mode m, Reason r) {
  layer().passed[static_cast<int>(m)][static_cast<int>(c)][static_cast<int>(r)].fetch_add(1, std::memory_order_relaxed);
}

// A thread's own state in the calls' path: the initial-exec TLS model (an
// offset from the thread pointer, no __tls_get_addr call per access). The
// library is loaded with the program (preloaded or linked), so its few
// hundred bytes come from the static TLS block; dlopen'ing it would take them
// from glibc's spare static TLS, which suffices.
#define RAILCOLL_MPI_THREAD_LOCAL thread_local __attribute__((tls_model("initial-exec")))

// ---- the few handles of the latest calls ----
// The value kept for each of the last N handles seen (communicators, datatypes),
// so that a call finds what it needs without asking MPI: the PMPI_ queries a
// call made to find them (an attribute, the datatype's size and extents) cost
// 1-1.7 us here, and on 16 ranks sharing 2 cores every rank's microsecond
// before a collective showed about 8-fold in the slowest rank's time
// (docs/mpi.md, "Performance"). The values are not owned. Each thread keeps its
// own (thread_local: no lock in a call's path under MPI_THREAD_MULTIPLE).
// Whoever frees a value calls forget_everywhere() first (the attribute delete
// callbacks, which MPI calls before a handle can name another object), and
// every thread's recent handles are dropped at its next look, so a handle MPI
// reuses never finds a stale value. (A handle reaches another thread only
// through something that orders memory, after which that thread sees the
// forgetting.)
template <class Handle, class Value, int N = 4>
class Recent {
 public:
  Value* find(Handle h) {
    const uint64_t now = forgotten().load(std::memory_order_acquire);
    if (now != seen_) {
      clear();
      seen_ = now;
      return nullptr;
    }
    for (const Slot& s : slots_)
      if (s.value && s.handle == h) return s.value;
    return nullptr;
  }
  void add(Handle h, Value* v) {
    slots_[next_] = {h, v};
    next_ = (next_ + 1) % N;
  }
  static void forget_everywhere() { forgotten().fetch_add(1, std::memory_order_acq_rel); }
  void clear() {
    for (Slot& s : slots_) s = {};
  }

 private:
  static std::atomic<uint64_t>& forgotten() {
    static std::atomic<uint64_t> count{0};
    return count;
  }
  struct Slot {
    Handle handle{};
    Value* value = nullptr;
  };
  Slot slots_[N];
  int next_ = 0;
  uint64_t seen_ = 0;
};

// ---- datatypes and operators (datatypes.cpp) ----
// `count` elements of a datatype as railcoll sees them.
struct DataView {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  int64_t count = 0;
  bool valid = false;       // the datatype and count are usable (else MPI reports the error)
  bool contiguous = false;  // the typemap is its bytes in order, in one piece (always true for 0 bytes); else packed
  uint64_t bytes = 0;       // the signature's size
  uint64_t type_size = 0;   // of one element
  MPI_Aint offset = 0;      // where the bytes start, from the buffer pointer (the true lower bound)
  MPI_Aint extent = 0;      // between consecutive elements (displacements count in it)
  int reduce_type = 0;      // railcoll_datatype_t its basic type reduces as; 0: none
  unsigned reduce_groups = 0;  // ReduceGroup bits: which of MPI's operators take it
  uint64_t reduce_count = 0;  // elements of reduce_type
  const void* at(const void* buf) const { return static_cast<const char*>(buf) + offset; }
  void* at(void* buf) const { return static_cast<char*>(buf) + offset; }
};
DataView view(MPI_Datatype type, int64_t count);
// One element's typemap, in MPI's order, is one run of ascending addresses
// with no gap (typemap.cpp): with extent = size, any number of them may be
// read and written in place; otherwise the layer packs.
bool typemap_in_order(MPI_Datatype type);
// MPI's groups of predefined types, as its predefined operators take them.
enum ReduceGroup : unsigned {
  kIntegerGroup = 1, kFloatingGroup = 2, kLogicalGroup = 4, kByteGroup = 8, kPairGroup = 16,
  kFortranIntegerGroup = 32  // MPI_INTEGER...: as C integers, but not for MPI_LAND, MPI_LOR, MPI_LXOR
};
// A predefined operator on a type of `groups` as railcoll_op_t; -1 when
// railcoll does not serve it, with *why: Operator (not one of MPI's
// arithmetic, logical, bitwise or location operators) or ReduceType (not defined on the
// type, or a type railcoll does not reduce). Both read shared facts only.
int railcoll_op(MPI_Op op, unsigned groups, Reason* why);
void datatypes_finalize();  // frees the datatype caches and their keyval

// ---- user-defined operators (ops.cpp) ----
// The railcoll operator that runs `op`, a C function the program made with
// MPI_Op_create, on `data`'s elements in place; -1 with *why when there is
// none: Operator (not made through this library, e.g. by Fortran bindings
// that call PMPI_Op_create) or ReduceType (a datatype whose elements are not
// one piece of `extent` bytes from the buffer's address, which the function
// would read differently). The datatype, like the operator, is the same on
// every rank of a reduction (MPI 4.0 §6.9.1), so the route may read its layout.
int user_op(MPI_Op op, const DataView& data, Reason* why);
void ops_finalize();  // frees railcoll's operators

// ---- non-contiguous buffers (pack.cpp) ----
// A buffer of the call in one piece for railcoll: its own bytes when the
// layout is contiguous, else a staging buffer (a call may need one for what it
// sends and one for what it receives). A blocking call uses its thread's,
// kept across calls; a nonblocking or persistent call owns its own until it is
// complete or freed (railcoll reads and writes them in the background).
enum class Staging { Send, Recv };
class Stage {
 public:
  Stage() = default;
  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;
  ~Stage() { release(); }
  // `bytes` of staging memory (grown, never shrunk, while the owner lives).
  char* get(Staging slot, uint64_t bytes);
  void release();

 private:
  struct Buffer {
    char* data = nullptr;
    uint64_t capacity = 0;
  };
  Buffer buffers_[2];
};
Stage& thread_stage();  // this thread's, for its blocking calls
// Packs `count` elements of v's type at `buf` into `to`; unpacks `from` into
// them. A contiguous type is one memcpy.
void pack_into(char* to, const void* buf, uint64_t count, const DataView& v);
void unpack_from(const char* from, void* buf, uint64_t count, const DataView& v);

// ---- communicators (comms.cpp) ----
// What a served call runs on. At a communicator's first served call its
// railcoll communicator is made (collective over `comm`).
struct CommState;
struct Target {
  railcoll_comm_t rc = nullptr;  // null: see `passed` / `error`
  bool passed = false;           // MPI serves this communicator (`why`)
  Reason why = Reason::SetupFailed;
  int error = MPI_SUCCESS;       // set-up failed now: the error the call returns
  int rank = 0, size = 0;
  CommState* state = nullptr;
};
// Which communicators railcoll may serve at all (intra, more than one rank);
// after the first call on `comm`, a look at the thread's few latest
// communicators (Recent), else one attribute lookup.
Target classify(MPI_Comm comm);
// The railcoll communicator of `comm`, made now if needed (`t` from classify).
void ensure_railcoll(MPI_Comm comm, const char* call, Target* t);
// A served request keeps its communicator's railcoll communicator alive
// after MPI_Comm_free until the request is complete or freed (MPI: pending
// operations complete normally); the last reference destroys it.
void hold(CommState* s);
void release(CommState* s);
// The communicator's error handler, or MPI_COMM_WORLD's once it was freed.
MPI_Comm errors_comm(const CommState* s);
// Destroys every railcoll communicator left (MPI_Finalize), newest first.
void comms_finalize();
// The railcoll communicator of a state (null before its first served call).
railcoll_comm_t railcoll_of(const CommState* s);
// One turn of MPI's progress engine, completing nothing of the program's: a
// PMPI_Iprobe on Layer::poke (Open MPI progresses on any communicator, MPICH
// 4.0 not on a one-rank one). railcoll's waits run it while they sleep
// (railcoll_comm_set_wait_hook), so a peer waiting inside MPI for this rank's
// MPI (the rest of a large send, a round of MPI's own nonblocking
// collective) is not starved while this rank waits inside railcoll.
void poke_mpi_progress(void* = nullptr);

// ---- requests of nonblocking and persistent calls (requests.cpp) ----
// MPI_Finalize: every outstanding request let go (railcoll's and the MPI
// handles), before the railcoll communicators are destroyed; then their
// memory, after.
void requests_finalize();
void requests_forget();
// Served calls finish what requests freed by the program still need (unpacking).
void reap_freed();

// ---- errors (errors.cpp) ----
// A railcoll failure in call `c` on `comm`: an MPI error code whose
// MPI_Error_string is railcoll's message, handed to the communicator's error
// handler (with MPI_ERRORS_ARE_FATAL the message goes to stderr first); the
// code is returned when the handler returns.
int raise_railcoll(MPI_Comm comm, const char* call, railcoll_status_t status, const std::string& detail);
// The same in two steps, for a request: the code when railcoll reports the
// failure (its message read at once), the handler when a completion call
// reports it.
int railcoll_error_code(const char* call, railcoll_status_t status, const std::string& detail);
int call_errhandler(MPI_Comm comm, int code);
// An argument error found by this library, in one of MPI's own classes.
int raise_mpi(MPI_Comm comm, const char* call, int error_class, const std::string& detail);

}  // namespace railcoll::mpi
