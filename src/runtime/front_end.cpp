// The call front end (front_end.hpp): a call's arguments checked through the
// collective traits and built into the steps of a request; the decision of
// each step (selection's ranked candidates, the first that fits, cached).
#include "runtime/front_end.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>

#include "core/errors.hpp"
#include "core/status_text.hpp"
#include "core/registry.hpp"

namespace railcoll::rt {

namespace {

// A request being built: its steps, and the buffers it owns. Work on the
// caller's data (an in-place input copied, blocks packed or unpacked) is
// registered to run when the call starts or ends, so that a persistent call
// redoes exactly that at every start and nothing else.
class Steps {
 public:
  // `op`: a user's reduction operator, which the call's steps carry with their buffers.
  Steps(Request& req, std::shared_ptr<const UserOp> op) : req_(req), op_(std::move(op)) {}

  // `bytes` at src, copied at every start into a buffer of the call: the input
  // of an in-place call, which the schedule may overwrite while reading it.
  const void* copy_at_start(const void* src, size_t bytes) {
    char* dst = req_.keep(bytes).data();
    if (bytes) at_start_.push_back([=] { memcpy(dst, src, bytes); });
    return dst;
  }
  // A buffer of the call (zeroed once).
  char* room(size_t bytes) { return req_.keep(bytes).data(); }
  void at_start(std::function<void()> f) { at_start_.push_back(std::move(f)); }
  // A step with its plan decided now.
  void add(std::shared_ptr<const Plan> plan, const void* send, void* recv) {
    Step s;
    s.plan = std::move(plan);
    s.bufs = {send, recv, op_};
    push(std::move(s));
  }
  // A step whose plan and buffers are made when it begins (from an earlier step's result).
  void add_planned_later(std::function<void(Step&)> plan) {
    Step s;
    s.before = std::move(plan);
    push(std::move(s));
  }
  // After the last step so far has ended.
  void at_end(std::function<void()> f) { req_.steps.back().after = std::move(f); }

 private:
  void push(Step s) {
    if (!at_start_.empty()) {
      auto first = std::move(s.before);
      s.before = [work = std::move(at_start_), first = std::move(first)](Step& st) {
        for (auto& f : work) f();
        if (first) first(st);
      };
      at_start_.clear();
    }
    req_.steps.push_back(std::move(s));
  }

