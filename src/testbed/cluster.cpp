#include "testbed/cluster.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "testbed/spawn.hpp"

namespace fs = std::filesystem;

namespace railcoll::cluster {

using testbed::run;
using testbed::RunResult;
using testbed::SpawnError;

// ---------------------------------------------------------------- names

std::string node_name(int node) { return "rc-n" + std::to_string(node); }
std::string bridge_name(int rail) { return "rcbr" + std::to_string(rail); }
std::string root_veth_name(int node, int rail) {
  return "rcv" + std::to_string(node) + "r" + std::to_string(rail);
}
std::string rail_if_name(int rail) { return "rail" + std::to_string(rail); }
std::string rail_address(int rail, int node) {
  return "198.18." + std::to_string(rail) + "." + std::to_string(node + 1);
}
std::string bridge_address(int rail) { return "198.18." + std::to_string(rail) + ".254"; }
std::string rail_subnet(int rail) { return "198.18." + std::to_string(rail) + ".0/24"; }
std::string rail_subnets(int k) {
  std::string s;
  for (int r = 0; r < k; ++r) s += (r ? "," : "") + rail_subnet(r);
  return s;
}

// ---------------------------------------------------------------- rates

uint64_t parse_rate(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return ClusterInputError("--rate expects a tc rate like 1gbit, 500mbit or 100mbps, got '" + text + "'" + why);
  };
  // A plain decimal number (no sign, exponent or hex), then the unit.
  size_t used = text.find_first_not_of("0123456789.");
  if (used == std::string::npos) used = text.size();
  std::string number = text.substr(0, used), unit = text.substr(used);
  if (number.empty() || number[0] == '.' || std::count(number.begin(), number.end(), '.') > 1) throw bad("");
  double value = std::stod(number);
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::tolower(c); });
  // tc(8): a bare number and "bit" are bits/s, "bps" is bytes/s; k/m/g/t are
  // powers of 1000, ki/mi/gi/ti powers of 1024.
  static const std::map<std::string, double> units = {
      {"", 1},        {"bit", 1},          {"kbit", 1e3},       {"mbit", 1e6},      {"gbit", 1e9},
      {"tbit", 1e12}, {"kibit", 1024.},    {"mibit", 1048576.}, {"gibit", 1 << 30}, {"tibit", 1099511627776.},
      {"bps", 8},     {"kbps", 8e3},       {"mbps", 8e6},       {"gbps", 8e9},      {"tbps", 8e12},
      {"kibps", 8192.}, {"mibps", 8388608.}, {"gibps", 8589934592.}, {"tibps", 8796093022208.}};
  auto it = units.find(unit);
  if (it == units.end()) throw bad(" (unknown unit '" + unit + "')");
  double bps = value * it->second;
  if (!std::isfinite(bps) || bps < 1e6 || bps > 100e9)
    throw ClusterInputError("--rate must be between 1mbit and 100gbit, got '" + text + "'");
  return static_cast<uint64_t>(std::llround(bps));
}

void choose_shaping(Config& cfg) {
  if (cfg.shaper == "wire") {
    // Two full Ethernet frames: tbf then cuts every GSO packet into frames and
    // sends each at the rate, so a 64 KiB message takes its wire time even
    // after an idle moment (the price: CPU for the cutting, docs/cluster.md).
    cfg.burst_bytes = 2 * 1514;
  } else if (cfg.shaper == "bucket") {
    // 1 ms at the rate, at least 128 KiB so a 64 KiB GSO packet passes whole
    // (smaller buckets make tbf segment it: more CPU, slower bulk TCP).
    cfg.burst_bytes = std::max<uint64_t>(128 * 1024, cfg.rate_bps / 8 / 1000);
  } else {
    throw ClusterInputError("--shaper must be bucket or wire, got '" + cfg.shaper + "'");
  }
  // Queue: 50 ms. A node receives from many peers at once (all-gather is an
  // incast); a short queue drops and TCP stalls on retransmit timers.
  cfg.latency_ms = 50;
}

// ---------------------------------------------------------------- commands

namespace {

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_of(" \t\n'\"\\$`;&|<>*?()") == std::string::npos) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string command_text(const std::vector<std::string>& argv) {
  std::string t;
  for (auto& a : argv) t += (t.empty() ? "" : " ") + shell_quote(a);
  return t;
}

