#include "verify/verifier.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <sstream>
#include <tuple>

namespace railcoll {

namespace {

constexpr size_t kMaxErrors = 20;
constexpr int kInitialWrite = -2;  // the send buffers' content, there before the call
constexpr int kNoWrite = -1;

using Clock = std::vector<int32_t>;

struct Access {
  enum Kind : uint8_t { Sync, PutRead, PutWrite } kind;
  int32_t rank;  // Sync: the rank; Put*: the issuer
  int32_t seq;   // Sync: event number on rank
  int32_t put;   // Put*: index into puts
  int32_t op;    // op index on rank (for messages)
};

struct PutRec {
  int32_t issuer, op, flush_seq = 0;
  std::vector<std::pair<int32_t, int32_t>> grants;  // (rank, seq) of waits that learned of it
  int32_t peer = -1;  // the rank that receives it
};

constexpr int kCombined = -3;  // Piece::origin of a reduction's result

struct Piece {
  uint64_t end;
  int32_t origin;        // -1: never written; kCombined: see combo
  uint64_t origin_off;   // of the byte at the piece's start
  int32_t writer;        // access index, kNoWrite or kInitialWrite
  std::vector<int32_t> readers;
  int32_t combo = -1;    // origin kCombined: which ranks' elements at origin_off were reduced, and in what order (Combo)
};

class Bytes {
 public:
  void init(uint64_t size, int32_t origin) {
    map_.clear();
    if (size) map_[0] = Piece{size, origin, 0, origin >= 0 ? kInitialWrite : kNoWrite, {}};
  }
  // Pieces covering [a, b), split so that they lie exactly inside.
  template <class F>
  void each(uint64_t a, uint64_t b, F f) {
    if (a >= b) return;
    split(a);
    split(b);
    for (auto it = map_.find(a); it != map_.end() && it->first < b; ++it) f(it->first, it->second);
  }
  template <class F>
  void all(F f) {
    for (auto& kv : map_) f(kv.first, kv.second);
  }
  void replace(uint64_t a, uint64_t b, std::vector<std::pair<uint64_t, Piece>> pieces) {
    split(a);
    split(b);
    map_.erase(map_.find(a), map_.lower_bound(b));
    for (auto& p : pieces) map_[p.first] = std::move(p.second);
  }

 private:
  void split(uint64_t at) {
    auto it = map_.upper_bound(at);
    if (it == map_.begin()) return;
    --it;
    if (it->first == at || it->second.end <= at) return;
    Piece right = it->second;
    right.origin_off += at - it->first;
    it->second.end = at;
    map_[at] = std::move(right);
  }
  std::map<uint64_t, Piece> map_;
};

struct Incr {
  int32_t issuer, seq, put;  // put -1 for a signal
  std::shared_ptr<const Clock> clock;
};

struct WaitRec {
  int32_t rank, seq, op, counter;
  uint64_t value;
};

class Verifier {
 public:
  Verifier(const Schedule& s, bool in_place) : s_(s), t_(s.topo), N(s.topo.nranks()), in_place_(in_place) {}

  VerifyResult run() {
    check_static();
    if (!res_.ok()) return res_;
    setup();
    simulate();
    if (!deadlocked_) {
      check_ambiguous_waits();
      check_quiescence();
      check_result();
    }
    return res_;
  }

 private:
  // ---- reporting ----
  void error(const std::string& msg) {
    if (res_.errors.size() < kMaxErrors) res_.errors.push_back(schedule_title(s_) + ": " + msg);
  }
  void op_error(int r, int oi, const std::string& msg) {
    error("rank " + std::to_string(r) + " " + describe_op(s_, r, oi) + ": " + msg);
  }
  static std::string range(Region reg, int owner, uint64_t a, uint64_t b) {
    std::ostringstream o;
    o << region_name(reg) << "[" << a << "," << b << ") of " << (reg == Region::Shared ? "node " : "rank ")
      << owner;
    return o.str();
  }
  std::string access_name(int ai) const {
    if (ai == kInitialWrite) return "the initial contents";
    const Access& a = acc_[ai];
    int r = a.kind == Access::Sync ? a.rank : puts_[a.put].issuer;
    const char* what = a.kind == Access::Sync ? "" : a.kind == Access::PutRead ? " (reading)" : " (writing)";
    return "rank " + std::to_string(r) + " " + describe_op(s_, r, a.op) + what;
  }