  Request& req_;
  const std::shared_ptr<const UserOp> op_;
  std::vector<std::function<void()>> at_start_;
};

// Where blocks lie in a caller's buffer (displs empty: packed), in bytes,
// copied from the caller's arrays so that they may change once the call returns.
struct Layout {
  std::vector<uint64_t> counts, displs;
  Layout(std::vector<uint64_t> c, const size_t* d) : counts(std::move(c)) {
    if (d) displs.assign(d, d + counts.size());
  }
  int n() const { return static_cast<int>(counts.size()); }
  uint64_t offset(int r) const {
    if (!displs.empty()) return displs[r];
    uint64_t at = 0;
    for (int q = 0; q < r; ++q) at += counts[q];
    return at;
  }
  // Empty blocks may sit anywhere.
  bool packed() const {
    if (displs.empty()) return true;
    uint64_t at = 0;
    for (int r = 0; r < n(); at += counts[r], ++r)
      if (counts[r] && displs[r] != at) return false;
    return true;
  }
  uint64_t total() const {
    uint64_t t = 0;
    for (uint64_t c : counts) t += c;
    return t;
  }
  // Bytes from the buffer's start to the end of its last block.
  uint64_t extent() const {
    if (displs.empty()) return total();
    uint64_t end = 0;
    for (int r = 0; r < n(); ++r)
      if (counts[r]) end = std::max(end, offset(r) + counts[r]);
    return end;
  }
};

// ---- blocks packed in rank order: the schedules read and write them so; blocks
// the caller placed elsewhere travel through a packed copy.

// Where a schedule reads a caller's blocks: the buffer itself when packed, else
// a packed copy made at every start.
const void* packed_input(Steps& steps, const void* buf, const Layout& l) {
  if (l.packed()) return buf;
  char* copy = steps.room(l.total());
  steps.at_start([copy, buf, l] {
    uint64_t at = 0;
    for (int r = 0; r < l.n(); at += l.counts[r], ++r)
      memcpy(copy + at, static_cast<const char*>(buf) + l.displs[r], l.counts[r]);
  });
  return copy;
}

// Where a schedule writes a caller's blocks: the buffer itself when packed,
// else a packed room that unpack_output puts in place when the step ends.
void* packed_output(Steps& steps, void* buf, const Layout& l) { return l.packed() ? buf : steps.room(l.total()); }
void unpack_output(Steps& steps, void* room, void* buf, const Layout& l) {
  if (room == buf) return;
  steps.at_end([room, buf, l] {
    uint64_t at = 0;
    for (int r = 0; r < l.n(); at += l.counts[r], ++r)
      memcpy(static_cast<char*>(buf) + l.displs[r], static_cast<char*>(room) + at, l.counts[r]);
  });
}

bool overlap(const void* a, uint64_t alen, const void* b, uint64_t blen) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return alen && blen && x < y + blen && y < x + alen;
}

[[noreturn]] void wrong(const std::string& what) { throw InputError(what); }

// The call's options for its schedule: root, and where it reduces the type
// and operator (a user's: its element size and whether it commutes).
AlgoOptions call_options(const CallArgs& a) {
  AlgoOptions opts;
  opts.root = a.root;
  if (!traits(a.collective).reducing) return opts;
  opts.dtype = a.dtype, opts.redop = a.op;
  if (a.op == ReduceOp::User && a.user_op) {
    opts.elem_bytes = static_cast<uint32_t>(a.user_op->elem_bytes);
    opts.commutative = a.user_op->commutative;
  }
  return opts;
}

// The per-rank sizes of a call in bytes: its count for every rank, or (a
// v-form) the counts of `blocks` (`what` names them in messages); elements of
// its type (or of its user operator) where it reduces. Checked against the
// limits of a schedule.
std::vector<uint64_t> byte_counts(const CallArgs& a, int n, const size_t* blocks, const char* what) {
  const CollectiveTraits& t = traits(a.collective);
  const uint64_t elem = t.reducing ? element_size(call_options(a)) : 1, limit = kMaxBytesPerRank / elem;
  auto too_large = [&](int r) {  // r < 0: the count of every rank
    const std::string which = r < 0 ? (t.reducing ? "count" : "bytes")
                                    : (t.reducing ? "count of rank " + std::to_string(r)
                                                  : std::string(what) + "[" + std::to_string(r) + "]");
    wrong(t.reducing ? std::string(t.name) + ": " + which + " is too large"
                     : (r < 0 ? std::string(t.name) + ": " : "") + which + " is above the limit of 2^40 bytes");
  };
  if (!a.per_rank) {
    if (a.count > limit) too_large(-1);
    return std::vector<uint64_t>(n, a.count * elem);
  }
  if (!blocks) wrong((t.reducing ? std::string(t.name) + ": " : std::string()) + what + " is NULL");
  std::vector<uint64_t> out(n);
  uint64_t total = 0;
  for (int r = 0; r < n; ++r) {
    if (blocks[r] > limit) too_large(r);
    out[r] = blocks[r] * elem;
    total += out[r];
  }
  if (total > kMaxTotalBytes) wrong(std::string(what) + ": total above 2^48 bytes");
  return out;
}

}  // namespace

FrontEnd::FrontEnd(Comm& comm, Selector selector) : comm_(comm), selector_(std::move(selector)) {}

// ---------------------------------------------------------------- building a call

