#include "workload/latency_summary.h"

#include <gtest/gtest.h>

#include <vector>

namespace gpuscale::loadgen {
namespace {

struct PercentileCase {
  std::vector<double> sorted;
  double q;
  double expected;  // numpy.percentile(sorted, q) (linear interpolation)
};

TEST(LatencySummaryTest, PercentilesMatchNumpyLinear) {
  const std::vector<double> one_to_ten = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const std::vector<PercentileCase> cases = {
      {one_to_ten, 50, 5.5}, {one_to_ten, 90, 9.1},    {one_to_ten, 99, 9.91},
      {one_to_ten, 0, 1},    {one_to_ten, 100, 10},    {{0.25}, 99, 0.25},
      {{1, 3}, 50, 2},       {{1, 2, 3, 4}, 25, 1.75},
  };
  for (const PercentileCase& c : cases) {
    EXPECT_NEAR(Percentile(c.sorted, c.q), c.expected, 1e-12) << "q=" << c.q;
  }
}

TEST(LatencySummaryTest, SummarizesUnsortedValues) {
  LatencySummary s = Summarize({0.4, 0.1, 0.3, 0.2});
  EXPECT_EQ(s.count, 4);
  EXPECT_DOUBLE_EQ(s.mean, 0.25);
  EXPECT_DOUBLE_EQ(s.min, 0.1);
  EXPECT_DOUBLE_EQ(s.max, 0.4);
  EXPECT_DOUBLE_EQ(s.p50, 0.25);
  EXPECT_NEAR(s.p99, 0.397, 1e-12);
}

TEST(LatencySummaryTest, EmptySampleHasZeroCount) {
  LatencySummary s = Summarize({});
  EXPECT_EQ(s.count, 0);
  EXPECT_EQ(s.p99, 0);
}

}  // namespace
}  // namespace gpuscale::loadgen
