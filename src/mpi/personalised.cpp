// The served calls that give each rank its own data: MPI_Alltoall,
// MPI_Alltoallv, MPI_Scatter, MPI_Scatterv, MPI_Gatherv. They route on what
// every rank shares (the communicator, RAILCOLL_MPI_COLLS, the root) and map
// MPI's counts and displacements, in elements of a rank's own datatypes, onto
// railcoll's bytes; a non-contiguous layout is packed block by block into a
// staging buffer and unpacked after (pack.cpp).
//
// MPI_Scatterv's and MPI_Gatherv's counts are the root's alone, and railcoll's
// schedules need them on every rank: the root broadcasts them first (one small
// railcoll_bcast), and each other rank puts its own count in its copy, so a
// rank whose count disagrees with the root's makes railcoll report the
// mismatch on every rank rather than move the wrong bytes.
#include <optional>
#include <string>
#include <vector>

#include "mpi/route.hpp"

namespace railcoll::mpi {

namespace {

railcoll_call_opts_t in_place_opts(bool in_place) { return {nullptr, in_place ? RAILCOLL_IN_PLACE : 0u}; }

// A v-call's blocks as railcoll takes them: counts and displacements in bytes
// from `base`, the memory railcoll reads or writes. Contiguous elements: the
// caller's buffer and its displacements. Otherwise the blocks packed back to
// back in a staging buffer (`pack` copies the caller's data in; unpack() puts
// what arrived back at the caller's displacements).
class Blocks {
 public:
  Blocks(const DataView& element, void* buf, const int* counts, const int* displs, int n, Staging slot, bool pack)
      : element_(element), buf_(static_cast<char*>(buf)), elements_(counts, counts + n), displs_(displs, displs + n) {
    bytes_.resize(static_cast<size_t>(n));
    at_.resize(static_cast<size_t>(n));
    uint64_t total = 0;
    for (int r = 0; r < n; ++r) {
      bytes_[r] = static_cast<size_t>(counts[r]) * element.type_size;
      at_[r] = element.contiguous ? static_cast<size_t>(static_cast<MPI_Aint>(displs[r]) * element.extent) : total;
      total += bytes_[r];
    }
    if (element.contiguous) {
      base_ = static_cast<char*>(element.at(buf));
      return;
    }
    base_ = staging(slot, total);
    for (int r = 0; r < n && pack; ++r) pack_into(base_ + at_[r], block(r), elements(r), element_);
  }
  void unpack() const {
    if (element_.contiguous) return;
    for (size_t r = 0; r < at_.size(); ++r) unpack_from(base_ + at_[r], block(static_cast<int>(r)), elements(r), element_);
  }
  char* base() const { return base_; }
  const size_t* bytes() const { return bytes_.data(); }
  const size_t* at() const { return at_.data(); }

 private:
  char* block(int r) const { return buf_ + static_cast<MPI_Aint>(displs_[r]) * element_.extent; }
  uint64_t elements(size_t r) const { return static_cast<uint64_t>(elements_[r]); }
  DataView element_;
  char* buf_;
  std::vector<int> elements_, displs_;
  std::vector<size_t> bytes_, at_;
  char* base_ = nullptr;
};

// Counts and displacements MPI requires to be sane; otherwise MPI reports it.
void need_counts(Route& route, const int* counts, const int* displs, int n) {
  if (!route.open()) return;
  if (!counts || !displs) return route.decline(Reason::BadArgument);
  for (int r = 0; r < n; ++r)
    if (counts[r] < 0) return route.decline(Reason::BadArgument);
}

// The route of MPI_Scatterv and MPI_Gatherv: the root's per-rank side
// (`element` of `type`, its counts and displacements) and every rank's own
// block (`own` of own_count own_type, unless in place, which is the root's
// alone). True at the root.
bool route_rooted_v(Route& route, int root, bool in_place, MPI_Datatype type, const int* counts, const int* displs,
                    MPI_Datatype own_type, int own_count, DataView* element, DataView* own) {
  if (!route.open()) return false;
  const bool at_root = route.rank() == root;
  if (at_root) {
    route.need(*element = view(type, 1));
    need_counts(route, counts, displs, route.size());
  }
  if (in_place && !at_root) route.decline(Reason::BadArgument);
  if (!in_place) route.need(*own = view(own_type, own_count));
  return at_root;
}

// The root's per-rank byte counts on every rank (see the top of this file):
// `mine` is this rank's own, put in its place after the broadcast.
railcoll_status_t share_root_counts(railcoll_comm_t rc, int root, int me, std::vector<size_t>* counts, size_t mine) {
  railcoll_status_t st = railcoll_bcast(rc, counts->data(), counts->size() * sizeof(size_t), root, nullptr);
  if (me != root) (*counts)[static_cast<size_t>(me)] = mine;
  return st;
}

}  // namespace

}  // namespace railcoll::mpi

