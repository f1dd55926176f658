// GOAL export and import. The grammar follows LogGOPSim's txt2bin scanner
// (spcl/LogGOPSim src/LogGOPSim/txt2bin.re); docs/goal.md has the mapping.
#include "sim/goal.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "core/errors.hpp"

namespace railcoll::sim {

// ---------------------------------------------------------------- export ---

namespace {

using CounterKey = std::tuple<bool, int, int>;  // on_node, owner, index

// One increment of a counter: the put or signal (rank, op index) that made it.
struct Increment {
  int src = 0, op = 0;
  int direct = -1;             // rank its own message goes to (put peer, signal to another rank's counter)
  std::vector<int> consumers;  // ranks whose waits count it
};

// Runs every program with maximal progress (as the verifier does) to find
// which increments each wait counts. For a verified schedule the set is the
// same in every execution: exactly v increments can come before wait(c, v).
struct Trace {
  std::vector<Increment> incs;
  std::vector<std::vector<std::vector<int>>> counted;  // [rank][op] -> increments newly counted by that wait
  std::vector<std::vector<int>> inc_of;                // [rank][op] -> increment id of a put/signal, or -1
};

Trace trace(const Schedule& s) {
  int N = s.topo.nranks();
  Trace t;
  t.counted.resize(N);
  t.inc_of.resize(N);
  for (int r = 0; r < N; ++r) {
    t.counted[r].resize(s.programs[r].size());
    t.inc_of[r].assign(s.programs[r].size(), -1);
  }
  std::map<CounterKey, std::vector<int>> arrived;
  std::map<std::pair<int, CounterKey>, size_t> cursor;  // per waiter and counter: increments already counted
  std::vector<size_t> pc(N, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < N; ++r) {
      auto& prog = s.programs[r];
      while (pc[r] < prog.size()) {
        const Op& op = prog[pc[r]];
        int i = static_cast<int>(pc[r]);
        CounterKey key{op.counter.on_node, op.counter.owner, op.counter.index};
        if (op.kind == OpKind::Wait) {
          auto& got = arrived[key];
          if (got.size() < op.value) break;
          size_t& cur = cursor[{r, key}];
          for (; cur < op.value; ++cur) {
            t.counted[r][i].push_back(got[cur]);
            t.incs[got[cur]].consumers.push_back(r);
          }
        } else if (op.kind == OpKind::Put || op.kind == OpKind::Signal) {
          Increment inc;
          inc.src = r;
          inc.op = i;
          if (op.kind == OpKind::Put) inc.direct = op.peer;
          else if (!op.counter.on_node && op.counter.owner != r) inc.direct = op.counter.owner;
          t.inc_of[r][i] = static_cast<int>(t.incs.size());
          arrived[key].push_back(static_cast<int>(t.incs.size()));
          t.incs.push_back(inc);
        }
        ++pc[r];
        progress = true;
      }
    }
  }
  for (int r = 0; r < N; ++r)
    if (pc[r] < s.programs[r].size()) {
      const Op& op = s.programs[r][pc[r]];
      throw InputError("cannot export to GOAL: rank " + std::to_string(r) + " op #" + std::to_string(pc[r]) +
                       " waits for a counter that never reaches " + std::to_string(op.value));
    }
  return t;
}

// A GOAL message and the GOAL ops it becomes.
struct Msg {
  int src = 0, dst = 0;
  uint64_t bytes = 0;
  int nic = -1;  // rail, or -1: no nic attribute (striped, or a notification)
  int send_slot = -1, recv_slot = -1;
};

// One GOAL op of a rank: send/recv of a message, or calc.
struct Slot {
  char kind = 'c';  // 's', 'r', 'c'
  int msg = -1;
  uint64_t bytes = 0;
  std::vector<int> req;
};

std::string sizes_text(const std::vector<uint64_t>& v) {
  if (v.empty()) return "none";
  if (std::all_of(v.begin(), v.end(), [&](uint64_t x) { return x == v[0]; })) return std::to_string(v[0]) + " B per rank";
  std::string out;
  for (size_t i = 0; i < v.size() && i < 16; ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out + (v.size() > 16 ? ",... B" : " B");
}

}  // namespace

std::string to_goal(const Schedule& s) {
  int N = s.topo.nranks();
  bool multirail = s.topo.rails() > 1;
  Trace t = trace(s);

  // Messages: each increment's own message (a put's data, a signal to another
  // rank), then one 0-byte notification per other rank that counts it (a node
  // counter in shared memory is seen by every local rank; GOAL can only say
  // that with a message).
  std::vector<Msg> msgs;
  std::vector<int> direct_msg(t.incs.size(), -1);
  std::vector<std::map<int, int>> notify_msg(t.incs.size());  // consumer -> message
  for (size_t e = 0; e < t.incs.size(); ++e) {
    const Increment& inc = t.incs[e];
    const Op& op = s.programs[inc.src][inc.op];
    if (inc.direct >= 0) {
      Msg m;
      m.src = inc.src;
      m.dst = inc.direct;
      if (op.kind == OpKind::Put) {
        m.bytes = op.bytes();
        if (multirail && op.rail != kStripe) m.nic = op.rail;
      }
      direct_msg[e] = static_cast<int>(msgs.size());
      msgs.push_back(m);
    }
    std::set<int> others(inc.consumers.begin(), inc.consumers.end());
    for (int w : others)
      if (w != inc.direct && w != inc.src) {
        notify_msg[e][w] = static_cast<int>(msgs.size());
        msgs.push_back({inc.src, w, 0, -1, -1, -1});
      }
  }

  // Per rank, the GOAL ops in program order. `front` is what the next op must
  // require: the rank's latest blocking points (calc, the recvs of a wait, the
  // sends a flush waited for). Non-blocking sends do not enter it.
  std::vector<std::vector<Slot>> slots(N);
  std::vector<std::vector<int>> final_front(N);
  for (int r = 0; r < N; ++r) {
    std::vector<int> front, unflushed;
    // Consecutive waits block together (the rank goes on when all have passed,
    // whatever the arrival order), so the recvs of a run of waits all require
    // the front from before the run. This also makes export(import(x)) == x:
    // the importer turns one recv into one wait.
    bool in_run = false;
    std::vector<int> base, run_recvs, run_own;
    auto add = [&](Slot sl, const std::vector<int>& req) {
      sl.req = req;
      slots[r].push_back(sl);
      int id = static_cast<int>(slots[r].size()) - 1;
      if (sl.msg >= 0) (sl.kind == 's' ? msgs[sl.msg].send_slot : msgs[sl.msg].recv_slot) = id;
      return id;
    };
    for (size_t i = 0; i < s.programs[r].size(); ++i) {
      const Op& op = s.programs[r][i];
      if (op.kind != OpKind::Wait) in_run = false;
      switch (op.kind) {
        case OpKind::Put:
        case OpKind::Signal: {
          int e = t.inc_of[r][i];
          if (direct_msg[e] >= 0) unflushed.push_back(add({'s', direct_msg[e], 0, {}}, front));
          for (auto& [w, m] : notify_msg[e]) unflushed.push_back(add({'s', m, 0, {}}, front));
          break;
        }
        case OpKind::Copy:
        case OpKind::Reduce:  // both are local computation in GOAL (calc)
          front = {add({'c', -1, op.bytes(), {}}, front)};
          break;
        case OpKind::Wait: {
          if (!in_run) {
            in_run = true;
            base = front;
            run_recvs.clear();
            run_own.clear();
          }
          for (int e : t.counted[r][i]) {
            const Increment& inc = t.incs[e];
            if (inc.direct == r) run_recvs.push_back(add({'r', direct_msg[e], 0, {}}, base));
            else if (notify_msg[e].count(r)) run_recvs.push_back(add({'r', notify_msg[e][r], 0, {}}, base));
            else if (direct_msg[e] >= 0) run_own.push_back(msgs[direct_msg[e]].send_slot);  // own put counted by itself
          }
          front = run_recvs.empty() ? base : run_recvs;
          front.insert(front.end(), run_own.begin(), run_own.end());
          break;
        }
        case OpKind::Flush:
          front.insert(front.end(), unflushed.begin(), unflushed.end());
          unflushed.clear();
          break;
      }
      std::sort(front.begin(), front.end());
      front.erase(std::unique(front.begin(), front.end()), front.end());
    }
    final_front[r] = front;
  }
  // Messages no wait counts still need their recv (LogGOPSim matches every
  // send): at the end of the receiver, after everything else.
  for (size_t m = 0; m < msgs.size(); ++m)
    if (msgs[m].recv_slot < 0) {
      int d = msgs[m].dst;
      msgs[m].recv_slot = static_cast<int>(slots[d].size());
      slots[d].push_back({'r', static_cast<int>(m), 0, final_front[d]});
    }

  std::ostringstream out;
  out << "// railcoll " << collective_name(s.collective) << "/" << s.algorithm << ": " << s.topo.describe() << "\n"
      << "// send sizes: " << sizes_text(s.send_bytes) << "; recv sizes: " << sizes_text(s.recv_bytes) << "\n"
      << "// calc <n> is a local copy of n bytes (unit: bytes, not time); tag = label number of the send\n"
      << "num_ranks " << N << "\n";
  for (int r = 0; r < N; ++r) {
    out << "\nrank " << r << " {\n";
    for (size_t i = 0; i < slots[r].size(); ++i) {
      const Slot& sl = slots[r][i];
      out << "l" << i << ": ";
      if (sl.kind == 'c') {
        out << "calc " << sl.bytes;
      } else {
        const Msg& m = msgs[sl.msg];
        if (sl.kind == 's') out << "send " << m.bytes << "b to " << m.dst;
        else out << "recv " << m.bytes << "b from " << m.src;
        out << " tag " << m.send_slot;
        if (m.nic >= 0) out << " nic " << m.nic;
      }
      out << "\n";
      for (int q : sl.req) out << "l" << i << " requires l" << q << "\n";
    }
    out << "}\n";
  }
  return out.str();
}

// ---------------------------------------------------------------- import ---

namespace {

struct GOp {
  char kind = 'c';  // 's', 'r', 'c'
  uint64_t bytes = 0;
  int peer = -1;
  uint64_t tag = 0;
  int nic = -1;
  int line = 0;
  struct Dep {
    std::string label;
    bool start_only;  // irequires: may start once the other has started
    int line;
  };
  std::vector<Dep> deps;
  std::vector<std::pair<int, bool>> req;  // resolved: op index, start_only
};

struct GRank {
  bool seen = false;
  std::vector<GOp> ops;
  std::map<std::string, int> labels;
  std::vector<std::pair<std::string, GOp::Dep>> deps;  // label -> dependency
};

[[noreturn]] void fail(int line, const std::string& what) {
  throw InputError("GOAL line " + std::to_string(line) + ": " + what);
}

// Comments (// and /* */) become blanks so line numbers stay right.
std::string strip_comments(const std::string& text) {
  std::string out = text;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out.compare(i, 2, "//") == 0) {
      while (i < out.size() && out[i] != '\n') out[i++] = ' ';
    } else if (out.compare(i, 2, "/*") == 0) {
      size_t end = out.find("*/", i + 2);
      size_t stop = end == std::string::npos ? out.size() : end + 2;
      for (; i < stop; ++i)
        if (out[i] != '\n') out[i] = ' ';
      --i;
    }
  }
  return out;
}

