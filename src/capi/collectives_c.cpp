// The collectives of the C API, each in its three forms: blocking
// (railcoll_COLL), nonblocking (railcoll_iCOLL) and persistent
// (railcoll_COLL_init). One body per collective checks the arguments and
// builds the call (a Request's steps, rt/requests.hpp); the form decides when
// it runs: now, in the background, or at every railcoll_start.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "capi/call_forms.hpp"

using namespace railcoll::capi;

namespace {

railcoll_status_t gather_call(Call& call, const void* sendbuf, void* recvbuf, std::vector<uint64_t> counts,
                              const railcoll_call_opts_t* opts) {
  const int me = call.rank();
  uint64_t total = 0, displ = 0;
  for (int r = 0; r < static_cast<int>(counts.size()); ++r) {
    if (r == me) displ = total;
    total += counts[r];
  }
  const bool in_place = in_place_call(opts);
  if (total > 0 && !recvbuf) return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL with a non-zero size");
  if (counts[me] > 0 && !sendbuf && !in_place) return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with a non-zero size");
  if (in_place)
    sendbuf = call.copy_at_start(static_cast<char*>(recvbuf) + displ, counts[me]);
  else if (overlap(sendbuf, counts[me], recvbuf, total))
    return overlap_error();
  call.step(railcoll::Collective::Allgather, sendbuf, recvbuf, counts, opts);
  return RAILCOLL_OK;
}


// reduce_scatter(_block): send holds every rank's block (counts, bytes) in
// rank order, recv this rank's; in place, recv holds the whole input.
railcoll_status_t reduce_scatter_call(Call& call, railcoll::Collective coll, const void* sendbuf, void* recvbuf,
                                      const std::vector<uint64_t>& counts, const railcoll_call_opts_t* opts,
                                      const railcoll::AlgoOptions& args) {
  const int me = call.rank();
  uint64_t total = 0;
  for (uint64_t n : counts) total += n;
  const bool in_place = in_place_call(opts);
  if ((in_place ? total : counts[me]) > 0 && !recvbuf) return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL with a non-zero count");
  if (total > 0 && !sendbuf && !in_place) return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with a non-zero count");
  if (in_place)
    sendbuf = call.copy_at_start(recvbuf, total);
  else if (overlap(sendbuf, total, recvbuf, counts[me]))
    return overlap_error();
  call.step(coll, sendbuf, recvbuf, counts, opts, args);
  return RAILCOLL_OK;
}

// ---- personalised data (alltoall(v), scatter(v), gatherv) ----
// The schedules read and write blocks packed in rank order; blocks the caller
// placed elsewhere travel through a packed copy.

// Where blocks lie in a caller's buffer (displs empty: packed), copied from the
// caller's arrays so that they may change once the call returns.
struct Layout {
  std::vector<size_t> counts, displs;
  Layout(const size_t* c, const size_t* d, int n) : counts(c, c + n) {
    if (d) displs.assign(d, d + n);
  }
  int n() const { return static_cast<int>(counts.size()); }
  size_t offset(int r) const {
    if (!displs.empty()) return displs[r];
    size_t at = 0;
    for (int q = 0; q < r; ++q) at += counts[q];
    return at;
  }
  // Empty blocks may sit anywhere.
  bool packed() const {
    if (displs.empty()) return true;
    size_t at = 0;
    for (int r = 0; r < n(); at += counts[r], ++r)
      if (counts[r] && displs[r] != at) return false;
    return true;
  }
  size_t total() const {
    size_t t = 0;
    for (size_t c : counts) t += c;
    return t;
  }
  // Bytes from the buffer's start to the end of its last block.
  size_t extent() const {
    size_t end = 0;
    for (int r = 0; r < n(); ++r)
      if (counts[r]) end = std::max(end, offset(r) + counts[r]);
    return end;
  }
};

// Where a schedule reads a caller's blocks: the buffer itself when packed, else
// a packed copy made at every start.
const void* packed_input(Call& call, const void* buf, const Layout& l) {
  if (l.packed()) return buf;
  char* copy = call.room(l.total());
  call.at_start([copy, buf, l] {
    size_t at = 0;
    for (int r = 0; r < l.n(); at += l.counts[r], ++r)
      memcpy(copy + at, static_cast<const char*>(buf) + l.displs[r], l.counts[r]);
  });
  return copy;
}

// Where a schedule writes a caller's blocks: the buffer itself when packed,
// else a packed room that unpack_output puts in place when the step ends.
void* packed_output(Call& call, void* buf, const Layout& l) {
  return l.packed() ? buf : call.room(l.total());
}
void unpack_output(Call& call, void* room, void* buf, const Layout& l) {
  if (room == buf) return;
  call.at_end([room, buf, l] {
    size_t at = 0;
    for (int r = 0; r < l.n(); at += l.counts[r], ++r)
      memcpy(static_cast<char*>(buf) + l.displs[r], static_cast<char*>(room) + at, l.counts[r]);
  });
}

railcoll_status_t check_counts(const size_t* counts, int n, const char* what) {
  if (!counts) return fail(RAILCOLL_ERR_ARG, std::string(what) + " is NULL");
  uint64_t total = 0;
  for (int r = 0; r < n; ++r) {
    if (counts[r] > railcoll::kMaxBytesPerRank)
      return fail(RAILCOLL_ERR_ARG, std::string(what) + "[" + std::to_string(r) + "] is above the limit of 2^40 bytes");
    total += counts[r];
  }
  if (total > railcoll::kMaxTotalBytes) return fail(RAILCOLL_ERR_ARG, std::string(what) + ": total above 2^48 bytes");
  return RAILCOLL_OK;
}

// alltoallv in two steps: the per-pair counts of every rank (row = source),
// all-gathered from each rank's own row, then the exchange, planned from them
// once they are checked against the counts this rank expects to receive.
void alltoallv_steps(Call& call, const Layout& send, const void* send_at, const Layout& recv, void* recv_at,
                     const railcoll_call_opts_t* opts) {
  const int n = call.size(), me = call.rank();
  auto* row = reinterpret_cast<uint64_t*>(call.room(n * sizeof(uint64_t)));
  std::copy(send.counts.begin(), send.counts.end(), row);
  auto* matrix = reinterpret_cast<uint64_t*>(call.room(static_cast<size_t>(n) * n * sizeof(uint64_t)));
  call.step(railcoll::Collective::Allgather, row, matrix, std::vector<uint64_t>(n, n * sizeof(uint64_t)), nullptr);
  railcoll_comm* c = call.c;
  const std::string algorithm = opts && opts->algorithm ? opts->algorithm : "";
  const std::vector<size_t> expected = recv.counts;
  call.step_planned_later([=](Step& s) {
    for (int src = 0; src < n; ++src)
      if (matrix[static_cast<size_t>(src) * n + me] != expected[src])
        throw railcoll::InputError("alltoallv: rank " + std::to_string(src) + " sends " +
                                   std::to_string(matrix[static_cast<size_t>(src) * n + me]) + " bytes to rank " +
                                   std::to_string(me) + ", which expects " + std::to_string(expected[src]));
    railcoll_call_opts_t named{};
    named.algorithm = algorithm.empty() ? nullptr : algorithm.c_str();
    s.plan = railcoll::capi::choose_plan(c, railcoll::Collective::Alltoallv,
                                         std::vector<uint64_t>(matrix, matrix + static_cast<size_t>(n) * n), &named, {});
    s.bufs = {send_at, recv_at};
  });
}

// With RAILCOLL_ROOT_COUNTS a rank other than the root reads counts[rank]
// alone: its own count in its place, zeros elsewhere (empty: read them all).
std::vector<size_t> own_count_only(Call& call, const size_t* counts, int root, const railcoll_call_opts_t* opts) {
  if (!root_counts(opts) || call.rank() == root || !counts) return {};
  call.took_root_counts = true;
  std::vector<size_t> own(static_cast<size_t>(call.size()), 0);
  own[static_cast<size_t>(call.rank())] = counts[call.rank()];
  return own;
}

// scatterv and gatherv with RAILCOLL_ROOT_COUNTS, in two steps of one request
// as alltoallv: the root's counts broadcast, then the call planned from them
// once this rank's own count (`mine`) is checked against the root's. A
// persistent call keeps them after its first start, where the first step has
// nothing left to do. `counts` are the root's at the root.
void root_counts_steps(Call& call, railcoll::Collective coll, int root, const std::vector<uint64_t>& counts, uint64_t mine,
                       const void* send, void* recv, const railcoll_call_opts_t* opts, const railcoll::AlgoOptions& args) {
  call.took_root_counts = true;
  const int n = call.size(), me = call.rank();
  const size_t row = static_cast<size_t>(n) * sizeof(uint64_t);
  auto* shared = reinterpret_cast<uint64_t*>(call.room(row));
  if (me == root) std::copy(counts.begin(), counts.end(), shared);
  railcoll::AlgoOptions at_root;
  at_root.root = root;
  railcoll_call_opts_t plain{};
  call.step(railcoll::Collective::Bcast, me == root ? shared : nullptr, me == root ? nullptr : shared,
            std::vector<uint64_t>(n, row), &plain, at_root);
  railcoll_comm* c = call.c;
  const std::string algorithm = opts && opts->algorithm ? opts->algorithm : "";
  auto planned = std::make_shared<std::shared_ptr<const railcoll::rt::Plan>>();
  // The broadcast's plan, dropped once the counts are known (persistent starts after the first).
  auto& first = call.last_step();
  first.before = [planned, share_plan = first.plan, old = std::move(first.before)](Step& s) {
    if (old) old(s);
    s.plan = *planned ? nullptr : share_plan;
  };
  call.step_planned_later([=](Step& s) {
    if (!*planned) {
      if (shared[me] != mine)
        throw railcoll::InputError(std::string(railcoll::collective_name(coll)) + ": the root's counts give rank " +
                                   std::to_string(me) + " " + std::to_string(shared[me]) + " bytes, but it passes " +
                                   std::to_string(mine));
      railcoll_call_opts_t named{};
      named.algorithm = algorithm.empty() ? nullptr : algorithm.c_str();
      *planned = railcoll::capi::choose_plan(c, coll, std::vector<uint64_t>(shared, shared + n), &named, args);
    }
    s.plan = *planned;
    s.bufs = {send, recv};
  });
}

// scatter and scatterv: counts[r] bytes for rank r, at displs in the root's sendbuf.
railcoll_status_t scatter_call(Call& call, railcoll::Collective coll, const void* sendbuf, const size_t* counts,
                               const size_t* displs, void* recvbuf, int root, const railcoll_call_opts_t* opts) {
  if (railcoll_status_t st = check_root(call, root)) return st;
  const int n = call.size(), me = call.rank();
  const bool v_root_counts = coll == railcoll::Collective::Scatterv && root_counts(opts);
  const std::vector<size_t> own = v_root_counts ? own_count_only(call, counts, root, opts) : std::vector<size_t>{};
  if (!own.empty()) counts = own.data();
  if (railcoll_status_t st = check_counts(counts, n, "counts")) return st;
  const Layout l(counts, displs, n);
  const bool at_root = me == root, in_place = at_root && in_place_call(opts);
  const size_t send_end = at_root ? l.extent() : 0;
  if (send_end > 0 && !sendbuf) return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL at the root with a non-zero size");
  if (counts[me] > 0 && !recvbuf && !in_place) return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL with a non-zero size");
  if (in_place)  // the root's block stays where it is: its copy goes nowhere
    recvbuf = call.room(counts[me]);
  else if (at_root && overlap(sendbuf, send_end, recvbuf, counts[me]))
    return overlap_error();
  const void* send = at_root ? packed_input(call, sendbuf, l) : nullptr;
  railcoll::AlgoOptions args;
  args.root = root;
  if (v_root_counts)
    root_counts_steps(call, coll, root, std::vector<uint64_t>(counts, counts + n), counts[me], send, recvbuf, opts, args);
  else
    call.step(coll, send, recvbuf, std::vector<uint64_t>(counts, counts + n), opts, args);
  return RAILCOLL_OK;
}

}  // namespace

