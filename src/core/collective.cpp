#include "core/collective.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <cstring>

#include "core/errors.hpp"
#include "core/reduce_ops.hpp"
#include "core/schedule.hpp"

namespace railcoll {

namespace {
constexpr DataType kTypes[] = {DataType::Int8,  DataType::UInt8,  DataType::Int16,   DataType::UInt16,
                               DataType::Int32, DataType::UInt32, DataType::Int64,   DataType::UInt64,
                               DataType::Float16, DataType::BFloat16, DataType::Float32, DataType::Float64,
                               DataType::FloatInt, DataType::DoubleInt, DataType::LongInt, DataType::TwoInt,
                               DataType::ShortInt};
constexpr ReduceOp kOps[] = {ReduceOp::Sum,  ReduceOp::Min, ReduceOp::Max,  ReduceOp::Prod, ReduceOp::BAnd,
                             ReduceOp::BOr,  ReduceOp::BXor, ReduceOp::LAnd, ReduceOp::LOr,  ReduceOp::LXor,
                             ReduceOp::MinLoc, ReduceOp::MaxLoc};
}  // namespace

const char* dtype_name(DataType t) {
  switch (t) {
    case DataType::Byte: return "byte";
    case DataType::Int32: return "int32";
    case DataType::Int64: return "int64";
    case DataType::Float32: return "float";
    case DataType::Float64: return "double";
    case DataType::Int8: return "int8";
    case DataType::UInt8: return "uint8";
    case DataType::Int16: return "int16";
    case DataType::UInt16: return "uint16";
    case DataType::UInt32: return "uint32";
    case DataType::UInt64: return "uint64";
    case DataType::Float16: return "float16";
    case DataType::BFloat16: return "bfloat16";
    case DataType::FloatInt: return "float_int";
    case DataType::DoubleInt: return "double_int";
    case DataType::LongInt: return "long_int";
    case DataType::TwoInt: return "2int";
    case DataType::ShortInt: return "short_int";
  }
  return "?";
}

const char* redop_name(ReduceOp o) {
  switch (o) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Min: return "min";
    case ReduceOp::Max: return "max";
    case ReduceOp::Prod: return "prod";
    case ReduceOp::BAnd: return "band";
    case ReduceOp::BOr: return "bor";
    case ReduceOp::BXor: return "bxor";
    case ReduceOp::LAnd: return "land";
    case ReduceOp::LOr: return "lor";
    case ReduceOp::LXor: return "lxor";
    case ReduceOp::MinLoc: return "minloc";
    case ReduceOp::MaxLoc: return "maxloc";
    case ReduceOp::User: return "user";
  }
  return "?";
}

size_t dtype_size(DataType t) {
  switch (t) {
    case DataType::Byte: case DataType::Int8: case DataType::UInt8: return 1;
    case DataType::Int16: case DataType::UInt16: case DataType::Float16: case DataType::BFloat16: return 2;
    case DataType::Int32: case DataType::UInt32: case DataType::Float32: return 4;
    case DataType::Int64: case DataType::UInt64: case DataType::Float64: return 8;
    case DataType::FloatInt: case DataType::TwoInt: case DataType::ShortInt: return 8;  // C struct sizes
    case DataType::DoubleInt: case DataType::LongInt: return 16;
  }
  return 1;
}

const std::vector<DataType>& reduction_types() {
  static const std::vector<DataType> v(std::begin(kTypes), std::end(kTypes));
  return v;
}

const std::vector<ReduceOp>& reduction_ops() {
  static const std::vector<ReduceOp> v(std::begin(kOps), std::end(kOps));
  return v;
}

bool parse_dtype(const std::string& s, DataType* out) {
  for (DataType t : kTypes)
    if (s == dtype_name(t)) return *out = t, true;
  return false;
}

bool parse_redop(const std::string& s, ReduceOp* out) {
  for (ReduceOp o : kOps)
    if (s == redop_name(o)) return *out = o, true;
  return false;
}

