#include <iostream>

#include "args.hpp"
#include "commands.hpp"
#include "core/schedule_io.hpp"
#include "select/select.hpp"

namespace railcoll::cli {

namespace {

// `--algo auto`: the algorithm selection picks for this topology and size (the
// environment and tuning file count, as for a program), put in its place.
std::vector<std::string> resolve_auto(const std::vector<std::string>& argv, const Args& a, Choice* chosen) {
  Collective coll;
  if (a.str("algo") != "auto" || a.positional().size() != 1 || !parse_collective(a.positional()[0], &coll)) return argv;
  *chosen = environment_selector().choose(coll, topology_from(a), a.size("bytes", 1));
  std::vector<std::string> out = argv;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == "--algo=auto") out[i] = "--algo=" + chosen->algorithm;
    if (out[i] == "--algo" && i + 1 < out.size() && out[i + 1] == "auto") out[++i] = chosen->algorithm;
  }
  return out;
}

}  // namespace

int cmd_show(const std::vector<std::string>& argv) {
  std::set<std::string> valued = kTopologyOptions;
  valued.insert(kScheduleOptions.begin(), kScheduleOptions.end());
  Choice chosen;
  Args a(resolve_auto(argv, Args(argv, {"json"}, valued), &chosen), {"json"}, valued);
  if (a.positional().size() != 1) throw UsageError("expects one collective, like: railcoll show allgather --algo bruck --ranks 9 --rails 2");
  ScheduleRequest r = schedule_request(a, a.positional()[0]);
  Schedule s = build_schedule(r.collective, r.algorithm, r.topo, r.counts, r.opts, r.given);
  if (a.flag("json")) {
    print_schedule_json(std::cout, s);
  } else {
    if (!chosen.algorithm.empty()) std::cout << "auto: " << chosen.algorithm << " (" << chosen.origin << ")\n";
    print_schedule_text(std::cout, s);
  }
  return 0;
}

}  // namespace railcoll::cli