  // ---- static checks: spans, addressability, counters ----
  bool span_ok(int r, int oi, const Span& sp, const char* role) {
    int owners = sp.region == Region::Shared ? t_.nnodes() : N;
    if (sp.owner < 0 || sp.owner >= owners) {
      op_error(r, oi, std::string(role) + " names a missing " + (sp.region == Region::Shared ? "node " : "rank ") +
                          std::to_string(sp.owner));
      return false;
    }
    uint64_t size = s_.region_size(sp.region, sp.owner);
    if (sp.offset > size || sp.length > size - sp.offset) {
      op_error(r, oi, std::string(role) + " span " + range(sp.region, sp.owner, sp.offset, sp.offset + sp.length) +
                          " is out of bounds (size " + std::to_string(size) + ")");
      return false;
    }
    return true;
  }
  bool local_to(int r, const Span& sp) const {
    return sp.region == Region::Shared ? sp.owner == t_.node_of(r) : sp.owner == r;
  }
  bool counter_ok(int r, int oi, const CounterRef& c) {
    int owners = c.on_node ? t_.nnodes() : N, count = c.on_node ? s_.node_counters : s_.rank_counters;
    if (c.owner < 0 || c.owner >= owners || c.index < 0 || c.index >= count) {
      op_error(r, oi, "counter out of range");
      return false;
    }
    return true;
  }
  void check_static() {
    if (static_cast<int>(s_.programs.size()) != N) {
      error("has " + std::to_string(s_.programs.size()) + " programs for " + std::to_string(N) + " ranks");
      return;
    }
    for (int r = 0; r < N; ++r) {
      for (int oi = 0; oi < static_cast<int>(s_.programs[r].size()); ++oi) {
        const Op& op = s_.programs[r][oi];
        if (op.kind == OpKind::Put) {
          if (op.peer < 0 || op.peer >= N || op.peer == r) {
            op_error(r, oi, "put to an invalid peer (a rank other than itself is needed)");
            continue;
          }
          if (op.rail != kStripe && (op.rail < 0 || op.rail >= t_.rails())) op_error(r, oi, "rail out of range");
          if (!counter_ok(r, oi, op.counter)) continue;
          bool at_peer = op.counter.on_node ? op.counter.owner == t_.node_of(op.peer) : op.counter.owner == op.peer;
          if (!at_peer) op_error(r, oi, "notifies a counter that is not on the receiving side");
        }
        const bool reduces = op.kind == OpKind::Reduce || op.kind == OpKind::ReduceBefore;
        if (reduces && s_.element_size() == 0)
          op_error(r, oi, "reduces in a schedule without a data type");
        if (op.kind == OpKind::Put || op.kind == OpKind::Copy || reduces) {
          bool local = op.kind != OpKind::Put;
          for (auto& sg : op.segs) {
            if (sg.src.length != sg.dst.length) op_error(r, oi, "segment source and destination differ in length");
            if (reduces && s_.element_size() && sg.src.length % s_.element_size() != 0)
              op_error(r, oi, "reduces a span that is not a whole number of elements");
            if (!span_ok(r, oi, sg.src, "source") || !span_ok(r, oi, sg.dst, "destination")) continue;
            if (!local_to(r, sg.src)) op_error(r, oi, "source " + range(sg.src.region, sg.src.owner, sg.src.offset, sg.src.offset + sg.src.length) + " is not addressable by this rank");
            bool dst_ok = local ? local_to(r, sg.dst)
                          : sg.dst.region == Region::Shared ? sg.dst.owner == t_.node_of(op.peer)
                                                            : sg.dst.owner == op.peer;
            if (!dst_ok) op_error(r, oi, "destination " + range(sg.dst.region, sg.dst.owner, sg.dst.offset, sg.dst.offset + sg.dst.length) + " is not at the " + (local ? "rank itself" : "receiving rank"));
            if (sg.dst.region == Region::Send) op_error(r, oi, "writes into a send buffer, which is read-only");
            if (local && sg.src.region == sg.dst.region && sg.src.owner == sg.dst.owner &&
                sg.src.offset < sg.dst.offset + sg.dst.length && sg.dst.offset < sg.src.offset + sg.src.length)
              op_error(r, oi, "copies between overlapping spans");
          }
        }
        if (op.kind == OpKind::Signal) counter_ok(r, oi, op.counter);
        if (op.kind == OpKind::Wait && counter_ok(r, oi, op.counter)) {
          bool mine = op.counter.on_node ? op.counter.owner == t_.node_of(r) : op.counter.owner == r;
          if (!mine) op_error(r, oi, "waits on a counter of another rank or node");
        }
      }
    }
  }

