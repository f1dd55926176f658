// What a benchmark row is judged against (docs/results.md, "How to read"):
//   * bus bandwidth as nccl-tests defines it (its doc/PERFORMANCE.md): algbw =
//     S / t, busbw = algbw x a factor per collective that makes it comparable to
//     a link's rate whatever the number of ranks n: allreduce 2(n-1)/n;
//     allgather, reduce_scatter(_block), alltoall(v) (n-1)/n; bcast, reduce 1.
//     nccl-tests has no gather or scatter: railcoll takes (n-1)/n for them and
//     their v-forms (all but the root's own block cross the root's link, as an
//     all-gather's do a rank's), and gives a barrier none. S is the whole
//     buffer: per rank x n for the block collectives, the vector for allreduce,
//     reduce and bcast;
//   * the rail bound (report.hpp, rail_bound_us): the bytes the node that
//     receives most takes in, over its rails;
//   * the compute bound: the bytes a schedule must copy (copies and puts inside
//     a node) and reduce, at this machine's measured rates with all its cores
//     at once. Every emulated node runs on this one host, so the whole job's
//     work shares its cores: the bound is the job's work over the host's rates.
//     For a railcoll row it is its own schedule's work; for a peer's row, whose
//     schedule railcoll cannot see, the least work of any railcoll schedule.
// A row is judged against the larger of the two bounds, which binds.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "bench/records.hpp"
#include "core/collective.hpp"

namespace railcoll::bench {

// nccl-tests' S (bytes) for `bytes` per rank as the records count them, and
// its bus factor; 0 for a barrier.
double algbw_bytes(Collective c, int n, uint64_t bytes);
double bus_factor(Collective c, int n);
// "2(n-1)/n", "(n-1)/n", "1" or "-" (barrier), for headers.
const char* bus_factor_text(Collective c);

// The time a record is judged by: its span for a rooted collective when the
// span was measured, else the slowest rank's p50 (SummaryMetric's choice).
double judged_us(const BenchRecord& r);

// algbw, busbw, busbw_pct, the rail rate and the rail bound of every record,
// from the context (rail_bits_per_s, rails, nodes).
void set_bandwidths(BenchRecord* r, const BenchContext& c);

// What a schedule makes the cores do: bytes copied (copies, and puts between
// ranks of a node, which are memcpys) and bytes combined by reductions, over
// every rank of the job.
struct ScheduleWork {
  uint64_t copy_bytes = 0, reduce_bytes = 0;
};
// The work of railcoll's `algorithm` for `c`'s collective at `bytes` per
// rank; for "auto" the one it chose (r.chosen); for any other name (a peer)
// the least work over railcoll's algorithms. false when none can be built.
bool work_of(const BenchContext& c, const std::string& algorithm, uint64_t bytes, ScheduleWork* w);

// The compute bound of `w` at the context's rates, in us; 0 when the rates
// are not measured or there is no work.
double compute_bound_us(const ScheduleWork& w, const BenchContext& c);

// Every record's bandwidths and bounds: the rail bound, the compute bound, the
// one that binds and the share of it the record reached.
void set_bounds(std::vector<BenchRecord>* recs, const BenchContext& c);

}  // namespace railcoll::bench
