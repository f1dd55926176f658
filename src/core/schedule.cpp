#include "core/schedule.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace railcoll {

const char* region_name(Region r) {
  switch (r) {
    case Region::Send: return "send";
    case Region::Recv: return "recv";
    case Region::Scratch: return "scratch";
    case Region::Shared: return "shared";
  }
  return "?";
}

const char* op_name(OpKind k) {
  switch (k) {
    case OpKind::Put: return "put";
    case OpKind::Copy: return "copy";
    case OpKind::Reduce: return "reduce";
    case OpKind::Signal: return "signal";
    case OpKind::Wait: return "wait";
    case OpKind::Flush: return "flush";
    case OpKind::ReduceBefore: return "reduce_before";
  }
  return "?";
}

uint64_t Op::bytes() const {
  uint64_t b = 0;
  for (auto& s : segs) b += s.src.length;
  return b;
}

// ---- Program: the encoding of one op (schedule.hpp). Bytes: kind, hw, which
// fields follow (kHas*), then those fields as LEB128 numbers (signed ones
// zigzag-coded). A segment starts with its own flags (kSeg*).
namespace {

enum : uint8_t { kHasStep = 1, kHasPeer = 2, kHasRail = 4, kHasCounter = 8, kHasValue = 16, kHasSegs = 32 };
enum : uint8_t { kCounterOnNode = 1, kCounterAtPeer = 2 };
// Destination owner = the put's peer / the source's owner; destination length =
// the source's; both regions < 4, kept in the flags' upper nibble.
enum : uint8_t { kSegDstAtPeer = 1, kSegDstAtSrc = 2, kSegSameLength = 4, kSegRegionsPacked = 8 };

// Writers append at p and return the new end; an op is written into room for
// the longest it can be: kMaxOpBytes, plus kMaxSegBytes per segment.
constexpr size_t kMaxOpBytes = 3 + 3 * 5 + 1 + 2 * 5 + 10 + 10, kMaxSegBytes = 3 + 2 * 5 + 4 * 10;

// Most numbers of a schedule take one or two bytes: those without a loop.
inline uint8_t* put_uint(uint8_t* p, uint64_t v) {
  if (v < 0x80) {
    *p = static_cast<uint8_t>(v);
    return p + 1;
  }
  if (v < 0x4000) {
    p[0] = static_cast<uint8_t>(v | 0x80);
    p[1] = static_cast<uint8_t>(v >> 7);
    return p + 2;
  }
  for (; v >= 0x80; v >>= 7) *p++ = static_cast<uint8_t>(v | 0x80);
  *p++ = static_cast<uint8_t>(v);
  return p;
}
inline uint8_t* put_int(uint8_t* p, int32_t v) {
  return put_uint(p, (static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31));
}
inline uint64_t get_uint(const uint8_t*& p) {
  if (p[0] < 0x80) return *p++;
  if (p[1] < 0x80) {
    uint64_t v = (p[0] & 0x7f) | static_cast<uint64_t>(p[1]) << 7;
    p += 2;
    return v;
  }
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    uint8_t c = *p++;
    v |= static_cast<uint64_t>(c & 0x7f) << shift;
    if (!(c & 0x80)) return v;
  }
}
inline int32_t get_int(const uint8_t*& p) {
  uint32_t u = static_cast<uint32_t>(get_uint(p));
  return static_cast<int32_t>((u >> 1) ^ (0u - (u & 1)));
}

}  // namespace

Program::Program(const std::vector<Op>& ops) {
  for (const Op& op : ops) push_back(op);
}