extern "C" {

RAILCOLL_THREE_FORMS(allgather,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t bytes,
                      const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       return gather_call(call, sendbuf, recvbuf, std::vector<uint64_t>(call.size(), bytes), opts);
                     })

RAILCOLL_THREE_FORMS(allgatherv,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, const size_t* counts,
                      const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       if (!counts) return fail(RAILCOLL_ERR_ARG, "counts is NULL");
                       return gather_call(call, sendbuf, recvbuf,
                                          std::vector<uint64_t>(counts, counts + call.size()), opts);
                     })

RAILCOLL_THREE_FORMS(barrier, (railcoll_comm_t comm), nullptr, [&](Call& call) {
  call.step(railcoll::Collective::Barrier, nullptr, nullptr, std::vector<uint64_t>(call.size(), 0), nullptr);
  return RAILCOLL_OK;
})

RAILCOLL_THREE_FORMS(bcast,
                     (railcoll_comm_t comm, void* buf, size_t bytes, int root, const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       if (railcoll_status_t st = check_root(call, root)) return st;
                       if (bytes > 0 && !buf) return fail(RAILCOLL_ERR_ARG, "buf is NULL with a non-zero size");
                       railcoll::AlgoOptions args;
                       args.root = root;
                       const bool at_root = call.rank() == root;
                       call.step(railcoll::Collective::Bcast, at_root ? buf : nullptr, at_root ? nullptr : buf,
                                 std::vector<uint64_t>(call.size(), bytes), opts, args);
                       return RAILCOLL_OK;
                     })

