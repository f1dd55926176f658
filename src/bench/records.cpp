#include "bench/records.hpp"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/errors.hpp"

namespace railcoll::bench {

namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// Times to the nanosecond: enough for any measurement, short in the files.
double us(double x) { return std::round(x * 1000.0) / 1000.0; }
// Bandwidths in GB/s to 6 significant digits: a small size's busbw is far below 0.001.
double gbps(double x) {
  if (x <= 0 || !std::isfinite(x)) return x;
  const double scale = std::pow(10.0, 5 - std::floor(std::log10(x)));
  return std::round(x * scale) / scale;
}

OrderedJson to_json(const BenchRecord& r) {
  OrderedJson j;
  j["collective"] = r.collective;
  j["algorithm"] = r.algorithm;
  if (!r.chosen.empty()) j["chosen"] = r.chosen;
  if (!r.background.empty()) j["background"] = r.background;
  if (!r.transport.empty()) j["transport"] = r.transport;
  if (!r.provider.empty()) j["provider"] = r.provider;
  j["bytes"] = r.bytes;
  j["ranks"] = r.ranks;
  j["nodes"] = r.nodes;
  j["rails"] = r.rails;
  if (r.ppn > 0) j["ppn"] = r.ppn;
  j["avg_us"] = us(r.avg_us);
  j["min_us"] = us(r.min_us);
  j["max_us"] = us(r.max_us);
  j["p50_us"] = us(r.p50_us);
  if (r.p99_us >= 0) {
    j["p90_us"] = us(r.p90_us);
    j["p99_us"] = us(r.p99_us);
  }
  if (r.has_span()) {
    j["span_p50_us"] = us(r.span_p50_us);
    j["span_p90_us"] = us(r.span_p90_us);
    j["span_p99_us"] = us(r.span_p99_us);
  }
  if (r.has_own()) {
    j["own_p50_us"] = us(r.own_p50_us);
    j["own_p90_us"] = us(r.own_p90_us);
    j["own_p99_us"] = us(r.own_p99_us);
    j["own_max_us"] = us(r.own_max_us);
    j["slow_calls"] = r.slow_calls;
  }
  if (!r.form.empty()) j["form"] = r.form;
  if (r.blocking_p50_us >= 0) {
    j["blocking_avg_us"] = us(r.blocking_avg_us);
    j["blocking_p50_us"] = us(r.blocking_p50_us);
    j["blocking_p99_us"] = us(r.blocking_p99_us);
  }
  if (r.has_overlap()) {
    j["overall_avg_us"] = us(r.overall_avg_us);
    j["overall_p50_us"] = us(r.overall_p50_us);
    j["overall_p99_us"] = us(r.overall_p99_us);
    j["compute_avg_us"] = us(r.compute_avg_us);
    j["post_avg_us"] = us(r.post_avg_us);
    j["wait_avg_us"] = us(r.wait_avg_us);
    j["overlap_pct"] = us(r.overlap_pct);
    j["overlap_p50_pct"] = us(r.overlap_p50_pct);
    if (r.entry_skew_p50_us >= 0) j["entry_skew_p50_us"] = us(r.entry_skew_p50_us);
    if (r.pure_entry_skew_p50_us >= 0) j["pure_entry_skew_p50_us"] = us(r.pure_entry_skew_p50_us);
  }
  if (r.idle_us >= 0) j["idle_us"] = r.idle_us;
  if (r.skew_us >= 0) j["skew_us"] = r.skew_us;
  if (r.rail_bits_per_s > 0) j["rail_bits_per_s"] = r.rail_bits_per_s;
  if (!r.rate_source.empty()) j["rate_source"] = r.rate_source;
  if (r.ceiling_pct > 0) j["ceiling_pct"] = us(r.ceiling_pct);
  if (!r.shaper.empty()) j["shaper"] = r.shaper;
  if (r.busbw_GBps >= 0) {
    j["algbw_GBps"] = gbps(r.algbw_GBps);
    j["busbw_GBps"] = gbps(r.busbw_GBps);
    if (r.busbw_pct >= 0) j["busbw_pct"] = us(r.busbw_pct);
  }
  if (r.rail_bound_us >= 0) j["rail_bound_us"] = us(r.rail_bound_us);
  if (r.compute_bound_us >= 0) j["compute_bound_us"] = us(r.compute_bound_us);
  if (!r.binding.empty()) {
    j["binding"] = r.binding;
    j["bound_pct"] = us(r.bound_pct);
  }
  if (r.rounds > 0) j["rounds"] = r.rounds;
  if (r.warmup >= 0) j["warmup"] = r.warmup;
  j["iterations"] = r.iterations;
  j["validated"] = r.validated;
  if (r.simulated) j["simulated"] = true;
  if (!r.preset.empty()) j["preset"] = r.preset;
  if (!r.samples_us.empty()) {
    OrderedJson samples = OrderedJson::array();
    for (double x : r.samples_us) samples.push_back(us(x));
    j["samples_us"] = std::move(samples);
  }
  if (r.raw.calls > 0) {
    j["raw_ranks"] = r.raw.ranks;
    j["raw_calls"] = r.raw.calls;
    OrderedJson own = OrderedJson::array(), span = OrderedJson::array();
    for (double x : r.raw.own) own.push_back(us(x));
    for (double x : r.raw.span) span.push_back(us(x));
    j["raw_own_us"] = std::move(own);
    j["raw_span_us"] = std::move(span);
  }
  return j;
}

// The value of `key` as T, or false when absent; InputError when of the wrong type.
template <class T>
bool field(const Json& j, const char* key, T* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return false;
  bool fits;
  if constexpr (std::is_same_v<T, std::string>) fits = it->is_string();
  else if constexpr (std::is_same_v<T, bool>) fits = it->is_boolean();
  else if constexpr (std::is_integral_v<T>) fits = it->is_number_integer() && (std::is_signed_v<T> || *it >= 0);
  else fits = it->is_number();
  if (!fits) {
    const char* kind = std::is_same_v<T, std::string> ? "a string"
                       : std::is_same_v<T, bool>      ? "true or false"
                       : std::is_integral_v<T>        ? "a whole number"
                                                      : "a number";
    throw InputError(std::string("\"") + key + "\" must be " + kind + ", not " + it->dump());
  }
  *out = it->get<T>();
  return true;
}

// The list of numbers at `key` into *out (nothing when absent); InputError when it is not one.
void numbers(const Json& j, const char* key, std::vector<double>* out) {
  auto it = j.find(key);
  if (it == j.end()) return;
  if (!it->is_array()) throw InputError(std::string("\"") + key + "\" must be a list of numbers");
  for (auto& x : *it) {
    if (!x.is_number()) throw InputError(std::string("\"") + key + "\" must be a list of numbers, not " + x.dump());
    out->push_back(x.get<double>());
  }
}

BenchRecord record_from(const Json& j) {
  BenchRecord r;
  field(j, "collective", &r.collective);
  if (!field(j, "algorithm", &r.algorithm) || r.algorithm.empty()) throw InputError("a record without \"algorithm\"");
  field(j, "chosen", &r.chosen);
  field(j, "background", &r.background);
  field(j, "transport", &r.transport);
  field(j, "provider", &r.provider);
  field(j, "bytes", &r.bytes);
  field(j, "ranks", &r.ranks);
  field(j, "nodes", &r.nodes);
  field(j, "rails", &r.rails);
  field(j, "ppn", &r.ppn);
  field(j, "avg_us", &r.avg_us);
  field(j, "min_us", &r.min_us);
  field(j, "max_us", &r.max_us);
  if (!field(j, "p50_us", &r.p50_us)) r.p50_us = r.avg_us;  // OSU-style tools report no median
  field(j, "p90_us", &r.p90_us);
  field(j, "p99_us", &r.p99_us);
  field(j, "span_p50_us", &r.span_p50_us);
  field(j, "span_p90_us", &r.span_p90_us);
  field(j, "span_p99_us", &r.span_p99_us);
  field(j, "own_p50_us", &r.own_p50_us);
  field(j, "own_p90_us", &r.own_p90_us);
  field(j, "own_p99_us", &r.own_p99_us);
  field(j, "own_max_us", &r.own_max_us);
  field(j, "slow_calls", &r.slow_calls);
  field(j, "form", &r.form);
  field(j, "blocking_avg_us", &r.blocking_avg_us);
  field(j, "blocking_p50_us", &r.blocking_p50_us);
  field(j, "blocking_p99_us", &r.blocking_p99_us);
  field(j, "overall_avg_us", &r.overall_avg_us);
  field(j, "overall_p50_us", &r.overall_p50_us);
  field(j, "overall_p99_us", &r.overall_p99_us);
  field(j, "compute_avg_us", &r.compute_avg_us);
  field(j, "post_avg_us", &r.post_avg_us);
  field(j, "wait_avg_us", &r.wait_avg_us);
  field(j, "overlap_pct", &r.overlap_pct);
  field(j, "overlap_p50_pct", &r.overlap_p50_pct);
  field(j, "entry_skew_p50_us", &r.entry_skew_p50_us);
  field(j, "pure_entry_skew_p50_us", &r.pure_entry_skew_p50_us);
  field(j, "idle_us", &r.idle_us);
  field(j, "skew_us", &r.skew_us);
  field(j, "iterations", &r.iterations);
  field(j, "validated", &r.validated);
  field(j, "simulated", &r.simulated);
  field(j, "preset", &r.preset);
  field(j, "rounds", &r.rounds);
  field(j, "warmup", &r.warmup);
  field(j, "rail_bits_per_s", &r.rail_bits_per_s);
  field(j, "rate_source", &r.rate_source);
  field(j, "ceiling_pct", &r.ceiling_pct);
  field(j, "shaper", &r.shaper);
  field(j, "algbw_GBps", &r.algbw_GBps);
  field(j, "busbw_GBps", &r.busbw_GBps);
  field(j, "busbw_pct", &r.busbw_pct);
  field(j, "rail_bound_us", &r.rail_bound_us);
  field(j, "compute_bound_us", &r.compute_bound_us);
  field(j, "binding", &r.binding);
  field(j, "bound_pct", &r.bound_pct);
  numbers(j, "samples_us", &r.samples_us);
  if (field(j, "raw_calls", &r.raw.calls)) {
    field(j, "raw_ranks", &r.raw.ranks);
    numbers(j, "raw_own_us", &r.raw.own);
    numbers(j, "raw_span_us", &r.raw.span);
    if (r.raw.own.size() != static_cast<size_t>(r.raw.ranks) * r.raw.calls ||
        (!r.raw.span.empty() && r.raw.span.size() != static_cast<size_t>(r.raw.calls)))
      throw InputError("\"raw_own_us\" must hold raw_ranks x raw_calls times and \"raw_span_us\" raw_calls");
  }
  return r;
}

OrderedJson context_json(const BenchContext& c) {
  OrderedJson j;
  j["collective"] = c.collective;
  j["ranks"] = c.ranks;
  j["nodes"] = c.nodes;
  j["rails"] = c.rails;
  j["ranks_per_node"] = c.ranks_per_node;
  j["rail_bits_per_s"] = c.rail_bits_per_s;
  j["where"] = c.where;
  j["shared_clock"] = c.shared_clock;
  if (c.empty_span_p50_us >= 0) j["empty_span_p50_us"] = us(c.empty_span_p50_us);
  if (!c.rate_source.empty()) j["rate_source"] = c.rate_source;
  if (c.ceiling_pct > 0) j["ceiling_pct"] = us(c.ceiling_pct);
  if (!c.shaper.empty()) j["shaper"] = c.shaper;
  if (c.cores > 0) {
    j["cores"] = c.cores;
    j["copy_Bps"] = c.copy_Bps;
    j["reduce_Bps"] = c.reduce_Bps;
  }
  return OrderedJson{{"context", j}};
}

BenchContext context_from(const Json& j) {
  BenchContext c;
  field(j, "collective", &c.collective);
  field(j, "ranks", &c.ranks);
  field(j, "nodes", &c.nodes);
  field(j, "rails", &c.rails);
  field(j, "rail_bits_per_s", &c.rail_bits_per_s);
  field(j, "where", &c.where);
  field(j, "shared_clock", &c.shared_clock);
  field(j, "empty_span_p50_us", &c.empty_span_p50_us);
  field(j, "cores", &c.cores);
  field(j, "rate_source", &c.rate_source);
  field(j, "ceiling_pct", &c.ceiling_pct);
  field(j, "shaper", &c.shaper);
  field(j, "copy_Bps", &c.copy_Bps);
  field(j, "reduce_Bps", &c.reduce_Bps);
  if (auto it = j.find("ranks_per_node"); it != j.end() && it->is_array())
    for (auto& x : *it)
      if (x.is_number_integer()) c.ranks_per_node.push_back(x.get<int>());
  for (int n : c.ranks_per_node) c.max_ppn = std::max(c.max_ppn, n);
  return c;
}

// One JSON value: a record, a context, or neither (false).
bool take(const Json& j, std::vector<BenchRecord>* recs, BenchContext* ctx) {
  if (!j.is_object()) return false;
  if (auto it = j.find("context"); it != j.end() && it->is_object()) {
    if (ctx) *ctx = context_from(*it);
    return true;
  }
  if (!j.contains("algorithm")) return false;
  recs->push_back(record_from(j));
  return true;
}

// The JSON object on one line (a trailing comma allowed), or null when the
// line holds none (other output, "[", "]").
Json object_on(const std::string& line) {
  size_t a = line.find_first_not_of(" \t\r\n"), b = line.find_last_not_of(" \t\r\n,");
  if (a == std::string::npos || b == std::string::npos || b < a || line[a] != '{') return nullptr;
  Json j = Json::parse(line.substr(a, b - a + 1), nullptr, false);
  return j.is_object() ? j : Json(nullptr);
}

}  // namespace