void Program::push_back(const Op& op) {
  if (used_ > UINT32_MAX) throw std::length_error("a rank's program is over 4 GiB encoded");
  start_.push_back(static_cast<uint32_t>(used_));
  // bytes_ grows by doubling, in bulk, so that an op is written in place.
  const size_t room = kMaxOpBytes + kMaxSegBytes * op.segs.size();
  if (bytes_.size() - used_ < room) bytes_.resize(std::max(2 * bytes_.size(), used_ + room));
  uint8_t* const begin = bytes_.data() + used_;
  uint8_t* p = begin;
  const CounterRef& c = op.counter;
  const bool counter = c.on_node || c.owner != 0 || c.index != 0;
  const uint8_t has = (op.step ? kHasStep : 0) | (op.peer != -1 ? kHasPeer : 0) | (op.rail ? kHasRail : 0) |
                      (counter ? kHasCounter : 0) | (op.value ? kHasValue : 0) | (op.segs.empty() ? 0 : kHasSegs);
  *p++ = static_cast<uint8_t>(op.kind);
  *p++ = static_cast<uint8_t>(op.hw);
  *p++ = has;
  if (has & kHasStep) p = put_int(p, op.step);
  if (has & kHasPeer) p = put_int(p, op.peer);
  if (has & kHasRail) p = put_int(p, op.rail);
  if (has & kHasCounter) {
    const bool at_peer = c.owner == op.peer;
    *p++ = (c.on_node ? kCounterOnNode : 0) | (at_peer ? kCounterAtPeer : 0);
    if (!at_peer) p = put_int(p, c.owner);
    p = put_int(p, c.index);
  }
  if (has & kHasValue) p = put_uint(p, op.value);
  if (has & kHasSegs) p = put_uint(p, op.segs.size());
  for (const Segment& sg : op.segs) {
    const auto src_region = static_cast<uint8_t>(sg.src.region), dst_region = static_cast<uint8_t>(sg.dst.region);
    const bool packed = src_region < 4 && dst_region < 4;
    const uint8_t dst_owner = sg.dst.owner == op.peer ? kSegDstAtPeer : sg.dst.owner == sg.src.owner ? kSegDstAtSrc : 0;
    *p++ = dst_owner | (sg.dst.length == sg.src.length ? kSegSameLength : 0) |
           (packed ? kSegRegionsPacked | src_region << 4 | dst_region << 6 : 0);
    if (!packed) {
      *p++ = src_region;
      *p++ = dst_region;
    }
    p = put_int(p, sg.src.owner);
    p = put_uint(p, sg.src.offset);
    p = put_uint(p, sg.src.length);
    if (!dst_owner) p = put_int(p, sg.dst.owner);
    p = put_uint(p, sg.dst.offset);
    if (sg.dst.length != sg.src.length) p = put_uint(p, sg.dst.length);
  }
  used_ += p - begin;
}

const uint8_t* Program::decode(const uint8_t* p, Op* op) {
  op->kind = static_cast<OpKind>(p[0]);
  op->hw = static_cast<HwAssist>(p[1]);
  const uint8_t has = p[2];
  p += 3;
  op->step = has & kHasStep ? get_int(p) : 0;
  op->peer = has & kHasPeer ? get_int(p) : -1;
  op->rail = has & kHasRail ? get_int(p) : 0;
  op->counter = {};
  if (has & kHasCounter) {
    const uint8_t f = *p++;
    op->counter.on_node = f & kCounterOnNode;
    op->counter.owner = f & kCounterAtPeer ? op->peer : get_int(p);
    op->counter.index = get_int(p);
  }
  op->value = has & kHasValue ? get_uint(p) : 0;
  op->segs.clear();
  if (!(has & kHasSegs)) return p;
  for (uint64_t n = get_uint(p); n > 0; --n) {
    Segment sg;
    const uint8_t f = *p++;
    sg.src.region = static_cast<Region>(f & kSegRegionsPacked ? (f >> 4) & 3 : *p++);
    sg.dst.region = static_cast<Region>(f & kSegRegionsPacked ? f >> 6 : *p++);
    sg.src.owner = get_int(p);
    sg.src.offset = get_uint(p);
    sg.src.length = get_uint(p);
    sg.dst.owner = f & kSegDstAtPeer ? op->peer : f & kSegDstAtSrc ? sg.src.owner : get_int(p);
    sg.dst.offset = get_uint(p);
    sg.dst.length = f & kSegSameLength ? sg.src.length : get_uint(p);
    op->segs.push_back(sg);
  }
  return p;
}

std::vector<Op> Program::ops() const {
  return std::vector<Op>(begin(), end());
}

uint64_t Schedule::region_size(Region r, int owner) const {
  switch (r) {
    case Region::Send: return send_bytes[owner];
    case Region::Recv: return recv_bytes[owner];
    case Region::Scratch: return scratch_bytes[owner];
    case Region::Shared: return shared_bytes[owner];
  }
  return 0;
}

