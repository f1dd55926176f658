// Selection rules as data: a rule names a collective, the situations it covers
// (ranges of ranks, nodes, ranks per node, rails, bytes per rank and bytes per
// node; an omitted range covers everything) and the algorithm to run there.
// The defaults (defaults.cpp), a tuning file (tuning_file.hpp) and the
// environment all become rules of this one kind, and one evaluator picks among
// them (select.hpp).
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/collective.hpp"
#include "core/topology.hpp"

namespace railcoll {

constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();

// Inclusive: lo <= v <= hi.
struct Range {
  uint64_t lo = 0, hi = kNoLimit;
  bool contains(uint64_t v) const { return lo <= v && v <= hi; }
  bool any() const { return lo == 0 && hi == kNoLimit; }
  bool intersects(const Range& o) const { return lo <= o.hi && o.lo <= hi; }
  bool operator==(const Range& o) const { return lo == o.lo && hi == o.hi; }
};

// One call as selection sees it. ppn: ranks on the largest node; bytes: per
// rank (all-gatherv: the largest block; allreduce: the vector).
struct Situation {
  Collective collective = Collective::Allgather;
  uint64_t ranks = 1, nodes = 1, ppn = 1, rails = 1, bytes = 0;
  uint64_t node_bytes() const { return bytes > kNoLimit / ppn ? kNoLimit : bytes * ppn; }
};
Situation situation(Collective collective, const Topology& topo, uint64_t bytes);

struct Rule {
  Collective collective = Collective::Allgather;
  Range ranks, nodes, ppn, rails, bytes, node_bytes;
  std::string algorithm;
  std::string origin;  // "default#3", "file:PATH#0", "RAILCOLL_BCAST_ALGO"
  std::string reason;  // why (defaults: where the threshold came from); may be empty

  bool matches(const Situation& s) const;
  // Both rules can match one situation (every range intersects).
  bool overlaps(const Rule& o) const;
};

// The first rule that matches, or nullptr.
const Rule* first_match(const std::vector<Rule>& rules, const Situation& s);

// "ppn >= 2, node_bytes <= 8K" (the tuning file's keys), or "any" when every
// range is open.
std::string conditions_text(const Rule& r);
// "8K", "1M", "8193": exact, a K/M/G suffix only for whole multiples.
std::string exact_bytes(uint64_t b);

// One line per rule (collective, conditions, algorithm, origin, reason) under a
// header line, and the same as a Markdown table (docs/selection.md holds the
// defaults so, checked by a test).
std::string rules_table_text(const std::vector<Rule>& rules);
std::string rules_table_markdown(const std::vector<Rule>& rules);

}  // namespace railcoll