std::string one_line(std::string s) {
  for (auto& c : s)
    if (c == '\n' || c == '\r') c = ';';
  while (!s.empty() && (s.back() == ';' || s.back() == ' ')) s.pop_back();
  return s;
}

struct CommandResult {
  int status = 0;  // exit status, 128+signal, 124 if killed at the time limit
  std::string out, err;
};

// Runs argv (no shell), capturing stdout and stderr. `ip` and `tc` answer in
// milliseconds; the time limit only guards against a wedged kernel or tool.
CommandResult run_command(const std::vector<std::string>& argv, double timeout_s = 60) {
  try {
    RunResult r = run(argv, timeout_s);
    CommandResult res{r.code(), r.out, r.err};
    if (r.timed_out) res.err = "no answer within " + std::to_string(static_cast<int>(timeout_s)) + " s; killed";
    return res;
  } catch (const SpawnError& e) {
    return {-1, "", e.what()};
  }
}

std::string failure_text(const std::vector<std::string>& argv, const CommandResult& r) {
  std::string msg = "`" + command_text(argv) + "` failed (exit " + std::to_string(r.status) + ")";
  std::string err = one_line(r.err.empty() ? r.out : r.err);
  return err.empty() ? msg : msg + ": " + err;
}

// Where a system tool lives: PATH first, then the sbin directories a
// non-login root shell may lack.
std::string tool(const std::string& name) {
  std::string found = resolve_program(name);
  if (!found.empty()) return found;
  for (const char* dir : {"/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"}) {
    std::string p = dir + name;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return name;  // let exec report it
}

volatile sig_atomic_t interrupted = 0;
void on_interrupt(int sig) { interrupted = sig; }

// Runs a command; throws CommandError (one line) if it fails or if the user
// interrupted `up` meanwhile.
std::string must(std::vector<std::string> argv) {
  if (interrupted) throw CommandError("interrupted by signal " + std::to_string(interrupted));
  std::vector<std::string> display = argv;
  argv[0] = tool(argv[0]);
  CommandResult r = run_command(argv);
  if (r.status != 0) throw CommandError(failure_text(display, r));
  return r.out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> w;
  std::istringstream in(line);
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

bool has_prefix(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// rcv<digits>r<digits>: only our root-side veths, never someone else's "rcv...".
bool is_root_veth(const std::string& name) {
  size_t i = 3, r = name.find('r', 3);
  if (!has_prefix(name, "rcv") || r == std::string::npos || r == 3 || r + 1 == name.size()) return false;
  for (; i < name.size(); ++i)
    if (i != r && !std::isdigit(static_cast<unsigned char>(name[i]))) return false;
  return true;
}

}  // namespace

// ---------------------------------------------------------------- state

std::string state_dir() { return "/run/railcoll"; }
std::string state_path() { return state_dir() + "/cluster.conf"; }

bool is_root() { return geteuid() == 0; }

namespace {

void write_state(const Config& c) {
  std::string tmp = state_path() + ".tmp";
  {
    std::ofstream f(tmp);
    f << "# railcoll emulated cluster, written by `railcoll cluster up`, removed by `down`\n"
      << "nodes=" << c.nodes << "\nppn=" << c.ppn << "\nrails=" << c.rails << "\nrate=" << c.rate
      << "\nrate_bps=" << c.rate_bps << "\nburst_bytes=" << c.burst_bytes << "\nlatency_ms=" << c.latency_ms
      << "\nrate_source=" << c.rate_source << "\nshaper=" << c.shaper << "\n";
    if (c.ceiling_pct > 0) f << "ceiling_pct=" << c.ceiling_pct << "\n";
    if (!f) throw CommandError("cannot write " + tmp + ": " + strerror(errno));
  }
  if (rename(tmp.c_str(), state_path().c_str()) != 0)
    throw CommandError("cannot rename " + tmp + " to " + state_path() + ": " + strerror(errno));
}

long state_number(const std::map<std::string, std::string>& kv, const std::string& key, long min, long max) {
  auto it = kv.find(key);
  auto bad = ClusterInputError(state_path() + " is malformed (" + key +
                               "); `railcoll cluster down` removes the cluster and the file");
  if (it == kv.end()) throw bad;
  char* end = nullptr;
  long v = std::strtol(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end || v < min || v > max) throw bad;
  return v;
}

}  // namespace

std::optional<Config> load_state() {
  std::ifstream f(state_path());
  if (!f) return std::nullopt;
  std::map<std::string, std::string> kv;
  for (std::string line; std::getline(f, line);) {
    auto eq = line.find('=');
    if (line.empty() || line[0] == '#' || eq == std::string::npos) continue;
    kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  Config c;
  c.nodes = static_cast<int>(state_number(kv, "nodes", 1, kMaxNodes));
  c.ppn = static_cast<int>(state_number(kv, "ppn", 1, kMaxPpn));
  c.rails = static_cast<int>(state_number(kv, "rails", 1, kMaxRails));
  c.rate = kv["rate"];
  c.rate_bps = static_cast<uint64_t>(state_number(kv, "rate_bps", 1, 1000000000000L));
  c.burst_bytes = static_cast<uint64_t>(state_number(kv, "burst_bytes", 1, 1L << 40));
  c.latency_ms = static_cast<int>(state_number(kv, "latency_ms", 1, 100000));
  if (kv.count("rate_source")) c.rate_source = kv["rate_source"];
  if (kv.count("shaper")) c.shaper = kv["shaper"];
  if (kv.count("ceiling_pct")) c.ceiling_pct = std::strtod(kv["ceiling_pct"].c_str(), nullptr);
  return c;
}

// ---------------------------------------------------------------- lock

StateLock::StateLock() {
  // The lock is on the state directory itself, so no lock file is left behind.
  if (mkdir(state_dir().c_str(), 0755) != 0 && errno != EEXIST)
    throw CommandError("cannot create " + state_dir() + ": " + strerror(errno));
  fd_ = open(state_dir().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) throw CommandError("cannot open " + state_dir() + ": " + strerror(errno));
  if (flock(fd_, LOCK_EX | LOCK_NB) != 0)
    throw CommandError("another `railcoll cluster up/down` is running (" + state_dir() + " is locked)");
}

StateLock::~StateLock() {
  if (fd_ >= 0) close(fd_);
}

// ---------------------------------------------------------------- scan

std::string Present::summary() const {
  auto count = [](size_t n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); };
  return count(namespaces.size(), "namespace") + ", " + count(bridges.size(), "bridge") + ", " +
         count(root_veths.size(), "veth");
}

Present scan() {
  Present p;
  std::error_code ec;
  // `ip netns add` makes /run/netns/NAME; the directory is the list.
  for (auto& e : fs::directory_iterator("/run/netns", ec)) {
    std::string n = e.path().filename().string();
    if (has_prefix(n, "rc-n")) p.namespaces.push_back(n);
  }
  for (auto& e : fs::directory_iterator("/sys/class/net", ec)) {
    std::string n = e.path().filename().string();
    if (has_prefix(n, "rcbr")) p.bridges.push_back(n);
    if (is_root_veth(n)) p.root_veths.push_back(n);
  }
  for (auto* v : {&p.namespaces, &p.bridges, &p.root_veths}) std::sort(v->begin(), v->end());
  return p;
}

// ---------------------------------------------------------------- up / down

namespace {

std::vector<std::string> tbf_args(const Config& c) {
  return {"root", "tbf", "rate", std::to_string(c.rate_bps) + "bit", "burst", std::to_string(c.burst_bytes),
          "latency", std::to_string(c.latency_ms) + "ms"};
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

void make_bridge(int r) {
  must({"ip", "link", "add", bridge_name(r), "type", "bridge"});
  must({"ip", "addr", "add", bridge_address(r) + "/24", "dev", bridge_name(r)});
  must({"ip", "link", "set", bridge_name(r), "up"});
}

void shape_rail(const Config& c, int node, int r, const char* verb) {
  const std::string ns = node_name(node);
  must(concat({"tc", "-n", ns, "qdisc", verb, "dev", rail_if_name(r)}, tbf_args(c)));
  must(concat({"tc", "qdisc", verb, "dev", root_veth_name(node, r)}, tbf_args(c)));
}

void make_rail(const Config& c, int node, int r) {
  const std::string ns = node_name(node), veth = root_veth_name(node, r), rail = rail_if_name(r);
  // Create the pair with its node side already in the namespace and named
  // rail<r>: nothing temporary is ever left in the root namespace.
  must({"ip", "link", "add", veth, "type", "veth", "peer", "name", rail, "netns", ns});
  must({"ip", "link", "set", veth, "master", bridge_name(r), "up"});
  must({"ip", "-n", ns, "addr", "add", rail_address(r, node) + "/24", "dev", rail});
  must({"ip", "-n", ns, "link", "set", rail, "up"});
  // Node-side egress = what the node sends; root-side egress = what it receives.
  shape_rail(c, node, r, "add");
}

void make_node(const Config& c, int node) {
  must({"ip", "netns", "add", node_name(node)});
  must({"ip", "-n", node_name(node), "link", "set", "lo", "up"});
  for (int r = 0; r < c.rails; ++r) make_rail(c, node, r);
}

// Deleting something that vanished meanwhile (a veth whose peer's namespace
// went first) is not an error.
bool already_gone(const CommandResult& r) {
  return r.err.find("Cannot find device") != std::string::npos ||
         r.err.find("No such file") != std::string::npos || r.err.find("does not exist") != std::string::npos;
}

bool process_gone(pid_t pid) {
  // A zombie counts as gone: it may wait a while for a lazy init to reap it.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!stat || !std::getline(stat, text)) return true;
  auto paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
}

// Waits up to `seconds` for all of `pids` to be gone; returns those left.
std::vector<pid_t> wait_gone(std::vector<pid_t> pids, double seconds) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!pids.empty() && std::chrono::steady_clock::now() < until) {
    pids.erase(std::remove_if(pids.begin(), pids.end(), process_gone), pids.end());
    if (!pids.empty()) usleep(20000);
  }
  return pids;
}

// Stops every process still inside the nodes (jobs that outlived their
// launcher, orted daemons). Once the rails are gone they would never notice
// that their peers died and would hang forever.
int stop_node_processes(const std::vector<std::string>& namespaces) {
  std::vector<pid_t> pids;
  for (auto& ns : namespaces) {
    CommandResult r = run_command({tool("ip"), "netns", "pids", ns});
    for (auto& line : lines_of(r.out))
      if (pid_t pid = static_cast<pid_t>(std::atol(line.c_str())); pid > 1) pids.push_back(pid);
  }
  for (pid_t pid : pids) kill(pid, SIGTERM);
  std::vector<pid_t> left = wait_gone(pids, 3);
  for (pid_t pid : left) kill(pid, SIGKILL);
  wait_gone(left, 2);
  return static_cast<int>(pids.size());
}

}  // namespace

void set_rate(Config& cfg, uint64_t rate_bps) {
  uint64_t written = 0;  // the rate as the user wrote it stays when it is this one
  try {
    written = parse_rate(cfg.rate);
  } catch (const ClusterInputError&) {
  }
  if (written != rate_bps) cfg.rate = std::to_string(rate_bps / 1000000) + "mbit";
  cfg.rate_bps = rate_bps;
  choose_shaping(cfg);
  for (int i = 0; i < cfg.nodes; ++i)
    for (int r = 0; r < cfg.rails; ++r) shape_rail(cfg, i, r, "change");
  write_state(cfg);
}

void up(const Config& cfg) {
  struct sigaction sa {}, old_int{}, old_term{};
  sa.sa_handler = on_interrupt;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  interrupted = 0;
  auto restore = [&] {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
  };
  try {
    for (int r = 0; r < cfg.rails; ++r) make_bridge(r);
    for (int i = 0; i < cfg.nodes; ++i) make_node(cfg, i);
    if (interrupted) throw CommandError("interrupted by signal " + std::to_string(interrupted));
    write_state(cfg);
  } catch (const CommandError& e) {
    try {
      down();
    } catch (const CommandError& e2) {
      restore();
      throw CommandError(std::string(e.what()) + "; cleaning up also failed: " + e2.what());
    }
    restore();
    throw;
  }
  restore();
}

int down() {
  Present p = scan();
  int stopped = stop_node_processes(p.namespaces);
  std::vector<std::string> failures;
  auto remove = [&](std::vector<std::string> argv) {
    std::vector<std::string> display = argv;
    argv[0] = tool(argv[0]);
    CommandResult r = run_command(argv);
    if (r.status != 0 && !already_gone(r)) failures.push_back(failure_text(display, r));
  };
  // Root-side veths first: deleting one removes its peer at once, whereas a
  // deleted namespace frees its devices asynchronously.
  for (auto& v : p.root_veths) remove({"ip", "link", "del", v});
  for (auto& b : p.bridges) remove({"ip", "link", "del", b});
  for (auto& n : p.namespaces) remove({"ip", "netns", "del", n});
  if (unlink(state_path().c_str()) != 0 && errno != ENOENT)
    failures.push_back("cannot remove " + state_path() + ": " + strerror(errno));
  rmdir(state_dir().c_str());  // fails harmlessly while an mpirun agent dir is in it
  Present left = scan();
  if (failures.empty() && left.any()) failures.push_back("still present after removal: " + left.summary());
  if (!failures.empty()) {
    std::string more = failures.size() > 1 ? " (and " + std::to_string(failures.size() - 1) + " more)" : "";
    throw CommandError(failures.front() + more);
  }
  return stopped;
}

std::string address_conflict() {
  for (auto& line : lines_of(must({"ip", "-o", "-4", "addr", "show"}))) {
    auto w = words_of(line);  // "4: eth1    inet 198.18.3.7/16 ..."
    if (w.size() < 4 || w[2] != "inet" || has_prefix(w[1], "rcbr")) continue;
    if (has_prefix(w[3], "198.18.") || has_prefix(w[3], "198.19."))
      return w[3] + " on " + w[1] + " is in 198.18.0.0/15, the range the cluster's rails use";
  }
  return "";
}

// ---------------------------------------------------------------- faults

void set_rail_link(int node, int rail, bool up) {
  must({"ip", "-n", node_name(node), "link", "set", rail_if_name(rail), up ? "up" : "down"});
}

int flap_rail(int node, int rail, double seconds, double period) {
  const auto start = std::chrono::steady_clock::now();
  int changes = 0;
  try {
    for (bool up = false;; up = !up, ++changes) {
      auto at = start + std::chrono::duration<double>(changes * period);
      if (at - start >= std::chrono::duration<double>(seconds)) break;
      std::this_thread::sleep_until(at);
      set_rail_link(node, rail, up);
    }
  } catch (const CommandError&) {
    set_rail_link(node, rail, true);
    throw;
  }
  if (changes % 2) set_rail_link(node, rail, true), ++changes;  // it ends up
  return changes;
}

// ---------------------------------------------------------------- health

namespace {

// What `ip -o link`, `ip -o -4 addr` and `tc qdisc` say about the devices of
// one namespace ("" = the root namespace).
struct Devices {
  std::map<std::string, std::set<std::string>> flags;  // name -> {UP, LOWER_UP, ...}
  std::map<std::string, std::string> master;
  std::map<std::string, std::set<std::string>> addrs;  // name -> {198.18.0.1/24}
  std::set<std::string> tbf;                           // devices with a root tbf
};

std::vector<std::string> ns_prefix(const std::string& ns, const char* tool_name) {
  if (ns.empty()) return {tool_name};
  return {tool_name, "-n", ns};
}

void parse_links(const std::string& out, Devices& d) {
  for (auto& line : lines_of(out)) {
    // "53: rcv0r0@if2: <BROADCAST,UP,LOWER_UP> mtu 1500 ... master rcbr0 state UP ..."
    auto w = words_of(line);
    if (w.size() < 3) continue;
    std::string name = w[1].substr(0, w[1].find_first_of("@:"));
    std::string f = w[2];
    if (f.size() >= 2) f = f.substr(1, f.size() - 2);
    std::istringstream fl(f);
    for (std::string x; std::getline(fl, x, ',');) d.flags[name].insert(x);
    for (size_t i = 3; i + 1 < w.size(); ++i)
      if (w[i] == "master") d.master[name] = w[i + 1];
  }
}

Devices read_devices(const std::string& ns) {
  Devices d;
  parse_links(must(concat(ns_prefix(ns, "ip"), {"-o", "link", "show"})), d);
  for (auto& line : lines_of(must(concat(ns_prefix(ns, "ip"), {"-o", "-4", "addr", "show"})))) {
    auto w = words_of(line);  // "2: rail0    inet 198.18.0.1/24 scope global rail0"
    if (w.size() >= 4 && w[2] == "inet") d.addrs[w[1]].insert(w[3]);
  }
  for (auto& line : lines_of(must(concat(ns_prefix(ns, "tc"), {"qdisc", "show"})))) {
    auto w = words_of(line);  // "qdisc tbf 8041: dev rail0 root refcnt 3 rate 1Gbit ..."
    auto dev = std::find(w.begin(), w.end(), "dev");
    if (w.size() > 1 && w[1] == "tbf" && dev != w.end() && dev + 1 != w.end() &&
        std::find(w.begin(), w.end(), "root") != w.end())
      d.tbf.insert(*(dev + 1));
  }
  return d;
}

// "" if device `name` is up with address `addr` (if given) and shaped (if asked).
std::string device_problem(const Devices& d, const std::string& name, const std::string& addr, bool shaped) {
  auto f = d.flags.find(name);
  if (f == d.flags.end()) return name + " missing";
  if (!f->second.count("UP")) return name + " down";
  if (!addr.empty() && !d.addrs.count(name)) return name + " has no address " + addr;
  if (!addr.empty() && !d.addrs.at(name).count(addr)) return name + " lacks " + addr;
  if (shaped && !d.tbf.count(name)) return name + " not shaped (no tbf)";
  return "";
}

}  // namespace

bool Health::healthy() const {
  for (auto& b : bridge_problems)
    if (!b.empty()) return false;
  for (auto& n : nodes) {
    if (!n.namespace_ok) return false;
    for (auto& r : n.rail_problems)
      if (!r.empty()) return false;
  }
  return true;
}

Health check(const Config& cfg) {
  Health h;
  Devices root = read_devices("");
  for (int r = 0; r < cfg.rails; ++r)
    h.bridge_problems.push_back(device_problem(root, bridge_name(r), bridge_address(r) + "/24", false));
  for (int i = 0; i < cfg.nodes; ++i) {
    NodeHealth n;
    n.namespace_ok = fs::exists("/run/netns/" + node_name(i));
    Devices inside = n.namespace_ok ? read_devices(node_name(i)) : Devices{};
    for (int r = 0; r < cfg.rails; ++r) {
      std::string problem = n.namespace_ok ? device_problem(inside, rail_if_name(r), rail_address(r, i) + "/24", true)
                                           : "no namespace";
      std::string veth = root_veth_name(i, r);
      std::string root_problem = device_problem(root, veth, "", true);
      if (root_problem.empty() && root.master[veth] != bridge_name(r))
        root_problem = veth + " not attached to " + bridge_name(r);
      if (problem.empty()) problem = root_problem;
      n.rail_problems.push_back(problem);
    }
    h.nodes.push_back(n);
  }
  return h;
}

bool usable() {
  if (!is_root()) return false;
  try {
    auto cfg = load_state();
    return cfg && check(*cfg).healthy();
  } catch (const std::exception&) {  // a malformed state file, a failing `ip`: not usable
    return false;
  }
}

// ---------------------------------------------------------------- programs

std::vector<std::string> node_exec_argv(int node, const std::vector<std::string>& prog_args) {
  const std::string host = node_name(node);
  std::vector<std::string> argv = {tool("ip"), "netns", "exec", host, tool("unshare"), "--uts", "--", tool("sh"),
                                   "-c", "hostname " + host + " && exec \"$0\" \"$@\""};
  argv.insert(argv.end(), prog_args.begin(), prog_args.end());
  return argv;
}

std::string rsh_agent_script() {
  return "#!/bin/sh\n"
         "# railcoll cluster mpirun: Open MPI's rsh agent on the emulated cluster.\n"
         "# mpirun runs it as `AGENT HOST ORTED-COMMAND...`, as it would run ssh; it\n"
         "# starts the command in HOST's network namespace with its own UTS namespace\n"
         "# whose hostname is HOST (without that, all nodes share one hostname and\n"
         "# Open MPI's shared-memory transport mixes up the nodes).\n"
         "host=$1\n"
         "shift\n"
         "case \"$host\" in\n"
         "  rc-n[0-9] | rc-n[0-9][0-9] | rc-n[0-9][0-9][0-9]) ;;\n"
         "  *) echo \"railcoll rsh agent: unknown host '$host' (expected rc-n<i>)\" >&2; exit 255 ;;\n"
         "esac\n"
         "exec " +
         tool("ip") + " netns exec \"$host\" " + tool("unshare") +
         " --uts -- /bin/sh -c \"hostname $host; $*\"\n";
}

std::string resolve_program(const std::string& prog) {
  auto runnable = [](const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0;
  };
  if (prog.empty()) return "";
  if (prog.find('/') != std::string::npos) {
    std::error_code ec;
    fs::path abs = fs::absolute(prog, ec);
    return !ec && runnable(abs) ? abs.lexically_normal().string() : "";
  }
  const char* path = getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    fs::path candidate = fs::path(dir.empty() ? "." : dir) / prog;
    if (runnable(candidate)) {
      std::error_code ec;
      return fs::absolute(candidate, ec).lexically_normal().string();
    }
  }
  return "";
}

}  // namespace railcoll::cluster
