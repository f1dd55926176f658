// The verifier sweep, one test per algorithm: every algorithm over N = 1..64 and
// larger N, k = 1..4, ppn 1,2,3,4,8, uneven and non-consecutive nodes, and sizes
// 0, 1, 7, 1500 (striped), per-rank-varying (all-gatherv, gatherv, scatterv) and
// per-pair-varying (alltoallv) sizes, and every root of N = 2..9 (rooted ones).
#include <gtest/gtest.h>

#include "verify/sweep.hpp"

using namespace railcoll;

class Sweep : public testing::TestWithParam<const AlgoSpec*> {};

TEST_P(Sweep, EveryCaseVerifies) {
  const AlgoSpec* spec = GetParam();
  auto cases = sweep_cases(spec->collective, spec->name);
  ASSERT_GT(cases.size(), 1000u);
  SweepOutcome o = run_sweep(cases);
  EXPECT_EQ(o.failed, 0u);
  for (auto& f : o.failures) ADD_FAILURE() << f;
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, Sweep, testing::ValuesIn([] {
                           std::vector<const AlgoSpec*> v;
                           for (auto& a : all_algorithms()) v.push_back(&a);
                           return v;
                         }()),
                         [](const testing::TestParamInfo<const AlgoSpec*>& i) {
                           return std::string(collective_name(i.param->collective)) + "_" + i.param->name;
                         });
