// The served calls that give each rank its own data: MPI_Alltoall,
// MPI_Alltoallv, MPI_Scatter, MPI_Scatterv, MPI_Gatherv, and their
// nonblocking and persistent forms (one body each, collectives.cpp says how).
// They route on what every rank shares (the communicator, RAILCOLL_MPI_COLLS,
// the root) and map MPI's counts and displacements, in elements of a rank's
// own datatypes, onto railcoll's bytes; a non-contiguous layout is packed
// block by block into a staging buffer and unpacked after (call.hpp).
//
// MPI_Scatterv's and MPI_Gatherv's counts are the root's alone, and railcoll's
// schedules need them on every rank: railcoll's calls take them so
// (RAILCOLL_ROOT_COUNTS) and broadcast them as the first step of the same
// request, so a nonblocking or persistent call returns at once like any
// other; each other rank passes its own count, and one that disagrees with
// the root's fails the call on every rank rather than move the wrong bytes.
#include <memory>
#include <string>
#include <vector>

#include "mpi/call.hpp"
#include "mpi/served_entries.hpp"

namespace railcoll::mpi {

namespace {

// A v-call's blocks as railcoll takes them: counts and displacements in bytes
// from `base`, the memory railcoll reads or writes. Contiguous elements: the
// caller's buffer and its displacements. Otherwise the blocks back to back in
// staging: with `pack` the caller's data is packed in before the data moves,
// with `unpack` what arrived goes back to the caller's displacements after.
class Blocks {
 public:
  Blocks(ServedCall& call, const DataView& element, void* buf, const int* counts, const int* displs, int n, Staging slot,
         bool pack, bool unpack)
      : layout_(std::make_shared<Layout>()) {
    Layout& l = *layout_;
    l.element = call.held(element);
    l.buf = static_cast<char*>(buf);
    l.elements.assign(counts, counts + n);
    l.displs.assign(displs, displs + n);
    bytes_.resize(static_cast<size_t>(n));
    l.at.resize(static_cast<size_t>(n));
    uint64_t total = 0;
    for (int r = 0; r < n; ++r) {
      bytes_[r] = static_cast<size_t>(counts[r]) * element.type_size;
      l.at[r] = element.contiguous ? static_cast<size_t>(static_cast<MPI_Aint>(displs[r]) * element.extent) : total;
      total += bytes_[r];
    }
    if (element.contiguous) {
      l.base = static_cast<char*>(element.at(buf));
      return;
    }
    l.base = call.staging(slot, total);
    std::shared_ptr<const Layout> kept = layout_;
    if (pack)
      call.before([kept] {
        for (size_t r = 0; r < kept->at.size(); ++r) pack_into(kept->base + kept->at[r], kept->block(r), kept->elements_of(r), kept->element);
      });
    if (unpack)
      call.after([kept] {
        for (size_t r = 0; r < kept->at.size(); ++r) unpack_from(kept->base + kept->at[r], kept->block(r), kept->elements_of(r), kept->element);
      });
  }
  char* base() const { return layout_->base; }
  const size_t* bytes() const { return bytes_.data(); }
  const size_t* at() const { return layout_->at.data(); }

