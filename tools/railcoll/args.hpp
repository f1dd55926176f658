// Command-line parsing for the railcoll verbs: --name value, --name=value and
// flags; every mistake is a one-line UsageError (exit status 2).
#pragma once
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/registry.hpp"
#include "core/topology.hpp"

namespace railcoll::cli {

struct UsageError : std::runtime_error {
  explicit UsageError(const std::string& w) : std::runtime_error(w) {}
};

// -h or --help among a verb's options: main() prints the verb's usage (usage.hpp) and exits 0.
struct HelpRequested {};

class Args {
 public:
  // flags: options without a value; valued: options with one. -h and --help
  // throw HelpRequested unless a verb declares them itself.
  Args(const std::vector<std::string>& argv, const std::set<std::string>& flags,
       const std::set<std::string>& valued);
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  bool flag(const std::string& name) const { return has(name); }
  std::string str(const std::string& name, const std::string& dflt = "") const;
  long integer(const std::string& name, long dflt, long min, long max) const;
  uint64_t size(const std::string& name, uint64_t dflt) const;  // bytes, K/M/G suffixes
  const std::vector<std::string>& positional() const { return positional_; }
  // The option as the user typed it ("-n", "--rails"), for messages; options
  // not given are shown as they would be typed (one letter: "-n").
  std::string spelled(const std::string& name) const;

 private:
  std::map<std::string, std::string> values_;
  std::map<std::string, std::string> typed_;
  std::vector<std::string> positional_;
};

// Parses "4K", "1MiB", "17": bytes. Throws UsageError naming `what`.
uint64_t parse_size(const std::string& text, const std::string& what);
// -m MIN:MAX (or -m MAX): sizes in bytes; MIN defaults to `lo`, MAX to `hi`.
void size_range(const Args& a, uint64_t* lo, uint64_t* hi);
std::vector<int> parse_int_list(const std::string& text, const std::string& what);

// --ranks N [--ppn P | --nodes 4,4,5 | --node-map 0,1,0,1] [--rails K]
Topology topology_from(const Args& a);
extern const std::set<std::string> kTopologyOptions;

// The common schedule options: --bytes, --stripe-threshold, --concurrency, --root.
struct ScheduleRequest {
  Collective collective = Collective::Allgather;
  std::string algorithm;
  Topology topo;
  std::vector<uint64_t> counts;
  AlgoOptions opts;
  std::vector<std::string> given;
};
ScheduleRequest schedule_request(const Args& a, const std::string& collective);
extern const std::set<std::string> kScheduleOptions;

}  // namespace railcoll::cli
