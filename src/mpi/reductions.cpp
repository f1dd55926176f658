// The served reductions: MPI_Allreduce, MPI_Reduce, MPI_Reduce_scatter_block,
// MPI_Reduce_scatter. The route reads the operator and the predefined type,
// which every rank of the call shares (railcoll_op in datatypes.cpp: MPI's
// arithmetic, logical, bitwise and location operators on the type groups MPI
// defines them on); a type railcoll reduces is predefined, its elements laid
// out as railcoll reads them (the pairs as C structs), so nothing is packed here.
#include <string>
#include <vector>

#include "mpi/route.hpp"

namespace railcoll::mpi {

namespace {

// What every reduction routes on: the data (count elements of a predefined
// type) and its operator; the railcoll operator, or -1 when MPI serves it.
int route_reduction(Route& route, MPI_Op op, MPI_Datatype datatype, int64_t count, DataView* data) {
  if (!route.open()) return -1;
  route.need(*data = view(datatype, count));
  return reduce_op(route, op, *data);
}

railcoll_call_opts_t in_place_opts(bool in_place) { return {nullptr, in_place ? RAILCOLL_IN_PLACE : 0u}; }

railcoll_datatype_t type_of(const DataView& d) { return static_cast<railcoll_datatype_t>(d.reduce_type); }

}  // namespace

}  // namespace railcoll::mpi

using namespace railcoll::mpi;

extern "C" {

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  Route route(Coll::Allreduce, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  DataView data;
  const int rop = route_reduction(route, op, datatype, count, &data);
  if (route.to_mpi()) return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const railcoll_call_opts_t opts = in_place_opts(in_place);
  return route.finish(railcoll_allreduce(rc, in_place ? nullptr : data.at(sendbuf), data.at(recvbuf),
                                         data.reduce_count, type_of(data), static_cast<railcoll_op_t>(rop), &opts));
}

int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
               MPI_Comm comm) {
  Route route(Coll::Reduce, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  DataView data;
  const int rop = route_reduction(route, op, datatype, count, &data);
  if (route.open() && in_place && route.rank() != root) route.decline(Reason::BadArgument);  // the root's alone
  if (route.to_mpi()) return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
  if (int bad = check_root(route, root)) return bad;
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const bool at_root = route.rank() == root;
  const railcoll_call_opts_t opts = in_place_opts(in_place);
  return route.finish(railcoll_reduce(rc, in_place ? nullptr : data.at(sendbuf), at_root ? data.at(recvbuf) : nullptr,
                                      data.reduce_count, type_of(data), static_cast<railcoll_op_t>(rop), root,
                                      &opts));
}

int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm) {
  Route route(Coll::ReduceScatterBlock, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  DataView block;
  const int rop = route_reduction(route, op, datatype, recvcount, &block);
  if (route.to_mpi()) return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const railcoll_call_opts_t opts = in_place_opts(in_place);
  return route.finish(railcoll_reduce_scatter_block(rc, in_place ? nullptr : block.at(sendbuf), block.at(recvbuf),
                                                    block.reduce_count, type_of(block),
                                                    static_cast<railcoll_op_t>(rop), &opts));
}

int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm) {
  Route route(Coll::ReduceScatter, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  DataView element;
  const int rop = route_reduction(route, op, datatype, 1, &element);
  std::vector<size_t> counts;
  if (route.open() && !recvcounts) route.decline(Reason::BadArgument);
  for (int r = 0; route.open() && r < route.size(); ++r) {
    if (recvcounts[r] < 0) route.decline(Reason::BadArgument);
    counts.push_back(static_cast<size_t>(recvcounts[r]) * element.reduce_count);
  }
  if (route.to_mpi()) return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm);
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const railcoll_call_opts_t opts = in_place_opts(in_place);
  return route.finish(railcoll_reduce_scatter(rc, in_place ? nullptr : element.at(sendbuf), element.at(recvbuf),
                                              counts.data(), type_of(element), static_cast<railcoll_op_t>(rop),
                                              &opts));
}

}  // extern "C"
