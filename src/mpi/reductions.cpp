// The served reductions: MPI_Allreduce, MPI_Reduce, MPI_Reduce_scatter_block,
// MPI_Reduce_scatter. The route reads the operator and the predefined type,
// which every rank of the call shares (railcoll_op in datatypes.cpp: MPI's
// arithmetic, logical, bitwise and location operators on the type groups MPI
// defines them on); a type railcoll reduces is predefined, its elements laid
// out as railcoll reads them (the pairs as C structs), so nothing is packed here.
// One body per reduction for its blocking, nonblocking and persistent entry
// points (collectives.cpp says how).
#include <string>
#include <vector>

#include "mpi/reductions.hpp"
#include "mpi/served_entries.hpp"

namespace railcoll::mpi {

namespace {

template <class Pass>
int allreduce(Route& route, const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
              Pass pass) {
  return vector_reduction(route, {railcoll_allreduce, railcoll_iallreduce, railcoll_allreduce_init}, sendbuf, recvbuf,
                          count, datatype, op, pass);
}

template <class Pass>
int reduce(Route& route, const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, int root,
           Pass pass) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  DataView data;
  const int rop = route_reduction(route, op, datatype, count, &data);
  if (route.open() && in_place && route.rank() != root) route.decline(Reason::BadArgument);  // the root's alone
  if (route.to_mpi()) return pass();
  if (int bad = check_root(route, root)) return bad;
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const bool at_root = route.rank() == root;
  const railcoll_call_opts_t opts = in_place_opts(in_place);
  ServedCall call(route);
  return call.run(railcoll_reduce, railcoll_ireduce, railcoll_reduce_init, rc, in_place ? nullptr : data.at(sendbuf),
                  at_root ? data.at(recvbuf) : nullptr, static_cast<size_t>(data.reduce_count), type_of(data),
                  static_cast<railcoll_op_t>(rop), root, &opts);
}

template <class Pass>
int reduce_scatter_block(Route& route, const void* sendbuf, void* recvbuf, MPI_Count recvcount, MPI_Datatype datatype,
                         MPI_Op op, Pass pass) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  DataView block;
  const int rop = route_reduction(route, op, datatype, recvcount, &block);
  if (route.to_mpi()) return pass();
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const railcoll_call_opts_t opts = in_place_opts(in_place);
  ServedCall call(route);
  return call.run(railcoll_reduce_scatter_block, railcoll_ireduce_scatter_block, railcoll_reduce_scatter_block_init,
                  rc, in_place ? nullptr : block.at(sendbuf), block.at(recvbuf),
                  static_cast<size_t>(block.reduce_count), type_of(block), static_cast<railcoll_op_t>(rop), &opts);
}

template <class Count, class Pass>
int reduce_scatter(Route& route, const void* sendbuf, void* recvbuf, const Count* recvcounts, MPI_Datatype datatype,
                   MPI_Op op, Pass pass) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  DataView element;
  const int rop = route_reduction(route, op, datatype, 1, &element);
  std::vector<size_t> counts;
  if (route.open() && !recvcounts) route.decline(Reason::BadArgument);
  for (int r = 0; route.open() && r < route.size(); ++r) {
    if (recvcounts[r] < 0) route.decline(Reason::BadArgument);
    counts.push_back(static_cast<size_t>(recvcounts[r]) * element.reduce_count);
  }
  if (route.to_mpi()) return pass();
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const railcoll_call_opts_t opts = in_place_opts(in_place);
  ServedCall call(route);
  return call.run(railcoll_reduce_scatter, railcoll_ireduce_scatter, railcoll_reduce_scatter_init, rc,
                  in_place ? nullptr : element.at(sendbuf), element.at(recvbuf), counts.data(), type_of(element),
                  static_cast<railcoll_op_t>(rop), &opts);
}

}  // namespace

}  // namespace railcoll::mpi

using namespace railcoll::mpi;

#undef RAILCOLL_MPI_HOME_reductions
#define RAILCOLL_MPI_HOME_reductions RAILCOLL_MPI_C_ENTRIES

extern "C" {

// MPI_<Name>, MPI_I<Name> and the persistent form of this file's rows.
#include "mpi/served.def"

// The large-count forms (MPI 4.0 §6.2: MPI_Count counts), where the MPI has them.
#if MPI_VERSION >= 4
int MPI_Allreduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                    MPI_Comm comm) {
  Route route(Coll::Allreduce, comm);
  return allreduce(route, sendbuf, recvbuf, count, datatype, op,
                   [&] { return PMPI_Allreduce_c(sendbuf, recvbuf, count, datatype, op, comm); });
}

