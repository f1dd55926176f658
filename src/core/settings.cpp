// The settings table (settings.hpp) and the reading and checking of values.
// The principles behind the defaults are said where the setting is used; the
// measurements behind them are in docs/results.md and docs/runtime.md.
#include "core/settings.hpp"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "core/errors.hpp"

extern char** environ;

namespace railcoll {

namespace {

using K = SettingKind;
constexpr int64_t kBig = 1 << 24;

// One row per Setting, in its order (setting_table checks).
// clang-format off
const std::vector<SettingSpec> kTable = {
  {Setting::Rank, "RAILCOLL_RANK", K::Integer, "integer", "", "runtime/bootstrap",
   "this process's rank (railcoll run, railcoll cluster run; else another launcher's variables)", 0, kBig, "", false, false, true},
  {Setting::Size, "RAILCOLL_SIZE", K::Integer, "integer", "", "runtime/bootstrap",
   "the number of ranks, with RAILCOLL_RANK", 0, kBig, "", false, false, true},
  {Setting::Store, "RAILCOLL_STORE", K::Text, "host:port", "", "runtime/bootstrap",
   "where rank 0 serves the set-up store (else MASTER_ADDR:MASTER_PORT)", 0, 0, "", false, false, true},
  {Setting::JobId, "RAILCOLL_JOB_ID", K::Text, "text", "", "runtime/bootstrap",
   "names the job's shared memory and sockets (unset: rank 0 makes one)", 0, 0, "", false, false, true},
  {Setting::Node, "RAILCOLL_NODE", K::Text, "text", "", "runtime/bootstrap",
   "this rank's node: ranks with the same one share memory (unset: the hostname)", 0, 0, "", false, false, true},
  {Setting::LocalRank, "RAILCOLL_LOCAL_RANK", K::Integer, "integer", "", "testbed",
   "this rank's place on its node, set by railcoll's launchers", 0, kBig, "", true},
  {Setting::LocalSize, "RAILCOLL_LOCAL_SIZE", K::Integer, "integer", "", "testbed",
   "the ranks on this rank's node, set by railcoll's launchers (bench, calibrate read it)", 0, kBig, "", true},

  {Setting::JobKey, "RAILCOLL_JOB_KEY", K::Text, "secret", "", "runtime/bootstrap",
   "the job's secret every store and data connection proves (unset: none)", 0, 0, "", false, true},
  {Setting::Rails, "RAILCOLL_RAILS", K::Text, "list", "", "runtime/comm",
   "rails, as NCCL_SOCKET_IFNAME: name prefixes (eth,ib), =exact names, ^exclusions, subnets, addresses "
   "(unset: the up non-loopback IPv4 interfaces)"},
  {Setting::Timeout, "RAILCOLL_TIMEOUT", K::Seconds, "seconds", "60", "runtime/comm",
   "how long set-up and every wait of a call may take", 0, 86400 * 7},
  {Setting::ShmMib, "RAILCOLL_SHM_MIB", K::Integer, "MiB", "256", "runtime/comm",
   "the node-shared buffer (sparse); a node's ranks must agree, nodes may differ", 1, kBig},
  {Setting::Transport, "RAILCOLL_TRANSPORT", K::Choice, "choice", "tcp", "runtime/comm",
   "between nodes: tcp (sockets per rail) or ofi (libfabric); every rank must agree", 0, 0, "tcp,ofi"},
  {Setting::StripeBytes, "RAILCOLL_STRIPE_BYTES", K::Integer, "bytes", "16384", "runtime/comm",
   "puts above this are split over every rail; part of a call's signature: every rank the same", 1, kBig},

  {Setting::RailTimeout, "RAILCOLL_RAIL_TIMEOUT", K::Seconds, "seconds", "2", "runtime/transport",
   "a rail silent this long while another to the same peer answers is given up", 0, 3600},
  {Setting::NotsentLowat, "RAILCOLL_NOTSENT_LOWAT", K::Integer, "bytes", "32768", "runtime/transport",
   "unsent bytes a rail socket may hold before sends wait in the rank's queue (0: the kernel's)", 0, kBig},
  {Setting::TcpCongestion, "RAILCOLL_TCP_CONGESTION", K::Text, "list", "cubic,reno", "runtime/transport",
   "congestion controls a rail socket tries in order before it connects"},
  {Setting::OfiProvider, "RAILCOLL_OFI_PROVIDER", K::Text, "text", "", "runtime/transport/ofi",
   "the libfabric provider (unset: the first offered on the rails' addresses, shm excepted)"},
  {Setting::OfiStrictMr, "RAILCOLL_OFI_STRICT_MR", K::Flag, "flag", "0", "runtime/transport/ofi",
   "register and describe memory as if the provider required every mode railcoll honours (tests)"},
  {Setting::OfiVerbose, "RAILCOLL_OFI_VERBOSE", K::Flag, "flag", "0", "runtime/transport/ofi",
   "say on stderr when a libfabric rail is given up"},
  {Setting::OfiRmaBytes, "RAILCOLL_OFI_RMA_BYTES", K::Integer, "bytes", "", "runtime/transport/ofi",
   "frames to another node of at least this size go by one-sided writes (0: none; unset: 32768, none over sockets)",
   0, kBig},

  {Setting::SpinUs, "RAILCOLL_SPIN_US", K::Integer, "us", "", "runtime/engine",
   "how long a wait spins before it sleeps (unset: 2000 where each rank has a core, else 200 in short calls, 0)",
   0, kBig},
  {Setting::ProgressThread, "RAILCOLL_PROGRESS_THREAD", K::Flag, "flag", "1", "runtime/engine",
   "0: nonblocking and persistent calls advance only inside railcoll calls; 1: also on a thread"},
  {Setting::ProgressNice, "RAILCOLL_PROGRESS_NICE", K::Integer, "nice value", "", "runtime/engine",
   "the progress thread's nice value, -20 to 19 (unset: the process's)", -20, 19},
  {Setting::ProgressPriority, "RAILCOLL_PROGRESS_PRIORITY", K::Choice, "choice", "normal", "runtime/engine",
   "how the progress thread, and a caller asleep in a call, get a core from computing threads: normal (the "
   "process's scheduling), short (a short time slice: a wake-up preempts at once; Linux 6.12+, no privilege) "
   "or realtime (SCHED_RR, at most half of each 10 ms; needs CAP_SYS_NICE or RLIMIT_RTPRIO, else short)",
   0, 0, "normal,short,realtime"},
  {Setting::TestReplayCall, "RAILCOLL_TEST_REPLAY_CALL", K::Integer, "integer", "0", "runtime/engine",
   "tests only: send a data frame of call n again in call n+2, which its receiver must refuse", 0, kBig},
  {Setting::ReduceKernels, "RAILCOLL_REDUCE_KERNELS", K::Choice, "choice", "", "runtime/engine",
   "the float32/float16/bfloat16 reduction kernels, for comparison (unset: the best this CPU has)", 0, 0,
   "portable,avx2,avx512", true},

  {Setting::FlightRecords, "RAILCOLL_FLIGHT_RECORDS", K::Integer, "calls", "256", "runtime/observe",
   "the flight recorder's ring: the last calls each rank keeps, written out when a call fails (0: off)", 0,
   1 << 20},
  {Setting::FlightDir, "RAILCOLL_FLIGHT_DIR", K::Text, "path", "", "runtime/observe",
   "where flight records go; given, each rank also writes its record at the end (unset: $TMPDIR/railcoll-flight-UID)"},
  {Setting::Trace, "RAILCOLL_TRACE", K::Text, "path", "", "runtime/observe",
   "a directory: each rank writes the trace-event JSON of every call there (unset: no trace)"},

  {Setting::Tuning, "RAILCOLL_TUNING", K::Text, "path", "", "select",
   "a tuning file whose rules come before the defaults (docs/selection.md)", 0, 0, "", true},
  {Setting::CollAlgo, "RAILCOLL_<COLL>_ALGO", K::Text, "algorithm", "auto", "select",
   "the algorithm of every call of COLL without one of its own (auto: the rules)", 0, 0, "", true},

  {Setting::MpiColls, "RAILCOLL_MPI_COLLS", K::Text, "list", "all", "mpi",
   "the collectives the MPI layer may serve, comma-separated, all or none", 0, 0, "", true},
  {Setting::MpiVerbose, "RAILCOLL_MPI_VERBOSE", K::Integer, "0-2", "0", "mpi",
   "1: the MPI layer's summary at MPI_Finalize; 2: also a line per communicator", 0, 2, "", true},
  {Setting::TorchChunkMib, "RAILCOLL_TORCH_CHUNK_MIB", K::Text, "MiB", "4", "python/railcoll",
   "the torch backend posts longer all-reduces in chunks of this size (0: no chunks)", 0, 0, "", true},
  {Setting::Presets, "RAILCOLL_PRESETS", K::Text, "path list", "", "sim",
   "directories searched first for machine presets, colon-separated", 0, 0, "", true},
  {Setting::Cluster, "RAILCOLL_CLUSTER", K::Text, "flag", "", "testbed",
   "set to 1 in every rank of the emulated cluster", 0, 0, "", true},
  {Setting::RailRate, "RAILCOLL_RAIL_RATE", K::Text, "bit/s", "", "testbed",
   "the emulated cluster's rail rate, for the bench's rail bound", 0, 0, "", true},
  {Setting::PlotScript, "RAILCOLL_PLOT_SCRIPT", K::Text, "path", "", "bench",
   "the script railcoll bench --plot runs (unset: the installed one)", 0, 0, "", true},
};
// clang-format on

const char* env_value(const char* name) {
  const char* v = getenv(name);
  return v && *v ? v : nullptr;
}

bool whole_number(const std::string& v, int64_t* out) {
  if (v.empty()) return false;
  char* end = nullptr;
  const long long x = strtoll(v.c_str(), &end, 10);
  if (*end) return false;
  *out = x;
  return true;
}

// "RAILCOLL_<COLL>_ALGO" matches "RAILCOLL_BCAST_ALGO".
bool matches_pattern(const std::string& pattern, const std::string& name) {
  const size_t open = pattern.find('<'), close = pattern.find('>');
  if (open == std::string::npos) return pattern == name;
  const std::string head = pattern.substr(0, open), tail = pattern.substr(close + 1);
  return name.size() > head.size() + tail.size() && name.compare(0, head.size(), head) == 0 &&
         name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
}

const SettingSpec* spec_named(const std::string& name) {
  for (const SettingSpec& s : kTable)
    if (matches_pattern(s.name, name)) return &s;
  return nullptr;
}

std::string range_text(const SettingSpec& s) {
  switch (s.kind) {
    case K::Integer: return std::to_string(s.lo) + " to " + std::to_string(s.hi);
    case K::Seconds: return "above 0, at most " + std::to_string(s.hi);
    case K::Flag: return "0 or 1";
    case K::Choice: return std::string("one of ") + s.choices;
    case K::Text: return "";
  }
  return "";
}

}  // namespace

const char* setting_source_name(SettingSource s) {
  switch (s) {
    case SettingSource::Default: return "default";
    case SettingSource::Environment: return "environment";
    case SettingSource::Call: return "call";
  }
  return "?";
}

const std::vector<SettingSpec>& setting_table() {
  static const bool in_order = [] {
    for (size_t i = 0; i < kTable.size(); ++i)
      if (static_cast<size_t>(kTable[i].key) != i) return false;
    return kTable.size() == static_cast<size_t>(Setting::Count_);
  }();
  if (!in_order) throw Error(Status::Internal, "the settings table is out of order (src/core/settings.cpp)");
  return kTable;
}

const SettingSpec& setting_spec(Setting s) { return setting_table()[static_cast<size_t>(s)]; }

std::string Settings::problem(const SettingSpec& spec, const std::string& value) {
  const std::string said = std::string(spec.name) + "='" + value + "'";
  int64_t n = 0;
  switch (spec.kind) {
    case K::Integer:
    case K::Flag: {
      const int64_t lo = spec.kind == K::Flag ? 0 : spec.lo, hi = spec.kind == K::Flag ? kBig : spec.hi;
      const bool whole = whole_number(value, &n);
      if (whole && n >= lo && n <= hi) return "";
      // A range of its own is said; the common one (0 to 2^24) goes without saying.
      return said + " is not a valid number" + (whole && (lo != 0 || hi != kBig) ? " (" + range_text(spec) + ")" : "");
    }
    case K::Seconds: {
      char* end = nullptr;
      const double x = strtod(value.c_str(), &end);
      if (value.empty() || *end || !(x > 0) || x > static_cast<double>(spec.hi))
        return said + " is not a number of seconds";
      return "";
    }
    case K::Choice: {
      std::stringstream list(spec.choices);
      std::string said_choices;
      for (std::string c; std::getline(list, c, ',');) {
        if (c == value) return "";
        said_choices += (said_choices.empty() ? "" : " or ") + c;
      }
      return said + ": say " + said_choices;
    }
    case K::Text: return "";
  }
  return "";
}

Settings::Settings() : values_(static_cast<size_t>(Setting::Count_)) {
  for (size_t i = 0; i < values_.size(); ++i) values_[i].text = setting_table()[i].fallback;
}

Settings Settings::from_environment(std::exception_ptr* bad) {
  Settings s;
  for (const SettingSpec& spec : setting_table()) {
    if (spec.read_by_owner) continue;
    const char* v = env_value(spec.name);
    if (!v) continue;
    Value& slot = s.values_[index(spec.key)];
    // Who the process is stays as given: identity.hpp checks it, and throws.
    if (std::string why = spec.identity ? "" : problem(spec, v); !why.empty()) {
      auto e = std::make_exception_ptr(Error(Status::Bootstrap, why));
      if (!bad) std::rethrow_exception(e);
      if (!*bad) *bad = e;
      continue;
    }
    slot.text = v;
    slot.source = SettingSource::Environment;
  }
  return s;
}

void Settings::set(Setting s, const std::string& value) {
  const SettingSpec& spec = setting_spec(s);
  if (std::string why = problem(spec, value); !why.empty()) throw InputError(why);
  values_[index(s)] = {value, SettingSource::Call};
}

void Settings::reset(Setting s) { values_[index(s)] = {setting_spec(s).fallback, SettingSource::Default}; }

const std::string& Settings::text(Setting s) const { return values_[index(s)].text; }

int64_t Settings::integer(Setting s) const {
  const SettingSpec& spec = setting_spec(s);
  const std::string& v = text(s);
  int64_t n = 0;
  if (v.empty()) throw Error(Status::Internal, std::string(spec.name) + " has no default: ask given() first");
  if (std::string why = problem(spec, v); !why.empty() || !whole_number(v, &n)) throw Error(Status::Bootstrap, why);
  return n;
}

double Settings::seconds(Setting s) const {
  const std::string& v = text(s);
  if (std::string why = problem(setting_spec(s), v); !why.empty()) throw Error(Status::Bootstrap, why);
  return strtod(v.c_str(), nullptr);
}

bool Settings::flag(Setting s) const { return integer(s) > 0; }

std::string settings_report(const Settings& s) {
  std::ostringstream out;
  out << "# setting  value  source  owner  meaning\n";
  auto line = [&](const SettingSpec& spec, const std::string& name, const std::string& value, const char* source) {
    out << name << "  " << (value.empty() ? "(unset)" : spec.secret ? "(set)" : value) << "  " << source << "  "
        << spec.owner << "  " << spec.meaning << "\n";
  };
  for (const SettingSpec& spec : setting_table()) {
    if (!spec.read_by_owner) {
      line(spec, spec.name, s.text(spec.key), setting_source_name(s.source(spec.key)));
      continue;
    }
    // Read by its owner: what the environment says (a pattern: every variable of it).
    bool any = false;
    for (char** e = environ; e && *e; ++e) {
      const std::string var(*e), name = var.substr(0, var.find('='));
      if (matches_pattern(spec.name, name)) {
        const std::string value = var.find('=') == std::string::npos ? "" : var.substr(var.find('=') + 1);
        if (value.empty()) continue;
        line(spec, name, value, "environment");
        any = true;
      }
    }
    if (!any) line(spec, spec.name, spec.fallback, "default");
  }
  for (char** e = environ; e && *e; ++e) {
    const std::string var(*e), name = var.substr(0, var.find('='));
    if (name.compare(0, 9, "RAILCOLL_") == 0 && !spec_named(name))
      out << name << "  " << var.substr(name.size() + 1) << "  environment  -  not a railcoll setting\n";
  }
  return out.str();
}

std::string settings_table_markdown() {
  std::ostringstream out;
  out << "| variable | type | default | values | owner | meaning |\n";
  out << "| --- | --- | --- | --- | --- | --- |\n";
  for (const SettingSpec& spec : setting_table()) {
    const std::string fallback = *spec.fallback ? std::string("`") + spec.fallback + "`" : "";
    out << "| `" << spec.name << "` | " << spec.type << " | " << fallback << " | " << range_text(spec) << " | `"
        << spec.owner << "` | " << spec.meaning << " |\n";
  }
  return out.str();
}

}  // namespace railcoll
