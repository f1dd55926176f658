#include "cmd_cluster_slurm.hpp"

#include <iostream>

#include "args.hpp"
#include "testbed/slurm.hpp"

namespace railcoll::cli {

namespace cl = railcoll::cluster;

int slurm_up_on(const cl::Config& c, const std::string& verb) {
  try {
    cl::slurm_up(c);
  } catch (const cl::CommandError& e) {
    std::cerr << "railcoll cluster " << verb << ": Slurm did not start: " << e.what() << "\n";
    return 1;
  }
  std::cout << "slurm up: slurmctld (this host, " << cl::bridge_address(0) << ") and a slurmd in each of the "
            << c.nodes << " nodes, " << c.ppn << " CPUs each, partition 'rails'; srun --mpi=pmix or pmi2\n"
            << "export SLURM_CONF=" << cl::slurm_conf_path() << "\n";
  return 0;
}

void slurm_down_said(const std::string& verb) {
  if (int n = cl::slurm_down(); n > 0)
    std::cout << "cluster " << verb << ": stopped Slurm (" << n << (n == 1 ? " process" : " processes") << ")\n";
}

int cluster_slurm(const std::vector<std::string>& argv) {
  const std::string verb = argv.empty() ? "" : argv[0];
  Args a(std::vector<std::string>(argv.begin() + (argv.empty() ? 0 : 1), argv.end()), {}, {});
  if (!a.positional().empty()) throw UsageError("unexpected argument '" + a.positional().front() + "'");
  if (verb != "up" && verb != "down" && verb != "status")
    throw UsageError("railcoll cluster slurm up|down|status (Slurm on the emulated cluster)");
  if (!cl::is_root()) {
    std::cerr << "railcoll cluster slurm " << verb << " needs root (network namespaces, daemons)\n";
    return 2;
  }
  cl::StateLock lock;
  if (verb == "down") {
    slurm_down_said("slurm down");
    return 0;
  }
  if (verb == "status") {
    if (!cl::slurm_running()) {
      std::cout << "Slurm is not up (railcoll cluster slurm up starts it)\n";
      return 3;
    }
    std::cout << "Slurm is up: export SLURM_CONF=" << cl::slurm_conf_path() << "\n";
    return 0;
  }
  auto cfg = cl::load_state();
  if (!cfg) {
    std::cerr << "railcoll cluster slurm up: no emulated cluster is up (railcoll cluster up --slurm makes both)\n";
    return 2;
  }
  return slurm_up_on(*cfg, "slurm up");
}

}  // namespace railcoll::cli
