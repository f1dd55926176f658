// The prefix reductions of the C API, railcoll_scan and railcoll_exscan, in
// their three forms (call_forms.hpp says how one body makes them).
#include "capi/call_forms.hpp"

using namespace railcoll::capi;

namespace {

// scan and exscan: send holds this rank's vector, recv gets its prefix; in
// place, recv holds the input (exscan's rank 0 keeps it: nothing is written).
railcoll_status_t prefix_call(Call& call, railcoll::Collective coll, const char* fn, const void* sendbuf,
                              void* recvbuf, size_t count, railcoll_datatype_t type, railcoll_op_t op,
                              const railcoll_call_opts_t* opts) {
  railcoll::AlgoOptions args;
  uint64_t bytes = 0;
  if (railcoll_status_t st = reduction_args(call, fn, type, op, &args)) return st;
  if (!element_bytes(count, args, &bytes)) return fail(RAILCOLL_ERR_ARG, std::string(fn) + ": count is too large");
  const bool in_place = in_place_call(opts);
  if (bytes > 0 && !recvbuf) return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL with a non-zero count");
  if (bytes > 0 && !sendbuf && !in_place) return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with a non-zero count");
  const void* send = sendbuf;
  if (in_place)
    send = call.copy_at_start(recvbuf, bytes);
  else if (overlap(sendbuf, bytes, recvbuf, bytes))
    return overlap_error();
  call.step(coll, send, recvbuf, std::vector<uint64_t>(call.size(), bytes), opts, args);
  return RAILCOLL_OK;
}

}  // namespace

extern "C" {

RAILCOLL_THREE_FORMS(scan,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                      railcoll_datatype_t type, railcoll_op_t op, const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       return prefix_call(call, railcoll::Collective::Scan, "scan", sendbuf, recvbuf, count, type, op,
                                          opts);
                     })

RAILCOLL_THREE_FORMS(exscan,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                      railcoll_datatype_t type, railcoll_op_t op, const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       return prefix_call(call, railcoll::Collective::Exscan, "exscan", sendbuf, recvbuf, count, type,
                                          op, opts);
                     })

}  // extern "C"