  // ---- execution ----
  Bytes& bytes(Region reg, int owner) {
    switch (reg) {
      case Region::Send: return aliased(owner) ? recv_[owner] : send_[owner];
      case Region::Recv: return recv_[owner];
      case Region::Scratch: return scratch_[owner];
      case Region::Shared: return shared_[owner];
    }
    return send_[owner];
  }
  int counter_id(const CounterRef& c) const {
    return c.on_node ? N * s_.rank_counters + c.owner * s_.node_counters + c.index
                     : c.owner * s_.rank_counters + c.index;
  }
  std::string counter_name(const CounterRef& c) const {
    return (c.on_node ? "counter n" : "counter r") + std::to_string(c.owner) + ".c" + std::to_string(c.index);
  }

  void setup() {
    send_.resize(N);
    recv_.resize(N);
    scratch_.resize(N);
    shared_.resize(t_.nnodes());
    for (int r = 0; r < N; ++r) {
      send_[r].init(s_.send_bytes[r], r);
      recv_[r].init(s_.recv_bytes[r], aliased(r) ? r : -1);  // in place: recv starts as the input
      scratch_[r].init(s_.scratch_bytes[r], -1);
    }
    for (int n = 0; n < t_.nnodes(); ++n) shared_[n].init(s_.shared_bytes[n], -1);
    clock_.assign(N, Clock(N, 0));
    pc_.assign(N, 0);
    end_.assign(N, Clock());
    counters_.assign(N * s_.rank_counters + t_.nnodes() * s_.node_counters, {});
    values_.assign(counters_.size(), 0);
  }

  bool aliased(int r) const { return in_place_ && s_.send_bytes[r] == s_.recv_bytes[r]; }

  // Has access a finished before the event of rank x whose clock is vc?
  bool finished_before(int ai, const Clock& vc) const {
    if (ai == kInitialWrite) return true;
    const Access& a = acc_[ai];
    if (a.kind == Access::Sync) return vc[a.rank] >= a.seq;
    const PutRec& p = puts_[a.put];
    if (a.kind == Access::PutRead && p.flush_seq && vc[p.issuer] >= p.flush_seq) return true;
    for (auto& g : p.grants)
      if (vc[g.first] >= g.second) return true;
    return false;
  }

  int tick(int r) { return ++clock_[r][r]; }

  // Reads [a,b) of a region for access ai at rank r; returns the content pieces.
  std::vector<Piece> read(int r, int oi, const Span& sp, int ai) {
    std::vector<Piece> out;
    bool reported = false;
    bytes(sp.region, sp.owner).each(sp.offset, sp.offset + sp.length, [&](uint64_t at, Piece& p) {
      if (!reported && p.writer == kNoWrite) {
        op_error(r, oi, "reads " + range(sp.region, sp.owner, at, p.end) + " before anything is written there");
        reported = true;
      } else if (!reported && !finished_before(p.writer, clock_[r])) {
        op_error(r, oi, "reads " + range(sp.region, sp.owner, at, p.end) + " while " + access_name(p.writer) +
                            " may still be writing it");
        reported = true;
      }
      p.readers.push_back(ai);
      Piece c = p;
      c.readers.clear();
      c.end = p.end - at;  // length, rebased below
      out.push_back(c);
    });
    return out;
  }

