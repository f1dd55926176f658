// One served call, from the route's "railcoll" to railcoll's call, in any of
// the three forms a program makes it (MPI_Allgather, MPI_Iallgather,
// MPI_Allgather_init): the memory it hands railcoll (a non-contiguous layout
// packed into staging), what is done before the data moves (packing: now, or
// at every MPI_Start of a persistent call) and after it arrived (unpacking:
// now, or when a completion call finds the request done), and, for a
// nonblocking or persistent call, the request the program gets (requests.cpp).
// Each collective is one body for its three forms (collectives.cpp,
// reductions.cpp, personalised.cpp); only the PMPI_ call it passes to when
// MPI serves it and railcoll's function differ.
#pragma once
#include <utility>

#include "mpi/route.hpp"

// The persistent forms this MPI declares: MPI-4's MPI_Allgather_init (also
// Open MPI 5's, which says MPI 3.1 but took the MPI-4 names and dropped its
// MPIX_ ones: open-mpi/ompi#9456), or Open MPI 4's extension
// MPIX_Allgather_init (mpi-ext.h, "pcollreq").
#if MPI_VERSION >= 4 || (defined(OPEN_MPI) && OMPI_MAJOR_VERSION >= 5)
#define RAILCOLL_MPI_PERSISTENT 1
#define MPI_PERSISTENT(name) MPI_##name##_init
#define PMPI_PERSISTENT(name) PMPI_##name##_init
#elif defined(OPEN_MPI)
#include <mpi-ext.h>
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define RAILCOLL_MPI_PERSISTENT 1
#define MPI_PERSISTENT(name) MPIX_##name##_init
#define PMPI_PERSISTENT(name) PMPIX_##name##_init
#endif
#endif

namespace railcoll::mpi {

// A served nonblocking or persistent call from its start to its completion;
// requests.cpp keeps them by their MPI request.
struct Served {
  Mode mode = Mode::Nonblocking;
  Coll coll = Coll::Barrier;
  CommState* comm = nullptr;  // held (hold/release) while the request lives
  MPI_Comm errors = MPI_COMM_NULL;  // whose error handler reports a failure
  MPI_Request handle = MPI_REQUEST_NULL;  // the program's
  railcoll_request_t rc = RAILCOLL_REQUEST_NULL;
  bool active = false;    // started and not yet completed by a completion call
  bool finished = false;  // railcoll's part is over (outcome in `error`), the data unpacked
  int error = MPI_SUCCESS;  // an MPI error code whose string is railcoll's message
  Stage stage;
  std::vector<std::function<void()>> before;  // packing, at every start (persistent)
  std::vector<std::function<void()>> after;   // unpacking, at every completion
  // Duplicates of the datatypes its packing and unpacking read: the program
  // may free its own while the call runs (MPI: pending operations complete
  // normally), and MPI may give the freed handle to another type.
  std::vector<MPI_Datatype> types;
  ~Served();
};

// railcoll's options of a call in place or not.
inline railcoll_call_opts_t in_place_opts(bool in_place) { return {nullptr, in_place ? RAILCOLL_IN_PLACE : 0u}; }

// Gives a served request an MPI request of its own and keeps it (requests.cpp).
int adopt(std::unique_ptr<Served> s, MPI_Request* request);

class ServedCall {
 public:
  explicit ServedCall(Route& route) : route_(route), mode_(route.mode()) {
    if (mode_ != Mode::Blocking) served_.reset(new Served);
  }
  char* staging(Staging slot, uint64_t bytes) { return (served_ ? served_->stage : thread_stage()).get(slot, bytes); }
  // Work before the data moves: now, or at every start of a persistent call.
  template <class F>
  void before(F&& f) {
    if (mode_ == Mode::Persistent) served_->before.emplace_back(std::forward<F>(f));
    else f();
  }
  // Work once the data arrived: after the blocking call, or at completion.
  template <class F>
  void after(F&& f) {
    (served_ ? served_->after : after_).emplace_back(std::forward<F>(f));
  }
  // A layout this call packs or unpacks through MPI: for a nonblocking or
  // persistent call, on a duplicate of its datatype that the call holds until
  // it is freed, whatever the program frees meanwhile.
  DataView held(const DataView& v) {
    if (!served_ || v.contiguous) return v;
    DataView h = v;
    if (PMPI_Type_dup(v.type, &h.type) != MPI_SUCCESS) return v;
    served_->types.push_back(h.type);
    return h;
  }
  // `v.count` elements of buf as railcoll reads them: buf's own bytes, or staging they are packed into.
  const void* packed(const DataView& view, const void* buf, Staging slot) {
    if (view.contiguous) return view.at(buf);
    const DataView v = held(view);
    char* to = staging(slot, v.bytes);
    before([to, buf, v] { pack_into(to, buf, static_cast<uint64_t>(v.count), v); });
    return to;
  }
  // Where railcoll writes what belongs in buf: buf's own bytes, or staging
  // unpacked into buf once the data arrived.
  void* landing(const DataView& view, void* buf, Staging slot) {
    return view.contiguous ? view.at(buf) : land(held(view), buf, slot);
  }
  // In place with a non-contiguous layout: as landing(), and this rank's
  // block (block `me`, `block_count` elements) packed to its place first.
  void* landing_in_place(const DataView& view, void* buf, int me, int block_count) {
    if (view.contiguous) return view.at(buf);
    const DataView v = held(view);
    char* to = land(v, buf, Staging::Recv);
    const uint64_t first = static_cast<uint64_t>(me) * static_cast<uint64_t>(block_count);
    char* mine = static_cast<char*>(buf) + static_cast<MPI_Aint>(first) * v.extent;
    before([to = to + first * v.type_size, mine, block_count, v] {
      pack_into(to, mine, static_cast<uint64_t>(block_count), v);
    });
    return to;
  }

  // railcoll's call in this form: the blocking function, or the nonblocking
  // or persistent one, which makes the request the program gets.
  template <class Blocking, class Nonblocking, class Persistent, class... Args>
  int run(Blocking blocking, Nonblocking nonblocking, Persistent persistent, Args... args) {
    if (mode_ == Mode::Blocking) {
      const railcoll_status_t st = blocking(args...);
      if (st == RAILCOLL_OK)
        for (auto& f : after_) f();
      // Calls on a communicator complete in order: a request the program
      // freed before this call is over, and its data is unpacked now.
      reap_freed();
      return route_.finish(st);
    }
    return issued(mode_ == Mode::Nonblocking ? nonblocking(args..., &served_->rc) : persistent(args..., &served_->rc));
  }

 private:
  int issued(railcoll_status_t st);  // requests.cpp
  // Staging for a held non-contiguous layout, unpacked into buf at the end.
  char* land(const DataView& v, void* buf, Staging slot) {
    char* from = staging(slot, v.bytes);
    after([from, buf, v] { unpack_from(from, buf, static_cast<uint64_t>(v.count), v); });
    return from;
  }
  Route& route_;
  Mode mode_;
  std::unique_ptr<Served> served_;
  std::vector<std::function<void()>> after_;  // a blocking call's unpacking
};

}  // namespace railcoll::mpi