void FrontEnd::build(const CallArgs& a, Request& req) {
  const CollectiveTraits& t = traits(a.collective);
  const int n = comm_.size(), me = comm_.rank();
  if (t.rooted && (a.root < 0 || a.root >= n))
    wrong("root " + std::to_string(a.root) + " is out of range (" + std::to_string(n) + " ranks)");
  if (t.reducing && a.op == ReduceOp::User && !a.user_op)
    throw Error(Status::Internal, std::string(a.fn) + ": a user operator without its function");
  if (t.reducing && !redop_applies(a.op, a.dtype))
    wrong(std::string(t.name) + ": the operation " + redop_name(a.op) + " is not defined on " + dtype_name(a.dtype) +
          " (bitwise and logical operations take integer types, minloc and maxloc the (value, index) pairs)");
  if (a.root_counts && !(a.per_rank && (a.collective == Collective::Gatherv || a.collective == Collective::Scatterv)))
    wrong(std::string(a.fn) + ": RAILCOLL_ROOT_COUNTS is for scatterv and gatherv only");
  // Counts only the root has: elsewhere this rank's own, zeros around it.
  std::vector<size_t> own;
  const size_t* counts_given = a.blocks.counts;
  if (a.root_counts && me != a.root && counts_given) {
    own.assign(static_cast<size_t>(n), 0);
    own[static_cast<size_t>(me)] = counts_given[me];
    counts_given = own.data();
  }
  const AlgoOptions opts = call_options(a);
  const bool at_root = me == a.root;
  // "count" where the sizes are elements of a type, "size" where they are bytes.
  const char* size_word = t.reducing ? "count" : "size";
  auto null_error = [&](const char* buf, const char* where) {
    wrong(std::string(buf) + " is NULL" + where + " with a non-zero " + size_word);
  };
  Steps steps(req, a.user_op);
  auto plan_of = [&](const std::vector<uint64_t>& counts) {
    std::shared_ptr<const Plan> plan;
    {
      std::lock_guard<std::mutex> lock(mu_);
      plan = decided(a.collective, counts, opts, a.algorithm).plan;
    }
    if (!plan->unfit.empty()) throw RuntimeError(Status::Unsupported, plan->unfit);
    return plan;
  };
  auto step = [&](const std::vector<uint64_t>& counts, const void* send, void* recv) {
    steps.add(plan_of(counts), send, recv);
  };
  const void* send = a.send;
  void* recv = a.recv;

  switch (t.result) {
    case Result::Synchronised:
    case Result::None:
      return step(std::vector<uint64_t>(n, 0), nullptr, nullptr);

    case Result::RootBlock: {  // bcast: one buffer, the root's input and everyone else's output
      const auto counts = byte_counts(a, n, nullptr, "");
      if (counts[me] > 0 && !recv) wrong(std::string("buf is NULL with a non-zero ") + size_word);
      return step(counts, at_root ? recv : nullptr, at_root ? nullptr : recv);
    }

    case Result::Blocks: {  // allgather(v), gather(v): this rank's block, every rank's blocks (at the root)
      const Layout l(byte_counts(a, n, counts_given, "counts"), a.blocks.displs);
      const bool receives = !t.result_at_root_only || at_root, in_place = a.in_place && receives;
      const uint64_t mine = l.counts[me], recv_end = receives ? l.extent() : 0;
      if (recv_end > 0 && !recv) null_error("recvbuf", t.result_at_root_only ? " at the root" : "");
      if (mine > 0 && !send && !in_place) null_error("sendbuf", "");
      if (in_place)  // this rank's block is already in place in recvbuf
        send = steps.copy_at_start(static_cast<char*>(recv) + l.offset(me), mine);
      else if (receives && overlap(send, mine, recv, recv_end))
        wrong("sendbuf and recvbuf overlap (use RAILCOLL_IN_PLACE for an in-place call)");
      void* into = receives ? packed_output(steps, recv, l) : nullptr;
      if (a.root_counts)
        counts_from_root(steps, a, opts, l.counts, send, into);
      else
        step(l.counts, send, into);
      if (receives && into != recv) unpack_output(steps, into, recv, l);
      return;
    }

    case Result::Prefix:           // scan, exscan: a vector in, its prefix out (exscan's rank 0: nothing)
    case Result::ExclusivePrefix:
    case Result::Reduction: {  // allreduce, reduce: a vector in, the combined vector out (at the root)
      const auto counts = byte_counts(a, n, nullptr, "");
      const uint64_t bytes = counts[me];
      const bool receives = !t.result_at_root_only || at_root, in_place = a.in_place && receives;
      if (receives && bytes > 0 && !recv) null_error("recvbuf", t.result_at_root_only ? " at the root" : "");
      if (bytes > 0 && !send && !in_place) null_error("sendbuf", "");
      if (!in_place && receives && overlap(send, bytes, recv, bytes))
        wrong("sendbuf and recvbuf overlap (use RAILCOLL_IN_PLACE for an in-place call)");
      auto plan = plan_of(counts);
      if (in_place)  // the input is copied unless the schedule is proven to need no copy
        send = plan->in_place_ok ? recv : steps.copy_at_start(recv, bytes);
      return steps.add(std::move(plan), send, receives ? recv : nullptr);
    }

    case Result::ReducedSlice: {  // reduce_scatter(_block): every rank's slice in, this rank's out
      const auto counts = byte_counts(a, n, a.blocks.counts, "counts");
      uint64_t total = 0;
      for (uint64_t c : counts) total += c;
      if ((a.in_place ? total : counts[me]) > 0 && !recv) null_error("recvbuf", "");
      if (total > 0 && !send && !a.in_place) null_error("sendbuf", "");
      if (a.in_place)  // recvbuf holds the whole input
        send = steps.copy_at_start(recv, total);
      else if (overlap(send, total, recv, counts[me]))
        wrong("sendbuf and recvbuf overlap (use RAILCOLL_IN_PLACE for an in-place call)");
      return step(counts, send, recv);
    }

    case Result::RootBlocks: {  // scatter(v): the root's blocks in, this rank's block out
      const Layout l(byte_counts(a, n, counts_given, "counts"), a.blocks.displs);
      const bool in_place = a.in_place && at_root;
      const uint64_t send_end = at_root ? l.extent() : 0, mine = l.counts[me];
      if (send_end > 0 && !send) null_error("sendbuf", " at the root");
      if (mine > 0 && !recv && !in_place) null_error("recvbuf", "");
      if (in_place)  // the root's block stays where it is: its copy goes nowhere
        recv = steps.room(mine);
      else if (at_root && overlap(send, send_end, recv, mine))
        wrong("sendbuf and recvbuf overlap (use RAILCOLL_IN_PLACE for an in-place call)");
      const void* from = at_root ? packed_input(steps, send, l) : nullptr;
      if (a.root_counts) return counts_from_root(steps, a, opts, l.counts, from, recv);
      return step(l.counts, from, recv);
    }

    case Result::BlocksByDest: {  // alltoall(v): a block for every rank out, one from every rank in
      if (!a.per_rank) {
        const auto counts = byte_counts(a, n, nullptr, "");
        const uint64_t total = n * counts[0];
        if (total > 0 && !recv) null_error("recvbuf", "");
        if (total > 0 && !send && !a.in_place) null_error("sendbuf", "");
        if (a.in_place)
          send = steps.copy_at_start(recv, total);
        else if (overlap(send, total, recv, total))
          wrong("sendbuf and recvbuf overlap (use RAILCOLL_IN_PLACE for an in-place call)");
        return step(counts, send, recv);
      }
      // alltoallv: in place, this rank sends what it receives.
      const Blocks sb = a.in_place ? a.blocks : a.send_blocks;
      const void* sbuf = a.in_place ? recv : send;
      const Layout rl(byte_counts(a, n, a.blocks.counts, "recvcounts"), a.blocks.displs);
      const Layout sl(byte_counts(a, n, sb.counts, "sendcounts"), sb.displs);
      const uint64_t send_end = sl.extent(), recv_end = rl.extent();
      if (recv_end > 0 && !recv) wrong("recvbuf is NULL with non-zero counts");
      if (send_end > 0 && !sbuf) wrong("sendbuf is NULL with non-zero counts");
      if (!a.in_place && overlap(sbuf, send_end, recv, recv_end))
        wrong("sendbuf and recvbuf overlap (use RAILCOLL_IN_PLACE for an in-place call)");
      const void* send_at = packed_input(steps, sbuf, sl);
      if (a.in_place && send_at == sbuf) send_at = steps.copy_at_start(recv, send_end);  // recv overwrites it
      void* recv_at = packed_output(steps, recv, rl);
      // Two steps of one request: every rank's row of per-pair counts,
      // all-gathered, then the exchange planned from them once they are
      // checked against the counts this rank expects to receive.
      auto* row = reinterpret_cast<uint64_t*>(steps.room(n * sizeof(uint64_t)));
      std::copy(sl.counts.begin(), sl.counts.end(), row);
      auto* matrix = reinterpret_cast<uint64_t*>(steps.room(static_cast<size_t>(n) * n * sizeof(uint64_t)));
      steps.add(decide(Collective::Allgather, std::vector<uint64_t>(n, n * sizeof(uint64_t)), AlgoOptions{}, nullptr)
                    .plan,
                row, matrix);
      const std::string requested = a.algorithm ? a.algorithm : "";
      steps.add_planned_later([this, n, me, matrix, expected = rl.counts, requested, send_at, recv_at](Step& s) {
        for (int src = 0; src < n; ++src)
          if (matrix[static_cast<size_t>(src) * n + me] != expected[src])
            throw InputError("alltoallv: rank " + std::to_string(src) + " sends " +
                             std::to_string(matrix[static_cast<size_t>(src) * n + me]) + " bytes to rank " +
                             std::to_string(me) + ", which expects " + std::to_string(expected[src]));
        const Decision d = decide(Collective::Alltoallv,
                                  std::vector<uint64_t>(matrix, matrix + static_cast<size_t>(n) * n), AlgoOptions{},
                                  requested.c_str());
        if (!d.plan->unfit.empty()) throw RuntimeError(Status::Unsupported, d.plan->unfit);
        s.plan = d.plan;
        s.bufs = {send_at, recv_at};
      });
      unpack_output(steps, recv_at, recv, rl);
      return;
    }
  }
}

