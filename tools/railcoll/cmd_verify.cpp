#include <chrono>
#include <iostream>

#include "args.hpp"
#include "commands.hpp"
#include "verify/sweep.hpp"
#include "verify/verifier.hpp"

namespace railcoll::cli {

namespace {

int verify_all() {
  size_t passed = 0, failed = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (auto& spec : all_algorithms()) {
    auto cases = sweep_cases(spec.collective, spec.name);
    SweepOutcome o = run_sweep(cases);
    passed += o.passed;
    failed += o.failed;
    std::cout << std::string(collective_name(spec.collective)) + "/" + spec.name << ": " << cases.size() << " cases, " << o.passed
              << " passed, " << o.failed << " failed\n";
    for (auto& f : o.failures) std::cout << "  FAIL " << f << "\n";
    std::cout.flush();
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "verified " << passed + failed << " schedules in " << static_cast<int>(secs + 0.5) << " s\n";
  std::cout << passed << " passed, " << failed << " failed\n";
  return failed ? 1 : 0;
}

}  // namespace

int cmd_verify(const std::vector<std::string>& argv) {
  std::set<std::string> valued = kTopologyOptions;
  valued.insert(kScheduleOptions.begin(), kScheduleOptions.end());
  Args a(argv, {"all"}, valued);
  if (a.flag("all")) {
    if (!a.positional().empty() || argv.size() != 1) throw UsageError("--all takes no other arguments");
    return verify_all();
  }
  if (a.positional().size() != 1)
    throw UsageError("expects --all, or one collective: railcoll verify allgather --algo bruck --ranks 9 --rails 2");
  ScheduleRequest r = schedule_request(a, a.positional()[0]);
  Schedule s = build_schedule(r.collective, r.algorithm, r.topo, r.counts, r.opts, r.given);
  VerifyResult v = verify_schedule(s);
  if (v.ok()) {
    std::cout << "ok: " << schedule_title(s) << " (" << v.ops << " operations)\n";
    return 0;
  }
  for (auto& e : v.errors) std::cout << "FAIL " << e << "\n";
  return 1;
}

}  // namespace railcoll::cli
