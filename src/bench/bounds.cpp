#include "bench/bounds.hpp"

#include <algorithm>
#include <map>

#include "bench/report.hpp"
#include "core/errors.hpp"
#include "core/registry.hpp"
#include "select/select.hpp"

namespace railcoll::bench {

double algbw_bytes(Collective c, int n, uint64_t bytes) {
  const double m = static_cast<double>(bytes);
  switch (c) {
    case Collective::Barrier: return 0;
    case Collective::Allreduce:
    case Collective::Reduce:
    case Collective::Bcast: return m;
    default: return m * n;  // the block collectives: every rank's block (or pair's) is part of the whole
  }
}

double bus_factor(Collective c, int n) {
  if (n < 1) return 0;
  const double share = static_cast<double>(n - 1) / n;
  switch (c) {
    case Collective::Barrier: return 0;
    case Collective::Allreduce: return 2 * share;
    case Collective::Reduce:
    case Collective::Bcast: return 1;
    default: return share;  // allgather, reduce_scatter(_block), alltoall(v); gather(v), scatter(v) by railcoll's choice
  }
}

const char* bus_factor_text(Collective c) {
  switch (c) {
    case Collective::Barrier: return "-";
    case Collective::Allreduce: return "2(n-1)/n";
    case Collective::Reduce:
    case Collective::Bcast: return "1";
    default: return "(n-1)/n";
  }
}

double judged_us(const BenchRecord& r) {
  Collective c;
  if (parse_collective(r.collective, &c) && traits(c).rooted && r.has_span()) return r.span_p50_us;
  return r.p50_us;
}

void set_bandwidths(BenchRecord* r, const BenchContext& c) {
  Collective coll;
  if (!parse_collective(r->collective, &coll)) return;
  if (c.rail_bits_per_s > 0) r->rail_bits_per_s = c.rail_bits_per_s;
  if (!c.rate_source.empty()) r->rate_source = c.rate_source, r->ceiling_pct = c.ceiling_pct, r->shaper = c.shaper;
  const double t = judged_us(*r), S = algbw_bytes(coll, r->ranks, r->bytes);
  if (t > 0 && S > 0) {
    r->algbw_GBps = S / t * 1e-3;  // bytes per us -> GB/s
    r->busbw_GBps = r->algbw_GBps * bus_factor(coll, r->ranks);
    const double node_GBps = c.rail_bits_per_s * std::max(1, c.rails) / 8e9;
    if (node_GBps > 0) r->busbw_pct = 100 * r->busbw_GBps / node_GBps;
  }
  const double bound = rail_bound_us(c, r->bytes);
  if (bound > 0) r->rail_bound_us = bound;
}

namespace {

ScheduleWork work_of_schedule(Collective coll, const std::string& algo, const BenchContext& c, uint64_t bytes) {
  const Topology topo = Topology::from_node_sizes(c.ranks_per_node, std::max(1, c.rails));
  const Schedule s = build_schedule(coll, algo, topo, std::vector<uint64_t>(topo.nranks(), bytes), call_defaults(coll));
  const ScheduleStats st = s.stats();
  return {st.shm_bytes - st.reduce_bytes, st.reduce_bytes};
}

}  // namespace

bool work_of(const BenchContext& c, const std::string& algorithm, uint64_t bytes, ScheduleWork* w) {
  Collective coll;
  if (!parse_collective(c.collective, &coll) || !traits(coll).moves_data || c.ranks_per_node.empty()) return false;
  if (find_algorithm(coll, algorithm)) {
    try {
      *w = work_of_schedule(coll, algorithm, c, bytes);
      return true;
    } catch (const InputError&) {
      return false;
    }
  }
  bool any = false;
  for (const AlgoSpec& s : all_algorithms()) {
    if (s.collective != coll || software_equivalent(coll, s.name) != s.name) continue;
    try {
      ScheduleWork x = work_of_schedule(coll, s.name, c, bytes);
      const double cost = compute_bound_us(x, c), best = compute_bound_us(*w, c);
      if (!any || cost < best || (cost == best && x.copy_bytes + x.reduce_bytes < w->copy_bytes + w->reduce_bytes))
        *w = x;
      any = true;
    } catch (const InputError&) {
      // an algorithm this topology does not take
    }
  }
  return any;
}

double compute_bound_us(const ScheduleWork& w, const BenchContext& c) {
  if (c.copy_Bps <= 0 || c.reduce_Bps <= 0) return 0;
  return (static_cast<double>(w.copy_bytes) / c.copy_Bps + static_cast<double>(w.reduce_bytes) / c.reduce_Bps) * 1e6;
}

void set_bounds(std::vector<BenchRecord>* recs, const BenchContext& c) {
  std::map<std::pair<std::string, uint64_t>, double> computed;  // (schedule asked for, bytes) -> us
  for (BenchRecord& r : *recs) {
    set_bandwidths(&r, c);
    const std::string algo = r.algorithm == "auto" && !r.chosen.empty() ? r.chosen : r.algorithm;
    auto key = std::make_pair(algo, r.bytes);
    if (!computed.count(key)) {
      ScheduleWork w;
      computed[key] = work_of(c, algo, r.bytes, &w) ? compute_bound_us(w, c) : 0;
    }
    if (computed[key] > 0) r.compute_bound_us = computed[key];
    const double rail = std::max(0.0, r.rail_bound_us), compute = std::max(0.0, r.compute_bound_us);
    const double t = judged_us(r);
    if ((rail > 0 || compute > 0) && t > 0) {
      r.binding = compute > rail ? "compute" : "rail";
      r.bound_pct = 100 * std::max(rail, compute) / t;
    }
  }
}

}  // namespace railcoll::bench
