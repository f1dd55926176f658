// The collectives of the C API, each in its three forms: blocking
// (railcoll_COLL), nonblocking (railcoll_iCOLL) and persistent
// (railcoll_COLL_init). Each body only maps its arguments onto a call of the
// runtime's front end (runtime/front_end.hpp), which checks them through
// the collective traits, plans and builds the call; the form decides when it
// runs: now, in the background, or at every railcoll_start (call_forms.hpp).
#include "capi/call_forms.hpp"

using railcoll::Collective;
using railcoll::capi::reduction;
using railcoll::rt::CallArgs;

extern "C" {

RAILCOLL_THREE_FORMS(allgather,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t bytes,
                      const railcoll_call_opts_t* opts),
                     opts, [&](CallArgs& a) {
                       a.collective = Collective::Allgather;
                       a.send = sendbuf, a.recv = recvbuf, a.count = bytes;
                     })

RAILCOLL_THREE_FORMS(allgatherv,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, const size_t* counts,
                      const size_t* displs, const railcoll_call_opts_t* opts),
                     opts, [&](CallArgs& a) {
                       a.collective = Collective::Allgather;
                       a.send = sendbuf, a.recv = recvbuf;
                       a.per_rank = true, a.blocks = {counts, displs};
                     })

RAILCOLL_THREE_FORMS(barrier, (railcoll_comm_t comm), nullptr,
                     [&](CallArgs& a) { a.collective = Collective::Barrier; })

RAILCOLL_THREE_FORMS(bcast,
                     (railcoll_comm_t comm, void* buf, size_t bytes, int root, const railcoll_call_opts_t* opts),
                     opts, [&](CallArgs& a) {
                       a.collective = Collective::Bcast;
                       a.recv = buf, a.count = bytes, a.root = root;
                     })

RAILCOLL_THREE_FORMS(gather,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t bytes, int root,
                      const railcoll_call_opts_t* opts),
                     opts, [&](CallArgs& a) {
                       a.collective = Collective::Gather;
                       a.send = sendbuf, a.recv = recvbuf, a.count = bytes, a.root = root;
                     })

RAILCOLL_THREE_FORMS(gatherv,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, const size_t* counts,
                      const size_t* displs, int root, const railcoll_call_opts_t* opts),
                     opts, [&](CallArgs& a) {
                       a.collective = Collective::Gatherv;
                       a.send = sendbuf, a.recv = recvbuf, a.root = root;
                       a.per_rank = true, a.blocks = {counts, displs};
                     })

RAILCOLL_THREE_FORMS(allreduce,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                      railcoll_datatype_t type, railcoll_op_t op, const railcoll_call_opts_t* opts),
                     opts, [&](CallArgs& a) {
                       a.collective = Collective::Allreduce;
                       a.send = sendbuf, a.recv = recvbuf, a.count = count;
                       reduction(a, type, op);
                     })

RAILCOLL_THREE_FORMS(reduce_scatter_block,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                      railcoll_datatype_t type, railcoll_op_t op, const railcoll_call_opts_t* opts),
                     opts, [&](CallArgs& a) {
                       a.collective = Collective::ReduceScatterBlock;
                       a.send = sendbuf, a.recv = recvbuf, a.count = count;
                       reduction(a, type, op);
                     })

RAILCOLL_THREE_FORMS(reduce_scatter,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, const size_t* counts,
                      railcoll_datatype_t type, railcoll_op_t op, const railcoll_call_opts_t* opts),
                     opts, [&](CallArgs& a) {
                       a.collective = Collective::ReduceScatter;
                       a.send = sendbuf, a.recv = recvbuf;
                       a.per_rank = true, a.blocks = {counts, nullptr};
                       reduction(a, type, op);
                     })

RAILCOLL_THREE_FORMS(reduce,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                      railcoll_datatype_t type, railcoll_op_t op, int root, const railcoll_call_opts_t* opts),
                     opts, [&](CallArgs& a) {
                       a.collective = Collective::Reduce;
                       a.send = sendbuf, a.recv = recvbuf, a.count = count, a.root = root;
                       reduction(a, type, op);
                     })

RAILCOLL_THREE_FORMS(alltoall,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t bytes,
                      const railcoll_call_opts_t* opts),
                     opts, [&](CallArgs& a) {
                       a.collective = Collective::Alltoall;
                       a.send = sendbuf, a.recv = recvbuf, a.count = bytes;
                     })

RAILCOLL_THREE_FORMS(alltoallv,
                     (railcoll_comm_t comm, const void* sendbuf, const size_t* sendcounts, const size_t* sdispls,
                      void* recvbuf, const size_t* recvcounts, const size_t* rdispls,
                      const railcoll_call_opts_t* opts),
                     opts, [&](CallArgs& a) {
                       a.collective = Collective::Alltoallv;
                       a.send = sendbuf, a.recv = recvbuf;
                       a.per_rank = true, a.send_blocks = {sendcounts, sdispls}, a.blocks = {recvcounts, rdispls};
                     })

RAILCOLL_THREE_FORMS(scatter,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t bytes, int root,
                      const railcoll_call_opts_t* opts),
                     opts, [&](CallArgs& a) {
                       a.collective = Collective::Scatter;
                       a.send = sendbuf, a.recv = recvbuf, a.count = bytes, a.root = root;
                     })

RAILCOLL_THREE_FORMS(scatterv,
                     (railcoll_comm_t comm, const void* sendbuf, const size_t* counts, const size_t* displs,
                      void* recvbuf, int root, const railcoll_call_opts_t* opts),
                     opts, [&](CallArgs& a) {
                       a.collective = Collective::Scatterv;
                       a.send = sendbuf, a.recv = recvbuf, a.root = root;
                       a.per_rank = true, a.blocks = {counts, displs};
                     })

}  // extern "C"
