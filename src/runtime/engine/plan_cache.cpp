#include "runtime/engine/plan_cache.hpp"

#include <sstream>
#include <tuple>

namespace railcoll::rt {

namespace {

uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 1099511628211ull; }

uint64_t hash_of(Collective c, const std::string& algorithm, const std::vector<uint64_t>& counts,
                 const AlgoOptions& o) {
  uint64_t h = mix(fnv(algorithm), static_cast<uint64_t>(c));
  std::apply([&](auto... v) { ((h = mix(h, static_cast<uint64_t>(v))), ...); }, options_key(o));
  for (uint64_t n : counts) h = mix(h, n);
  return h;
}

}  // namespace

std::string plan_key(Collective collective, const std::string& algorithm, const std::vector<uint64_t>& counts,
                     const AlgoOptions& opts) {
  std::ostringstream key;
  key << collective_name(collective) << "/" << algorithm << "/" << opts.stripe_threshold << "/" << opts.concurrency
      << "/root " << opts.root << "/" << dtype_name(opts.dtype) << "/" << redop_name(opts.redop);
  if (opts.redop == ReduceOp::User) key << "/" << opts.elem_bytes << (opts.commutative ? "" : "/ordered");
  for (auto c : counts) key << "," << c;
  return key.str();
}

bool PlanCache::Entry::same(Collective c, const std::string& a, const std::vector<uint64_t>& n,
                            const AlgoOptions& o) const {
  return collective == c && algorithm == a && counts == n && options_key(opts) == options_key(o);
}

const std::shared_ptr<const Plan>& PlanCache::get(const Topology& t, int me, Collective collective,
                                                  const std::string& algorithm, const std::vector<uint64_t>& counts,
                                                  const AlgoOptions& opts) {
  const uint64_t h = hash_of(collective, algorithm, counts, opts);
  auto range = entries_.equal_range(h);
  for (auto it = range.first; it != range.second; ++it)
    if (it->second.same(collective, algorithm, counts, opts)) return it->second.plan;
  if (entries_.size() >= kMaxPlans) entries_.clear();
  auto plan = make_plan(t, me, collective, algorithm, counts, opts, plan_key(collective, algorithm, counts, opts));
  return entries_.emplace(h, Entry{collective, algorithm, opts, counts, std::move(plan)})->second.plan;
}

}  // namespace railcoll::rt
