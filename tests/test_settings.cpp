// The settings table (core/settings.hpp): one row per Setting, in order, each
// with an owner and a meaning; values checked as the table says, a wrong one
// refused with its name, or kept aside so that set-up can fail on every rank.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <set>
#include <string>

#include "core/errors.hpp"
#include "core/settings.hpp"

using namespace railcoll;

namespace {

// Sets a variable for the life of the object.
struct Env {
  Env(const char* name, const char* value) : name(name) { setenv(name, value, 1); }
  ~Env() { unsetenv(name); }
  const char* name;
};

std::string problem(Setting s, const std::string& value) { return Settings::problem(setting_spec(s), value); }

}  // namespace

TEST(Settings, EveryRowIsInOrderNamedOnceAndSaysWhatItIs) {
  const auto& table = setting_table();
  ASSERT_EQ(table.size(), static_cast<size_t>(Setting::Count_));
  std::set<std::string> names;
  for (size_t i = 0; i < table.size(); ++i) {
    const SettingSpec& row = table[i];
    EXPECT_EQ(static_cast<size_t>(row.key), i) << row.name;
    EXPECT_TRUE(names.insert(row.name).second) << row.name << " is declared twice";
    EXPECT_EQ(std::string(row.name).rfind("RAILCOLL_", 0), 0u) << row.name;
    EXPECT_STRNE(row.owner, "") << row.name;
    EXPECT_STRNE(row.meaning, "") << row.name;
    // A default must pass the row's own check.
    if (*row.fallback && !row.read_by_owner) EXPECT_EQ(Settings::problem(row, row.fallback), "") << row.name;
  }
}

TEST(Settings, ValuesAreCheckedAsTheTableSays) {
  EXPECT_EQ(problem(Setting::Timeout, "2.5"), "");
  EXPECT_EQ(problem(Setting::Timeout, "0"), "RAILCOLL_TIMEOUT='0' is not a number of seconds");
  EXPECT_EQ(problem(Setting::Timeout, "soon"), "RAILCOLL_TIMEOUT='soon' is not a number of seconds");
  EXPECT_EQ(problem(Setting::RailTimeout, "3601"), "RAILCOLL_RAIL_TIMEOUT='3601' is not a number of seconds");
  EXPECT_EQ(problem(Setting::NotsentLowat, "-5"), "RAILCOLL_NOTSENT_LOWAT='-5' is not a valid number");
  EXPECT_EQ(problem(Setting::ShmMib, "lots"), "RAILCOLL_SHM_MIB='lots' is not a valid number");
  EXPECT_EQ(problem(Setting::ShmMib, "0"), "RAILCOLL_SHM_MIB='0' is not a valid number (1 to 16777216)");
  EXPECT_EQ(problem(Setting::StripeBytes, "0"), "RAILCOLL_STRIPE_BYTES='0' is not a valid number (1 to 16777216)");
  EXPECT_EQ(problem(Setting::ProgressNice, "-20"), "");
  EXPECT_EQ(problem(Setting::ProgressNice, "20"), "RAILCOLL_PROGRESS_NICE='20' is not a valid number (-20 to 19)");
  EXPECT_EQ(problem(Setting::ProgressPriority, "realtime"), "");
  EXPECT_EQ(problem(Setting::ProgressPriority, "fifo"),
            "RAILCOLL_PROGRESS_PRIORITY='fifo': say normal or short or realtime");
  EXPECT_EQ(problem(Setting::Transport, "ofi"), "");
  EXPECT_EQ(problem(Setting::Transport, "ucx"), "RAILCOLL_TRANSPORT='ucx': say tcp or ofi");
  EXPECT_EQ(problem(Setting::ProgressThread, "0"), "");
  EXPECT_EQ(problem(Setting::ProgressThread, "yes"), "RAILCOLL_PROGRESS_THREAD='yes' is not a valid number");
}

TEST(Settings, DefaultsEnvironmentAndCallsEachSayWhereTheyCameFrom) {
  Settings defaults;
  EXPECT_EQ(defaults.seconds(Setting::Timeout), 60);
  EXPECT_EQ(defaults.source(Setting::Timeout), SettingSource::Default);
  EXPECT_FALSE(defaults.given(Setting::SpinUs));
  EXPECT_THROW(defaults.integer(Setting::SpinUs), Error);  // no default: ask given() first

  Env timeout("RAILCOLL_TIMEOUT", "7.5"), empty("RAILCOLL_SHM_MIB", "");
  Settings env = Settings::from_environment();
  EXPECT_EQ(env.seconds(Setting::Timeout), 7.5);
  EXPECT_EQ(env.source(Setting::Timeout), SettingSource::Environment);
  EXPECT_EQ(env.integer(Setting::ShmMib), 256) << "an empty variable is unset";
  EXPECT_EQ(env.source(Setting::ShmMib), SettingSource::Default);

  env.set(Setting::Timeout, "3");
  EXPECT_EQ(env.seconds(Setting::Timeout), 3);
  EXPECT_EQ(env.source(Setting::Timeout), SettingSource::Call);
  EXPECT_THROW(env.set(Setting::Timeout, "-1"), InputError);
  env.reset(Setting::Timeout);
  EXPECT_EQ(env.source(Setting::Timeout), SettingSource::Default);
}

TEST(Settings, AWrongValueThrowsOrIsKeptAsideWithTheDefaultInItsPlace) {
  Env shm("RAILCOLL_SHM_MIB", "lots"), transport("RAILCOLL_TRANSPORT", "ucx");
  try {
    Settings::from_environment();
    ADD_FAILURE() << "a wrong RAILCOLL_SHM_MIB was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.status, Status::Bootstrap);
    EXPECT_STREQ(e.what(), "RAILCOLL_SHM_MIB='lots' is not a valid number");
  }
  std::exception_ptr bad;
  Settings s = Settings::from_environment(&bad);
  ASSERT_TRUE(bad);
  EXPECT_EQ(s.integer(Setting::ShmMib), 256);
  EXPECT_EQ(s.text(Setting::Transport), "tcp");
  try {
    std::rethrow_exception(bad);
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "RAILCOLL_SHM_MIB='lots' is not a valid number") << "the first wrong one is kept";
  }
}

TEST(Settings, TheReportListsValuesSourcesAndStrangersButNoSecret) {
  Env key("RAILCOLL_JOB_KEY", "do not print me"), stripe("RAILCOLL_STRIPE_BYTES", "4096"),
      typo("RAILCOLL_STRIPEBYTES", "1"), algo("RAILCOLL_BCAST_ALGO", "smp");
  const std::string report = settings_report(Settings::from_environment());
  EXPECT_EQ(report.find("do not print me"), std::string::npos) << report;
  EXPECT_NE(report.find("RAILCOLL_JOB_KEY  (set)  environment"), std::string::npos) << report;
  EXPECT_NE(report.find("RAILCOLL_STRIPE_BYTES  4096  environment  runtime/comm"), std::string::npos) << report;
  EXPECT_NE(report.find("RAILCOLL_TIMEOUT  60  default"), std::string::npos) << report;
  EXPECT_NE(report.find("RAILCOLL_BCAST_ALGO  smp  environment  select"), std::string::npos) << report;
  EXPECT_NE(report.find("RAILCOLL_STRIPEBYTES  1  environment  -  not a railcoll setting"), std::string::npos) << report;
}
