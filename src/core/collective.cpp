#include "core/collective.hpp"

#include <algorithm>
#include <cstring>

#include "core/errors.hpp"
#include "core/schedule.hpp"

namespace railcoll {

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
  {Collective::Goal,      "goal",      "",               false, false,   true,  false, false, Result::None,         false,
   "a schedule imported from GOAL: regions as the file gives them"},
};
// clang-format on

unsigned char pattern(int rank, int call, uint64_t i) {
  return static_cast<unsigned char>((rank * 131 + call * 31 + i * 7 + (i >> 8)) & 0xff);
}

// Rank r's element i in call c: small integers, so that sums are exact in any
// order and a reduction of any type is checked exactly.
int64_t element(int rank, uint64_t i, int call) { return static_cast<int64_t>((rank * 37 + i * 11 + call) % 1000) - 400; }

template <class T>
void fill_elements(unsigned char* buf, uint64_t n, int rank, int call) {
  for (uint64_t i = 0; i < n; ++i) {
    T v = static_cast<T>(element(rank, i, call));
    memcpy(buf + i * sizeof(T), &v, sizeof(T));
  }
}

template <class T>
std::string check_elements(const unsigned char* buf, const CallShape& c, int call) {
  const uint64_t n = c.bytes / sizeof(T);
  for (uint64_t i = 0; i < n; ++i) {
    int64_t want = element(0, i, call);
    for (int r = 1; r < c.nranks; ++r) {
      int64_t x = element(r, i, call);
      want = c.redop == ReduceOp::Sum ? want + x : c.redop == ReduceOp::Min ? std::min(want, x) : std::max(want, x);
    }
    T got;
    memcpy(&got, buf + i * sizeof(T), sizeof(T));
    if (got != static_cast<T>(want))
      return std::string("wrong ") + redop_name(c.redop) + " at element " + std::to_string(i);
  }
  return "";
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
    case Result::Reduction: *recv = layout.count; break;
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
    case Result::Reduction: return 2.0 * (nodes - 1) / nodes * m;  // reduce-scatter + all-gather
    case Result::BlocksByDest: {  // a node of P ranks takes P (N - P) blocks
      const double P = (ranks + nodes - 1) / nodes;
      return P * (ranks - P) * m;
    }
    case Result::RootBlocks: return (ranks - fewest) * m;  // what the root's node must send out
    default: return 0;
  }
}

uint64_t CollectiveTraits::send_length(const CallShape& c) const {
  if (!moves_data) return 0;
  switch (result) {
    case Result::RootBlock: return c.rank != c.root ? 0 : c.bytes;
    case Result::RootBlocks: return c.rank != c.root ? 0 : c.bytes * c.nranks;
    case Result::BlocksByDest: return c.bytes * c.nranks;
    default: return c.bytes;
  }
}

uint64_t CollectiveTraits::recv_length(const CallShape& c) const {
  switch (result) {
    case Result::Blocks: return result_at_root_only && c.rank != c.root ? 0 : c.bytes * c.nranks;
    case Result::BlocksByDest: return c.bytes * c.nranks;
    case Result::RootBlocks:
    case Result::RootBlock:
    case Result::Reduction: return c.bytes;
    default: return 0;
  }
}

void CollectiveTraits::fill(const CallShape& c, int call, unsigned char* send, unsigned char* recv) const {
  const uint64_t slen = send_length(c), rlen = recv_length(c);
  if (recv) memset(recv, kGuard, rlen);
  if (reducing) {
    const uint64_t n = c.bytes / dtype_size(c.dtype);
    switch (c.dtype) {
      case DataType::Int32: fill_elements<int32_t>(send, n, c.rank, call); break;
      case DataType::Int64: fill_elements<int64_t>(send, n, c.rank, call); break;
      case DataType::Float32: fill_elements<float>(send, n, c.rank, call); break;
      case DataType::Float64: fill_elements<double>(send, n, c.rank, call); break;
      case DataType::Byte: break;
    }
    return;
  }
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
      switch (c.dtype) {
        case DataType::Int32: return check_elements<int32_t>(recv, c, call);
        case DataType::Int64: return check_elements<int64_t>(recv, c, call);
        case DataType::Float32: return check_elements<float>(recv, c, call);
        case DataType::Float64: return check_elements<double>(recv, c, call);
        case DataType::Byte: return "a reduction needs a data type";
      }
      return "";
    default: return "";
  }
}

}  // namespace railcoll
