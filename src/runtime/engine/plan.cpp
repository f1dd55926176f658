#include "runtime/engine/plan.hpp"

#include <algorithm>

#include "core/registry.hpp"

namespace railcoll::rt {

uint64_t fnv(const std::string& s, uint64_t h) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

bool memcpy_put(const Topology& t, int sender, const Op& op) {
  return op.kind == OpKind::Put && t.same_node(sender, op.peer) && !op.segs.empty() &&
         op.segs[0].dst.region == Region::Shared;
}

std::unique_ptr<Plan> make_plan(const Topology& t, int me, Collective collective, const std::string& algorithm,
                                const std::vector<uint64_t>& counts, const AlgoOptions& opts, const std::string& key) {
  auto p = std::make_unique<Plan>();
  p->sched = build_schedule(collective, algorithm, t, counts, opts);
  const AlgoSpec* spec = find_algorithm(collective, algorithm);
  p->in_place_ok = spec && spec->in_place_ok;
  p->sig = fnv(key);
  bool uniform = std::all_of(counts.begin(), counts.end(), [&](uint64_t c) { return c == counts[0]; });
  p->what = std::string(collective_name(collective)) + "/" + algorithm + " with " +
            (uniform && !counts.empty() ? std::to_string(counts[0]) + " B per rank" : "per-rank sizes");
  int node = t.node_of(me);
  p->node_increments.assign(std::max(1, p->sched.node_counters), 0);
  for (int r = 0; r < t.nranks(); ++r) {
    const auto& prog = p->sched.programs[r];
    for (size_t i = 0; i < prog.size(); ++i) {
      if (prog.kind(i) != OpKind::Put && prog.kind(i) != OpKind::Signal) continue;
      const Op op = prog[i];
      if (op.counter.on_node && op.counter.owner == node) ++p->node_increments[op.counter.index];
      if (r == me) continue;
      // A put arrives as Data, or, memcpy'd by a local sender, as a Notify when
      // it increments this rank's counter (a node counter it bumps itself).
      if (op.kind == OpKind::Put && op.peer == me && (!memcpy_put(t, r, op) || !op.counter.on_node))
        p->incoming[key_of(r, static_cast<int>(i))] = op;
      if (op.kind == OpKind::Signal) {
        const CounterRef& c = op.counter;
        bool to_me = c.on_node ? (c.owner == node && !t.same_node(r, me) && t.leader(node) == me) : (c.owner == me);
        if (to_me) p->incoming[key_of(r, static_cast<int>(i))] = op;
      }
    }
  }
  return p;
}

std::vector<std::pair<int, uint64_t>> put_parts(const Plan& p, const Topology& t, int sender, const Op& op) {
  if (t.same_node(sender, op.peer)) return {{0, op.bytes()}};
  return p.sched.rail_parts(op.rail, op.bytes());
}

const Op* match_frame(const Plan& p, const Topology& t, int me, const FrameHeader& h, int rail, std::string* why,
                      bool* mismatch) {
  *mismatch = false;
  if (h.call_sig != p.sig) {
    *mismatch = true;
    *why = "is in a different call than this rank (" + p.what +
           "): the ranks disagree on the collective, its algorithm or its sizes";
    return nullptr;
  }
  auto it = p.incoming.find(key_of(h.sender, h.op));
  if (it == p.incoming.end()) {
    *why = "op #" + std::to_string(h.op) + " of rank " + std::to_string(h.sender) + " is not a message to this rank in " +
           p.what;
    return nullptr;
  }
  const Op& op = it->second;
  bool data = h.type == static_cast<uint16_t>(Frame::Data);
  if (data != (op.kind == OpKind::Put && !memcpy_put(t, h.sender, op))) {
    *why = "frame type does not match the schedule";
    return nullptr;
  }
  if (!data) {
    if (h.length != 0) *why = "notify frame with a payload";
    return h.length == 0 ? &op : nullptr;
  }
  auto parts = put_parts(p, t, h.sender, op);
  bool local = t.same_node(h.sender, me);
  uint64_t off = 0;
  for (size_t i = 0; i < h.part && i < parts.size(); ++i) off += parts[i].second;
  if (h.total != op.bytes() || h.nparts != parts.size() || h.nparts > 64 || h.part >= parts.size() ||
      h.offset != off || h.length != parts[h.part].second || (local != (rail == -1)) ||
      (!local && parts[h.part].first != rail && !(h.flags & kFlagMoved))) {
    *why = "part " + std::to_string(h.part) + "/" + std::to_string(h.nparts) + " at offset " + std::to_string(h.offset) +
           " length " + std::to_string(h.length) + " of " + std::to_string(h.total) + " on rail " +
           std::to_string(rail) + " does not match the schedule (" + std::to_string(op.bytes()) + " bytes)";
    return nullptr;
  }
  return &op;
}

bool Arrivals::has(const FrameHeader& h) const {
  uint64_t k = key_of(h.sender, h.op);
  if (done_.count(k)) return true;
  auto it = parts_.find(k);
  return it != parts_.end() && (it->second & (1ull << (h.part & 63)));
}

bool Arrivals::add(const FrameHeader& h, bool* complete) {
  uint64_t k = key_of(h.sender, h.op);
  *complete = false;
  if (done_.count(k)) return false;
  int n = std::max<int>(1, h.nparts);
  uint64_t bit = 1ull << (h.part & 63);
  uint64_t& mask = parts_[k];
  if (mask & bit) return false;
  mask |= bit;
  if (__builtin_popcountll(mask) < n) return true;
  parts_.erase(k);
  done_.insert(k);
  *complete = true;
  return true;
}

}  // namespace railcoll::rt