  void write(int r, int oi, const Span& sp, const std::vector<Piece>& content, int ai) {
    const Clock& vc = clock_[r];
    bool reported = false;
    Bytes& target = bytes(sp.region, sp.owner);
    target.each(sp.offset, sp.offset + sp.length, [&](uint64_t at, Piece& p) {
      if (reported) return;
      if (p.writer >= 0 && !finished_before(p.writer, vc)) {
        op_error(r, oi, "writes " + range(sp.region, sp.owner, at, p.end) + " while " + access_name(p.writer) +
                            " may still be writing it");
        reported = true;
        return;
      }
      for (int rd : p.readers)
        if (!finished_before(rd, vc)) {
          op_error(r, oi, "overwrites " + range(sp.region, sp.owner, at, p.end) + " while " + access_name(rd) +
                              " may still be reading it");
          reported = true;
          return;
        }
    });
    std::vector<std::pair<uint64_t, Piece>> pieces;
    uint64_t at = sp.offset;
    for (const Piece& c : content) {
      Piece p{at + c.end, c.origin, c.origin_off, ai, {}, c.combo};
      pieces.push_back({at, p});
      at += c.end;
    }
    target.replace(sp.offset, sp.offset + sp.length, std::move(pieces));
  }

  // ---- reductions: a value is the reduction over a set of ranks' elements ----
  // For a non-commutative operator the order counts too: a value is in order
  // when its operands, left to right, come from strictly ascending ranks (an
  // associative operator then gives the rank-order result, whatever the
  // grouping); combining a with b keeps that when both are in order and a's
  // last rank is below b's first.
  using RankSet = std::vector<uint64_t>;  // bit per rank
  struct Combo {
    RankSet set;
    bool in_order;
    int lo, hi;  // lowest and highest rank of the set
    bool operator<(const Combo& o) const { return std::tie(set, in_order) < std::tie(o.set, o.in_order); }
  };
  Combo combo_of(const Piece& p) const {
    if (p.origin == kCombined) return combos_[p.combo];
    Combo c{RankSet((N + 63) / 64, 0), true, p.origin, p.origin};
    if (p.origin >= 0) c.set[p.origin / 64] |= 1ull << (p.origin % 64);
    return c;
  }
  RankSet contributors(const Piece& p) const { return combo_of(p).set; }
  bool in_order(const Piece& p) const { return combo_of(p).in_order; }
  int intern(const Combo& c) {
    auto it = combo_ids_.find(c);
    if (it != combo_ids_.end()) return it->second;
    combos_.push_back(c);
    return combo_ids_[c] = static_cast<int>(combos_.size()) - 1;
  }
  static std::string set_text(const RankSet& s) {
    std::string out;
    for (size_t w = 0; w < s.size(); ++w)
      for (int b = 0; b < 64; ++b)
        if (s[w] >> b & 1) out += (out.empty() ? "" : ",") + std::to_string(w * 64 + b);
    return "{" + out + "}";
  }
  // dst (op) src (src_first: src (op) dst), piece by piece (piece lengths in
  // .end): the elements must be the same ones (same origin offset) and no
  // rank may be counted twice.
  std::vector<Piece> combine(int r, int oi, const std::vector<Piece>& dst, const std::vector<Piece>& src,
                             bool src_first) {
    std::vector<Piece> out;
    size_t i = 0, j = 0;
    uint64_t di = 0, sj = 0;  // bytes consumed of dst[i], src[j]
    bool reported = false;
    while (i < dst.size() && j < src.size()) {
      const Piece &a = dst[i], &b = src[j];
      uint64_t len = std::min(a.end - di, b.end - sj);
      Piece p{len, kCombined, a.origin_off + di, a.writer, {}, -1};
      if (a.origin == -1 || b.origin == -1) {
        p.origin = -1;  // read() has reported it
      } else {
        if (a.origin_off + di != b.origin_off + sj && !reported) {
          op_error(r, oi, "combines elements at offset " + std::to_string(a.origin_off + di) +
                              " with elements at offset " + std::to_string(b.origin_off + sj));
          reported = true;
        }
        const Combo x = combo_of(a), y = combo_of(b);
        const Combo& left = src_first ? y : x;
        const Combo& right = src_first ? x : y;
        Combo u{RankSet(x.set.size()), left.in_order && right.in_order && left.hi < right.lo,
                std::min(x.lo, y.lo), std::max(x.hi, y.hi)};
        bool twice = false;
        for (size_t w = 0; w < x.set.size(); ++w) twice |= (x.set[w] & y.set[w]) != 0, u.set[w] = x.set[w] | y.set[w];
        if (twice && !reported) {
          op_error(r, oi, "combines " + set_text(x.set) + " with " + set_text(y.set) +
                              ": a rank's contribution counted twice");
          reported = true;
        }
        p.combo = intern(u);
      }
      out.push_back(p);
      di += len;
      sj += len;
      if (di == a.end) ++i, di = 0;
      if (sj == b.end) ++j, sj = 0;
    }
    return out;
  }

