// Pieces shared by the prefix reductions (scan, exscan). Every builder serves
// both collectives (BothScans) and keeps rank order: a value is always
// combined as (lower ranks) (op) (higher ranks), with reduce or reduce_before
// choosing the side (core/schedule.hpp), so a non-commutative operator gives
// MPI's result (MPI 4.0 §6.11: the prefix in rank order).
#pragma once
#include <functional>
#include <vector>

#include "core/registry.hpp"

namespace railcoll::scan {

// Registers one builder for scan and exscan, order-keeping (AlgoSpec::keeps_order).
struct BothScans {
  BothScans(int order, const char* name, const char* summary, const char* cost, const char* source, BuildFn build);
  AlgorithmRegistrar inclusive, exclusive;
};

// Whether the schedule being built is exscan's (rank r's result: ranks 0..r-1).
bool exclusive(const ScheduleBuilder& b);

// A unit of a prefix over units in rank order (ranks, or runs of ranks on one
// node): the rank acting for it, its own value (`in`, read only), where its
// result goes (`out`), and scratch spans the unit's rank may write.
struct Unit {
  int rank;
  Span in, out;
};

// Linear chain (MPICH's and Open MPI's basic scan): unit u waits for the
// prefix of units 0..u-1 in `out` (exclusive) or combines it there with its
// own (inclusive), and hands its prefix of 0..u on to unit u+1's out. An
// exclusive unit needs room for the running prefix: running(u). Unit 0's out
// is untouched when exclusive. Rank counter `counter`; steps step0 .. step0 +
// U - 1. Returns the step after the last.
int chain(ScheduleBuilder& b, const std::vector<Unit>& units, bool exclusive, const std::vector<Span>& running,
          int step0, int counter);

// Recursive doubling (Hillis and Steele 1986; MPICH's scan_intra_recursive_doubling):
// in step s unit u exchanges the partial prefix of its aligned block of 2^s
// units with unit u XOR 2^s; the lower block's partial goes on the left.
// slot(u, s) is unit u's scratch for step s (out's length); the partial
// moves from slot to slot, so no span a put still reads is rewritten. Unit 0's
// out is untouched when exclusive. Rank counters counter0 .. counter0 +
// ceil(log2 U) - 1; returns the step after the last.
using SlotFn = std::function<Span(int unit, int step)>;
int recursive_doubling(ScheduleBuilder& b, const std::vector<Unit>& units, bool exclusive, const SlotFn& slot,
                       int step0, int counter0);
int doubling_steps(int units);

}  // namespace railcoll::scan
