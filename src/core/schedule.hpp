// The schedule: the intermediate representation every algorithm emits and every
// executor (verifier, simulator, runtime) runs. See the architecture page (../shared/design/ARCHITECTURE.md), "Schedule".
//
// A schedule is one program per rank. Operations run in program order:
//   put    one-sided write of local spans into spans of another rank (or of its
//          node's shared buffer), then one increment of a counter on that side;
//          non-blocking: the program goes on at once (seed 000 §6.4 elan_doput)
//   copy   local memcpy between spans this rank can address (own regions, own
//          node's shared buffer)
//   reduce like copy, but combines: dst[i] = dst[i] (op) src[i], element-wise in
//          the schedule's data type (allreduce; the reduction operator of
//          seed 003 §2 and seed 004 §4)
//   reduce_before  dst[i] = src[i] (op) dst[i]: the source's ranks come first.
//          Alike for MPI's predefined operators, which commute; a
//          non-commutative operator (a user's) must combine in rank order, and
//          an algorithm that keeps that order says on which side each input goes
//   signal increment a counter (same node: a shared-memory flag; else a 0-byte put)
//   wait   block until a local counter reaches a value (the only blocking op)
//   flush  block until this rank's earlier puts no longer read their sources
//          (the papers' elan_wait on the source event)
// Every operation carries the algorithm's communication step (0-based).
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/collective.hpp"
#include "core/topology.hpp"

namespace railcoll {

enum class Region : uint8_t { Send, Recv, Scratch, Shared };
const char* region_name(Region r);

// A byte range of a region. owner is a rank for Send/Recv/Scratch, a node for Shared.
struct Span {
  Region region = Region::Send;
  int32_t owner = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
};

// A counter lives on a rank (private) or on a node (in its shared memory, every
// local rank may wait on it). Values only grow during one collective call.
struct CounterRef {
  bool on_node = false;
  int32_t owner = 0;  // rank or node
  int32_t index = 0;
  bool operator==(const CounterRef& o) const {
    return on_node == o.on_node && owner == o.owner && index == o.index;
  }
};

struct Segment {
  Span src;
  Span dst;
};

// The segments of a put or copy. Almost every one has a single segment, so one
// is kept inline and more go to the heap: a 4096-rank Direct all-gather has
// 16.8 million puts, and one allocation each dominated building it.
class SegList {
 public:
  SegList() = default;
  SegList(std::initializer_list<Segment> l) {
    for (const auto& sg : l) push_back(sg);
  }
  SegList(const std::vector<Segment>& v) {  // implicit: builders assemble vectors
    for (const auto& sg : v) push_back(sg);
  }
  SegList(const SegList& o) : one_(o.one_), size_(o.size_) {
    if (o.more_) more_ = std::make_unique<std::vector<Segment>>(*o.more_);
  }
  SegList(SegList&&) noexcept = default;
  SegList& operator=(const SegList& o) {
    if (this != &o) *this = SegList(o);
    return *this;
  }
  SegList& operator=(SegList&&) noexcept = default;

