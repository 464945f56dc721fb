#include "scale/ratio_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuscale::scale {
namespace {

using ::testing::HasSubstr;

ScalingInput RatioInput(int replicas, int queued, int running) {
  ScalingInput input;
  input.current_replicas = replicas;
  input.ready_replicas = replicas;
  input.tasks = {{{}, queued, running}};
  return input;
}

struct RatioCase {
  const char* name;
  int replicas;
  int queued;
  int running;
  int min_replicas;
  int expected;
};

// Scaler's "vanilla" scaling policy: tasks / workers > 10 adds a group, < 1 removes one.
TEST(RatioPolicyTest, FollowsTheVanillaTaskRatio) {
  const std::vector<RatioCase> cases = {
      {"12.5 > 10 adds a group", 2, 20, 5, 1, 3},
      {"exactly 10 holds", 2, 15, 5, 1, 2},
      {"0.5 < 1 removes a group", 2, 1, 0, 1, 1},
      {"exactly 1 holds", 2, 1, 1, 1, 2},
      {"idle at min holds", 1, 0, 0, 1, 1},
      {"tasks and no workers start one", 0, 3, 0, 0, 1},
      {"nothing at all holds at zero", 0, 0, 0, 0, 0},
      {"idle scales to zero when min is 0", 1, 0, 0, 0, 0},
  };
  for (const RatioCase& c : cases) {
    SCOPED_TRACE(c.name);
    RatioPolicy policy(RatioPolicyConfig{c.min_replicas, 10, 10, 1, 1});
    Decision d = policy.Evaluate(RatioInput(c.replicas, c.queued, c.running));
    EXPECT_EQ(d.desired_replicas, c.expected) << d.reason;
  }
}

TEST(RatioPolicyTest, ReasonNamesRatioAndThreshold) {
  RatioPolicy policy(RatioPolicyConfig{1, 10, 10, 1, 1});
  EXPECT_EQ(policy.Evaluate(RatioInput(2, 20, 5)).reason,
            "scale out 2 -> 3: 25 tasks on 2 workers = 12.5 tasks per worker > "
            "upper_task_ratio 10");
}

TEST(RatioPolicyTest, HoldsAtMaxReplicas) {
  RatioPolicy policy(RatioPolicyConfig{1, 4, 10, 1, 1});
  Decision d = policy.Evaluate(RatioInput(4, 100, 0));
  EXPECT_EQ(d.desired_replicas, 4);
  EXPECT_THAT(d.reason, HasSubstr("(clamped to max_replicas 4)"));
}

TEST(RatioPolicyTest, CountsWorkersFromGroupsOrWorkersPerGroup) {
  RatioPolicy per_group(RatioPolicyConfig{1, 10, 10, 1, 4});
  EXPECT_EQ(per_group.Evaluate(RatioInput(2, 50, 0)).desired_replicas, 2);  // 50 / 8 workers
  RatioPolicy plain(RatioPolicyConfig{1, 10, 10, 1, 1});
  ScalingInput input = RatioInput(2, 50, 0);
  input.groups = {{"g1", "a", {}, 4}, {"g2", "a", {}, 4}};
  EXPECT_EQ(plain.Evaluate(input).desired_replicas, 2);
}

TEST(RatioPolicyTest, NeverScalesInOnMissingTaskCounts) {
  RatioPolicy policy(RatioPolicyConfig{1, 10, 10, 1, 1});
  ScalingInput outage = RatioInput(3, 0, 0);
  outage.metrics_error = true;
  Decision d = policy.Evaluate(outage);
  EXPECT_EQ(d.desired_replicas, 3);
  EXPECT_THAT(d.reason, HasSubstr("incomplete"));
  EXPECT_EQ(policy.Evaluate(RatioInput(3, -5, 0)).desired_replicas, 3);
}

TEST(RatioPolicyTest, DoesNotScaleInIntoAnImmediateScaleOut) {
  RatioPolicy policy(RatioPolicyConfig{1, 10, 1.9, 1.5, 1});
  Decision d = policy.Evaluate(RatioInput(3, 4, 0));  // 1.33 < 1.5, but 4 / 2 = 2 > 1.9
  EXPECT_EQ(d.desired_replicas, 3);
  EXPECT_THAT(d.reason, HasSubstr("removing a group would give 2 > upper_task_ratio 1.9"));
}

TEST(RatioPolicyTest, MinAboveMaxClampsDefensively) {
  RatioPolicy policy(RatioPolicyConfig{3, 2, 10, 1, 1});
  EXPECT_EQ(policy.Evaluate(RatioInput(5, 0, 0)).desired_replicas, 3);
}

}  // namespace
}  // namespace gpuscale::scale
