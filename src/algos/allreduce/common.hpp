// Pieces shared by the allreduce builders.
#pragma once
#include <functional>
#include <vector>

#include "core/schedule.hpp"

namespace railcoll::allreduce {

// Any number of units (ranks, or nodes) run a power-of-two algorithm: the first
// 2*rem units pair up, the even one of each pair hands its data to the odd one
// and sits out, and gets the result back at the end (Rabenseifner 2004; MPICH's
// non-power-of-two allreduce).
struct Fold {
  explicit Fold(int units);
  int p2 = 1;   // largest power of two <= units
  int rem = 0;  // units - p2
  int log2 = 0;
  // The index among the p2 participants, or -1 for a unit that sits out.
  int participant(int unit) const;
  int unit_of(int participant) const { return participant < rem ? 2 * participant + 1 : participant + rem; }
};

// Element boundaries of `parts` nearly equal chunks of the vector (bytes).
struct Chunks {
  Chunks(uint64_t bytes, size_t elem, int parts);
  uint64_t begin(int c) const { return (elems * c / parts) * elem; }
  uint64_t size(int c) const { return begin(c + 1) - begin(c); }
  uint64_t elems;
  size_t elem;
  int parts;
};

// A unit of a recursive-doubling allreduce: the rank that acts for it and the
// span it reduces in place (the same length for every unit).
struct Unit {
  int rank;
  Span acc;
};
// Where unit u receives the data of exchange `slot` (acc's length).
using SlotFn = std::function<Span(int unit, int slot)>;
constexpr int kRecursiveDoublingSlots = 32;  // slot 0: the fold; 1 + s: exchange step s

// The even unit of each of the first rem pairs hands its acc to the odd one's
// slot and the odd one combines it, the even one's on the left (step `step`,
// counter `counter` of the odd one).
void fold_in(ScheduleBuilder& b, const Fold& f, const std::vector<Unit>& units, const SlotFn& slot, int step,
             int rail, int counter);
// The odd unit of each pair writes the result into the even one's acc.
void fold_out(ScheduleBuilder& b, const Fold& f, const std::vector<Unit>& units, int step, int rail, int counter);

// Recursive doubling over units (seed 002 §3's pairwise exchange, combining
// instead of concatenating): log2 p2 steps, the whole vector each step, both
// partners compute (lower unit's) op (higher unit's) from the same operands,
// so every unit ends with the same bits, and units in rank order keep rank
// order (a non-commutative operator's, MPICH's recursive doubling). Uses rank
// counters counter0 .. counter0 + log2 p2 + 1 and steps step0 .. returned step - 1.
int recursive_doubling(ScheduleBuilder& b, const std::vector<Unit>& units, const SlotFn& slot, int step0,
                       int rail, int counter0);

// Rabenseifner over units (rabenseifner.cpp): reduce-scatter by recursive
// halving, then all-gather by recursive doubling, each unit's acc cut into p2
// chunks of whole elements; 2 (p2-1)/p2 of the vector crosses each unit
// instead of log2 p2 vectors. Halving step s receives into slot(u, 1 + s) at
// the offsets of the half it gets; the doubling writes finished ranges
// straight into the partners' acc. rail_of(bytes): the rail of a put. Uses
// counters counter0 .. counter0 + 2 log2 p2 + 1 and steps step0 .. returned - 1.
int halving_doubling(ScheduleBuilder& b, const std::vector<Unit>& units, const SlotFn& slot, size_t elem,
                     int step0, const std::function<int(uint64_t)>& rail_of, int counter0);

// SMP phases 1 and 2 (smp.cpp; also reduce_scatter/smp.cpp, reduce/smp.cpp):
// every local rank of `node` copies its send[0, m) into its staging area of the
// node's shared buffer (local rank i's at i*m) and raises node counter
// `staged`; then local rank i combines slice i (whole elements) of every area
// into area 0 and raises node counter `combined`. Area 0 holds the node's
// reduction once `combined` reaches the node's size. Steps `step`, `step` + 1.
void node_combine(ScheduleBuilder& b, int node, uint64_t m, size_t elem, int step, int staged, int combined);

// The same result without staging areas: area 0 (shared[0, m)) is cut into P
// slices; in round j local rank i brings its send's slice (i + j) mod P into
// area 0 (round 0 copies, later rounds combine), after the rank of round j-1
// has (node counter slice_counter0 + slice counts the rounds done). Each rank
// moves m bytes once instead of staging m and then combining (P-1)/P m more,
// and the node's shared buffer needs m instead of P m: for reductions of long
// vectors on a node whose ranks share the memory bus. Node counter `combined`
// reaches the node's size when area 0 is complete. Steps `step` (the copy), `step` + 1.
void node_combine_rotating(ScheduleBuilder& b, int node, uint64_t m, size_t elem, int step, int slice_counter0,
                           int combined);

// One of the two for a node of P ranks: staging for short vectors (two
// node-wide synchronisations instead of P rounds), rotating for long ones
// (m moved once). The crossover is the simulated testbed's (presets/testbed.preset,
// 4x4: staging 5-8% ahead up to 16 KiB combined, rotating ahead from there,
// 17% at 16 MiB). node_combine_bytes: the node's shared bytes it uses (area 0 first).
// Node counters: `combined`, then first_free .. first_free + P - 1.
constexpr uint64_t kRotateFromBytes = 16 * 1024;
inline uint64_t node_combine_bytes(uint64_t m, int P) { return m <= kRotateFromBytes ? P * m : m; }
void node_reduce(ScheduleBuilder& b, int node, uint64_t m, size_t elem, int step, int combined, int first_free);

}  // namespace railcoll::allreduce