// The counts only the root has, in two steps of one request as alltoallv's:
// the root's counts broadcast, then the call planned from them once this
// rank's own count is checked against the root's. A persistent call keeps the
// plan after its first start, where the broadcast then has nothing to do (a
// step without a plan is skipped).
template <class Steps>
void FrontEnd::counts_from_root(Steps& steps, const CallArgs& a, const AlgoOptions& opts,
                                const std::vector<uint64_t>& counts, const void* send, void* recv) {
  const int n = comm_.size(), me = comm_.rank();
  const size_t row = static_cast<size_t>(n) * sizeof(uint64_t);
  auto* shared = reinterpret_cast<uint64_t*>(steps.room(row));
  if (me == a.root) std::copy(counts.begin(), counts.end(), shared);
  AlgoOptions at_root;
  at_root.root = a.root;
  auto bcast = decide(Collective::Bcast, std::vector<uint64_t>(n, row), at_root, nullptr).plan;
  auto planned = std::make_shared<std::shared_ptr<const Plan>>();
  steps.add_planned_later([bcast, planned, shared, me, root = a.root](Step& s) {
    s.plan = *planned ? nullptr : bcast;
    s.bufs = {me == root ? shared : nullptr, me == root ? nullptr : shared};
  });
  const std::string requested = a.algorithm ? a.algorithm : "";
  const uint64_t mine = counts[me];
  steps.add_planned_later(
      [this, planned, shared, n, me, mine, opts, requested, send, recv, coll = a.collective](Step& s) {
        if (!*planned) {
          if (shared[me] != mine)
            throw InputError(std::string(collective_name(coll)) + ": the root's counts give rank " +
                             std::to_string(me) + " " + std::to_string(shared[me]) + " bytes, but it passes " +
                             std::to_string(mine));
          const Decision d = decide(coll, std::vector<uint64_t>(shared, shared + n), opts, requested.c_str());
          if (!d.plan->unfit.empty()) throw RuntimeError(Status::Unsupported, d.plan->unfit);
          *planned = d.plan;
        }
        s.plan = *planned;
        s.bufs = {send, recv};
      });
}

