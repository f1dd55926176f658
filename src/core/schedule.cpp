#include "core/schedule.hpp"

#include <algorithm>
#include <set>

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
  }
  return "?";
}

const char* dtype_name(DataType t) {
  switch (t) {
    case DataType::Byte: return "byte";
    case DataType::Int32: return "int32";
    case DataType::Int64: return "int64";
    case DataType::Float32: return "float";
    case DataType::Float64: return "double";
  }
  return "?";
}

const char* redop_name(ReduceOp o) {
  switch (o) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Min: return "min";
    case ReduceOp::Max: return "max";
  }
  return "?";
}

size_t dtype_size(DataType t) {
  switch (t) {
    case DataType::Byte: return 1;
    case DataType::Int32: case DataType::Float32: return 4;
    case DataType::Int64: case DataType::Float64: return 8;
  }
  return 1;
}

bool parse_dtype(const std::string& s, DataType* out) {
  for (DataType t : {DataType::Byte, DataType::Int32, DataType::Int64, DataType::Float32, DataType::Float64})
    if (s == dtype_name(t)) return *out = t, true;
  return false;
}

bool parse_redop(const std::string& s, ReduceOp* out) {
  for (ReduceOp o : {ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max})
    if (s == redop_name(o)) return *out = o, true;
  return false;
}

uint64_t Op::bytes() const {
  uint64_t b = 0;
  for (auto& s : segs) b += s.src.length;
  return b;
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
      if (op.kind == OpKind::Copy || op.kind == OpKind::Reduce) st.shm_bytes += op.bytes();
      if (op.kind == OpKind::Reduce) st.reduce_bytes += op.bytes();
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

uint64_t BlockLayout::cyclic_bytes(int first, int nblocks) const {
  int N = n();
  if (nblocks >= N) return total();
  int last = first + nblocks;
  if (last <= N) return range_bytes(first, last);
  return range_bytes(first, N) + range_bytes(0, last - N);
}

void collective_region_sizes(const std::string& collective, const BlockLayout& layout, int root,
                             std::vector<uint64_t>* send, std::vector<uint64_t>* recv) {
  const int N = layout.n();
  if (collective == "bcast") {
    send->assign(N, 0);
    recv->assign(N, layout.count[root]);
    (*send)[root] = layout.count[root];
    (*recv)[root] = 0;
  } else if (collective == "gather") {
    *send = layout.count;
    recv->assign(N, 0);
    (*recv)[root] = layout.total();
  } else if (collective == "allreduce") {
    *send = layout.count;
    *recv = layout.count;
  } else {
    *send = layout.count;
    recv->assign(N, layout.total());
  }
}

ScheduleBuilder::ScheduleBuilder(std::string collective, std::string algorithm, const Topology& topo,
                                 const BlockLayout& layout, const AlgoOptions& opts) {
  s_.collective = std::move(collective);
  s_.algorithm = std::move(algorithm);
  s_.topo = topo;
  s_.stripe_threshold = opts.stripe_threshold;
  s_.root = opts.root;
  s_.dtype = opts.dtype;
  s_.redop = opts.redop;
  int N = topo.nranks();
  collective_region_sizes(s_.collective, layout, opts.root, &s_.send_bytes, &s_.recv_bytes);
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