std::string dtype_names() {
  std::string out;
  for (DataType t : kTypes) out += (out.empty() ? "" : ", ") + std::string(dtype_name(t));
  return out;
}

std::string redop_names() {
  std::string out;
  for (ReduceOp o : kOps) out += (out.empty() ? "" : ", ") + std::string(redop_name(o));
  return out;
}

bool dtype_is_pair(DataType t) {
  return t == DataType::FloatInt || t == DataType::DoubleInt || t == DataType::LongInt || t == DataType::TwoInt ||
         t == DataType::ShortInt;
}

bool dtype_is_integer(DataType t) {
  return t != DataType::Byte && t != DataType::Float16 && t != DataType::BFloat16 && t != DataType::Float32 &&
         t != DataType::Float64 && !dtype_is_pair(t);
}

bool redop_applies(ReduceOp o, DataType t) {
  switch (o) {
    case ReduceOp::Sum: case ReduceOp::Min: case ReduceOp::Max: case ReduceOp::Prod:
      return t != DataType::Byte && !dtype_is_pair(t);
    case ReduceOp::MinLoc: case ReduceOp::MaxLoc: return dtype_is_pair(t);
    case ReduceOp::User: return t == DataType::Byte;
    default: return dtype_is_integer(t);
  }
}


namespace {

// clang-format off
const CollectiveTraits kTable[] = {
  // id                    name         mpi_name          rooted reducing moves  equal  user   result              root_only
  {Collective::Allgather, "allgather", "MPI_Allgather",  false, false,   true,  false, true,  Result::Blocks,       false,
   "send: this rank's block (counts may differ: all-gatherv); recv: every block in rank order"},
  {Collective::Barrier,   "barrier",   "MPI_Barrier",    false, false,   false, true,  true,  Result::Synchronised, false,
   "no buffers"},
  {Collective::Bcast,     "bcast",     "MPI_Bcast",      true,  false,   true,  true,  true,  Result::RootBlock,    false,
   "send: the root's message; recv: the message, on every rank but the root"},
  {Collective::Gather,    "gather",    "MPI_Gather",     true,  false,   true,  false, true,  Result::Blocks,       true,
   "send: this rank's block; recv (root only): every block in rank order"},
  {Collective::Allreduce, "allreduce", "MPI_Allreduce",  false, true,    true,  true,  true,  Result::Reduction,    false,
   "send: this rank's vector; recv: the element-wise reduction over every rank"},
  {Collective::ReduceScatterBlock, "reduce_scatter_block", "MPI_Reduce_scatter_block",
                                                false, true,    true,  true,  true,  Result::ReducedSlice, false,
   "send: N blocks of the same size, block r for rank r; recv: block r reduced over every rank"},
  {Collective::ReduceScatter, "reduce_scatter", "MPI_Reduce_scatter",
                                                false, true,    true,  false, true,  Result::ReducedSlice, false,
   "send: every rank's block (per-rank counts) in rank order; recv: this rank's block reduced over every rank"},
  {Collective::Reduce,    "reduce",    "MPI_Reduce",     true,  true,    true,  true,  true,  Result::Reduction,    true,
   "send: this rank's vector; recv (root only): the element-wise reduction over every rank"},
  // Personalised-data collectives.
  {Collective::Alltoall,  "alltoall",  "MPI_Alltoall",   false, false,   true,  true,  true,  Result::BlocksByDest, false,
   "send: a block for every rank in rank order; recv: the block each rank sent to this one, in rank order"},
  {Collective::Alltoallv, "alltoallv", "MPI_Alltoallv",  false, false,   true,  false, true,  Result::BlocksByDest, false,
   "as alltoall, with a byte count per (source, destination) pair"},
  {Collective::Scatter,   "scatter",   "MPI_Scatter",    true,  false,   true,  true,  true,  Result::RootBlocks,   false,
   "send (root only): a block for every rank in rank order; recv: this rank's block"},
  {Collective::Scatterv,  "scatterv",  "MPI_Scatterv",   true,  false,   true,  false, true,  Result::RootBlocks,   false,
   "as scatter, with a byte count per rank"},
  {Collective::Gatherv,   "gatherv",   "MPI_Gatherv",    true,  false,   true,  false, true,  Result::Blocks,       true,
   "send: this rank's block (counts may differ); recv (root only): every block in rank order"},
  // Prefix reductions (MPI 4.0 §6.11).
  {Collective::Scan,      "scan",      "MPI_Scan",       false, true,    true,  true,  true,  Result::Prefix,       false,
   "send: this rank's vector; recv: the element-wise reduction over ranks 0..r, in rank order"},
  {Collective::Exscan,    "exscan",    "MPI_Exscan",     false, true,    true,  true,  true,  Result::ExclusivePrefix, false,
   "send: this rank's vector; recv: the reduction over ranks 0..r-1 (rank 0's is left as it was)"},
  {Collective::Goal,      "goal",      "",               false, false,   true,  false, false, Result::None,         false,
   "a schedule imported from GOAL: regions as the file gives them"},
};
// clang-format on

unsigned char pattern(int rank, int call, uint64_t i) {
  return static_cast<unsigned char>((rank * 131 + call * 31 + i * 7 + (i >> 8)) & 0xff);
}

// Rank r's element i in call c: small integers, so that sums are exact in any
// order and a reduction of any type is checked exactly. Each operator gets
// inputs that make it do something: products of mostly 1 with a few -1 and 2
// (at most 2^6), logical operators a mix of zeros and non-zeros, float16 and
// bfloat16 sums within the 256 that bfloat16 holds exactly over 64 ranks.
int64_t element(int rank, uint64_t i, int call) { return static_cast<int64_t>((rank * 37 + i * 11 + call) % 1000) - 400; }

int64_t element_for(const CallShape& c, int rank, uint64_t i, int call) {
  const uint64_t mix = rank * 3 + i * 5 + call;
  switch (c.redop) {
    case ReduceOp::Prod:
      if ((rank * 7 + i * 3 + call) % 5 == 0) return -1;
      return rank < 6 && (i + rank) % 4 == 0 ? 2 : 1;
    case ReduceOp::LAnd: case ReduceOp::LXor: return mix % 23 == 0 ? 0 : element(rank, i, call);
    case ReduceOp::LOr: return mix % 23 == 0 ? element(rank, i, call) | 1 : 0;
    default: break;
  }
  if (c.dtype == DataType::Float16 || c.dtype == DataType::BFloat16) return element(rank, i, call) % 7;
  if (dtype_is_pair(c.dtype)) return element(rank, i, call) % 4;  // ties, for the indices to decide
  return element(rank, i, call);
}

// A pair's index: not the rank's order, so that a tie must pick the lesser index.
int32_t index_for(int rank, uint64_t i) { return static_cast<int32_t>((rank * 5 + i) % 11); }


void fill_elements(const CallShape& c, int call, unsigned char* send, uint64_t n) {
  ops::with_type(c.dtype, [&](auto codec) {
    using Codec = decltype(codec);
    using S = typename Codec::Stored;
    for (uint64_t i = 0; i < n; ++i) {
      S v = Codec::make(element_for(c, c.rank, i, call), index_for(c.rank, i));
      memcpy(send + i * sizeof(S), &v, sizeof(S));
    }
  });
}

// recv holds elements first.. of the reduction over the sends of ranks 0..upto-1.
std::string check_elements(const CallShape& c, int call, const unsigned char* recv, uint64_t first, uint64_t n,
                           int upto) {
  std::string wrong;
  ops::with_type(c.dtype, [&](auto codec) {
    using Codec = decltype(codec);
    using S = typename Codec::Stored;
    ops::with_op<typename Codec::Calc>(c.redop, [&](auto f) {
      for (uint64_t i = 0; i < n && wrong.empty(); ++i) {
        auto input = [&](int r) { return Codec::load(Codec::make(element_for(c, r, first + i, call), index_for(r, first + i))); };
        auto want = input(0);
        for (int r = 1; r < upto; ++r) want = Codec::load(Codec::store(f(want, input(r))));
        S got;
        memcpy(&got, recv + i * sizeof(S), sizeof(S));
        if (Codec::load(got) != want)
          wrong = std::string("wrong ") + dtype_name(c.dtype) + " " + redop_name(c.redop) + " at element " +
                  std::to_string(i);
      }
    });
  });
  return wrong;
}

constexpr unsigned char kGuard = 0xEE;

}  // namespace

