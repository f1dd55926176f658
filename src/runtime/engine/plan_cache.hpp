// The plans of a communicator's calls, built once per (collective, algorithm,
// options, sizes) and found again without building a key string: a call that
// repeats the last one costs a hash of its arguments and a comparison (the
// ostringstream key this replaced was a third of an 8 B call's instructions,
// docs/runtime.md, "The latency path").
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/engine/plan.hpp"

namespace railcoll::rt {

class PlanCache {
 public:
  // The plan for this call on rank `me`, made by make_plan the first time.
  // Shared, so a plan the caller holds outlives the cache starting again.
  const std::shared_ptr<const Plan>& get(const Topology& t, int me, Collective collective,
                                         const std::string& algorithm, const std::vector<uint64_t>& counts,
                                         const AlgoOptions& opts);
  size_t size() const { return entries_.size(); }

  // At most this many plans are kept; then the cache starts again empty.
  static constexpr size_t kMaxPlans = 256;

 private:
  struct Entry {
    Collective collective;
    std::string algorithm;
    AlgoOptions opts;
    std::vector<uint64_t> counts;
    std::shared_ptr<const Plan> plan;
    bool same(Collective c, const std::string& a, const std::vector<uint64_t>& n, const AlgoOptions& o) const;
  };
  std::unordered_multimap<uint64_t, Entry> entries_;
};

// The text every rank derives a call's signature from (Plan::sig = fnv of it).
std::string plan_key(Collective collective, const std::string& algorithm, const std::vector<uint64_t>& counts,
                     const AlgoOptions& opts);

}  // namespace railcoll::rt
