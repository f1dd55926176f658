// The prefix reductions of the C API, railcoll_scan and railcoll_exscan, in
// their three forms (call_forms.hpp says how one body makes them).
#include "capi/call_forms.hpp"

using railcoll::Collective;
using railcoll::capi::reduction;
using railcoll::rt::CallArgs;

extern "C" {

RAILCOLL_THREE_FORMS(scan,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                      railcoll_datatype_t type, railcoll_op_t op, const railcoll_call_opts_t* opts),
                     opts, [&](CallArgs& a) {
                       a.collective = Collective::Scan;
                       a.send = sendbuf, a.recv = recvbuf, a.count = count;
                       reduction(a, type, op);
                     })

RAILCOLL_THREE_FORMS(exscan,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                      railcoll_datatype_t type, railcoll_op_t op, const railcoll_call_opts_t* opts),
                     opts, [&](CallArgs& a) {
                       a.collective = Collective::Exscan;
                       a.send = sendbuf, a.recv = recvbuf, a.count = count;
                       reduction(a, type, op);
                     })

}  // extern "C"
