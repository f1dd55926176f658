#include "args.hpp"

#include <algorithm>
#include <cctype>

#include "core/errors.hpp"
#include "testbed/job.hpp"

namespace railcoll::cli {

const std::set<std::string> kTopologyOptions = {"ranks", "ppn", "nodes", "node-map", "rails"};
const std::set<std::string> kScheduleOptions = {"algo",        "bytes", "counts", "stripe-threshold",
                                                 "concurrency", "root",  "dtype",  "op"};

Args::Args(const std::vector<std::string>& argv, const std::set<std::string>& flags,
           const std::set<std::string>& valued) {
  for (size_t i = 0; i < argv.size(); ++i) {
    // Single-dash short options (-n 4, -m 8:1M, -i 100, -c) read like long ones.
    const std::string& typed = argv[i];
    std::string a = typed;
    if (a.size() >= 2 && a[0] == '-' && a[1] != '-' && !std::isdigit(static_cast<unsigned char>(a[1])))
      a = "-" + a;
    if (a.rfind("--", 0) != 0 || a == "--") {
      if (a.size() > 1 && a[0] == '-' && !std::isdigit(static_cast<unsigned char>(a[1])))
        throw UsageError("unknown option '" + typed + "'");
      positional_.push_back(a);
      continue;
    }
    std::string name = a.substr(2), value;
    bool inline_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    typed_[name] = typed.substr(0, typed.find('='));
    if ((name == "h" || name == "help") && !flags.count(name) && !valued.count(name)) throw HelpRequested{};
    if (flags.count(name)) {
      if (inline_value) throw UsageError("option " + spelled(name) + " takes no value");
      values_[name] = "";
    } else if (valued.count(name)) {
      if (!inline_value) {
        if (i + 1 >= argv.size()) throw UsageError("option " + spelled(name) + " needs a value");
        value = argv[++i];
      }
      if (values_.count(name)) throw UsageError("option " + spelled(name) + " is given twice");
      values_[name] = value;
    } else {
      throw UsageError("unknown option '" + typed_[name] + "'");
    }
  }
}

std::string Args::spelled(const std::string& name) const {
  auto it = typed_.find(name);
  if (it != typed_.end()) return it->second;
  return (name.size() == 1 ? "-" : "--") + name;
}

std::string Args::str(const std::string& name, const std::string& dflt) const {
  auto it = values_.find(name);
  return it == values_.end() ? dflt : it->second;
}

long Args::integer(const std::string& name, long dflt, long min, long max) const {
  auto it = values_.find(name);
  if (it == values_.end()) return dflt;
  const std::string& v = it->second;
  size_t used = 0;
  long x = 0;
  try {
    x = std::stol(v, &used);
  } catch (...) {
    used = 0;
  }
  if (v.empty() || used != v.size()) throw UsageError(spelled(name) + " expects a whole number, got '" + v + "'");
  if (x < min || x > max)
    throw UsageError(spelled(name) + " must be between " + std::to_string(min) + " and " + std::to_string(max) +
                     ", got " + v);
  return x;
}

uint64_t parse_size(const std::string& text, const std::string& what) {
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == 0) throw UsageError(what + " expects a size in bytes (like 4096, 4K, 1MiB), got '" + text + "'");
  std::string digits = text.substr(0, i), unit = text.substr(i);
  for (auto& ch : unit) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  uint64_t mult = 1;
  if (unit.empty() || unit == "b") mult = 1;
  else if (unit == "k" || unit == "kb" || unit == "kib") mult = 1ull << 10;
  else if (unit == "m" || unit == "mb" || unit == "mib") mult = 1ull << 20;
  else if (unit == "g" || unit == "gb" || unit == "gib") mult = 1ull << 30;
  else if (unit == "t" || unit == "tb" || unit == "tib") mult = 1ull << 40;
  else throw UsageError(what + ": unknown unit '" + text.substr(i) + "' (use K, M, G or T)");
  if (digits.size() > 15) throw UsageError(what + " " + text + " is absurdly large");
  uint64_t v = std::stoull(digits);
  if (v > (1ull << 50) / mult) throw UsageError(what + " " + text + " is absurdly large");
  return v * mult;
}

uint64_t Args::size(const std::string& name, uint64_t dflt) const {
  return has(name) ? parse_size(str(name), spelled(name)) : dflt;
}

