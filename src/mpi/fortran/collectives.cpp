// The Fortran entry points of every served collective, made from the one list
// of them (src/mpi/served.def): blocking, nonblocking and persistent, under
// the names the MPI's Fortran bindings give them where those bindings call
// PMPI_* themselves (fortran.hpp). Each converts its arguments by the C
// entry point's own parameter types (Entry) and calls it.
#include <initializer_list>

#include "mpi/fortran/fortran.hpp"

#if defined(OPEN_MPI)
// Open MPI: mpif.h and use mpi (mpi_allgather_ and its aliases) and use mpi_f08
// (mpi_allgather_f08_) all call PMPI_*. Its persistent collectives are MPI-4's
// names from Open MPI 5, MPIX_* (mpif-ext.h, mpi_f08_ext) in Open MPI 4.
#if MPI_VERSION >= 4
#define RAILCOLL_F_INIT(lower) RAILCOLL_F_CAT(mpi_, lower##_init)
#define RAILCOLL_F_INIT_UPPER(UPPER) RAILCOLL_F_CAT(MPI_, UPPER##_INIT)
#else
#define RAILCOLL_F_INIT(lower) RAILCOLL_F_CAT(mpix_, lower##_init)
#define RAILCOLL_F_INIT_UPPER(UPPER) RAILCOLL_F_CAT(MPIX_, UPPER##_INIT)
#endif
#ifdef RAILCOLL_MPI_PERSISTENT
#define RAILCOLL_F_PERSISTENT(Name, lower, UPPER, n)                                                            \
  RAILCOLL_F77_ENTRY(RAILCOLL_F_INIT(lower), RAILCOLL_F_INIT_UPPER(UPPER), MPI_PERSISTENT(Name), RAILCOLL_F_PLUS2(n)) \
  RAILCOLL_F_ENTRY(RAILCOLL_F_CAT(RAILCOLL_F_INIT(lower), _f08_), MPI_PERSISTENT(Name), RAILCOLL_F_PLUS2(n))
#else
#define RAILCOLL_F_PERSISTENT(Name, lower, UPPER, n)
#endif
#define RAILCOLL_F_OMPI_ENTRIES(Name, IName, lower, UPPER, n)                        \
  RAILCOLL_F77_ENTRY(mpi_##lower, MPI_##UPPER, MPI_##Name, n)                         \
  RAILCOLL_F_ENTRY(mpi_##lower##_f08_, MPI_##Name, n)                                 \
  RAILCOLL_F77_ENTRY(mpi_i##lower, MPI_I##UPPER, MPI_##IName, RAILCOLL_F_PLUS1(n))   \
  RAILCOLL_F_ENTRY(mpi_i##lower##_f08_, MPI_##IName, RAILCOLL_F_PLUS1(n))            \
  RAILCOLL_F_PERSISTENT(Name, lower, UPPER, n)
#define RAILCOLL_F_OMPI_choice RAILCOLL_F_OMPI_ENTRIES
#define RAILCOLL_F_OMPI_none RAILCOLL_F_OMPI_ENTRIES
#define RAILCOLL_F_OMPI_c_only(Name, IName, lower, UPPER, n)
#define RAILCOLL_MPI_SERVED(Name, IName, lower, UPPER, n, buffers, ...) \
  RAILCOLL_F_OMPI_##buffers(Name, IName, lower, UPPER, n)

#elif defined(MPICH)
// MPICH: mpif.h, use mpi and the mpi_f08 routines with buffers
// (mpi_allgather_f08ts_) call MPI_*, which this library defines; its mpi_f08
// routines without a buffer (MPI_BARRIER, MPI_IBARRIER, MPI_BARRIER_INIT)
// call PMPI_*: those are defined here.
#define RAILCOLL_F08_choice(Name, IName, lower, n)
#define RAILCOLL_F08_none(Name, IName, lower, n)                                   \
  RAILCOLL_F_ENTRY(mpi_##lower##_f08_, MPI_##Name, n)                               \
  RAILCOLL_F_ENTRY(mpi_i##lower##_f08_, MPI_##IName, RAILCOLL_F_PLUS1(n))          \
  RAILCOLL_F_ENTRY(mpi_##lower##_init_f08_, MPI_PERSISTENT(Name), RAILCOLL_F_PLUS2(n))
#define RAILCOLL_F08_c_only(Name, IName, lower, n)
#define RAILCOLL_MPI_SERVED(Name, IName, lower, UPPER, n, buffers, ...) RAILCOLL_F08_##buffers(Name, IName, lower, n)

#else
#error "the MPI layer knows the Fortran bindings of Open MPI and MPICH"
#endif

#include "mpi/served.def"

namespace railcoll::mpi::fortran {

namespace {

// The first of `names` the process defines (the MPI's Fortran library, or
// the program's own copy of the common block, which its references use).
const void* common_block(std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (const void* p = dlsym(RTLD_DEFAULT, n)) return p;
  return nullptr;
}

}  // namespace

void* c_buffer(void* f) {
#if defined(OPEN_MPI)
  static const void* const in_place = common_block(
      {"mpi_fortran_in_place_", "mpi_fortran_in_place", "mpi_fortran_in_place__", "MPI_FORTRAN_IN_PLACE"});
  static const void* const bottom =
      common_block({"mpi_fortran_bottom_", "mpi_fortran_bottom", "mpi_fortran_bottom__", "MPI_FORTRAN_BOTTOM"});
#else
  static const void* const in_place = common_block({"MPIR_F08_MPI_IN_PLACE"});
  static const void* const bottom = common_block({"MPIR_F08_MPI_BOTTOM"});
#endif
  if (f && f == in_place) return MPI_IN_PLACE;
  if (f && f == bottom) return MPI_BOTTOM;
  return f;
}

}  // namespace railcoll::mpi::fortran