using namespace railcoll::mpi;

extern "C" {

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm) {
  Route route(Coll::Alltoall, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  DataView block, send;
  if (route.open()) {
    route.need(block = view(recvtype, recvcount));
    if (!in_place) route.need(send = view(sendtype, sendcount));
  }
  if (route.to_mpi()) return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  if (!in_place && send.bytes != block.bytes)
    return route.refuse(MPI_ERR_TRUNCATE, "this rank sends blocks of " + bytes_text(send.bytes) +
                                              " but receives blocks of " + bytes_text(block.bytes));
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const int n = route.size();
  const DataView recv = view(recvtype, static_cast<int64_t>(recvcount) * n);
  const railcoll_call_opts_t opts = in_place_opts(in_place);
  const void* mine = nullptr;
  void* all = nullptr;
  if (in_place) {
    all = const_cast<void*>(packed(recv, recvbuf, Staging::Recv));
  } else {
    mine = packed(view(sendtype, static_cast<int64_t>(sendcount) * n), sendbuf, Staging::Send);
    all = landing(recv, recvbuf, Staging::Recv);
  }
  railcoll_status_t st = railcoll_alltoall(rc, mine, all, block.bytes, &opts);
  if (st == RAILCOLL_OK) unpack(recv, recvbuf, Staging::Recv);
  return route.finish(st);
}

int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                  void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  Route route(Coll::Alltoallv, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  DataView send_element, recv_element;
  if (route.open()) {
    route.need(recv_element = view(recvtype, 1));
    need_counts(route, recvcounts, rdispls, route.size());
    if (!in_place) {
      route.need(send_element = view(sendtype, 1));
      need_counts(route, sendcounts, sdispls, route.size());
    }
  }
  if (route.to_mpi())
    return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const int n = route.size();
  const railcoll_call_opts_t opts = in_place_opts(in_place);
  // In place, recvbuf holds what is sent: packed in, unpacked out.
  Blocks recv(recv_element, recvbuf, recvcounts, rdispls, n, Staging::Recv, in_place);
  railcoll_status_t st;
  if (in_place) {
    st = railcoll_alltoallv(rc, nullptr, nullptr, nullptr, recv.base(), recv.bytes(), recv.at(), &opts);
  } else {
    Blocks send(send_element, const_cast<void*>(sendbuf), sendcounts, sdispls, n, Staging::Send, true);
    st = railcoll_alltoallv(rc, send.base(), send.bytes(), send.at(), recv.base(), recv.bytes(), recv.at(), &opts);
  }
  if (st == RAILCOLL_OK) recv.unpack();
  return route.finish(st);
}

int MPI_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm) {
  Route route(Coll::Scatter, comm);
  const bool in_place = recvbuf == MPI_IN_PLACE;  // the root's alone: its block stays in sendbuf
  DataView block, recv;
  bool at_root = false;
  if (route.open()) {
    at_root = route.rank() == root;
    // The block every rank agrees on: the root's send signature, the others' receive one.
    if (at_root) route.need(block = view(sendtype, sendcount));
    if (in_place && !at_root) route.decline(Reason::BadArgument);
    if (!in_place) route.need(recv = view(recvtype, recvcount));
  }
  if (route.to_mpi()) return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
  if (int bad = check_root(route, root)) return bad;
  if (at_root && !in_place && block.bytes != recv.bytes)
    return route.refuse(MPI_ERR_TRUNCATE, "the root sends blocks of " + bytes_text(block.bytes) + " but receives " +
                                              bytes_text(recv.bytes));
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const railcoll_call_opts_t opts = in_place_opts(in_place);
  const void* all = at_root ? packed(view(sendtype, static_cast<int64_t>(sendcount) * route.size()), sendbuf,
                                     Staging::Send)
                            : nullptr;
  void* mine = in_place ? nullptr : landing(recv, recvbuf, Staging::Recv);
  railcoll_status_t st = railcoll_scatter(rc, all, mine, at_root ? block.bytes : recv.bytes, root, &opts);
  if (st == RAILCOLL_OK && !in_place) unpack(recv, recvbuf, Staging::Recv);
  return route.finish(st);
}