RAILCOLL_THREE_FORMS(gather,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t bytes, int root,
                      const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       if (railcoll_status_t st = check_root(call, root)) return st;
                       const int me = call.rank(), n = call.size();
                       const bool at_root = me == root, in_place = in_place_call(opts);
                       const uint64_t total = static_cast<uint64_t>(n) * bytes;
                       if (at_root && total > 0 && !recvbuf)
                         return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL at the root with a non-zero size");
                       if (bytes > 0 && !sendbuf && !(in_place && at_root))
                         return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with a non-zero size");
                       const void* send = sendbuf;
                       if (in_place && at_root)  // the root's block is already in place in recvbuf
                         send = call.copy_at_start(static_cast<char*>(recvbuf) + me * bytes, bytes);
                       else if (at_root && overlap(sendbuf, bytes, recvbuf, total))
                         return overlap_error();
                       railcoll::AlgoOptions args;
                       args.root = root;
                       call.step(railcoll::Collective::Gather, send, at_root ? recvbuf : nullptr,
                                 std::vector<uint64_t>(n, bytes), opts, args);
                       return RAILCOLL_OK;
                     })

RAILCOLL_THREE_FORMS(allreduce,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                      railcoll_datatype_t type, railcoll_op_t op, const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       railcoll::AlgoOptions args;
                       uint64_t bytes = 0;
                       if (railcoll_status_t st = reduction_args(call, "allreduce", type, op, &args)) return st;
                       if (!element_bytes(count, args, &bytes))
                         return fail(RAILCOLL_ERR_ARG, "allreduce: count is too large");
                       const bool in_place = in_place_call(opts);
                       if (bytes > 0 && !recvbuf) return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL with a non-zero count");
                       if (bytes > 0 && !sendbuf && !in_place)
                         return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with a non-zero count");
                       const void* send = sendbuf;
                       if (in_place)
                         send = call.copy_at_start(recvbuf, bytes);
                       else if (overlap(sendbuf, bytes, recvbuf, bytes))
                         return overlap_error();
                       call.step(railcoll::Collective::Allreduce, send, recvbuf,
                                 std::vector<uint64_t>(call.size(), bytes), opts, args);
                       return RAILCOLL_OK;
                     })