  void increment(int r, const CounterRef& c, int put) {
    int id = counter_id(c);
    counters_[id].push_back({r, clock_[r][r], put, std::make_shared<const Clock>(clock_[r])});
    ++values_[id];
  }

  // Runs rank r until it blocks or ends; returns whether it did anything.
  bool advance(int r) {
    const auto& prog = s_.programs[r];
    bool progressed = false;
    while (pc_[r] < static_cast<int>(prog.size())) {
      int oi = pc_[r];
      const Op& op = prog[oi];
      if (op.kind == OpKind::Wait) {
        int id = counter_id(op.counter);
        if (values_[id] < op.value) return progressed;
        int seq = tick(r);
        for (uint64_t i = 0; i < op.value; ++i) {
          const Incr& in = counters_[id][i];
          for (int x = 0; x < N; ++x) clock_[r][x] = std::max(clock_[r][x], (*in.clock)[x]);
          if (in.put >= 0) puts_[in.put].grants.push_back({r, seq});
        }
        waits_.push_back({r, seq, oi, id, op.value});
      } else if (op.kind == OpKind::Reduce || op.kind == OpKind::ReduceBefore) {
        int seq = tick(r);
        int ai = static_cast<int>(acc_.size());
        acc_.push_back({Access::Sync, r, seq, -1, oi});
        for (auto& sg : op.segs) {
          auto in = read(r, oi, sg.src, ai);
          auto acc = read(r, oi, sg.dst, ai);
          write(r, oi, sg.dst, combine(r, oi, acc, in, op.kind == OpKind::ReduceBefore), ai);
        }
      } else if (op.kind == OpKind::Put || op.kind == OpKind::Copy) {
        int seq = tick(r);
        int put = -1;
        if (op.kind == OpKind::Put) {
          put = static_cast<int>(puts_.size());
          puts_.push_back(PutRec{r, oi, 0, {}, op.peer});
          unflushed_[r].push_back(put);
        }
        int rd = static_cast<int>(acc_.size());
        acc_.push_back({put >= 0 ? Access::PutRead : Access::Sync, r, seq, put, oi});
        int wr = rd;
        if (put >= 0) {
          wr = static_cast<int>(acc_.size());
          acc_.push_back({Access::PutWrite, r, seq, put, oi});
        }
        for (auto& sg : op.segs) {
          auto content = read(r, oi, sg.src, rd);
          write(r, oi, sg.dst, content, wr);
        }
        if (put >= 0) increment(r, op.counter, put);
      } else if (op.kind == OpKind::Signal) {
        tick(r);
        increment(r, op.counter, -1);
      } else {  // Flush
        int seq = tick(r);
        for (int p : unflushed_[r]) puts_[p].flush_seq = seq;
        unflushed_[r].clear();
      }
      ++res_.ops;
      ++pc_[r];
      progressed = true;
    }
    // Return: an implicit flush, then the end event.
    int seq = tick(r);
    for (int p : unflushed_[r]) puts_[p].flush_seq = seq;
    unflushed_[r].clear();
    end_[r] = clock_[r];
    ++pc_[r];
    return true;
  }

