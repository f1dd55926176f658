#include "testbed/cluster_job.hpp"

#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include "core/errors.hpp"
#include "testbed/spawn.hpp"

extern char** environ;

namespace railcoll::testbed {

namespace cl = railcoll::cluster;

ClusterJob prepare_cluster_job(const ClusterJobRequest& req) {
  if (req.program.empty()) throw InputError("give the program to run after --, e.g. -- hostname");
  if (!cl::is_root()) throw InputError("needs root (network namespaces)");
  std::optional<cl::Config> cfg;
  try {
    cfg = cl::load_state();
  } catch (const cl::ClusterInputError& e) {
    throw InputError(e.what());
  }
  if (!cfg) throw InputError("no cluster is up (`railcoll cluster up` creates one)");
  ClusterJob job;
  job.cfg = *cfg;
  // A missing node would fail every one of its ranks with a less clear message.
  const auto ns = cl::scan().namespaces;
  for (int i = 0; i < job.cfg.nodes; ++i)
    if (std::find(ns.begin(), ns.end(), cl::node_name(i)) == ns.end())
      throw cl::CommandError("the cluster is damaged: namespace " + cl::node_name(i) + " is missing (see status)");
  job.rails = req.rails > 0 ? req.rails : job.cfg.rails;
  if (job.rails > job.cfg.rails)
    throw InputError("--rails " + std::to_string(job.rails) + " but the cluster has only " +
                     std::to_string(job.cfg.rails) + " rails");
  if (req.layout.empty()) {
    int ppn = req.ppn > 0 ? req.ppn : job.cfg.ppn;
    if (ppn > cl::kMaxPpn) throw InputError("--ppn must be between 1 and " + std::to_string(cl::kMaxPpn));
    job.layout.assign(job.cfg.nodes, ppn);
  } else {
    job.layout = req.layout;
    if (static_cast<int>(job.layout.size()) > job.cfg.nodes)
      throw InputError("the layout " + layout_text(job.layout) + " names " + std::to_string(job.layout.size()) +
                       " nodes but the cluster has " + std::to_string(job.cfg.nodes));
    for (int n : job.layout)
      if (n < 1 || n > cl::kMaxPpn)
        throw InputError("a node holds 1 to " + std::to_string(cl::kMaxPpn) + " ranks, the layout " +
                         layout_text(job.layout) + " asks for " + std::to_string(n));
  }
  // Resolved here, with the launcher's PATH: inside the node the program is
  // started by an exec chain that must not depend on where it looks.
  std::string prog = cl::resolve_program(req.program[0]);
  if (prog.empty()) throw InputError("cannot find an executable '" + req.program[0] + "' (PATH or path)");
  job.program = req.program;
  job.program[0] = prog;
  return job;
}

namespace {

int store_port() {
  // Rank 0 binds 198.18.0.1 inside rc-n0, a port space of its own; this only
  // checks the number in the root namespace, which is as good a guess as any.
  int port = free_port("127.0.0.1");
  if (port > 0) return port;
  std::random_device rd;
  return 20000 + static_cast<int>(rd() % 12000);
}

// A private directory for the rsh agents, removed when the job is over: the
// cluster's (cluster.cpp: starts a command in a node), and in front of it one
// that keeps Open MPI's orted in the foreground. mpirun asks for
// `orted --daemonize`, which puts the daemon and every rank it starts in a
// session of its own, so a scheduling group of its own under the kernel's
// autogroup: each node's MPI ranks then competed with the other nodes' for
// the 2 cores as separate groups, while railcoll's own ranks (`cluster run`)
// share the launcher's session, and a rank yielding the core (sched_yield)
// could hand it only to its own node. In the foreground every rank of every
// job shares the launcher's session: all rows of a comparison are scheduled
// alike (docs/mpi.md, "Performance").
class AgentDir {
 public:
  AgentDir() {
    mkdir(cl::state_dir().c_str(), 0755);
    std::string tmpl = cl::state_dir() + "/mpirun.XXXXXX";
    if (!mkdtemp(tmpl.data()))
      throw cl::CommandError("cannot create a directory in " + cl::state_dir() + ": " + strerror(errno));
    dir_ = tmpl;
    node_agent_ = dir_ + "/railcoll-rsh-agent";
    agent_ = dir_ + "/railcoll-foreground-agent";
    write(node_agent_, cl::rsh_agent_script());
    write(agent_, "#!/bin/sh\n"
                  "# railcoll cluster mpirun: the cluster's rsh agent with orted kept in the foreground.\n"
                  "host=$1\n"
                  "shift\n"
                  "exec " + node_agent_ + " \"$host\" \"$(printf '%s' \"$*\" | sed 's/ --daemonize / /')\"\n");
  }
  ~AgentDir() {
    unlink(agent_.c_str());
    unlink(node_agent_.c_str());
    rmdir(dir_.c_str());
  }
  const std::string& agent() const { return agent_; }