  void push_back(const Segment& sg) {
    if (size_ == 0) {
      one_ = sg;
    } else {
      if (!more_) more_ = std::make_unique<std::vector<Segment>>(1, one_);
      more_->push_back(sg);
    }
    ++size_;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Segment* begin() { return more_ ? more_->data() : &one_; }
  Segment* end() { return begin() + size_; }
  const Segment* begin() const { return more_ ? more_->data() : &one_; }
  const Segment* end() const { return begin() + size_; }
  Segment& operator[](size_t i) { return begin()[i]; }
  const Segment& operator[](size_t i) const { return begin()[i]; }
  Segment& back() { return begin()[size_ - 1]; }
  void clear() {
    more_.reset();
    size_ = 0;
  }

 private:
  Segment one_{};
  std::unique_ptr<std::vector<Segment>> more_;
  uint32_t size_ = 0;
};

constexpr int kStripe = -1;  // put.rail: split evenly over all rails

enum class OpKind : uint8_t { Put, Copy, Reduce, Signal, Wait, Flush, ReduceBefore };
const char* op_name(OpKind k);

// Network hardware a put may use instead of point-to-point messages (Quadrics,
// seed 004 §3; seed 003 §3). The verifier and the runtime treat such puts as
// ordinary puts; the simulator charges them as the hardware does:
//   Multicast  consecutive puts of one rank flagged so, with the same source, are
//              one injection replicated by the switches (hardware broadcast)
//   Combine    0-byte puts to one rank whose acknowledgements the switches combine
//              (the test-and-set of the hardware barrier): no per-message cost
//              at the receiver
enum class HwAssist : uint8_t { None, Multicast, Combine };

struct Op {
  OpKind kind = OpKind::Wait;
  int32_t step = 0;
  int32_t peer = -1;   // put: the rank that receives the message
  int32_t rail = 0;    // put: rail index or kStripe
  HwAssist hw = HwAssist::None;  // put: network hardware it relies on
  SegList segs;  // put, copy, reduce: one message / one memcpy batch
  CounterRef counter;  // put: notified; signal: incremented; wait: awaited
  uint64_t value = 0;  // wait: the value to reach
  uint64_t bytes() const;
};

// One rank's program. A 4096-rank Direct all-gather has 33.5 million
// operations, 3.7 GB as Op structs (112 bytes); so they are stored encoded,
// there 5 bytes a flush and 18 a put: fields at their defaults are left out,
// numbers take as few bytes as they need, and a segment's destination usually
// has the owner of the put's peer and the length of its source. An index of
// where each op begins makes op i one decode away. Reading gives Op values, not
// references into the program: to change ops, take ops(), edit them and build
// a Program of them.
class Program {
 public:
  class iterator;
  Program() = default;
  explicit Program(const std::vector<Op>& ops);

  size_t size() const { return start_.size(); }
  bool empty() const { return start_.empty(); }
  Op operator[](size_t i) const {
    Op op;
    decode(at(i), &op);
    return op;
  }
  Op back() const { return (*this)[size() - 1]; }
  // Without decoding the rest.
  OpKind kind(size_t i) const { return static_cast<OpKind>(bytes_[start_[i]]); }
  HwAssist hw(size_t i) const { return static_cast<HwAssist>(bytes_[start_[i] + 1]); }
  // Reading in order without the index: where op i begins (i = size(): the
  // end), and the op at such a place, which returns where the next one begins.
  // The simulator's ranks read so: an index lookup per op was a cache miss.
  const uint8_t* at(size_t i) const { return bytes_.data() + (i < start_.size() ? start_[i] : used_); }
  static const uint8_t* decode(const uint8_t* at, Op* op);
  static OpKind kind(const uint8_t* at) { return static_cast<OpKind>(*at); }
  void push_back(const Op& op);
  std::vector<Op> ops() const;
  iterator begin() const;
  iterator end() const;

 private:
  std::vector<uint8_t> bytes_;   // the encoded ops, then unused room
  size_t used_ = 0;              // bytes of bytes_ in use
  std::vector<uint32_t> start_;  // where op i begins in bytes_
};

// Yields the ops in order; the op it yields lives in the iterator (valid
// until the iterator moves on), so `for (const Op& op : program)` works.
class Program::iterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = Op;
  using difference_type = std::ptrdiff_t;
  using pointer = const Op*;
  using reference = const Op&;
  iterator(const Program* p, size_t i) : p_(p), i_(i) {}
  const Op& operator*() const {
    decode(p_->at(i_), &op_);
    return op_;
  }
  const Op* operator->() const { return &**this; }
  iterator& operator++() {
    ++i_;
    return *this;
  }
  bool operator==(const iterator& o) const { return i_ == o.i_; }
  bool operator!=(const iterator& o) const { return i_ != o.i_; }

