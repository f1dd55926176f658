// MPI_Alltoallw (and MPI_Ialltoallw, MPI_Alltoallw_init / Open MPI 4's
// MPIX_Alltoallw_init) on railcoll_alltoallv: the block for each peer has its
// own count, byte displacement and datatype, on each side. The route reads
// only the communicator and RAILCOLL_MPI_COLLS (and rejects handles or counts
// MPI would reject): the datatypes are each rank's own business, as in every
// served call, so whatever their layouts every rank takes the same route.
// railcoll moves bytes: a side whose blocks are each one piece, at or after
// the buffer's address, is handed over in place (byte offsets per peer);
// otherwise every block is packed back to back into staging before the data
// moves (or unpacked from it after). Each pair's sizes are checked by
// railcoll: a rank whose block for a peer differs in size from what the peer
// expects gets railcoll's mismatch error on every rank.
#include <memory>
#include <vector>

#include "mpi/call.hpp"
#include "mpi/served_entries.hpp"

namespace railcoll::mpi {

namespace {

// One side of the call, per peer: the caller's blocks and where railcoll
// reads or writes them (`base` + at[d], bytes[d]).
class Side {
 public:
  template <class Count, class Displ>
  Side(Route& route, const void* buf, const Count* counts, const Displ* displs, const MPI_Datatype* types, int n)
      : blocks_(std::make_shared<Blocks>()) {
    Blocks& b = *blocks_;
    b.buf = static_cast<char*>(const_cast<void*>(buf));
    if (n > 0 && (!counts || !displs || !types)) {
      route.decline(Reason::BadArgument);
      return;
    }
    for (int d = 0; d < n && route.open(); ++d) {
      if (counts[d] < 0) {
        route.decline(Reason::BadArgument);
        return;
      }
      b.views.push_back(view(types[d], static_cast<int64_t>(counts[d])));
      b.displs.push_back(static_cast<MPI_Aint>(displs[d]));
      route.need(b.views.back());
    }
  }
  // The blocks in railcoll's terms; packing (`pack`) and unpacking (`unpack`)
  // registered with the call when they are staged.
  void place(ServedCall& call, Staging slot, bool pack, bool unpack) {
    Blocks& b = *blocks_;
    const size_t n = b.views.size();
    bool in_place = true;
    for (size_t d = 0; d < n; ++d)
      in_place = in_place && b.views[d].contiguous && (b.views[d].bytes == 0 || b.displs[d] + b.views[d].offset >= 0);
    uint64_t total = 0;
    for (size_t d = 0; d < n; ++d) {
      bytes_.push_back(static_cast<size_t>(b.views[d].bytes));
      at_.push_back(in_place ? static_cast<size_t>(b.views[d].bytes ? b.displs[d] + b.views[d].offset : 0) : total);
      total += b.views[d].bytes;
    }
    if (in_place) {
      base_ = b.buf;
      return;
    }
    base_ = call.staging(slot, total);
    for (DataView& v : b.views) v = call.held(v);  // pending calls keep their datatypes, whatever the program frees
    std::shared_ptr<const Blocks> kept = blocks_;
    char* base = base_;
    const std::vector<size_t> at = at_;
    if (pack)
      call.before([kept, base, at] {
        for (size_t d = 0; d < at.size(); ++d)
          pack_into(base + at[d], kept->buf + kept->displs[d], static_cast<uint64_t>(kept->views[d].count),
                    kept->views[d]);
      });
    if (unpack)
      call.after([kept, base, at] {
        for (size_t d = 0; d < at.size(); ++d)
          unpack_from(base + at[d], kept->buf + kept->displs[d], static_cast<uint64_t>(kept->views[d].count),
                      kept->views[d]);
      });
  }
  char* base() const { return base_; }
  const size_t* bytes() const { return bytes_.data(); }
  const size_t* at() const { return at_.data(); }

