// The large-count forms (MPI 4.0 §6.2: MPI_Count counts) of the calls with
// one count per buffer -- MPI_Bcast_c, MPI_Gather_c, MPI_Scatter_c,
// MPI_Allgather_c, MPI_Alltoall_c and their nonblocking and persistent forms --
// where the MPI has them (MPICH 4; Open MPI 4.1 has none). Each is the int
// form's call (counted as it in the report): `count` elements as they are when
// the count fits an int, else one element of a datatype of `count` of them
// made here. Whether railcoll serves an int-form call never depends on its
// count or its datatype's layout (layer.hpp), so ranks that express the same
// bytes differently (an int count on one, a made type on another) still take
// the same route. The reductions', scans' and alltoallw's _c forms are in
// their own files; MPI_Alltoallv_c is served as alltoallw (alltoallw.cpp).
#include <climits>

#include "mpi/layer.hpp"

#if MPI_VERSION >= 4

namespace railcoll::mpi {

namespace {

// `count` elements of `type` as an int count and a datatype; a type made for
// a count beyond INT_MAX is freed when this goes, after the call is issued
// (a served nonblocking or persistent call holds its own copy of it).
class IntCount {
 public:
  IntCount(MPI_Count count, MPI_Datatype type) : type_(type) {
    if (count <= INT_MAX) {  // a negative count stays for the int form to report
      count_ = count < INT_MIN ? -1 : static_cast<int>(count);
      return;
    }
    constexpr MPI_Count kChunk = MPI_Count{1} << 30;
    MPI_Aint lb = 0, extent = 0;
    PMPI_Type_get_extent(type, &lb, &extent);
    MPI_Datatype chunk, chunks;
    PMPI_Type_contiguous(static_cast<int>(kChunk), type, &chunk);
    PMPI_Type_contiguous(static_cast<int>(count / kChunk), chunk, &chunks);
    const int rest = static_cast<int>(count % kChunk);
    if (rest == 0) {
      made_ = chunks;
    } else {
      MPI_Datatype tail;
      PMPI_Type_contiguous(rest, type, &tail);
      const int lengths[2] = {1, 1};
      const MPI_Aint at[2] = {0, static_cast<MPI_Aint>(count / kChunk * kChunk) * extent};
      const MPI_Datatype parts[2] = {chunks, tail};
      PMPI_Type_create_struct(2, lengths, at, parts, &made_);
      PMPI_Type_free(&tail);
      PMPI_Type_free(&chunks);
    }
    PMPI_Type_free(&chunk);
    PMPI_Type_commit(&made_);
    type_ = made_;
    count_ = 1;
  }
  ~IntCount() {
    if (made_ != MPI_DATATYPE_NULL) PMPI_Type_free(&made_);
  }
  IntCount(const IntCount&) = delete;
  IntCount& operator=(const IntCount&) = delete;
  int count() const { return count_; }
  MPI_Datatype type() const { return type_; }

 private:
  int count_ = 0;
  MPI_Datatype type_;
  MPI_Datatype made_ = MPI_DATATYPE_NULL;
};

}  // namespace

}  // namespace railcoll::mpi

using railcoll::mpi::IntCount;

extern "C" {

int MPI_Bcast_c(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  IntCount c(count, datatype);
  return MPI_Bcast(buffer, c.count(), c.type(), root, comm);
}
int MPI_Ibcast_c(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm,
                 MPI_Request* request) {
  IntCount c(count, datatype);
  return MPI_Ibcast(buffer, c.count(), c.type(), root, comm, request);
}
int MPI_Bcast_init_c(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Info info,
                     MPI_Request* request) {
  IntCount c(count, datatype);
  return MPI_Bcast_init(buffer, c.count(), c.type(), root, comm, info, request);
}

// The calls of a send and a receive side: (sendbuf, sendcount, sendtype,
// recvbuf, recvcount, recvtype, ...).
#define RAILCOLL_TWO_SIDED_C(Name, IName)                                                                        \
  int MPI_##Name##_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,            \
                     MPI_Count recvcount, MPI_Datatype recvtype RAILCOLL_ROOT_PARAM, MPI_Comm comm) {           \
    IntCount s(sendcount, sendtype), r(recvcount, recvtype);                                                    \
    return MPI_##Name(sendbuf, s.count(), s.type(), recvbuf, r.count(), r.type() RAILCOLL_ROOT_ARG, comm);      \
  }                                                                                                             \
  int MPI_##IName##_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,           \
                      MPI_Count recvcount, MPI_Datatype recvtype RAILCOLL_ROOT_PARAM, MPI_Comm comm,            \
                      MPI_Request* request) {                                                                   \
    IntCount s(sendcount, sendtype), r(recvcount, recvtype);                                                    \
    return MPI_##IName(sendbuf, s.count(), s.type(), recvbuf, r.count(), r.type() RAILCOLL_ROOT_ARG, comm,      \
                       request);                                                                                \
  }                                                                                                             \
  int MPI_##Name##_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,       \
                          MPI_Count recvcount, MPI_Datatype recvtype RAILCOLL_ROOT_PARAM, MPI_Comm comm,        \
                          MPI_Info info, MPI_Request* request) {                                                \
    IntCount s(sendcount, sendtype), r(recvcount, recvtype);                                                    \
    return MPI_##Name##_init(sendbuf, s.count(), s.type(), recvbuf, r.count(), r.type() RAILCOLL_ROOT_ARG,      \
                             comm, info, request);                                                              \
  }

#define RAILCOLL_ROOT_PARAM , int root
#define RAILCOLL_ROOT_ARG , root
RAILCOLL_TWO_SIDED_C(Gather, Igather)
RAILCOLL_TWO_SIDED_C(Scatter, Iscatter)
#undef RAILCOLL_ROOT_PARAM
#undef RAILCOLL_ROOT_ARG
#define RAILCOLL_ROOT_PARAM
#define RAILCOLL_ROOT_ARG
RAILCOLL_TWO_SIDED_C(Allgather, Iallgather)
RAILCOLL_TWO_SIDED_C(Alltoall, Ialltoall)
#undef RAILCOLL_ROOT_PARAM
#undef RAILCOLL_ROOT_ARG

}  // extern "C"

#endif