const CollectiveTraits& traits(Collective c) { return kTable[static_cast<int>(c)]; }

const std::vector<Collective>& user_collectives() {
  static const std::vector<Collective> v = [] {
    std::vector<Collective> out;
    for (const auto& t : kTable)
      if (t.user_facing) out.push_back(t.id);
    return out;
  }();
  return v;
}

bool parse_collective(const std::string& name, Collective* out) {
  for (const auto& t : kTable)
    if (t.user_facing && name == t.name) return *out = t.id, true;
  return false;
}

Collective collective_from_name(const std::string& name) {
  Collective c;
  if (parse_collective(name, &c)) return c;
  std::string names;
  for (Collective x : user_collectives()) names += (names.empty() ? "" : ", ") + std::string(collective_name(x));
  throw InputError("unknown collective '" + name + "' (one of: " + names + ")");
}

void CollectiveTraits::region_sizes(const BlockLayout& layout, int root, std::vector<uint64_t>* send,
                                    std::vector<uint64_t>* recv) const {
  const int N = layout.n();
  *send = layout.count;
  switch (result) {
    case Result::RootBlock:
      send->assign(N, 0);
      recv->assign(N, layout.count[root]);
      (*send)[root] = layout.count[root];
      (*recv)[root] = 0;
      break;
    case Result::Blocks:
      recv->assign(N, result_at_root_only ? 0 : layout.total());
      if (result_at_root_only) (*recv)[root] = layout.total();
      break;
    case Result::Prefix:
    case Result::ExclusivePrefix: *recv = layout.count; break;
    case Result::Reduction:
      *recv = layout.count;
      if (result_at_root_only)
        for (int r = 0; r < N; ++r) (*recv)[r] = r == root ? layout.count[r] : 0;
      break;
    case Result::ReducedSlice:  // layout: the slice each rank ends with
      send->assign(N, layout.total());
      *recv = layout.count;
      break;
    case Result::BlocksByDest:
      recv->assign(N, 0);
      for (int d = 0; d < N; ++d) (*recv)[d] = layout.recv_total(d);
      break;
    case Result::RootBlocks:
      *recv = layout.count;
      send->assign(N, 0);
      (*send)[root] = layout.total();
      break;
    case Result::Synchronised:
    case Result::None: recv->assign(N, layout.total()); break;
  }
}