RAILCOLL_THREE_FORMS(reduce_scatter_block,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                      railcoll_datatype_t type, railcoll_op_t op, const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       railcoll::AlgoOptions args;
                       uint64_t bytes = 0;
                       if (railcoll_status_t st = reduction_args(call, "reduce_scatter_block", type, op, &args)) return st;
                       if (!element_bytes(count, args, &bytes))
                         return fail(RAILCOLL_ERR_ARG, "reduce_scatter_block: count is too large");
                       return reduce_scatter_call(call, railcoll::Collective::ReduceScatterBlock, sendbuf, recvbuf,
                                                  std::vector<uint64_t>(call.size(), bytes), opts, args);
                     })

RAILCOLL_THREE_FORMS(reduce_scatter,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, const size_t* counts,
                      railcoll_datatype_t type, railcoll_op_t op, const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       railcoll::AlgoOptions args;
                       if (railcoll_status_t st = reduction_args(call, "reduce_scatter", type, op, &args)) return st;
                       if (!counts) return fail(RAILCOLL_ERR_ARG, "reduce_scatter: counts is NULL");
                       std::vector<uint64_t> bytes(call.size());
                       for (int r = 0; r < call.size(); ++r)
                         if (!element_bytes(counts[r], args, &bytes[r]))
                           return fail(RAILCOLL_ERR_ARG,
                                       "reduce_scatter: count of rank " + std::to_string(r) + " is too large");
                       return reduce_scatter_call(call, railcoll::Collective::ReduceScatter, sendbuf, recvbuf, bytes,
                                                  opts, args);
                     })

