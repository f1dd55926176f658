#include "select/select.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

#include "core/errors.hpp"
#include "core/registry.hpp"
#include "select/tuning_file.hpp"

extern char** environ;

namespace railcoll {

namespace {

constexpr const char* kPrefix = "RAILCOLL_";
constexpr const char* kSuffix = "_ALGO";
constexpr const char* kTuningVariable = "RAILCOLL_TUNING";

bool wants_auto(const std::string& name) { return name.empty() || name == "auto"; }

std::vector<std::string> process_variables() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) out.emplace_back(*e);
  return out;
}

// "RAILCOLL_BCAST_ALGO=x" -> "bcast"; "" for any other variable.
std::string algorithm_variable_collective(const std::string& variable) {
  const std::string name = variable.substr(0, variable.find('='));
  const size_t p = std::string(kPrefix).size(), s = std::string(kSuffix).size();
  if (name.size() <= p + s || name.compare(0, p, kPrefix) != 0 || name.compare(name.size() - s, s, kSuffix) != 0)
    return "";
  std::string coll = name.substr(p, name.size() - p - s);
  for (auto& ch : coll) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return coll;
}

void check_known(Collective collective, const std::string& name, const std::string& source) {
  if (!wants_auto(name) && !find_algorithm(collective, name))
    throw InputError(unknown_algorithm_message(collective, name, source));
}

}  // namespace

const std::string& algorithm_variable(Collective collective) {
  // Made once: a call looks its variable up every time.
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (int c = 0; c <= static_cast<int>(Collective::Goal); ++c) {
      std::string var = std::string(kPrefix) + collective_name(static_cast<Collective>(c)) + kSuffix;
      for (auto& ch : var) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      out.push_back(var);
    }
    return out;
  }();
  return names[static_cast<size_t>(collective)];
}

void check_algorithm_variables(const std::vector<std::string>& variables) {
  for (const std::string& v : variables) {
    std::string coll = algorithm_variable_collective(v);
    if (coll.empty()) continue;
    const std::string name = v.substr(0, v.find('='));
    const std::string value = v.find('=') == std::string::npos ? "" : v.substr(v.find('=') + 1);
    Collective c;
    if (!parse_collective(coll, &c)) {
      std::string names;
      for (Collective x : user_collectives()) names += (names.empty() ? "" : ", ") + algorithm_variable(x);
      throw InputError(name + ": there is no collective '" + coll + "' (the variables are " + names + ")");
    }
    check_known(c, value, name);
  }
}

Selector::Selector() : lookup_([](const std::string&) -> const char* { return nullptr; }) {}

Selector::Selector(const std::vector<std::string>& variables, Lookup lookup) : lookup_(std::move(lookup)) {
  check_algorithm_variables(variables);
  const char* tuning = lookup_(kTuningVariable);
  if (tuning && *tuning) {
    tuning_path_ = tuning;
    try {
      file_rules_ = load_tuning_file(tuning_path_);
    } catch (const InputError& e) {
      throw InputError(std::string(kTuningVariable) + ": " + e.what());
    }
  }
}

Selector Selector::from_environment() {
  return Selector(process_variables(), [](const std::string& name) { return getenv(name.c_str()); });
}

Selector Selector::from_variables(const std::vector<std::string>& variables) {
  auto values = std::make_shared<std::map<std::string, std::string>>();
  for (const std::string& v : variables) {
    size_t eq = v.find('=');
    if (eq != std::string::npos) (*values)[v.substr(0, eq)] = v.substr(eq + 1);
  }
  return Selector(variables, [values](const std::string& name) -> const char* {
    auto it = values->find(name);
    return it == values->end() ? nullptr : it->second.c_str();
  });
}

// The call's option or the variable, when either names an algorithm (checked); else null.
namespace {
bool named(const Situation& s, const std::string& requested, const Selector::Lookup& lookup, Choice* out) {
  if (!wants_auto(requested)) {
    check_known(s.collective, requested, "the call's options");
    *out = {requested, "the call's options"};
    return true;
  }
  const std::string& var = algorithm_variable(s.collective);
  if (const char* v = lookup(var); v && !wants_auto(v)) {
    check_known(s.collective, v, var);
    *out = {v, var};
    return true;
  }
  return false;
}
}  // namespace

Choice Selector::choose(const Situation& s, const std::string& requested) const {
  Choice out;
  if (named(s, requested, lookup_, &out)) return out;
  for (const auto* rules : {&file_rules_, &default_rules()})
    if (const Rule* first = first_match(*rules, s)) return {first->algorithm, first->origin};
  throw Error(Status::Internal, std::string("no default rule for ") + collective_name(s.collective));
}

std::vector<Choice> Selector::candidates(const Situation& s, const std::string& requested) const {
  std::vector<Choice> out{choose(s, requested)};
  if (out[0].origin == "the call's options" || out[0].origin == algorithm_variable(s.collective)) return out;
  auto add = [&](const std::string& algorithm, const std::string& origin) {
    for (const Choice& c : out)
      if (c.algorithm == algorithm) return;
    out.push_back({algorithm, origin});
  };
  for (const auto* rules : {&file_rules_, &default_rules()})
    for (const Rule& r : *rules)
      if (r.matches(s)) add(r.algorithm, r.origin);
  for (const AlgoSpec& a : all_algorithms())
    if (a.collective == s.collective && software_equivalent(s.collective, a.name) == a.name)
      add(a.name, "the first that fits");
  return out;
}

std::vector<Rule> Selector::rules_in_force() const {
  std::vector<Rule> out;
  for (Collective c : user_collectives()) {
    const std::string var = algorithm_variable(c);
    if (const char* v = lookup_(var); v && !wants_auto(v)) {
      Rule r;
      r.collective = c;
      r.algorithm = v;
      r.origin = var;
      r.reason = "set in the environment";
      out.push_back(r);
    }
  }
  out.insert(out.end(), file_rules_.begin(), file_rules_.end());
  out.insert(out.end(), default_rules().begin(), default_rules().end());
  return out;
}

const Selector& environment_selector() {
  // Made once; a failed attempt leaves nothing behind, so the next call retries.
  static std::mutex mu;
  static std::unique_ptr<const Selector> made;
  std::lock_guard<std::mutex> lock(mu);
  if (!made) made = std::make_unique<const Selector>(Selector::from_environment());
  return *made;
}

std::string select_algorithm(Collective collective, const Topology& t, uint64_t bytes) {
  return environment_selector().choose(collective, t, bytes).algorithm;
}

// The seeds' own software forms of the hardware collectives: elan_hbcast falls
// back to elan_bcast, a software tree with shared-memory copies inside a node
// (seed 004 §4.2: smp), and elan_hgsync's software twin is elan_gsync's tree of
// 'ready' and 'go' messages (seed 004 §4.1: tree).
std::string software_equivalent(Collective collective, const std::string& algorithm) {
  if (collective == Collective::Bcast && algorithm == "hw_multicast") return "smp";
  if (collective == Collective::Barrier && algorithm == "hw_combining") return "tree";
  return algorithm;
}

}  // namespace railcoll
