// Which algorithm a call runs, in one place, by precedence:
//   1. the call's own option (railcoll_call_opts_t.algorithm, `--algo NAME`),
//   2. RAILCOLL_<COLL>_ALGO=name (read at every call: a program may change it),
//   3. the rules of the tuning file RAILCOLL_TUNING names (read once),
//   4. the default rules (defaults.cpp).
// "auto" or empty at 1 or 2 passes on to the next. At 3 and 4 selection ranks
// its candidates: the first rule that matches, the other rules that match, then
// every software algorithm of the collective; the runtime's call front end
// (runtime/front_end.hpp) plans the first whose schedule every node's
// shared memory holds. Selection asks nobody: it knows no runtime. The front
// end, `railcoll sim --algo auto`, `railcoll show --algo auto` and `railcoll
// algos --rules` all ask a Selector. docs/selection.md describes it for users.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/collective.hpp"
#include "core/topology.hpp"
#include "select/rules.hpp"

namespace railcoll {

// The rules `auto` falls back to, first match wins.
const std::vector<Rule>& default_rules();

struct Choice {
  std::string algorithm;
  // "the call's options", "RAILCOLL_BCAST_ALGO", "file:PATH#2", "default#7",
  // "the first that fits"
  std::string origin;
};

class Selector {
 public:
  // Reads a variable; nullptr when unset.
  using Lookup = std::function<const char*(const std::string& name)>;

  // The defaults alone, no environment.
  Selector();
  // The process's environment: checks every RAILCOLL_<COLL>_ALGO variable and
  // loads RAILCOLL_TUNING now. Throws InputError naming the variable or the
  // file and rule (a communicator's creation fails on it).
  static Selector from_environment();
  // The same from explicit "NAME=VALUE" strings (tests, tools).
  static Selector from_variables(const std::vector<std::string>& variables);

  // The algorithms for a call, best first, each once: the one the call or a
  // variable names alone (it fails clearly if it cannot run); else the rules'
  // choice, the other rules that match, then every software algorithm of the
  // collective ("the first that fits").
  std::vector<Choice> candidates(const Situation& s, const std::string& requested = "") const;
  // The first candidate.
  Choice choose(const Situation& s, const std::string& requested = "") const;
  Choice choose(Collective collective, const Topology& topo, uint64_t bytes, const std::string& requested = "") const {
    return choose(situation(collective, topo, bytes), requested);
  }
  // Everything below the call's option, in the order it is consulted: a rule
  // per RAILCOLL_<COLL>_ALGO set now, the file's rules, the defaults.
  std::vector<Rule> rules_in_force() const;
  const std::string& tuning_path() const { return tuning_path_; }

 private:
  Selector(const std::vector<std::string>& variables, Lookup lookup);
  std::vector<Rule> file_rules_;
  std::string tuning_path_;
  Lookup lookup_;
};

// The selector of this process's environment, made on first use (the tuning
// file is read once). Throws InputError, and tries again next time, when the
// environment is wrong.
const Selector& environment_selector();
// environment_selector().choose(...).algorithm: calls without an option of
// their own (the simulator's `auto`, reproductions).
std::string select_algorithm(Collective collective, const Topology& t, uint64_t bytes);

// Checks "NAME=VALUE" strings: every RAILCOLL_<COLL>_ALGO names a collective and
// one of its algorithms (or auto). Throws InputError naming the variable.
void check_algorithm_variables(const std::vector<std::string>& variables);
// "RAILCOLL_ALLGATHER_ALGO"
const std::string& algorithm_variable(Collective collective);

// The software form of a hardware algorithm: hw_multicast -> smp, hw_combining
// -> tree; any other, itself. The runtime, which has no such hardware, refuses
// a hardware algorithm and names this one for the caller to ask for.
std::string software_equivalent(Collective collective, const std::string& algorithm);

}  // namespace railcoll
