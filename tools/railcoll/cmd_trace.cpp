// railcoll trace DIR | --compare MEASURED SIMULATED: the ranks' trace-event
// files (RAILCOLL_TRACE, src/runtime/observe/trace_sink.hpp) merged, summed up
// and drawn by scripts/plot_trace.py (installed next to plot_bench.py; JSON and
// matplotlib are Python's strengths, and the picture needs matplotlib anyway).
#include <unistd.h>

#include <iostream>

#include "commands.hpp"
#include "testbed/spawn.hpp"

namespace railcoll::cli {

int cmd_trace(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::cerr << "usage: railcoll trace DIR [--png FILE] [--call N] | trace --compare MEASURED SIMULATED\n";
    return 2;
  }
  const std::string exe = testbed::self_exe();
  const std::string bin = exe.substr(0, exe.rfind('/'));
  const std::string script = bin.substr(0, bin.rfind('/')) + "/share/railcoll/plot_trace.py";
  if (access(script.c_str(), R_OK) != 0) {
    std::cerr << "railcoll trace: no script at " << script << "\n";
    return 1;
  }
  std::vector<std::string> argv = {"python3", script};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  std::cout.flush();
  execvp("python3", cargv.data());
  std::cerr << "railcoll trace: cannot run python3\n";
  return 1;
}

}  // namespace railcoll::cli