  void simulate() {
    unflushed_.assign(N, {});
    std::vector<bool> done(N, false);
    for (bool progress = true; progress;) {
      progress = false;
      for (int r = 0; r < N; ++r) {
        if (done[r]) continue;
        if (advance(r)) progress = true;
        if (pc_[r] > static_cast<int>(s_.programs[r].size())) done[r] = true;
      }
    }
    for (int r = 0; r < N; ++r) {
      if (done[r]) continue;
      deadlocked_ = true;
      const Op& op = s_.programs[r][pc_[r]];
      uint64_t total = values_[counter_id(op.counter)];
      op_error(r, pc_[r], "waits for " + counter_name(op.counter) + " to reach " + std::to_string(op.value) +
                              " but it can never pass " + std::to_string(total) + " (every other rank is done or blocked)");
    }
  }

  void check_ambiguous_waits() {
    for (const WaitRec& w : waits_) {
      uint64_t candidates = 0;
      for (const Incr& in : counters_[w.counter])
        if ((*in.clock)[w.rank] < w.seq) ++candidates;
      if (candidates != w.value) {
        op_error(w.rank, w.op, std::to_string(candidates) + " increments of its counter can arrive before it but it waits for " +
                                   std::to_string(w.value) + ": a message meant for a later wait could satisfy it early");
      }
    }
  }

  // Whether access ai is rank r's own: its copy or signal, a put it issued or one sent to it.
  bool involves(int ai, int r) const {
    if (ai == kInitialWrite) return false;
    const Access& a = acc_[ai];
    if (a.kind == Access::Sync) return a.rank == r;
    return puts_[a.put].issuer == r || puts_[a.put].peer == r;
  }

  // A rank's send, recv and scratch may be reused as soon as it returns: every
  // access to them must be over. Its node's shared buffer is not reused by the
  // next call (the runtime alternates two banks, and a rank enters the call
  // after next only when every local rank has left this one: docs/runtime.md,
  // "Consecutive calls"), so there only the rank's own accesses must be over.
  void check_quiescence() {
    auto check = [&](int r, Bytes& b, Region reg, int owner) {
      bool reported = false;
      const bool own_only = reg == Region::Shared;
      b.all([&](uint64_t at, Piece& p) {
        if (reported) return;
        if (p.writer >= 0 && (!own_only || involves(p.writer, r)) && !finished_before(p.writer, end_[r])) {
          error("rank " + std::to_string(r) + " returns while " + access_name(p.writer) + " may still write " +
                range(reg, owner, at, p.end));
          reported = true;
          return;
        }
        for (int rd : p.readers)
          if ((!own_only || involves(rd, r)) && !finished_before(rd, end_[r])) {
            error("rank " + std::to_string(r) + " returns while " + access_name(rd) + " may still read " +
                  range(reg, owner, at, p.end));
            reported = true;
            return;
          }
      });
    };
    for (int r = 0; r < N; ++r) {
      check(r, send_[r], Region::Send, r);
      check(r, recv_[r], Region::Recv, r);
      check(r, scratch_[r], Region::Scratch, r);
      check(r, shared_[t_.node_of(r)], Region::Shared, t_.node_of(r));
    }
  }

