// The Fortran entry points of the MPI layer (docs/mpi.md, "Fortran"). A Fortran
// program's MPI_ALLGATHER reaches the MPI library's Fortran binding, which in
// Open MPI (mpif.h, use mpi, use mpi_f08) calls PMPI_Allgather itself, past
// this library's MPI_Allgather; in MPICH the mpif.h and use mpi bindings call
// MPI_Allgather, but its mpi_f08 routines without a buffer (MPI_BARRIER,
// MPI_INIT, MPI_WAIT, ...) call PMPI_*. So where the binding goes around the C
// entry point, this library defines the binding's own symbols, under every
// name the MPI's Fortran libraries use (`nm -D libmpi_mpifh.so
// libmpi_usempif08.so`, `nm -D libmpichfort.so`): each converts the Fortran
// arguments (handles by MPI_*_f2c, the MPI_IN_PLACE and MPI_BOTTOM sentinels,
// statuses, 1-based indices, LOGICALs) and calls the C entry point, which
// serves or passes as for a C program.
#pragma once
#include <dlfcn.h>

#include <vector>

#include "mpi/call.hpp"

namespace railcoll::mpi::fortran {

static_assert(sizeof(MPI_Fint) == sizeof(int), "Fortran INTEGER arrays are passed as int arrays");

// A Fortran LOGICAL as gfortran (the compiler both MPIs' Fortran libraries
// here were built with) writes .TRUE. and .FALSE.
inline MPI_Fint logical(bool b) { return b ? 1 : 0; }

// The C buffer of a Fortran buffer argument: MPI_IN_PLACE and MPI_BOTTOM are
// variables in the MPI's Fortran common blocks, whose addresses the program
// passes; every other address is the buffer itself.
void* c_buffer(void* f);

// How a Fortran argument (always an address) becomes the C argument of type T.
template <class T>
struct Arg;
template <>
struct Arg<int> {
  static int c(void* f) { return *static_cast<MPI_Fint*>(f); }
};
template <>
struct Arg<const int*> {  // counts and displacements: INTEGER arrays
  static const int* c(void* f) { return static_cast<const int*>(f); }
};
template <>
struct Arg<const void*> {
  static const void* c(void* f) { return c_buffer(f); }
};
template <>
struct Arg<void*> {
  static void* c(void* f) { return c_buffer(f); }
};
#if defined(OPEN_MPI)  // in MPICH handles are INTEGERs, and MPI_*_f2c the identity: Arg<int>
template <>
struct Arg<MPI_Comm> {
  static MPI_Comm c(void* f) { return PMPI_Comm_f2c(*static_cast<MPI_Fint*>(f)); }
};
template <>
struct Arg<MPI_Datatype> {
  static MPI_Datatype c(void* f) { return PMPI_Type_f2c(*static_cast<MPI_Fint*>(f)); }
};
template <>
struct Arg<MPI_Op> {
  static MPI_Op c(void* f) { return PMPI_Op_f2c(*static_cast<MPI_Fint*>(f)); }
};
template <>
struct Arg<MPI_Info> {
  static MPI_Info c(void* f) { return PMPI_Info_f2c(*static_cast<MPI_Fint*>(f)); }
};
#endif
// The request a nonblocking or persistent call makes: the C call writes it,
// the Fortran handle is written when the call returns (the temporary lives
// until the end of the call's full expression).
struct NewRequest {
  MPI_Fint* f;
  MPI_Request c = MPI_REQUEST_NULL;
  operator MPI_Request*() { return &c; }
  ~NewRequest() { *f = PMPI_Request_c2f(c); }
};
template <>
struct Arg<MPI_Request*> {
  static NewRequest c(void* f) { return NewRequest{static_cast<MPI_Fint*>(f)}; }
};

// A C entry point called with Fortran arguments: each converted by its C
// type, the result in IERROR (optional in mpi_f08: then null).
template <auto fn, class Sig = decltype(fn)>
struct Entry;
template <auto fn, class... A>
struct Entry<fn, int (*)(A...)> {
  template <class... F>
  static void call(MPI_Fint* ierror, F... f) {
    static_assert(sizeof...(F) == sizeof...(A), "the argument count in served.def differs from MPI's");
    const int rc = fn(Arg<A>::c(f)...);
    if (ierror) *ierror = rc;
  }
};

// ---- statuses: as the bindings whose routines this library defines lay them out
#if defined(OPEN_MPI)
// Open MPI: INTEGER status(MPI_STATUS_SIZE) in every binding (its mpi_f08
// TYPE(MPI_Status) has the same layout), MPI_STATUS_IGNORE its common block.
using FStatus = MPI_Fint;
constexpr size_t kStatusInts = sizeof(MPI_Status) / sizeof(MPI_Fint);
inline bool status_ignored(const void* f) { return f == MPI_F_STATUS_IGNORE; }
inline bool statuses_ignored(const void* f) { return f == MPI_F_STATUSES_IGNORE; }
inline void put_status(const MPI_Status& c, void* f, size_t i) {
  PMPI_Status_c2f(&c, static_cast<MPI_Fint*>(f) + i * kStatusInts);
}
#else
// MPICH: only its mpi_f08 routines go around the C entry points; their
// TYPE(MPI_Status) is MPI_F08_status, MPI_Status field for field
// (MPI_Status_c2f08 is in libmpichfort, which this library does not link).
static_assert(sizeof(MPI_F08_status) == sizeof(MPI_Status), "MPICH's f08 status is its C status");
inline bool status_ignored(const void* f) { return f == MPI_F08_STATUS_IGNORE; }
inline bool statuses_ignored(const void* f) { return f == MPI_F08_STATUSES_IGNORE; }
inline void put_status(const MPI_Status& c, void* f, size_t i) {
  MPI_F08_status* s = static_cast<MPI_F08_status*>(f) + i;
  s->count_lo = c.count_lo;
  s->count_hi_and_cancelled = c.count_hi_and_cancelled;
  s->MPI_SOURCE = c.MPI_SOURCE;
  s->MPI_TAG = c.MPI_TAG;
  s->MPI_ERROR = c.MPI_ERROR;
}
#endif

// Fortran request handles as C ones for the call, written back after it.
class Requests {
 public:
  Requests(int count, MPI_Fint* f) : f_(f), c_(count > 0 ? static_cast<size_t>(count) : 0) {
    for (size_t i = 0; i < c_.size(); ++i) c_[i] = PMPI_Request_f2c(f_[i]);
  }
  ~Requests() {
    for (size_t i = 0; i < c_.size(); ++i) f_[i] = PMPI_Request_c2f(c_[i]);
  }
  MPI_Request* c() { return c_.data(); }