 private:
  static void write(const std::string& path, const std::string& script) {
    std::ofstream f(path);
    f << script;
    f.close();
    if (!f || chmod(path.c_str(), 0755) != 0) throw cl::CommandError("cannot write " + path + ": " + strerror(errno));
  }
  std::string dir_, node_agent_, agent_;
};

std::string host_list(const ClusterJob& job) {
  std::string hosts;
  for (size_t i = 0; i < job.layout.size(); ++i)
    hosts += (i ? "," : "") + cl::node_name(static_cast<int>(i)) + ":" + std::to_string(job.layout[i]);
  return hosts;
}

// The variables every rank of an MPI job on the cluster gets, as for railcoll's own jobs.
std::map<std::string, std::string> cluster_env(const ClusterJob& job) {
  return {{"RAILCOLL_CLUSTER", "1"},
          {"RAILCOLL_RAIL_RATE", std::to_string(job.cfg.rate_bps)},
          {"RAILCOLL_RAILS", cl::rail_subnets(job.rails)}};
}

std::vector<std::string> openmpi_argv(const ClusterJob& job, const MpirunOptions& how, const std::string& mpirun,
                                      const std::string& agent, const std::map<std::string, std::string>& env,
                                      const std::string& layer) {
  std::vector<std::string> argv = {
      mpirun, "-np", std::to_string(job.ranks()), "-H", host_list(job),
      // orted is started in each node by the agent, directly (no ssh tree).
      "--mca", "plm_rsh_agent", agent, "--mca", "plm_rsh_no_tree_spawn", "1",
      // orted reaches mpirun (root namespace) on rail 0's bridge address.
      "--mca", "oob_tcp_if_include", cl::rail_subnet(0),
      // MPI traffic: shared memory inside a node, TCP over the first K rails.
      "--mca", "btl", "tcp,vader,self", "--mca", "btl_tcp_if_include", cl::rail_subnets(job.rails),
      // Many ranks on 2 cores: yield when idle, do not pin every node's
      // ranks onto the same cores.
      "--mca", "mpi_yield_when_idle", "1", "--bind-to", "none"};
  if (how.han) argv.insert(argv.end(), {"--mca", "coll_han_priority", "100"});
  if (!layer.empty()) argv.insert(argv.end(), {"-x", "LD_PRELOAD=" + layer});
  // By name: the values (a job key among them) stay out of the command line.
  for (auto& [name, value] : env)
    if (name.rfind("RAILCOLL_", 0) == 0) argv.insert(argv.end(), {"-x", name});
  for (auto& [name, value] : how.env) argv.insert(argv.end(), {"-x", name + "=" + value});
  argv.insert(argv.end(), job.program.begin(), job.program.end());
  return argv;
}

// MPICH's Hydra with the same agent: its proxies reach mpiexec on rail 0's
// bridge address (-localhost; the root namespace's hostname means nothing in a
// node), and pass mpiexec's whole environment to the ranks.
std::vector<std::string> mpich_argv(const ClusterJob& job, const MpirunOptions& how, const std::string& mpiexec,
                                    const std::string& agent, const std::string& layer) {
  std::vector<std::string> argv = {mpiexec, "-localhost", cl::bridge_address(0), "-launcher", "rsh",
                                   "-launcher-exec", agent, "-hosts", host_list(job), "-n",
                                   std::to_string(job.ranks())};
  if (!layer.empty()) argv.insert(argv.end(), {"-genv", "LD_PRELOAD", layer});
  for (auto& [name, value] : how.env) argv.insert(argv.end(), {"-genv", name, value});
  argv.insert(argv.end(), job.program.begin(), job.program.end());
  return argv;
}

}  // namespace

std::vector<RankProcess> cluster_ranks(const ClusterJob& job) {
  const int size = job.ranks();
  const std::string store = cl::rail_address(0, 0) + ":" + std::to_string(store_port());
  const std::string job_id = new_job_id(), job_key = new_job_key(), rails = cl::rail_subnets(job.rails);
  std::vector<RankProcess> ranks;
  for (int node = 0, rank = 0; node < static_cast<int>(job.layout.size()); ++node) {
    for (int local = 0; local < job.layout[node]; ++local, ++rank) {
      RankProcess p;
      p.argv = cl::node_exec_argv(node, job.program);
      p.env = rank_env(rank, size, local, job.layout[node], node, store, job_id, job_key, rails);
      p.env["RAILCOLL_CLUSTER"] = "1";
      p.env["RAILCOLL_RAIL_RATE"] = std::to_string(job.cfg.rate_bps);
      p.where = cl::node_name(node);
      ranks.push_back(std::move(p));
    }
  }
  return ranks;
}

JobResult run_cluster_job(const ClusterJob& job, const JobOptions& options) {
  return run_job(cluster_ranks(job), options);
}

MpiFlavor parse_mpi_flavor(const std::string& name) {
  if (name == "openmpi") return MpiFlavor::OpenMpi;
  if (name == "mpich") return MpiFlavor::Mpich;
  throw InputError("--mpi expects openmpi or mpich, got '" + name + "'");
}

const char* mpi_flavor_name(MpiFlavor flavor) { return flavor == MpiFlavor::Mpich ? "MPICH" : "Open MPI"; }

namespace {

// The libraries a 64-bit ELF executable names in its DT_NEEDED entries; empty
// for anything else (a script, another format, a damaged file).
std::vector<std::string> needed_libraries(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string f((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Elf64_Ehdr eh;
  if (f.size() < sizeof eh) return {};
  memcpy(&eh, f.data(), sizeof eh);
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phoff + uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr) > f.size())
    return {};
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  memcpy(ph.data(), f.data() + eh.e_phoff, ph.size() * sizeof(Elf64_Phdr));
  auto file_offset = [&](uint64_t vaddr) -> uint64_t {  // where a loaded address lies in the file
    for (auto& p : ph)
      if (p.p_type == PT_LOAD && vaddr >= p.p_vaddr && vaddr < p.p_vaddr + p.p_filesz) return vaddr - p.p_vaddr + p.p_offset;
    return UINT64_MAX;
  };
  std::vector<uint64_t> names;
  uint64_t strtab = UINT64_MAX;
  for (auto& p : ph) {
    if (p.p_type != PT_DYNAMIC || p.p_offset + p.p_filesz > f.size()) continue;
    for (uint64_t at = p.p_offset; at + sizeof(Elf64_Dyn) <= p.p_offset + p.p_filesz; at += sizeof(Elf64_Dyn)) {
      Elf64_Dyn d;
      memcpy(&d, f.data() + at, sizeof d);
      if (d.d_tag == DT_NULL) break;
      if (d.d_tag == DT_NEEDED) names.push_back(d.d_un.d_val);
      if (d.d_tag == DT_STRTAB) strtab = file_offset(d.d_un.d_ptr);
    }
  }
  std::vector<std::string> out;
  for (uint64_t n : names)
    if (strtab != UINT64_MAX && strtab + n < f.size()) out.emplace_back(f.c_str() + strtab + n);
  return out;
}

}  // namespace

MpiFlavor program_mpi(const std::string& program) {
  for (const std::string& lib : needed_libraries(program))
    if (lib.rfind("libmpich.so", 0) == 0) return MpiFlavor::Mpich;
  return MpiFlavor::OpenMpi;
}

std::string mpi_layer_library(MpiFlavor flavor) {
  const std::string self = self_exe();
  const std::string lib = std::filesystem::path(self.substr(0, self.rfind('/')) + "/../lib/" +
                                                (flavor == MpiFlavor::Mpich ? "mpich/" : "") + "librailcoll_mpi.so")
                              .lexically_normal()
                              .string();
  if (access(lib.c_str(), R_OK) != 0)
    throw InputError("cannot find " + lib + ", railcoll's collectives for " + mpi_flavor_name(flavor) +
                     " programs: it is built when " + mpi_flavor_name(flavor) +
                     "'s development files are installed (scripts/install-deps.sh)");
  return lib;
}

std::map<std::string, std::string> railcoll_mpi_env() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (kv.rfind("RAILCOLL_", 0) == 0 && eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (env["RAILCOLL_JOB_KEY"].empty()) env["RAILCOLL_JOB_KEY"] = new_job_key();
  return env;
}

JobResult run_cluster_mpirun(const ClusterJob& job, const MpirunOptions& how, const JobOptions& options) {
  const MpiFlavor flavor = how.mpi == MpiFlavor::Auto ? program_mpi(job.program[0]) : how.mpi;
  const bool mpich = flavor == MpiFlavor::Mpich;
  if (mpich && how.han) throw InputError("--han is Open MPI's; MPICH has no HAN");
  const std::string launcher = cl::resolve_program(mpich ? "mpiexec.mpich" : "mpirun");
  if (launcher.empty())
    throw InputError(mpich ? "cannot find MPICH's mpiexec.mpich in PATH" : "cannot find Open MPI's mpirun in PATH");
  const std::string layer = how.railcoll ? mpi_layer_library(flavor) : "";
  AgentDir dir;
  RankProcess p;
  p.where = mpich ? "mpiexec" : "mpirun";
  if (how.railcoll) p.env = railcoll_mpi_env();
  for (auto& [name, value] : cluster_env(job)) p.env[name] = value;  // the cluster's rails, whatever the caller's
  if (mpich) {
    p.argv = mpich_argv(job, how, launcher, dir.agent(), layer);
  } else {
    p.argv = openmpi_argv(job, how, launcher, dir.agent(), p.env, layer);
    // Open MPI refuses root unless both are set; they reach orted and the ranks too.
    p.env["OMPI_ALLOW_RUN_AS_ROOT"] = "1";
    p.env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1";
  }
  if (how.verbose) {
    std::string line = "railcoll cluster mpirun:";
    for (auto& w : p.argv) line += " " + w;
    std::cerr << line << "\n" << std::flush;
  }
  return run_job({p}, options);
}

std::vector<RankProcess> cluster_torchrun_agents(const ClusterJob& job, const std::string& torchrun,
                                                 const std::vector<std::string>& program) {
  for (int n : job.layout)
    if (n != job.layout[0])
      throw InputError("torchrun starts the same number of processes on every node; the layout " +
                       layout_text(job.layout) + " differs");
  const std::string nodes = std::to_string(job.layout.size()), per_node = std::to_string(job.layout[0]);
  const std::string port = std::to_string(store_port());
  std::map<std::string, std::string> env = railcoll_mpi_env();
  for (auto& [name, value] : cluster_env(job)) env[name] = value;
  std::vector<RankProcess> agents;
  for (int node = 0; node < static_cast<int>(job.layout.size()); ++node) {
    std::vector<std::string> argv = {torchrun, "--nnodes", nodes, "--nproc-per-node", per_node,
                                     "--node-rank", std::to_string(node), "--master-addr", cl::rail_address(0, 0),
                                     "--master-port", port};
    argv.insert(argv.end(), program.begin(), program.end());
    RankProcess p;
    p.argv = cl::node_exec_argv(node, argv);
    p.env = env;
    p.where = cl::node_name(node);
    agents.push_back(std::move(p));
  }
  return agents;
}

}  // namespace railcoll::testbed
