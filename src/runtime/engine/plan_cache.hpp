// The one plan cache of a communicator's calls (the call front end's,
// front_end.hpp): what selection and planning decided for a call, found again
// by the call itself (collective, requested algorithm, sizes, options) without
// building a key string: a call that repeats the last one of its collective
// costs a comparison, any other a hash of its arguments (docs/runtime.md, "The
// latency path", has what a string key cost).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/engine/plan.hpp"

namespace railcoll::rt {

// What selection and planning decided for one call.
struct Decision {
  std::string algorithm;  // the one that runs (a hardware algorithm's software twin)
  std::shared_ptr<const Plan> plan;
};

class PlanCache {
 public:
  // The decision for a call like this one, or null. `requested`: the
  // algorithm the call names ("" for selection's choice).
  const Decision* find(Collective collective, const std::string& requested, const std::vector<uint64_t>& counts,
                       const AlgoOptions& opts);
  // Keeps `d` for calls like this one. The reference lives until the cache is
  // full and starts again (a plan the caller holds outlives that: shared).
  const Decision& add(Collective collective, const std::string& requested, const std::vector<uint64_t>& counts,
                      const AlgoOptions& opts, Decision d);
  size_t size() const { return entries_.size(); }
  void clear();

  // At most this many decisions are kept; then the cache starts again empty.
  static constexpr size_t kMaxPlans = 256;

 private:
  struct Entry {
    Collective collective;
    std::string requested;
    AlgoOptions opts;
    std::vector<uint64_t> counts;
    Decision decision;
    bool same(Collective c, const std::string& r, const std::vector<uint64_t>& n, const AlgoOptions& o) const;
  };
  std::unordered_multimap<uint64_t, Entry> entries_;
  std::vector<const Entry*> last_;  // per collective: its last call (elements of entries_ keep their address)
};

// The text every rank derives a call's signature from (Plan::sig = fnv of it).
std::string plan_key(Collective collective, const std::string& algorithm, const std::vector<uint64_t>& counts,
                     const AlgoOptions& opts);

}  // namespace railcoll::rt