double CollectiveTraits::node_recv_bytes(int ranks, int nodes, int fewest, double m) const {
  switch (result) {
    case Result::Blocks: return (ranks - fewest) * m;         // what the node (or root's node) lacks
    case Result::RootBlock: return m;                         // every other node receives it once
    case Result::Reduction:  // reduce: the root's node at least gets the vector once
      return result_at_root_only ? m : 2.0 * (nodes - 1) / nodes * m;  // reduce-scatter + all-gather
    case Result::ReducedSlice:  // every other node's part of each of the node's slices
      return (nodes - 1) * std::ceil(static_cast<double>(ranks) / nodes) * m;
    case Result::BlocksByDest: {  // a node of P ranks takes P (N - P) blocks
      const double P = (ranks + nodes - 1) / nodes;
      return P * (ranks - P) * m;
    }
    case Result::RootBlocks: return (ranks - fewest) * m;  // what the root's node must send out
    case Result::Prefix:
    case Result::ExclusivePrefix: return nodes > 1 ? m : 0;  // the earlier nodes' prefix, once
    default: return 0;
  }
}

uint64_t CollectiveTraits::send_length(const CallShape& c) const {
  if (!moves_data) return 0;
  switch (result) {
    case Result::RootBlock: return c.rank != c.root ? 0 : c.bytes;
    case Result::RootBlocks: return c.rank != c.root ? 0 : c.bytes * c.nranks;
    case Result::BlocksByDest:
    case Result::ReducedSlice: return c.bytes * c.nranks;
    default: return c.bytes;
  }
}