std::string to_json_line(const BenchRecord& r) { return to_json(r).dump(); }

bool from_json_line(const std::string& line, BenchRecord* r) {
  Json j = object_on(line);
  if (!j.is_object() || !j.contains("algorithm")) return false;
  *r = record_from(j);
  return true;
}

std::string context_line(const BenchContext& c) { return context_json(c).dump(); }

std::vector<BenchRecord> parse_records(const std::string& text, BenchContext* ctx, const std::string& source) {
  std::vector<BenchRecord> recs;
  Json whole = Json::parse(text, nullptr, false);
  if (!whole.is_discarded()) {
    const Json items = whole.is_array() ? whole : Json::array({whole});
    for (size_t i = 0; i < items.size(); ++i) {
      try {
        take(items[i], &recs, ctx);
      } catch (const InputError& e) {
        throw InputError(source + ": record " + std::to_string(i + 1) + ": " + e.what());
      }
    }
    return recs;
  }
  // One object per line, among other output.
  std::istringstream in(text);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    try {
      take(object_on(line), &recs, ctx);
    } catch (const InputError& e) {
      throw InputError(source + ": line " + std::to_string(number) + ": " + e.what());
    }
  }
  return recs;
}

std::vector<BenchRecord> read_records(const std::string& path, BenchContext* ctx) {
  std::ifstream f(path);
  if (!f) throw InputError("cannot read " + path);
  std::stringstream text;
  text << f.rdbuf();
  return parse_records(text.str(), ctx, path);
}

