#include "bench/plot.hpp"

#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "bench/report.hpp"
#include "testbed/spawn.hpp"

namespace railcoll::bench {

std::string plot_script_path() {
  if (const char* env = getenv("RAILCOLL_PLOT_SCRIPT"); env && *env) return env;
  std::string exe = testbed::self_exe();
  std::string bin = exe.substr(0, exe.rfind('/'));
  return bin.substr(0, bin.rfind('/')) + "/share/railcoll/plot_bench.py";
}

bool write_plot(const std::vector<BenchRecord>& recs, const std::string& path, const std::string& title,
                const std::string& x_label) {
  const std::string script = plot_script_path();
  if (access(script.c_str(), R_OK) != 0) {
    std::cerr << "railcoll: cannot plot: no plot script at " << script << " (set RAILCOLL_PLOT_SCRIPT)\n";
    return false;
  }
  char tmpl[] = "/tmp/railcoll-plot-XXXXXX.json";
  int fd = mkstemps(tmpl, 5);
  if (fd < 0) {
    std::cerr << "railcoll: cannot plot: no temporary file in /tmp\n";
    return false;
  }
  close(fd);
  write_json(tmpl, recs);
  const std::string collective = recs.empty() ? "" : recs.front().collective;
  std::vector<std::string> argv = {"python3", script, tmpl, path, "--title", title, "--xlabel", x_label};
  if (summary_metric(collective, recs).span) argv.insert(argv.end(), {"--metric", "span_p50_us"});
  testbed::RunResult r;
  try {
    r = testbed::run(argv, 300);
  } catch (const testbed::SpawnError& e) {
    r.status.code = 127, r.err = e.what();
  }
  unlink(tmpl);
  if (r.code() != 0) {
    std::cerr << "railcoll: plotting failed (status " << r.code()
              << "; is matplotlib installed? make deps installs it): " << r.err.substr(0, 2000) << "\n";
    return false;
  }
  return true;
}

}  // namespace railcoll::bench