uint64_t CollectiveTraits::recv_length(const CallShape& c) const {
  switch (result) {
    case Result::Blocks: return result_at_root_only && c.rank != c.root ? 0 : c.bytes * c.nranks;
    case Result::Reduction: return result_at_root_only && c.rank != c.root ? 0 : c.bytes;
    case Result::Prefix:
    case Result::ExclusivePrefix: return c.bytes;
    case Result::BlocksByDest: return c.bytes * c.nranks;
    case Result::RootBlocks:
    case Result::RootBlock:
    case Result::ReducedSlice: return c.bytes;
    default: return 0;
  }
}

void CollectiveTraits::fill(const CallShape& c, int call, unsigned char* send, unsigned char* recv) const {
  const uint64_t slen = send_length(c), rlen = recv_length(c);
  if (recv) memset(recv, kGuard, rlen);
  if (reducing) return fill_elements(c, call, send, slen / dtype_size(c.dtype));
  const int origin = result == Result::RootBlock || result == Result::RootBlocks ? c.root : c.rank;
  for (uint64_t b = 0; b < slen; ++b) send[b] = pattern(origin, call, b);
  // A broadcast's root passes one buffer: its message is already in "recv".
  if (result == Result::RootBlock && c.rank == c.root && recv) memcpy(recv, send, slen);
}

std::string CollectiveTraits::check(const CallShape& c, int call, const unsigned char* recv) const {
  switch (result) {
    case Result::Blocks:
      if (result_at_root_only && c.rank != c.root) return "";
      for (int r = 0; r < c.nranks; ++r)
        for (uint64_t b = 0; b < c.bytes; ++b)
          if (recv[r * c.bytes + b] != pattern(r, call, b))
            return "wrong byte " + std::to_string(b) + " of rank " + std::to_string(r) + "'s block";
      return "";
    case Result::RootBlock:
      for (uint64_t b = 0; b < c.bytes; ++b)
        if (recv[b] != pattern(c.root, call, b)) return "wrong byte " + std::to_string(b);
      return "";
    case Result::RootBlocks:  // block `rank` of the root's send
      for (uint64_t b = 0; b < c.bytes; ++b)
        if (recv[b] != pattern(c.root, call, c.rank * c.bytes + b)) return "wrong byte " + std::to_string(b);
      return "";
    case Result::BlocksByDest:  // from every rank s, block `rank` of s's send
      for (int s = 0; s < c.nranks; ++s)
        for (uint64_t b = 0; b < c.bytes; ++b)
          if (recv[s * c.bytes + b] != pattern(s, call, c.rank * c.bytes + b))
            return "wrong byte " + std::to_string(b) + " of the block from rank " + std::to_string(s);
      return "";
    case Result::Reduction:
    case Result::ReducedSlice: {
      if (c.dtype == DataType::Byte) return "a reduction needs a data type";
      if (result_at_root_only && c.rank != c.root) return "";
      const uint64_t n = c.bytes / dtype_size(c.dtype);
      return check_elements(c, call, recv, result == Result::ReducedSlice ? n * c.rank : 0, n, c.nranks);
    }
    case Result::Prefix:
    case Result::ExclusivePrefix: {
      if (c.dtype == DataType::Byte) return "a reduction needs a data type";
      const uint64_t n = c.bytes / dtype_size(c.dtype);
      if (result == Result::Prefix) return check_elements(c, call, recv, 0, n, c.rank + 1);
      if (c.rank > 0) return check_elements(c, call, recv, 0, n, c.rank);
      for (uint64_t b = 0; b < c.bytes; ++b)  // rank 0's exscan result: untouched
        if (recv[b] != kGuard) return "rank 0's recv was written at byte " + std::to_string(b);
      return "";
    }
    default: return "";
  }
}

}  // namespace railcoll