RAILCOLL_THREE_FORMS(reduce,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t count,
                      railcoll_datatype_t type, railcoll_op_t op, int root, const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       if (railcoll_status_t st = check_root(call, root)) return st;
                       railcoll::AlgoOptions args;
                       uint64_t bytes = 0;
                       if (railcoll_status_t st = reduction_args(call, "reduce", type, op, &args)) return st;
                       if (!element_bytes(count, args, &bytes))
                         return fail(RAILCOLL_ERR_ARG, "reduce: count is too large");
                       args.root = root;
                       const bool at_root = call.rank() == root, in_place = at_root && in_place_call(opts);
                       if (at_root && bytes > 0 && !recvbuf)
                         return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL at the root with a non-zero count");
                       if (bytes > 0 && !sendbuf && !in_place)
                         return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with a non-zero count");
                       const void* send = sendbuf;
                       if (in_place)
                         send = call.copy_at_start(recvbuf, bytes);
                       else if (at_root && overlap(sendbuf, bytes, recvbuf, bytes))
                         return overlap_error();
                       call.step(railcoll::Collective::Reduce, send, at_root ? recvbuf : nullptr,
                                 std::vector<uint64_t>(call.size(), bytes), opts, args);
                       return RAILCOLL_OK;
                     })

RAILCOLL_THREE_FORMS(alltoall,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t bytes,
                      const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       const int n = call.size();
                       if (bytes > railcoll::kMaxBytesPerRank)
                         return fail(RAILCOLL_ERR_ARG, "alltoall: bytes is above the limit of 2^40");
                       const uint64_t total = n * static_cast<uint64_t>(bytes);
                       const bool in_place = in_place_call(opts);
                       if (total > 0 && !recvbuf) return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL with a non-zero size");
                       if (total > 0 && !sendbuf && !in_place)
                         return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with a non-zero size");
                       const void* send = sendbuf;
                       if (in_place)
                         send = call.copy_at_start(recvbuf, total);
                       else if (overlap(sendbuf, total, recvbuf, total))
                         return overlap_error();
                       call.step(railcoll::Collective::Alltoall, send, recvbuf, std::vector<uint64_t>(n, bytes), opts);
                       return RAILCOLL_OK;
                     })