int MPI_Iallreduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                     MPI_Comm comm, MPI_Request* request) {
  Route route(Coll::Allreduce, comm, Mode::Nonblocking, request);
  return allreduce(route, sendbuf, recvbuf, count, datatype, op,
                   [&] { return PMPI_Iallreduce_c(sendbuf, recvbuf, count, datatype, op, comm, request); });
}

int MPI_Allreduce_init_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                         MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  Route route(Coll::Allreduce, comm, Mode::Persistent, request);
  return allreduce(route, sendbuf, recvbuf, count, datatype, op,
                   [&] { return PMPI_Allreduce_init_c(sendbuf, recvbuf, count, datatype, op, comm, info, request); });
}

int MPI_Reduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, int root,
                 MPI_Comm comm) {
  Route route(Coll::Reduce, comm);
  return reduce(route, sendbuf, recvbuf, count, datatype, op, root,
                [&] { return PMPI_Reduce_c(sendbuf, recvbuf, count, datatype, op, root, comm); });
}

int MPI_Ireduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, int root,
                  MPI_Comm comm, MPI_Request* request) {
  Route route(Coll::Reduce, comm, Mode::Nonblocking, request);
  return reduce(route, sendbuf, recvbuf, count, datatype, op, root,
                [&] { return PMPI_Ireduce_c(sendbuf, recvbuf, count, datatype, op, root, comm, request); });
}

int MPI_Reduce_init_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, int root,
                      MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  Route route(Coll::Reduce, comm, Mode::Persistent, request);
  return reduce(route, sendbuf, recvbuf, count, datatype, op, root, [&] {
    return PMPI_Reduce_init_c(sendbuf, recvbuf, count, datatype, op, root, comm, info, request);
  });
}

int MPI_Reduce_scatter_block_c(const void* sendbuf, void* recvbuf, MPI_Count recvcount, MPI_Datatype datatype,
                               MPI_Op op, MPI_Comm comm) {
  Route route(Coll::ReduceScatterBlock, comm);
  return reduce_scatter_block(route, sendbuf, recvbuf, recvcount, datatype, op, [&] {
    return PMPI_Reduce_scatter_block_c(sendbuf, recvbuf, recvcount, datatype, op, comm);
  });
}

int MPI_Ireduce_scatter_block_c(const void* sendbuf, void* recvbuf, MPI_Count recvcount, MPI_Datatype datatype,
                                MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  Route route(Coll::ReduceScatterBlock, comm, Mode::Nonblocking, request);
  return reduce_scatter_block(route, sendbuf, recvbuf, recvcount, datatype, op, [&] {
    return PMPI_Ireduce_scatter_block_c(sendbuf, recvbuf, recvcount, datatype, op, comm, request);
  });
}

int MPI_Reduce_scatter_block_init_c(const void* sendbuf, void* recvbuf, MPI_Count recvcount, MPI_Datatype datatype,
                                    MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  Route route(Coll::ReduceScatterBlock, comm, Mode::Persistent, request);
  return reduce_scatter_block(route, sendbuf, recvbuf, recvcount, datatype, op, [&] {
    return PMPI_Reduce_scatter_block_init_c(sendbuf, recvbuf, recvcount, datatype, op, comm, info, request);
  });
}

int MPI_Reduce_scatter_c(const void* sendbuf, void* recvbuf, const MPI_Count recvcounts[], MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm) {
  Route route(Coll::ReduceScatter, comm);
  return reduce_scatter(route, sendbuf, recvbuf, recvcounts, datatype, op,
                        [&] { return PMPI_Reduce_scatter_c(sendbuf, recvbuf, recvcounts, datatype, op, comm); });
}

int MPI_Ireduce_scatter_c(const void* sendbuf, void* recvbuf, const MPI_Count recvcounts[], MPI_Datatype datatype,
                          MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  Route route(Coll::ReduceScatter, comm, Mode::Nonblocking, request);
  return reduce_scatter(route, sendbuf, recvbuf, recvcounts, datatype, op, [&] {
    return PMPI_Ireduce_scatter_c(sendbuf, recvbuf, recvcounts, datatype, op, comm, request);
  });
}

int MPI_Reduce_scatter_init_c(const void* sendbuf, void* recvbuf, const MPI_Count recvcounts[], MPI_Datatype datatype,
                              MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  Route route(Coll::ReduceScatter, comm, Mode::Persistent, request);
  return reduce_scatter(route, sendbuf, recvbuf, recvcounts, datatype, op, [&] {
    return PMPI_Reduce_scatter_init_c(sendbuf, recvbuf, recvcounts, datatype, op, comm, info, request);
  });
}
#endif

}  // extern "C"
