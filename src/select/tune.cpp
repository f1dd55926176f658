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

std::vector<Measurement> measurements_from_json(const std::string& text, const std::string& origin) {
  using nlohmann::json;
  std::vector<json> objects;
  // A JSON list (bench --json, sim --json) or one object per line (records files).
  json doc = json::parse(text, nullptr, false);
  if (!doc.is_discarded() && doc.is_array()) {
    objects.assign(doc.begin(), doc.end());
  } else {
    std::istringstream lines(text);
    std::string line;
    for (int n = 1; std::getline(lines, line); ++n) {
      if (line.find_first_not_of(" \t\r") == std::string::npos || line[line.find_first_not_of(" \t")] == '#') continue;
      json j = json::parse(line, nullptr, false);
      if (j.is_discarded())
        throw InputError(origin + ":" + std::to_string(n) + ": not a JSON record: " + line.substr(0, 80));
      objects.push_back(j);
    }
  }
  std::vector<Measurement> out;
  for (const json& j : objects) {
    if (!j.is_object() || !j.contains("collective") || !j.contains("algorithm") || !j.contains("p50_us")) continue;
    if (j.contains("background") && j["background"].is_string() && !j["background"].get<std::string>().empty())
      continue;
    Measurement m;
    if (!j["collective"].is_string() || !parse_collective(j["collective"].get<std::string>(), &m.collective)) continue;
    auto number = [&](const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : -1.0; };
    m.algorithm = j["algorithm"].is_string() ? j["algorithm"].get<std::string>() : "";
    m.bytes = static_cast<uint64_t>(std::max(0.0, number("bytes")));
    m.ranks = static_cast<int>(number("ranks"));
    m.nodes = static_cast<int>(number("nodes"));
    m.rails = static_cast<int>(number("rails"));
    m.p50_us = number("p50_us");
    if (m.ranks < 1 || m.nodes < 1 || m.rails < 1) continue;
    m.ppn = j.contains("ppn") && j["ppn"].is_number() ? j["ppn"].get<int>() : (m.ranks + m.nodes - 1) / m.nodes;
    out.push_back(m);
  }
  return out;
}

}  // namespace railcoll
