// GOAL export and import. The grammar follows LogGOPSim's txt2bin scanner
// (spcl/LogGOPSim src/LogGOPSim/txt2bin.re); docs/goal.md has the mapping.
//
// Both directions are built for schedules of tens of millions of operations (a
// 4096-rank Direct all-gather has 33.5 M): the export keeps a few integers per
// message and writes the text as it goes; the import reads the text line by
// line, keeps the labels of one rank block at a time and matches sends to
// recvs by sorting.
#include "sim/goal.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <queue>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "core/errors.hpp"

namespace railcoll::sim {

// ---------------------------------------------------------------- export ---

namespace {

// Counters numbered as the simulator numbers them: rank counters first.
struct CounterIds {
  int N, rc, nc;
  explicit CounterIds(const Schedule& s)
      : N(s.topo.nranks()), rc(std::max(1, s.rank_counters)), nc(std::max(1, s.node_counters)) {}
  size_t count(const Schedule& s) const { return static_cast<size_t>(N) * rc + static_cast<size_t>(s.topo.nnodes()) * nc; }
  size_t of(const CounterRef& c) const {
    return c.on_node ? static_cast<size_t>(N) * rc + static_cast<size_t>(c.owner) * nc + c.index
                     : static_cast<size_t>(c.owner) * rc + c.index;
  }
};

// Which increments every wait counts, found by running the programs with
// maximal progress (as the verifier does). For a verified schedule the set is
// the same in every execution: exactly v increments can come before wait(c, v).
// An increment is a put or a signal; `direct` is the rank its own message goes
// to (a put's peer, a signal to another rank's counter), or -1.
struct Trace {
  struct Inc {
    int32_t src, direct;
    uint32_t op;
  };
  std::vector<Inc> incs;
  std::vector<std::vector<int32_t>> incs_of;      // per rank: its increments, in program order
  std::vector<std::vector<int32_t>> counted;      // per rank: the increments its waits count, wait after wait
  std::vector<std::vector<uint32_t>> wait_start;  // per rank and wait: where its increments start in `counted`
  std::vector<uint8_t> counted_by_direct;         // per increment: its direct rank's waits count it
  // (increment, rank) pairs: a rank other than the direct one and the source
  // counts it (a node counter): it needs a message of its own in GOAL.
  std::vector<std::pair<int32_t, int32_t>> notified;
};

Trace trace(const Schedule& s) {
  const int N = s.topo.nranks();
  const CounterIds ids(s);
  Trace t;
  t.incs_of.resize(N);
  t.counted.resize(N);
  t.wait_start.resize(N);
  std::vector<std::vector<int32_t>> arrived(ids.count(s));
  std::unordered_map<uint64_t, uint32_t> cursor;  // (waiter, counter) -> increments already counted
  std::vector<const uint8_t*> pos(N);
  std::vector<uint32_t> pc(N, 0);
  for (int r = 0; r < N; ++r) pos[r] = s.programs[r].at(0);
  Op op;
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < N; ++r) {
      const uint8_t* end = s.programs[r].at(s.programs[r].size());
      while (pos[r] != end) {
        const uint8_t* next = Program::decode(pos[r], &op);
        if (op.kind == OpKind::Wait) {
          const size_t c = ids.of(op.counter);
          const auto& got = arrived[c];
          if (got.size() < op.value) break;
          uint32_t& cur = cursor[static_cast<uint64_t>(r) << 32 | c];
          t.wait_start[r].push_back(static_cast<uint32_t>(t.counted[r].size()));
          for (; cur < op.value; ++cur) {
            const int32_t e = got[cur];
            t.counted[r].push_back(e);
            const Trace::Inc& inc = t.incs[e];
            if (inc.direct == r) t.counted_by_direct[e] = 1;
            else if (inc.src != r) t.notified.push_back({e, r});
          }
        } else if (op.kind == OpKind::Put || op.kind == OpKind::Signal) {
          int32_t direct = -1;
          if (op.kind == OpKind::Put) direct = op.peer;
          else if (!op.counter.on_node && op.counter.owner != r) direct = op.counter.owner;
          const int32_t e = static_cast<int32_t>(t.incs.size());
          t.incs.push_back({r, direct, pc[r]});
          t.counted_by_direct.push_back(0);
          t.incs_of[r].push_back(e);
          arrived[ids.of(op.counter)].push_back(e);
        }
        pos[r] = next;
        ++pc[r];
        progress = true;
      }
    }
  }
  for (int r = 0; r < N; ++r)
    if (pc[r] < s.programs[r].size()) {
      Op w = s.programs[r][pc[r]];
      throw InputError("cannot export to GOAL: rank " + std::to_string(r) + " op #" + std::to_string(pc[r]) +
                       " waits for a counter that never reaches " + std::to_string(w.value));
    }
  std::sort(t.notified.begin(), t.notified.end());
  t.notified.erase(std::unique(t.notified.begin(), t.notified.end()), t.notified.end());
  return t;
}

