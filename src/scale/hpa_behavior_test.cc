#include "scale/hpa_behavior.h"

#include <gtest/gtest.h>

#include <vector>

namespace gpuscale::scale {
namespace {

// One Normalize call of a scripted sequence; the limiter records the change it allowed.
struct Step {
  double now;
  int current;
  int recommendation;
  int want;
};

void RunSteps(BehaviorLimiter& limiter, const std::vector<Step>& steps, int min_replicas = 1,
              int max_replicas = 100) {
  for (const Step& s : steps) {
    const BehaviorOutcome out =
        limiter.Normalize(Seconds{s.now}, s.current, s.recommendation, min_replicas, max_replicas);
    EXPECT_EQ(out.replicas, s.want)
        << "t=" << s.now << " current=" << s.current << " recommendation=" << s.recommendation;
    limiter.RecordScale(Seconds{s.now}, s.current, out.replicas);
  }
}

ScalingRules Rules(double window, SelectPolicy select, std::vector<ScalingPolicy> policies) {
  return ScalingRules{window, select, std::move(policies)};
}

TEST(HpaBehaviorTest, DefaultsMatchKubernetesDocs) {
  const Behavior b = DefaultBehavior();
  EXPECT_EQ(b.scale_up.stabilization_window_seconds, 0);
  ASSERT_EQ(b.scale_up.policies.size(), 2u);
  EXPECT_EQ(b.scale_up.select_policy, SelectPolicy::kMax);
  EXPECT_EQ(b.scale_down.stabilization_window_seconds, 300);
  ASSERT_EQ(b.scale_down.policies.size(), 1u);
  EXPECT_EQ(b.scale_down.policies[0].type, ScalingPolicyType::kPercent);
  EXPECT_EQ(b.scale_down.policies[0].value, 100);
  EXPECT_EQ(b.scale_down.policies[0].period_seconds, 15);
}

// Default scale-up: max(+100 %, +4 pods) per 15 s, counted from the period's start.
TEST(HpaBehaviorTest, DefaultScaleUpDoublesOrAddsFourPerPeriod) {
  BehaviorLimiter limiter(DefaultBehavior());
  RunSteps(limiter, {
                        {0, 1, 40, 5},    // max(2, 1 + 4)
                        {5, 5, 40, 5},    // period started at 1: limit still 5
                        {15, 5, 40, 10},  // new period: max(10, 9)
                        {30, 10, 40, 20},
                        {45, 20, 40, 40},
                    });
}

TEST(HpaBehaviorTest, DefaultScaleDownWaitsForStabilizationWindow) {
  BehaviorLimiter limiter(DefaultBehavior());
  RunSteps(limiter, {
                        {0, 10, 10, 10},
                        {15, 10, 2, 10},   // window still holds 10 (t=0)
                        {299, 10, 2, 10},  // t=0 recommendation inside (-1, 299]
                        {300, 10, 2, 2},   // only 2s left in the window; 100 % per 15 s
                    });
}

TEST(HpaBehaviorTest, FreshLimiterDoesNotScaleDownBeforeAWindow) {
  BehaviorLimiter limiter(DefaultBehavior());
  // The first call counts the current size as a recommendation (HPA's init of the window).
  RunSteps(limiter, {{100, 8, 1, 8}, {399, 8, 1, 8}, {400, 8, 1, 1}});
}

TEST(HpaBehaviorTest, ScaleDownUsesHighestRecommendationInWindow) {
  Behavior b = DefaultBehavior();
  b.scale_down.stabilization_window_seconds = 60;
  BehaviorLimiter limiter(b);
  RunSteps(limiter, {
                        {0, 10, 10, 10},
                        {20, 10, 6, 10},
                        {40, 10, 4, 10},
                        {61, 10, 3, 6},  // window (1, 61]: 6, 4, 3 -> highest 6
                        {81, 6, 3, 4},   // window (21, 81]: 4, 3, 3
                    });
}

TEST(HpaBehaviorTest, ScaleUpUsesLowestRecommendationInWindow) {
  Behavior b = DefaultBehavior();
  b.scale_up.stabilization_window_seconds = 60;
  BehaviorLimiter limiter(b);
  RunSteps(limiter, {
                        {0, 4, 4, 4},
                        {20, 4, 8, 4},  // window holds 4 (t=0)
                        {40, 4, 6, 4},
                        {61, 4, 9, 6},  // window (1, 61]: 8, 6, 9 -> lowest 6
                    });
}

struct RateCase {
  const char* name;
  ScalingRules up;
  ScalingRules down;
  int current;
  int recommendation;
  int want;
};

TEST(HpaBehaviorTest, RatePoliciesTable) {
  const std::vector<RateCase> cases = {
      {"up Max picks the larger change",
       Rules(0, SelectPolicy::kMax,
             {{ScalingPolicyType::kPods, 4, 15}, {ScalingPolicyType::kPercent, 100, 15}}),
       DefaultScaleDownRules(), 10, 50, 20},
      {"up Min picks the smaller change",
       Rules(0, SelectPolicy::kMin,
             {{ScalingPolicyType::kPods, 4, 15}, {ScalingPolicyType::kPercent, 100, 15}}),
       DefaultScaleDownRules(), 10, 50, 14},
      {"up Percent rounds up",
       Rules(0, SelectPolicy::kMax, {{ScalingPolicyType::kPercent, 10, 15}}),
       DefaultScaleDownRules(), 3, 50, 4},
      {"up Disabled holds", Rules(0, SelectPolicy::kDisabled, {}), DefaultScaleDownRules(), 3, 50,
       3},
      {"down Percent truncates", DefaultScaleUpRules(),
       Rules(0, SelectPolicy::kMax, {{ScalingPolicyType::kPercent, 50, 15}}), 5, 1, 2},
      {"down Max allows the larger drop", DefaultScaleUpRules(),
       Rules(0, SelectPolicy::kMax,
             {{ScalingPolicyType::kPods, 1, 15}, {ScalingPolicyType::kPercent, 50, 15}}),
       10, 1, 5},
      {"down Min allows the smaller drop", DefaultScaleUpRules(),
       Rules(0, SelectPolicy::kMin,
             {{ScalingPolicyType::kPods, 1, 15}, {ScalingPolicyType::kPercent, 50, 15}}),
       10, 1, 9},
      {"down Disabled holds", DefaultScaleUpRules(), Rules(0, SelectPolicy::kDisabled, {}), 10, 1,
       10},
  };
  for (const RateCase& c : cases) {
    BehaviorLimiter limiter(Behavior{c.up, c.down});
    EXPECT_EQ(limiter.Normalize(Seconds{0}, c.current, c.recommendation, 1, 100).replicas, c.want)
        << c.name;
  }
}

TEST(HpaBehaviorTest, PodsPolicyCountsChangesInsideThePeriod) {
  // Corrino's shape: one pod per scaling_period_down seconds.
  Behavior b{DefaultScaleUpRules(),
             Rules(0, SelectPolicy::kMax, {{ScalingPolicyType::kPods, 1, 60}})};
  BehaviorLimiter limiter(b);
  RunSteps(limiter, {{0, 5, 1, 4}, {30, 4, 1, 4}, {60, 4, 1, 3}, {90, 3, 1, 3}, {120, 3, 1, 2}});
}

TEST(HpaBehaviorTest, BoundsApplyAfterRates) {
  BehaviorLimiter limiter(DefaultBehavior());
  const BehaviorOutcome up = limiter.Normalize(Seconds{0}, 2, 50, 1, 3);
  EXPECT_EQ(up.replicas, 3);
  EXPECT_NE(up.limit.find("max_replicas"), std::string::npos) << up.limit;
  Behavior no_window = DefaultBehavior();
  no_window.scale_down.stabilization_window_seconds = 0;
  BehaviorLimiter down_limiter(no_window);
  EXPECT_EQ(down_limiter.Normalize(Seconds{0}, 5, 0, 2, 10).replicas, 2);
}

}  // namespace
}  // namespace gpuscale::scale
