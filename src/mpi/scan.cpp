// The served prefix reductions: MPI_Scan and MPI_Exscan, blocking,
// nonblocking (MPI_Iscan, MPI_Iexscan) and persistent (MPI_Scan_init,
// MPI_Exscan_init, or Open MPI 4's MPIX_ forms), on railcoll_scan and
// railcoll_exscan. They route as the other reductions do (reductions.cpp):
// the operator and the datatype, the same on every rank -- a predefined
// operator on a predefined type railcoll reduces, or a user's C operator
// (ops.cpp), commutative or not: every railcoll scan algorithm keeps rank
// order. Exscan leaves rank 0's recvbuf as it was (MPI: undefined).
#include "mpi/call.hpp"

namespace railcoll::mpi {

namespace {

template <class Pass>
int prefix(Route& route, bool exclusive, const void* sendbuf, void* recvbuf, int64_t count, MPI_Datatype datatype,
           MPI_Op op, Pass pass) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  DataView data;
  int rop = -1;
  if (route.open()) {
    route.need(data = view(datatype, count));
    rop = reduce_op(route, op, &data);
  }
  if (route.to_mpi()) return pass();
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const railcoll_call_opts_t opts{nullptr, in_place ? RAILCOLL_IN_PLACE : 0u};
  const void* send = in_place ? nullptr : data.at(sendbuf);
  const auto type = static_cast<railcoll_datatype_t>(data.reduce_type);
  const auto n = static_cast<size_t>(data.reduce_count);
  ServedCall call(route);
  if (exclusive)
    return call.run(railcoll_exscan, railcoll_iexscan, railcoll_exscan_init, rc, send, data.at(recvbuf), n, type,
                    static_cast<railcoll_op_t>(rop), &opts);
  return call.run(railcoll_scan, railcoll_iscan, railcoll_scan_init, rc, send, data.at(recvbuf), n, type,
                  static_cast<railcoll_op_t>(rop), &opts);
}

}  // namespace

}  // namespace railcoll::mpi

using namespace railcoll::mpi;

extern "C" {

int MPI_Scan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  Route route(Coll::Scan, comm);
  return prefix(route, false, sendbuf, recvbuf, count, datatype, op,
                [&] { return PMPI_Scan(sendbuf, recvbuf, count, datatype, op, comm); });
}

int MPI_Exscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  Route route(Coll::Exscan, comm);
  return prefix(route, true, sendbuf, recvbuf, count, datatype, op,
                [&] { return PMPI_Exscan(sendbuf, recvbuf, count, datatype, op, comm); });
}

int MPI_Iscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
              MPI_Request* request) {
  Route route(Coll::Scan, comm, Mode::Nonblocking, request);
  return prefix(route, false, sendbuf, recvbuf, count, datatype, op,
                [&] { return PMPI_Iscan(sendbuf, recvbuf, count, datatype, op, comm, request); });
}

int MPI_Iexscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                MPI_Request* request) {
  Route route(Coll::Exscan, comm, Mode::Nonblocking, request);
  return prefix(route, true, sendbuf, recvbuf, count, datatype, op,
                [&] { return PMPI_Iexscan(sendbuf, recvbuf, count, datatype, op, comm, request); });
}

#ifdef RAILCOLL_MPI_PERSISTENT
int MPI_PERSISTENT(Scan)(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                         MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  Route route(Coll::Scan, comm, Mode::Persistent, request);
  return prefix(route, false, sendbuf, recvbuf, count, datatype, op, [&] {
    return PMPI_PERSISTENT(Scan)(sendbuf, recvbuf, count, datatype, op, comm, info, request);
  });
}

int MPI_PERSISTENT(Exscan)(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                           MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  Route route(Coll::Exscan, comm, Mode::Persistent, request);
  return prefix(route, true, sendbuf, recvbuf, count, datatype, op, [&] {
    return PMPI_PERSISTENT(Exscan)(sendbuf, recvbuf, count, datatype, op, comm, info, request);
  });
}
#endif

// The large-count forms (MPI 4.0: MPI_Count counts), where the MPI has them.
#if MPI_VERSION >= 4
int MPI_Scan_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  Route route(Coll::Scan, comm);
  return prefix(route, false, sendbuf, recvbuf, count, datatype, op,
                [&] { return PMPI_Scan_c(sendbuf, recvbuf, count, datatype, op, comm); });
}

int MPI_Exscan_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                 MPI_Comm comm) {
  Route route(Coll::Exscan, comm);
  return prefix(route, true, sendbuf, recvbuf, count, datatype, op,
                [&] { return PMPI_Exscan_c(sendbuf, recvbuf, count, datatype, op, comm); });
}

int MPI_Iscan_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                MPI_Request* request) {
  Route route(Coll::Scan, comm, Mode::Nonblocking, request);
  return prefix(route, false, sendbuf, recvbuf, count, datatype, op,
                [&] { return PMPI_Iscan_c(sendbuf, recvbuf, count, datatype, op, comm, request); });
}

int MPI_Iexscan_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm, MPI_Request* request) {
  Route route(Coll::Exscan, comm, Mode::Nonblocking, request);
  return prefix(route, true, sendbuf, recvbuf, count, datatype, op,
                [&] { return PMPI_Iexscan_c(sendbuf, recvbuf, count, datatype, op, comm, request); });
}

int MPI_Scan_init_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                    MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  Route route(Coll::Scan, comm, Mode::Persistent, request);
  return prefix(route, false, sendbuf, recvbuf, count, datatype, op,
                [&] { return PMPI_Scan_init_c(sendbuf, recvbuf, count, datatype, op, comm, info, request); });
}

int MPI_Exscan_init_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                      MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  Route route(Coll::Exscan, comm, Mode::Persistent, request);
  return prefix(route, true, sendbuf, recvbuf, count, datatype, op,
                [&] { return PMPI_Exscan_init_c(sendbuf, recvbuf, count, datatype, op, comm, info, request); });
}
#endif

}  // extern "C"
