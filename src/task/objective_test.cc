#include "task/objective.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuscale::task {
namespace {

using ::testing::HasSubstr;

// An experiment with throughput (output tokens/s, requests/s) and ttft/tpot percentiles.
ExperimentRecord Experiment(int64_t id, int index, double tokens_per_second, double rps,
                            double ttft_p90, double tpot_p50 = 0.02) {
  ExperimentRecord e;
  e.id = id;
  e.index = index;
  e.status = ExperimentStatus::kSucceeded;
  loadgen::BenchReport r;
  r.requests_completed = 10;
  r.output_token_throughput_per_second = tokens_per_second;
  r.request_throughput_per_second = rps;
  r.ttft_seconds = {10, ttft_p90 / 2, 0.01, ttft_p90 * 2, ttft_p90 / 2, ttft_p90, ttft_p90 * 1.5};
  r.time_per_output_token_seconds = {10, tpot_p50, 0.001, 0.1, tpot_p50, tpot_p50 * 2, 0.09};
  e.bench = r;
  return e;
}

Objective MinLatency(std::string metric, double q, double floor = 0) {
  Objective o;
  o.kind = ObjectiveKind::kMinLatency;
  o.latency_metric = std::move(metric);
  o.percentile = q;
  o.throughput_floor_rps = floor;
  return o;
}

Objective UnderLatency(double ceiling) {
  Objective o;
  o.kind = ObjectiveKind::kMaxThroughputUnderLatency;
  o.latency_ceiling_seconds = ceiling;
  return o;
}

TEST(ObjectiveTest, ValidatesFields) {
  struct Case {
    Objective objective;
    std::string field;  // empty: valid
  };
  Objective bad_metric = MinLatency("latency", 90);
  Objective bad_q = MinLatency("ttft", 95);
  Objective negative_floor = MinLatency("ttft", 90, -1);
  const std::vector<Case> cases = {
      {Objective{}, ""},
      {MinLatency("tpot", 50, 5), ""},
      {MinLatency("itl", 99), ""},
      {UnderLatency(0.5), ""},
      {bad_metric, "objective.latency_metric"},
      {bad_q, "objective.percentile"},
      {negative_floor, "objective.throughput_floor_rps"},
      {UnderLatency(0), "objective.latency_ceiling_seconds"},
      {UnderLatency(-1), "objective.latency_ceiling_seconds"},
  };
  for (const Case& c : cases) {
    Status status = ValidateObjective(c.objective);
    if (c.field.empty()) {
      EXPECT_TRUE(status.has_value()) << DescribeObjective(c.objective);
    } else {
      ASSERT_FALSE(status.has_value()) << c.field;
      EXPECT_EQ(status.error().field, c.field);
    }
  }
}

TEST(ObjectiveTest, LatencyOfPicksMetricAndPercentile) {
  ExperimentRecord e = Experiment(1, 0, 100, 1, 0.4, 0.02);
  EXPECT_DOUBLE_EQ(LatencyOf(*e.bench, MinLatency("ttft", 90)), 0.4);
  EXPECT_DOUBLE_EQ(LatencyOf(*e.bench, MinLatency("ttft", 50)), 0.2);
  EXPECT_DOUBLE_EQ(LatencyOf(*e.bench, MinLatency("ttft", 99)), 0.6);
  EXPECT_DOUBLE_EQ(LatencyOf(*e.bench, MinLatency("tpot", 50)), 0.02);
  EXPECT_DOUBLE_EQ(LatencyOf(*e.bench, MinLatency("tpot", 90)), 0.04);
}

TEST(ObjectiveTest, MaxThroughputPicksHighestTokensPerSecond) {
  std::vector<ExperimentRecord> es = {Experiment(10, 0, 500, 2, 0.1),
                                      Experiment(11, 1, 900, 3, 0.9),
                                      Experiment(12, 2, 700, 4, 0.2)};
  EXPECT_EQ(BestExperiment(Objective{}, es), 11);
}

TEST(ObjectiveTest, TieGoesToLowerIndexWhateverTheOrder) {
  std::vector<ExperimentRecord> es = {Experiment(21, 3, 900, 2, 0.1),
                                      Experiment(20, 1, 900, 2, 0.1),
                                      Experiment(22, 2, 100, 2, 0.1)};
  EXPECT_EQ(BestExperiment(Objective{}, es), 20);
  EXPECT_EQ(BestExperiment(MinLatency("ttft", 90), es), 20);
}

TEST(ObjectiveTest, MinLatencyRespectsThroughputFloor) {
  std::vector<ExperimentRecord> es = {Experiment(1, 0, 100, 1.0, 0.1),
                                      Experiment(2, 1, 300, 6.0, 0.3),
                                      Experiment(3, 2, 400, 8.0, 0.5)};
  EXPECT_EQ(BestExperiment(MinLatency("ttft", 90), es), 1);
  EXPECT_EQ(BestExperiment(MinLatency("ttft", 90, 5), es), 2);
  EXPECT_EQ(BestExperiment(MinLatency("ttft", 90, 100), es), std::nullopt);
}

TEST(ObjectiveTest, UnderLatencyRespectsCeiling) {
  std::vector<ExperimentRecord> es = {Experiment(1, 0, 100, 1.0, 0.1),
                                      Experiment(2, 1, 300, 6.0, 0.3),
                                      Experiment(3, 2, 400, 8.0, 0.5)};
  EXPECT_EQ(BestExperiment(UnderLatency(0.35), es), 2);
  EXPECT_EQ(BestExperiment(UnderLatency(0.5), es), 3);  // at the ceiling qualifies
  EXPECT_EQ(BestExperiment(UnderLatency(0.05), es), std::nullopt);
}

TEST(ObjectiveTest, OnlySucceededWithCompletedRequestsCompete) {
  ExperimentRecord failed = Experiment(1, 0, 1000, 5, 0.1);
  failed.status = ExperimentStatus::kFailed;
  ExperimentRecord no_bench = Experiment(2, 1, 1000, 5, 0.1);
  no_bench.bench.reset();
  ExperimentRecord nothing_completed = Experiment(3, 2, 1000, 5, 0.1);
  nothing_completed.bench->requests_completed = 0;
  EXPECT_EQ(BestExperiment(Objective{}, {failed, no_bench, nothing_completed}), std::nullopt);
  EXPECT_EQ(BestExperiment(Objective{}, {}), std::nullopt);
  ExperimentRecord ok = Experiment(4, 3, 10, 1, 0.1);
  EXPECT_EQ(BestExperiment(Objective{}, {failed, no_bench, nothing_completed, ok}), 4);
}

TEST(ObjectiveTest, DescribesEachKind) {
  EXPECT_EQ(DescribeObjective(Objective{}), "max output tokens/s");
  EXPECT_EQ(DescribeObjective(MinLatency("ttft", 90)), "min ttft p90");
  EXPECT_EQ(DescribeObjective(MinLatency("tpot", 99, 5)), "min tpot p99 with >= 5 req/s");
  EXPECT_THAT(DescribeObjective(UnderLatency(0.5)), HasSubstr("ttft p90 <= 0.5 s"));
}

}  // namespace
}  // namespace gpuscale::task
