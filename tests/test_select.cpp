// Selection as data (src/select): the default table decides exactly as the
// if-chain it replaced (with the thresholds measured since), the tuning file is checked with messages that name the
// file and the rule, measurements become rules that pick the fastest algorithm,
// and the precedence call > RAILCOLL_<COLL>_ALGO > tuning file > defaults holds.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>

#include "core/errors.hpp"
#include "core/registry.hpp"
#include "select/select.hpp"
#include "select/tune.hpp"
#include "select/tuning_file.hpp"

using namespace railcoll;

namespace {

// The rules as src/core/select.cpp wrote them before they became a table
// (commit bbabf9d), kept here as the reference the table must reproduce; a
// threshold the measurements move is moved here too (smp_bruck up to 64 KiB
// per node; smp_direct before it on up to 4 nodes: docs/selection.md).
std::string old_if_chain(Collective collective, const Topology& t, uint64_t bytes) {
  if (collective == Collective::Barrier) return t.nnodes() < t.nranks() ? "smp" : "dissemination";
  if (collective == Collective::Allreduce) {
    if (t.nnodes() < t.nranks()) return bytes <= 64 * 1024 ? "smp_leader" : "smp";
    return bytes <= 16 * 1024 ? "recursive_doubling" : "rabenseifner";
  }
  if (collective == Collective::Bcast)
    return t.nnodes() == t.nranks() && t.nranks() >= 32 && bytes >= 128 * 1024 ? "scatter_allgather" : "smp";
  if (collective == Collective::Gather) return t.nnodes() < t.nranks() ? "smp" : "direct";
  if (collective == Collective::ReduceScatterBlock || collective == Collective::ReduceScatter) {
    // smp_pipelined since 2026-11-27, smp_ring for long blocks since 2026-11-29 (docs/selection.md)
    if (t.nnodes() < t.nranks()) return bytes >= 64 * 1024 && t.nnodes() <= 8 ? "smp_ring" : "smp_pipelined";
    return bytes <= 16 * 1024 ? "recursive_halving" : bytes <= 64 * 1024 ? "direct" : "ring";
  }
  if (collective == Collective::Reduce) {  // smp_chain for long vectors since 2026-11-29 (docs/selection.md)
    // smp (flat) on one node of several ranks up to 4 KiB since 2026-11-29 (docs/selection.md)
    if (t.nnodes() == 1 && t.nranks() > 1 && bytes <= 4 * 1024) return "smp";
    if (t.nnodes() >= 2 && t.nnodes() < t.nranks() && bytes >= 256 * 1024) return "smp_chain";
    if (t.nnodes() >= 2 && t.nnodes() <= 8 && t.nnodes() == t.nranks() && bytes >= 1024 * 1024) return "smp_chain";
    if (t.nnodes() < t.nranks()) return "binomial";
    return bytes <= 128 * 1024 ? "binomial" : "rabenseifner";
  }
  if (t.nranks() == 1 || t.nnodes() == 1) return "smp_direct";
  uint64_t node_bytes = bytes * static_cast<uint64_t>(t.max_node_size());
  if (node_bytes <= 2 * 1024) return "smp_gather_bcast";
  if (node_bytes <= 64 * 1024) return t.nnodes() <= 4 ? "smp_direct" : "smp_bruck";
  if (t.max_node_size() == 1 && node_bytes <= 512 * 1024) return "smp_multileader_paced";
  return "smp_multileader";
}

// A temporary file with `text`, removed with the object.
struct TempFile {
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/railcoll-select-XXXXXX";
    int fd = mkstemp(name);
    path = name;
    if (fd >= 0) close(fd);
    std::ofstream(path) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
  std::string path;
};

std::string load_error(const std::string& text) {
  try {
    parse_tuning(text, "t.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

Situation at(Collective c, int ranks, int nodes, int ppn, int rails, uint64_t bytes) {
  Situation s;
  s.collective = c;
  s.ranks = ranks, s.nodes = nodes, s.ppn = ppn, s.rails = rails, s.bytes = bytes;
  return s;
}

}  // namespace

TEST(Select, DefaultsDecideAsTheOldIfChain) {
  std::vector<Topology> topos;
  for (int n : {1, 2, 3, 5, 8, 16, 31, 32, 33, 64, 128})
    for (int ppn : {1, 2, 4, 8})
      for (int rails : {1, 2, 4}) topos.push_back(Topology::from_ppn(n, ppn, rails));
  topos.push_back(Topology::from_node_sizes({3, 1, 4, 2, 5}, 2));
  topos.push_back(Topology::from_node_sizes({1, 1, 1, 5}, 1));
  topos.push_back(Topology::from_node_map({0, 1, 0, 1, 2, 2, 3}, 3));
  std::vector<uint64_t> sizes = {0, 1, 4, 8, 100};
  for (uint64_t b = 1024; b <= (4u << 20); b *= 2)
    for (int64_t d : {-1, 0, 1}) sizes.push_back(b + d);
  const Selector defaults;
  int compared = 0;
  for (const Topology& t : topos)
    for (uint64_t bytes : sizes)
      for (Collective c : {Collective::Allgather, Collective::Barrier, Collective::Bcast, Collective::Gather,
                           Collective::Allreduce, Collective::Reduce, Collective::ReduceScatterBlock,
                           Collective::ReduceScatter}) {  // the collectives the old chain knew
        Choice ch = defaults.choose(c, t, bytes);
        ASSERT_EQ(ch.algorithm, old_if_chain(c, t, bytes)) << collective_name(c) << " " << t.describe() << " " << bytes;
        EXPECT_EQ(ch.origin.rfind("default#", 0), 0u);
        ++compared;
      }
  EXPECT_GT(compared, 10000);
}

TEST(Select, EveryDefaultNamesARegisteredAlgorithmAndEveryCollectiveEndsWithACatchAll) {
  for (const Rule& r : default_rules()) {
    EXPECT_NE(find_algorithm(r.collective, r.algorithm), nullptr) << r.origin;
    EXPECT_FALSE(r.reason.empty()) << r.origin;
    EXPECT_EQ(r.algorithm.rfind("hw_", 0), std::string::npos) << r.origin;
  }
  for (Collective c : user_collectives()) {
    const Rule* last = nullptr;
    for (const Rule& r : default_rules())
      if (r.collective == c) last = &r;
    ASSERT_NE(last, nullptr) << collective_name(c);
    EXPECT_EQ(conditions_text(*last), "any") << collective_name(c);
  }
}

TEST(Select, TuningFileRoundTrip) {
  Rule a;
  a.collective = Collective::Allgather;
  a.ranks = {16, 16};
  a.bytes = {0, 1447};
  a.algorithm = "smp_bruck";
  a.reason = "measured";
  Rule b = a;
  b.bytes = {1448, kNoLimit};
  b.algorithm = "smp_multileader";
  b.reason = "";
  Rule c;
  c.collective = Collective::Bcast;
  c.node_bytes = {4096, 65536};
  c.rails = {2, 4};
  c.algorithm = "pipelined_chain";
  const std::vector<Rule> written = {a, b, c};
  auto back = parse_tuning(tuning_json(written, "a comment"), "t.json");
  ASSERT_EQ(back.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const Rule& want = written[i];
    EXPECT_EQ(back[i].collective, want.collective);
    EXPECT_TRUE(back[i].ranks == want.ranks && back[i].nodes == want.nodes && back[i].ppn == want.ppn &&
                back[i].rails == want.rails && back[i].bytes == want.bytes && back[i].node_bytes == want.node_bytes)
        << i;
    EXPECT_EQ(back[i].algorithm, want.algorithm);
    EXPECT_EQ(back[i].reason, want.reason);
    EXPECT_EQ(back[i].origin, "file:t.json#" + std::to_string(i));
  }
}

TEST(Select, TuningFileErrorsNameTheFileAndTheRule) {
  auto rules = [](const std::string& body) { return "{\"railcoll_tuning\": 1, \"rules\": [" + body + "]}"; };
  const std::string ok = "{\"collective\": \"bcast\", \"algorithm\": \"smp\"}";
  EXPECT_EQ(load_error(rules(ok)), "");
  EXPECT_NE(load_error("{\"rules\": [").find("t.json: not valid JSON"), std::string::npos);
  EXPECT_NE(load_error("[]").find("t.json: a tuning file is an object with a \"rules\" list"), std::string::npos);
  EXPECT_NE(load_error("{\"railcoll_tuning\": 2, \"rules\": []}").find("format 2"), std::string::npos);
  EXPECT_NE(load_error(rules(ok + ", {\"collective\": \"allgatherv\", \"algorithm\": \"ring\"}"))
                .find("t.json: rule #1: unknown collective 'allgatherv'"),
            std::string::npos);
  EXPECT_NE(load_error(rules("{\"collective\": \"bcast\", \"algorithm\": \"bruck\"}"))
                .find("t.json: rule #0: unknown bcast algorithm 'bruck' (one of: binomial,"),
            std::string::npos);
  EXPECT_NE(load_error(rules("{\"collective\": \"bcast\", \"algorithm\": \"smp\", \"bytes\": [10, 5]}"))
                .find("t.json: rule #0: bytes is empty"),
            std::string::npos);
  EXPECT_NE(load_error(rules("{\"collective\": \"bcast\", \"algorithm\": \"smp\", \"ranks\": -1}"))
                .find("t.json: rule #0: ranks must be a whole number >= 0"),
            std::string::npos);
  EXPECT_NE(load_error(rules("{\"collective\": \"bcast\", \"algorithm\": \"smp\", \"rails\": \"2\"}"))
                .find("t.json: rule #0: rails must be a number or [lo, hi]"),
            std::string::npos);
  EXPECT_NE(load_error(rules("{\"collective\": \"bcast\", \"algorithm\": \"smp\", \"bytes\": [1, 2, 3]}"))
                .find("rule #0: bytes must be a number or [lo, hi]"),
            std::string::npos);
  EXPECT_NE(load_error(rules("{\"collective\": \"bcast\", \"algorithm\": \"smp\", \"byte\": 4}"))
                .find("t.json: rule #0: unknown key 'byte'"),
            std::string::npos);
  EXPECT_NE(load_error(rules("{\"collective\": \"bcast\"}")).find("t.json: rule #0: \"algorithm\""), std::string::npos);
  // Overlaps: the same collective, every range intersecting.
  EXPECT_NE(load_error(rules("{\"collective\": \"bcast\", \"algorithm\": \"smp\", \"bytes\": [0, 100]}, " + ok))
                .find("t.json: rules #0 and #1 overlap"),
            std::string::npos);
  EXPECT_EQ(load_error(rules("{\"collective\": \"bcast\", \"algorithm\": \"smp\", \"bytes\": [0, 100]}, "
                             "{\"collective\": \"bcast\", \"algorithm\": \"binomial\", \"bytes\": [101, null]}, "
                             "{\"collective\": \"gather\", \"algorithm\": \"tree\"}")),
            "");
  EXPECT_EQ(load_error(rules("{\"collective\": \"bcast\", \"algorithm\": \"smp\", \"ranks\": 16}, "
                             "{\"collective\": \"bcast\", \"algorithm\": \"binomial\", \"ranks\": [17, 64]}")),
            "");
  try {
    load_tuning_file("/nonexistent/tuning.json");
    ADD_FAILURE() << "a missing file loaded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/tuning.json: cannot read the tuning file"), std::string::npos);
  }
}

TEST(Select, MeasurementsBecomeRulesThatPickTheFastest) {
  // Two topologies; on the first, A wins at 8..64, B at 128..256, A again at 1024.
  std::vector<Measurement> recs;
  auto add = [&](int ranks, uint64_t bytes, const std::string& algo, double us) {
    recs.push_back({Collective::Allgather, ranks, 4, ranks / 4, 2, bytes, algo, us});
  };
  for (uint64_t b : {8, 16, 32, 64, 128, 256, 1024}) {
    bool bruck_wins = b < 128 || b == 1024;
    add(16, b, "bruck", bruck_wins ? 10 : 30);
    add(16, b, "ring", bruck_wins ? 20 : 15);
    add(16, b, "auto", 1);        // not an algorithm: ignored
    add(16, b, "mpi:tuned", 1);   // nor the MPI baseline
  }
  add(8, 4096, "direct", 5);
  add(8, 4096, "stdex", 7);
  std::vector<Rule> rules = rules_from_measurements(recs);
  ASSERT_EQ(rules.size(), 4u);
  TempFile f(tuning_json(rules, "test"));
  Selector s = Selector::from_variables({"RAILCOLL_TUNING=" + f.path});
  auto pick = [&](int ranks, uint64_t bytes) {
    return s.choose(at(Collective::Allgather, ranks, 4, ranks / 4, 2, bytes));
  };
  // The fastest at every measured size.
  for (const Measurement& m : recs) {
    if (m.algorithm == "auto" || m.algorithm == "mpi:tuned") continue;
    Choice c = pick(m.ranks, m.bytes);
    EXPECT_EQ(c.origin.rfind("file:" + f.path + "#", 0), 0u);
    double best = 1e9;
    std::string fastest;
    for (const Measurement& o : recs)
      if (o.ranks == m.ranks && o.bytes == m.bytes && find_algorithm(o.collective, o.algorithm) && o.p50_us < best)
        best = o.p50_us, fastest = o.algorithm;
    EXPECT_EQ(c.algorithm, fastest) << m.ranks << " ranks, " << m.bytes << " B";
  }
  // Between measured sizes the boundary is the geometric mean: 64 and 128 -> 91.
  EXPECT_EQ(pick(16, 90).algorithm, "bruck");
  EXPECT_EQ(pick(16, 91).algorithm, "ring");
  EXPECT_EQ(pick(16, 511).algorithm, "ring");   // sqrt(256 * 1024) = 512
  EXPECT_EQ(pick(16, 512).algorithm, "bruck");
  // Outside the measured sizes, and on other topologies, the defaults.
  EXPECT_EQ(pick(16, 4).origin.rfind("default#", 0), 0u);
  EXPECT_EQ(pick(16, 1025).origin.rfind("default#", 0), 0u);
  EXPECT_EQ(pick(8, 4096).algorithm, "direct");
  EXPECT_EQ(pick(8, 4097).origin.rfind("default#", 0), 0u);
  EXPECT_EQ(pick(12, 64).origin.rfind("default#", 0), 0u);
}

TEST(Select, PrecedenceCallThenVariableThenFileThenDefaults) {
  TempFile f("{\"rules\": [{\"collective\": \"bcast\", \"algorithm\": \"binomial\"},"
             " {\"collective\": \"gather\", \"algorithm\": \"tree\", \"bytes\": [0, 1024]}]}");
  const Situation bcast = at(Collective::Bcast, 16, 4, 4, 2, 64);
  Selector file_only = Selector::from_variables({"RAILCOLL_TUNING=" + f.path});
  EXPECT_EQ(file_only.choose(bcast).algorithm, "binomial");
  EXPECT_EQ(file_only.choose(bcast).origin, "file:" + f.path + "#0");
  EXPECT_EQ(file_only.choose(at(Collective::Gather, 16, 4, 4, 2, 2048)).origin, "default#10");  // outside the file's range
  Selector env = Selector::from_variables({"RAILCOLL_TUNING=" + f.path, "RAILCOLL_BCAST_ALGO=pipelined_chain"});
  EXPECT_EQ(env.choose(bcast).algorithm, "pipelined_chain");
  EXPECT_EQ(env.choose(bcast).origin, "RAILCOLL_BCAST_ALGO");
  EXPECT_EQ(env.choose(bcast, "scatter_allgather").algorithm, "scatter_allgather");
  EXPECT_EQ(env.choose(bcast, "scatter_allgather").origin, "the call's options");
  EXPECT_EQ(env.choose(bcast, "auto").algorithm, "pipelined_chain");  // auto passes on
  Selector env_auto = Selector::from_variables({"RAILCOLL_TUNING=" + f.path, "RAILCOLL_BCAST_ALGO=auto"});
  EXPECT_EQ(env_auto.choose(bcast).algorithm, "binomial");
  EXPECT_EQ(Selector().choose(bcast).algorithm, "smp");
  EXPECT_THROW(env.choose(bcast, "nope"), InputError);
  // The rules in force: the variable, the file, the defaults, in that order.
  auto table = env.rules_in_force();
  ASSERT_EQ(table.size(), 1 + 2 + default_rules().size());
  EXPECT_EQ(table[0].origin, "RAILCOLL_BCAST_ALGO");
  EXPECT_EQ(table[1].origin, "file:" + f.path + "#0");
  EXPECT_EQ(table[3].origin, "default#0");
}

TEST(Select, VariablesAreCheckedWhenTheSelectorIsMade) {
  auto error = [](const std::vector<std::string>& vars) -> std::string {
    try {
      Selector::from_variables(vars);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error({"RAILCOLL_ALLGATHER_ALGO=bruck", "RAILCOLL_BARRIER_ALGO=auto", "RAILCOLL_RAILS=eth0", "PATH=/bin"}), "");
  EXPECT_EQ(error({"RAILCOLL_ALLGATHER_ALGO=bogus"}).rfind(
                "unknown allgather algorithm 'bogus' (from RAILCOLL_ALLGATHER_ALGO; one of: direct,", 0),
            0u);
  EXPECT_EQ(error({"RAILCOLL_ALLGATHERV_ALGO=ring"}).rfind("RAILCOLL_ALLGATHERV_ALGO: there is no collective 'allgatherv'", 0),
            0u);
  EXPECT_EQ(error({"RAILCOLL_GOAL_ALGO=x"}).rfind("RAILCOLL_GOAL_ALGO: there is no collective", 0), 0u);
  EXPECT_EQ(error({"RAILCOLL_TUNING=/nonexistent.json"}).rfind("RAILCOLL_TUNING: /nonexistent.json: cannot read", 0), 0u);
  TempFile bad("{\"rules\": [{\"collective\": \"bcast\", \"algorithm\": \"nope\"}]}");
  EXPECT_EQ(error({"RAILCOLL_TUNING=" + bad.path}).rfind("RAILCOLL_TUNING: " + bad.path + ": rule #0: unknown bcast", 0), 0u);
}

// Selection ranks its candidates and asks nobody whether they fit: the rules
// that match, in order (the file's first), then every software algorithm of the
// collective, each once; a name the call or a variable gives stands alone.
TEST(Select, CandidatesAreTheMatchingRulesThenEverySoftwareAlgorithmEachOnce) {
  TempFile f("{\"rules\": [{\"collective\": \"bcast\", \"algorithm\": \"binomial\"}]}");
  const Situation bcast = at(Collective::Bcast, 16, 4, 4, 2, 64);
  const std::vector<Choice> ranked = Selector::from_variables({"RAILCOLL_TUNING=" + f.path}).candidates(bcast);
  ASSERT_GE(ranked.size(), 3u);
  EXPECT_EQ(ranked[0].algorithm, "binomial");
  EXPECT_EQ(ranked[0].origin, "file:" + f.path + "#0");
  EXPECT_EQ(ranked[1].algorithm, "smp");  // the defaults' rule for 16 ranks on 4 nodes
  EXPECT_EQ(ranked[1].origin.rfind("default#", 0), 0u);
  std::set<std::string> seen;
  for (const Choice& c : ranked) {
    EXPECT_TRUE(seen.insert(c.algorithm).second) << c.algorithm << " ranked twice";
    EXPECT_EQ(software_equivalent(Collective::Bcast, c.algorithm), c.algorithm) << c.algorithm;
  }
  for (const AlgoSpec& a : all_algorithms())
    if (a.collective == Collective::Bcast && software_equivalent(a.collective, a.name) == a.name)
      EXPECT_TRUE(seen.count(a.name)) << a.name << " is never a candidate";
  EXPECT_EQ(ranked.back().origin, "the first that fits");

  const auto named = Selector::from_variables({"RAILCOLL_BCAST_ALGO=pipelined_chain"}).candidates(bcast);
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].algorithm, "pipelined_chain");
  const auto called = Selector().candidates(bcast, "binomial");
  ASSERT_EQ(called.size(), 1u);
  EXPECT_EQ(called[0].origin, "the call's options");
}
