// Every RAILCOLL_* variable, declared once: its name, type, default, the layer
// that owns it, what it means and which values it takes. The layers read their
// own settings structs from one `Settings` (runtime/settings.hpp: transport,
// executor, progress, set-up; bootstrap/identity.hpp: who this process is);
// `railcoll info --settings` prints the table with the values in force and
// where each came from, and docs/settings.md is generated from it (a test
// checks the two agree). Here, at the bottom of the stack, because every floor
// has settings: selection (RAILCOLL_TUNING), the simulator (RAILCOLL_PRESETS),
// the runtime, the MPI layer and the torch backend.
#pragma once
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

namespace railcoll {

enum class Setting : uint8_t {
  // Who this process is (runtime/bootstrap/identity.hpp)
  Rank, Size, Store, JobId, Node, LocalRank, LocalSize,
  // Set-up of a communicator (runtime/comm.cpp)
  JobKey, Rails, Timeout, ShmMib, Transport, StripeBytes,
  // The transports (runtime/transport/)
  RailTimeout, NotsentLowat, TcpCongestion, OfiProvider, OfiStrictMr, OfiVerbose, OfiRmaBytes,
  // The engine: the executor's waits and the progress thread (runtime/engine/)
  SpinUs, ProgressThread, ProgressNice, ProgressPriority, TestReplayCall, ReduceKernels,
  // What watches the calls (runtime/observe/)
  FlightRecords, FlightDir, Trace,
  // Selection (src/select/)
  Tuning, CollAlgo,
  // The layers above the C API, the simulator and the test bed
  MpiColls, MpiVerbose, TorchChunkMib, Presets, Cluster, RailRate, PlotScript,
  Count_  // keep last
};

// How a value is checked. Empty is the same as unset (the default holds).
enum class SettingKind : uint8_t {
  Integer,  // a whole number in [lo, hi]
  Seconds,  // a number of seconds in (0, hi]
  Flag,     // a whole number in [0, 2^24]: 0 is off, anything else on
  Choice,   // one of `choices` (comma-separated)
  Text,     // anything
};

// Where a value in force came from.
enum class SettingSource : uint8_t { Default, Environment, Call };
const char* setting_source_name(SettingSource s);

struct SettingSpec {
  Setting key;
  const char* name;      // "RAILCOLL_TIMEOUT"; a pattern: "RAILCOLL_<COLL>_ALGO"
  SettingKind kind;
  const char* type;      // for people: "seconds", "bytes", "MiB", "path", ...
  const char* fallback;  // the default, as text ("": none, see `meaning`)
  const char* owner;     // the code that reads it: "runtime/transport"
  const char* meaning;   // one line
  int64_t lo = 0, hi = 1 << 24;   // Integer: inclusive; Seconds: hi only
  const char* choices = "";       // Choice
  // Read by its own layer rather than through Settings (a layer above the C
  // API, which sees only railcoll.h, or the CLI's test bed): declared here so
  // that info and the docs list it.
  bool read_by_owner = false;
  bool secret = false;            // printed as "(set)", never as its value
  // Says who the process is: a wrong value always throws (no peer can be told).
  bool identity = false;
};

// The table, indexed by Setting.
const std::vector<SettingSpec>& setting_table();
const SettingSpec& setting_spec(Setting s);

// The value of every setting a layer reads through the table, and where it
// came from. Values are checked when they are set; the getters never fail.
class Settings {
 public:
  Settings();  // every default
  // The process's environment. A wrong value throws Error(Bootstrap), or, with
  // `bad`, is kept there (the first one) and the default used, so that the
  // rank can still take part in set-up and fail it on every rank at once.
  // Identity rows are checked when read (identity.hpp), and always throw.
  static Settings from_environment(std::exception_ptr* bad = nullptr);

  // A value given by the program (source Call). Throws InputError when wrong.
  void set(Setting s, const std::string& value);
  // The default again.
  void reset(Setting s);

  bool given(Setting s) const { return values_[index(s)].source != SettingSource::Default; }
  SettingSource source(Setting s) const { return values_[index(s)].source; }
  const std::string& text(Setting s) const;  // the value, or the default, as text
  int64_t integer(Setting s) const;          // Integer, Flag
  double seconds(Setting s) const;           // Seconds
  bool flag(Setting s) const;                // Flag

  // `name='value' is not ...` when wrong for `spec`, else "".
  static std::string problem(const SettingSpec& spec, const std::string& value);

 private:
  struct Value {
    std::string text;
    SettingSource source = SettingSource::Default;
  };
  static size_t index(Setting s) { return static_cast<size_t>(s); }
  std::vector<Value> values_;
};

// The table with this process's values: one line per setting (name, value in
// force, where it came from, owner, meaning), and RAILCOLL_* variables of the
// environment that name no setting. `railcoll info --settings`.
std::string settings_report(const Settings& s);
// The table as Markdown (docs/settings.md holds it, checked by a test).
std::string settings_table_markdown();

}  // namespace railcoll