 private:
  MPI_Fint* f_;
  std::vector<MPI_Request> c_;
};

}  // namespace railcoll::mpi::fortran

// ---- the symbols: one function under every name a binding calls
// RAILCOLL_F_ARGS_n: n Fortran arguments a0..a(n-1); RAILCOLL_F_NAMES_n their names.
#define RAILCOLL_F_ARGS_1 void *a0
#define RAILCOLL_F_ARGS_2 RAILCOLL_F_ARGS_1, void *a1
#define RAILCOLL_F_ARGS_3 RAILCOLL_F_ARGS_2, void *a2
#define RAILCOLL_F_ARGS_4 RAILCOLL_F_ARGS_3, void *a3
#define RAILCOLL_F_ARGS_5 RAILCOLL_F_ARGS_4, void *a4
#define RAILCOLL_F_ARGS_6 RAILCOLL_F_ARGS_5, void *a5
#define RAILCOLL_F_ARGS_7 RAILCOLL_F_ARGS_6, void *a6
#define RAILCOLL_F_ARGS_8 RAILCOLL_F_ARGS_7, void *a7
#define RAILCOLL_F_ARGS_9 RAILCOLL_F_ARGS_8, void *a8
#define RAILCOLL_F_NAMES_1 a0
#define RAILCOLL_F_NAMES_2 RAILCOLL_F_NAMES_1, a1
#define RAILCOLL_F_NAMES_3 RAILCOLL_F_NAMES_2, a2
#define RAILCOLL_F_NAMES_4 RAILCOLL_F_NAMES_3, a3
#define RAILCOLL_F_NAMES_5 RAILCOLL_F_NAMES_4, a4
#define RAILCOLL_F_NAMES_6 RAILCOLL_F_NAMES_5, a5
#define RAILCOLL_F_NAMES_7 RAILCOLL_F_NAMES_6, a6
#define RAILCOLL_F_NAMES_8 RAILCOLL_F_NAMES_7, a7
#define RAILCOLL_F_NAMES_9 RAILCOLL_F_NAMES_8, a8

