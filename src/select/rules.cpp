#include "select/rules.hpp"

#include <algorithm>
#include <iomanip>
#include <sstream>

namespace railcoll {

Situation situation(Collective collective, const Topology& topo, uint64_t bytes) {
  Situation s;
  s.collective = collective;
  s.ranks = static_cast<uint64_t>(topo.nranks());
  s.nodes = static_cast<uint64_t>(topo.nnodes());
  s.ppn = static_cast<uint64_t>(std::max(1, topo.max_node_size()));
  s.rails = static_cast<uint64_t>(topo.rails());
  s.bytes = bytes;
  return s;
}

bool Rule::matches(const Situation& s) const {
  return collective == s.collective && ranks.contains(s.ranks) && nodes.contains(s.nodes) && ppn.contains(s.ppn) &&
         rails.contains(s.rails) && bytes.contains(s.bytes) && node_bytes.contains(s.node_bytes());
}

bool Rule::overlaps(const Rule& o) const {
  return collective == o.collective && ranks.intersects(o.ranks) && nodes.intersects(o.nodes) &&
         ppn.intersects(o.ppn) && rails.intersects(o.rails) && bytes.intersects(o.bytes) &&
         node_bytes.intersects(o.node_bytes);
}

const Rule* first_match(const std::vector<Rule>& rules, const Situation& s) {
  for (const Rule& r : rules)
    if (r.matches(s)) return &r;
  return nullptr;
}

std::string exact_bytes(uint64_t b) {
  const char* suffix[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (u < 4 && b >= 1024 && b % 1024 == 0) b /= 1024, ++u;
  return std::to_string(b) + suffix[u];
}

namespace {

std::string range_text(const Range& r, bool in_bytes) {
  auto v = [&](uint64_t x) { return in_bytes ? exact_bytes(x) : std::to_string(x); };
  if (r.lo == r.hi) return v(r.lo);
  if (r.hi == kNoLimit) return ">= " + v(r.lo);
  if (r.lo == 0) return "<= " + v(r.hi);
  return v(r.lo) + ".." + v(r.hi);
}

}  // namespace

std::string conditions_text(const Rule& r) {
  std::string out;
  auto add = [&](const char* name, const Range& range, bool in_bytes) {
    if (range.any()) return;
    out += (out.empty() ? "" : ", ") + std::string(name) + " " + range_text(range, in_bytes);
  };
  // The tuning file's keys (tuning_file.hpp), so a rule printed reads as one written.
  add("ranks", r.ranks, false);
  add("nodes", r.nodes, false);
  add("ppn", r.ppn, false);
  add("rails", r.rails, false);
  add("bytes", r.bytes, true);
  add("node_bytes", r.node_bytes, true);
  return out.empty() ? "any" : out;
}

std::string rules_table_text(const std::vector<Rule>& rules) {
  size_t coll = 10, when = 4, algo = 9, origin = 4;
  for (const Rule& r : rules) {
    coll = std::max(coll, std::string(collective_name(r.collective)).size());
    when = std::max(when, conditions_text(r).size());
    algo = std::max(algo, r.algorithm.size());
    origin = std::max(origin, r.origin.size());
  }
  std::ostringstream o;
  o << std::left << std::setw(coll + 1) << "collective" << std::setw(when + 2) << "when" << std::setw(algo + 2) << "algorithm"
    << std::setw(origin + 2) << "from"
    << "why\n";
  for (const Rule& r : rules) {
    std::string line;
    std::ostringstream l;
    l << std::left << std::setw(coll + 1) << collective_name(r.collective) << std::setw(when + 2) << conditions_text(r)
      << std::setw(algo + 2) << r.algorithm << std::setw(origin + 2) << r.origin << r.reason;
    line = l.str();
    line.erase(line.find_last_not_of(' ') + 1);
    o << line << "\n";
  }
  return o.str();
}

std::string rules_table_markdown(const std::vector<Rule>& rules) {
  std::ostringstream o;
  o << "| collective | when | algorithm | from | why |\n|---|---|---|---|---|\n";
  for (const Rule& r : rules)
    o << "| " << collective_name(r.collective) << " | " << conditions_text(r) << " | " << r.algorithm << " | " << r.origin
      << " | " << r.reason << " |\n";
  return o.str();
}

}  // namespace railcoll