 private:
  const Program* p_;
  size_t i_;
  mutable Op op_;
};

inline Program::iterator Program::begin() const { return {this, 0}; }
inline Program::iterator Program::end() const { return {this, size()}; }

// Totals of a schedule: what `railcoll show` prints under the programs.
struct ScheduleStats {
  int comm_steps = 0;          // distinct steps that contain a put
  int last_step = -1;          // highest step of any operation
  uint64_t messages = 0;       // puts (a striped put counts once)
  uint64_t max_messages_per_rank = 0;
  uint64_t net_bytes = 0;      // bytes of puts between nodes
  uint64_t shm_bytes = 0;      // bytes of puts inside a node plus copies and reduces
  uint64_t reduce_bytes = 0;   // bytes combined by reduce operations
  uint64_t max_net_bytes_sent_per_rank = 0;
  uint64_t max_net_bytes_recv_per_node = 0;
  std::vector<uint64_t> rail_bytes;  // per rail, over all ranks, after striping
  std::vector<uint64_t> max_rail_bytes_per_rank;  // per rail, the busiest rank
};

struct Schedule {
  Collective collective = Collective::Allgather;
  std::string algorithm;
  Topology topo;
  uint64_t stripe_threshold = 1024;
  int root = 0;                         // bcast, gather
  DataType dtype = DataType::Byte;      // allreduce
  ReduceOp redop = ReduceOp::Sum;       // allreduce
  uint32_t elem_bytes = 0;              // redop User: bytes of one element
  bool commutative = true;              // false: every combination must keep rank order
  std::vector<uint64_t> send_bytes;     // per rank
  std::vector<uint64_t> recv_bytes;     // per rank
  std::vector<uint64_t> scratch_bytes;  // per rank
  std::vector<uint64_t> shared_bytes;   // per node
  std::vector<uint64_t> pair_bytes;     // alltoall(v): n x n, row = source; else empty
  int rank_counters = 0;                // counters per rank
  int node_counters = 0;                // counters per node
  std::vector<Program> programs;         // per rank

  uint64_t region_size(Region r, int owner) const;
  // Bytes of one element of a reduction (a user operator's: elem_bytes).
  size_t element_size() const { return redop == ReduceOp::User ? elem_bytes : dtype_size(dtype); }
  ScheduleStats stats() const;
  // How a put of `length` bytes with `rail` is split: (rail, bytes) per part.
  std::vector<std::pair<int, uint64_t>> rail_parts(int rail, uint64_t length) const;
};

// Per-rank block sizes and offsets (all-gather: block r comes from rank r).
// Alltoall(v) adds a count per (source, destination) pair: each rank's send
// holds its blocks packed in destination order, each recv the blocks it gets
// packed in source order; `count` is then every rank's send total.
struct BlockLayout {
  explicit BlockLayout(std::vector<uint64_t> counts);
  // pairs: n x n (row = source), or n entries (rank s sends pairs[s] to every rank).
  static BlockLayout per_pair(int n, const std::vector<uint64_t>& pairs);
  int n() const { return static_cast<int>(count.size()); }
  bool has_pairs() const { return !pair_count.empty(); }
  uint64_t pair(int src, int dst) const { return pair_count[static_cast<size_t>(src) * n() + dst]; }
  // Where block src->dst lies in src's send and in dst's recv.
  uint64_t send_offset(int src, int dst) const { return send_displ[static_cast<size_t>(src) * n() + dst]; }
  uint64_t recv_offset(int dst, int src) const { return recv_displ[static_cast<size_t>(dst) * n() + src]; }
  uint64_t recv_total(int dst) const { return recv_sum[dst]; }
  // Bytes of blocks first..first+nblocks-1 taken cyclically (mod n).
  uint64_t cyclic_bytes(int first, int nblocks) const;
  uint64_t range_bytes(int first, int last_excl) const { return displ[last_excl] - displ[first]; }
  uint64_t total() const { return displ.back(); }
  std::vector<uint64_t> count;
  std::vector<uint64_t> displ;  // n+1 entries
  std::vector<uint64_t> pair_count, send_displ, recv_displ;  // n x n, per pair only
  std::vector<uint64_t> recv_sum;                            // per rank, per pair only
};

// Options an algorithm may take. 0 means "the algorithm's default".
// The call's own arguments (root, data type, operator) travel with them.
struct AlgoOptions {
  uint64_t stripe_threshold = 1024;
  int concurrency = 0;  // concurrent_exchange: C
  int root = 0;                     // bcast, gather
  DataType dtype = DataType::Byte;  // allreduce
  ReduceOp redop = ReduceOp::Sum;   // allreduce
  // A user operator (redop User): its element size, and whether it commutes;
  // a non-commutative one runs only on algorithms that keep rank order
  // (AlgoSpec::keeps_order).
  uint32_t elem_bytes = 0;
  bool commutative = true;
};
// The fields as one comparable value (what makes two calls' plans differ).
inline auto options_key(const AlgoOptions& o) {
  return std::make_tuple(o.stripe_threshold, o.concurrency, o.root, o.dtype, o.redop, o.elem_bytes, o.commutative);
}
// Bytes of one element of the call's reduction.
inline size_t element_size(const AlgoOptions& o) {
  return o.redop == ReduceOp::User ? o.elem_bytes : dtype_size(o.dtype);
}

// Helper that algorithms use to write programs.
class ScheduleBuilder {
 public:
  ScheduleBuilder(Collective collective, std::string algorithm, const Topology& topo,
                  const BlockLayout& layout, const AlgoOptions& opts);