int MPI_Scatterv(const void* sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                 void* recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  Route route(Coll::Scatterv, comm);
  const bool in_place = recvbuf == MPI_IN_PLACE;
  DataView send_element, recv;
  const bool at_root =
      route_rooted_v(route, root, in_place, sendtype, sendcounts, displs, recvtype, recvcount, &send_element, &recv);
  if (route.to_mpi())
    return PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm);
  if (int bad = check_root(route, root)) return bad;
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const int n = route.size(), me = route.rank();
  std::vector<size_t> counts(static_cast<size_t>(n));
  std::optional<Blocks> blocks;
  if (at_root) {
    blocks.emplace(send_element, const_cast<void*>(sendbuf), sendcounts, displs, n, Staging::Send, true);
    counts.assign(blocks->bytes(), blocks->bytes() + n);
  }
  railcoll_status_t st = share_root_counts(rc, root, me, &counts, recv.bytes);
  if (st == RAILCOLL_OK) {
    const railcoll_call_opts_t opts = in_place_opts(in_place);
    void* mine = in_place ? nullptr : landing(recv, recvbuf, Staging::Recv);
    st = railcoll_scatterv(rc, at_root ? blocks->base() : nullptr, counts.data(), at_root ? blocks->at() : nullptr,
                           mine, root, &opts);
    if (st == RAILCOLL_OK && !in_place) unpack(recv, recvbuf, Staging::Recv);
  }
  return route.finish(st);
}

int MPI_Gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm) {
  Route route(Coll::Gatherv, comm);
  const bool in_place = sendbuf == MPI_IN_PLACE;  // the root's alone: its block is in recvbuf already
  DataView send, recv_element;
  const bool at_root =
      route_rooted_v(route, root, in_place, recvtype, recvcounts, displs, sendtype, sendcount, &recv_element, &send);
  if (route.to_mpi())
    return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm);
  if (int bad = check_root(route, root)) return bad;
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const int n = route.size(), me = route.rank();
  std::vector<size_t> counts(static_cast<size_t>(n));
  std::optional<Blocks> blocks;
  if (at_root) {
    // In place the root's own block is packed into its place; the rest arrives.
    blocks.emplace(recv_element, recvbuf, recvcounts, displs, n, Staging::Recv, in_place);
    counts.assign(blocks->bytes(), blocks->bytes() + n);
    if (!in_place && counts[static_cast<size_t>(me)] != send.bytes)
      return route.refuse(MPI_ERR_TRUNCATE, "the root sends " + bytes_text(send.bytes) + " but recvcounts[" +
                                                std::to_string(me) + "] holds " +
                                                bytes_text(counts[static_cast<size_t>(me)]));
  }
  railcoll_status_t st = share_root_counts(rc, root, me, &counts, send.bytes);
  if (st == RAILCOLL_OK) {
    const railcoll_call_opts_t opts = in_place_opts(in_place);
    const void* mine = in_place ? nullptr : packed(send, sendbuf, Staging::Send);
    st = railcoll_gatherv(rc, mine, at_root ? blocks->base() : nullptr, counts.data(), at_root ? blocks->at() : nullptr,
                          root, &opts);
    if (st == RAILCOLL_OK && at_root) blocks->unpack();
  }
  return route.finish(st);
}

}  // extern "C"
