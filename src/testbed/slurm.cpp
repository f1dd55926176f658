#include "testbed/slurm.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include "testbed/spawn.hpp"

namespace fs = std::filesystem;

namespace railcoll::cluster {

namespace {

const char* const kPrograms[] = {"munged", "slurmctld", "slurmd", "sinfo"};

// `name` in PATH or in /usr/sbin (where Debian puts the daemons); "" if neither.
std::string program(const std::string& name) {
  std::string p = resolve_program(name);
  if (p.empty() && access(("/usr/sbin/" + name).c_str(), X_OK) == 0) p = "/usr/sbin/" + name;
  return p;
}

std::string node_dir(int node) { return slurm_dir() + "/" + node_name(node); }
// iproute2 bind-mounts /etc/netns/NODE/hosts over /etc/hosts in `ip netns exec
// NODE`: the nodes' names resolve inside the nodes, as on a cluster (torchrun's
// rendezvous at the first node's name).
std::string netns_hosts(int node) { return "/etc/netns/" + node_name(node) + "/hosts"; }

void write_file(const std::string& path, const std::string& text, mode_t mode = 0644) {
  {
    std::ofstream out(path, std::ios::trunc);
    out << text;
    if (!out.flush()) throw CommandError("cannot write " + path);
  }
  chmod(path.c_str(), mode);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string short_hostname() {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  std::string h = host;
  return h.substr(0, h.find('.'));
}

// The last `lines` lines of a log, indented, for an error message.
std::string log_tail(const std::string& path, size_t lines = 6) {
  std::vector<std::string> all;
  std::istringstream in(read_file(path));
  for (std::string l; std::getline(in, l);) all.push_back(l);
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += "\n    " + all[i];
  return out.empty() ? "" : "\n  " + path + ":" + out;
}

// Runs a daemon that forks into the background by itself; throws CommandError
// with its log's tail when it does not start.
void start_daemon(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                  const std::string& log) {
  testbed::RunOptions o;
  o.env = env;
  o.timeout_s = 60;
  o.capture_out = o.capture_err = false;  // a daemon keeps no pipe of ours open
  testbed::RunResult r = testbed::run(argv, o);
  if (r.code() != 0) {
    std::string line;
    for (auto& w : argv) line += (line.empty() ? "" : " ") + w;
    throw CommandError("`" + line + "` failed (" + r.status.text() + ")" + log_tail(log));
  }
}

// A process recorded in `pid_file` that is still `comm` (not a reused pid); 0 if none.
pid_t live_pid(const std::string& pid_file, const std::string& comm) {
  std::istringstream in(read_file(pid_file));
  long pid = 0;
  if (!(in >> pid) || pid <= 1) return 0;
  std::string actual = read_file("/proc/" + std::to_string(pid) + "/comm");
  while (!actual.empty() && actual.back() == '\n') actual.pop_back();
  return actual == comm ? static_cast<pid_t>(pid) : 0;
}

// Job steps still running in the nodes (slurmstepd, found in each namespace).
std::vector<pid_t> step_daemons() {
  std::vector<pid_t> out;
  for (const auto& entry : fs::directory_iterator(slurm_dir())) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("rc-n", 0) != 0 || !entry.is_directory() || !fs::exists("/run/netns/" + name)) continue;
    testbed::RunResult r = testbed::run({program("ip"), "netns", "pids", name}, 10);
    std::istringstream pids(r.out);
    for (long pid; pids >> pid;) {
      std::string comm = read_file("/proc/" + std::to_string(pid) + "/comm");
      if (comm.rfind("slurmstepd", 0) == 0) out.push_back(static_cast<pid_t>(pid));
    }
  }
  return out;
}

bool gone(pid_t pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

// Every node idle in sinfo before `seconds` pass; else CommandError naming the states.
void wait_for_nodes(const Config& cfg, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::string last;
  for (;;) {
    testbed::RunOptions o;
    o.env = {{"SLURM_CONF", slurm_conf_path()}};
    o.timeout_s = 20;
    testbed::RunResult r = testbed::run({"sinfo", "--noheader", "--Node", "--format=%N %T"}, o);
    last = r.out + r.err;
    int idle = 0;
    std::istringstream lines(r.out);
    for (std::string node, state; lines >> node >> state;) idle += state == "idle";
    if (r.code() == 0 && idle == cfg.nodes) return;
    if (std::chrono::steady_clock::now() > until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  std::string logs = log_tail(slurm_dir() + "/log/slurmctld.log");
  for (int i = 0; i < cfg.nodes; ++i) logs += log_tail(slurm_dir() + "/log/" + node_name(i) + ".log", 3);
  throw CommandError("Slurm's nodes did not all become idle within " + std::to_string(static_cast<int>(seconds)) +
                     " s; sinfo said: " + last + logs);
}

}  // namespace

std::string slurm_dir() { return state_dir() + "/slurm"; }
std::string slurm_conf_path() { return slurm_dir() + "/slurm.conf"; }

std::string slurm_conf_text(const Config& cfg, const std::string& controller) {
  const std::string d = slurm_dir();
  std::ostringstream c;
  c << "# Written by railcoll cluster slurm up: Slurm on the emulated cluster (docs/cluster.md).\n"
    << "ClusterName=railcoll\n"
    // The controller in the root namespace, where every node reaches it over rail 0.
    << "SlurmctldHost=" << controller << "(" << bridge_address(0) << ")\n"
    << "SlurmctldPort=6817\nSlurmdPort=6818\n"
    << "AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket=" << d << "/munge.socket\n"
    << "SlurmUser=root\nSlurmdUser=root\n"
    << "StateSaveLocation=" << d << "/ctld\n"
    << "SlurmdSpoolDir=" << d << "/%n/spool\n"
    << "SlurmctldPidFile=" << d << "/slurmctld.pid\nSlurmdPidFile=" << d << "/%n.pid\n"
    << "SlurmctldLogFile=" << d << "/log/slurmctld.log\nSlurmdLogFile=" << d << "/log/%n.log\n"
    // No cgroups or CPU binding: the nodes share this machine's few cores, which
    // their configured CPUs outnumber (config_overrides keeps them usable).
    << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
    << "SlurmdParameters=config_overrides\n"
    << "SchedulerType=sched/builtin\nSelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n"
    << "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n"
    // srun --mpi=pmix or --mpi=pmi2 (Debian's slurm-wlm-basic-plugins has both); none by default, as Slurm ships.
    << "MpiDefault=none\n"
    << "ReturnToService=2\nSlurmctldTimeout=30\nSlurmdTimeout=60\nInactiveLimit=0\nKillWait=5\n"
    << "SlurmctldDebug=info\nSlurmdDebug=info\n";
  std::string features;
  for (int r = 0; r < cfg.rails; ++r) features += (r ? "," : "") + rail_if_name(r);
  for (int i = 0; i < cfg.nodes; ++i) {
    c << "# " << node_name(i) << ": rails";
    for (int r = 0; r < cfg.rails; ++r) c << " " << rail_if_name(r) << "=" << rail_address(r, i);
    c << "\nNodeName=" << node_name(i) << " NodeAddr=" << rail_address(0, i) << " CPUs=" << cfg.ppn
      << " Features=" << features << " State=UNKNOWN\n";
  }
  c << "PartitionName=rails Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n";
  return c.str();
}

bool slurm_running() { return live_pid(slurm_dir() + "/slurmctld.pid", "slurmctld") != 0; }

void slurm_up(const Config& cfg) {
  for (const char* name : kPrograms)
    if (program(name).empty())
      throw ClusterInputError(std::string("cannot find ") + name +
                              ": install Debian's slurmctld, slurmd, slurm-client and munge (scripts/install-deps.sh)");
  if (slurm_running() || fs::exists(slurm_dir()))
    throw ClusterInputError("Slurm is already up on the cluster (or left over): railcoll cluster slurm down");
  const std::string d = slurm_dir();
  try {
    fs::create_directories(d + "/log");
    fs::create_directories(d + "/ctld");
    chmod(d.c_str(), 0700);
    // munge: a fresh key for this cluster, its own socket.
    {
      std::ifstream random("/dev/urandom", std::ios::binary);
      std::string key(1024, '\0');
      random.read(key.data(), static_cast<std::streamsize>(key.size()));
      write_file(d + "/munge.key", key, 0400);
    }
    start_daemon({program("munged"), "--force", "--socket=" + d + "/munge.socket", "--key-file=" + d + "/munge.key",
                  "--pid-file=" + d + "/munged.pid", "--log-file=" + d + "/log/munged.log",
                  "--seed-file=" + d + "/munge.seed"},
                 {}, d + "/log/munged.log");
    const std::string conf = slurm_conf_text(cfg, short_hostname());
    write_file(slurm_conf_path(), conf);
    // cgroup/v1 named outright: autodetection fails where /sys/fs/cgroup is not
    // mounted, and nothing here uses cgroups (proctrack/linuxproc, task/none).
    const std::string cgroup = "CgroupPlugin=cgroup/v1\nCgroupAutomount=no\n";
    write_file(d + "/cgroup.conf", cgroup);
    std::string hosts = "127.0.0.1 localhost\n";
    for (int i = 0; i < cfg.nodes; ++i) hosts += rail_address(0, i) + " " + node_name(i) + "\n";
    for (int i = 0; i < cfg.nodes; ++i) {
      // Each slurmd reads its own copy of the configuration: identical, but for
      // mpi.conf's PMIx directory, which the nodes' shared /tmp would make collide.
      const std::string nd = node_dir(i);
      fs::create_directories(nd + "/etc");
      fs::create_directories(nd + "/spool");
      fs::create_directories(nd + "/pmix");
      write_file(nd + "/etc/slurm.conf", conf);
      write_file(nd + "/etc/cgroup.conf", cgroup);
      write_file(nd + "/etc/mpi.conf", "PMIxCliTmpDirBase=" + nd + "/pmix\n");
      fs::create_directories(fs::path(netns_hosts(i)).parent_path());
      write_file(netns_hosts(i), hosts);
    }
    start_daemon({program("slurmctld"), "-c"}, {{"SLURM_CONF", slurm_conf_path()}}, d + "/log/slurmctld.log");
    for (int i = 0; i < cfg.nodes; ++i)
      start_daemon(node_exec_argv(i, {program("slurmd"), "-N", node_name(i)}),
                   {{"SLURM_CONF", node_dir(i) + "/etc/slurm.conf"}}, d + "/log/" + node_name(i) + ".log");
    wait_for_nodes(cfg, 90);
  } catch (...) {
    slurm_down();
    throw;
  }
}

int slurm_down() {
  const std::string d = slurm_dir();
  if (!fs::exists(d)) return 0;
  std::vector<pid_t> stopping = step_daemons();
  for (const auto& entry : fs::directory_iterator(d)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("rc-n", 0) == 0 && entry.path().extension() == ".pid")
      if (pid_t p = live_pid(entry.path().string(), "slurmd")) stopping.push_back(p);
  }
  if (pid_t p = live_pid(d + "/slurmctld.pid", "slurmctld")) stopping.push_back(p);
  for (pid_t p : stopping) kill(p, SIGTERM);
  auto wait_all = [](std::vector<pid_t>& pids, double seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
      bool all = true;
      for (pid_t p : pids) all = all && gone(p);
      if (all) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    for (pid_t p : pids)
      if (!gone(p)) kill(p, SIGKILL);
  };
  wait_all(stopping, 10);
  // munged last: the others authenticate through it until they are gone.
  std::vector<pid_t> munge;
  if (pid_t p = live_pid(d + "/munged.pid", "munged")) munge.push_back(p), kill(p, SIGTERM);
  wait_all(munge, 5);
  for (int i = 0; i < kMaxNodes; ++i) {
    std::error_code ec;
    if (!fs::exists(netns_hosts(i), ec)) continue;
    fs::remove(netns_hosts(i), ec);
    fs::remove(fs::path(netns_hosts(i)).parent_path(), ec);  // only if empty
  }
  std::error_code ec;
  fs::remove_all(d, ec);
  if (ec) throw CommandError("cannot remove " + d + ": " + ec.message());
  return static_cast<int>(stopping.size() + munge.size());
}

}  // namespace railcoll::cluster
