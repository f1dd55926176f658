// What a collective is, in one place: the enum every layer passes around and a
// table of its traits (rooted? reducing? its buffers, the result it must leave,
// and how a benchmark or test fills and checks one call). The verifier, the
// sweep, the simulator, selection, the runtime, the C API and the benchmarks
// read this table instead of comparing names, so a new collective is one row
// here plus its algorithms (docs/extending.md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/half.hpp"  // half_to_float, float_to_half, bf16_to_float, float_to_bf16

namespace railcoll {

enum class Collective : uint8_t {
  Allgather, Barrier, Bcast, Gather, Allreduce,
  ReduceScatterBlock, ReduceScatter, Reduce,  // the reduction family (issue 20)
  // Personalised data: every rank's result is its own part of the inputs.
  Alltoall, Alltoallv, Scatter, Scatterv, Gatherv,
  // Prefix reductions: rank r's result combines ranks 0..r (exscan: 0..r-1).
  Scan, Exscan,
  Goal
};

// Element types and operators of reductions. Byte: no reduction. Float16 and
// BFloat16 are combined in float32 and rounded back once per combination.
// The pairs (value, int index) are MPI's MPI_FLOAT_INT, MPI_DOUBLE_INT,
// MPI_LONG_INT, MPI_2INT and MPI_SHORT_INT, laid out as C structs.
enum class DataType : uint8_t {
  Byte, Int32, Int64, Float32, Float64,
  Int8, UInt8, Int16, UInt16, UInt32, UInt64, Float16, BFloat16,
  FloatInt, DoubleInt, LongInt, TwoInt, ShortInt
};
// Bitwise (band, bor, bxor) and logical (land, lor, lxor: the result is 1 or
// 0, as in MPI) operators apply to the integer types only; minloc and maxloc
// to the pairs only (and the pairs to nothing else). User: a function of the
// program's own (MPI_Op_create, railcoll_op_create), which the call supplies
// at run time; its elements are opaque bytes (DataType::Byte), AlgoOptions::
// elem_bytes each, and it may be non-commutative (AlgoOptions::commutative).
enum class ReduceOp : uint8_t { Sum, Min, Max, Prod, BAnd, BOr, BXor, LAnd, LOr, LXor, MinLoc, MaxLoc, User };
const char* dtype_name(DataType t);
const char* redop_name(ReduceOp o);
size_t dtype_size(DataType t);
bool parse_dtype(const std::string& s, DataType* out);
bool parse_redop(const std::string& s, ReduceOp* out);
// Every type and operator, in enum order (Byte left out: it reduces nothing).
const std::vector<DataType>& reduction_types();
const std::vector<ReduceOp>& reduction_ops();
bool dtype_is_integer(DataType t);
bool dtype_is_pair(DataType t);
// Whether `o` is defined on `t` (MPI's rule: bitwise and logical operators on
// integers only; minloc and maxloc on the pairs; a user operator on opaque
// elements, Byte).
bool redop_applies(ReduceOp o, DataType t);
// "int8, uint8, ..." / "sum, min, ..." for messages naming the choices.
std::string dtype_names();
std::string redop_names();

struct BlockLayout;

// The result a correct schedule leaves, as the verifier checks it.
enum class Result : uint8_t {
  Synchronised,  // barrier: no rank leaves before every rank has entered
  Blocks,        // recv holds every rank's send block in rank order (at `targets`)
  RootBlock,     // recv of every rank but the root holds the root's send
  Reduction,     // recv holds, per element, the reduction over every rank's send
                 // (at the root only when result_at_root_only: reduce)
  ReducedSlice,  // reduce_scatter: send holds every rank's slice in rank order; rank
                 // r's recv holds slice r reduced over every rank's send
  BlocksByDest,  // alltoall(v): rank d's recv holds block d of every rank's send, in source order
                 // (the counts are per pair: BlockLayout::pair)
  RootBlocks,    // scatter(v): rank r's recv holds block r of the root's send
  Prefix,        // scan: rank r's recv holds, per element, the reduction over ranks 0..r in rank order
  ExclusivePrefix,  // exscan: the reduction over ranks 0..r-1; rank 0's recv is left untouched (MPI: undefined)
  None,          // imported schedules: no meaning to check
};

// One call as a benchmark or test makes it: enough to size, fill and check buffers.
struct CallShape {
  int rank = 0, nranks = 1, root = 0;
  uint64_t bytes = 0;  // per rank (allreduce: the vector's bytes; reduce_scatter: the block each rank ends with;
                       // alltoall: per pair; scatter: per receiver)
  DataType dtype = DataType::Byte;
  ReduceOp redop = ReduceOp::Sum;
};

struct CollectiveTraits {
  Collective id;
  const char* name;      // "allgather": names on the command line, in files and variables
  const char* mpi_name;  // "MPI_Allgather"
  bool rooted;           // takes a root (bcast, gather)
  bool reducing;         // combines elements: needs a data type and an operator
  bool moves_data;       // false for the barrier: no buffers at all
  bool equal_counts;     // every rank must pass the same byte count
  bool user_facing;      // callable (false: imported GOAL schedules)
  Result result;
  bool result_at_root_only;  // Blocks, Reduction: only the root's recv (gather, reduce)
  const char* sizes_doc;     // one line: what send and recv hold

  // Region sizes per rank, from the per-rank counts.
  void region_sizes(const BlockLayout& layout, int root, std::vector<uint64_t>* send,
                    std::vector<uint64_t>* recv) const;
  // Bytes the node that receives most must take in over the network, with m
  // bytes per rank, for the rail bound of a benchmark.
  double node_recv_bytes(int ranks, int nodes, int fewest_ranks_on_a_node, double m) const;
  // Buffer lengths of one rank's call (the bench allocates these).
  uint64_t send_length(const CallShape& c) const;
  uint64_t recv_length(const CallShape& c) const;
  // The input of call number `call`: a pattern that differs per rank, call and
  // byte (for reductions, small integers whose sums are exact in any order),
  // and recv filled with a guard value the result must overwrite.
  void fill(const CallShape& c, int call, unsigned char* send, unsigned char* recv) const;
  // "" when recv holds the result of call `call`, else what is wrong.
  std::string check(const CallShape& c, int call, const unsigned char* recv) const;
};

const CollectiveTraits& traits(Collective c);
inline const char* collective_name(Collective c) { return traits(c).name; }
// The collectives a user can call, in table order.
const std::vector<Collective>& user_collectives();
// false for an unknown name (the caller reports it).
bool parse_collective(const std::string& name, Collective* out);
// Like parse_collective, but throws InputError naming the choices.
Collective collective_from_name(const std::string& name);

}  // namespace railcoll