std::vector<std::pair<int, uint64_t>> Schedule::rail_parts(int rail, uint64_t length) const {
  int k = topo.rails();
  if (rail != kStripe || k == 1) return {{rail == kStripe ? 0 : rail, length}};
  // Even striping (seed 000 §5): k parts, the first length%k one byte longer.
  std::vector<std::pair<int, uint64_t>> parts;
  for (int i = 0; i < k; ++i) parts.push_back({i, length / k + (static_cast<uint64_t>(i) < length % k)});
  return parts;
}

ScheduleStats Schedule::stats() const {
  ScheduleStats st;
  int k = topo.rails();
  st.rail_bytes.assign(k, 0);
  st.max_rail_bytes_per_rank.assign(k, 0);
  std::set<int> put_steps;
  std::vector<uint64_t> node_recv(topo.nnodes(), 0);
  for (int r = 0; r < topo.nranks(); ++r) {
    uint64_t msgs = 0, net = 0;
    std::vector<uint64_t> rail(k, 0);
    for (const Op& op : programs[r]) {
      st.last_step = std::max(st.last_step, op.step);
      const bool reduces = op.kind == OpKind::Reduce || op.kind == OpKind::ReduceBefore;
      if (op.kind == OpKind::Copy || reduces) st.shm_bytes += op.bytes();
      if (reduces) st.reduce_bytes += op.bytes();
      if (op.kind != OpKind::Put) continue;
      put_steps.insert(op.step);
      ++msgs;
      uint64_t b = op.bytes();
      if (topo.same_node(r, op.peer)) {
        st.shm_bytes += b;
        continue;
      }
      net += b;
      node_recv[topo.node_of(op.peer)] += b;
      for (auto& p : rail_parts(op.rail, b)) rail[p.first] += p.second;
    }
    st.messages += msgs;
    st.max_messages_per_rank = std::max(st.max_messages_per_rank, msgs);
    st.net_bytes += net;
    st.max_net_bytes_sent_per_rank = std::max(st.max_net_bytes_sent_per_rank, net);
    for (int i = 0; i < k; ++i) {
      st.rail_bytes[i] += rail[i];
      st.max_rail_bytes_per_rank[i] = std::max(st.max_rail_bytes_per_rank[i], rail[i]);
    }
  }
  for (uint64_t b : node_recv) st.max_net_bytes_recv_per_node = std::max(st.max_net_bytes_recv_per_node, b);
  st.comm_steps = static_cast<int>(put_steps.size());
  return st;
}

BlockLayout::BlockLayout(std::vector<uint64_t> counts) : count(std::move(counts)) {
  displ.assign(count.size() + 1, 0);
  for (size_t i = 0; i < count.size(); ++i) displ[i + 1] = displ[i] + count[i];
}

BlockLayout BlockLayout::per_pair(int n, const std::vector<uint64_t>& pairs) {
  const size_t N = n;
  std::vector<uint64_t> full = pairs;
  if (pairs.size() == N) {  // one count per source: the same to every destination
    full.resize(N * N);
    for (size_t s = 0; s < N; ++s)
      for (size_t d = 0; d < N; ++d) full[s * N + d] = pairs[s];
  }
  std::vector<uint64_t> row(N, 0);
  for (size_t s = 0; s < N; ++s)
    for (size_t d = 0; d < N; ++d) row[s] += full[s * N + d];
  BlockLayout L(row);
  L.pair_count = std::move(full);
  L.send_displ.assign(N * N, 0);
  L.recv_displ.assign(N * N, 0);
  L.recv_sum.assign(N, 0);
  for (size_t s = 0; s < N; ++s)
    for (size_t d = 0, at = 0; d < N; ++d) L.send_displ[s * N + d] = at, at += L.pair_count[s * N + d];
  for (size_t d = 0; d < N; ++d)
    for (size_t s = 0; s < N; ++s) L.recv_displ[d * N + s] = L.recv_sum[d], L.recv_sum[d] += L.pair_count[s * N + d];
  return L;
}