void size_range(const Args& a, uint64_t* lo, uint64_t* hi) {
  if (!a.has("m")) return;
  std::string m = a.str("m");
  auto colon = m.find(':');
  if (colon != std::string::npos) *lo = parse_size(m.substr(0, colon), "-m");
  *hi = parse_size(colon == std::string::npos ? m : m.substr(colon + 1), "-m");
  if (*lo > *hi) throw UsageError("-m MIN:MAX needs MIN <= MAX");
}

std::vector<int> parse_int_list(const std::string& text, const std::string& what) {
  auto list = testbed::parse_number_list(text, 0, 1 << 20);
  if (!list) throw UsageError(what + " expects a comma-separated list of whole numbers, got '" + text + "'");
  return *list;
}

Topology topology_from(const Args& a) {
  int given = a.has("ppn") + a.has("nodes") + a.has("node-map");
  if (given > 1) throw UsageError("give only one of --ppn, --nodes and --node-map");
  int rails = static_cast<int>(a.integer("rails", 1, 1, 64));
  try {
    if (a.has("nodes") || a.has("node-map")) {
      bool sizes = a.has("nodes");
      auto list = parse_int_list(a.str(sizes ? "nodes" : "node-map"), sizes ? "--nodes" : "--node-map");
      Topology t = sizes ? Topology::from_node_sizes(list, rails) : Topology::from_node_map(list, rails);
      if (a.has("ranks") && a.integer("ranks", 0, 1, 1 << 16) != t.nranks())
        throw UsageError(std::string(sizes ? "--nodes" : "--node-map") + " describes " + std::to_string(t.nranks()) +
                         " ranks but --ranks is " + a.str("ranks"));
      return t;
    }
    if (!a.has("ranks")) throw UsageError("--ranks N is required (or --nodes / --node-map)");
    return Topology::from_ppn(static_cast<int>(a.integer("ranks", 0, 1, 1 << 16)),
                              static_cast<int>(a.integer("ppn", 1, 1, 1 << 16)), rails);
  } catch (const InputError& e) {
    throw UsageError(e.what());
  }
}

ScheduleRequest schedule_request(const Args& a, const std::string& collective) {
  ScheduleRequest r;
  if (!parse_collective(collective, &r.collective))
    throw UsageError("unknown collective '" + collective + "' (railcoll algos lists them)");
  if (!a.has("algo")) throw UsageError("--algo NAME is required (railcoll algos lists them)");
  r.algorithm = a.str("algo");
  if (!find_algorithm(r.collective, r.algorithm))
    throw UsageError("unknown " + collective + " algorithm '" + r.algorithm + "' (railcoll algos lists them)");
  r.topo = topology_from(a);
  uint64_t bytes = a.size("bytes", 1);
  if (bytes > kMaxBytesPerRank) throw UsageError("--bytes " + a.str("bytes") + " is absurdly large (limit 1 TiB)");
  r.counts.assign(r.topo.nranks(), bytes);
  if (a.has("counts")) {  // per rank (the v-collectives), or per pair of ranks (alltoallv, row = source)
    if (a.has("bytes")) throw UsageError("give --bytes or --counts, not both");
    auto list = testbed::parse_number_list(a.str("counts"), 0, 1 << 30);
    if (!list) throw UsageError("--counts expects a comma-separated list of byte counts, got '" + a.str("counts") + "'");
    r.counts.assign(list->begin(), list->end());
  }
  r.opts = call_defaults(r.collective);
  r.opts.root = static_cast<int>(a.integer("root", 0, 0, r.topo.nranks() - 1));
  if (a.has("dtype") && !parse_dtype(a.str("dtype"), &r.opts.dtype))
    throw UsageError("--dtype must be one of " + dtype_names() + ", not '" + a.str("dtype") + "'");
  if (a.has("op") && !parse_redop(a.str("op"), &r.opts.redop))
    throw UsageError("--op must be one of " + redop_names() + ", not '" + a.str("op") + "'");
  r.opts.stripe_threshold = a.size("stripe-threshold", 1024);
  if (a.has("concurrency")) {
    r.opts.concurrency = static_cast<int>(a.integer("concurrency", 0, 1, 1 << 16));
    r.given.push_back("concurrency");
  }
  return r;
}

}  // namespace railcoll::cli
