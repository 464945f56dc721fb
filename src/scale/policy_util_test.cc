#include "scale/policy_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/numbers.h"

namespace gpuscale::scale {
namespace {

ScalingInput InputWith(int ready, MetricValue metric, bool metrics_error = false) {
  ScalingInput input;
  input.current_replicas = ready;
  input.ready_replicas = ready;
  input.metrics["m"] = std::move(metric);
  input.metrics_error = metrics_error;
  return input;
}

MetricValue PerReplica(std::vector<double> values) {
  MetricValue m;
  m.per_replica = std::move(values);
  return m;
}

MetricValue Service(double value) {
  MetricValue m;
  m.service_value = value;
  return m;
}

struct ReadCase {
  const char* name;
  ScalingInput input;
  Aggregation aggregation;
  std::optional<double> value;
  bool complete;
};

TEST(PolicyUtilTest, ReadMetricAggregatesAndFlagsIncompleteData) {
  const std::vector<ReadCase> cases = {
      {"average", InputWith(2, PerReplica({4, 16})), Aggregation::kAverage, 10.0, true},
      {"max", InputWith(2, PerReplica({4, 16})), Aggregation::kMax, 16.0, true},
      {"min", InputWith(2, PerReplica({4, 16})), Aggregation::kMin, 4.0, true},
      {"sum", InputWith(2, PerReplica({4, 16})), Aggregation::kSum, 20.0, true},
      {"service value wins",
       [] {
         auto in = InputWith(2, Service(7));
         in.metrics["m"].per_replica = {1, 1};
         return in;
       }(),
       Aggregation::kAverage, 7.0, true},
      {"NaN dropped", InputWith(2, PerReplica({kNaN, 6})), Aggregation::kAverage, 6.0, false},
      {"negative dropped", InputWith(2, PerReplica({-1, 6})), Aggregation::kAverage, 6.0, false},
      {"all unusable", InputWith(2, PerReplica({kNaN, -3})), Aggregation::kAverage, std::nullopt,
       false},
      {"fewer samples than ready", InputWith(3, PerReplica({2, 2})), Aggregation::kAverage, 2.0,
       false},
      {"no ready replicas", InputWith(0, PerReplica({})), Aggregation::kAverage, std::nullopt,
       false},
      {"NaN service value", InputWith(1, Service(kNaN)), Aggregation::kAverage, std::nullopt,
       false},
      {"metrics error", InputWith(2, PerReplica({1, 1}), true), Aggregation::kAverage, 1.0, false},
  };
  for (const ReadCase& c : cases) {
    SCOPED_TRACE(c.name);
    const MetricReading r = ReadMetric(c.input, "m", c.aggregation);
    EXPECT_EQ(r.value, c.value);
    EXPECT_EQ(r.complete, c.complete);
    EXPECT_EQ(r.problem.empty(), c.complete) << r.problem;
  }
}

TEST(PolicyUtilTest, AbsentMetricIsMissing) {
  ScalingInput input;
  input.ready_replicas = 1;
  const MetricReading r = ReadMetric(input, "absent", Aggregation::kAverage);
  EXPECT_FALSE(r.value);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.problem, "metric absent");
}

TEST(PolicyUtilTest, ClampLetsMinWinWhenBoundsAreInverted) {
  EXPECT_EQ(ClampReplicas(5, 1, 3), 3);
  EXPECT_EQ(ClampReplicas(0, 1, 3), 1);
  EXPECT_EQ(ClampReplicas(2, 1, 3), 2);
  EXPECT_EQ(ClampReplicas(1, 4, 2), 4);  // min > max: min wins
  EXPECT_EQ(ClampReplicas(9, 4, 2), 4);
  EXPECT_EQ(ClampReplicas(-2, -1, 3), 0);
}

TEST(PolicyUtilTest, CountsTasksAndRejectsNegativeCounts) {
  TaskTotal ok = CountTasks({{{}, 3, 2}, {{"gpu"}, 1, 0}});
  EXPECT_EQ(ok.tasks, 6);
  EXPECT_TRUE(ok.valid);
  TaskTotal bad = CountTasks({{{}, -3, 2}});
  EXPECT_EQ(bad.tasks, 2);
  EXPECT_FALSE(bad.valid);
}

TEST(PolicyUtilTest, TaskRatioHandlesZeroWorkers) {
  EXPECT_TRUE(std::isinf(TaskRatio(3, 0)));
  EXPECT_EQ(TaskRatio(0, 0), 0.0);
  EXPECT_DOUBLE_EQ(TaskRatio(5, 2), 2.5);
}

TEST(PolicyUtilTest, SubsetMatchesCapabilities) {
  EXPECT_TRUE(IsSubset({}, {"gpu"}));
  EXPECT_TRUE(IsSubset({"gpu"}, {"gpu", "high_memory"}));
  EXPECT_FALSE(IsSubset({"gpu", "high_memory"}, {"gpu"}));
}

TEST(PolicyUtilTest, FormatsNumbersAndChanges) {
  EXPECT_EQ(FormatNumber(12.5), "12.5");
  EXPECT_EQ(FormatNumber(10), "10");
  EXPECT_EQ(FormatNumber(1.0 / 3), "0.3333");
  EXPECT_EQ(FormatChange(2, 3), "scale out 2 -> 3");
  EXPECT_EQ(FormatChange(3, 2), "scale in 3 -> 2");
  EXPECT_EQ(FormatChange(3, 3), "hold at 3");
  EXPECT_EQ(FormatCapabilities({"gpu", "a"}), "{a, gpu}");
  EXPECT_EQ(CountOf(1, "task"), "1 task");
  EXPECT_EQ(CountOf(0, "worker"), "0 workers");
  EXPECT_EQ(FormatGroupChange(2, 2, true), "rebalance at 2");
  EXPECT_EQ(FormatGroupChange(2, 2, false), "hold at 2");
  EXPECT_EQ(FormatGroupChange(2, 3, true), "scale out 2 -> 3");
}

}  // namespace
}  // namespace gpuscale::scale
