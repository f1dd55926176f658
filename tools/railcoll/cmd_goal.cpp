// railcoll goal export COLL --algo A --ranks N [--ppn P|--nodes ...] [--rails K] [--bytes B] [-o FILE]
// railcoll goal import FILE [--rails K] [--preset P]
//
// Schedules in LogGOPSim's GOAL text format (src/sim/goal.hpp, docs/goal.md):
// export an algorithm for LogGOPSim's txt2bin, or import a GOAL schedule and
// run it in railcoll's simulator.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "args.hpp"
#include "commands.hpp"
#include "core/errors.hpp"
#include "sim/engine.hpp"
#include "sim/goal.hpp"

namespace railcoll::cli {

namespace {

const char* kGoalUsage =
    "usage: railcoll goal export COLL --algo A --ranks N [--ppn P|--nodes ...] [--rails K] [--bytes B] [-o FILE]; "
    "railcoll goal import FILE [--rails K] [--preset P]";

int goal_export(const std::vector<std::string>& argv) {
  std::set<std::string> valued = kTopologyOptions;
  valued.insert(kScheduleOptions.begin(), kScheduleOptions.end());
  valued.insert("o");
  Args a(argv, {}, valued);
  if (a.positional().size() != 1) throw UsageError(kGoalUsage);
  ScheduleRequest r = schedule_request(a, a.positional()[0]);
  Schedule s = build_schedule(r.collective, r.algorithm, r.topo, r.counts, r.opts, r.given);
  if (!a.has("o")) {
    sim::write_goal(s, std::cout);  // checks the schedule before it writes a line
    return 0;
  }
  // Written next to the file and renamed over it at the end: no half-written
  // output on error (a schedule that deadlocks, a full disk).
  const std::string path = a.str("o"), part = path + ".part";
  std::ofstream f(part, std::ios::binary);
  if (!f) throw InputError("cannot write " + path);
  try {
    sim::write_goal(s, f);
  } catch (...) {
    f.close();
    std::remove(part.c_str());
    throw;
  }
  if (!f.flush() || (f.close(), !f) || std::rename(part.c_str(), path.c_str()) != 0) {
    std::remove(part.c_str());
    throw InputError("cannot write " + path);
  }
  return 0;
}

int goal_import(const std::vector<std::string>& argv) {
  Args a(argv, {}, {"preset", "rails"});
  if (a.positional().size() != 1) throw UsageError(kGoalUsage);
  const std::string& path = a.positional()[0];
  std::ifstream f(path);
  if (!f) throw InputError("cannot read " + path);
  int rails = static_cast<int>(a.integer("rails", 1, 1, 64));
  Schedule s;
  try {
    s = sim::read_goal(f, rails);
  } catch (const InputError& e) {
    throw InputError(path + ": " + e.what());  // name the file with the line
  }
  ScheduleStats st = s.stats();
  if (!a.has("preset")) {
    size_t ops = 0;
    for (auto& p : s.programs) ops += p.size();
    std::cout << path << ": " << s.topo.nranks() << " ranks, " << ops << " ops, " << st.messages << " messages, "
              << st.net_bytes << " bytes\n";
    return 0;
  }
  sim::Machine m = sim::load_machine(a.str("preset"));
  sim::SimResult res = sim::simulate(s, m);  // checks the fit before any output
  std::cout << path << " on " << m.name << ": " << s.topo.nranks() << " ranks, " << st.messages << " messages\n"
            << "finish time: max " << res.max_us << " us, avg " << res.avg_us << " us\n"
            << "events: " << res.events << "\n";
  return 0;
}

}  // namespace

int cmd_goal(const std::vector<std::string>& args) {
  if (args.empty()) throw UsageError(kGoalUsage);
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "export") return goal_export(rest);
  if (args[0] == "import") return goal_import(rest);
  throw UsageError(std::string("unknown goal action '") + args[0] + "'; " + kGoalUsage);
}

}  // namespace railcoll::cli
