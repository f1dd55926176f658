// Launching (issue 32) in one process: the slurm.conf made from a cluster's
// shape, which launcher exchange a process is offered and when the ways that
// were there first (a store, torchrun) still win, and a PMI-2 or PMIx
// launcher that cannot be used: an error, never a quiet fall back.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "core/errors.hpp"
#include "runtime/bootstrap/launcher_exchange.hpp"
#include "core/settings.hpp"
#include "runtime/bootstrap/net.hpp"
#include "testbed/slurm.hpp"

namespace railcoll {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST(SlurmConf, OneNodePerEmulatedNodeWithItsCpusAndRails) {
  cluster::Config c;
  c.nodes = 3;
  c.ppn = 5;
  c.rails = 2;
  const std::string conf = cluster::slurm_conf_text(c, "login");
  EXPECT_TRUE(has_line(conf, "SlurmctldHost=login(198.18.0.254)")) << conf;
  EXPECT_TRUE(has_line(conf, "NodeName=rc-n0 NodeAddr=198.18.0.1 CPUs=5 Features=rail0,rail1 State=UNKNOWN")) << conf;
  EXPECT_TRUE(has_line(conf, "NodeName=rc-n2 NodeAddr=198.18.0.3 CPUs=5 Features=rail0,rail1 State=UNKNOWN")) << conf;
  EXPECT_TRUE(has_line(conf, "# rc-n1: rails rail0=198.18.0.2 rail1=198.18.1.2")) << conf;
  EXPECT_EQ(conf.find("rc-n3"), std::string::npos) << conf;
  EXPECT_TRUE(has_line(conf, "AuthInfo=socket=" + cluster::slurm_dir() + "/munge.socket")) << conf;
  EXPECT_TRUE(has_line(conf, "PartitionName=rails Nodes=ALL Default=YES MaxTime=INFINITE State=UP")) << conf;
}

// Sets variables for one test and restores the process's afterwards.
class Env : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kVars) {
      const char* old = getenv(v);
      saved_.push_back(old ? std::string(old) : std::string("\x01"));
      unsetenv(v);
    }
  }
  void TearDown() override {
    for (size_t i = 0; i < std::size(kVars); ++i)
      if (saved_[i] == "\x01") unsetenv(kVars[i]);
      else setenv(kVars[i], saved_[i].c_str(), 1);
  }
  static constexpr const char* kVars[] = {"PMIX_NAMESPACE", "PMIX_RANK", "PMI_FD", "PMI_RANK",
                                          "RAILCOLL_RANK", "RAILCOLL_STORE", "MASTER_ADDR"};
  std::vector<std::string> saved_;
};

TEST_F(Env, NoLauncherNoExchange) {
  EXPECT_EQ(rt::launcher_exchange_offered(), "");
  EXPECT_EQ(rt::launcher_exchange(Settings::from_environment(), rt::now_seconds() + 5), nullptr);
}

TEST_F(Env, WhatTheEnvironmentOffers) {
  setenv("PMI_FD", "7", 1);
  setenv("PMI_RANK", "0", 1);
  EXPECT_EQ(rt::launcher_exchange_offered(), "PMI-2");
  setenv("PMIX_NAMESPACE", "slurm.pmix.3.0", 1);
  setenv("PMIX_RANK", "0", 1);
  EXPECT_EQ(rt::launcher_exchange_offered(), "PMIx");  // PMIx first where both are
}

TEST_F(Env, AStoreOrTorchrunStillWins) {
  setenv("PMIX_NAMESPACE", "slurm.pmix.3.0", 1);
  setenv("PMIX_RANK", "0", 1);
  const std::pair<const char*, const char*> ways[] = {
      {"RAILCOLL_STORE", "127.0.0.1:29999"}, {"RAILCOLL_RANK", "0"}, {"MASTER_ADDR", "127.0.0.1"}};
  for (auto [v, value] : ways) {
    setenv(v, value, 1);
    EXPECT_EQ(rt::launcher_exchange(Settings::from_environment(), rt::now_seconds() + 5), nullptr) << v;
    unsetenv(v);
  }
}

TEST_F(Env, AnUnusablePmi2LauncherIsAnErrorNotAFallBack) {
  // PMI_FD names no descriptor of a PMI-2 server: PMI2_Init fails (or, built
  // without PMI-2, the build says so); either way set-up must not go on.
  setenv("PMI_FD", "987", 1);
  setenv("PMI_RANK", "0", 1);
  try {
    rt::launcher_exchange(Settings::from_environment(), rt::now_seconds() + 5);
    FAIL() << "a PMI-2 launcher that cannot be used was passed over";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(e.status, Status::Bootstrap) << e.what();
    EXPECT_NE(std::string(e.what()).find("PMI-2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace railcoll