std::string sizes_text(const std::vector<uint64_t>& v) {
  if (v.empty()) return "none";
  if (std::all_of(v.begin(), v.end(), [&](uint64_t x) { return x == v[0]; })) return std::to_string(v[0]) + " B per rank";
  std::string out;
  for (size_t i = 0; i < v.size() && i < 16; ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out + (v.size() > 16 ? ",... B" : " B");
}

// Output through a buffer: tens of millions of short lines.
class Writer {
 public:
  explicit Writer(std::ostream& out) : out_(out) { buf_.reserve(kFlushAt + 256); }
  ~Writer() { flush(); }
  Writer& operator<<(std::string_view s) {
    buf_.append(s.data(), s.size());
    if (buf_.size() >= kFlushAt) flush();
    return *this;
  }
  Writer& operator<<(uint64_t x) {
    char tmp[24];
    auto r = std::to_chars(tmp, tmp + sizeof tmp, x);
    return *this << std::string_view(tmp, static_cast<size_t>(r.ptr - tmp));
  }
  Writer& operator<<(int x) { return *this << static_cast<uint64_t>(x); }  // labels, ranks: never negative
  void flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }

 private:
  static constexpr size_t kFlushAt = 1 << 20;
  std::ostream& out_;
  std::string buf_;
};

// The GOAL ops of every rank, label by label. One walk per rank gives the
// labels (`Pass::Label`: the sends' labels are the tags the receivers print);
// a second one writes the text (`Pass::Write`).
class Exporter {
 public:
  Exporter(const Schedule& s, const Trace& t) : s_(s), t_(t), N(s.topo.nranks()), multirail_(s.topo.rails() > 1) {
    direct_label_.assign(t.incs.size(), -1);
    notify_label_.assign(t.notified.size(), -1);
    // Messages no wait counts still need their recv (LogGOPSim matches every
    // send): at the end of the receiver, in the order of the increments.
    uncounted_.resize(N);
    for (size_t e = 0; e < t.incs.size(); ++e)
      if (t.incs[e].direct >= 0 && !t.counted_by_direct[e]) uncounted_[t.incs[e].direct].push_back(static_cast<int32_t>(e));
  }

  void write(std::ostream& os) {
    for (int r = 0; r < N; ++r) walk(r, nullptr);
    Writer w(os);
    w << "// railcoll " << collective_name(s_.collective) << "/" << s_.algorithm << ": " << s_.topo.describe() << "\n"
      << "// send sizes: " << sizes_text(s_.send_bytes) << "; recv sizes: " << sizes_text(s_.recv_bytes) << "\n"
      << "// calc <n> is a local copy of n bytes (unit: bytes, not time); tag = label number of the send\n"
      << "num_ranks " << N << "\n";
    for (int r = 0; r < N; ++r) {
      w << "\nrank " << r << " {\n";
      walk(r, &w);
      w << "}\n";
    }
  }

 private:
  // The notification of increment e for rank w: its index in t_.notified, or -1.
  int32_t notify_index(int32_t e, int32_t w) const {
    auto it = std::lower_bound(t_.notified.begin(), t_.notified.end(), std::make_pair(e, w));
    return it != t_.notified.end() && *it == std::make_pair(e, w) ? static_cast<int32_t>(it - t_.notified.begin()) : -1;
  }

