// The served calls that gather or spread whole blocks: MPI_Allgather,
// MPI_Allgatherv, MPI_Bcast, MPI_Gather, and MPI_Barrier (the reductions are
// in reductions.cpp, the personalised ones in personalised.cpp). Each first routes the call (class Route): MPI's
// own collective unless every check passes, and every check reads only what
// all ranks of the call agree on (layer.hpp); then it maps the arguments onto
// railcoll's C API, byte counts and one piece of memory per buffer (a
// non-contiguous layout packed into staging and unpacked after: pack.cpp).
#include <cstring>
#include <string>
#include <vector>

#include "mpi/route.hpp"

namespace railcoll::mpi {

namespace {

// Allgatherv's blocks where railcoll puts them (back to back, in rank order)
// or, when the displacements or the type's layout say otherwise, through a
// staging buffer, each block then unpacked to its displacement.
int allgatherv(Route& route, const DataView& send, const void* sendbuf, bool in_place, char* recvbuf,
               const std::vector<size_t>& counts, const int* recvcounts, const int* displs, const DataView& element) {
  const int me = route.rank(), n = route.size();
  std::vector<size_t> at(n);
  size_t total = 0;
  bool direct = element.contiguous;
  for (int r = 0; r < n; ++r) {
    at[r] = total;
    direct = direct && (counts[r] == 0 || static_cast<MPI_Aint>(displs[r]) * element.extent ==
                                              static_cast<MPI_Aint>(total));
    total += counts[r];
  }
  if (!in_place && send.bytes != counts[me])
    return route.refuse(MPI_ERR_TRUNCATE, "this rank sends " + bytes_text(send.bytes) + " but recvcounts[" +
                                              std::to_string(me) + "] holds " + bytes_text(counts[me]));
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  railcoll_call_opts_t opts{nullptr, in_place ? RAILCOLL_IN_PLACE : 0u};
  const void* mine = in_place ? nullptr : packed(send, sendbuf, Staging::Send);
  if (direct) return route.finish(railcoll_allgatherv(rc, mine, element.at(recvbuf), counts.data(), &opts));
  char* staged = staging(Staging::Recv, total);
  auto block = [&](int r) { return recvbuf + static_cast<MPI_Aint>(displs[r]) * element.extent; };
  if (in_place) pack_into(staged + at[me], block(me), static_cast<uint64_t>(recvcounts[me]), element);
  railcoll_status_t st = railcoll_allgatherv(rc, mine, staged, counts.data(), &opts);
  if (st == RAILCOLL_OK)
    for (int r = 0; r < n; ++r) unpack_from(staged + at[r], block(r), static_cast<uint64_t>(recvcounts[r]), element);
  return route.finish(st);
}

}  // namespace

}  // namespace railcoll::mpi

using namespace railcoll::mpi;

extern "C" {

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
  Route route(Coll::Allgather, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  DataView block, send;
  if (route.open()) {
    route.need(block = view(recvtype, recvcount));
    if (!in_place) route.need(send = view(sendtype, sendcount));
  }
  if (route.to_mpi()) return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  if (!in_place && send.bytes != block.bytes)
    return route.refuse(MPI_ERR_TRUNCATE, "this rank sends " + bytes_text(send.bytes) + " but receives blocks of " +
                                              bytes_text(block.bytes));
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const DataView recv = view(recvtype, static_cast<int64_t>(recvcount) * route.size());
  railcoll_call_opts_t opts{nullptr, in_place ? RAILCOLL_IN_PLACE : 0u};
  const void* mine = in_place ? nullptr : packed(send, sendbuf, Staging::Send);
  void* all = in_place ? landing_in_place(recv, recvbuf, route.rank(), recvcount) : landing(recv, recvbuf, Staging::Recv);
  railcoll_status_t st = railcoll_allgather(rc, mine, all, block.bytes, &opts);
  if (st == RAILCOLL_OK) unpack(recv, recvbuf, Staging::Recv);
  return route.finish(st);
}

int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                   const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  Route route(Coll::Allgatherv, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  DataView element, send;
  std::vector<size_t> counts;
  if (route.open()) {
    element = view(recvtype, 1);
    if (!element.valid || !recvcounts || !displs) route.decline(Reason::BadArgument);
    uint64_t total = 0;
    for (int r = 0; route.open() && r < route.size(); ++r) {
      if (recvcounts[r] < 0) route.decline(Reason::BadArgument);
      counts.push_back(static_cast<size_t>(recvcounts[r]) * element.bytes);
      total += counts.back();
    }
    if (!in_place) route.need(send = view(sendtype, sendcount));
  }
  if (route.to_mpi())
    return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
  return allgatherv(route, send, sendbuf, in_place, static_cast<char*>(recvbuf), counts, recvcounts, displs, element);
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  Route route(Coll::Bcast, comm);
  DataView data;
  if (route.open()) route.need(data = view(datatype, count));
  if (route.to_mpi()) return PMPI_Bcast(buffer, count, datatype, root, comm);
  if (int bad = check_root(route, root)) return bad;
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const bool at_root = route.rank() == root;
  void* bytes = at_root ? const_cast<void*>(packed(data, buffer, Staging::Recv)) : landing(data, buffer, Staging::Recv);
  railcoll_status_t st = railcoll_bcast(rc, bytes, data.bytes, root, nullptr);
  if (st == RAILCOLL_OK && !at_root) unpack(data, buffer, Staging::Recv);
  return route.finish(st);
}

int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
               MPI_Datatype recvtype, int root, MPI_Comm comm) {
  Route route(Coll::Gather, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  DataView recv, send;
  bool at_root = false;
  if (route.open()) {
    at_root = route.rank() == root;
    // The block every rank agrees on: the root's receive signature, the
    // others' send signature (recvbuf, recvcount and recvtype are the root's only).
    if (at_root) route.need(recv = view(recvtype, recvcount));
    if (in_place && !at_root) route.decline(Reason::BadArgument);  // MPI_IN_PLACE is the root's alone
    if (!in_place) route.need(send = view(sendtype, sendcount));
  }
  if (route.to_mpi()) return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  if (int bad = check_root(route, root)) return bad;
  const uint64_t block = at_root ? recv.bytes : send.bytes;
  if (at_root && !in_place && send.bytes != recv.bytes)
    return route.refuse(MPI_ERR_TRUNCATE, "the root sends " + bytes_text(send.bytes) + " but receives blocks of " +
                                              bytes_text(recv.bytes));
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  railcoll_call_opts_t opts{nullptr, in_place && at_root ? RAILCOLL_IN_PLACE : 0u};
  const void* mine = in_place ? nullptr : packed(send, sendbuf, Staging::Send);
  DataView all;
  void* gathered = nullptr;
  if (at_root) {
    all = view(recvtype, static_cast<int64_t>(recvcount) * route.size());
    gathered = in_place ? landing_in_place(all, recvbuf, root, recvcount) : landing(all, recvbuf, Staging::Recv);
  }
  railcoll_status_t st = railcoll_gather(rc, mine, gathered, block, root, &opts);
  if (st == RAILCOLL_OK && at_root) unpack(all, recvbuf, Staging::Recv);
  return route.finish(st);
}

int MPI_Barrier(MPI_Comm comm) {
  Route route(Coll::Barrier, comm);
  if (route.to_mpi()) return PMPI_Barrier(comm);
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  return route.finish(railcoll_barrier(rc));
}

}  // extern "C"
