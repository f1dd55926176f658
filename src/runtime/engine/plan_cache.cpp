#include "runtime/engine/plan_cache.hpp"

#include <sstream>
#include <tuple>

namespace railcoll::rt {

namespace {

uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 1099511628211ull; }

uint64_t hash_of(Collective c, const std::string& requested, const std::vector<uint64_t>& counts,
                 const AlgoOptions& o) {
  uint64_t h = mix(fnv(requested), static_cast<uint64_t>(c));
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

bool PlanCache::Entry::same(Collective c, const std::string& r, const std::vector<uint64_t>& n,
                            const AlgoOptions& o) const {
  return collective == c && counts == n && requested == r && options_key(opts) == options_key(o);
}

const Decision* PlanCache::find(Collective collective, const std::string& requested,
                                const std::vector<uint64_t>& counts, const AlgoOptions& opts) {
  const size_t slot = static_cast<size_t>(collective);
  if (slot < last_.size() && last_[slot] && last_[slot]->same(collective, requested, counts, opts))
    return &last_[slot]->decision;
  auto range = entries_.equal_range(hash_of(collective, requested, counts, opts));
  for (auto it = range.first; it != range.second; ++it)
    if (it->second.same(collective, requested, counts, opts)) {
      if (slot >= last_.size()) last_.resize(slot + 1, nullptr);
      last_[slot] = &it->second;
      return &it->second.decision;
    }
  return nullptr;
}

const Decision& PlanCache::add(Collective collective, const std::string& requested,
                               const std::vector<uint64_t>& counts, const AlgoOptions& opts, Decision d) {
  if (entries_.size() >= kMaxPlans) clear();
  const uint64_t h = hash_of(collective, requested, counts, opts);
  const Entry& e = entries_.emplace(h, Entry{collective, requested, opts, counts, std::move(d)})->second;
  const size_t slot = static_cast<size_t>(collective);
  if (slot >= last_.size()) last_.resize(slot + 1, nullptr);
  last_[slot] = &e;
  return e.decision;
}

void PlanCache::clear() {
  entries_.clear();
  last_.clear();
}

}  // namespace railcoll::rt