  // One rank's GOAL ops in program order. `front` is what the next op must
  // require: the rank's latest blocking points (calc, the recvs of a wait, the
  // sends a flush waited for). Non-blocking sends do not enter it. Each op
  // requires only the front, which never holds an op that another member of
  // it already requires: a flush right after sends issued under the current
  // front replaces the front by those sends (each of them requires the front).
  void walk(int r, Writer* w) {
    const Program& prog = s_.programs[r];
    std::vector<int32_t> front, base, run_recvs, run_own;
    std::vector<std::pair<int32_t, uint32_t>> unflushed;  // sends since the last flush, with the front's version
    uint32_t version = 0;                                 // changes whenever the front does
    int32_t label = 0;
    size_t next_inc = 0, next_wait = 0;
    bool in_run = false;
    auto requires_front = [&](int32_t l, const std::vector<int32_t>& req) {
      if (!w) return;
      for (int32_t q : req) *w << "l" << l << " requires l" << q << "\n";
    };
    auto send = [&](int32_t dst, uint64_t bytes, int rail) {
      if (w) {
        *w << "l" << label << ": send " << bytes << "b to " << dst << " tag " << label;
        if (rail >= 0) *w << " nic " << rail;
        *w << "\n";
      }
      requires_front(label, front);
      unflushed.push_back({label, version});
      return label++;
    };
    auto recv = [&](int32_t src, uint64_t bytes, int32_t tag, int rail, const std::vector<int32_t>& req) {
      if (w) {
        *w << "l" << label << ": recv " << bytes << "b from " << src << " tag " << tag;
        if (rail >= 0) *w << " nic " << rail;
        *w << "\n";
      }
      requires_front(label, req);
      return label++;
    };
    // The bytes and the nic attribute of increment e's own message.
    auto message = [&](int32_t e, uint64_t* bytes, int* rail) {
      const Trace::Inc& inc = t_.incs[e];
      const Op op = s_.programs[inc.src][inc.op];
      *bytes = 0;
      *rail = -1;
      if (op.kind == OpKind::Put) {
        *bytes = op.bytes();
        if (multirail_ && op.rail != kStripe) *rail = op.rail;
      }
    };
    const uint8_t* pos = prog.at(0);
    const uint8_t* end = prog.at(prog.size());
    Op op;
    while (pos != end) {
      pos = Program::decode(pos, &op);
      if (op.kind != OpKind::Wait) in_run = false;
      switch (op.kind) {
        case OpKind::Put:
        case OpKind::Signal: {
          const int32_t e = t_.incs_of[r][next_inc++];
          const Trace::Inc& inc = t_.incs[e];
          if (inc.direct >= 0) {
            uint64_t bytes;
            int rail;
            message(e, &bytes, &rail);
            direct_label_[e] = send(inc.direct, bytes, rail);
          }
          auto it = std::lower_bound(t_.notified.begin(), t_.notified.end(), std::make_pair(e, int32_t{-1}));
          for (; it != t_.notified.end() && it->first == e; ++it)
            if (it->second != inc.direct)
              notify_label_[it - t_.notified.begin()] = send(it->second, 0, -1);
          break;
        }
        case OpKind::Copy:
        case OpKind::Reduce:
        case OpKind::ReduceBefore: {  // all local computation in GOAL (calc)
          if (w) *w << "l" << label << ": calc " << op.bytes() << "\n";
          requires_front(label, front);
          front = {label++};
          ++version;
          break;
        }
        case OpKind::Wait: {
          // Consecutive waits block together (the rank goes on when all have
          // passed, whatever the arrival order), so the recvs of a run of waits
          // all require the front from before the run. This also makes
          // export(import(x)) == x: the importer turns one recv into one wait.
          if (!in_run) {
            in_run = true;
            base = front;
            run_recvs.clear();
            run_own.clear();
          }
          const auto& counted = t_.counted[r];
          const uint32_t from = t_.wait_start[r][next_wait];
          const uint32_t to = ++next_wait < t_.wait_start[r].size() ? t_.wait_start[r][next_wait]
                                                                    : static_cast<uint32_t>(counted.size());
          for (uint32_t k = from; k < to; ++k) {
            const int32_t e = counted[k];
            const Trace::Inc& inc = t_.incs[e];
            uint64_t bytes;
            int rail;
            message(e, &bytes, &rail);
            int32_t n;
            if (inc.direct == r) {
              run_recvs.push_back(recv(inc.src, bytes, direct_label_[e], rail, base));
            } else if ((n = notify_index(e, r)) >= 0) {
              run_recvs.push_back(recv(inc.src, 0, notify_label_[n], -1, base));
            } else if (inc.direct >= 0) {
              run_own.push_back(direct_label_[e]);  // its own put, counted by itself
            }
          }
          front = run_recvs.empty() ? base : run_recvs;
          front.insert(front.end(), run_own.begin(), run_own.end());
          ++version;
          break;
        }
        case OpKind::Flush: {
          if (unflushed.empty()) break;
          const bool covers = std::any_of(unflushed.begin(), unflushed.end(),
                                          [&](const std::pair<int32_t, uint32_t>& u) { return u.second == version; });
          if (covers) front.clear();  // a send issued under this front requires all of it
          for (auto& u : unflushed) front.push_back(u.first);
          unflushed.clear();
          ++version;
          break;
        }
      }
      std::sort(front.begin(), front.end());
      front.erase(std::unique(front.begin(), front.end()), front.end());
    }
    for (int32_t e : uncounted_[r]) {
      uint64_t bytes;
      int rail;
      message(e, &bytes, &rail);
      recv(t_.incs[e].src, bytes, direct_label_[e], rail, front);
    }
  }

