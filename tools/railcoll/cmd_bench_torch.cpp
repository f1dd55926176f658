// railcoll bench --torch COLL[,COLL...]: the same torch program over gloo and
// over railcoll (python -m railcoll.bench, docs/torch.md), on the emulated
// cluster (`railcoll cluster torchrun`, one agent per node), or on local
// processes when asked (--local: torchrun --standalone). This process becomes the
// launcher (exec), so its exit status is the job's.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "args.hpp"
#include "commands.hpp"
#include "core/errors.hpp"
#include "testbed/where.hpp"
#include "testbed/spawn.hpp"

namespace railcoll::cli {

int cmd_bench_torch(const std::vector<std::string>& argv) {
  Args a(argv, {"local", "call-cost"}, {"torch", "m", "json", "ppn", "n", "rounds"});
  if (!a.positional().empty()) throw UsageError("unexpected argument '" + a.positional().front() + "'");
  std::vector<std::string> bench = {"-m", "railcoll.bench", "--colls", a.str("torch")};
  if (a.has("m")) {
    uint64_t lo = 8, hi = 64ull << 20;
    size_range(a, &lo, &hi);
    bench.insert(bench.end(), {"--min-size", std::to_string(lo), "--max-size", std::to_string(hi)});
  }
  if (a.has("json")) bench.insert(bench.end(), {"--json", std::filesystem::absolute(a.str("json")).string()});
  if (a.has("rounds")) bench.insert(bench.end(), {"--rounds", std::to_string(a.integer("rounds", 3, 1, 1000))});
  if (a.flag("call-cost")) bench.push_back("--call-cost");

  // The package beside this command in a build tree (build/bin/../python).
  const std::string exe = testbed::self_exe();
  const std::filesystem::path pkg = std::filesystem::path(exe).parent_path() / ".." / "python" / "railcoll";
  if (std::filesystem::exists(pkg)) {
    std::string path = pkg.parent_path().lexically_normal().string();
    if (const char* old = std::getenv("PYTHONPATH"); old && *old) path += std::string(":") + old;
    setenv("PYTHONPATH", path.c_str(), 1);
  }

  std::vector<std::string> cmd;
  const bool cluster = testbed::cluster_unless_local(a.flag("local"));
  if (cluster) {
    cmd = {exe, "cluster", "torchrun"};
    if (a.has("ppn")) cmd.insert(cmd.end(), {"--nproc-per-node", std::to_string(a.integer("ppn", 1, 1, 4096))});
    cmd.push_back("--");
  } else {
    // One node: every rank in shared memory, the rails on loopback.
    setenv("RAILCOLL_RAILS", "127.0.0.1,127.0.0.2", 0);
    cmd = {"python3", "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
           std::to_string(a.integer("n", 4, 1, 4096))};
  }
  cmd.insert(cmd.end(), bench.begin(), bench.end());
  std::vector<char*> args;
  for (auto& s : cmd) args.push_back(s.data());
  args.push_back(nullptr);
  execvp(args[0], args.data());
  std::cerr << "railcoll bench --torch: cannot start " << cmd[0] << ": " << strerror(errno) << "\n";
  return 1;
}

}  // namespace railcoll::cli