  void check_result() {
    const CollectiveTraits& c = traits(s_.collective);
    switch (c.result) {
      case Result::None: return;
      case Result::Synchronised:
        // No rank may leave before every rank has entered: each end must know of
        // every rank's first event.
        for (int r = 0; r < N; ++r)
          for (int x = 0; x < N; ++x)
            if (end_[r][x] < 1) {
              error("rank " + std::to_string(r) + " may leave the barrier before rank " + std::to_string(x) +
                    " has entered it");
              return;
            }
        return;
      case Result::Reduction:
      case Result::ReducedSlice: check_reduced(c); return;
      case Result::Prefix:
      case Result::ExclusivePrefix: check_prefix(c); return;
      case Result::Blocks:
      case Result::RootBlock:
      case Result::BlocksByDest:
      case Result::RootBlocks: break;
    }
    for (int r = 0; r < N; ++r) {
      const std::vector<Expected> want = expected_blocks(c, r);
      if (want.empty()) continue;  // nothing to hold (gather: not the root)
      if (s_.recv_bytes[r] != want.back().end) {
        error("rank " + std::to_string(r) + " recv is " + std::to_string(s_.recv_bytes[r]) + " bytes, expected " +
              std::to_string(want.back().end));
        continue;
      }
      bool reported = false;
      recv_[r].all([&](uint64_t at, Piece& p) {
        if (reported) return;
        // The expected block covering byte `at`: the first that ends after it.
        const Expected& e = *std::upper_bound(want.begin(), want.end(), at,
                                              [](uint64_t x, const Expected& b) { return x < b.end; });
        uint64_t off = e.origin_off + (at - e.begin);
        if (p.origin != e.origin || p.origin_off != off || p.end > e.end) {
          error("rank " + std::to_string(r) + " ends with " + content_text(at, p) + " at recv[" + std::to_string(at) +
                "," + std::to_string(p.end) + "); expected bytes from offset " + std::to_string(off) + " of rank " +
                std::to_string(e.origin));
          reported = true;
        }
      });
    }
  }

  // What rank r's recv must hold, as consecutive blocks [begin, end) holding
  // the bytes of `origin`'s send from origin_off; empty blocks left out, and
  // an empty list when the rank's recv has no meaning.
  struct Expected {
    uint64_t begin, end;
    int origin;
    uint64_t origin_off;
  };
  std::vector<Expected> expected_blocks(const CollectiveTraits& c, int r) const {
    std::vector<Expected> out;
    auto add = [&](uint64_t len, int origin, uint64_t origin_off) {
      uint64_t at = out.empty() ? 0 : out.back().end;
      if (len) out.push_back({at, at + len, origin, origin_off});
    };
    const bool root = r == s_.root;
    switch (c.result) {
      case Result::Blocks:  // every rank's send in rank order
        if (c.result_at_root_only && !root) return {};
        for (int o = 0; o < N; ++o) add(s_.send_bytes[o], o, 0);
        break;
      case Result::RootBlock:  // the root's send
        if (root) return {};
        add(s_.send_bytes[s_.root], s_.root, 0);
        break;
      case Result::RootBlocks: {  // block r of the root's send; blocks are the recv sizes
        uint64_t off = 0;
        for (int o = 0; o < r; ++o) off += s_.recv_bytes[o];
        add(s_.recv_bytes[r], s_.root, off);
        break;
      }
      case Result::BlocksByDest:  // block r of every rank's send, in source order
        for (int o = 0; o < N; ++o) {
          uint64_t off = 0;
          for (int d = 0; d < r; ++d) off += s_.pair_bytes[static_cast<size_t>(o) * N + d];
          add(s_.pair_bytes[static_cast<size_t>(o) * N + r], o, off);
        }
        break;
      default: break;
    }
    if (out.empty()) out.push_back({0, 0, -1, 0});  // an empty result: recv must be empty
    return out;
  }

  std::string content_text(uint64_t at, const Piece& p) const {
    std::string range = "[" + std::to_string(p.origin_off) + "," + std::to_string(p.origin_off + (p.end - at)) + ")";
    if (p.origin == -1) return "bytes never written";
    if (p.origin == kCombined)
      return std::string("the reduction over ranks ") + set_text(combos_[p.combo].set) +
             (s_.commutative || combos_[p.combo].in_order ? "" : " (out of rank order)") + " of elements " + range;
    return "bytes " + range + " of rank " + std::to_string(p.origin);
  }

