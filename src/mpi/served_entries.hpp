// The C entry points of the served collectives, made from their rows in
// served.def (blocking, nonblocking, persistent), each by the file that holds
// its body (the row's `home`):
//
//   #include "mpi/served_entries.hpp"
//   #undef RAILCOLL_MPI_HOME_collectives
//   #define RAILCOLL_MPI_HOME_collectives RAILCOLL_MPI_C_ENTRIES
//   extern "C" {
//   #include "mpi/served.def"
//   }
//
// Every entry point routes the call (Route) and hands its body the arguments
// and the PMPI_ call to make when MPI serves it.
#pragma once
#include "mpi/call.hpp"

#define RAILCOLL_MPI_LIST(...) __VA_ARGS__

// Rows of other homes make nothing.
#define RAILCOLL_MPI_HOME_collectives(...)
#define RAILCOLL_MPI_HOME_reductions(...)
#define RAILCOLL_MPI_HOME_personalised(...)
#define RAILCOLL_MPI_HOME_scan(...)
#define RAILCOLL_MPI_HOME_alltoallw(...)

#define RAILCOLL_MPI_SERVED(Name, IName, lower, UPPER, n, buffers, home, coll, params, args) \
  RAILCOLL_MPI_HOME_##home(Name, IName, lower, coll, params, args)

#define RAILCOLL_MPI_C_ENTRIES(Name, IName, body, coll, params, args)                                            \
  int MPI_##Name(RAILCOLL_MPI_LIST params MPI_Comm comm) {                                                       \
    railcoll::mpi::Route route(railcoll::mpi::Coll::coll, comm);                                                 \
    return body(route, RAILCOLL_MPI_LIST args[&] { return PMPI_##Name(RAILCOLL_MPI_LIST args comm); });          \
  }                                                                                                              \
  int MPI_##IName(RAILCOLL_MPI_LIST params MPI_Comm comm, MPI_Request* request) {                                \
    railcoll::mpi::Route route(railcoll::mpi::Coll::coll, comm, railcoll::mpi::Mode::Nonblocking, request);      \
    return body(route, RAILCOLL_MPI_LIST args[&] { return PMPI_##IName(RAILCOLL_MPI_LIST args comm, request); }); \
  }                                                                                                              \
  RAILCOLL_MPI_C_PERSISTENT(Name, body, coll, params, args)

#ifdef RAILCOLL_MPI_PERSISTENT
#define RAILCOLL_MPI_C_PERSISTENT(Name, body, coll, params, args)                                              \
  int MPI_PERSISTENT(Name)(RAILCOLL_MPI_LIST params MPI_Comm comm, MPI_Info info, MPI_Request* request) {       \
    railcoll::mpi::Route route(railcoll::mpi::Coll::coll, comm, railcoll::mpi::Mode::Persistent, request);     \
    return body(route, RAILCOLL_MPI_LIST args[&] {                                                             \
      return PMPI_PERSISTENT(Name)(RAILCOLL_MPI_LIST args comm, info, request);                                \
    });                                                                                                        \
  }
#else
#define RAILCOLL_MPI_C_PERSISTENT(Name, body, coll, params, args)
#endif