  const Topology& topo() const { return s_.topo; }
  int rails() const { return s_.topo.rails(); }
  Collective collective() const { return s_.collective; }

  // Spans.
  Span send(int rank, uint64_t off, uint64_t len) const { return {Region::Send, rank, off, len}; }
  Span recv(int rank, uint64_t off, uint64_t len) const { return {Region::Recv, rank, off, len}; }
  Span scratch(int rank, uint64_t off, uint64_t len) const { return {Region::Scratch, rank, off, len}; }
  Span shared(int node, uint64_t off, uint64_t len) const { return {Region::Shared, node, off, len}; }
  CounterRef rank_counter(int rank, int index);
  CounterRef node_counter(int node, int index);

  void set_scratch(int rank, uint64_t bytes);
  void set_shared(int node, uint64_t bytes);

  // The rail policy of the papers (seed 000 §6.4): the j-th concurrent message of
  // a step goes on rail j mod k; above the threshold it is striped over all rails.
  int rail_for(uint64_t length, int port) const;

  // Segments come as a SegList: the usual single one needs no allocation.
  void put(int rank, int step, int peer, const SegList& segs, int rail, CounterRef notify,
           HwAssist hw = HwAssist::None);
  void copy(int rank, int step, const SegList& segs) { local_op(OpKind::Copy, rank, step, segs); }
  void reduce(int rank, int step, const SegList& segs) { local_op(OpKind::Reduce, rank, step, segs); }
  void reduce_before(int rank, int step, const SegList& segs) { local_op(OpKind::ReduceBefore, rank, step, segs); }
  // dst = dst (op) src when the source's ranks come after dst's, else src (op) dst.
  void combine(int rank, int step, const SegList& segs, bool src_first) {
    local_op(src_first ? OpKind::ReduceBefore : OpKind::Reduce, rank, step, segs);
  }
  void signal(int rank, int step, CounterRef c);
  void wait(int rank, int step, CounterRef c, uint64_t value);
  void flush(int rank, int step);

  Schedule finish() { return std::move(s_); }

 private:
  void local_op(OpKind kind, int rank, int step, const SegList& segs);
  Schedule s_;
};

}  // namespace railcoll
