#include "sim/machine.hpp"

#include <unistd.h>

#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <vector>

#include "core/errors.hpp"

namespace railcoll::sim {

int Machine::hops(int a, int b) const {
  if (a == b) return 0;
  if (topology != "fattree" || fattree_arity < 2) return 1;
  // k-ary n-tree: nodes meet at the level of their lowest common subtree; a path
  // goes up and down, 2*level - 1 switches.
  int level = 1;
  for (long span = fattree_arity; a / span != b / span; span *= fattree_arity) ++level;
  return 2 * level - 1;
}

int Machine::tree_levels() const {
  if (topology != "fattree" || fattree_arity < 2) return 1;
  int levels = 1;
  for (long span = fattree_arity; span < nodes; span *= fattree_arity) ++levels;
  return levels;
}

namespace {

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

}  // namespace

Machine parse_machine(const std::string& text, const std::string& origin) {
  Machine m;
  std::map<std::string, std::string> kv;
  std::istringstream in(text);
  int lineno = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineno;
    std::string where = origin + ":" + std::to_string(lineno);
    std::string t = trim(line);
    if (t.empty() || t[0] == '#') {
      if (m.description.empty() && t.size() > 1 && lineno == 1) m.description = trim(t.substr(1));
      continue;
    }
    auto eq = t.find('='), hash = t.find('#');
    if (eq == std::string::npos || (hash != std::string::npos && hash < eq))
      throw InputError(where + ": expected 'key = value  # source: ...'");
    std::string key = trim(t.substr(0, eq));
    std::string value = trim(t.substr(eq + 1, hash == std::string::npos ? std::string::npos : hash - eq - 1));
    std::string comment = hash == std::string::npos ? "" : trim(t.substr(hash + 1));
    if (comment.rfind("source:", 0) != 0)
      throw InputError(where + ": parameter '" + key + "' has no '# source: ...' (every value needs one)");
    if (kv.count(key)) throw InputError(where + ": parameter '" + key + "' is given twice");
    kv[key] = value;
    m.sources[key] = trim(comment.substr(7));
  }
  std::set<std::string> used;
  auto need = [&](const std::string& key) -> const std::string& {
    auto it = kv.find(key);
    if (it == kv.end()) throw InputError(origin + ": missing parameter '" + key + "'");
    used.insert(key);
    return it->second;
  };
  auto number = [&](const std::string& key, double lo, double hi, bool optional = false, double dflt = 0) {
    if (optional && !kv.count(key)) return dflt;
    const std::string& v = need(key);
    char* end = nullptr;
    double x = strtod(v.c_str(), &end);
    if (v.empty() || *end) throw InputError(origin + ": parameter '" + key + "' is not a number: '" + v + "'");
    if (!(x >= lo && x <= hi))
      throw InputError(origin + ": parameter '" + key + "' = " + v + " is out of range [" + std::to_string(lo) + ", " +
                       std::to_string(hi) + "]");
    return x;
  };
  auto word = [&](const std::string& key, std::set<std::string> allowed, bool optional = false,
                  const std::string& dflt = "") {
    if (optional && !kv.count(key)) return dflt;
    const std::string& v = need(key);
    if (!allowed.count(v)) {
      std::string list;
      for (auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw InputError(origin + ": parameter '" + key + "' = '" + v + "' is not one of: " + list);
    }
    return v;
  };
  m.name = need("name");
  m.nodes = static_cast<int>(number("nodes", 1, 1 << 20));
  m.ppn = static_cast<int>(number("ppn", 1, 4096));
  m.rails = static_cast<int>(number("rails", 1, 64));
  m.topology = word("topology", {"crossbar", "fattree"});
  m.switch_ports = static_cast<int>(number("switch_ports", 2, 4096, true, 0));
  if (m.topology == "fattree") {
    m.fattree_arity = static_cast<int>(number("fattree_arity", 2, 1024));
    m.adaptive_up = word("routing", {"adaptive", "dmodk"}, true, "adaptive") == "adaptive";
    // A k-ary n-tree switch has k ports down and k up (seed 004 §2.2).
    if (m.switch_ports && m.switch_ports < 2 * m.fattree_arity)
      throw InputError(origin + ": parameter 'fattree_arity' = " + std::to_string(m.fattree_arity) +
                       " needs switches of at least " + std::to_string(2 * m.fattree_arity) +
                       " ports ('switch_ports' = " + std::to_string(m.switch_ports) + ")");
  } else if (kv.count("fattree_arity") || kv.count("routing")) {
    throw InputError(origin + ": parameter '" + (kv.count("routing") ? "routing" : "fattree_arity") +
                     "' is only used with topology = fattree");
  } else if (m.switch_ports && m.nodes > m.switch_ports) {
    throw InputError(origin + ": parameter 'nodes' = " + std::to_string(m.nodes) + " does not fit one crossbar of " +
                     "'switch_ports' = " + std::to_string(m.switch_ports) + " ports (use topology = fattree)");
  }
  m.wire_latency_us = number("wire_latency_us", 0, 1e6);
  m.hop_latency_us = number("hop_latency_us", 0, 1e6, true, 0);
  m.send_overhead_us = number("send_overhead_us", 0, 1e6);
  m.recv_overhead_us = number("recv_overhead_us", 0, 1e6);
  m.gap_us = number("gap_us", 0, 1e6);
  m.link_MBps = number("link_MBps", 1e-3, 1e9);
  m.link_burst_bytes = number("link_burst_bytes", 0, 1e12, true, 0);
  m.pci_MBps = number("pci_MBps", 1e-3, 1e9);
  m.pci_half_duplex = word("pci_duplex", {"half", "full"}, true, "full") == "half";
  m.pci_per_node = word("pci_shared_by", {"nic", "node"}, true, "nic") == "node";
  m.dma_engines = static_cast<int>(number("dma_engines", 1, 1024));
  m.dma_startup_us = number("dma_startup_us", 0, 1e6, true, 0);
  m.copy_MBps = number("copy_MBps", 1e-3, 1e9);
  m.membus_MBps = number("membus_MBps", 1e-3, 1e9);
  m.membus_machine_wide = word("membus_shared_by", {"node", "machine"}, true, "node") == "machine";
  m.flag_latency_us = number("flag_latency_us", 0, 1e6);
  m.intranode_put = word("intranode_put", {"nic", "shm", "socket"});
  if (m.intranode_put == "socket") {
    m.socket_ns_per_byte = number("socket_ns_per_byte", 0, 1e6);
    m.socket_overhead_us = number("socket_overhead_us", 0, 1e6, true, -1);
  }
  m.cores = static_cast<int>(number("cores", 1, 1 << 20, true, 0));
  m.cores_machine_wide = word("cores_shared_by", {"node", "machine"}, true, "node") == "machine";
  m.wakeup_us = number("wakeup_us", 0, 1e6, true, 0);
  m.kernel_ns_per_byte = number("kernel_ns_per_byte", 0, 1e6, true, 0);
  m.overhead_shared = number("overhead_shared", 0, 1, true, 0);
  m.recv_on_cpu = word("recv_cpu", {"loggp", "event"}, true, m.kernel_ns_per_byte > 0 ? "loggp" : "event") == "loggp";
  m.spin_us = number("spin_us", 0, 1e9, true, 0);
  m.spin_turn_us = number("spin_turn_us", 0, 1e6, true, 0);
  m.busiest_core_share = number("busiest_core_share", 0, 1, true, 0);
  m.call_overhead_us = number("call_overhead_us", 0, 1e6, true, 0);
  m.hw_multicast = word("hw_multicast", {"yes", "no"}, true, "no") == "yes";
  m.hw_barrier = word("hw_barrier", {"yes", "no"}, true, "no") == "yes";
  m.hw_packet_bytes = number("hw_packet_bytes", 0, 1 << 20, true, 0);
  m.nic_thread_us = number("nic_thread_us", 0, 1e6, true, 0);
  for (int i = 1; kv.count("noise_" + std::to_string(i)); ++i) {
    const std::string key = "noise_" + std::to_string(i), v = need(key);
    std::istringstream in(v);
    Machine::NoiseSource n;
    std::string rest;
    if (!(in >> n.period_us >> n.duration_us) || (!(in >> n.every) && !in.eof()) || (in >> rest))
      throw InputError(origin + ": parameter '" + key + "' = '" + v + "' is not 'PERIOD_US DURATION_US [EVERY]'");
    if (!(n.period_us > 0 && n.duration_us >= 0 && n.duration_us < n.period_us && n.every >= 1))
      throw InputError(origin + ": parameter '" + key + "' = '" + v +
                       "' needs 0 <= duration < period and every >= 1");
    m.noise.push_back(n);
  }
  for (auto& k : kv)
    if (!used.count(k.first)) throw InputError(origin + ": unknown parameter '" + k.first + "'");
  return m;
}

std::string preset_dirs_text() {
  std::string s;
  if (const char* e = getenv("RAILCOLL_PRESETS")) s += std::string(e) + ":";
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  std::string exe = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  std::string dir = exe.substr(0, exe.rfind('/'));
  s += dir + "/../../presets:" + dir + "/../share/railcoll/presets:" + RAILCOLL_SOURCE_DIR "/presets";
  return s;
}

Machine load_machine(const std::string& name_or_path) {
  std::vector<std::string> candidates;
  bool is_path = name_or_path.find('/') != std::string::npos ||
                 (name_or_path.size() > 7 && name_or_path.substr(name_or_path.size() - 7) == ".preset");
  if (is_path) {
    candidates.push_back(name_or_path);
  } else {
    std::stringstream dirs(preset_dirs_text());
    for (std::string d; std::getline(dirs, d, ':');)
      if (!d.empty()) candidates.push_back(d + "/" + name_or_path + ".preset");
  }
  for (auto& path : candidates) {
    std::ifstream f(path);
    if (!f) continue;
    std::stringstream text;
    text << f.rdbuf();
    return parse_machine(text.str(), path);
  }
  throw InputError("unknown preset '" + name_or_path + "' (railcoll sim presets lists them)");
}

}  // namespace railcoll::sim
