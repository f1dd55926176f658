// What the served reductions share (reductions.cpp, scan.cpp): the route of a
// reduction's data and operator, and the one body of the reductions in which
// every rank passes a vector and gets one back (allreduce, scan, exscan).
#pragma once
#include "mpi/call.hpp"

namespace railcoll::mpi {

// What every reduction routes on: the data (count elements of a predefined
// type, or of a user operator's) and its operator; the railcoll operator, or
// -1 when MPI serves it.
inline int route_reduction(Route& route, MPI_Op op, MPI_Datatype datatype, MPI_Count count, DataView* data) {
  if (!route.open()) return -1;
  route.need(*data = view(datatype, count));
  return reduce_op(route, op, data);
}

inline railcoll_datatype_t type_of(const DataView& d) { return static_cast<railcoll_datatype_t>(d.reduce_type); }

// railcoll's three forms of a reduction with allreduce's arguments (allreduce, scan, exscan).
struct VectorReduction {
  decltype(&railcoll_allreduce) blocking;
  decltype(&railcoll_iallreduce) nonblocking;
  decltype(&railcoll_allreduce_init) persistent;
};

// A reduction in which every rank passes `count` elements and gets `count`
// back (in place: recvbuf holds the input).
template <class Pass>
int vector_reduction(Route& route, const VectorReduction& fns, const void* sendbuf, void* recvbuf, MPI_Count count,
                     MPI_Datatype datatype, MPI_Op op, Pass pass) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  DataView data;
  const int rop = route_reduction(route, op, datatype, count, &data);
  if (route.to_mpi()) return pass();
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const railcoll_call_opts_t opts = in_place_opts(in_place);
  ServedCall call(route);
  return call.run(fns.blocking, fns.nonblocking, fns.persistent, rc, in_place ? nullptr : data.at(sendbuf),
                  data.at(recvbuf), static_cast<size_t>(data.reduce_count), type_of(data),
                  static_cast<railcoll_op_t>(rop), &opts);
}

}  // namespace railcoll::mpi