void FrontEnd::abandon(const char* fn, const std::exception& e) {
  if (!comm_.broken().empty()) return;
  const auto* err = dynamic_cast<const Error*>(&e);
  const Status st = err ? err->status : Status::Internal;
  comm_.abandon("rank " + std::to_string(comm_.rank()) + "'s " + fn + " failed before it began (" +
                status_text(st) + ": " + e.what() + ")");
}

void FrontEnd::run(const CallArgs& a) {
  Request req;
  try {
    build(a, req);
    for (Step& s : req.steps) {
      if (s.before) s.before(s);
      if (s.plan) comm_.run(*s.plan, s.bufs);  // no plan: nothing to do this time
      if (s.after) s.after();
    }
  } catch (const std::exception& e) {
    abandon(a.fn, e);  // nothing when the call broke the communicator: the peers know
    throw;
  }
}

std::shared_ptr<Request> FrontEnd::start(const CallArgs& a, bool persistent) {
  auto req = std::make_shared<Request>();
  req->persistent = persistent;
  try {
    build(a, *req);
  } catch (const std::exception& e) {
    abandon(a.fn, e);
    throw;
  }
  if (!persistent) comm_.post(req);
  return req;
}

// ---------------------------------------------------------------- deciding a step

Decision FrontEnd::decide(Collective collective, const std::vector<uint64_t>& counts, const AlgoOptions& opts,
                          const char* requested) {
  std::lock_guard<std::mutex> lock(mu_);
  return decided(collective, counts, opts, requested);
}