  // allreduce: every rank's recv holds, at every offset, the reduction over all
  // ranks of their send elements at that offset, each rank counted once;
  // reduce: the root's recv alone; reduce_scatter: rank r's recv holds slice r
  // (its offset in the send buffers: the slices before it).
  void check_reduced(const CollectiveTraits& c) {
    RankSet everyone((N + 63) / 64, 0);
    for (int x = 0; x < N; ++x) everyone[x / 64] |= 1ull << (x % 64);
    const bool slices = c.result == Result::ReducedSlice;
    std::vector<uint64_t> slice_at(N, 0);  // slice r's offset in the send buffers
    for (int r = 1; slices && r < N; ++r) slice_at[r] = slice_at[r - 1] + s_.recv_bytes[r - 1];
    for (int r = 0; r < N; ++r) {
      const uint64_t base = slice_at[r];
      if (c.result_at_root_only && r != s_.root) continue;
      const uint64_t want = slices ? s_.recv_bytes[r] : s_.send_bytes[r];
      if (s_.recv_bytes[r] != want || (slices && base + want > s_.send_bytes[r])) {
        error("rank " + std::to_string(r) + " recv is " + std::to_string(s_.recv_bytes[r]) + " bytes and send " +
              std::to_string(s_.send_bytes[r]) + ": they do not hold its " + (slices ? "slice" : "vector"));
        continue;
      }
      bool reported = false;
      recv_[r].all([&](uint64_t at, Piece& p) {
        if (reported || ((p.origin >= 0 || p.origin == kCombined) && p.origin_off == base + at &&
                         contributors(p) == everyone && (s_.commutative || in_order(p))))
          return;
        error("rank " + std::to_string(r) + " ends with " + content_text(at, p) + " at recv[" + std::to_string(at) +
              "," + std::to_string(p.end) + "); expected the reduction over all " + std::to_string(N) +
              " ranks of elements from offset " + std::to_string(base + at) +
              (s_.commutative ? "" : ", in rank order"));
        reported = true;
      });
    }
  }

  // scan: rank r's recv holds, at every offset, the reduction over ranks
  // 0..r of their elements there; exscan: over 0..r-1, and rank 0's recv is
  // never written. In rank order for a non-commutative operator.
  void check_prefix(const CollectiveTraits& c) {
    const bool exclusive = c.result == Result::ExclusivePrefix;
    for (int r = 0; r < N; ++r) {
      if (s_.recv_bytes[r] != s_.send_bytes[r]) {
        error("rank " + std::to_string(r) + " recv is " + std::to_string(s_.recv_bytes[r]) + " bytes and send " +
              std::to_string(s_.send_bytes[r]) + ": they do not hold its vector");
        continue;
      }
      const int upto = exclusive ? r : r + 1;  // ranks 0..upto-1
      RankSet want((N + 63) / 64, 0);
      for (int x = 0; x < upto; ++x) want[x / 64] |= 1ull << (x % 64);
      bool reported = false;
      recv_[r].all([&](uint64_t at, Piece& p) {
        if (reported) return;
        const std::string where = " at recv[" + std::to_string(at) + "," + std::to_string(p.end) + ")";
        if (upto == 0) {  // exscan's rank 0
          if (p.writer != kNoWrite) error("rank 0 writes its recv" + where + ", which exscan leaves untouched");
          reported = p.writer != kNoWrite;
          return;
        }
        if ((p.origin >= 0 || p.origin == kCombined) && p.origin_off == at && contributors(p) == want &&
            (s_.commutative || in_order(p)))
          return;
        error("rank " + std::to_string(r) + " ends with " + content_text(at, p) + where +
              "; expected the reduction over ranks 0.." + std::to_string(upto - 1) + " of elements from offset " +
              std::to_string(at) + (s_.commutative ? "" : ", in rank order"));
        reported = true;
      });
    }
  }

  const Schedule& s_;
  const Topology& t_;
  const int N;
  const bool in_place_;
  VerifyResult res_;
  bool deadlocked_ = false;
  std::vector<Bytes> send_, recv_, scratch_, shared_;
  std::vector<Clock> clock_, end_;
  std::vector<int> pc_;
  std::vector<Access> acc_;
  std::vector<PutRec> puts_;
  std::vector<std::vector<int>> unflushed_;
  std::vector<std::vector<Incr>> counters_;
  std::vector<uint64_t> values_;
  std::vector<WaitRec> waits_;
  std::vector<Combo> combos_;
  std::map<Combo, int> combo_ids_;
};

}  // namespace

VerifyResult verify_schedule(const Schedule& s, bool in_place) { return Verifier(s, in_place).run(); }

}  // namespace railcoll
