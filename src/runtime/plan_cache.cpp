#include "runtime/plan_cache.hpp"

#include <sstream>

namespace railcoll::rt {

namespace {

uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 1099511628211ull; }

uint64_t hash_of(Collective c, const std::string& algorithm, const std::vector<uint64_t>& counts,
                 const AlgoOptions& o) {
  uint64_t h = fnv(algorithm);
  for (uint64_t v : {static_cast<uint64_t>(c), o.stripe_threshold, static_cast<uint64_t>(o.concurrency),
                     static_cast<uint64_t>(o.root), static_cast<uint64_t>(o.dtype), static_cast<uint64_t>(o.redop)})
    h = mix(h, v);
  for (uint64_t n : counts) h = mix(h, n);
  return h;
}

}  // namespace

std::string plan_key(Collective collective, const std::string& algorithm, const std::vector<uint64_t>& counts,
                     const AlgoOptions& opts) {
  std::ostringstream key;
  key << collective_name(collective) << "/" << algorithm << "/" << opts.stripe_threshold << "/" << opts.concurrency
      << "/root " << opts.root << "/" << dtype_name(opts.dtype) << "/" << redop_name(opts.redop);
  for (auto c : counts) key << "," << c;
  return key.str();
}

bool PlanCache::Entry::same(Collective c, const std::string& a, const std::vector<uint64_t>& n,
                            const AlgoOptions& o) const {
  return collective == c && algorithm == a && counts == n && opts.stripe_threshold == o.stripe_threshold &&
         opts.concurrency == o.concurrency && opts.root == o.root && opts.dtype == o.dtype && opts.redop == o.redop;
}

const std::shared_ptr<const Plan>& PlanCache::get(const Topology& t, int me, Collective collective,
                                                  const std::string& algorithm, const std::vector<uint64_t>& counts,
                                                  const AlgoOptions& opts) {
  const uint64_t h = hash_of(collective, algorithm, counts, opts);
  auto range = entries_.equal_range(h);
  for (auto it = range.first; it != range.second; ++it)
    if (it->second.same(collective, algorithm, counts, opts)) return it->second.plan;
  if (size_ >= kMaxPlans) entries_.clear(), size_ = 0;
  auto plan = make_plan(t, me, collective, algorithm, counts, opts, plan_key(collective, algorithm, counts, opts));
  ++size_;
  return entries_.emplace(h, Entry{collective, algorithm, opts, counts, std::move(plan)})->second.plan;
}

}  // namespace railcoll::rt
