// railcoll traffic --pattern complement|uniform|hotspot [--seconds T]: one rank
// of the background-traffic generator (src/testbed/traffic.hpp), started one
// per node by a launcher. Without arguments it prints its usage.
#include <iostream>

#include "args.hpp"
#include "commands.hpp"
#include "testbed/traffic.hpp"
#include "usage.hpp"

namespace railcoll::cli {

int cmd_traffic(const std::vector<std::string>& argv) {
  if (argv.empty()) {  // not a generator that runs for a minute by surprise
    std::cerr << verb_usage("traffic");
    return 2;
  }
  Args a(argv, {}, {"pattern", "seconds"});
  if (!a.positional().empty()) throw UsageError("unexpected argument '" + a.positional()[0] + "'");
  if (!a.has("pattern")) throw UsageError(std::string("--pattern is required: ") + kBackgroundPatternNames);
  BackgroundPattern pattern;
  if (!parse_background(a.str("pattern"), &pattern) || pattern == BackgroundPattern::None)
    throw UsageError(std::string("--pattern must be one of ") + kBackgroundPatternNames);
  double seconds = static_cast<double>(a.integer("seconds", 60, 1, 3600));
  testbed::TrafficResult r = testbed::run_traffic(pattern, seconds);
  std::cout << "railcoll traffic: rank " << r.rank << " (" << background_name(pattern) << ") sent "
            << r.sent_bytes / (1 << 20) << " MiB\n";
  return 0;
}

}  // namespace railcoll::cli
