#include "select/tune.hpp"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "core/errors.hpp"
#include "core/registry.hpp"

namespace railcoll {

namespace {

using Shape = std::tuple<Collective, int, int, int, int>;  // collective, ranks, nodes, ppn, rails

// The first byte of the upper size's range between measured sizes a < b.
uint64_t boundary(uint64_t a, uint64_t b) {
  if (a == 0) return (b + 1) / 2;  // no geometric mean with 0: the midpoint
  uint64_t g = static_cast<uint64_t>(std::llround(std::sqrt(static_cast<double>(a) * static_cast<double>(b))));
  return std::min(b, std::max(a + 1, g));
}

Range exactly(int v) { return {static_cast<uint64_t>(v), static_cast<uint64_t>(v)}; }

}  // namespace

std::vector<Rule> rules_from_measurements(const std::vector<Measurement>& records) {
  // shape -> bytes -> (p50, algorithm) of the fastest so far; registry order breaks ties.
  std::map<Shape, std::map<uint64_t, std::pair<double, std::string>>> best;
  for (const Measurement& m : records) {
    if (!find_algorithm(m.collective, m.algorithm) || !std::isfinite(m.p50_us) || m.p50_us < 0) continue;
    auto& at = best[{m.collective, m.ranks, m.nodes, m.ppn, m.rails}];
    auto it = at.find(m.bytes);
    if (it == at.end() || m.p50_us < it->second.first) at[m.bytes] = {m.p50_us, m.algorithm};
  }
  std::vector<Rule> rules;
  for (auto& [shape, sizes] : best) {
    auto [collective, ranks, nodes, ppn, rails] = shape;
    std::vector<std::pair<uint64_t, std::string>> winners;  // measured size, winner
    for (auto& [bytes, win] : sizes) winners.push_back({bytes, win.second});
    for (size_t i = 0; i < winners.size();) {
      size_t j = i;
      while (j + 1 < winners.size() && winners[j + 1].second == winners[i].second) ++j;
      Rule r;
      r.collective = collective;
      r.ranks = exactly(ranks);
      r.nodes = exactly(nodes);
      r.ppn = exactly(ppn);
      r.rails = exactly(rails);
      r.bytes.lo = i == 0 ? winners[i].first : boundary(winners[i - 1].first, winners[i].first);
      r.bytes.hi = j + 1 == winners.size() ? winners[j].first : boundary(winners[j].first, winners[j + 1].first) - 1;
      r.algorithm = winners[i].second;
      r.reason = i == j ? "fastest measured at " + exact_bytes(winners[i].first) + " bytes"
                        : "fastest at " + std::to_string(j - i + 1) + " measured sizes, " +
                              exact_bytes(winners[i].first) + " to " + exact_bytes(winners[j].first) + " bytes";
      rules.push_back(r);
      i = j + 1;
    }
  }
  return rules;
}


}  // namespace railcoll
