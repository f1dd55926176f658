#include "select/tuning_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/errors.hpp"
#include "core/registry.hpp"
#include "select/select.hpp"

namespace railcoll {

namespace {

using nlohmann::json;

constexpr int kFormat = 1;

struct RangeKey {
  const char* key;
  Range Rule::*field;
};
const RangeKey kRangeKeys[] = {{"ranks", &Rule::ranks}, {"nodes", &Rule::nodes},           {"ppn", &Rule::ppn},
                               {"rails", &Rule::rails}, {"bytes", &Rule::bytes}, {"node_bytes", &Rule::node_bytes}};

uint64_t range_end(const json& v, const std::string& where) {
  if (!v.is_number_integer() || (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0))
    throw InputError(where + " must be a whole number >= 0, not " + v.dump());
  return v.get<uint64_t>();
}

Range parse_range(const json& v, const std::string& where) {
  if (v.is_number()) {
    uint64_t x = range_end(v, where);
    return {x, x};
  }
  if (!v.is_array() || v.size() != 2)
    throw InputError(where + " must be a number or [lo, hi] (hi null for no limit), not " + v.dump());
  Range r{range_end(v[0], where + " lo"), v[1].is_null() ? kNoLimit : range_end(v[1], where + " hi")};
  if (r.lo > r.hi) throw InputError(where + " is empty: " + v.dump() + " has lo > hi");
  return r;
}

Rule parse_rule(const json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(where + ": a rule is an object, not " + j.dump());
  Rule r;
  for (auto& [key, value] : j.items()) {
    bool known = key == "collective" || key == "algorithm" || key == "comment";
    for (auto& k : kRangeKeys) known |= key == k.key;
    if (!known)
      throw InputError(where + ": unknown key '" + key +
                       "' (a rule has collective, algorithm, ranks, nodes, ppn, rails, bytes, node_bytes, comment)");
  }
  if (!j.contains("collective") || !j["collective"].is_string())
    throw InputError(where + ": \"collective\" (a name like \"allgather\") is missing");
  if (!j.contains("algorithm") || !j["algorithm"].is_string())
    throw InputError(where + ": \"algorithm\" (a name from railcoll algos) is missing");
  try {
    r.collective = collective_from_name(j["collective"].get<std::string>());
  } catch (const InputError& e) {
    throw InputError(where + ": " + e.what());
  }
  r.algorithm = j["algorithm"].get<std::string>();
  if (!find_algorithm(r.collective, r.algorithm))
    throw InputError(where + ": " + unknown_algorithm_message(r.collective, r.algorithm, ""));
  for (auto& k : kRangeKeys)
    if (j.contains(k.key)) r.*k.field = parse_range(j[k.key], where + ": " + k.key);
  if (j.contains("comment")) {
    if (!j["comment"].is_string()) throw InputError(where + ": \"comment\" must be a string");
    r.reason = j["comment"].get<std::string>();
  }
  return r;
}

nlohmann::ordered_json range_json(const Range& r) {
  if (r.lo == r.hi) return r.lo;
  return nlohmann::ordered_json::array({r.lo, r.hi == kNoLimit ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.hi)});
}

}  // namespace

std::vector<Rule> parse_tuning(const std::string& text, const std::string& path) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    throw InputError(path + ": not valid JSON: " + e.what());
  }
  if (!doc.is_object() || !doc.contains("rules") || !doc["rules"].is_array())
    throw InputError(path + ": a tuning file is an object with a \"rules\" list (docs/selection.md)");
  if (doc.contains("railcoll_tuning") && doc["railcoll_tuning"] != kFormat)
    throw InputError(path + ": format " + doc["railcoll_tuning"].dump() + " is not " + std::to_string(kFormat));
  std::vector<Rule> rules;
  for (size_t i = 0; i < doc["rules"].size(); ++i) {
    Rule r = parse_rule(doc["rules"][i], path + ": rule #" + std::to_string(i));
    r.origin = "file:" + path + "#" + std::to_string(i);
    for (size_t k = 0; k < rules.size(); ++k)
      if (rules[k].overlaps(r))
        throw InputError(path + ": rules #" + std::to_string(k) + " and #" + std::to_string(i) +
                         " overlap: both match some " + collective_name(r.collective) + " call (" +
                         conditions_text(rules[k]) + " / " + conditions_text(r) + ")");
    rules.push_back(std::move(r));
  }
  return rules;
}

std::vector<Rule> load_tuning_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw InputError(path + ": cannot read the tuning file: " + strerror(errno));
  std::stringstream text;
  text << f.rdbuf();
  return parse_tuning(text.str(), path);
}

std::string tuning_json(const std::vector<Rule>& rules, const std::string& comment) {
  // One rule per line, so a file reads (and diffs) rule by rule.
  std::ostringstream o;
  o << "{\"railcoll_tuning\": " << kFormat << ",\n \"comment\": " << json(comment).dump() << ",\n \"rules\": [";
  for (size_t i = 0; i < rules.size(); ++i) {
    const Rule& r = rules[i];
    nlohmann::ordered_json j;
    j["collective"] = collective_name(r.collective);
    for (auto& k : kRangeKeys)
      if (!(r.*k.field).any()) j[k.key] = range_json(r.*k.field);
    j["algorithm"] = r.algorithm;
    if (!r.reason.empty()) j["comment"] = r.reason;
    o << (i ? ",\n  " : "\n  ") << j.dump();
  }
  o << "\n ]}\n";
  return o.str();
}

void write_tuning_file(const std::string& path, const std::vector<Rule>& rules, const std::string& comment) {
  std::ofstream f(path);
  if (!f) throw InputError(path + ": cannot write the tuning file: " + strerror(errno));
  f << tuning_json(rules, comment);
  if (!f.flush()) throw InputError(path + ": writing the tuning file failed");
}

}  // namespace railcoll