// The names of one routine in mpif.h and use mpi as Fortran compilers mangle
// them: lower case with one, two or no underscore, upper case. `base` is
// defined; the others are aliases of it with the same PARAMS.
#define RAILCOLL_F77_ALIASES(lower, UPPER, PARAMS)                                  \
  extern "C" void lower##__ PARAMS __attribute__((alias(#lower "_")));              \
  extern "C" void lower PARAMS __attribute__((alias(#lower "_")));                  \
  extern "C" void UPPER PARAMS __attribute__((alias(#lower "_")));

#define RAILCOLL_F_CAT(a, b) RAILCOLL_F_CAT_(a, b)
#define RAILCOLL_F_CAT_(a, b) a##b
// n + 1 and n + 2 (a nonblocking call's request; a persistent call's info and request).
#define RAILCOLL_F_PLUS1(n) RAILCOLL_F_CAT(RAILCOLL_F_PLUS1_, n)
#define RAILCOLL_F_PLUS1_1 2
#define RAILCOLL_F_PLUS1_5 6
#define RAILCOLL_F_PLUS1_6 7
#define RAILCOLL_F_PLUS1_7 8
#define RAILCOLL_F_PLUS1_8 9
#define RAILCOLL_F_PLUS1_9 10
#define RAILCOLL_F_PLUS2(n) RAILCOLL_F_CAT(RAILCOLL_F_PLUS2_, n)
#define RAILCOLL_F_PLUS2_1 3
#define RAILCOLL_F_PLUS2_5 7
#define RAILCOLL_F_PLUS2_6 8
#define RAILCOLL_F_PLUS2_7 9
#define RAILCOLL_F_PLUS2_8 10
#define RAILCOLL_F_PLUS2_9 11
#define RAILCOLL_F_ARGS_10 RAILCOLL_F_ARGS_9, void *a9
#define RAILCOLL_F_ARGS_11 RAILCOLL_F_ARGS_10, void *a10
#define RAILCOLL_F_NAMES_10 RAILCOLL_F_NAMES_9, a9
#define RAILCOLL_F_NAMES_11 RAILCOLL_F_NAMES_10, a10
#define RAILCOLL_F_PARAMS(n) (RAILCOLL_F_CAT(RAILCOLL_F_ARGS_, n), MPI_Fint * ierror)

// `symbol`, a routine of n Fortran arguments and IERROR calling the C entry point fn.
#define RAILCOLL_F_ENTRY(symbol, fn, n)                               \
  extern "C" void symbol RAILCOLL_F_PARAMS(n) {                      \
    railcoll::mpi::fortran::Entry<&fn>::call(ierror, RAILCOLL_F_CAT(RAILCOLL_F_NAMES_, n)); \
  }
// The same under the four mpif.h / use mpi names of lower / UPPER.
#define RAILCOLL_F77_ENTRY(lower, UPPER, fn, n)      \
  RAILCOLL_F_ENTRY(RAILCOLL_F_CAT(lower, _), fn, n) \
  RAILCOLL_F77_ALIASES(lower, UPPER, RAILCOLL_F_PARAMS(n))