const Decision& FrontEnd::decided(Collective collective, const std::vector<uint64_t>& counts,
                                  const AlgoOptions& opts, const char* requested) {
  static const std::string kSelection;  // no algorithm named: selection's choice
  auto decided_for = [&](const std::string& key) -> const Decision& {
    if (const Decision* d = plans_.find(collective, key, counts, opts)) return *d;
    return plans_.add(collective, key, counts, opts, decide_anew(collective, counts, opts, key));
  };
  if (!requested || !*requested) return decided_for(kSelection);
  return decided_for(std::string(requested));
}

// Selection's candidates, best first; the first whose schedule every node's
// shared memory holds (RAILCOLL_SHM_MIB: every rank knows every node's, so all
// pick alike) runs. A choice passed over is said once on stderr. A hardware
// algorithm is refused, naming its software form: running that form under
// the hardware algorithm's name would measure something other than what was
// asked, so whoever wants it names it.
Decision FrontEnd::decide_anew(Collective collective, const std::vector<uint64_t>& counts, const AlgoOptions& opts,
                               const std::string& requested) {
  uint64_t largest = 0;
  for (auto c : counts) largest = std::max(largest, c);
  const std::vector<Choice> ranked = selector_.candidates(situation(collective, comm_.topo(), largest), requested);
  const std::string coll = collective_name(collective);
  auto plan = [&](const Choice& c) {
    Decision d;
    d.algorithm = software_equivalent(collective, c.algorithm);
    d.plan = comm_.plan(collective, d.algorithm, counts, opts);
    return d;
  };
  auto ran = [&](const Choice& c, Decision d) {
    if (d.algorithm != c.algorithm)
      throw Error(Status::Unsupported, coll + "/" + c.algorithm + " (" + c.origin +
                                           ") needs network hardware this cluster lacks; ask for its software form, " +
                                           coll + "/" + d.algorithm + ", by name");
    return d;
  };
  // The first candidate; a planning error counts as not fitting, and is what
  // the call fails with when nothing else fits.
  Decision first;
  std::string why_not;
  std::exception_ptr first_error;
  try {
    first = plan(ranked[0]);
    why_not = first.plan->unfit;
  } catch (const Error& e) {
    if (ranked.size() == 1) throw;
    first_error = std::current_exception();
    why_not = e.what();
  }
  if (why_not.empty() || ranked.size() == 1) return ran(ranked[0], std::move(first));
  for (size_t i = 1; i < ranked.size(); ++i) {
    Decision d;
    try {
      d = plan(ranked[i]);
    } catch (const Error&) {
      continue;
    }
    if (!d.plan->unfit.empty()) continue;
    report_once(coll + " " + ranked[0].algorithm + " -> " + d.algorithm,
                coll + ": " + ranked[0].algorithm + " (" + ranked[0].origin + "): " + why_not + "; running " + coll +
                    "/" + d.algorithm + " (" + ranked[i].origin + ") instead");
    return ran(ranked[i], std::move(d));
  }
  if (first_error) std::rethrow_exception(first_error);
  return ran(ranked[0], std::move(first));  // nothing fits: the first, which fails saying why
}

// Says `what` once per communicator, on rank 0 only.
void FrontEnd::report_once(const std::string& key, const std::string& what) {
  if (comm_.rank() == 0 && reported_.insert(key).second) fprintf(stderr, "railcoll: %s\n", what.c_str());
}

}  // namespace railcoll::rt
