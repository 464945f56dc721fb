#include "scale/rules_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "core/numbers.h"
#include "scale/enum_names.h"

namespace gpuscale::scale {
namespace {

using ::testing::HasSubstr;

const char* const kQueue = "vllm:num_requests_waiting";

ScalingRule Rule(std::string name, Comparator comparator, double threshold, int step,
                 double cooldown_seconds = 0, int min_replicas = 0, int max_replicas = 100) {
  ScalingRule rule;
  rule.name = std::move(name);
  rule.metric = kQueue;
  rule.comparator = comparator;
  rule.threshold = threshold;
  rule.step_size = step;
  rule.cooldown = Seconds{cooldown_seconds};
  rule.min_replicas = min_replicas;
  rule.max_replicas = max_replicas;
  return rule;
}

RulesPolicy MakeRulesPolicy(std::vector<ScalingRule> rules, int min_replicas = 0,
                            int max_replicas = 10) {
  return RulesPolicy(RulesPolicyConfig{min_replicas, max_replicas, std::move(rules)});
}

// `current` replicas, all ready, each reporting `per_replica`.
ScalingInput RulesInput(double t, int current, std::vector<double> per_replica) {
  ScalingInput input;
  input.now = Seconds{t};
  input.current_replicas = current;
  input.ready_replicas = current;
  input.metrics[kQueue].per_replica = std::move(per_replica);
  return input;
}

struct ComparatorCase {
  Comparator comparator;
  double threshold;
  double value;
  bool fires;
};

// The comparators of Backend.AI's model-service autoscaling rules: strict vs. inclusive at
// the threshold.
TEST(RulesPolicyTest, ComparatorsFireAsTheReferenceDefines) {
  const std::vector<ComparatorCase> cases = {
      {Comparator::kGreaterThan, 10, 10, false},
      {Comparator::kGreaterThan, 10, 10.5, true},
      {Comparator::kGreaterThanOrEqual, 10, 10, true},
      {Comparator::kGreaterThanOrEqual, 10, 9.9, false},
      {Comparator::kLessThan, 1, 1, false},
      {Comparator::kLessThan, 1, 0.5, true},
      {Comparator::kLessThanOrEqual, 1, 1, true},
      {Comparator::kLessThanOrEqual, 1, 1.1, false},
  };
  for (const ComparatorCase& c : cases) {
    SCOPED_TRACE(std::string(ComparatorName(c.comparator)) + " " + std::to_string(c.value));
    RulesPolicy policy = MakeRulesPolicy({Rule("r", c.comparator, c.threshold, +1)});
    Decision d = policy.Evaluate(RulesInput(0, 2, {c.value, c.value}));
    EXPECT_EQ(d.desired_replicas, c.fires ? 3 : 2) << d.reason;
  }
}

TEST(RulesPolicyTest, LiveValueIsTheAverageOverReplicas) {
  RulesPolicy policy = MakeRulesPolicy({Rule("queue-high", Comparator::kGreaterThan, 9, +1)});
  Decision d = policy.Evaluate(RulesInput(0, 2, {4, 16}));  // average 10
  EXPECT_EQ(d.desired_replicas, 3);
  EXPECT_EQ(d.reason,
            "scale out 2 -> 3: rule 'queue-high': vllm:num_requests_waiting average 10 > 9 "
            "(step +1)");
}

TEST(RulesPolicyTest, MaxAggregationUsesTheBusiestReplica) {
  ScalingRule rule = Rule("hot", Comparator::kGreaterThan, 12, +1);
  rule.aggregation = Aggregation::kMax;
  RulesPolicy policy = MakeRulesPolicy({rule});
  EXPECT_EQ(policy.Evaluate(RulesInput(0, 2, {4, 16})).desired_replicas, 3);
}

TEST(RulesPolicyTest, CooldownHoldsRuleAfterTrigger) {
  RulesPolicy policy = MakeRulesPolicy({Rule("up", Comparator::kGreaterThan, 5, +1, 60)});
  EXPECT_EQ(policy.Evaluate(RulesInput(0, 2, {9, 9})).desired_replicas, 3);
  Decision held = policy.Evaluate(RulesInput(30, 3, {9, 9, 9}));
  EXPECT_EQ(held.desired_replicas, 3);
  EXPECT_THAT(held.reason, HasSubstr("60s cooldown holds it for another 30s"));
  EXPECT_EQ(policy.Evaluate(RulesInput(60, 3, {9, 9, 9})).desired_replicas, 4);
}

TEST(RulesPolicyTest, RuleDoesNotFireWhenStepWouldLeaveItsBounds) {
  RulesPolicy policy = MakeRulesPolicy({Rule("up", Comparator::kGreaterThan, 5, +2, 0, 1, 4)});
  Decision d = policy.Evaluate(RulesInput(0, 3, {9, 9, 9}));  // 3 + 2 = 5 > rule max 4
  EXPECT_EQ(d.desired_replicas, 3);
  EXPECT_THAT(d.reason, HasSubstr("would give 5 replicas, outside the rule's bounds [1, 4]"));
  RulesPolicy down = MakeRulesPolicy({Rule("down", Comparator::kLessThan, 1, -1, 0, 2, 10)});
  EXPECT_EQ(down.Evaluate(RulesInput(0, 2, {0, 0})).desired_replicas, 2);  // 1 < rule min 2
  EXPECT_EQ(down.Evaluate(RulesInput(0, 3, {0, 0, 0})).desired_replicas, 2);
}

TEST(RulesPolicyTest, PolicyBoundsAlsoLimitRules) {
  RulesPolicy policy = MakeRulesPolicy({Rule("up", Comparator::kGreaterThan, 5, +1)}, 1, 3);
  EXPECT_EQ(policy.Evaluate(RulesInput(0, 3, {9, 9, 9})).desired_replicas, 3);
}

struct CombineCase {
  const char* name;
  std::vector<ScalingRule> rules;
  int expected;
};

TEST(RulesPolicyTest, LargestFiredStepWins) {
  const std::vector<CombineCase> cases = {
      {"two scale-outs: the bigger",
       {Rule("a", Comparator::kGreaterThan, 1, +1), Rule("b", Comparator::kGreaterThan, 2, +3)},
       7},
      {"out beats in",
       {Rule("in", Comparator::kLessThan, 10, -1), Rule("out", Comparator::kGreaterThan, 2, +1)},
       5},
      {"two scale-ins: the smaller",
       {Rule("a", Comparator::kLessThan, 10, -2), Rule("b", Comparator::kLessThan, 10, -1)},
       3},
  };
  for (const CombineCase& c : cases) {
    SCOPED_TRACE(c.name);
    RulesPolicy policy = MakeRulesPolicy(c.rules);
    Decision d = policy.Evaluate(RulesInput(0, 4, {5, 5, 5, 5}));
    EXPECT_EQ(d.desired_replicas, c.expected) << d.reason;
  }
}

TEST(RulesPolicyTest, OppositeRulesFiringTogetherAreWarned) {
  RulesPolicy policy = MakeRulesPolicy(
      {Rule("in", Comparator::kLessThan, 10, -1), Rule("out", Comparator::kGreaterThan, 2, +1)});
  Decision d = policy.Evaluate(RulesInput(0, 4, {5, 5, 5, 5}));
  EXPECT_THAT(d.details,
              ::testing::Contains(
                  HasSubstr("rules 'out' (scale out) and 'in' (scale in) fired in the same tick")));
}

TEST(RulesPolicyTest, OnlyTheAppliedRuleRestartsItsCooldown) {
  RulesPolicy policy = MakeRulesPolicy({Rule("small", Comparator::kGreaterThan, 1, +1, 100),
                                        Rule("big", Comparator::kGreaterThan, 1, +2, 100)});
  EXPECT_EQ(policy.Evaluate(RulesInput(0, 2, {5, 5})).desired_replicas, 4);
  Decision d = policy.Evaluate(RulesInput(10, 4, {5, 5, 5, 5}));
  EXPECT_EQ(d.desired_replicas, 5) << d.reason;
  EXPECT_THAT(d.reason, HasSubstr("rule 'small'"));
}

TEST(RulesPolicyTest, MissingMetricNeverScalesIn) {
  RulesPolicy policy = MakeRulesPolicy({Rule("down", Comparator::kLessThan, 1, -1)});
  ScalingInput input = RulesInput(0, 3, {});
  input.metrics.clear();
  Decision d = policy.Evaluate(input);
  EXPECT_EQ(d.desired_replicas, 3);
  EXPECT_THAT(d.reason, HasSubstr("has no usable value (metric absent)"));
}

TEST(RulesPolicyTest, MetricsErrorBlocksScaleInButNotScaleOut) {
  RulesPolicy down = MakeRulesPolicy({Rule("down", Comparator::kLessThan, 1, -1)});
  ScalingInput quiet = RulesInput(0, 3, {0, 0, 0});
  quiet.metrics_error = true;
  Decision d = down.Evaluate(quiet);
  EXPECT_EQ(d.desired_replicas, 3);
  EXPECT_THAT(d.reason, HasSubstr("never scales in on incomplete data"));
  RulesPolicy up = MakeRulesPolicy({Rule("up", Comparator::kGreaterThan, 1, +1)});
  ScalingInput busy = RulesInput(0, 3, {5, 5, 5});
  busy.metrics_error = true;
  EXPECT_EQ(up.Evaluate(busy).desired_replicas, 4);
}

TEST(RulesPolicyTest, NaNAndNegativeSamplesAreDroppedAndBlockScaleIn) {
  RulesPolicy down = MakeRulesPolicy({Rule("down", Comparator::kLessThan, 5, -1)});
  EXPECT_EQ(down.Evaluate(RulesInput(0, 2, {kNaN, 2})).desired_replicas, 2);
  EXPECT_EQ(down.Evaluate(RulesInput(0, 2, {-4, 2})).desired_replicas, 2);
  RulesPolicy up = MakeRulesPolicy({Rule("up", Comparator::kGreaterThan, 1, +1)});
  EXPECT_EQ(up.Evaluate(RulesInput(0, 2, {kNaN, 2})).desired_replicas, 3);
  RulesPolicy up_nan = MakeRulesPolicy({Rule("up", Comparator::kGreaterThan, 1, +1)});
  EXPECT_EQ(up_nan.Evaluate(RulesInput(0, 2, {kNaN, kNaN})).desired_replicas, 2);
}

TEST(RulesPolicyTest, PartialReportsBlockScaleIn) {
  RulesPolicy policy = MakeRulesPolicy({Rule("down", Comparator::kLessThan, 5, -1)});
  ScalingInput input = RulesInput(0, 3, {1, 1});  // 3 ready, 2 samples
  Decision d = policy.Evaluate(input);
  EXPECT_EQ(d.desired_replicas, 3);
  EXPECT_THAT(d.reason, HasSubstr("only 2 of 3 ready replicas reported it"));
}

TEST(RulesPolicyTest, ZeroAndUnreadyReplicasHoldOrRiseToMin) {
  RulesPolicy zero = MakeRulesPolicy({Rule("up", Comparator::kGreaterThan, 1, +1)}, 0, 4);
  EXPECT_EQ(zero.Evaluate(RulesInput(0, 0, {})).desired_replicas, 0);
  RulesPolicy to_min = MakeRulesPolicy({Rule("up", Comparator::kGreaterThan, 1, +1)}, 1, 4);
  Decision d = to_min.Evaluate(RulesInput(0, 0, {}));
  EXPECT_EQ(d.desired_replicas, 1);
  EXPECT_EQ(d.reason, "scale out 0 -> 1: raised to min_replicas 1");
  RulesPolicy unready = MakeRulesPolicy({Rule("down", Comparator::kLessThan, 1, -1)}, 0, 4);
  ScalingInput input = RulesInput(0, 2, {});
  input.ready_replicas = 0;
  Decision held = unready.Evaluate(input);
  EXPECT_EQ(held.desired_replicas, 2);
  EXPECT_THAT(held.reason, HasSubstr("no ready replica reports it"));
}

TEST(RulesPolicyTest, ServiceLevelValueDrivesScaleOutFromZero) {
  RulesPolicy policy = MakeRulesPolicy({Rule("up", Comparator::kGreaterThan, 0, +1)}, 0, 4);
  ScalingInput input = RulesInput(0, 0, {});
  input.metrics[kQueue].service_value = 3;
  EXPECT_EQ(policy.Evaluate(input).desired_replicas, 1);
}

TEST(RulesPolicyTest, MinAboveMaxClampsDefensively) {
  RulesPolicy policy = MakeRulesPolicy({Rule("down", Comparator::kLessThan, 1, -1)}, 3, 2);
  EXPECT_EQ(policy.Evaluate(RulesInput(0, 5, {0, 0, 0, 0, 0})).desired_replicas, 3);
}

struct ContradictionCase {
  const char* name;
  ScalingRule out;
  ScalingRule in;
  bool warned;
};

TEST(RulesPolicyTest, WarnsAboutContradictoryRules) {
  ScalingRule other_metric = Rule("in", Comparator::kLessThan, 70, -1);
  other_metric.metric = "gpu_utilization";
  ScalingRule other_aggregation = Rule("in", Comparator::kLessThan, 70, -1);
  other_aggregation.aggregation = Aggregation::kMax;
  const std::vector<ContradictionCase> cases = {
      {"overlapping", Rule("out", Comparator::kGreaterThan, 50, +1),
       Rule("in", Comparator::kLessThan, 70, -1), true},
      {"disjoint", Rule("out", Comparator::kGreaterThan, 70, +1),
       Rule("in", Comparator::kLessThan, 50, -1), false},
      {"touching, both inclusive", Rule("out", Comparator::kGreaterThanOrEqual, 50, +1),
       Rule("in", Comparator::kLessThanOrEqual, 50, -1), true},
      {"touching, one strict", Rule("out", Comparator::kGreaterThan, 50, +1),
       Rule("in", Comparator::kLessThanOrEqual, 50, -1), false},
      {"same direction of comparison", Rule("out", Comparator::kGreaterThan, 80, +1),
       Rule("in", Comparator::kGreaterThan, 50, -1), true},
      {"below zero never happens", Rule("out", Comparator::kGreaterThan, 5, +1),
       Rule("in", Comparator::kLessThan, 0, -1), false},
      {"different metrics", Rule("out", Comparator::kGreaterThan, 50, +1), other_metric, false},
      {"different aggregation", Rule("out", Comparator::kGreaterThan, 50, +1), other_aggregation,
       false},
      {"replica ranges never meet", Rule("out", Comparator::kGreaterThan, 50, +1, 0, 0, 3),
       Rule("in", Comparator::kLessThan, 70, -1, 0, 5, 10), false},
  };
  for (const ContradictionCase& c : cases) {
    SCOPED_TRACE(c.name);
    RulesPolicyConfig config{0, 10, {c.out, c.in}};
    std::vector<std::string> warnings = FindContradictions(config);
    EXPECT_EQ(warnings.size(), c.warned ? 1u : 0u);
    RulesPolicy policy(config);
    Decision d = policy.Evaluate(RulesInput(0, 2, {}));
    EXPECT_EQ(!d.details.empty() && d.details.front().starts_with("warning: rules"), c.warned);
  }
}

TEST(RulesPolicyTest, ContradictionWarningNamesTheOverlap) {
  auto warnings = FindContradictions(RulesPolicyConfig{
      0,
      10,
      {Rule("out", Comparator::kGreaterThan, 50, +1), Rule("in", Comparator::kLessThan, 70, -1)}});
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("both hold when 50 < vllm:num_requests_waiting < 70"));
  EXPECT_THAT(warnings[0], HasSubstr("'out' (vllm:num_requests_waiting average > 50, step +1)"));
}

TEST(RulesPolicyTest, HoldReasonNamesTheClosestRule) {
  RulesPolicy policy = MakeRulesPolicy({Rule("up", Comparator::kGreaterThan, 10, +1)});
  Decision d = policy.Evaluate(RulesInput(0, 2, {3, 5}));
  EXPECT_EQ(d.reason,
            "hold at 2: no rule matched; rule 'up': vllm:num_requests_waiting average 4 is not "
            "> 10");
}

}  // namespace
}  // namespace gpuscale::scale
