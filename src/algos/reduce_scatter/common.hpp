// Pieces shared by the reduce-scatter builders and by the reduce that is a
// reduce-scatter followed by a gather (reduce/rabenseifner.cpp).
#pragma once
#include <functional>
#include <utility>
#include <vector>

#include "algos/allreduce/common.hpp"
#include "core/registry.hpp"

namespace railcoll::reduce_scatter {

// Registers one builder for both reduce_scatter_block (equal blocks) and
// reduce_scatter (per-rank counts): the block form is the v-form with equal
// counts, so every algorithm serves both under one name.
struct BothRegistrars {
  BothRegistrars(int order, const char* name, const char* summary, const char* cost, const char* source,
                 BuildFn build, bool keeps_order = false);
  AlgorithmRegistrar block, counts;
};

// Hands the finished block of `owner`, which rank `holder` has in `reduced`,
// to where it belongs (operations at step `step`; a put may notify rank
// counter `counter`, which recursive_halving leaves unused).
using DeliverFn = std::function<void(int owner, int holder, Span reduced, int step, int counter)>;

// Reduce-scatter by recursive halving over the ranks (Thakur, Rabenseifner,
// Gropp 2005, §4.2's commutative case): each rank's input(r) holds every
// block in rank order (blocks of L); ranks beyond the largest power of two
// p2 fold their whole input into a partner first (allreduce::Fold), and a
// participant then speaks for its partner's block as well. In step s a
// participant sends the half of its current block range it gives up to
// p XOR (p2 >> (s+1)) and combines the half it keeps; after log2 p2 steps it
// holds its blocks, reduced over everyone, and `deliver` is called for each.
// Scratch of every rank: its accumulator (L.total()), the fold's slot
// (L.total()) and one slot per step; counters counter0 .. counter0 + log2 p2.
// Returns the step after the last.
int recursive_halving(ScheduleBuilder& b, const BlockLayout& L, const std::function<Span(int rank)>& input,
                      int step0, int counter0, const DeliverFn& deliver);

// Byte pieces of a rank-ordered buffer, [first, second).
using ByteRanges = std::vector<std::pair<uint64_t, uint64_t>>;
// A piece of a compacted byte string and where it lies in the rank-ordered buffer.
struct Piece {
  uint64_t packed, spread, length;
};
// The part [lo, hi) of the string that `ranges` make when laid end to end.
std::vector<Piece> packed_part(const ByteRanges& ranges, uint64_t lo, uint64_t hi);

// The pipelined SMP reduce-scatters (smp_pipelined, smp_ring): node q's blocks
// laid end to end as one string, where each rank's block is in it, and the
// pieces every node cuts it into alike (the sender's pieces are the
// receiver's): at most kPieceBytes, so the first reaches the wire early and a
// piece's wait, signal and frame cost little beside moving it; with a node
// counter per piece of 2M-1 strings, at most kCounterBudget in all (the
// runtime's shared segment holds 256 a call, runtime/node_shm.hpp), so long
// blocks get longer pieces rather than more of them.
struct NodeStrings {
  static constexpr uint64_t kPieceBytes = 256 * 1024;
  static constexpr int kCounterBudget = 192;
  NodeStrings(const Topology& t, const BlockLayout& L, size_t elem);
  allreduce::Chunks pieces(int q) const;
  // Piece j of node q's string: where its parts lie in the rank-ordered buffer.
  std::vector<Piece> piece(int q, int j) const;
  // Every node's string in pieces: a node's chain reduces all of them, so its
  // counters for the chain come first, this many, then those of arrivals.
  int all_pieces() const;
  std::vector<ByteRanges> ranges;               // node q's blocks in the rank-ordered buffer
  std::vector<uint64_t> bytes, packed_at;       // node q's string; rank r's block in its node's
  size_t elem;
  uint64_t most_pieces;
};

}  // namespace railcoll::reduce_scatter
