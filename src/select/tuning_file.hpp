// The tuning file (RAILCOLL_TUNING=path): JSON rules that take precedence over
// the defaults, written by `railcoll tune` and `railcoll sim tune` or by hand.
//
//   {"railcoll_tuning": 1,
//    "comment": "free text",
//    "rules": [
//      {"collective": "allgather", "ranks": 16, "nodes": 4, "ppn": 4, "rails": 2,
//       "bytes": [0, 1447], "algorithm": "smp_bruck"},
//      {"collective": "bcast", "bytes": [65536, null], "algorithm": "pipelined_chain"}]}
//
// A range is a number (exactly that) or [lo, hi], both ends included, hi null
// for no upper limit; an omitted range covers everything. Ranges: ranks, nodes,
// ppn (ranks on the largest node), rails, bytes (per rank), node_bytes (bytes x
// ppn). A rule may carry a "comment". No two rules may both match one call.
#pragma once
#include <string>
#include <vector>

#include "select/rules.hpp"

namespace railcoll {

// Parses and checks; every rule's origin is "file:PATH#INDEX". Throws
// InputError naming the file and the rule: "t.json: rule #2: unknown allgather
// algorithm 'x' (one of: ...)".
std::vector<Rule> load_tuning_file(const std::string& path);
std::vector<Rule> parse_tuning(const std::string& text, const std::string& path);

// The file's text for `rules`, and writing it (InputError if it cannot).
std::string tuning_json(const std::vector<Rule>& rules, const std::string& comment);
void write_tuning_file(const std::string& path, const std::vector<Rule>& rules, const std::string& comment);

}  // namespace railcoll