std::vector<std::string> tokens_of(const std::string& line) {
  std::vector<std::string> tok;
  std::string cur;
  for (char c : line) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == '{' || c == '}' || c == ':') {
      if (!cur.empty()) tok.push_back(cur);
      cur.clear();
      if (c == '{' || c == '}' || c == ':') tok.push_back(std::string(1, c));
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) tok.push_back(cur);
  return tok;
}

uint64_t number(const std::string& t, int line, const std::string& what) {
  if (t.empty() || t.size() > 19 || !std::all_of(t.begin(), t.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    fail(line, "expected " + what + ", found '" + t + "'");
  return std::stoull(t);
}

bool is_ident(const std::string& t) {
  return !t.empty() && std::isalpha(static_cast<unsigned char>(t[0])) &&
         std::all_of(t.begin(), t.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// Parses the text into per-rank op lists with resolved dependencies.
std::vector<GRank> parse(const std::string& text, int& nranks) {
  std::vector<GRank> ranks;
  nranks = -1;
  int cur = -1, line_no = 0, open_line = 0;
  std::istringstream in(strip_comments(text));
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    auto tok = tokens_of(line);
    size_t p = 0;
    auto next = [&](const std::string& what) -> const std::string& {
      if (p >= tok.size()) fail(line_no, "expected " + what + " before the end of the line");
      return tok[p++];
    };
    while (p < tok.size()) {
      const std::string& t = tok[p++];
      if (t == "num_ranks") {
        if (nranks >= 0) fail(line_no, "num_ranks given twice");
        uint64_t n = number(next("a number of ranks"), line_no, "a number of ranks");
        if (n < 1 || n > (1u << 20)) fail(line_no, "num_ranks must be 1.." + std::to_string(1u << 20));
        nranks = static_cast<int>(n);
        ranks.resize(nranks);
      } else if (t == "rank") {
        if (nranks < 0) fail(line_no, "rank block before num_ranks");
        if (cur >= 0) fail(line_no, "rank block inside rank " + std::to_string(cur) + " (missing '}')");
        uint64_t r = number(next("a rank"), line_no, "a rank");
        if (r >= static_cast<uint64_t>(nranks)) fail(line_no, "rank " + std::to_string(r) + " but num_ranks is " + std::to_string(nranks));
        if (next("'{'") != "{") fail(line_no, "expected '{' after rank " + std::to_string(r));
        if (ranks[r].seen) fail(line_no, "rank " + std::to_string(r) + " defined twice");
        ranks[r].seen = true;
        cur = static_cast<int>(r);
        open_line = line_no;
      } else if (t == "}") {
        if (cur < 0) fail(line_no, "'}' outside a rank block");
        // Dependencies may name labels defined later in the block.
        GRank& g = ranks[cur];
        for (auto& [label, d] : g.deps) {
          auto a = g.labels.find(label), b = g.labels.find(d.label);
          if (a == g.labels.end()) fail(d.line, "unknown label '" + label + "'");
          if (b == g.labels.end()) fail(d.line, "unknown label '" + d.label + "'");
          g.ops[a->second].req.push_back({b->second, d.start_only});
          g.ops[a->second].deps.push_back(d);
        }
        cur = -1;
      } else {
        if (cur < 0) fail(line_no, "'" + t + "' outside a rank block");
        GRank& g = ranks[cur];
        std::string label, kw = t;
        if (is_ident(t) && t != "send" && t != "recv" && t != "calc" && p < tok.size()) {
          if (tok[p] == "requires" || tok[p] == "irequires") {
            bool start_only = tok[p++] == "irequires";
            const std::string& other = next("a label");
            if (!is_ident(other)) fail(line_no, "expected a label, found '" + other + "'");
            g.deps.push_back({t, {other, start_only, line_no}});
            continue;
          }
          if (tok[p] == ":") {
            ++p;
            label = t;
            kw = next("send, recv or calc");
          }
        }
        GOp op;
        op.line = line_no;
        if (kw == "send" || kw == "recv") {
          op.kind = kw[0];
          // "8b" or "8 b"
          std::string size = next("a size");
          if (size.size() > 1 && size.back() == 'b') size.pop_back();
          else if (next("'b'") != "b") fail(line_no, "expected 'b' after the size");
          op.bytes = number(size, line_no, "a size in bytes");
          if (next(kw == "send" ? "'to'" : "'from'") != (kw == "send" ? "to" : "from"))
            fail(line_no, std::string("expected '") + (kw == "send" ? "to" : "from") + "'");
          const std::string& peer = next("a rank");
          if (peer == "-1") fail(line_no, "recv from any source (-1) is not supported");
          uint64_t pr = number(peer, line_no, "a rank");
          if (pr >= static_cast<uint64_t>(nranks)) fail(line_no, "peer " + peer + " but num_ranks is " + std::to_string(nranks));
          op.peer = static_cast<int>(pr);
        } else if (kw == "calc") {
          op.bytes = number(next("a calc size"), line_no, "a calc size");
        } else {
          fail(line_no, "unknown operation '" + kw + "' (expected send, recv, calc, requires or irequires)");
        }
        // Optional attributes up to the end of the line.
        while (p < tok.size() && tok[p] != "}") {
          const std::string& a = tok[p++];
          const std::string& v = next("a number after '" + a + "'");
          if (a == "tag" && op.kind != 'c') {
            if (v == "-1") fail(line_no, "any tag (-1) is not supported");
            op.tag = number(v, line_no, "a tag");
          } else if (a == "cpu") {
            number(v, line_no, "a cpu");  // one process per rank: cpu is ignored
          } else if (a == "nic" && op.kind != 'c') {
            op.nic = static_cast<int>(std::min<uint64_t>(number(v, line_no, "a nic"), 1 << 20));
          } else {
            fail(line_no, "unexpected '" + a + "'");
          }
        }
        if (!label.empty() && !g.labels.emplace(label, static_cast<int>(g.ops.size())).second)
          fail(line_no, "label '" + label + "' used twice in rank " + std::to_string(cur));
        g.ops.push_back(op);
      }
    }
  }
  if (cur >= 0) fail(open_line, "rank " + std::to_string(cur) + " block is not closed");
  if (nranks < 0) fail(line_no, "missing num_ranks");
  return ranks;
}

}  // namespace

Schedule from_goal(const std::string& text, int rails) {
  if (rails < 1 || rails > 64) throw InputError("GOAL import: rails must be 1..64");
  int N = 0;
  std::vector<GRank> g = parse(text, N);

  // Match sends and recvs: the k-th send s->d with tag t pairs with the k-th
  // recv on d from s with tag t (MPI's non-overtaking order, file order here).
  std::map<std::tuple<int, int, uint64_t>, std::vector<int>> sends;  // (src, dst, tag) -> op indices
  for (int r = 0; r < N; ++r)
    for (size_t i = 0; i < g[r].ops.size(); ++i)
      if (g[r].ops[i].kind == 's') sends[{r, g[r].ops[i].peer, g[r].ops[i].tag}].push_back(static_cast<int>(i));
  std::map<std::tuple<int, int, uint64_t>, size_t> taken;
  std::vector<std::vector<int>> match(N);  // [rank][op]: send -> counter index on dst; recv -> counter index here
  std::vector<std::vector<uint64_t>> offset(N);
  std::vector<uint64_t> incoming(N, 0), scratch(N, 0);
  std::vector<int> counters(N, 0);
  for (int r = 0; r < N; ++r) {
    match[r].assign(g[r].ops.size(), -1);
    offset[r].assign(g[r].ops.size(), 0);
  }
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
      auto key = std::make_tuple(op.peer, r, op.tag);
      auto& list = sends[key];
      size_t& k = taken[key];
      if (k >= list.size())
        fail(op.line, "recv from " + std::to_string(op.peer) + " tag " + std::to_string(op.tag) + " has no matching send");
      int si = list[k++];
      if (g[op.peer].ops[si].bytes != op.bytes)
        fail(op.line, "recv of " + std::to_string(op.bytes) + " bytes matches a send of " +
                          std::to_string(g[op.peer].ops[si].bytes) + " (line " + std::to_string(g[op.peer].ops[si].line) + ")");
      place(op.peer, si);
      match[r][i] = match[op.peer][si];
    }
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
    size_t n = ops.size();
    // Topological order of the requires graph. Among ready ops: sends, then
    // calcs, then recvs, each in file order, so a wait (the only blocking op)
    // comes as late as the graph allows and GOAL's parallel chains do not
    // deadlock once serialized into one program.
    std::vector<int> indeg(n, 0), step(n, 0);
    std::vector<std::vector<int>> users(n);
    for (size_t i = 0; i < n; ++i)
      for (auto& [d, start_only] : ops[i].req) {
        ++indeg[i];
        users[d].push_back(static_cast<int>(i));
      }
    auto rank_of = [&](int i) { return ops[i].kind == 's' ? 0 : ops[i].kind == 'c' ? 1 : 2; };
    std::set<std::pair<int, int>> ready;
    for (size_t i = 0; i < n; ++i)
      if (!indeg[i]) ready.insert({rank_of(static_cast<int>(i)), static_cast<int>(i)});
    std::vector<bool> flushed(n, false);
    std::vector<int> pending_sends;  // puts issued since the last flush
    std::set<int> run;               // recvs of the trailing run of waits
    size_t done = 0;
    while (!ready.empty()) {
      int i = ready.begin()->second;
      ready.erase(ready.begin());
      ++done;
      const GOp& op = ops[i];
      for (auto& [d, start_only] : op.req) step[i] = std::max(step[i], step[d] + (ops[d].kind == 'r' ? 1 : 0));
      // "requires" a send = the send completed locally: its source is free, a flush.
      bool need_flush = false;
      for (auto& [d, start_only] : op.req)
        if (!start_only && ops[d].kind == 's' && !flushed[d]) need_flush = true;
      if (need_flush) {
        Op f;
        f.kind = OpKind::Flush;
        f.step = step[i];
        s.programs[r].push_back(f);
        for (int q : pending_sends) flushed[q] = true;
        pending_sends.clear();
        run.clear();
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
        for (auto& [d, start_only] : op.req) after_run = after_run || run.count(d);
        if (after_run) {
          Op boundary;
          boundary.kind = OpKind::Signal;
          boundary.step = step[i];
          boundary.counter = {false, r, boundary_counter};
          s.programs[r].push_back(boundary);
          used_boundary = true;
          run.clear();
        }
        run.insert(i);
        o.kind = OpKind::Wait;
        o.counter = {false, r, match[r][i]};
        o.value = 1;
      } else {
        o.kind = OpKind::Copy;  // calc 0: a copy of nothing, kept so the op count survives
        if (op.bytes) o.segs.push_back({{Region::Scratch, r, 0, op.bytes}, {Region::Scratch, r, op.bytes, op.bytes}});
      }
      if (o.kind != OpKind::Wait) run.clear();
      s.programs[r].push_back(o);
      for (int u : users[i])
        if (--indeg[u] == 0) ready.insert({rank_of(u), u});
    }
    if (done < n)
      for (size_t i = 0; i < n; ++i)
        if (indeg[i]) fail(ops[i].deps.empty() ? ops[i].line : ops[i].deps[0].line, "dependency cycle in rank " + std::to_string(r));
  }
  if (used_boundary) ++s.rank_counters;
  return s;
}

}  // namespace railcoll::sim
