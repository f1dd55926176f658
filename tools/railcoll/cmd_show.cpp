#include <iostream>

#include "args.hpp"
#include "commands.hpp"
#include "core/schedule_io.hpp"

namespace railcoll::cli {

int cmd_show(const std::vector<std::string>& argv) {
  std::set<std::string> valued = kTopologyOptions;
  valued.insert(kScheduleOptions.begin(), kScheduleOptions.end());
  Args a(argv, {"json"}, valued);
  if (a.positional().size() != 1) throw UsageError("expects one collective, like: railcoll show allgather --algo bruck --ranks 9 --rails 2");
  ScheduleRequest r = schedule_request(a, a.positional()[0]);
  Schedule s = build_schedule(r.collective, r.algorithm, r.topo, r.counts, r.opts, r.given);
  if (a.flag("json"))
    print_schedule_json(std::cout, s);
  else
    print_schedule_text(std::cout, s);
  return 0;
}

}  // namespace railcoll::cli