uint64_t BlockLayout::cyclic_bytes(int first, int nblocks) const {
  int N = n();
  if (nblocks >= N) return total();
  int last = first + nblocks;
  if (last <= N) return range_bytes(first, last);
  return range_bytes(first, N) + range_bytes(0, last - N);
}

ScheduleBuilder::ScheduleBuilder(Collective collective, std::string algorithm, const Topology& topo,
                                 const BlockLayout& layout, const AlgoOptions& opts) {
  s_.collective = collective;
  s_.algorithm = std::move(algorithm);
  s_.topo = topo;
  s_.stripe_threshold = opts.stripe_threshold;
  s_.root = opts.root;
  s_.dtype = opts.dtype;
  s_.redop = opts.redop;
  s_.elem_bytes = opts.redop == ReduceOp::User ? opts.elem_bytes : 0;
  s_.commutative = opts.redop != ReduceOp::User || opts.commutative;
  int N = topo.nranks();
  traits(collective).region_sizes(layout, opts.root, &s_.send_bytes, &s_.recv_bytes);
  s_.pair_bytes = layout.pair_count;
  s_.scratch_bytes.assign(N, 0);
  s_.shared_bytes.assign(topo.nnodes(), 0);
  s_.programs.assign(N, {});
}

CounterRef ScheduleBuilder::rank_counter(int rank, int index) {
  s_.rank_counters = std::max(s_.rank_counters, index + 1);
  return {false, rank, index};
}

CounterRef ScheduleBuilder::node_counter(int node, int index) {
  s_.node_counters = std::max(s_.node_counters, index + 1);
  return {true, node, index};
}

void ScheduleBuilder::set_scratch(int rank, uint64_t bytes) { s_.scratch_bytes[rank] = bytes; }
void ScheduleBuilder::set_shared(int node, uint64_t bytes) { s_.shared_bytes[node] = bytes; }

int ScheduleBuilder::rail_for(uint64_t length, int port) const {
  int k = rails();
  if (k > 1 && length > s_.stripe_threshold) return kStripe;
  return port % k;
}

namespace {
bool contiguous(const Span& a, const Span& b) {
  return a.region == b.region && a.owner == b.owner && a.offset + a.length == b.offset;
}
// Drops empty segments and merges a segment into the previous one when both its
// source and its destination continue the previous ones.
SegList normalize(const SegList& segs) {
  if (segs.size() == 1 && segs[0].src.length) return segs;  // the usual case, as it is
  SegList out;
  for (auto& sg : segs) {
    if (sg.src.length == 0) continue;
    if (!out.empty() && contiguous(out.back().src, sg.src) && contiguous(out.back().dst, sg.dst)) {
      out.back().src.length += sg.src.length;
      out.back().dst.length += sg.dst.length;
    } else {
      out.push_back(sg);
    }
  }
  return out;
}
}  // namespace

void ScheduleBuilder::put(int rank, int step, int peer, const SegList& segs, int rail,
                          CounterRef notify, HwAssist hw) {
  Op op;
  op.kind = OpKind::Put;
  op.hw = hw;
  op.step = step;
  op.peer = peer;
  op.rail = rail;
  op.segs = normalize(segs);
  op.counter = notify;
  s_.programs[rank].push_back(std::move(op));
}

void ScheduleBuilder::local_op(OpKind kind, int rank, int step, const SegList& segs) {
  Op op;
  op.segs = normalize(segs);
  if (op.segs.empty()) return;
  op.kind = kind;
  op.step = step;
  s_.programs[rank].push_back(std::move(op));
}


void ScheduleBuilder::signal(int rank, int step, CounterRef c) {
  Op op;
  op.kind = OpKind::Signal;
  op.step = step;
  op.counter = c;
  s_.programs[rank].push_back(op);
}

void ScheduleBuilder::wait(int rank, int step, CounterRef c, uint64_t value) {
  if (value == 0) return;
  Op op;
  op.kind = OpKind::Wait;
  op.step = step;
  op.counter = c;
  op.value = value;
  s_.programs[rank].push_back(op);
}

void ScheduleBuilder::flush(int rank, int step) {
  Op op;
  op.kind = OpKind::Flush;
  op.step = step;
  s_.programs[rank].push_back(op);
}

}  // namespace railcoll