  const Schedule& s_;
  const Trace& t_;
  const int N;
  const bool multirail_;
  std::vector<int32_t> direct_label_;  // per increment: the label of its own message's send
  std::vector<int32_t> notify_label_;  // per entry of t_.notified: the label of its send
  std::vector<std::vector<int32_t>> uncounted_;
};

}  // namespace

void write_goal(const Schedule& s, std::ostream& out) {
  Trace t = trace(s);  // throws before anything is written
  Exporter(s, t).write(out);
}

std::string to_goal(const Schedule& s) {
  std::ostringstream out;
  write_goal(s, out);
  return out.str();
}

// ---------------------------------------------------------------- import ---

namespace {

struct GOp {
  uint64_t bytes = 0, tag = 0;
  int32_t peer = -1, line = 0;
  int32_t nic = -1;
  int32_t first_dep_line = 0;  // the line of its first `requires` (0: none)
  char kind = 'c';             // 's', 'r', 'c'
};

// A resolved dependency: op `of` (start_only: irequires) requires op `on`.
struct GDep {
  int32_t of, on;
  bool start_only;
};

struct GRank {
  bool seen = false;
  std::vector<GOp> ops;
  std::vector<GDep> deps;
};

[[noreturn]] void fail(int line, const std::string& what) {
  throw InputError("GOAL line " + std::to_string(line) + ": " + what);
}

// `what` is a C string: it becomes a std::string only for the error message.
uint64_t number(std::string_view t, int line, const char* what) {
  uint64_t x = 0;
  auto r = std::from_chars(t.data(), t.data() + t.size(), x);
  if (t.empty() || t.size() > 19 || r.ec != std::errc() || r.ptr != t.data() + t.size() ||
      !std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; }))
    fail(line, std::string("expected ") + what + ", found '" + std::string(t) + "'");
  return x;
}

