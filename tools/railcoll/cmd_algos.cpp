#include <iomanip>
#include <iostream>

#include "args.hpp"
#include "commands.hpp"

namespace railcoll::cli {

int cmd_algos(const std::vector<std::string>& argv) {
  Args a(argv, {"json"}, {});
  if (!a.positional().empty()) throw UsageError("takes no arguments besides --json");
  if (a.flag("json")) {
    std::cout << "[";
    bool first = true;
    for (auto& s : all_algorithms()) {
      std::cout << (first ? "" : ",") << "\n {\"collective\":\"" << collective_name(s.collective) << "\",\"algorithm\":\"" << s.name
                << "\",\"summary\":\"" << s.summary << "\",\"cost\":\"" << s.cost << "\",\"source\":\"" << s.source
                << "\",\"options\":[";
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
      std::cout << "  " << std::left << std::setw(27) << s.name << s.summary << "  [" << s.source << "]\n";
    }
  }
  return 0;
}

}  // namespace railcoll::cli