void write_json(const std::string& path, const std::vector<BenchRecord>& recs) {
  std::ofstream f(path);
  f << "[\n";
  for (size_t i = 0; i < recs.size(); ++i) f << "  " << to_json_line(recs[i]) << (i + 1 < recs.size() ? ",\n" : "\n");
  f << "]\n";
  if (!f.flush()) throw InputError("cannot write " + path);
}

namespace {
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}
}  // namespace

void write_csv(const std::string& path, const std::vector<BenchRecord>& recs) {
  std::ofstream f(path);
  f << "collective,algorithm,chosen,bytes,ranks,nodes,rails,avg_us,min_us,max_us,p50_us,p90_us,p99_us,iterations,"
       "validated,span_p50_us,span_p90_us,span_p99_us,background,ppn,simulated,preset,own_p50_us,own_p90_us,own_p99_us,"
       "own_max_us,slow_calls,idle_us,skew_us,form,blocking_avg_us,blocking_p50_us,blocking_p99_us,overall_avg_us,"
       "overall_p50_us,overall_p99_us,compute_avg_us,post_avg_us,wait_avg_us,overlap_pct,overlap_p50_pct,"
       "rail_bits_per_s,algbw_GBps,busbw_GBps,busbw_pct,rail_bound_us,compute_bound_us,binding,bound_pct,rounds,"
       "warmup\n";
  auto num = [](double x) {
    std::ostringstream s;
    s << us(x);
    return s.str();
  };
  for (auto& r : recs)
    f << csv_field(r.collective) << "," << csv_field(r.algorithm) << "," << csv_field(r.chosen) << "," << r.bytes
      << "," << r.ranks << "," << r.nodes << "," << r.rails << "," << num(r.avg_us) << "," << num(r.min_us) << ","
      << num(r.max_us) << "," << num(r.p50_us) << "," << num(r.p90_us) << "," << num(r.p99_us) << ","
      << r.iterations << "," << (r.validated ? "true" : "false") << "," << num(r.span_p50_us) << ","
      << num(r.span_p90_us) << "," << num(r.span_p99_us) << "," << csv_field(r.background) << "," << r.ppn << ","
      << (r.simulated ? "true" : "false") << "," << csv_field(r.preset) << "," << num(r.own_p50_us) << ","
      << num(r.own_p90_us) << "," << num(r.own_p99_us) << "," << num(r.own_max_us) << "," << r.slow_calls << ","
      << r.idle_us << "," << r.skew_us << "," << csv_field(r.form) << "," << num(r.blocking_avg_us) << ","
      << num(r.blocking_p50_us) << "," << num(r.blocking_p99_us) << "," << num(r.overall_avg_us) << ","
      << num(r.overall_p50_us) << "," << num(r.overall_p99_us) << "," << num(r.compute_avg_us) << ","
      << num(r.post_avg_us) << "," << num(r.wait_avg_us) << "," << num(r.overlap_pct) << ","
      << num(r.overlap_p50_pct) << "," << static_cast<uint64_t>(r.rail_bits_per_s) << "," << gbps(r.algbw_GBps) << ","
      << gbps(r.busbw_GBps) << "," << num(r.busbw_pct) << "," << num(r.rail_bound_us) << ","
      << num(r.compute_bound_us) << "," << csv_field(r.binding) << "," << num(r.bound_pct) << "," << r.rounds << ","
      << r.warmup << "\n";
  if (!f.flush()) throw InputError("cannot write " + path);
}

std::vector<Measurement> measurements(const std::vector<BenchRecord>& recs) {
  std::vector<Measurement> out;
  for (const BenchRecord& r : recs) {
    Measurement m;
    // Loaded runs and nonblocking ones (their time is post + wait) are not measurements of the algorithms alone.
    if (!r.background.empty() || !r.form.empty() || !parse_collective(r.collective, &m.collective)) continue;
    if (r.ranks < 1 || r.nodes < 1 || r.rails < 1) continue;
    m.algorithm = r.algorithm;
    m.bytes = r.bytes;
    m.ranks = r.ranks;
    m.nodes = r.nodes;
    m.rails = r.rails;
    m.ppn = r.ppn > 0 ? r.ppn : (r.ranks + r.nodes - 1) / r.nodes;
    m.p50_us = traits(m.collective).rooted && r.has_span() ? r.span_p50_us : r.p50_us;
    out.push_back(m);
  }
  return out;
}

}  // namespace railcoll::bench
