// railcoll run -n N [--ppn P] [--rails K] [--timeout S] -- PROG ARGS...
// The local launcher: N processes on this machine. With --ppn the ranks are cut
// into pretend nodes (shared memory inside, loopback sockets between); --rails K
// gives every rank K loopback addresses to use as rails.
#include <glob.h>
#include <unistd.h>

#include <iostream>

#include "args.hpp"
#include "commands.hpp"
#include "launch/job.hpp"

namespace railcoll::cli {

namespace {
std::vector<std::string> split_at_dashes(const std::vector<std::string>& argv, std::vector<std::string>* prog) {
  std::vector<std::string> opts;
  bool after = false;
  for (auto& a : argv) {
    if (!after && a == "--") {
      after = true;
      continue;
    }
    (after ? *prog : opts).push_back(a);
  }
  return opts;
}
// Belt and braces: the runtime unlinks its segments as soon as they are mapped.
void remove_job_shm(const std::string& job_id) {
  glob_t g{};
  std::string pattern = "/dev/shm/railcoll-" + job_id + "-*";
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) unlink(g.gl_pathv[i]);
  globfree(&g);
}

std::vector<launch::RankProcess> local_job(int n, int ppn, int rails, const std::vector<std::string>& prog,
                                           std::string* job_id) {
  *job_id = launch::new_job_id();
  const std::string key = launch::new_job_key();
  std::string store = "127.0.0.1:" + std::to_string(launch::free_port("127.0.0.1"));
  std::string rail_list;
  for (int r = 0; r < rails; ++r) rail_list += (r ? ",127.0.0." : "127.0.0.") + std::to_string(r + 1);
  std::vector<launch::RankProcess> ranks;
  for (int r = 0; r < n; ++r) {
    int node = ppn > 0 ? r / ppn : 0;
    int local = ppn > 0 ? r % ppn : r;
    int local_size = ppn > 0 ? std::min(ppn, n - node * ppn) : n;
    launch::RankProcess p;
    p.argv = prog;
    p.env = launch::rank_env(r, n, local, local_size, node, store, *job_id, key, rail_list);
    if (ppn <= 0) p.env.erase("RAILCOLL_NODE");  // one real node: its hostname
    ranks.push_back(std::move(p));
  }
  return ranks;
}

}  // namespace

int cmd_run(const std::vector<std::string>& argv) {
  std::vector<std::string> prog;
  auto opts = split_at_dashes(argv, &prog);
  Args a(opts, {}, {"n", "np", "ppn", "rails", "timeout"});
  if (!a.positional().empty() || prog.empty())
    throw UsageError("usage: railcoll run -n N [--ppn P] [--rails K] [--timeout S] -- PROG ARGS...");
  int n = static_cast<int>(a.has("np") ? a.integer("np", 1, 1, 1024) : a.integer("n", 0, 1, 1024));
  if (n == 0) throw UsageError("-n N (the number of ranks) is required");
  int ppn = static_cast<int>(a.integer("ppn", 0, 1, 1024));
  int rails = static_cast<int>(a.integer("rails", 1, 1, 8));
  double timeout = static_cast<double>(a.integer("timeout", 0, 0, 7 * 86400));
  std::string job;
  auto ranks = local_job(n, ppn, rails, prog, &job);
  auto res = launch::run_job(ranks, 10, timeout);
  remove_job_shm(job);
  if (res.exit_status != 0) std::cerr << "railcoll run: " << res.failure << "\n";
  return res.exit_status;
}

}  // namespace railcoll::cli