 private:
  struct Layout {
    DataView element;
    char* buf = nullptr;
    char* base = nullptr;
    std::vector<int> elements, displs;
    std::vector<size_t> at;
    char* block(size_t r) const { return buf + static_cast<MPI_Aint>(displs[r]) * element.extent; }
    uint64_t elements_of(size_t r) const { return static_cast<uint64_t>(elements[r]); }
  };
  std::shared_ptr<Layout> layout_;
  std::vector<size_t> bytes_;
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

railcoll_call_opts_t root_counts_opts(bool in_place) {
  return {nullptr, RAILCOLL_ROOT_COUNTS | (in_place ? RAILCOLL_IN_PLACE : 0u)};
}

const size_t* or_null(const std::vector<size_t>& v) { return v.empty() ? nullptr : v.data(); }

template <class Pass>
int alltoall(Route& route, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
             MPI_Datatype recvtype, Pass pass) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  DataView block, send;
  if (route.open()) {
    route.need(block = view(recvtype, recvcount));
    if (!in_place) route.need(send = view(sendtype, sendcount));
  }
  if (route.to_mpi()) return pass();
  if (!in_place && send.bytes != block.bytes)
    return route.refuse(MPI_ERR_TRUNCATE, "this rank sends blocks of " + bytes_text(send.bytes) +
                                              " but receives blocks of " + bytes_text(block.bytes));
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const int n = route.size();
  const DataView recv = view(recvtype, static_cast<int64_t>(recvcount) * n);
  const railcoll_call_opts_t opts = in_place_opts(in_place);
  ServedCall call(route);
  const void* mine = nullptr;
  void* all = nullptr;
  if (in_place) {
    all = const_cast<void*>(call.packed(recv, recvbuf, Staging::Recv));
    if (!recv.contiguous) call.landing(recv, recvbuf, Staging::Recv);  // and unpacked after
  } else {
    mine = call.packed(view(sendtype, static_cast<int64_t>(sendcount) * n), sendbuf, Staging::Send);
    all = call.landing(recv, recvbuf, Staging::Recv);
  }
  return call.run(railcoll_alltoall, railcoll_ialltoall, railcoll_alltoall_init, rc, mine, all,
                  static_cast<size_t>(block.bytes), &opts);
}

template <class Pass>
int alltoallv(Route& route, const void* sendbuf, const int* sendcounts, const int* sdispls, MPI_Datatype sendtype,
              void* recvbuf, const int* recvcounts, const int* rdispls, MPI_Datatype recvtype, Pass pass) {
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
  if (route.to_mpi()) return pass();
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const int n = route.size();
  const railcoll_call_opts_t opts = in_place_opts(in_place);
  ServedCall call(route);
  // In place, recvbuf holds what is sent: packed in, unpacked out.
  Blocks recv(call, recv_element, recvbuf, recvcounts, rdispls, n, Staging::Recv, in_place, true);
  if (in_place) {
    const size_t* none = nullptr;
    return call.run(railcoll_alltoallv, railcoll_ialltoallv, railcoll_alltoallv_init, rc, nullptr, none, none,
                    recv.base(), recv.bytes(), recv.at(), &opts);
  }
  Blocks send(call, send_element, const_cast<void*>(sendbuf), sendcounts, sdispls, n, Staging::Send, true, false);
  return call.run(railcoll_alltoallv, railcoll_ialltoallv, railcoll_alltoallv_init, rc, send.base(), send.bytes(),
                  send.at(), recv.base(), recv.bytes(), recv.at(), &opts);
}

template <class Pass>
int scatter(Route& route, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
            MPI_Datatype recvtype, int root, Pass pass) {
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
  if (route.to_mpi()) return pass();
  if (int bad = check_root(route, root)) return bad;
  if (at_root && !in_place && block.bytes != recv.bytes)
    return route.refuse(MPI_ERR_TRUNCATE, "the root sends blocks of " + bytes_text(block.bytes) + " but receives " +
                                              bytes_text(recv.bytes));
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const railcoll_call_opts_t opts = in_place_opts(in_place);
  ServedCall call(route);
  const void* all = at_root ? call.packed(view(sendtype, static_cast<int64_t>(sendcount) * route.size()), sendbuf,
                                          Staging::Send)
                            : nullptr;
  void* mine = in_place ? nullptr : call.landing(recv, recvbuf, Staging::Recv);
  return call.run(railcoll_scatter, railcoll_iscatter, railcoll_scatter_init, rc, all, mine,
                  static_cast<size_t>(at_root ? block.bytes : recv.bytes), root, &opts);
}

template <class Pass>
int scatterv(Route& route, const void* sendbuf, const int* sendcounts, const int* displs, MPI_Datatype sendtype,
             void* recvbuf, int recvcount, MPI_Datatype recvtype, int root, Pass pass) {
  const bool in_place = recvbuf == MPI_IN_PLACE;
  DataView send_element, recv;
  const bool at_root =
      route_rooted_v(route, root, in_place, sendtype, sendcounts, displs, recvtype, recvcount, &send_element, &recv);
  if (route.to_mpi()) return pass();
  if (int bad = check_root(route, root)) return bad;
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const int n = route.size(), me = route.rank();
  ServedCall call(route);
  std::vector<size_t> counts(static_cast<size_t>(n));
  char* base = nullptr;
  std::vector<size_t> at;
  if (at_root) {
    Blocks blocks(call, send_element, const_cast<void*>(sendbuf), sendcounts, displs, n, Staging::Send, true, false);
    counts.assign(blocks.bytes(), blocks.bytes() + n);
    base = blocks.base();
    at.assign(blocks.at(), blocks.at() + n);
  }
  if (!at_root) counts[static_cast<size_t>(me)] = recv.bytes;  // the root's are the others'
  void* mine = in_place ? nullptr : call.landing(recv, recvbuf, Staging::Recv);
  const railcoll_call_opts_t opts = root_counts_opts(in_place);
  return call.run(railcoll_scatterv, railcoll_iscatterv, railcoll_scatterv_init, rc, base, counts.data(), or_null(at),
                  mine, root, &opts);
}

template <class Pass>
int gatherv(Route& route, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
            const int* recvcounts, const int* displs, MPI_Datatype recvtype, int root, Pass pass) {
  const bool in_place = sendbuf == MPI_IN_PLACE;  // the root's alone: its block is in recvbuf already
  DataView send, recv_element;
  const bool at_root =
      route_rooted_v(route, root, in_place, recvtype, recvcounts, displs, sendtype, sendcount, &recv_element, &send);
  if (route.to_mpi()) return pass();
  if (int bad = check_root(route, root)) return bad;
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const int n = route.size(), me = route.rank();
  if (at_root && !in_place && static_cast<uint64_t>(recvcounts[me]) * recv_element.type_size != send.bytes)
    return route.refuse(MPI_ERR_TRUNCATE, "the root sends " + bytes_text(send.bytes) + " but recvcounts[" +
                                              std::to_string(me) + "] holds " +
                                              bytes_text(static_cast<uint64_t>(recvcounts[me]) * recv_element.type_size));
  ServedCall call(route);
  std::vector<size_t> counts(static_cast<size_t>(n));
  char* base = nullptr;
  std::vector<size_t> at;
  if (at_root) {
    // In place the root's own block is packed into its place; the rest arrives.
    Blocks blocks(call, recv_element, recvbuf, recvcounts, displs, n, Staging::Recv, in_place, true);
    counts.assign(blocks.bytes(), blocks.bytes() + n);
    base = blocks.base();
    at.assign(blocks.at(), blocks.at() + n);
  }
  if (!at_root) counts[static_cast<size_t>(me)] = send.bytes;  // the root's are the others'
  const void* mine = in_place ? nullptr : call.packed(send, sendbuf, Staging::Send);
  const railcoll_call_opts_t opts = root_counts_opts(in_place);
  return call.run(railcoll_gatherv, railcoll_igatherv, railcoll_gatherv_init, rc, mine, base, counts.data(), or_null(at),
                  root, &opts);
}

}  // namespace

}  // namespace railcoll::mpi

using namespace railcoll::mpi;

#undef RAILCOLL_MPI_HOME_personalised
#define RAILCOLL_MPI_HOME_personalised RAILCOLL_MPI_C_ENTRIES

extern "C" {

// MPI_<Name>, MPI_I<Name> and the persistent form of this file's rows.
#include "mpi/served.def"

}  // extern "C"
