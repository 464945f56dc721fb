#include "workload/workload.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace gpuscale::loadgen {
namespace {

std::vector<PlannedRequest> Drain(WorkloadGenerator& generator, size_t limit = 100000) {
  std::vector<PlannedRequest> requests;
  while (requests.size() < limit) {
    std::optional<PlannedRequest> next = generator.Next();
    if (!next) break;
    requests.push_back(*next);
  }
  return requests;
}

TEST(WorkloadTest, ClosedLoopUsesFixedLengthsWithoutStddev) {
  WorkloadSpec spec;
  spec.input = {300, 0};
  spec.output = {20, 0};
  spec.max_requests = 5;
  WorkloadGenerator generator(spec);
  std::vector<PlannedRequest> requests = Drain(generator);
  ASSERT_EQ(requests.size(), 5u);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(requests[i].index, static_cast<int64_t>(i));
    EXPECT_EQ(requests[i].send_at_seconds, 0);
    EXPECT_EQ(requests[i].input_tokens, 300);
    EXPECT_EQ(requests[i].output_tokens, 20);
  }
}

TEST(WorkloadTest, PoissonArrivalsHaveTheRequestedRateAndStopAtTheDuration) {
  WorkloadSpec spec;
  spec.mode = ArrivalMode::kPoisson;
  spec.rate_per_second = 50;
  spec.duration_seconds = 200;
  spec.seed = 7;
  WorkloadGenerator generator(spec);
  std::vector<PlannedRequest> requests = Drain(generator);
  // 10000 expected; a Poisson count has a standard deviation of 100.
  EXPECT_NEAR(static_cast<double>(requests.size()), 10000, 400);
  for (size_t i = 1; i < requests.size(); ++i) {
    ASSERT_GT(requests[i].send_at_seconds, requests[i - 1].send_at_seconds);
  }
  EXPECT_LT(requests.back().send_at_seconds, 200);
}

TEST(WorkloadTest, SameSeedSameWorkload) {
  WorkloadSpec spec;
  spec.mode = ArrivalMode::kPoisson;
  spec.rate_per_second = 3;
  spec.input = {500, 100};
  spec.output = {50, 20};
  spec.max_requests = 50;
  spec.seed = 42;
  WorkloadGenerator a(spec), b(spec);
  std::vector<PlannedRequest> ra = Drain(a), rb = Drain(b);
  ASSERT_EQ(ra.size(), 50u);
  for (size_t i = 0; i < ra.size(); ++i) {
    EXPECT_EQ(ra[i].send_at_seconds, rb[i].send_at_seconds);
    EXPECT_EQ(ra[i].input_tokens, rb[i].input_tokens);
  }
  spec.seed = 43;
  WorkloadGenerator c(spec);
  EXPECT_NE(Drain(c)[0].send_at_seconds, ra[0].send_at_seconds);
}

TEST(WorkloadTest, LengthsFollowMeanAndStddevAndStayPositive) {
  WorkloadSpec spec;
  spec.input = {1000, 200};
  spec.output = {3, 50};  // mostly clamped at 1
  spec.max_requests = 20000;
  WorkloadGenerator generator(spec);
  std::vector<PlannedRequest> requests = Drain(generator);
  double sum = 0, sum_sq = 0;
  for (const PlannedRequest& r : requests) {
    sum += r.input_tokens;
    sum_sq += static_cast<double>(r.input_tokens) * r.input_tokens;
    ASSERT_GE(r.output_tokens, 1);
  }
  const double n = static_cast<double>(requests.size());
  const double mean = sum / n;
  EXPECT_NEAR(mean, 1000, 10);
  EXPECT_NEAR(std::sqrt(sum_sq / n - mean * mean), 200, 10);
}

TEST(WorkloadTest, TraceModeReplaysArrivalsAndLengths) {
  WorkloadSpec spec;
  spec.mode = ArrivalMode::kTrace;
  spec.trace = {{0, 100, 10}, {0.5, 0, 0}, {1.5, 300, 30}, {9, 1, 1}};
  spec.duration_seconds = 5;
  WorkloadGenerator generator(spec);
  std::vector<PlannedRequest> requests = Drain(generator);
  ASSERT_EQ(requests.size(), 3u);  // the one at 9 s is past the duration
  EXPECT_EQ(requests[0].input_tokens, 100);
  EXPECT_EQ(requests[1].input_tokens, 1);  // 0-token rows still send one token
  EXPECT_EQ(requests[1].output_tokens, 1);
  EXPECT_EQ(requests[2].send_at_seconds, 1.5);
  EXPECT_EQ(requests[2].output_tokens, 30);
}

TEST(WorkloadTest, ValidationNamesTheFlag) {
  const std::vector<std::pair<void (*)(WorkloadSpec&), std::string>> cases = {
      {[](WorkloadSpec& s) { s.input.mean_tokens = 0; }, "--input-tokens"},
      {[](WorkloadSpec& s) { s.output.stddev_tokens = -1; }, "--output-stddev"},
      {[](WorkloadSpec& s) {
         s.mode = ArrivalMode::kPoisson;
         s.rate_per_second = 0;
       },
       "--rate"},
      {[](WorkloadSpec& s) { s.mode = ArrivalMode::kTrace; }, "--trace"},
      {[](WorkloadSpec& s) { s.max_requests = -1; }, "--max-requests"},
  };
  EXPECT_TRUE(ValidateWorkloadSpec(WorkloadSpec{}).has_value());
  for (const auto& [mutate, flag] : cases) {
    WorkloadSpec spec;
    mutate(spec);
    Status status = ValidateWorkloadSpec(spec);
    ASSERT_FALSE(status.has_value()) << flag;
    EXPECT_EQ(status.error().field, flag);
  }
}

}  // namespace
}  // namespace gpuscale::loadgen
