// The served calls that gather or spread whole blocks: MPI_Allgather,
// MPI_Allgatherv, MPI_Bcast, MPI_Gather, and MPI_Barrier (the reductions are
// in reductions.cpp, the personalised ones in personalised.cpp). Each first routes the call (class Route): MPI's
// own collective unless every check passes, and every check reads only what
// all ranks of the call agree on (layer.hpp); then it maps the arguments onto
// railcoll's C API, byte counts and one piece of memory per buffer (a
// non-contiguous layout packed into staging and unpacked after: call.hpp).
// Each collective is one body for its blocking, nonblocking and persistent
// entry points (MPI_Allgather, MPI_Iallgather, MPI_Allgather_init), which are
// made from its row in served.def (served_entries.hpp): the entry point routes
// with its mode and says which PMPI_ call serves it when railcoll does not
// (`pass`).
#include <memory>
#include <string>
#include <vector>

#include "mpi/call.hpp"
#include "mpi/served_entries.hpp"

namespace railcoll::mpi {

namespace {

template <class Pass>
int allgather(Route& route, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
              MPI_Datatype recvtype, Pass pass) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  DataView block, send;
  if (route.open()) {
    route.need(block = view(recvtype, recvcount));
    if (!in_place) route.need(send = view(sendtype, sendcount));
  }
  if (route.to_mpi()) return pass();
  if (!in_place && send.bytes != block.bytes)
    return route.refuse(MPI_ERR_TRUNCATE, "this rank sends " + bytes_text(send.bytes) + " but receives blocks of " +
                                              bytes_text(block.bytes));
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const DataView recv = view(recvtype, static_cast<int64_t>(recvcount) * route.size());
  const railcoll_call_opts_t opts = in_place_opts(in_place);
  ServedCall call(route);
  const void* mine = in_place ? nullptr : call.packed(send, sendbuf, Staging::Send);
  void* all = in_place ? call.landing_in_place(recv, recvbuf, route.rank(), recvcount)
                       : call.landing(recv, recvbuf, Staging::Recv);
  return call.run(railcoll_allgather, railcoll_iallgather, railcoll_allgather_init, rc, mine, all, block.bytes, &opts);
}

// Allgatherv's blocks of a contiguous type go to railcoll with their
// displacements in bytes (railcoll packs and unpacks blocks that are not back
// to back); blocks of a type with holes go through a staging buffer, each then
// unpacked to its displacement.
template <class Pass>
int allgatherv(Route& route, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
               const int* recvcounts, const int* displs, MPI_Datatype recvtype, Pass pass) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  DataView element, send;
  std::vector<size_t> counts;
  if (route.open()) {
    element = view(recvtype, 1);
    if (!element.valid || !recvcounts || !displs) route.decline(Reason::BadArgument);
    for (int r = 0; route.open() && r < route.size(); ++r) {
      if (recvcounts[r] < 0) route.decline(Reason::BadArgument);
      counts.push_back(static_cast<size_t>(recvcounts[r]) * element.bytes);
    }
    if (!in_place) route.need(send = view(sendtype, sendcount));
  }
  if (route.to_mpi()) return pass();
  const int me = route.rank(), n = route.size();
  std::vector<size_t> at(static_cast<size_t>(n)), where(static_cast<size_t>(n));
  size_t total = 0;
  bool direct = element.contiguous;
  for (int r = 0; r < n; ++r) {
    at[r] = total;
    direct = direct && displs[r] >= 0;
    where[r] = displs[r] >= 0 ? static_cast<size_t>(static_cast<MPI_Aint>(displs[r]) * element.extent) : 0;
    total += counts[r];
  }
  if (!in_place && send.bytes != counts[me])
    return route.refuse(MPI_ERR_TRUNCATE, "this rank sends " + bytes_text(send.bytes) + " but recvcounts[" +
                                              std::to_string(me) + "] holds " + bytes_text(counts[me]));
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const railcoll_call_opts_t opts = in_place_opts(in_place);
  ServedCall call(route);
  const void* mine = in_place ? nullptr : call.packed(send, sendbuf, Staging::Send);
  if (direct)
    return call.run(railcoll_allgatherv, railcoll_iallgatherv, railcoll_allgatherv_init, rc, mine,
                    element.at(recvbuf), counts.data(), where.data(), &opts);
  // The blocks' places, kept for packing and unpacking (MPI lets the program
  // reuse its arrays only once the call is complete, but a copy costs little).
  struct Blocks {
    char* staged;
    char* buf;
    DataView element;
    std::vector<size_t> at;
    std::vector<int> counts, displs;
    char* block(int r) const { return buf + static_cast<MPI_Aint>(displs[r]) * element.extent; }
  };
  auto b = std::make_shared<Blocks>(Blocks{call.staging(Staging::Recv, total), static_cast<char*>(recvbuf),
                                           call.held(element), at, std::vector<int>(recvcounts, recvcounts + n),
                                           std::vector<int>(displs, displs + n)});
  if (in_place)
    call.before([b, me] { pack_into(b->staged + b->at[me], b->block(me), static_cast<uint64_t>(b->counts[me]), b->element); });
  call.after([b] {
    for (size_t r = 0; r < b->at.size(); ++r)
      unpack_from(b->staged + b->at[r], b->block(static_cast<int>(r)), static_cast<uint64_t>(b->counts[r]), b->element);
  });
  return call.run(railcoll_allgatherv, railcoll_iallgatherv, railcoll_allgatherv_init, rc, mine, b->staged,
                  counts.data(), nullptr, &opts);
}