 private:
  struct Blocks {
    char* buf = nullptr;
    std::vector<DataView> views;
    std::vector<MPI_Aint> displs;  // bytes from buf (MPI_Alltoallw's displacements are in bytes)
  };
  std::shared_ptr<Blocks> blocks_;
  char* base_ = nullptr;
  std::vector<size_t> bytes_, at_;
};

template <class Count, class Displ, class Pass>
int alltoallw(Route& route, const void* sendbuf, const Count* sendcounts, const Displ* sdispls,
              const MPI_Datatype* sendtypes, void* recvbuf, const Count* recvcounts, const Displ* rdispls,
              const MPI_Datatype* recvtypes, Pass pass) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const int n = route.open() ? route.size() : 0;
  Side recv(route, recvbuf, recvcounts, rdispls, recvtypes, n);
  Side send = in_place ? Side(route, nullptr, recvcounts, rdispls, recvtypes, 0)
                       : Side(route, sendbuf, sendcounts, sdispls, sendtypes, n);
  if (route.to_mpi()) return pass();
  railcoll_comm_t rc = route.railcoll();
  if (!rc) return route.error();
  const railcoll_call_opts_t opts = in_place_opts(in_place);
  ServedCall call(route);
  // In place, recvbuf holds what is sent: packed in, unpacked out.
  recv.place(call, Staging::Recv, in_place, true);
  if (in_place) {
    const size_t* none = nullptr;
    return call.run(railcoll_alltoallv, railcoll_ialltoallv, railcoll_alltoallv_init, rc, nullptr, none, none,
                    recv.base(), recv.bytes(), recv.at(), &opts);
  }
  send.place(call, Staging::Send, true, false);
  return call.run(railcoll_alltoallv, railcoll_ialltoallv, railcoll_alltoallv_init, rc, send.base(), send.bytes(),
                  send.at(), recv.base(), recv.bytes(), recv.at(), &opts);
}

#if MPI_VERSION >= 4
// MPI_Alltoallv_c as an alltoallw: its displacements, in elements of the
// side's one datatype, made bytes, and that datatype for every peer.
template <class Pass>
int alltoallv_as_w(Route& route, const void* sendbuf, const MPI_Count* sendcounts, const MPI_Aint* sdispls,
                   MPI_Datatype sendtype, void* recvbuf, const MPI_Count* recvcounts, const MPI_Aint* rdispls,
                   MPI_Datatype recvtype, Pass pass) {
  const int n = route.open() ? route.size() : 0;
  const bool in_place = sendbuf == MPI_IN_PLACE;
  // Empty when the datatype or the displacements are missing: the route declines then.
  auto in_bytes = [n](const MPI_Aint* displs, MPI_Datatype type) {
    std::vector<MPI_Aint> out;
    MPI_Aint lb = 0, extent = 0;
    if (!displs || type == MPI_DATATYPE_NULL || PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS) return out;
    for (int i = 0; i < n; ++i) out.push_back(displs[i] * extent);
    return out;
  };
  const std::vector<MPI_Aint> rbytes = in_bytes(rdispls, recvtype), sbytes = in_place ? rbytes : in_bytes(sdispls, sendtype);
  const std::vector<MPI_Datatype> rtypes(static_cast<size_t>(n), recvtype), stypes(static_cast<size_t>(n), sendtype);
  auto at = [](const std::vector<MPI_Aint>& v) { return v.empty() ? nullptr : v.data(); };
  return alltoallw(route, sendbuf, sendcounts, at(sbytes), stypes.data(), recvbuf, recvcounts, at(rbytes),
                   rtypes.data(), pass);
}
#endif

}  // namespace

}  // namespace railcoll::mpi

using namespace railcoll::mpi;

#undef RAILCOLL_MPI_HOME_alltoallw
#define RAILCOLL_MPI_HOME_alltoallw RAILCOLL_MPI_C_ENTRIES

extern "C" {

// MPI_<Name>, MPI_I<Name> and the persistent form of this file's rows.
#include "mpi/served.def"

// The large-count forms (MPI 4.0: MPI_Count counts, MPI_Aint displacements), where the MPI has them.
#if MPI_VERSION >= 4
int MPI_Alltoallw_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                    const MPI_Datatype sendtypes[], void* recvbuf, const MPI_Count recvcounts[],
                    const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
  Route route(Coll::Alltoallw, comm);
  return alltoallw(route, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, [&] {
    return PMPI_Alltoallw_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm);
  });
}

int MPI_Ialltoallw_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                     const MPI_Datatype sendtypes[], void* recvbuf, const MPI_Count recvcounts[],
                     const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request* request) {
  Route route(Coll::Alltoallw, comm, Mode::Nonblocking, request);
  return alltoallw(route, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, [&] {
    return PMPI_Ialltoallw_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm,
                             request);
  });
}

int MPI_Alltoallv_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[], MPI_Datatype sendtype,
                    void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[], MPI_Datatype recvtype,
                    MPI_Comm comm) {
  Route route(Coll::Alltoallv, comm);
  return alltoallv_as_w(route, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, [&] {
    return PMPI_Alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
  });
}

int MPI_Ialltoallv_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[], MPI_Datatype sendtype,
                     void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[], MPI_Datatype recvtype,
                     MPI_Comm comm, MPI_Request* request) {
  Route route(Coll::Alltoallv, comm, Mode::Nonblocking, request);
  return alltoallv_as_w(route, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, [&] {
    return PMPI_Ialltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,
                             request);
  });
}

int MPI_Alltoallv_init_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                         MPI_Datatype sendtype, void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                         MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  Route route(Coll::Alltoallv, comm, Mode::Persistent, request);
  return alltoallv_as_w(route, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, [&] {
    return PMPI_Alltoallv_init_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,
                                 info, request);
  });
}

int MPI_Alltoallw_init_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                         const MPI_Datatype sendtypes[], void* recvbuf, const MPI_Count recvcounts[],
                         const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,
                         MPI_Request* request) {
  Route route(Coll::Alltoallw, comm, Mode::Persistent, request);
  return alltoallw(route, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, [&] {
    return PMPI_Alltoallw_init_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes,
                                 comm, info, request);
  });
}
#endif

}  // extern "C"
