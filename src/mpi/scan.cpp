// The served prefix reductions: MPI_Scan and MPI_Exscan, blocking,
// nonblocking (MPI_Iscan, MPI_Iexscan) and persistent (MPI_Scan_init,
// MPI_Exscan_init, or Open MPI 4's MPIX_ forms), on railcoll_scan and
// railcoll_exscan. They route as the other reductions do (reductions.cpp):
// the operator and the datatype, the same on every rank -- a predefined
// operator on a predefined type railcoll reduces, or a user's C operator
// (ops.cpp), commutative or not: every railcoll scan algorithm keeps rank
// order. Exscan leaves rank 0's recvbuf as it was (MPI: undefined).
#include "mpi/reductions.hpp"
#include "mpi/served_entries.hpp"

namespace railcoll::mpi {

namespace {

template <class Pass>
int scan(Route& route, const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
         Pass pass) {
  return vector_reduction(route, {railcoll_scan, railcoll_iscan, railcoll_scan_init}, sendbuf, recvbuf, count,
                          datatype, op, pass);
}

template <class Pass>
int exscan(Route& route, const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
           Pass pass) {
  return vector_reduction(route, {railcoll_exscan, railcoll_iexscan, railcoll_exscan_init}, sendbuf, recvbuf, count,
                          datatype, op, pass);
}

}  // namespace

}  // namespace railcoll::mpi

using namespace railcoll::mpi;

#undef RAILCOLL_MPI_HOME_scan
#define RAILCOLL_MPI_HOME_scan RAILCOLL_MPI_C_ENTRIES

extern "C" {

// MPI_<Name>, MPI_I<Name> and the persistent form of this file's rows.
#include "mpi/served.def"

// The large-count forms (MPI 4.0: MPI_Count counts), where the MPI has them.
#if MPI_VERSION >= 4
int MPI_Scan_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  Route route(Coll::Scan, comm);
  return scan(route, sendbuf, recvbuf, count, datatype, op,
                [&] { return PMPI_Scan_c(sendbuf, recvbuf, count, datatype, op, comm); });
}

int MPI_Exscan_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                 MPI_Comm comm) {
  Route route(Coll::Exscan, comm);
  return exscan(route, sendbuf, recvbuf, count, datatype, op,
                [&] { return PMPI_Exscan_c(sendbuf, recvbuf, count, datatype, op, comm); });
}

int MPI_Iscan_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                MPI_Request* request) {
  Route route(Coll::Scan, comm, Mode::Nonblocking, request);
  return scan(route, sendbuf, recvbuf, count, datatype, op,
                [&] { return PMPI_Iscan_c(sendbuf, recvbuf, count, datatype, op, comm, request); });
}

int MPI_Iexscan_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm, MPI_Request* request) {
  Route route(Coll::Exscan, comm, Mode::Nonblocking, request);
  return exscan(route, sendbuf, recvbuf, count, datatype, op,
                [&] { return PMPI_Iexscan_c(sendbuf, recvbuf, count, datatype, op, comm, request); });
}

int MPI_Scan_init_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                    MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  Route route(Coll::Scan, comm, Mode::Persistent, request);
  return scan(route, sendbuf, recvbuf, count, datatype, op,
                [&] { return PMPI_Scan_init_c(sendbuf, recvbuf, count, datatype, op, comm, info, request); });
}

int MPI_Exscan_init_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                      MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  Route route(Coll::Exscan, comm, Mode::Persistent, request);
  return exscan(route, sendbuf, recvbuf, count, datatype, op,
                [&] { return PMPI_Exscan_init_c(sendbuf, recvbuf, count, datatype, op, comm, info, request); });
}
#endif

}  // extern "C"