RAILCOLL_THREE_FORMS(alltoallv,
                     (railcoll_comm_t comm, const void* sendbuf, const size_t* sendcounts, const size_t* sdispls,
                      void* recvbuf, const size_t* recvcounts, const size_t* rdispls,
                      const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       const int n = call.size();
                       const bool in_place = in_place_call(opts);
                       const void* sbuf = sendbuf;
                       const size_t *scounts = sendcounts, *sdisp = sdispls;
                       if (in_place) sbuf = recvbuf, scounts = recvcounts, sdisp = rdispls;  // send what is received
                       if (railcoll_status_t st = check_counts(recvcounts, n, "recvcounts")) return st;
                       if (railcoll_status_t st = check_counts(scounts, n, "sendcounts")) return st;
                       const Layout send(scounts, sdisp, n), recv(recvcounts, rdispls, n);
                       const size_t send_end = send.extent(), recv_end = recv.extent();
                       if (recv_end > 0 && !recvbuf) return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL with non-zero counts");
                       if (send_end > 0 && !sbuf) return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with non-zero counts");
                       if (!in_place && overlap(sbuf, send_end, recvbuf, recv_end)) return overlap_error();
                       const void* send_at = packed_input(call, sbuf, send);
                       if (in_place && send_at == sbuf) send_at = call.copy_at_start(recvbuf, send_end);  // recv overwrites it
                       void* recv_at = packed_output(call, recvbuf, recv);
                       alltoallv_steps(call, send, send_at, recv, recv_at, opts);
                       unpack_output(call, recv_at, recvbuf, recv);
                       return RAILCOLL_OK;
                     })

RAILCOLL_THREE_FORMS(scatter,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, size_t bytes, int root,
                      const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       const std::vector<size_t> counts(call.size(), bytes);
                       return scatter_call(call, railcoll::Collective::Scatter, sendbuf, counts.data(), nullptr,
                                           recvbuf, root, opts);
                     })

RAILCOLL_THREE_FORMS(scatterv,
                     (railcoll_comm_t comm, const void* sendbuf, const size_t* counts, const size_t* displs,
                      void* recvbuf, int root, const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       return scatter_call(call, railcoll::Collective::Scatterv, sendbuf, counts, displs, recvbuf,
                                           root, opts);
                     })

RAILCOLL_THREE_FORMS(gatherv,
                     (railcoll_comm_t comm, const void* sendbuf, void* recvbuf, const size_t* counts,
                      const size_t* displs, int root, const railcoll_call_opts_t* opts),
                     opts, [&](Call& call) {
                       if (railcoll_status_t st = check_root(call, root)) return st;
                       const int n = call.size(), me = call.rank();
                       const std::vector<size_t> own = own_count_only(call, counts, root, opts);
                       const size_t* sizes = own.empty() ? counts : own.data();
                       if (railcoll_status_t st = check_counts(sizes, n, "counts")) return st;
                       const Layout l(sizes, displs, n);
                       const bool at_root = me == root, in_place = at_root && in_place_call(opts);
                       const size_t recv_end = at_root ? l.extent() : 0;
                       if (recv_end > 0 && !recvbuf)
                         return fail(RAILCOLL_ERR_ARG, "recvbuf is NULL at the root with a non-zero size");
                       if (sizes[me] > 0 && !sendbuf && !in_place)
                         return fail(RAILCOLL_ERR_ARG, "sendbuf is NULL with a non-zero size");
                       const void* send = sendbuf;
                       if (in_place)  // the root's block is already in place in recvbuf
                         send = call.copy_at_start(static_cast<char*>(recvbuf) + l.offset(me), sizes[me]);
                       else if (at_root && overlap(sendbuf, sizes[me], recvbuf, recv_end))
                         return overlap_error();
                       void* recv = at_root ? packed_output(call, recvbuf, l) : nullptr;
                       railcoll::AlgoOptions args;
                       args.root = root;
                       const std::vector<uint64_t> bytes(sizes, sizes + n);
                       if (root_counts(opts))
                         root_counts_steps(call, railcoll::Collective::Gatherv, root, bytes, sizes[me], send, recv, opts,
                                           args);
                       else
                         call.step(railcoll::Collective::Gatherv, send, recv, bytes, opts, args);
                       if (at_root) unpack_output(call, recv, recvbuf, l);
                       return RAILCOLL_OK;
                     })

}  // extern "C"
