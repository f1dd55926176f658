// railcoll algos [--json | --rules [--markdown]]: the registered algorithms, or
// the selection rules in force and where each came from (src/select).
#include <iomanip>
#include <iostream>

#include "args.hpp"
#include "commands.hpp"
#include "select/select.hpp"

namespace railcoll::cli {

namespace {

int print_rules(bool markdown) {
  const Selector& s = environment_selector();
  std::vector<Rule> rules = s.rules_in_force();
  if (markdown) {
    std::cout << rules_table_markdown(rules);
    return 0;
  }
  std::cout << "# first match wins; a call's own algorithm option comes before all of these\n"
            << "# (RAILCOLL_<COLL>_ALGO, then RAILCOLL_TUNING="
            << (s.tuning_path().empty() ? "(unset)" : s.tuning_path()) << ", then the defaults; docs/selection.md)\n"
            << rules_table_text(rules);
  return 0;
}

}  // namespace

int cmd_algos(const std::vector<std::string>& argv) {
  Args a(argv, {"json", "rules", "markdown"}, {});
  if (!a.positional().empty()) throw UsageError("takes no arguments besides --json or --rules [--markdown]");
  if (a.flag("json") && a.flag("rules")) throw UsageError("give --json or --rules, not both");
  if (a.flag("markdown") && !a.flag("rules")) throw UsageError("--markdown goes with --rules");
  if (a.flag("rules")) return print_rules(a.flag("markdown"));
  if (a.flag("json")) {
    std::cout << "[";
    bool first = true;
    for (auto& s : all_algorithms()) {
      std::cout << (first ? "" : ",") << "\n {\"collective\":\"" << collective_name(s.collective) << "\",\"algorithm\":\"" << s.name
                << "\",\"summary\":\"" << s.summary << "\",\"cost\":\"" << s.cost << "\",\"source\":\"" << s.source
                << "\",\"keeps_rank_order\":" << (s.keeps_order ? "true" : "false") << ",\"options\":[";
      for (size_t i = 0; i < s.options.size(); ++i) std::cout << (i ? "," : "") << "\"" << s.options[i] << "\"";
      std::cout << "]}";
      first = false;
    }
    std::cout << "\n]\n";
    return 0;
  }
  for (Collective coll : user_collectives()) {
    std::cout << collective_name(coll) << ":\n";
    for (auto& s : all_algorithms()) {
      if (coll != s.collective) continue;
      std::cout << "  " << std::left << std::setw(27) << s.name << s.summary
                << (traits(coll).reducing && s.keeps_order ? " (keeps rank order)" : "") << "  [" << s.source << "]\n";
    }
  }
  return 0;
}

}  // namespace railcoll::cli