bool is_ident(std::string_view t) {
  return !t.empty() && std::isalpha(static_cast<unsigned char>(t[0])) &&
         std::all_of(t.begin(), t.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// The labels of the rank block being read: "l<number>" (what the exporter
// and schedgen write) by number, any other identifier by name.
class Labels {
 public:
  void clear() {
    numbered_.clear();
    named_.clear();
  }
  // Inserts; false when the label is taken.
  bool add(std::string_view label, int32_t op) {
    uint64_t n;
    if (numbered(label, &n)) return numbered_.emplace(n, op).second;
    return named_.emplace(std::string(label), op).second;
  }
  int32_t find(std::string_view label) const {
    uint64_t n;
    if (numbered(label, &n)) {
      auto it = numbered_.find(n);
      return it == numbered_.end() ? -1 : it->second;
    }
    auto it = named_.find(std::string(label));
    return it == named_.end() ? -1 : it->second;
  }

 private:
  static bool numbered(std::string_view label, uint64_t* n) {
    if (label.size() < 2 || label.size() > 19 || label[0] != 'l' || (label[1] == '0' && label.size() > 2)) return false;
    auto r = std::from_chars(label.data() + 1, label.data() + label.size(), *n);
    return r.ec == std::errc() && r.ptr == label.data() + label.size();
  }
  std::unordered_map<uint64_t, int32_t> numbered_;
  std::unordered_map<std::string, int32_t> named_;
};

// A dependency as written: both labels, resolved when the block closes
// (a dependency may name a label defined later in the block).
struct PendingDep {
  std::string of, on;
  bool start_only;
  int32_t line;
};

class Parser {
 public:
  explicit Parser(std::istream& in) : in_(in) {}

  // Parses the stream into per-rank op lists with resolved dependencies.
  std::vector<GRank> parse(int& nranks) {
    nranks_ = -1;
    while (std::getline(in_, line_)) {
      ++line_no_;
      strip_comments(line_);
      tokenize();
      statements();
    }
    if (cur_ >= 0) fail(open_line_, "rank " + std::to_string(cur_) + " block is not closed");
    if (nranks_ < 0) fail(line_no_, "missing num_ranks");
    nranks = nranks_;
    return std::move(ranks_);
  }

 private:
  // Comments (// and /* */, which may span lines) become blanks, in place.
  void strip_comments(std::string& line) {
    if (!in_comment_ && line.find('/') == std::string::npos) return;  // most lines
    const size_t n = line.size();
    for (size_t i = 0; i < n; ++i) {
      const char c = line[i], d = i + 1 < n ? line[i + 1] : '\0';
      if (in_comment_) {
        line[i] = ' ';
        if (c == '*' && d == '/') line[++i] = ' ', in_comment_ = false;
      } else if (c == '/' && d == '/') {
        std::fill(line.begin() + static_cast<long>(i), line.end(), ' ');
        break;
      } else if (c == '/' && d == '*') {
        line[i] = line[i + 1] = ' ';
        ++i;
        in_comment_ = true;
      }
    }
  }

  static bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

  void tokenize() {
    tok_.clear();
    p_ = 0;
    const char* s = line_.data();
    size_t i = 0, n = line_.size();
    while (i < n) {
      char c = s[i];
      if (c == '{' || c == '}' || c == ':') {
        tok_.emplace_back(s + i, 1);
        ++i;
      } else if (blank(c)) {
        ++i;
      } else {
        size_t j = i;
        while (j < n && !blank(s[j]) && s[j] != '{' && s[j] != '}' && s[j] != ':') ++j;
        tok_.emplace_back(s + i, j - i);
        i = j;
      }
    }
  }

  std::string_view next(const char* what) {
    if (p_ >= tok_.size()) fail(line_no_, std::string("expected ") + what + " before the end of the line");
    return tok_[p_++];
  }

  void statements() {
    while (p_ < tok_.size()) {
      std::string_view t = tok_[p_++];
      if (t == "num_ranks") {
        if (nranks_ >= 0) fail(line_no_, "num_ranks given twice");
        uint64_t n = number(next("a number of ranks"), line_no_, "a number of ranks");
        if (n < 1 || n > (1u << 20)) fail(line_no_, "num_ranks must be 1.." + std::to_string(1u << 20));
        nranks_ = static_cast<int>(n);
        ranks_.resize(nranks_);
      } else if (t == "rank") {
        if (nranks_ < 0) fail(line_no_, "rank block before num_ranks");
        if (cur_ >= 0) fail(line_no_, "rank block inside rank " + std::to_string(cur_) + " (missing '}')");
        uint64_t r = number(next("a rank"), line_no_, "a rank");
        if (r >= static_cast<uint64_t>(nranks_))
          fail(line_no_, "rank " + std::to_string(r) + " but num_ranks is " + std::to_string(nranks_));
        if (next("'{'") != "{") fail(line_no_, "expected '{' after rank " + std::to_string(r));
        if (ranks_[r].seen) fail(line_no_, "rank " + std::to_string(r) + " defined twice");
        ranks_[r].seen = true;
        cur_ = static_cast<int>(r);
        open_line_ = line_no_;
      } else if (t == "}") {
        if (cur_ < 0) fail(line_no_, "'}' outside a rank block");
        close_block();
      } else {
        if (cur_ < 0) fail(line_no_, "'" + std::string(t) + "' outside a rank block");
        operation(t);
      }
    }
  }

  // Resolves the block's dependencies; its labels are forgotten.
  void close_block() {
    GRank& g = ranks_[cur_];
    for (const PendingDep& d : pending_) {
      int32_t a = labels_.find(d.of), b = labels_.find(d.on);
      if (a < 0) fail(d.line, "unknown label '" + d.of + "'");
      if (b < 0) fail(d.line, "unknown label '" + d.on + "'");
      g.deps.push_back({a, b, d.start_only});
      if (!g.ops[a].first_dep_line) g.ops[a].first_dep_line = d.line;
    }
    pending_.clear();
    labels_.clear();
    cur_ = -1;
  }

  void operation(std::string_view t) {
    GRank& g = ranks_[cur_];
    std::string_view label, kw = t;
    if (is_ident(t) && t != "send" && t != "recv" && t != "calc" && p_ < tok_.size()) {
      if (tok_[p_] == "requires" || tok_[p_] == "irequires") {
        bool start_only = tok_[p_++] == "irequires";
        std::string_view other = next("a label");
        if (!is_ident(other)) fail(line_no_, "expected a label, found '" + std::string(other) + "'");
        pending_.push_back({std::string(t), std::string(other), start_only, line_no_});
        return;
      }
      if (tok_[p_] == ":") {
        ++p_;
        label = t;
        kw = next("send, recv or calc");
      }
    }
    GOp op;
    op.line = line_no_;
    if (kw == "send" || kw == "recv") {
      const bool is_send = kw == "send";
      op.kind = kw[0];
      // "8b" or "8 b"
      std::string_view size = next("a size");
      if (size.size() > 1 && size.back() == 'b') size.remove_suffix(1);
      else if (next("'b'") != "b") fail(line_no_, "expected 'b' after the size");
      op.bytes = number(size, line_no_, "a size in bytes");
      if (next(is_send ? "'to'" : "'from'") != (is_send ? "to" : "from"))
        fail(line_no_, std::string("expected '") + (is_send ? "to" : "from") + "'");
      std::string_view peer = next("a rank");
      if (peer == "-1") fail(line_no_, "recv from any source (-1) is not supported");
      uint64_t pr = number(peer, line_no_, "a rank");
      if (pr >= static_cast<uint64_t>(nranks_))
        fail(line_no_, "peer " + std::string(peer) + " but num_ranks is " + std::to_string(nranks_));
      op.peer = static_cast<int32_t>(pr);
    } else if (kw == "calc") {
      op.bytes = number(next("a calc size"), line_no_, "a calc size");
    } else {
      fail(line_no_, "unknown operation '" + std::string(kw) + "' (expected send, recv, calc, requires or irequires)");
    }
    // Optional attributes up to the end of the line.
    while (p_ < tok_.size() && tok_[p_] != "}") {
      std::string_view a = tok_[p_++];
      if (p_ >= tok_.size()) fail(line_no_, "expected a number after '" + std::string(a) + "' before the end of the line");
      std::string_view v = tok_[p_++];
      if (a == "tag" && op.kind != 'c') {
        if (v == "-1") fail(line_no_, "any tag (-1) is not supported");
        op.tag = number(v, line_no_, "a tag");
      } else if (a == "cpu") {
        number(v, line_no_, "a cpu");  // one process per rank: cpu is ignored
      } else if (a == "nic" && op.kind != 'c') {
        op.nic = static_cast<int32_t>(std::min<uint64_t>(number(v, line_no_, "a nic"), 1 << 20));
      } else {
        fail(line_no_, "unexpected '" + std::string(a) + "'");
      }
    }
    if (!label.empty() && !labels_.add(label, static_cast<int32_t>(g.ops.size())))
      fail(line_no_, "label '" + std::string(label) + "' used twice in rank " + std::to_string(cur_));
    g.ops.push_back(op);
  }

  std::istream& in_;
  std::string line_;
  std::vector<std::string_view> tok_;
  size_t p_ = 0;
  int line_no_ = 0, cur_ = -1, open_line_ = 0, nranks_ = -1;
  bool in_comment_ = false;
  std::vector<GRank> ranks_;
  Labels labels_;
  std::vector<PendingDep> pending_;
};

// A send or a recv, for matching: the k-th send s->d with tag t pairs with the
// k-th recv on d from s with tag t (MPI's non-overtaking order, file order).
struct Endpoint {
  int32_t src, dst;
  uint64_t tag;
  int32_t op;  // index in its rank's ops (the sender's for a send, the receiver's for a recv)
  bool operator<(const Endpoint& o) const {
    if (src != o.src) return src < o.src;
    if (dst != o.dst) return dst < o.dst;
    if (tag != o.tag) return tag < o.tag;
    return op < o.op;
  }
  bool same_key(const Endpoint& o) const { return src == o.src && dst == o.dst && tag == o.tag; }
};

}  // namespace

Schedule read_goal(std::istream& in, int rails) {
  if (rails < 1 || rails > 64) throw InputError("GOAL import: rails must be 1..64");
  int N = 0;
  std::vector<GRank> g = Parser(in).parse(N);

  std::vector<Endpoint> sends, recvs;
  for (int r = 0; r < N; ++r)
    for (size_t i = 0; i < g[r].ops.size(); ++i) {
      const GOp& op = g[r].ops[i];
      if (op.kind == 's') sends.push_back({r, op.peer, op.tag, static_cast<int32_t>(i)});
      if (op.kind == 'r') recvs.push_back({op.peer, r, op.tag, static_cast<int32_t>(i)});
    }
  std::sort(sends.begin(), sends.end());
  std::sort(recvs.begin(), recvs.end());
  // recv_of[r][i]: the send (sender's op index) recv i of rank r matches, or -1.
  std::vector<std::vector<int32_t>> recv_of(N);
  std::vector<std::vector<int32_t>> match(N);  // [rank][op]: send -> counter index on dst; recv -> counter index here
  std::vector<std::vector<uint64_t>> offset(N);
  for (int r = 0; r < N; ++r) {
    recv_of[r].assign(g[r].ops.size(), -1);
    match[r].assign(g[r].ops.size(), -1);
    offset[r].assign(g[r].ops.size(), 0);
  }
  for (size_t a = 0, b = 0; b < recvs.size(); ++b) {
    while (a < sends.size() && sends[a] < recvs[b] && !sends[a].same_key(recvs[b])) ++a;
    if (a < sends.size() && sends[a].same_key(recvs[b])) recv_of[recvs[b].dst][recvs[b].op] = sends[a++].op;
  }
  std::vector<uint64_t> incoming(N, 0), scratch(N, 0);
  std::vector<int> counters(N, 0);
  auto place = [&](int src, int si) {  // gives a send its counter and landing offset on the receiver
    const GOp& op = g[src].ops[si];
    match[src][si] = counters[op.peer]++;
    offset[src][si] = incoming[op.peer];
    incoming[op.peer] += op.bytes;
  };
  for (int r = 0; r < N; ++r)
    for (size_t i = 0; i < g[r].ops.size(); ++i) {
      const GOp& op = g[r].ops[i];
      if (op.kind != 'r') continue;
      const int si = recv_of[r][i];
      if (si < 0)
        fail(op.line, "recv from " + std::to_string(op.peer) + " tag " + std::to_string(op.tag) + " has no matching send");
      const GOp& s = g[op.peer].ops[si];
      if (s.bytes != op.bytes)
        fail(op.line, "recv of " + std::to_string(op.bytes) + " bytes matches a send of " + std::to_string(s.bytes) +
                          " (line " + std::to_string(s.line) + ")");
      place(op.peer, si);
      match[r][i] = match[op.peer][si];
    }
  recv_of.clear();
  // Sends nobody receives still travel (LogGOPSim completes them eagerly).
  for (int r = 0; r < N; ++r)
    for (size_t i = 0; i < g[r].ops.size(); ++i)
      if (g[r].ops[i].kind == 's' && match[r][i] < 0) place(r, static_cast<int>(i));
  for (int r = 0; r < N; ++r) {
    scratch[r] = incoming[r];
    for (auto& op : g[r].ops) {
      if (op.kind == 's') scratch[r] = std::max(scratch[r], op.bytes);
      if (op.kind == 'c') scratch[r] = std::max(scratch[r], 2 * op.bytes);
      if (op.nic >= rails) fail(op.line, "nic " + std::to_string(op.nic) + " but only " + std::to_string(rails) + " rail(s)");
    }
  }

  Schedule s;
  s.collective = Collective::Goal;
  s.algorithm = "imported";
  s.topo = Topology::from_ppn(N, 1, rails);
  s.send_bytes.assign(N, 0);
  s.recv_bytes.assign(N, 0);
  s.scratch_bytes = scratch;
  s.shared_bytes.assign(N, 0);
  s.rank_counters = N ? *std::max_element(counters.begin(), counters.end()) : 0;
  s.programs.resize(N);
  const int boundary_counter = s.rank_counters;  // counted by no wait
  bool used_boundary = false;

  for (int r = 0; r < N; ++r) {
    auto& ops = g[r].ops;
    const size_t n = ops.size();
    // The requires graph of the rank: deps of op i are req[req_start[i] .. req_start[i+1]).
    std::vector<uint32_t> req_start(n + 1, 0), user_start(n + 1, 0);
    for (const GDep& d : g[r].deps) ++req_start[d.of + 1], ++user_start[d.on + 1];
    for (size_t i = 0; i < n; ++i) req_start[i + 1] += req_start[i], user_start[i + 1] += user_start[i];
    std::vector<GDep> req(g[r].deps.size());
    std::vector<int32_t> users(g[r].deps.size());
    {
      std::vector<uint32_t> fill_req(req_start.begin(), req_start.end() - 1), fill_user(user_start.begin(), user_start.end() - 1);
      for (const GDep& d : g[r].deps) {
        req[fill_req[d.of]++] = d;
        users[fill_user[d.on]++] = d.of;
      }
    }
    g[r].deps = {};
    // Topological order of the requires graph. Among ready ops: sends, then
    // calcs, then recvs, each in file order, so a wait (the only blocking op)
    // comes as late as the graph allows and GOAL's parallel chains do not
    // deadlock once serialized into one program.
    std::vector<uint32_t> indeg(n, 0);
    std::vector<int32_t> step(n, 0);
    for (size_t i = 0; i < n; ++i) indeg[i] = req_start[i + 1] - req_start[i];
    using MinHeap = std::priority_queue<int32_t, std::vector<int32_t>, std::greater<int32_t>>;
    MinHeap ready[3];  // sends, calcs, recvs
    auto klass = [&](int32_t i) { return ops[i].kind == 's' ? 0 : ops[i].kind == 'c' ? 1 : 2; };
    for (size_t i = 0; i < n; ++i)
      if (!indeg[i]) ready[klass(static_cast<int32_t>(i))].push(static_cast<int32_t>(i));
    std::vector<uint8_t> flushed(n, 0), in_run(n, 0);
    std::vector<int32_t> pending_sends;  // puts issued since the last flush
    std::vector<int32_t> run;            // recvs of the trailing run of waits
    auto clear_run = [&] {
      for (int32_t q : run) in_run[q] = 0;
      run.clear();
    };
    size_t done = 0;
    Program& prog = s.programs[r];
    for (;;) {
      int k = 0;
      while (k < 3 && ready[k].empty()) ++k;
      if (k == 3) break;
      const int32_t i = ready[k].top();
      ready[k].pop();
      ++done;
      const GOp& op = ops[i];
      for (uint32_t j = req_start[i]; j < req_start[i + 1]; ++j)
        step[i] = std::max(step[i], step[req[j].on] + (ops[req[j].on].kind == 'r' ? 1 : 0));
      // "requires" a send = the send completed locally: its source is free, a flush.
      bool need_flush = false;
      for (uint32_t j = req_start[i]; j < req_start[i + 1]; ++j)
        if (!req[j].start_only && ops[req[j].on].kind == 's' && !flushed[req[j].on]) need_flush = true;
      if (need_flush) {
        Op f;
        f.kind = OpKind::Flush;
        f.step = step[i];
        prog.push_back(f);
        for (int32_t q : pending_sends) flushed[q] = 1;
        pending_sends.clear();
        clear_run();
      }
      Op o;
      o.step = step[i];
      if (op.kind == 's') {
        o.kind = OpKind::Put;
        o.peer = op.peer;
        o.rail = op.nic >= 0 ? op.nic : rails > 1 ? kStripe : 0;
        if (op.bytes) o.segs.push_back({{Region::Scratch, r, 0, op.bytes}, {Region::Scratch, op.peer, offset[r][i], op.bytes}});
        o.counter = {false, op.peer, match[r][i]};
        pending_sends.push_back(i);
      } else if (op.kind == 'r') {
        // A recv that requires a recv of the run of waits just before it must
        // not join that run: the exporter gives every wait of a run the same
        // front. A signal nobody counts ends the run and exports as nothing.
        bool after_run = false;
        for (uint32_t j = req_start[i]; j < req_start[i + 1]; ++j) after_run = after_run || in_run[req[j].on];
        if (after_run) {
          Op boundary;
          boundary.kind = OpKind::Signal;
          boundary.step = step[i];
          boundary.counter = {false, r, boundary_counter};
          prog.push_back(boundary);
          used_boundary = true;
          clear_run();
        }
        run.push_back(i);
        in_run[i] = 1;
        o.kind = OpKind::Wait;
        o.counter = {false, r, match[r][i]};
        o.value = 1;
      } else {
        o.kind = OpKind::Copy;  // calc 0: a copy of nothing, kept so the op count survives
        if (op.bytes) o.segs.push_back({{Region::Scratch, r, 0, op.bytes}, {Region::Scratch, r, op.bytes, op.bytes}});
      }
      if (o.kind != OpKind::Wait) clear_run();
      prog.push_back(o);
      for (uint32_t j = user_start[i]; j < user_start[i + 1]; ++j)
        if (--indeg[users[j]] == 0) ready[klass(users[j])].push(users[j]);
    }
    if (done < n)
      for (size_t i = 0; i < n; ++i)
        if (indeg[i]) fail(ops[i].first_dep_line ? ops[i].first_dep_line : ops[i].line, "dependency cycle in rank " + std::to_string(r));
    g[r].ops = {};
    match[r] = {};
    offset[r] = {};
  }
  if (used_boundary) ++s.rank_counters;
  return s;
}

Schedule from_goal(const std::string& text, int rails) {
  std::istringstream in(text);
  return read_goal(in, rails);
}

}  // namespace railcoll::sim