template <class Pass>
int bcast(Route& route, void* buffer, int count, MPI_Datatype datatype, int root, Pass pass) {
  DataView data;
  if (route.open()) route.need(data = view(datatype, count));
  if (route.to_mpi()) return pass();
  if (int bad = check_root(route, root)) return bad;
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  ServedCall call(route);
  void* bytes = route.rank() == root ? const_cast<void*>(call.packed(data, buffer, Staging::Recv))
                                     : call.landing(data, buffer, Staging::Recv);
  const railcoll_call_opts_t* opts = nullptr;
  return call.run(railcoll_bcast, railcoll_ibcast, railcoll_bcast_init, rc, bytes, data.bytes, root, opts);
}

template <class Pass>
int gather(Route& route, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
           MPI_Datatype recvtype, int root, Pass pass) {
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
  if (route.to_mpi()) return pass();
  if (int bad = check_root(route, root)) return bad;
  const uint64_t block = at_root ? recv.bytes : send.bytes;
  if (at_root && !in_place && send.bytes != recv.bytes)
    return route.refuse(MPI_ERR_TRUNCATE, "the root sends " + bytes_text(send.bytes) + " but receives blocks of " +
                                              bytes_text(recv.bytes));
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const railcoll_call_opts_t opts = in_place_opts(in_place && at_root);
  ServedCall call(route);
  const void* mine = in_place ? nullptr : call.packed(send, sendbuf, Staging::Send);
  void* gathered = nullptr;
  if (at_root) {
    const DataView all = view(recvtype, static_cast<int64_t>(recvcount) * route.size());
    gathered = in_place ? call.landing_in_place(all, recvbuf, root, recvcount) : call.landing(all, recvbuf, Staging::Recv);
  }
  return call.run(railcoll_gather, railcoll_igather, railcoll_gather_init, rc, mine, gathered, block, root, &opts);
}

template <class Pass>
int barrier(Route& route, Pass pass) {
  if (route.to_mpi()) return pass();
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  ServedCall call(route);
  return call.run(railcoll_barrier, railcoll_ibarrier, railcoll_barrier_init, rc);
}

}  // namespace

}  // namespace railcoll::mpi

using namespace railcoll::mpi;

#undef RAILCOLL_MPI_HOME_collectives
#define RAILCOLL_MPI_HOME_collectives RAILCOLL_MPI_C_ENTRIES

extern "C" {

// MPI_<Name>, MPI_I<Name> and the persistent form of this file's rows.
#include "mpi/served.def"

}  // extern "C"
